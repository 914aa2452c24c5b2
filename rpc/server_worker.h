// Copyright 2026 The rfrpc Authors.
//
// A server worker thread and the connections it owns (internal to rpc/).
//
// server_recv: the worker looks only at the request slots its WorkFinder
// names: slots whose client rang the worker's doorbell area, and hot slots
// (served twice within the hot window) that it polls for a short while
// after each request. Its cost per round follows the requests that arrived,
// not the connections that exist. server_send: it runs the handler, which
// serializes the result straight into the slot's response buffer in the
// server's own memory, and publishes the header last. Only in server-reply
// (the connection's mode flag says so) or for results above
// large_result_bytes does it issue an out-bound WRITE into the client's
// reply slot.
//
// Async and offloaded handlers (MethodKind::kAsync, kBlocking): the worker
// parses the request into a call object and starts the handler (async: on
// itself; blocking: on the HandlerPool), then goes on polling. A call
// finished while its handler still runs on the worker is published at once,
// like a sync result; one finished later, on any thread, is posted to the
// worker's mailbox (WorkerMailbox), which the worker drains each round, and
// published from there, with the same remote-fetch / server-reply path. A
// batch with such an entry keeps its later results until every earlier one
// is in (results go in request order, part by part: ResultPartWriter). The
// worker answers a pending call itself when the client cancels it (its
// cancel word names the call's seq, looked at when the slot rings), when its
// deadline passes (DEADLINE_EXCEEDED), and drops it when its connection
// closes; a result finished after that is dropped. Code in
// server_worker_async.cc.
//
// Idle: it spins, then yields, and after `idle_park_after` without work
// parks: it arms its completion queue for wake-ups, checks the doorbell
// summary once more and sleeps until a client's notify WRITE, a completion,
// a new connection, a finished async call or (every 100 ms, or a pending
// call's deadline) its liveness check.
//
// Thread safety: Adopt(), AllocateBell(), ReleaseBell(), Stop() and the
// counters are thread-safe, as is the mailbox; everything else runs on the
// worker's own thread.

#ifndef RFRPC_RPC_SERVER_WORKER_H_
#define RFRPC_RPC_SERVER_WORKER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "rpc/handler_pool.h"
#include "rpc/method_counters.h"
#include "rpc/options.h"
#include "rpc/result_parts.h"
#include "rpc/run_delay.h"
#include "rpc/server_call.h"
#include "rpc/service.h"
#include "rpc/slot_codec.h"
#include "rpc/wire_format.h"
#include "rpc/work_finder.h"
#include "transport/transport.h"

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
  std::atomic<uint64_t> inline_writes{0};  // Of rdma_writes.
  std::atomic<uint64_t> push_doorbells{0};  // Post lists of rdma_writes.
  // Pushes that woke the client (kRequestFlagNotify).
  std::atomic<uint64_t> push_notifies{0};
  // Liveness walks of every connection by a parked worker (each after some
  // connection of the process failed).
  std::atomic<uint64_t> liveness_walks{0};
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> batch_runs{0};   // MethodHandler::RunBatch calls.
  std::atomic<uint64_t> worker_stalls{0};  // ServerOptions::stall_warning.
  // Of worker_stalls: the worker waited for a CPU at least half the time.
  std::atomic<uint64_t> worker_stalls_preempted{0};
  std::atomic<uint64_t> rings{0};        // Doorbell rings taken.
  std::atomic<uint64_t> parks{0};        // Times a worker went to sleep.
  std::atomic<uint64_t> park_notifies{0};  // Parks a client's notify ended.
  std::atomic<uint64_t> hot_serves{0};   // Requests served with the hot flag.
  // Gauges: open connections and their slots (reset by Shutdown).
  std::atomic<uint64_t> connections_open{0};
  std::atomic<uint64_t> connection_slots{0};
  // Async and offloaded calls (ServerStats has their meaning).
  std::atomic<uint64_t> calls_async{0};
  std::atomic<uint64_t> calls_offloaded{0};
  std::atomic<uint64_t> calls_cancelled{0};
  std::atomic<uint64_t> calls_expired{0};
  std::atomic<uint64_t> results_dropped{0};
};

// A slot whose answer comes later: an async or offloaded single call, or a
// request batch with such an entry (worker thread only).
struct PendingSlot {
  uint32_t slot = 0;
  uint32_t seq = 0;
  int64_t start_ns = 0;
  uint16_t hot = 0;
  bool batch = false;
  // A single call: the call (holding the worker's reference) and its
  // deadline.
  ServerCall* call = nullptr;
  int64_t deadline_ns = INT64_MAX;
  // A batch: entries from `base` (the first whose result came later) on.
  struct Entry {
    ServerCall* call = nullptr;  // Still running; holds a reference.
    bool ready = false;          // The result is in code/result.
    uint16_t code = 0;
    std::string result;          // Serialized response or error message.
    int64_t deadline_ns = INT64_MAX;
  };
  uint32_t base = 0;
  std::vector<Entry> entries;
  ResultPartWriter writer;
  int64_t part_start = 0;
};

// Where a worker's async and offloaded calls come back when they finish on
// another thread. Shared with the calls (they may outlive the worker: a
// call posted after Close is released at once).
class WorkerMailbox final : public CallSink {
 public:
  // `cq` (not owned) is the worker's, interrupted when a call is posted
  // while the worker is parked; not used after Close.
  explicit WorkerMailbox(transport::CompletionQueue* cq) : cq_(cq) {}

  void Post(ServerCall* call) override;
  void CountMisuse() override {
    misuse_.fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t misuse() const { return misuse_.load(std::memory_order_relaxed); }

  // Worker thread.
  bool nonempty() const { return nonempty_.load(std::memory_order_acquire); }
  // Appends what was posted to `out`.
  void Take(std::vector<ServerCall*>* out);
  // Parked: a post interrupts the completion queue. The store is
  // sequentially consistent, as is Post's, so either the worker's check
  // after arming sees the post or the post sees the worker parked.
  void set_parked(bool parked) {
    parked_.store(parked, std::memory_order_seq_cst);
  }
  // Posts from now on release their call at once; appends what was posted
  // to `out`.
  void Close(std::vector<ServerCall*>* out);

 private:
  Mutex mu_;
  std::vector<ServerCall*> calls_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  transport::CompletionQueue* const cq_;
  std::atomic<bool> nonempty_{false};
  std::atomic<bool> parked_{false};
  std::atomic<uint64_t> misuse_{0};
};

// One accepted client connection and its memory.
struct ServerConnection {
  std::unique_ptr<transport::Connection> conn;
  std::unique_ptr<transport::MemoryRegion> region;  // Exposed to the client.
  wire::ConnectionLayout layout;
  transport::RemoteRegion client_reply;             // The client's reply slots.
  std::string peer;
  // `peer` for async and offloaded calls, which may outlive the connection
  // (made at the first such call).
  std::shared_ptr<const std::string> shared_peer;
  std::vector<uint32_t> expected_seq;               // Per slot.
  std::vector<uint32_t> push_in_flight;             // Per slot: WRITEs.
  std::vector<int64_t> push_posted_ns;              // Per slot: last WRITE.
  // Per slot (sized at the first async call): the answer that comes later.
  std::vector<std::unique_ptr<PendingSlot>> pending;
  uint32_t pending_count = 0;                       // Non-null in `pending`.
  uint32_t pushes = 0;                              // In flight, all slots.
  uint32_t bell = 0;                                // Its doorbell.
  uint32_t unsignaled = 0;
};

// Hot slots a worker polls at most (WorkFinder::Options::max_hot).
inline constexpr size_t kMaxHotSlots = 128;
// Bell groups a worker reads directly, without the summary, while its
// connections fit in them (WorkFinder::Options::direct_groups).
inline constexpr uint32_t kDirectGroups = 4;
// Past them, groups read directly for a window after a ring
// (WorkFinder::Options::max_hot_groups).
inline constexpr uint32_t kMaxHotGroups = 8;

// Doorbells per worker: max_connections rounded up to whole groups (any
// worker may be asked for every connection).
inline uint32_t BellCapacity(const ServerOptions& o) {
  const uint32_t n = static_cast<uint32_t>(std::max(1, o.max_connections));
  return (n + 63) / 64 * 64;
}

class ServerWorker {
 public:
  // `methods` and `counters` are not owned and must outlive the worker.
  // `bells` is the worker's doorbell area (wire::BellsLayout of
  // RoundUp64(options.max_connections) bells), exposed piecewise to its
  // connections; `cq` is created with remote_wake. `method_counters` (not
  // owned, may be null: per-method counts off) must outlive the worker and
  // is written only by it. `pool` (not owned; may be null if no method is
  // blocking) runs offloaded handlers and must outlive the worker's Stop.
  ServerWorker(int index, const ServerOptions& options,
               const MethodTable* methods, ServerCounters* counters,
               std::unique_ptr<transport::CompletionQueue> cq,
               std::unique_ptr<transport::MemoryRegion> bells,
               WorkerMethodCounters* method_counters = nullptr,
               HandlerPool* pool = nullptr);
  ~ServerWorker();

  void Start();
  // The worker's thread, after Start.
  std::thread::id thread_id() const { return thread_.get_id(); }
  // Stops the thread and fails (closes) every connection.
  void Stop();

  // A free doorbell for a connection about to be adopted, or
  // RESOURCE_EXHAUSTED. Thread-safe.
  absl::StatusOr<uint32_t> AllocateBell();
  // Gives back a bell that was allocated but never adopted. Thread-safe.
  void ReleaseBell(uint32_t bell);
  const wire::BellsLayout& bells_layout() const { return finder_.layout(); }
  const transport::MemoryRegion* bells() const { return bells_.get(); }

  // Hands a new connection (with its bell) to this worker. Thread-safe.
  void Adopt(std::unique_ptr<ServerConnection> c);
  int connections() const { return connections_.load(); }

  transport::CompletionQueue* cq() const { return cq_.get(); }
  // ServerDones called twice or dropped uncalled. Thread-safe.
  uint64_t done_misuse() const { return mailbox_->misuse(); }

 private:
  void Loop();
  void AdoptInbox();
  // Serves the request in slot `s` if it is complete; returns true if it
  // did (a malformed request is served too: with its error).
  bool Serve(ServerConnection* c, uint32_t slot);
  void ServeBatch(ServerConnection* c, uint32_t slot,
                  const wire::RequestView& req, int64_t start_ns,
                  uint16_t hot_flag);
  // Serves the run of batch entries that starts at entry `first` (*entry,
  // of sync method `m`, not expired): it and the entries after it that call
  // `m` and have time left, at most kMaxRun, through m's RunBatch where it
  // can. Leaves the entry that ended the run in *method_id and *entry with
  // *peeked set (if one did). Returns the entries it served.
  uint32_t ServeRun(ServerConnection* c, uint32_t s, uint32_t seq, uint16_t hot,
                    const MethodEntry* m, int64_t start_ns, int64_t deadline_ns,
                    const wire::BatchPayload& batch, uint32_t first,
                    wire::BatchReader* reader, uint32_t* method_id,
                    absl::string_view* entry, bool* peeked, ResultPartWriter* w,
                    int64_t* part_start);
  // Method stats of a run's `n` results, written as result entries at
  // `entries`; of one call whose handler ended now.
  void CountRun(const char* entries, uint32_t n, int64_t start_ns);
  void CountHandled(const absl::Status& st, int64_t start_ns, size_t len);
  // UNIMPLEMENTED for a request naming no method of this server, counted.
  absl::Status UnknownMethod(uint32_t method_id);
  // A handler (`what`: "sync handler", ...) of `method` that the worker
  // started at `start_ns` (or a batch's, after the previous handler's end)
  // ended now: returns how long it ran and notes a stall. Needs method
  // stats (the clock read is theirs).
  int64_t HandlerTime(int64_t start_ns, absl::string_view method,
                      const char* what) {
    const int64_t end = UnixNanos();
    const int64_t took = end - std::max(start_ns, last_handler_end_ns_);
    last_handler_end_ns_ = end;
    if (ABSL_PREDICT_FALSE(took > stall_warning_ns_)) {
      NoteStall(method, what, took);
    }
    return took;
  }
  // A handler of `method` (`what`: "sync handler", ...), or a batch's run
  // of its calls, held this worker for `ns`, past stall_warning_ns_: counts
  // it, and warns once per method. Cold.
  ABSL_ATTRIBUTE_NOINLINE ABSL_ATTRIBUTE_COLD void NoteStall(
      absl::string_view method, const char* what, int64_t ns);
  // RESOURCE_EXHAUSTED for a result of `len` bytes where `cap` were left.
  static absl::Status ResultTooLarge(size_t len, size_t cap);
  // Runs method `m` (FindMethod(method_id), looked up by the caller; null:
  // no such method, answered UNIMPLEMENTED). `in_batch`: ServeBatch has
  // reset ctx_ for the batch. Inlined into its callers (all
  // in server_worker.cc): as a call with eleven arguments it cost ~50
  // instructions a batch entry in argument passing, prologue and epilogue.
  absl::Status RunHandler(ServerConnection* c, const MethodEntry* m,
                          uint32_t method_id, absl::string_view request,
                          int64_t start_ns, int64_t deadline_ns, uint32_t s,
                          uint32_t seq, char* out, size_t cap, size_t* len,
                          bool in_batch);
  // m->handler->Run, a thrown exception made INTERNAL.
  absl::Status RunCatching(const MethodEntry* m, absl::string_view request,
                           char* out, size_t cap, size_t* len);
  // The method with `id` (null: none); remembers the last one. Batches
  // mostly repeat one method: the check for it is inlined.
  const MethodEntry* FindMethod(uint32_t id) {
    const MethodEntry* m = last_method_;
    if (ABSL_PREDICT_TRUE(m != nullptr && m->id == id)) return m;
    return FindOtherMethod(id);
  }
  const MethodEntry* FindOtherMethod(uint32_t id);
  // Publishes a single call's answer: `len` payload bytes already in the
  // slot's response buffer if `status` is OK, else the status.
  // `end_ns`: when its handler ended, if known (0: read the clock).
  void PublishSingle(ServerConnection* c, uint32_t slot, uint32_t seq,
                     int64_t start_ns, uint16_t hot, const absl::Status& status,
                     size_t len, int64_t end_ns = 0);

  // Async and offloaded calls (server_worker_async.cc).
  // Starts the single async/offloaded call in slot `s`.
  void StartCall(ServerConnection* c, uint32_t s, uint32_t seq,
                 absl::string_view request, const MethodEntry* m,
                 int64_t start_ns, int64_t deadline_ns, uint16_t hot);
  // A call object for `request` routed back to (c, s, seq, entry), or null
  // with the parse error in `*error`.
  ServerCall* NewCall(ServerConnection* c, uint32_t s, uint32_t seq,
                      uint32_t entry, const MethodEntry* m,
                      absl::string_view request, int64_t start_ns,
                      int64_t deadline_ns, absl::Status* error);
  // Runs the handler (async: here; blocking: on the pool). True if the call
  // finished before it returned (publish it now).
  bool Launch(ServerConnection* c, ServerCall* call, const MethodEntry* m);
  // The result of a finished call into `buf`: its status, and on OK the
  // serialized response's `*len`.
  absl::Status CallResult(ServerCall* call, char* buf, size_t cap,
                          size_t* len);
  // Counts a finished async or offloaded call in its method's stats (sync
  // calls are counted by RunHandler): the time from its arrival to now.
  void CountCall(const ServerCall* call, const absl::Status& status,
                 size_t result_bytes);
  void PublishCall(ServerConnection* c, uint32_t s, uint32_t seq,
                   int64_t start_ns, uint16_t hot, ServerCall* call);
  // Publishes one result part of slot `s`'s batch.
  void PublishPart(ServerConnection* c, uint32_t s, uint32_t seq, uint16_t hot,
                   const ResultPartWriter::Part& part, int64_t* part_start);
  // Commits the next result of a batch (written at NextPayload) and
  // publishes the part it closed, if any.
  // Inline: it runs once per batch entry.
  ABSL_ATTRIBUTE_ALWAYS_INLINE void CommitResult(
      ServerConnection* c, uint32_t s, uint32_t seq, uint16_t hot,
      ResultPartWriter* w, int64_t* part_start, const absl::Status& st,
      size_t len) {
    if (!st.ok()) len = PlaceError(w, st);
    ResultPartWriter::Part closed;
    if (w->Commit(static_cast<uint32_t>(len),
                  st.ok() ? 0 : static_cast<uint16_t>(st.code()), &closed)) {
      PublishPart(c, s, seq, hot, closed, part_start);
    }
  }
  // A failed entry's result: its status message at NextPayload (cut to
  // fit); returns its length.
  size_t PlaceError(ResultPartWriter* w, const absl::Status& st);
  // Places the ready results of a pending batch, in order; publishes its
  // parts; forgets the batch once its last result is out.
  void AdvanceBatch(ServerConnection* c, uint32_t s);
  void AddPending(ServerConnection* c, std::unique_ptr<PendingSlot> p);
  void RemovePending(ServerConnection* c, uint32_t s);
  // Takes the calls finished on other threads and publishes them.
  void TakeFinished();
  // The cancel word of slot `s` names its pending call: answer CANCELLED.
  void CheckCancel(ServerConnection* c, uint32_t s);
  // Answers `status` for the calls of pending slot `s` still running
  // (marking them cancelled): all of them, or those whose deadline is
  // before `now`.
  void EndPending(ServerConnection* c, uint32_t s, const absl::Status& status,
                  bool all, int64_t now);
  // Pending calls past their deadline get DEADLINE_EXCEEDED.
  void ExpirePending(int64_t now);
  // The connection is going: its pending calls are cancelled and dropped.
  void DropPending(ServerConnection* c);
  // After a result (part) at `offset` of the slot's response buffer is
  // published: WRITE it back if it is large, the client has the request's
  // mode bucket (wire::RequestModeBucket) in server-reply, or the request
  // asked for a notifying push (`notify`: wire::kRequestFlagNotify; the
  // WRITE then wakes the client's completion queue).
  void FinishPublish(ServerConnection* c, uint32_t slot, size_t offset,
                     size_t framed, bool large, uint32_t bucket,
                     bool notify = false);
  void Push(ServerConnection* c, uint32_t slot, size_t offset, size_t framed,
            bool notify);
  void TakeCompletions(absl::Span<const transport::Completion> comps);
  // Closes conns_[i] (swap-with-last).
  void Close(size_t i, const absl::Status& why);
  // Liveness (and lost server-reply completions) of `n` connections from
  // the cursor on; n >= conns_.size() checks them all.
  void CheckLiveness(size_t n, int64_t now);
  // Sleeps until woken (see the header comment); returns true if it slept.
  bool Park();

  const int index_;
  const ServerOptions options_;
  const MethodTable* const methods_;
  ServerCounters* const counters_;
  std::unique_ptr<transport::CompletionQueue> cq_;
  const std::unique_ptr<transport::MemoryRegion> bells_;
  HandlerPool* const pool_;  // Not owned; may be null.
  const std::shared_ptr<WorkerMailbox> mailbox_;

  // Worker thread only.
  WorkFinder finder_;
  std::vector<WorkFinder::Candidate> candidates_;
  std::vector<std::unique_ptr<ServerConnection>> conns_;
  std::vector<ServerConnection*> by_bell_;
  size_t liveness_cursor_ = 0;
  uint64_t rounds_ = 0;
  int64_t now_ = 0;           // The loop's clock, read as Loop says.
  bool clock_stale_ = true;
  ServerContext ctx_;
  // The method FindMethod found last (null: none yet). The method table does
  // not change once the server runs.
  const MethodEntry* last_method_ = nullptr;
  // Per-method counts (null: off), those of last_method_, and when the last
  // handler ended (a batch's next call is timed from there).
  WorkerMethodCounters* const method_counters_;
  MethodCounters* last_counters_ = nullptr;
  int64_t last_handler_end_ns_ = 0;
  // ServerOptions::stall_warning (INT64_MAX: off).
  const int64_t stall_warning_ns_;
  // Served calls' figures not yet added to their method's counters: a run
  // of OK calls of one method. The last call of the run waits whole until
  // FlushMethodStats, which runs after the replies are published (off their
  // path); each earlier call's buckets are counted as the next call joins,
  // and the run's call count and sums are added once at the flush (a batch
  // of N calls of one method adds each once, not N times). A failed call
  // ends the run and is counted at once.
  struct ServedRun {
    MethodCounters* counters = nullptr;  // Null: no run.
    uint64_t calls = 0;
    uint64_t latency_sum = 0;
    uint64_t bytes_sum = 0;
    uint64_t last_latency = 0;
    uint64_t last_bytes = 0;
  };
  ServedRun served_;
  void CountServed(MethodCounters* m, int code, int64_t latency_ns,
                   uint64_t bytes) {
    if (ABSL_PREDICT_FALSE(code != 0)) {
      FlushMethodStats();
      m->Served(code, latency_ns, bytes);
      return;
    }
    const uint64_t ns = latency_ns > 0 ? static_cast<uint64_t>(latency_ns) : 0;
    JoinServedRun(m);
    ++served_.calls;
    served_.latency_sum += ns;
    served_.bytes_sum += bytes;
    served_.last_latency = ns;
    served_.last_bytes = bytes;
  }
  // Before OK calls of `m` join served_: the run's last call so far is
  // counted whole if the run goes on, the run is flushed if m differs.
  void JoinServedRun(MethodCounters* m) {
    if (served_.counters == m) {
      m->latency_ns.CountBucket(served_.last_latency);
      m->result_bytes.CountBucket(served_.last_bytes);
    } else {
      FlushMethodStats();
      served_.counters = m;
    }
  }
  void FlushMethodStats() {
    MethodCounters* m = served_.counters;
    if (m == nullptr) return;
    m->latency_ns.CountBucket(served_.last_latency);
    m->result_bytes.CountBucket(served_.last_bytes);
    m->calls.Add(served_.calls);
    m->latency_ns.AddSum(served_.latency_sum);
    m->result_bytes.AddSum(served_.bytes_sum);
    served_ = ServedRun();
  }
  // Signaled WRITEs (pushes) posted on any connection, less completions
  // taken (never below 0); the loop polls the completion queue only while
  // > 0, as nothing else posts to it. Counts failed posts too, so it may
  // stay above the truth (then the loop polls every round, as before), never
  // below it.
  uint64_t pushes_in_flight_ = 0;
  // Pushes to push_conn_ not posted yet, as one post list (Push);
  // FlushPushes posts them before the next handler runs, at the latest at
  // the end of the round that made them.
  static constexpr size_t kMaxPushChain = 16;
  ServerConnection* push_conn_ = nullptr;
  std::vector<transport::WorkRequest> push_chain_;
  void FlushPushes();
  void FlushPushesBeforeHandler() {
    if (ABSL_PREDICT_FALSE(push_conn_ != nullptr)) FlushPushes();
  }
  // Slots with a pending answer (all connections), the earliest deadline
  // among their calls (a lower bound), calls taken from the mailbox, and
  // where sync entries of a batch behind a pending one put their results.
  uint32_t pending_slots_ = 0;
  // transport::ConnectionFailures() at the parked worker's last liveness
  // walk (Park).
  uint64_t parked_failures_seen_ = ~uint64_t{0};
  int64_t next_expiry_ns_ = INT64_MAX;
  std::vector<ServerCall*> finished_;
  std::vector<char> scratch_;
  // The entries of the run ServeRun serves.
  static constexpr uint32_t kMaxRun = 64;
  absl::string_view run_requests_[kMaxRun];
  int64_t run_deadlines_[kMaxRun];

  Mutex bells_mu_;
  std::vector<uint32_t> free_bells_ ABSL_GUARDED_BY(bells_mu_);

  Mutex inbox_mu_;
  std::vector<std::unique_ptr<ServerConnection>> inbox_ ABSL_GUARDED_BY(inbox_mu_);
  std::atomic<bool> inbox_nonempty_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
  // The methods NoteStall warned of (cold: read only on a stall).
  absl::flat_hash_set<std::string> stall_warned_;
  // Whether NoteStall warned of a preempted worker (once per worker).
  bool preempt_warned_ = false;
  // This thread's run delay (rpc/run_delay.h), read every kRunDelayEvery
  // while the worker works (the baseline NoteStall measures a stall's
  // waiting from) and at a stall.
  RunDelay run_delay_;
  int64_t delay_base_ns_ = 0;
  int64_t delay_base_at_ns_ = 0;  // 0: no baseline yet.
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVER_WORKER_H_
