// Copyright 2026 The rfrpc Authors.

#include "transport/bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace rfrpc {
namespace transport {
namespace {

// Waits until `fd` is ready for `events` or `deadline` passes.
absl::Status WaitFd(int fd, short events, absl::Time deadline) {
  for (;;) {
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError("bootstrap socket timed out");
    }
    pollfd p{fd, events, 0};
    int ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
    int r = ::poll(&p, 1, ms);
    if (r > 0) return absl::OkStatus();
    if (r < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
    }
  }
}

}  // namespace

void ScopedFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

absl::Status MakeNonBlocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
      ::fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
    return absl::InternalError(absl::StrCat("fcntl: ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WriteFully(int fd, const void* data, size_t len,
                        absl::Time deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      absl::Status s = WaitFd(fd, POLLOUT, deadline);
      if (!s.ok()) return s;
      continue;
    }
    if (n < 0 && errno == ENOTSOCK) {  // Pipes in tests.
      n = ::write(fd, p, len);
      if (n > 0) {
        p += n;
        len -= static_cast<size_t>(n);
        continue;
      }
    }
    return absl::UnavailableError(
        absl::StrCat("bootstrap peer closed while sending: ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status ReadFully(int fd, void* data, size_t len, absl::Time deadline) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < len) {
    absl::Status s = WaitFd(fd, POLLIN, deadline);
    if (!s.ok()) return s;
    ssize_t n = ::read(fd, p + got, len - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      continue;
    }
    if (n == 0) {
      return absl::UnavailableError(absl::StrFormat(
          "bootstrap peer closed the connection after %d of %d bytes", got,
          len));
    }
    return absl::UnavailableError(
        absl::StrCat("bootstrap read: ", strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status SendFrame(int fd, const google::protobuf::MessageLite& msg,
                       absl::Duration timeout) {
  std::string body;
  if (!msg.SerializeToString(&body)) {
    return absl::InternalError("cannot serialize handshake message");
  }
  if (body.size() > kMaxFrameBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "handshake message of %d bytes exceeds the %d-byte limit", body.size(),
        kMaxFrameBytes));
  }
  FrameHeader h{kFrameMagic, kHandshakeVersion, 0,
                static_cast<uint32_t>(body.size())};
  std::string frame(sizeof(h) + body.size(), '\0');
  std::memcpy(&frame[0], &h, sizeof(h));
  std::memcpy(&frame[sizeof(h)], body.data(), body.size());
  return WriteFully(fd, frame.data(), frame.size(), absl::Now() + timeout);
}

absl::Status RecvFrame(int fd, google::protobuf::MessageLite* msg,
                       absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  FrameHeader h;
  absl::Status s = ReadFully(fd, &h, sizeof(h), deadline);
  if (!s.ok()) return s;
  if (h.magic != kFrameMagic) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bad handshake magic 0x%08x (expected 0x%08x): the peer is not an "
        "rfrpc endpoint",
        h.magic, kFrameMagic));
  }
  if (h.version != kHandshakeVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "handshake version %d from peer; this side speaks version %d",
        h.version, kHandshakeVersion));
  }
  if (h.length > kMaxFrameBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "handshake frame of %d bytes exceeds the %d-byte limit", h.length,
        kMaxFrameBytes));
  }
  std::string body(h.length, '\0');
  s = ReadFully(fd, body.data(), body.size(), deadline);
  if (!s.ok()) return s;
  if (!msg->ParseFromString(body)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("garbled handshake: %d bytes do not parse as %s",
                        body.size(), msg->GetTypeName()));
  }
  return absl::OkStatus();
}

void DescriptorReserve::Take() {
  spare_ = ScopedFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

void DescriptorReserve::Shed(int listen_fd,
                             absl::FunctionRef<void(int sock)> refuse) {
  spare_.reset();
  ScopedFd sock(::accept4(listen_fd, nullptr, nullptr,
                          SOCK_CLOEXEC | SOCK_NONBLOCK));
  const bool shed = sock.valid();
  if (shed) refuse(sock.get());
  sock.reset();
  Take();
  if (!shed) absl::SleepFor(absl::Milliseconds(10));
}

}  // namespace transport
}  // namespace rfrpc
