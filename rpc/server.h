// Copyright 2026 The rfrpc Authors.
//
// The server side of rfrpc. A Server runs N worker threads; each owns many
// connections and polls their request slots round robin (the paper's
// multi-QP-per-thread design). Handlers run on the worker that polled the
// request and write results into the server's local response buffers, where
// clients fetch them (or, in server-reply, the worker WRITEs them back).
//
//   Server server(options);
//   EchoImpl echo;
//   RFRPC_RETURN_IF_ERROR(server.RegisterService(&echo));
//   RFRPC_RETURN_IF_ERROR(server.Start());
//   LOG(INFO) << "listening on " << server.address();
//   ...
//   server.Shutdown();
//
// Bad input never crashes the server: an unknown method, an unparsable
// request or a handler error become the caller's status; a malformed slot or
// a protocol violation fails that one connection; everyone else is served.
//
// Thread safety: RegisterService before Start; Start, Shutdown, address,
// stats and method_stats are thread-safe.
//
// A started server is listed by SnapshotServers() (rpc/stats.h) until it is
// destroyed, and its counts stay in its address's totals after.

#ifndef RFRPC_RPC_SERVER_H_
#define RFRPC_RPC_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rpc/call_stats.h"
#include "rpc/options.h"
#include "rpc/server_stats.h"
#include "rpc/service.h"

namespace rfrpc {

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // Shuts down if running.
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Registers every method of `service` (not owned; must outlive the
  // server). ALREADY_EXISTS if a method id is taken (a name collision),
  // FAILED_PRECONDITION after Start.
  absl::Status RegisterService(Service* service);

  // Opens the provider, listens and starts the workers.
  absl::Status Start();

  // Where clients connect. Valid after Start.
  std::string address() const;

  // Stops accepting, fails open connections (their clients see
  // UNAVAILABLE) and joins the threads. Idempotent; from any thread but
  // the server's own it returns once the server has stopped, whoever
  // started the shutdown. A handler may call it (an admin method, say): the
  // shutdown then goes on on a thread of its own and this returns at once;
  // the handler's caller gets its result or UNAVAILABLE. A handler must not
  // destroy the server.
  void Shutdown();

  ServerStats stats() const;
  // Per registered method (and, once there were any, calls of unknown ids:
  // method ""), summed over workers; empty before Start or with
  // ServerOptions::method_stats off. Counts survive Shutdown.
  std::vector<MethodStats> method_stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVER_H_
