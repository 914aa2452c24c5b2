// Copyright 2026 The rfrpc Authors.
//
// Test helper: runs a peer server (memcached, redis-server) as a child
// process on a free 127.0.0.1 port with a private temporary directory, and
// kills it when destroyed.
//
// Example:
//
//   std::string binary = FindExecutable("memcached");
//   if (binary.empty()) GTEST_SKIP() << "memcached is not installed";
//   absl::StatusOr<std::unique_ptr<PeerProcess>> peer = PeerProcess::Start(
//       binary, [](int port) { return std::vector<std::string>{...}; });
//
// Thread-safety: not thread-safe; one owner.

#ifndef RFRPC_KVSTORE_YCSB_PEER_PROCESS_H_
#define RFRPC_KVSTORE_YCSB_PEER_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rfrpc {
namespace ycsb {

// The absolute path of `name` found on $PATH or in /usr/bin, /usr/sbin,
// /usr/local/bin; "" if absent.
std::string FindExecutable(const std::string& name);

class PeerProcess {
 public:
  // Builds the argument list (without argv[0]) for a port and a scratch
  // directory.
  using ArgsFn =
      std::function<std::vector<std::string>(int port, const std::string& dir)>;

  // Picks a free loopback port, starts `binary` with `args(port, dir)` and
  // waits until 127.0.0.1:port accepts connections (up to `ready_timeout`).
  // Retries with another port if the server exits early (port race).
  // Unavailable if it never becomes ready.
  static absl::StatusOr<std::unique_ptr<PeerProcess>> Start(
      const std::string& binary, const ArgsFn& args,
      absl::Duration ready_timeout = absl::Seconds(10));

  // Kills the server (SIGTERM, then SIGKILL after 2 s) and removes its
  // directory.
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& dir() const { return dir_; }

 private:
  PeerProcess(pid_t pid, int port, std::string dir)
      : pid_(pid), port_(port), dir_(std::move(dir)) {}

  pid_t pid_;
  int port_;
  std::string dir_;
};

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_PEER_PROCESS_H_
