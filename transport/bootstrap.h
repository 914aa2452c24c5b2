// Copyright 2026 The rfrpc Authors.
//
// Framing for the bootstrap socket that carries the connection handshake
// (transport/handshake.proto). Shared by every provider.
//
// Frame layout (little-endian), pinned by static_assert and documented in
// docs/wire_formats.md:
//
//   offset 0  uint32 magic    kFrameMagic ("RFRP")
//   offset 4  uint16 version  kHandshakeVersion
//   offset 6  uint16 flags    0 (reserved)
//   offset 8  uint32 length   protobuf bytes that follow, <= kMaxFrameBytes
//   offset 12 ...             serialized message
//
// A wrong magic, an unknown version, an oversize length or bytes that do not
// parse are errors with a message a person can act on; they never crash.
// Functions here are thread-compatible: one thread per socket.

#ifndef RFRPC_TRANSPORT_BOOTSTRAP_H_
#define RFRPC_TRANSPORT_BOOTSTRAP_H_

#include <errno.h>

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace rfrpc {
namespace transport {

inline constexpr uint32_t kFrameMagic = 0x50524652;  // "RFRP" little-endian.
// 2: shm wake words in shared segments (Hello.wake_offset).
inline constexpr uint16_t kHandshakeVersion = 2;
inline constexpr uint32_t kMaxFrameBytes = 64 * 1024;

struct FrameHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t flags;
  uint32_t length;
};
static_assert(sizeof(FrameHeader) == 12, "frame header is 12 bytes on the wire");

// Writes one frame holding `msg` to `fd` within `timeout`.
absl::Status SendFrame(int fd, const google::protobuf::MessageLite& msg,
                       absl::Duration timeout);

// Reads one frame from `fd` within `timeout` and parses it into `msg` (not
// null). Errors: DEADLINE_EXCEEDED (timeout), UNAVAILABLE (peer closed),
// INVALID_ARGUMENT (bad magic, oversize, unparsable), FAILED_PRECONDITION
// (version mismatch).
absl::Status RecvFrame(int fd, google::protobuf::MessageLite* msg,
                       absl::Duration timeout);

// Writes/reads exactly `len` bytes, honouring `deadline`. Used by the two
// functions above and by providers that pass extra data.
absl::Status WriteFully(int fd, const void* data, size_t len,
                        absl::Time deadline);
absl::Status ReadFully(int fd, void* data, size_t len, absl::Time deadline);

// Sets O_NONBLOCK and FD_CLOEXEC on `fd`.
absl::Status MakeNonBlocking(int fd);

// An owned file descriptor, closed on destruction. Move-only.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() { reset(); }
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// A descriptor a listener keeps in reserve for when its process is out of
// them. accept4 then fails with EMFILE or ENFILE and leaves the peer in the
// backlog, where poll reports the listening socket readable at once, again
// and again: the listener spins and the peer times out without a reason.
// Shed frees the reserve, accepts one waiting peer with it, hands the
// socket to `refuse` (which tells the peer why), closes it and takes the
// reserve back.
//
// Thread-compatible: one per listener, used by its accepting thread.
class DescriptorReserve {
 public:
  DescriptorReserve() { Take(); }

  // Whether `err` (an accept4 errno) is running out of descriptors.
  static bool OutOfDescriptors(int err) { return err == EMFILE || err == ENFILE; }

  // If no peer could be accepted even so (another thread took the freed
  // descriptor, or none waits), sleeps 10 ms: the backlog stays readable
  // at once, and polling it again would spin.
  void Shed(int listen_fd, absl::FunctionRef<void(int sock)> refuse);

 private:
  void Take();

  ScopedFd spare_;
};

}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_BOOTSTRAP_H_
