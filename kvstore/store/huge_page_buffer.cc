// Copyright 2026 The rfrpc Authors.

#include "kvstore/store/huge_page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rfrpc {
namespace kvstore {
namespace {

size_t RoundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

}  // namespace

absl::StatusOr<HugePageBuffer> HugePageBuffer::Allocate(size_t bytes) {
  if (bytes == 0) {
    return absl::InvalidArgumentError("HugePageBuffer of 0 bytes");
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const bool huge = bytes >= kHugePageBytes;
  const size_t length = RoundUp(bytes, huge ? kHugePageBytes : page);
  // Over-allocate by one huge page and trim, so the start is 2 MiB-aligned.
  const size_t reserve = huge ? length + kHugePageBytes : length;
  void* p = mmap(nullptr, reserve, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "mmap of ", reserve, " bytes failed: ", std::strerror(errno)));
  }
  char* base = static_cast<char*>(p);
  char* start = base;
  if (huge) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(base);
    start = reinterpret_cast<char*>(RoundUp(addr, kHugePageBytes));
    const size_t head = static_cast<size_t>(start - base);
    const size_t tail = reserve - head - length;
    if (head > 0) munmap(base, head);
    if (tail > 0) munmap(start + length, tail);
  }
  HugePageBuffer b;
  b.data_ = start;
  b.size_ = bytes;
  b.mapped_bytes_ = length;
  b.huge_pages_advised_ =
      huge && madvise(start, length, MADV_HUGEPAGE) == 0;
  return b;
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)),
      huge_pages_advised_(std::exchange(other.huge_pages_advised_, false)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    huge_pages_advised_ = std::exchange(other.huge_pages_advised_, false);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() { Release(); }

void HugePageBuffer::Release() {
  if (data_ != nullptr) munmap(data_, mapped_bytes_);
  data_ = nullptr;
  size_ = 0;
  mapped_bytes_ = 0;
  huge_pages_advised_ = false;
}

}  // namespace kvstore
}  // namespace rfrpc
