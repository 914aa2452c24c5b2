// Copyright 2026 The rfrpc Authors.
//
// HugePageBuffer: a zero-filled, private anonymous memory mapping for the
// large tables of a Partition (its bucket index and item arena).
//
// Lookups in a Partition touch a random bucket and a random item; with 4 KiB
// pages each of those is also a TLB miss once the tables span more than the
// TLB covers (a 64 MiB index alone is 16 384 pages), and under
// virtualization a TLB miss walks two page tables. A buffer of at least
// kHugePageBytes is therefore aligned to 2 MiB and marked
// madvise(MADV_HUGEPAGE), so the kernel backs it with transparent huge pages
// where it can (THP "always" or "madvise" mode). Where it cannot (THP
// "never", no free huge pages) the buffer is ordinary 4 KiB pages and works
// the same. Pages are faulted in on first touch, as with malloc.
//
// Ownership: the buffer owns its mapping and unmaps it on destruction.
// Move-only. Thread-safety: none needed for the object itself; the memory is
// the caller's to share or not.
//
//   absl::StatusOr<HugePageBuffer> b = HugePageBuffer::Allocate(64 << 20);
//   if (!b.ok()) return b.status();
//   char* p = b->data();  // 64 MiB of zeros, 2 MiB-aligned.

#ifndef RFRPC_KVSTORE_STORE_HUGE_PAGE_BUFFER_H_
#define RFRPC_KVSTORE_STORE_HUGE_PAGE_BUFFER_H_

#include <cstddef>

#include "absl/status/statusor.h"

namespace rfrpc {
namespace kvstore {

class HugePageBuffer {
 public:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  // Maps `bytes` (> 0) of zeroed memory. RESOURCE_EXHAUSTED if the mapping
  // fails; INVALID_ARGUMENT for 0 bytes.
  static absl::StatusOr<HugePageBuffer> Allocate(size_t bytes);

  HugePageBuffer() = default;
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  // Null for a default-constructed or moved-from buffer.
  char* data() const { return data_; }
  // The bytes asked for (the mapping may be larger).
  size_t size() const { return size_; }
  // True if the kernel accepted MADV_HUGEPAGE for the buffer (it may still
  // use 4 KiB pages for parts of it, e.g. when no huge page is free).
  bool huge_pages_advised() const { return huge_pages_advised_; }

 private:
  void Release();

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_bytes_ = 0;  // Length of the mapping at data_.
  bool huge_pages_advised_ = false;
};

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_STORE_HUGE_PAGE_BUFFER_H_
