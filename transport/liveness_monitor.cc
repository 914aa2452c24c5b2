// Copyright 2026 The rfrpc Authors.

#include "transport/liveness_monitor.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "base/errno_text.h"
#include "glog/logging.h"

namespace rfrpc {
namespace transport {

absl::StatusOr<std::unique_ptr<LivenessMonitor>> LivenessMonitor::Create(
    std::string name) {
  ScopedFd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return absl::InternalError(ErrnoText("epoll_create1"));
  ScopedFd stop(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return absl::InternalError(ErrnoText("eventfd"));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // Token 0 is the stop event.
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, stop.get(), &ev) != 0) {
    return absl::InternalError(ErrnoText("epoll_ctl"));
  }
  return std::unique_ptr<LivenessMonitor>(
      new LivenessMonitor(std::move(name), std::move(ep), std::move(stop)));
}

LivenessMonitor::LivenessMonitor(std::string name, ScopedFd epoll_fd,
                                 ScopedFd stop_fd)
    : name_(std::move(name)),
      epoll_fd_(std::move(epoll_fd)),
      stop_fd_(std::move(stop_fd)) {
  thread_ = std::thread([this] { Run(); });
}

LivenessMonitor::~LivenessMonitor() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(stop_fd_.get(), &one, sizeof(one));
  thread_.join();
}

absl::Status LivenessMonitor::Add(uint64_t token, int fd, OnLost on_lost) {
  if (token == 0) return absl::InvalidArgumentError("liveness token 0");
  std::lock_guard<std::mutex> lock(mu_);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = token;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return absl::InternalError(ErrnoText("epoll_ctl(ADD) for liveness"));
  }
  entries_[token] = Entry{fd, std::move(on_lost)};
  return absl::OkStatus();
}

void LivenessMonitor::Remove(uint64_t token) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = entries_.find(token);
  if (it != entries_.end()) {
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, it->second.fd, nullptr);
    entries_.erase(it);
  }
  done_cv_.wait(lock, [&] { return running_ != token; });
}

void LivenessMonitor::Run() {
  epoll_event events[64];
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_.get(), events, 64, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << name_ << " liveness monitor: " << ErrnoText("epoll_wait");
      return;
    }
    for (int i = 0; i < n; ++i) {
      const uint64_t token = events[i].data.u64;
      if (token == 0) return;
      OnLost on_lost;
      int fd;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = entries_.find(token);
        if (it == entries_.end()) continue;  // Removed meanwhile.
        fd = it->second.fd;
        on_lost = std::move(it->second.on_lost);
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
        entries_.erase(it);
        running_ = token;  // Remove(token) now waits for the callback.
      }
      char byte;
      const ssize_t r = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      const int err = r < 0 ? errno : 0;
      // A peer that dies with unread bytes queued shows up as a reset.
      const std::string why =
          r == 0 ? "closed the connection"
          : r > 0 ? "sent unexpected bytes on the liveness channel"
          : err == ECONNRESET || err == EPIPE
              ? "closed the connection (reset)"
              : absl::StrCat("liveness socket error: ", ErrnoDetail(err));
      on_lost(why);
      {
        std::lock_guard<std::mutex> lock(mu_);
        running_ = 0;
      }
      done_cv_.notify_all();
    }
  }
}

}  // namespace transport
}  // namespace rfrpc
