// Copyright 2026 The rfrpc Authors.
//
// LivenessMonitor: one thread that watches the bootstrap (liveness) sockets
// of many connections with epoll, so that a provider holding thousands of
// connections holds one watcher thread, not one per connection. A socket
// that hangs up, resets, errs or carries bytes (nothing may arrive on it
// after the handshake) means the connection is lost: its callback runs
// once, on the monitor thread, with the reason, and the socket is no longer
// watched.
//
//   RFRPC_ASSIGN_OR_RETURN(auto monitor, LivenessMonitor::Create("shm"));
//   RFRPC_RETURN_IF_ERROR(monitor->Add(id, sock, [state](absl::string_view why) {
//     state->Fail(absl::UnavailableError(why));
//   }));
//   ...
//   monitor->Remove(id);  // From here on the callback is not running.
//
// Thread-safe. A callback must not call Remove (for any token) or destroy
// the monitor; it may take other locks.

#ifndef RFRPC_TRANSPORT_LIVENESS_MONITOR_H_
#define RFRPC_TRANSPORT_LIVENESS_MONITOR_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>  // NOLINT: std::mutex so ThreadSanitizer sees the locks.
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "transport/bootstrap.h"

namespace rfrpc {
namespace transport {

class LivenessMonitor {
 public:
  // `why`: "closed the connection", "closed the connection (reset)", "sent
  // unexpected bytes on the liveness channel" or "liveness socket error:
  // ...".
  using OnLost = std::function<void(absl::string_view why)>;

  // `name` labels log lines ("shm", "verbs").
  static absl::StatusOr<std::unique_ptr<LivenessMonitor>> Create(
      std::string name);
  ~LivenessMonitor();  // Stops and joins the thread.

  // Watches `fd` (not owned; it must stay open until Remove) under `token`
  // (non-zero, unique among those watched).
  absl::Status Add(uint64_t token, int fd, OnLost on_lost);
  // Stops watching `token`; when it returns, its callback is not running
  // and will not run. Unknown tokens are ignored.
  void Remove(uint64_t token);

 private:
  struct Entry {
    int fd;
    OnLost on_lost;
  };
  LivenessMonitor(std::string name, ScopedFd epoll_fd, ScopedFd stop_fd);
  void Run();

  const std::string name_;
  const ScopedFd epoll_fd_;
  const ScopedFd stop_fd_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  std::map<uint64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);
  uint64_t running_ ABSL_GUARDED_BY(mu_) = 0;  // Token whose callback runs.
  std::thread thread_;
};

}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_LIVENESS_MONITOR_H_
