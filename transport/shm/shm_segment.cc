// Copyright 2026 The rfrpc Authors.

#include "transport/shm/shm_segment.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>  // NOLINT: std::mutex, as in the rest of transport/shm.
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rfrpc {
namespace transport {
namespace shm {

Mapping::~Mapping() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

Mapping::Mapping(Mapping&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (addr_ != nullptr) ::munmap(addr_, size_);
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

absl::StatusOr<Mapping> Mapping::MapPeerSegment(int fd, size_t size,
                                                bool writable) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("fstat of peer segment: ", strerror(errno)));
  }
  if (size == 0 || static_cast<uint64_t>(st.st_size) < size) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer segment has ", st.st_size, " bytes; descriptor "
                     "claims ", size));
  }
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return absl::InvalidArgumentError(
        "peer segment is not sealed against shrinking (not an rfrpc shm "
        "segment?)");
  }
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* p = ::mmap(nullptr, size, prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return absl::InvalidArgumentError(
        absl::StrCat("mmap of peer segment (", size, " bytes): ",
                     strerror(errno)));
  }
  return Mapping(p, size);
}

namespace {

class SharedPeerMappings {
 public:
  absl::StatusOr<std::shared_ptr<const Mapping>> Map(int fd, size_t size,
                                                     bool writable) {
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("fstat of peer segment: ", strerror(errno)));
    }
    const Key key{st.st_dev, st.st_ino, size, writable};
    std::lock_guard<std::mutex> lock(mu_);
    auto it = mappings_.find(key);
    if (it != mappings_.end()) {
      if (std::shared_ptr<const Mapping> m = it->second.lock()) {
        // What mmap would check: a writable mapping needs a writable fd.
        const int flags = ::fcntl(fd, F_GETFL);
        if (writable && (flags < 0 || (flags & O_ACCMODE) != O_RDWR)) {
          return absl::InvalidArgumentError(
              "peer segment fd is not writable, but a region of it grants "
              "remote WRITE");
        }
        return m;
      }
    }
    absl::StatusOr<Mapping> m = Mapping::MapPeerSegment(fd, size, writable);
    if (!m.ok()) return m.status();
    auto shared = std::make_shared<const Mapping>(*std::move(m));
    mappings_[key] = shared;
    // Forget unmapped segments once the table has doubled since the last
    // sweep: amortized O(1) per mapping.
    if (mappings_.size() >= 2 * swept_size_ + 64) {
      for (auto i = mappings_.begin(); i != mappings_.end();) {
        i = i->second.expired() ? mappings_.erase(i) : std::next(i);
      }
      swept_size_ = mappings_.size();
    }
    return shared;
  }

 private:
  using Key = std::tuple<dev_t, ino_t, size_t, bool>;
  std::mutex mu_;
  std::map<Key, std::weak_ptr<const Mapping>> mappings_;
  size_t swept_size_ = 0;
};

SharedPeerMappings& PeerMappings() {
  static auto* mappings = new SharedPeerMappings;
  return *mappings;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Mapping>> MapPeerSegmentShared(
    int fd, size_t size, bool writable) {
  return PeerMappings().Map(fd, size, writable);
}

absl::StatusOr<std::unique_ptr<Segment>> Segment::Create(size_t size) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (size == 0) size = 1;
  const size_t rounded = (size + page - 1) / page * page;
  auto seg = std::make_unique<Segment>();
  seg->fd.reset(::memfd_create("rfrpc-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!seg->fd.valid()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("memfd_create: ", strerror(errno)));
  }
  if (::ftruncate(seg->fd.get(), static_cast<off_t>(rounded)) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ftruncate(", rounded, "): ", strerror(errno)));
  }
  if (::fcntl(seg->fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    return absl::InternalError(
        absl::StrCat("sealing memfd: ", strerror(errno)));
  }
  void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED,
                   seg->fd.get(), 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mmap(", rounded, "): ", strerror(errno)));
  }
  // A fresh memfd reads as zeros; nothing to clear.
  seg->mapping = Mapping(p, rounded);
  return seg;
}

absl::StatusOr<ScopedFd> Segment::FdForPeer(bool writable) const {
  int fd;
  if (writable) {
    fd = ::fcntl(this->fd.get(), F_DUPFD_CLOEXEC, 0);
  } else {
    const std::string path = absl::StrCat("/proc/self/fd/", this->fd.get());
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("duplicating segment fd: ", strerror(errno)));
  }
  return ScopedFd(fd);
}

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc
