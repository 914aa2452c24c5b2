// Copyright 2026 The rfrpc Authors.
//
// Shared-memory segments for the shm provider: one memfd per MemoryRegion,
// mapped MAP_SHARED, sealed against shrinking so a peer that maps it can never
// take a SIGBUS because the owner truncated it.
//
// Ownership: Mapping owns one mmap; Segment owns the memfd and the owner's
// mapping. Both are move-only RAII types. Thread-compatible.

#ifndef RFRPC_TRANSPORT_SHM_SHM_SEGMENT_H_
#define RFRPC_TRANSPORT_SHM_SHM_SEGMENT_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "transport/bootstrap.h"

namespace rfrpc {
namespace transport {
namespace shm {

// One mmap()ed range, unmapped on destruction. Move-only.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* addr, size_t size) : addr_(addr), size_(size) {}
  ~Mapping();
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  char* data() const { return static_cast<char*>(addr_); }
  size_t size() const { return size_; }

  // Maps `size` bytes of `fd` from offset 0, MAP_SHARED; read-only unless
  // `writable`. INVALID_ARGUMENT when the fd is smaller than `size`, not
  // sealed against shrinking, or cannot be mapped.
  static absl::StatusOr<Mapping> MapPeerSegment(int fd, size_t size,
                                                bool writable);

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

// Maps a peer's segment as Mapping::MapPeerSegment does, once per process:
// while one mapping of the segment (same inode, size and writability) is
// alive, later calls return it. Connections to one server worker share its
// bells and wake segments, so their doorbell WRITEs go through one mapping
// (one set of TLB entries for all of them, not one per connection), and a
// connection costs fewer mappings of the process's vm.max_map_count. The
// key is never stale: a mapping keeps its memfd's inode alive, and since
// Linux 5.9 memfd inode numbers are 64-bit and never repeat (before, a
// 32-bit counter could repeat after 2^32 memfds). Thread-safe; calls are
// serialized (an mmap each, at connection set-up).
absl::StatusOr<std::shared_ptr<const Mapping>> MapPeerSegmentShared(
    int fd, size_t size, bool writable);

// A memfd segment and its owner-side mapping.
struct Segment {
  ScopedFd fd;
  Mapping mapping;

  // Creates a zeroed segment of `size` bytes rounded up to whole pages,
  // sealed against shrink and grow.
  static absl::StatusOr<std::unique_ptr<Segment>> Create(size_t size);

  // A new fd for the same memory: read-write, or read-only (re-opened through
  // /proc/self/fd) when `writable` is false, so a peer granted only READ
  // cannot even map it writable.
  absl::StatusOr<ScopedFd> FdForPeer(bool writable) const;
};

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_SHM_SHM_SEGMENT_H_
