// Copyright 2026 The rfrpc Authors.
//
// One client connection of a Channel: its slots, its remote-fetching and
// server-reply datapath, and its hybrid mode (internal to rpc/).
//
// Each call takes a slot. client_send: the request is serialized straight
// into the slot's registered staging buffer and WRITTen into the server's
// request slot. client_recv: in remote fetching the client READs F bytes of
// the server's response buffer (header + payload) until the header shows the
// call's seq, then READs the rest if the result is larger; in server-reply
// it polls its local reply slot, which the server WRITEs.
//
// Thread safety: all methods are thread-safe (one mutex per connection).
// Progress() may be called by any thread; whoever calls it advances every
// call on the connection.

#ifndef RFRPC_RPC_CLIENT_CONNECTION_H_
#define RFRPC_RPC_CLIENT_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/futex_mutex.h"
#include "base/mutex.h"
#include "google/protobuf/message_lite.h"
#include "rpc/batch_policy.h"
#include "rpc/channel_stats.h"
#include "rpc/client_context.h"
#include "rpc/client_context_internal.h"
#include "rpc/fetch_timing.h"
#include "rpc/hybrid_policy.h"
#include "rpc/method_counters.h"
#include "rpc/options.h"
#include "rpc/request_batcher.h"
#include "rpc/slot_codec.h"
#include "rpc/wire_format.h"
#include "transport/send_queue_count.h"
#include "transport/transport.h"

namespace rfrpc {
namespace internal {

// One call in progress. Owned by the caller (sync: on its stack; async: by
// the channel until `done` runs).
struct PendingCall {
  uint32_t method_id = 0;
  google::protobuf::MessageLite* response = nullptr;  // Not owned.
  ClientContext* ctx = nullptr;                       // Not owned; may be null.
  std::function<void(absl::Status)> done;             // Async only.
  // Deadline in Unix ns (INT64_MAX: none); integers, as Progress checks
  // them every round.
  int64_t deadline_ns = INT64_MAX;
  int64_t start_ns = 0;
  // For async calls that waited for a slot: the serialized request.
  std::string queued_request;
  bool sync = false;
  // Batching: sent as a plain request without waiting in a batch (a lone
  // sync call, or an async one under Nagle's rule): its latency owes nothing
  // to N, so the auto sizer skips it.
  bool alone = false;
  // Counted in its connection's calls with a context (TrackContext).
  bool ctx_tracked = false;

  // Its result comes by a push that wakes its connection's completion queue
  // (wire::kRequestFlagNotify): a waiting caller may sleep in
  // ClientConnection::SleepForPush instead of a timed sleep.
  bool notify = false;

  // Results.
  absl::Status status;
  std::atomic<bool> finished{false};
  RpcMode mode_used = RpcMode::kRemoteFetch;
  int fetches = 0;
  int reads = 0;
  int64_t server_time_ns = 0;
  // When Progress found it finished (Unix ns; the progress round's clock
  // read, so per-method latency needs none of its own). 0 if it never
  // reached a connection.
  int64_t finish_ns = 0;
};

// Channel-wide counters, updated by every connection.
struct ChannelCounters {
  // What every call changes, in two cache lines (a client calling round
  // robin over thousands of channels finds each channel's counters cold):
  // the first eight here, then the ring counts and the first buckets of the
  // fetch histogram.
  alignas(64) std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> calls_remote_fetch{0};
  std::atomic<uint64_t> calls_server_reply{0};
  std::atomic<uint64_t> server_time_ns{0};
  std::atomic<uint64_t> fetched_call_fetches{0};
  std::atomic<uint64_t> fetches{0};
  std::atomic<uint64_t> rdma_writes{0};
  std::atomic<uint64_t> rdma_reads{0};
  std::atomic<uint64_t> rings{0};
  std::atomic<uint64_t> notifies{0};
  std::atomic<uint64_t> hot_posts{0};
  std::atomic<uint64_t> push_sleeps{0};
  std::atomic<uint64_t> fetch_histogram[16] = {};
  std::atomic<uint64_t> calls_failed{0};
  std::atomic<uint64_t> switches_to_server_reply{0};
  std::atomic<uint64_t> switches_to_remote_fetch{0};
  std::atomic<uint64_t> batches{0};        // Framed (plain: batches_plain).
  std::atomic<uint64_t> batched_calls{0};  // In framed batches.
  std::atomic<uint64_t> flushes_full{0};
  std::atomic<uint64_t> flushes_bytes{0};
  std::atomic<uint64_t> flushes_timeout{0};
  std::atomic<uint64_t> flushes_idle{0};
  std::atomic<uint64_t> batches_plain{0};
  std::atomic<uint64_t> groups_sent_ahead{0};
  std::atomic<int> outstanding_peak{0};
  std::atomic<uint64_t> result_parts{0};
  std::atomic<uint64_t> publishes_delayed{0};
  std::atomic<uint64_t> calls_queued{0};
  std::atomic<uint64_t> send_queue_waits{0};
  std::atomic<int> batch_size{0};
  std::atomic<double> sizer_k{0};
  std::atomic<uint64_t> sizer_adjustments{0};
  std::atomic<uint64_t> rerings{0};
  std::atomic<uint64_t> calls_cancelled{0};
  std::atomic<uint64_t> cancel_writes{0};
  // The work of connections already closed (the live ones' is read from
  // their transport counters; ClientConnection::AddWorkCounts).
  mutable Mutex closed_mu;
  TransportWork closed_work ABSL_GUARDED_BY(closed_mu);
  // Bumped by ClientContext::TryCancel: connections look for cancelled
  // calls when it changes. On a line of its own: every Progress round
  // loads it, and the counters above change with every call.
  alignas(64) std::atomic<uint64_t> cancels{0};
};

// What every call counts, kept per connection (ChannelCounters holds the
// same counts of the channel's connections that are gone): a call changes
// these under its connection's mutex (one writer at a time) without a
// locked instruction, where the channel's shared atomics took up to a dozen
// a call. The first two lines are what a call touches; the rest of the
// histogram follows.
struct alignas(64) CallCounts {
  SingleWriterCounter calls;
  SingleWriterCounter calls_remote_fetch;
  SingleWriterCounter server_time_ns;
  SingleWriterCounter fetched_call_fetches;
  SingleWriterCounter fetches;
  SingleWriterCounter rdma_writes;
  SingleWriterCounter rdma_reads;
  SingleWriterCounter rings;
  SingleWriterCounter notifies;
  SingleWriterCounter hot_posts;
  SingleWriterCounter calls_server_reply;
  // Batching with calls that go alone (every call of a lone sync caller).
  SingleWriterCounter batches_plain;
  SingleWriterCounter flushes_idle;
  SingleWriterCounter fetch_histogram[16];
};

class alignas(64) ClientConnection {
 public:
  // Connects to `address`, asking for server worker `worker` (-1: any).
  // `provider` and `counters` are not owned and must outlive the result.
  static absl::StatusOr<std::unique_ptr<ClientConnection>> Connect(
      transport::Provider* provider, const std::string& address, int worker,
      const ChannelOptions& options, ChannelCounters* counters);

  ~ClientConnection();

  // Adds this connection's transport work counts so far (work requests,
  // post lists, inline WRITEs, signaled requests, completion-queue polls)
  // to `*to`. Thread-safe.
  void AddWorkCounts(TransportWork* to) const;
  // Adds this connection's per-call counts (CallCounts) to `*to`.
  // Thread-safe.
  void AddCallCounts(ChannelStats* to) const;

  // Starts `call` with `request` (serialized straight into the slot). Returns
  // RESOURCE_EXHAUSTED if every slot is busy (the caller drives Progress and
  // tries again), INVALID_ARGUMENT if the request is larger than a slot,
  // UNAVAILABLE if the connection has failed.
  absl::Status Start(PendingCall* call,
                     const google::protobuf::MessageLite& request);

  // Queues an async call that found no free slot; it starts when one frees.
  // Takes the serialized request in call->queued_request. Returns the
  // connection's status, taking nothing, if it has failed (the caller
  // finishes the call: a failed connection's queue is never drained again).
  absl::Status Enqueue(PendingCall* call);

  // Advances every call on this connection. Finished async calls are
  // appended to `finished` (the caller runs their callbacks outside any
  // lock). Returns true if anything happened.
  bool Progress(std::vector<PendingCall*>* finished);

  // A caller waiting for a call with PendingCall::notify sleeps here
  // instead of a timed sleep: it arms the completion queue, advances the
  // connection (whatever landed before the arm is found), and if nothing
  // happened blocks until the queue is woken (the call's push, any
  // completion) or `ns` passed. Safe while other threads call Progress.
  void SleepForPush(int64_t ns, std::vector<PendingCall*>* finished);
  // True if every call in flight here waits for a notifying push and none
  // has a context (the channel's progress thread may then sleep in
  // SleepForPush until the earliest of their deadlines, which it sets).
  bool WaitsOnlyForPushes(int64_t* earliest_deadline_ns) const;
  // How much longer a push sleep may last than a timed pause (the push
  // ends it; the timeout only bounds how late a failure is noticed).
  static constexpr int64_t PushSleepStretch() { return 8; }
  // Ends a SleepForPush early (a new call for the progress thread to
  // drive); one that starts later returns at once. Any thread.
  void InterruptPushSleep();

  // Fails every outstanding call with `status` (e.g. the channel is being
  // destroyed) and the connection with it.
  void Abort(absl::Status status, std::vector<PendingCall*>* finished);

  // Auto batching: feeds the sizer the latencies callers saw for async calls
  // that finished OK, measured from CallAsync to the start of their callback
  // (the channel measures them as it runs the callbacks Progress handed
  // out). Sync calls are measured when they finish, inside Progress.
  // Whether the finished async `call` is timed (RequestBatcher::Times: auto
  // mode, OK, and it waited in a batch); the mode is fixed, so no lock.
  bool TimesLatency(const PendingCall& call) const {
    return RequestBatcher::Times(batch_mode_, call.status.ok(), call.alone);
  }
  // Feeds the auto sizer (if on) latencies of calls whose callbacks ran by
  // `now_ns` (UnixNanos, rpc/clock.h).
  void RecordLatencies(absl::Span<const int64_t> latencies_ns, int64_t now_ns);

  // True while async calls, queued calls or abandoned slots need someone to
  // call Progress.
  bool NeedsDriver() const { return needs_driver_.load(std::memory_order_acquire) > 0; }

  absl::Status status() const;
  // Cheap check for the fast path: true once the connection has failed.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // kServerReply if some method (mode bucket) of the connection is in
  // server reply, else kRemoteFetch.
  RpcMode mode() const;
  // Changes R and F for calls from now on.
  void SetFetchParams(int retries, uint32_t fetch_size);
  int worker() const { return worker_; }
  int server_workers() const { return server_workers_; }
  const wire::ConnectionLayout& layout() const { return layout_; }
  absl::Duration fetch_rtt() const;
  absl::Duration fetch_delay() const;
  // Slots holding a call or a batch now.
  int busy_slots() const;

  // Prefetch hints. A client calling round robin over thousands of
  // connections finds each one cold, and its call then waits on a chain of
  // dependent misses (channel, connection, slot, transport connection,
  // completion queue, ...). PublishHotLines writes the addresses the next
  // call reads first into the sink (kHotLines entries, relaxed stores; at
  // once when the sink is set, then whenever asked), and the channel
  // prefetches them all at the start of that call: the misses overlap
  // instead of adding up. `sink` must outlive the connection; several
  // connections may share it, and one replaced by a reconnect may leave its
  // addresses there: hints only, a prefetch never faults.
  static constexpr int kHotLines = 32;
  void SetHotLinesSink(std::atomic<const void*>* sink);
  void PublishHotLines();

 private:
  enum class Phase : uint8_t {
    kFree,
    kFilling,       // The open request batch, not sent yet.
    kFetchHeader,   // Remote fetching: READ the header (+ F bytes).
    kFetchRest,     // READ of the part past F in flight.
    kWaitReply,     // Server-reply: poll the local reply slot.
    kSwitchCheck,   // Mode flag WRITE posted; one more READ decides.
    kDraining,      // Done, but a READ into its fetch buffer is still in
                    // flight; freed when that READ completes.
  };
  // One slot's state. Aligned to a cache line, with what every call uses
  // in the first line and what a plain (unbatched) call uses in the first
  // two: a client cycling through thousands of connections finds them cold.
  struct alignas(64) Slot {
    // Line 0.
    Phase phase = Phase::kFree;
    // Mode bucket of the request in the slot (wire::ModeBucket of its
    // method, or kBatchModeBucket): whose mode it follows.
    uint8_t bucket = 0;
    bool read_outstanding = false;
    bool counted_slow = false;
    bool batch = false;  // Holds a batch (the fields at the end).
    // Work discovery. rung: the outstanding request rang (its bit goes into
    // every ring until its result arrives).
    bool rung = false;
    // Posted without a doorbell, and no clock has been read since the post:
    // the first Progress round checks that the post did not come after
    // hot_until_ns (the poster was descheduled between its clock read and
    // the post) and rings if it did.
    bool hot_unconfirmed = false;
    // Its doorbell carried a notify (the worker may have been parked).
    bool notified = false;
    // The request asked for a notifying push (PendingCall::notify): the
    // server pushes whatever the mode word says, so no probe READs.
    bool push_notify = false;
    uint32_t seq = 0;
    int fetches = 0;
    PendingCall* call = nullptr;  // Single call; null when abandoned.
    int64_t posted_ns = 0;       // When the request WRITE was posted.
    int64_t next_fetch_ns = 0;   // Earliest time of the next header READ.
    int64_t read_posted_ns = 0;
    int64_t last_probe_ns = 0;
    int reads = 0;
    uint32_t fetched_bytes = 0;  // Bytes valid in the fetch buffer (from
                                 // read_offset).
    // Line 1.
    uint32_t read_offset = 0;    // part_offset the last header READ was for.
    // Server-reply wait: the part_offset whose reply-slot head was last
    // found suspect (and checked with a probe READ); kNoOffset if none.
    static constexpr uint32_t kNoOffset = ~uint32_t{0};
    uint32_t suspect_offset = kNoOffset;
    uint32_t part_offset = 0;         // Offset of the next result part.
    // No call of the slot expires before this (Unix ns): Progress looks at
    // the calls' deadlines only once it has passed, not at every call of
    // every busy batch in every round. A lower bound: finished calls may
    // have set it, and it is recomputed when ExpireCalls runs.
    int64_t earliest_deadline_ns = INT64_MAX;
    // hot_until_ns: the server polls this slot for its next request if it
    // is posted before then (its last result carried kResponseFlagHot); 0:
    // it must ring. next_ring_ns / ring_backoff_ns: when an unanswered
    // request rings again (with notify), in case its doorbell was lost.
    int64_t hot_until_ns = 0;
    int64_t next_ring_ns = 0;
    int64_t ring_backoff_ns = 0;
    // Sent by the batcher (a batch, or a batch of one sent plain) and
    // counted in the batcher's in_flight() until FreeSlot.
    bool in_flight_counted = false;
    bool timed = false;  // Its turnaround feeds the batcher's.
    // Batches.
    bool has_sync = false;  // The open batch holds a sync call.
    bool publish_pending = false;     // Adaptive: held by the elastic rule.
    std::vector<PendingCall*> calls;  // Entry order; null once finished early.
    uint32_t bytes = 0;               // Payload bytes (entries) so far.
    // Response-slot bytes the entries' results may take (ResultRoom).
    uint32_t result_room = 0;
    uint32_t transmitted = 0;         // Adaptive: payload bytes WRITTen early.
    uint32_t untransmitted_entries = 0;
    uint32_t results_done = 0;
    int64_t first_ns = 0;             // First entry's arrival.
    uint32_t live_calls = 0;          // Calls not yet finished.
  };

  ClientConnection(ChannelOptions options, ChannelCounters* counters);

  // Response-slot bytes a batch entry of `method_id` may need for its
  // result: its bucket's bound (unseen: batching.result_bytes, else a whole
  // slot's payload), at least kBatchErrorBytes, as an entry in a part of
  // its own, the server's worst case
  // (ResultPartWriter::NextPayload). A batch whose entries' rooms, plus
  // kResultRoomSlack, fit the response slot never has a result that
  // obeys its bound fail for lack of room.
  uint32_t ResultRoom(uint32_t method_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (method_id == room_method_) return room_;
    return ResultRoomMiss(method_id);
  }
  uint32_t ResultRoomMiss(uint32_t method_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static constexpr uint32_t kResultRoomSlack = 32;
  // A result of `method_id` with a `payload_bytes` payload came back: its
  // bucket's bound grows to it (it never shrinks).
  void NoteResult(uint32_t method_id, size_t payload_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (method_id == noted_method_ && payload_bytes <= noted_bound_) return;
    NoteResultMiss(method_id, payload_bytes);
  }
  void NoteResultMiss(uint32_t method_id, size_t payload_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A batched call of `method_id` failed RESOURCE_EXHAUSTED with `message`:
  // if the server says its result outgrew what was left of the batch's
  // response slot, the bucket's bound grows to that result's size.
  void NoteOverflow(uint32_t method_id, absl::string_view message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Starts `call`: into the open batch when batching (unless it goes
  // alone, SendAloneLocked), else as a plain request.
  absl::Status StartLocked(PendingCall* call, const char* serialized,
                           const google::protobuf::MessageLite* request,
                           size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // StartLocked's plain request, in a slot of its own; `alone`: a batching
  // connection's call that goes alone. Apart from StartLocked, whose
  // batched path then saves and restores none of the registers this one
  // needs.
  absl::Status StartPlainLocked(PendingCall* call, const char* serialized,
                                const google::protobuf::MessageLite* request,
                                size_t size, bool alone)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Batching: whether `call` (of `size` bytes) goes as a batch of one sent
  // at once, as a plain request (a sync call that opens a batch the idle
  // flush would send at once).
  bool SendAloneLocked(const PendingCall* call, size_t size)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AddToBatchLocked(PendingCall* call, const char* serialized,
                                const google::protobuf::MessageLite* request,
                                size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends the open batch (or holds it, adaptive's elastic threshold).
  // `now` (UnixNanos) may be 0: PublishLocked reads the clock then.
  void FlushLocked(FlushReason reason, int64_t now = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The idle flush (FlushPolicy::WhenIdle): sends the open batch if nobody
  // is adding to it and few enough batches are in flight. Called where a
  // caller is about to wait for it; `now` (UnixNanos) may be 0: read here if
  // needed.
  void FlushIfIdleLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether an open batch of `entries` (with a sync call in it: `sync`)
  // opened at `first_ns` (0: being opened now) is idle
  // (FlushPolicy::WhenIdle). `*now` (UnixNanos, 0 if
  // not read yet) is read here if needed.
  bool IdleLocked(int entries, bool sync, int64_t first_ns, int64_t* now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records a new peak of outstanding_ (ChannelStats::outstanding_peak).
  void NoteOutstandingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishLocked(uint32_t s, int64_t now = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void TransmitGroupLocked(uint32_t s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PostHeaderRead(uint32_t s, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The header READ of slot `s`, with the slot's fetch state set as if it
  // were posted (the caller posts it, maybe with others in one list).
  transport::WorkRequest HeaderRead(uint32_t s, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Header READs of `n` (<= kReadList) slots in one post list.
  static constexpr int kReadList = 16;
  void PostHeaderReads(const uint32_t* slots, int n, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HandleHeader(uint32_t s, int64_t now, std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Progress's steps. Each but the last returns false once the connection
  // has failed (its calls failed into `finished`) and sets *progressed when
  // something happened.
  // Posts the header READs that are due (in post lists of kReadList), and
  // rings for hot posts that turned out late.
  bool PostDueReadsLocked(int64_t now, std::vector<PendingCall*>* finished,
                          bool* progressed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Polls the completion queue and carries out what each completion says;
  // `*now` is read again if any came.
  bool TakeCompletionsLocked(int64_t* now, std::vector<PendingCall*>* finished,
                             bool* progressed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Re-rings, lost completions, server-reply slots and their probes,
  // deadlines.
  bool SweepSlotsLocked(int64_t now, std::vector<PendingCall*>* finished,
                        bool* progressed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queued async calls take freed slots (or expire); true if any started
  // or failed to start (one that expired waiting leaves the queue
  // uncounted, as it always did).
  bool StartQueuedLocked(int64_t now, std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A batch result part's first READ takes the size of the last part seen
  // (rounded up to 64 bytes), at most this many bytes; F if larger.
  static constexpr uint32_t kMaxBatchFetchBytes = 4096;
  // Completes slot s from its reply slot if the server's push of the current
  // part has landed there whole; returns whether it did. Sets
  // *suspect (when non-null) if the reply slot holds our seq with a frame
  // that does not fit.
  bool TakeReplyLocked(uint32_t s, std::vector<PendingCall*>* finished,
                       bool* suspect = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Complete(uint32_t s, const char* payload, const wire::ResponseView& view,
                RpcMode via, std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CompletePart(uint32_t s, const char* payload,
                    const wire::ResponseView& view, RpcMode via,
                    std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds `n` calls that got a result (via `via`, after `fetches` header
  // READs, `server_ns` of server time each) to the channel's counters.
  void CountResults(uint64_t n, RpcMode via, int fetches, int64_t server_ns)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishWithResult(PendingCall* call, uint16_t status_code,
                        absl::string_view payload, RpcMode via, const Slot& slot,
                        int64_t server_ns, std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishCall(PendingCall* call, absl::Status status,
                  std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FinishCall's body, inline in FinishWithResult (once per call that gets
  // its result); FinishCall is the out-of-line copy for every other way a
  // call ends.
  void FinishCallInline(PendingCall* call, absl::Status&& status,
                        std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FreeSlot(uint32_t s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the batcher's sizer was fed: counts its decisions and publishes N
  // (ChannelStats::batch_size, sizer_k, sizer_adjustments).
  void NoteSizerLocked(const RequestBatcher::Recorded& r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The oldest publish time of the batches in flight (`now` if none).
  int64_t OldestInFlightLocked(int64_t now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WRITEs mode_bits_ into the server's mode word.
  void WriteModeWord() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FailLocked(absl::Status status, std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the hints (SetHotLinesSink) for the next call.
  void PublishHotLinesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Posts a request (or batch) WRITE list for slot `s` at `now`, with the
  // doorbell WRITEs after it unless the slot is hot (docs/rpc.md "Work
  // discovery"). `wrs` has room for two more entries past `n`.
  bool PostRequest(uint32_t s, int64_t now, transport::WorkRequest* wrs, int n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Fills two WorkRequests (bell word, summary byte) naming slot `s` and
  // every other slot whose request rang and is unanswered; the mask of all
  // outstanding slots when `all` (a re-ring).
  void BellWrites(uint32_t s, bool all, bool notify, transport::WorkRequest* wrs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rings again for unanswered requests whose ring time came (at most one
  // ring per call, covering them all).
  void ReRingLocked(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a ring posted at `now` must carry a notify (the worker may be
  // parked), and the record of a request posted at `now`.
  bool NotifyDue(int64_t now) const;
  void NotePost(int64_t now);
  // Sets `signaled` on the last of `wrs` when the unsignaled count says so.
  void SignalAccounting(transport::WorkRequest* wrs, int n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Post one request / a post list (one doorbell). WRITEs of up to
  // inline_max_ bytes are made inline here. False (and the connection
  // failed) if the transport refused.
  bool Post(transport::WorkRequest wr) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Send-queue entries a connection of `slots` slots asks for, and how many
  // of them new calls may fill (the rest stays for calls already in).
  static uint32_t SendQueueDepth(uint32_t slots) { return 12 * slots + 128; }
  static uint32_t SendQueueAdmit(uint32_t slots) { return 4 * slots + 64; }
  // Whether a new call may post (see sq_).
  bool SendQueueAdmits() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // (With no signaled request outstanding nothing could free an entry:
    // never the case with one in signal_every_ signaled, but never a hang.)
    return sq_.in_use() <= sq_admit_ || !sq_.awaiting_completion();
  }

  bool PostList(absl::Span<transport::WorkRequest> wrs)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recomputes needs_driver_, with the abandoned slots counted again when
  // there may be any (may_abandon_). A change that abandons no slot may
  // call StoreNeedsDriver instead.
  void UpdateNeedsDriver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inline: every call that joins a batch stores it.
  void StoreNeedsDriver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // Only "> 0" is read (NeedsDriver): one for a non-empty queue, not its
    // size, which std::deque computes from four pointers.
    needs_driver_.store(async_slots_ + (queued_.empty() ? 0 : 1) +
                            abandoned_slots_ + (open_ >= 0 ? 1 : 0),
                        std::memory_order_release);
  }
  bool Abandoned(const Slot& slot) const {
    return slot.batch ? slot.live_calls == 0 : slot.call == nullptr;
  }
  void ExpireCalls(uint32_t s, int64_t now, std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finishes the calls whose context was cancelled with CANCELLED; their
  // slots are abandoned (reused once the server answers) and the server
  // told through the slot's cancel word.
  void CancelLocked(int64_t now, std::vector<PendingCall*>* finished)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // WRITEs slot `s`'s cancel word (its current seq) and rings.
  void PostCancel(uint32_t s, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A call with a context is being placed: counted (only calls with a
  // context can be cancelled, so Progress looks for cancels only while
  // there are some), and if its context is cancelled already the next
  // Progress round looks for cancelled calls.
  void TrackContext(PendingCall* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (call->ctx == nullptr) return;
    if (!call->ctx_tracked) {
      call->ctx_tracked = true;
      ++ctx_calls_;
    }
    if (call->ctx->cancelled()) rescan_cancels_ = true;
  }
  void UntrackContext(PendingCall* call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (call->ctx_tracked) {
      call->ctx_tracked = false;
      --ctx_calls_;
    }
  }

  char* staging(uint32_t s) const;
  char* fetch_buf(uint32_t s) const;
  char* reply_slot(uint32_t s) const;
  bool batching() const { return batch_mode_ != BatchMode::kOff; }

  // The object is aligned to a cache line and what a call uses comes first,
  // through publish_posted_ns_: a client cycling through thousands of
  // connections finds them cold, and paid for a line per field scattered
  // between the options and the batcher.
  std::unique_ptr<transport::MemoryRegion> reply_;
  transport::RemoteRegion bell_word_region_, bell_summary_region_;
  size_t mode_word_offset_ = 0;
  size_t cancel_src_offset_ = 0;

  // What a call uses, from here to sq_: a few cache lines, all a call finds
  // cold when its client cycles through thousands of connections. A
  // FutexMutex: taken to start each call and in each progress round, where
  // std::mutex's calls into glibc cost ~57 instructions a pair.
  mutable FutexMutex mu_;
  const bool post_lists_;              // options_.post_lists.
  const bool has_on_result_;           // options_.on_result is set.
  const RpcMode mode_option_;          // options_.mode.
  const BatchMode batch_mode_;         // options_.batch.
  const int max_outstanding_;          // options_.batching.max_outstanding.
  bool rescan_cancels_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t used_slots_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::vector<uint32_t> free_slots_ ABSL_GUARDED_BY(mu_);
  ChannelCounters* const counters_;  // Not owned.
  // The connection's completions when its transport hands them over as it
  // posts (shm: Connection::SetInlineCompletions); TakeCompletionsLocked
  // then drains this instead of polling cq_, whose cells and counters a
  // call no longer touches. Declared before conn_, which fills it.
  transport::InlineCompletions inline_comps_;
  bool inline_completions_ = false;
  // Its drains, counted as cq_->stats() counts polls (AddWorkCounts).
  SingleWriterCounter inline_polls_;
  SingleWriterCounter inline_empty_polls_;
  std::unique_ptr<transport::MemoryRegion> local_;
  std::unique_ptr<transport::Connection> conn_;
  std::unique_ptr<transport::CompletionQueue> cq_;
  size_t staging_offset_ = 0, fetch_offset_ = 0;
  size_t bell_src_offset_ = 0;
  wire::ConnectionLayout layout_;
  int busy_slots_ ABSL_GUARDED_BY(mu_) = 0;
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;      // Requests in flight.
  int async_slots_ ABSL_GUARDED_BY(mu_) = 0;
  int ctx_calls_ ABSL_GUARDED_BY(mu_) = 0;  // Calls here with a context.
  transport::RemoteRegion server_region_;
  uint64_t mode_bits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t now_ns_ ABSL_GUARDED_BY(mu_) = 0;       // Progress's last clock read.
  uint64_t rounds_ ABSL_GUARDED_BY(mu_) = 0;
  // First-fetch delay, READ round trip, R and the pauses between READs.
  FetchTiming timing_ ABSL_GUARDED_BY(mu_);
  uint32_t fetch_size_ ABSL_GUARDED_BY(mu_) = 256; // F.
  uint32_t ring_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t unsignaled_ ABSL_GUARDED_BY(mu_) = 0;
  const uint32_t signal_every_;
  uint32_t inline_max_ = 0;
  // When this process last posted a request to the connection's server
  // worker, on any connection (WorkerPostClock); a connection's own clock
  // when the server sent no epoch.
  std::shared_ptr<std::atomic<int64_t>> worker_last_post_;
  int64_t next_rering_ns_ ABSL_GUARDED_BY(mu_) = INT64_MAX;
  int64_t hot_half_window_ns_ = 0;
  int64_t notify_gap_ns_ = 0;
  const int64_t rering_after_ns_;  // ChannelOptions::rering_after.
  uint64_t seen_cancels_ ABSL_GUARDED_BY(mu_) = 0;  // counters_->cancels.
  std::atomic<int> needs_driver_{0};
  std::atomic<bool> failed_{false};
  int open_ ABSL_GUARDED_BY(mu_) = -1;            // Slot of the open batch.
  int abandoned_slots_ ABSL_GUARDED_BY(mu_) = 0;  // As of the last scan.
  // A call was cancelled or expired since the connection last had nothing
  // in flight: only then can a slot be abandoned, so only then does
  // UpdateNeedsDriver scan the slots for them (scanning every round cost
  // ~14 instructions of a round's ~420, callgrind at N = 32).
  bool may_abandon_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::deque<PendingCall*> queued_ ABSL_GUARDED_BY(mu_);
  uint32_t sq_admit_ = 0;
  transport::SendQueueCount sq_ ABSL_GUARDED_BY(mu_);
  CallCounts counts_;  // Written under mu_ only.

  HybridPolicy& Policy(uint8_t bucket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (bucket == first_bucket_) return first_policy_;
    return OtherPolicy(bucket);
  }
  HybridPolicy& OtherPolicy(uint8_t bucket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ServerReply(uint8_t bucket) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ((mode_bits_ >> bucket) & 1) != 0;
  }
  Phase WaitPhase(uint8_t bucket) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ServerReply(bucket) ? Phase::kWaitReply : Phase::kFetchHeader;
  }
  void SetModeBit(uint8_t bucket, bool server_reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static constexpr int kNoBucket = -1;
  int first_bucket_ ABSL_GUARDED_BY(mu_) = kNoBucket;
  HybridPolicy first_policy_ ABSL_GUARDED_BY(mu_);
  int outstanding_peak_ ABSL_GUARDED_BY(mu_) = 0;
  // Callers waiting for mu_ to add a call to the open batch (they bump it
  // around the wait, so unguarded): the idle flush waits for them.
  std::atomic<int> adding_{0};
  // Batching's decisions, N, the sizer and the batches in flight. Its first
  // fields are read by every Progress round (PublishLost); the hot lines run
  // to batcher_.hot_end().
  RequestBatcher batcher_ ABSL_GUARDED_BY(mu_);
  std::atomic<const void*>* hot_sink_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Colder: batching's sizer, the other methods' policies, the options.
  double reply_ns_ ABSL_GUARDED_BY(mu_) = 0;        // EWMA of server-reply latency.
  // Mode buckets whose last result took the server at least kLongWaitNs:
  // their sync callers will sleep, so their server-reply calls ask for a
  // notifying push.
  uint64_t long_buckets_ ABSL_GUARDED_BY(mu_) = 0;
  // The largest result payload seen per mode bucket (an error's message
  // counts; methods share a bucket, so it bounds each of them), and which
  // buckets have seen one: a batch keeps room in its one response slot for
  // every entry's result at its bucket's bound (ResultRoom), a bucket not
  // yet seen at batching.result_bytes or else a whole slot's payload.
  uint32_t result_bound_[wire::kModeBuckets] ABSL_GUARDED_BY(mu_) = {};
  uint64_t result_seen_ ABSL_GUARDED_BY(mu_) = 0;
  // The last method ResultRoom answered for and its room, and the last
  // method NoteResult saw and its bucket's bound: a batch's calls are
  // mostly of one method (NoteResult clears both when a bound changes).
  uint32_t room_method_ ABSL_GUARDED_BY(mu_) = UINT32_MAX;
  uint32_t room_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t noted_method_ ABSL_GUARDED_BY(mu_) = UINT32_MAX;
  uint32_t noted_bound_ ABSL_GUARDED_BY(mu_) = 0;
  // A thread sleeps in SleepForPush (at most one at a time).
  std::atomic<bool> push_sleeping_{false};
  uint32_t batch_fetch_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<HybridPolicy> policies_ ABSL_GUARDED_BY(mu_);
  uint8_t policy_index_[wire::kModeBuckets] ABSL_GUARDED_BY(mu_);
  const ChannelOptions options_;
  int worker_ = 0;
  int server_workers_ = 1;
  uint32_t large_result_bytes_ = 0;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_CLIENT_CONNECTION_H_
