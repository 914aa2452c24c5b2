// Copyright 2026 The rfrpc Authors.
//
// A server worker thread and the connections it owns (internal to rpc/).
//
// server_recv: the worker polls the request slots of all its connections
// round robin. server_send: it runs the handler, which serializes the result
// straight into the slot's response buffer in the server's own memory, and
// publishes the header last. Only in server-reply (the connection's mode
// flag says so) or for results above large_result_bytes does it issue an
// out-bound WRITE into the client's reply slot.
//
// Thread safety: Adopt(), Stop() and stats are thread-safe; everything else
// runs on the worker's own thread.

#ifndef RFRPC_RPC_SERVER_WORKER_H_
#define RFRPC_RPC_SERVER_WORKER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "rpc/method_counters.h"
#include "rpc/options.h"
#include "rpc/service.h"
#include "rpc/slot_codec.h"
#include "rpc/wire_format.h"
#include "transport/transport.h"
#include "rpc/mutex.h"

namespace rfrpc {
namespace internal {

using MethodTable = absl::flat_hash_map<uint32_t, const MethodEntry*>;

struct ServerCounters {
  std::atomic<uint64_t> connections_accepted{0};
  std::atomic<uint64_t> connections_rejected{0};
  std::atomic<uint64_t> connections_closed{0};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> calls_server_reply{0};
  std::atomic<uint64_t> calls_failed{0};
  std::atomic<uint64_t> bad_requests{0};
  std::atomic<uint64_t> rdma_writes{0};
  std::atomic<uint64_t> batches{0};
  // Gauges: open connections and their slots (reset by Shutdown).
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connection_slots{0};
};

// One accepted client connection and its memory.
struct ServerConnection {
  std::unique_ptr<transport::Connection> conn;
  std::unique_ptr<transport::MemoryRegion> region;  // Exposed to the client.
  wire::ConnectionLayout layout;
  transport::RemoteRegion client_reply;             // The client's reply slots.
  std::string peer;
  std::vector<uint32_t> expected_seq;               // Per slot.
  std::vector<uint32_t> push_in_flight;             // Per slot: WRITEs.
  std::vector<int64_t> push_posted_ns;              // Per slot: last WRITE.
  uint32_t unsignaled = 0;
};

class ServerWorker {
 public:
  // `methods`, `counters` and `method_counters` are not owned and must
  // outlive the worker; `method_counters` may be null (per-method counts
  // off) and is written only by this worker.
  ServerWorker(int index, const ServerOptions& options,
               const MethodTable* methods, ServerCounters* counters,
               WorkerMethodCounters* method_counters,
               std::unique_ptr<transport::CompletionQueue> cq);
  ~ServerWorker();

  void Start();
  // Stops the thread and fails (closes) every connection.
  void Stop();

  // Hands a new connection to this worker.
  void Adopt(std::unique_ptr<ServerConnection> c);
  int connections() const { return connections_.load(); }

  transport::CompletionQueue* cq() const { return cq_.get(); }

 private:
  void Loop();
  // Serves one ready request; returns false if the connection must close.
  void Serve(ServerConnection* c, uint32_t slot);
  void ServeBatch(ServerConnection* c, uint32_t slot,
                  const wire::RequestView& req, int64_t start_ns);
  absl::Status RunHandler(ServerConnection* c, uint32_t method_id,
                          absl::string_view request, int64_t start_ns,
                          char* out, size_t cap, size_t* len);
  // After a result (part) at `offset` of the slot's response buffer is
  // published: WRITE it back if the client is in server-reply or it is large.
  void FinishPublish(ServerConnection* c, uint32_t slot, size_t offset,
                     size_t framed, bool large);
  void Push(ServerConnection* c, uint32_t slot, size_t offset, size_t framed);
  void TakeCompletions();
  void Close(size_t i, const absl::Status& why);
  void Idle(int* empty_rounds);

  const int index_;
  const ServerOptions options_;
  const MethodTable* const methods_;
  ServerCounters* const counters_;
  std::unique_ptr<transport::CompletionQueue> cq_;

  std::vector<std::unique_ptr<ServerConnection>> conns_;  // Worker thread only.
  ServerContext ctx_;
  // The method RunHandler ran last (null: none yet). The method table does
  // not change once the server runs.
  const MethodEntry* last_method_ = nullptr;
  // Per-method counts (null: off), those of last_method_, and when the last
  // handler ended (a batch's next call is timed from there).
  WorkerMethodCounters* const method_counters_;
  MethodCounters* last_counters_ = nullptr;
  int64_t last_handler_end_ns_ = 0;
  // The last call's figures, recorded once its result is published
  // (FlushMethodStats), off the reply's path.
  struct PendingServed {
    MethodCounters* counters = nullptr;
    int code = 0;
    int64_t handler_ns = 0;
    uint64_t result_bytes = 0;
  };
  PendingServed pending_served_;
  void FlushMethodStats() {
    if (pending_served_.counters == nullptr) return;
    pending_served_.counters->Served(pending_served_.code,
                                     pending_served_.handler_ns,
                                     pending_served_.result_bytes);
    pending_served_.counters = nullptr;
  }
  // Signaled WRITEs (pushes) posted on any connection, less completions
  // taken (never below 0); the loop polls the completion queue only while
  // > 0, as nothing else posts to it. Counts failed posts too, so it may
  // stay above the truth (then the loop polls every round, as before), never
  // below it.
  uint64_t pushes_in_flight_ = 0;

  Mutex inbox_mu_;
  std::vector<std::unique_ptr<ServerConnection>> inbox_ ABSL_GUARDED_BY(inbox_mu_);
  std::atomic<bool> inbox_nonempty_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVER_WORKER_H_
