// Copyright 2026 The rfrpc Authors.
//
// The client side of rfrpc: a Channel to one server, over which generated
// stubs (or user code) make unary calls.
//
// A Channel owns its connections (one per server worker, or as configured).
// Each call takes a slot on a connection: the request is WRITten into that
// slot in server memory; the result is fetched with RDMA READs of F bytes
// (remote fetching) or written back by the server (server-reply), per
// ChannelOptions::mode.
//
//   ChannelOptions opts;
//   RFRPC_ASSIGN_OR_RETURN(auto channel, Channel::Create(address, opts));
//   Echo::Stub stub(channel.get());
//   ClientContext ctx;
//   ctx.set_timeout(absl::Milliseconds(100));
//   EchoResponse resp;
//   absl::Status s = stub.Echo(&ctx, req, &resp);
//
// Thread safety: a Channel is thread-safe; sync calls from many threads and
// async calls may be mixed. Async callbacks run on the channel's progress
// thread (or on a thread making a sync call or calling Poll()) and must not
// block for long. A callback on the progress thread may destroy the channel
// (drop the last reference to it): the calls still outstanding then finish
// with CANCELLED, and those already finished get their results, each
// callback exactly once. One run by Poll() or by a sync call must not: that
// thread is inside the channel.
// A ClientContext is for one call at a time.
//
// A channel is listed by SnapshotChannels() (rpc/stats.h) while it exists,
// and its counts stay in its server address's totals after.

#ifndef RFRPC_RPC_CHANNEL_H_
#define RFRPC_RPC_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "rpc/call_stats.h"
#include "rpc/options.h"

namespace rfrpc {

// Per-call settings in, per-call facts out. Not copyable (a call in flight
// refers to it).
class ClientContext {
 public:
  ClientContext() = default;
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;

  // The call fails with DEADLINE_EXCEEDED after this long (from the call's
  // start). Overrides ChannelOptions::default_timeout.
  void set_timeout(absl::Duration timeout) {
    timeout_ = timeout;
    deadline_ = absl::InfiniteFuture();
  }
  void set_deadline(absl::Time deadline) {
    deadline_ = deadline;
    timeout_ = absl::InfiniteDuration();
  }
  // Routes the call to connection shard % connections (e.g. the partition
  // that owns a key). Without a shard, calls go round robin.
  void set_shard(uint64_t shard) {
    shard_ = shard;
    has_shard_ = true;
  }

  // Cancels the call made with this context: it finishes with CANCELLED
  // (the callback or future gets it, exactly once; a sync call returns it)
  // unless its result got there first, and the server is told (its handler
  // sees ServerContext::IsCancelled; an async or offloaded one's result is
  // then dropped). The call's slot is reused only once the server has
  // answered, so a late result never reaches another call. A context stays
  // cancelled: a call started with it later fails at once with CANCELLED.
  // Any thread, any time. REQUIRES: the channel of a call in flight with
  // this context is alive.
  void TryCancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // After the call: how the result came back and what it cost.
  RpcMode mode_used() const { return mode_used_; }
  int fetches() const { return fetches_; }        // READs of the header.
  int rdma_reads() const { return rdma_reads_; }  // All READs.
  // Server processing time it reported.
  absl::Duration server_time() const { return server_time_; }

  // Internal: the channel the call goes through, whose count of cancels
  // TryCancel bumps (so its connections look). Returns cancelled(), read
  // after the store (the other half of TryCancel's store and load).
  bool BindCancel(std::atomic<uint64_t>* cancels) {
    cancels_.store(cancels, std::memory_order_seq_cst);
    return cancelled_.load(std::memory_order_seq_cst);
  }
  absl::Duration timeout() const { return timeout_; }
  absl::Time deadline() const { return deadline_; }
  bool has_shard() const { return has_shard_; }
  uint64_t shard() const { return shard_; }
  void SetResult(RpcMode mode, int fetches, int reads, absl::Duration t) {
    mode_used_ = mode;
    fetches_ = fetches;
    rdma_reads_ = reads;
    server_time_ = t;
  }

 private:
  absl::Duration timeout_ = absl::InfiniteDuration();
  absl::Time deadline_ = absl::InfiniteFuture();
  uint64_t shard_ = 0;
  bool has_shard_ = false;
  RpcMode mode_used_ = RpcMode::kRemoteFetch;
  int fetches_ = 0;
  int rdma_reads_ = 0;
  absl::Duration server_time_;
  std::atomic<bool> cancelled_{false};
  std::atomic<std::atomic<uint64_t>*> cancels_{nullptr};
};

struct ChannelStats {
  uint64_t calls = 0;
  uint64_t calls_remote_fetch = 0;  // Completed by fetching.
  uint64_t calls_server_reply = 0;  // Completed by a server WRITE.
  uint64_t calls_failed = 0;
  uint64_t rdma_writes = 0;
  uint64_t rdma_reads = 0;
  uint64_t fetches = 0;             // Header READs (first READs and retries).
  uint64_t switches_to_server_reply = 0;
  uint64_t switches_to_remote_fetch = 0;
  // fetch_histogram[i]: calls completed by remote fetching after i+1
  // fetches; the last bucket counts 16 or more.
  uint64_t fetch_histogram[16] = {};
  // Header READs of the calls in fetch_histogram, summed (exact, where the
  // histogram's last bucket is open-ended).
  uint64_t fetched_call_fetches = 0;
  // Sum of server-reported processing time, ns.
  uint64_t server_time_ns = 0;

  // Remote fetching, averaged over connections: the measured READ round
  // trip and the learned delay before a call's first fetch.
  double fetch_rtt_ns = 0;
  double fetch_delay_ns = 0;
  // Now: slots (calls in flight, or batches) in use, over connections.
  int slots_in_use = 0;

  // Batching.
  // Request batches sent; a batch of one call goes as a plain request
  // (nothing to share framing with) and counts here and in batches_plain.
  uint64_t batches = 0;
  uint64_t batches_plain = 0;
  uint64_t batched_calls = 0;         // Calls that went in them.
  uint64_t flushes_full = 0;          // Flushed on N.
  uint64_t flushes_bytes = 0;         // Flushed because L would be exceeded.
  uint64_t flushes_timeout = 0;       // Flushed on T.
  // Flushed idle: a caller was about to wait for the batch and no company
  // worth waiting for was on its way (ChannelOptions::batch_idle_in_flight,
  // docs/rpc.md); a sync call sent alone counts here too.
  uint64_t flushes_idle = 0;
  // Adaptive: groups of entries WRITten into the server's slot before
  // their batch was published (synchronization-ahead transmission).
  uint64_t groups_sent_ahead = 0;
  // The most requests outstanding at once on one connection (batched:
  // added to a batch, result not in yet; bounded by max_outstanding).
  int outstanding_peak = 0;
  uint64_t result_parts = 0;          // Result parts received.
  uint64_t publishes_delayed = 0;     // Adaptive: publishes held back.
  // Async calls that found max_outstanding requests (or every slot) busy
  // and waited in the connection's queue.
  uint64_t calls_queued = 0;
  // Calls that found the connection's send queue near full (work requests
  // not yet completed) and waited for completions before posting.
  uint64_t send_queue_waits = 0;
  int batch_size = 0;                 // Current N (auto: the sizer's).
  double sizer_k = 0;                 // Auto: last window's fraction over.
  uint64_t sizer_adjustments = 0;

  // Work discovery (docs/rpc.md): doorbell rings (each two WRITEs, counted
  // in rdma_writes), of them re-rings of unanswered requests and rings with
  // a notify (the worker may be parked), and requests posted without a ring
  // because the worker was polling their slot (hot).
  uint64_t rings = 0;
  uint64_t rerings = 0;
  uint64_t notifies = 0;
  uint64_t hot_posts = 0;

  // Cancellation: calls finished with CANCELLED by ClientContext::TryCancel,
  // and cancel words WRITTen to the server (one per slot whose calls were
  // all cancelled after their request was sent).
  uint64_t calls_cancelled = 0;
  uint64_t cancel_writes = 0;

  // What the transport did for the channel's connections.
  TransportWork work;

  // Adds `other`'s counters (every field that counts events; the largest
  // outstanding_peak) into this. Figures of the moment (batch_size,
  // sizer_k, slots_in_use, fetch_rtt_ns, fetch_delay_ns) are left as they
  // are: the caller decides how to combine those.
  void AddCounters(const ChannelStats& other);

  double CallsPerBatch() const {
    return batches == 0 ? 0.0 : static_cast<double>(batched_calls) / batches;
  }

  double ReadsPerCall() const {
    return calls == 0 ? 0.0 : static_cast<double>(rdma_reads) / calls;
  }
  double RdmaOpsPerCall() const {
    return calls == 0 ? 0.0
                      : static_cast<double>(rdma_reads + rdma_writes) / calls;
  }
};

class Channel {
 public:
  // Connects to the server at `address`. Errors: UNAVAILABLE (no server,
  // no device), INVALID_ARGUMENT (bad options), the server's refusal.
  static absl::StatusOr<std::unique_ptr<Channel>> Create(
      const std::string& address, const ChannelOptions& options);

  virtual ~Channel() = default;

  // Unary call of method `method_id` (see MethodId()). Blocks until the
  // response arrives, the deadline passes (DEADLINE_EXCEEDED) or the server
  // is lost (UNAVAILABLE). `response` must not be null; `ctx` may be null
  // (defaults apply). Neither is kept after the call returns.
  virtual absl::Status Call(uint32_t method_id,
                            const google::protobuf::MessageLite& request,
                            google::protobuf::MessageLite* response,
                            ClientContext* ctx) = 0;

  // Starts the same call and returns at once; `done` runs exactly once with
  // the call's status. `request` may be destroyed when CallAsync returns;
  // `response` and `ctx` (if not null) must live until `done` runs.
  virtual void CallAsync(uint32_t method_id,
                         const google::protobuf::MessageLite& request,
                         google::protobuf::MessageLite* response,
                         ClientContext* ctx,
                         std::function<void(absl::Status)> done) = 0;

  // Advances every connection's outstanding calls on the calling thread and
  // runs the callbacks of async calls that finished, here, before returning.
  // Returns true if anything happened. Any thread may poll; with
  // ChannelOptions::progress_thread = false someone must, or async calls
  // never finish.
  virtual bool Poll() = 0;

  // Future flavour of CallAsync.
  std::future<absl::Status> CallFuture(
      uint32_t method_id, const google::protobuf::MessageLite& request,
      google::protobuf::MessageLite* response, ClientContext* ctx);

  // Server worker count learned at connect, and connections opened.
  virtual int server_workers() const = 0;
  virtual int connections() const = 0;
  // The mode each connection currently uses (hybrid moves between the two).
  virtual RpcMode connection_mode(int connection) const = 0;

  virtual ChannelStats stats() const = 0;
  // Per method id, sorted by id (names empty: a channel knows ids only);
  // empty with ChannelOptions::method_stats off.
  virtual std::vector<MethodStats> method_stats() const = 0;

  // The batch size N in force: 0 when batching is off; fixed and adaptive:
  // ChannelOptions::batch_size; auto: the size the sizer chose last (of any
  // connection). Cheap (one atomic load): a caller that keeps a multiple of
  // N in flight may read it per call.
  virtual int batch_size() const = 0;

  // Changes R and F for calls started from now on (the R/F tuner's online
  // re-selection). INVALID_ARGUMENT if retries < 1 or fetch_size < 16.
  virtual absl::Status SetFetchParams(int retries, uint32_t fetch_size) = 0;
  // The R and F in force.
  virtual int retries() const = 0;
  virtual uint32_t fetch_size() const = 0;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_CHANNEL_H_
