// Copyright 2026 The rfrpc Authors.
//
// Client datapath: client_send (request WRITE) and client_recv (remote
// fetching or waiting for a server-reply WRITE), the hybrid switch and
// batching. Set-up is in client_connection_setup.cc.

#include "rpc/client_connection.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>
#include <type_traits>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/clock.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "rpc/batch_format.h"
#include "rpc/slot_codec.h"

namespace rfrpc {
namespace internal {
namespace {

using transport::WorkRequest;

// wr_id = slot << 4 | kind.
enum WrKind : uint64_t {
  kHeaderRead = 1,
  kRestRead = 2,
  kRequestWrite = 3,
  kModeWrite = 4,
  kPublishWrite = 5,  // Adaptive batching: the header WRITE of a batch.
  kBellWrite = 6,     // A doorbell WRITE (bell word or summary byte).
  kCancelWrite = 7,   // A cancel word (TryCancel).
};
constexpr uint64_t WrId(uint32_t slot, WrKind kind) {
  return (uint64_t{slot} << 4) | kind;
}

// In server-reply, READ the response buffer this often anyway: the server
// always publishes there first, so this bounds any wait on a lost race.
constexpr int64_t kReplyProbeNs = 1000 * 1000;
// An unanswered request rings again (with notify) ChannelOptions::
// rering_after after it was posted, then after twice that, and so on up to
// kMaxReRingNs: the doorbell may have been lost (a peer cleared a shared
// summary byte, or a hot window ran out while the request was in flight),
// and the worker may be parked. A normal call never gets here.
constexpr int64_t kMaxReRingNs = 64 * 1000 * 1000;
// Check the transport's liveness every this many progress rounds.
constexpr uint64_t kStatusCheckRounds = 256;
// A READ or publish WRITE whose completion has not arrived after this long
// is lost (an RC queue pair completes or errors well within it): the
// connection fails with UNAVAILABLE and the channel reconnects, instead of
// the slot (or, for a publish, the connection) staying wedged forever.
constexpr int64_t kLostCompletionNs = int64_t{2} * 1000 * 1000 * 1000;

int64_t NowNs() { return UnixNanos(); }

}  // namespace

char* ClientConnection::staging(uint32_t s) const {
  return local_->data() + staging_offset_ +
         size_t{s} * layout_.request_slot_bytes;
}
char* ClientConnection::fetch_buf(uint32_t s) const {
  return local_->data() + fetch_offset_ +
         size_t{s} * layout_.response_slot_bytes;
}
char* ClientConnection::reply_slot(uint32_t s) const {
  return reply_->data() + layout_.ReplySlotOffset(s);
}

absl::Status ClientConnection::status() const {
  MutexLock lock(&mu_);
  return status_;
}

RpcMode ClientConnection::mode() const {
  MutexLock lock(&mu_);
  return mode_bits_ != 0 ? RpcMode::kServerReply : RpcMode::kRemoteFetch;
}

HybridPolicy& ClientConnection::OtherPolicy(uint8_t bucket) {
  if (first_bucket_ == kNoBucket) {
    first_bucket_ = bucket;
    return first_policy_;
  }
  uint8_t& i = policy_index_[bucket];
  if (i == 0xff) {
    policies_.emplace_back(
        HybridPolicy::Params{options_.mode, options_.fetch.switch_after,
                             options_.fetch.switch_back_ratio});
    i = static_cast<uint8_t>(policies_.size() - 1);
  }
  return policies_[i];
}

void ClientConnection::SetModeBit(uint8_t bucket, bool server_reply) {
  if (server_reply) {
    mode_bits_ |= wire::ModeBit(bucket);
  } else {
    mode_bits_ &= ~wire::ModeBit(bucket);
  }
  WriteModeWord();
}

absl::Duration ClientConnection::fetch_rtt() const {
  MutexLock lock(&mu_);
  return absl::Nanoseconds(timing_.rtt_ns());
}

absl::Duration ClientConnection::fetch_delay() const {
  MutexLock lock(&mu_);
  return absl::Nanoseconds(timing_.delay_ns());
}

void ClientConnection::SetHotLinesSink(std::atomic<const void*>* sink) {
  MutexLock lock(&mu_);
  hot_sink_ = sink;
  PublishHotLinesLocked();
}

void ClientConnection::PublishHotLines() {
  MutexLock lock(&mu_);
  if (hot_sink_ != nullptr) PublishHotLinesLocked();
}

void ClientConnection::PublishHotLinesLocked() {
  const void* lines[kHotLines];
  int n = 0;
  auto add = [&](const void* p) {
    if (n < kHotLines) lines[n++] = p;
  };
  // This object's per-call fields (a few lines from mu_ on).
  for (const char* p = reinterpret_cast<const char*>(&mu_);
       p <= reinterpret_cast<const char*>(batcher_.hot_end()); p += 64) {
    add(p);
  }
  // The slot the next call takes, and its buffers.
  const uint32_t s = free_slots_.empty() ? 0 : free_slots_.back();
  add(&slots_[s]);
  add(reinterpret_cast<const char*>(&slots_[s]) + 64);
  if (!free_slots_.empty()) add(&free_slots_.back());
  add(staging(s));
  add(fetch_buf(s));
  // The per-call counts (two lines).
  add(&counts_);
  add(reinterpret_cast<const char*>(&counts_) + 64);
  const transport::RemoteRegion request =
      server_region_.Slice(layout_.RequestSlotOffset(s), 64);
  n += conn_->HotLines(absl::MakeConstSpan(&request, 1), lines + n,
                       kHotLines - n);
  if (inline_completions_) {
    add(&inline_comps_);
    add(inline_comps_.data());
  } else {
    n += cq_->HotLines(lines + n, kHotLines - n);
  }
  // Unused entries repeat the first: the channel prefetches no null.
  for (int i = 0; i < kHotLines; ++i) {
    hot_sink_[i].store(lines[i < n ? i : 0], std::memory_order_relaxed);
  }
}

int ClientConnection::busy_slots() const {
  MutexLock lock(&mu_);
  return busy_slots_;
}

bool ClientConnection::Post(WorkRequest wr) {
  return PostList(absl::MakeSpan(&wr, 1));
}

bool ClientConnection::PostList(absl::Span<WorkRequest> wrs) {
  // Small WRITEs go inline: the NIC copies them at post time, one DMA read
  // fewer per WQE (and their sources may be reused at once).
  for (WorkRequest& wr : wrs) {
    if (wr.opcode == transport::Opcode::kWrite && wr.length <= inline_max_) {
      wr.inline_write = true;
    }
  }
  absl::Status s;
  if (post_lists_ || wrs.size() == 1) {
    s = conn_->Post(wrs);
  } else {
    for (size_t i = 0; i < wrs.size() && s.ok(); ++i) {
      s = conn_->Post(wrs.subspan(i, 1));
    }
  }
  if (!s.ok()) {
    if (status_.ok()) status_ = s;
    failed_.store(true, std::memory_order_release);
    return false;
  }
  for (const WorkRequest& wr : wrs) {
    sq_.Posted(wr.wr_id, wr.signaled);
    if (wr.opcode == transport::Opcode::kRead) {
      counts_.rdma_reads.Add(1);
    } else {
      counts_.rdma_writes.Add(1);
    }
  }
  return true;
}

void ClientConnection::SignalAccounting(WorkRequest* wrs, int n) {
  unsignaled_ += static_cast<uint32_t>(n);
  if (unsignaled_ >= signal_every_) {
    wrs[n - 1].signaled = true;
    unsignaled_ = 0;
  }
}

void ClientConnection::BellWrites(uint32_t s, bool all, bool notify,
                                  WorkRequest* wrs) {
  uint32_t mask = wire::SlotBit(s);
  for (uint32_t i = 0; i < used_slots_; ++i) {
    const Slot& o = slots_[i];
    const bool outstanding = o.phase != Phase::kFree &&
                             o.phase != Phase::kFilling &&
                             o.phase != Phase::kDraining;
    if (outstanding && (all || o.rung)) mask |= wire::SlotBit(i);
  }
  const uint64_t word = wire::BellWord(++ring_count_, mask);
  // The WRITE's source. A later ring may overwrite it before a NIC reads
  // it: the worker then sees the newer word, which names a superset of what
  // is unanswered.
  std::memcpy(local_->data() + bell_src_offset_, &word, sizeof(word));
  wrs[0] = WorkRequest::Write(WrId(0, kBellWrite), local_.get(),
                              bell_src_offset_, sizeof(word), bell_word_region_,
                              0);
  wrs[0].signaled = false;
  wrs[1] = WorkRequest::Write(WrId(0, kBellWrite), local_.get(),
                              bell_src_offset_ + 8, 1, bell_summary_region_, 0);
  wrs[1].signaled = false;
  wrs[1].notify = notify;
  counts_.rings.Add(1);
  if (notify) counts_.notifies.Add(1);
}

bool ClientConnection::PostRequest(uint32_t s, int64_t now, WorkRequest* wrs,
                                   int n) {
  Slot& slot = slots_[s];
  // A hot slot's worker polls it until hot_until_ns (posted within half its
  // window of the previous request): no doorbell. Otherwise ring, with a
  // notify if the worker may have parked since our last request.
  const bool hot = slot.hot_until_ns != 0 && now < slot.hot_until_ns;
  if (hot) {
    counts_.hot_posts.Add(1);
  } else {
    const bool notify = NotifyDue(now);
    BellWrites(s, /*all=*/false, notify, wrs + n);
    n += 2;
    slot.notified = notify;
  }
  if (hot) slot.notified = false;
  slot.rung = !hot;
  slot.hot_unconfirmed = hot;
  slot.ring_backoff_ns = rering_after_ns_;
  slot.next_ring_ns = now + rering_after_ns_;
  next_rering_ns_ = std::min(next_rering_ns_, slot.next_ring_ns);
  NotePost(now);
  SignalAccounting(wrs, n);
  return PostList(absl::MakeSpan(wrs, static_cast<size_t>(n)));
}

bool ClientConnection::NotifyDue(int64_t now) const {
  // The worker may have parked only if this process posted nothing to it
  // for half its park_after: a request it saw keeps it awake for park_after
  // after serving it (docs/rpc.md "Parking").
  return notify_gap_ns_ > 0 &&
         now - worker_last_post_->load(std::memory_order_relaxed) >
             notify_gap_ns_;
}

void ClientConnection::NotePost(int64_t now) {
  // Shared by the process's connections to the worker: stored only when it
  // moved by an eighth of the gap, so threads posting to one worker do not
  // pass the line around on every call. It lags the last post by at most
  // that: a notify a little early, never one missing.
  if (notify_gap_ns_ == 0) return;  // The worker never parks.
  std::atomic<int64_t>& last = *worker_last_post_;
  if (now - last.load(std::memory_order_relaxed) >= notify_gap_ns_ / 8) {
    last.store(now, std::memory_order_relaxed);
  }
}

void ClientConnection::ReRingLocked(int64_t now) {
  int64_t next = INT64_MAX;
  bool due = false;
  for (uint32_t i = 0; i < used_slots_; ++i) {
    Slot& o = slots_[i];
    if (o.phase == Phase::kFree || o.phase == Phase::kFilling ||
        o.phase == Phase::kDraining) {
      continue;
    }
    if (now >= o.next_ring_ns) {
      due = true;
      o.ring_backoff_ns =
          std::min(2 * o.ring_backoff_ns, std::max(kMaxReRingNs, rering_after_ns_));
      o.next_ring_ns = now + o.ring_backoff_ns;
    }
    next = std::min(next, o.next_ring_ns);
  }
  next_rering_ns_ = next;
  if (!due) return;
  WorkRequest wrs[2];
  BellWrites(0, /*all=*/true, /*notify=*/true, wrs);
  SignalAccounting(wrs, 2);
  counters_->rerings.fetch_add(1, std::memory_order_relaxed);
  PostList(absl::MakeSpan(wrs, 2));
}

absl::Status ClientConnection::Start(
    PendingCall* call, const google::protobuf::MessageLite& request) {
  if (!batching()) {
    const size_t size = request.ByteSizeLong();
    MutexLock lock(&mu_);
    return StartLocked(call, nullptr, &request, size);
  }
  const size_t size = request.ByteSizeLong();
  if (!mu_.TryLock()) {
    // Someone holds the connection: announce this call while waiting for
    // it, so that holder sees a call on its way into the open batch
    // (FlushIfIdleLocked). Uncontended, no announcement is needed: nobody
    // can look at the open batch before this call is in it.
    adding_.fetch_add(1, std::memory_order_relaxed);
    mu_.Lock();
    adding_.fetch_sub(1, std::memory_order_relaxed);
  }
  absl::Status st = StartLocked(call, nullptr, &request, size);
  mu_.Unlock();
  return st;
}

absl::Status ClientConnection::Enqueue(PendingCall* call) {
  MutexLock lock(&mu_);
  if (!status_.ok()) return status_;
  counters_->calls_queued.fetch_add(1, std::memory_order_relaxed);
  queued_.push_back(call);
  TrackContext(call);
  UpdateNeedsDriver();
  return absl::OkStatus();
}

// Inline (its one caller is StartLocked): for a call that joins an open
// batch it is a load and a branch, less than its call.
inline bool ClientConnection::SendAloneLocked(const PendingCall* call,
                                              size_t size) {
  if (!batcher_.MayGoAlone(open_ >= 0,
                           [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
                             return outstanding_ < max_outstanding_ &&
                                    wire::EntryBytes(size) <=
                                        layout_.RequestPayloadCapacity();
                           })) {
    return false;  // AddToBatchLocked takes it (or reports why not).
  }
  if (!call->sync) {
    return batcher_.AsyncGoesAlone(adding_.load(std::memory_order_relaxed));
  }
  int64_t now = 0;
  return IdleLocked(/*entries=*/1, /*sync=*/true, /*first_ns=*/0, &now);
}

absl::Status ClientConnection::StartLocked(
    PendingCall* call, const char* serialized,
    const google::protobuf::MessageLite* request, size_t size) {
  if (!status_.ok()) return status_;
  if (!SendQueueAdmits()) {
    // The caller polls (which retires entries) and tries again; an async
    // call is queued.
    counters_->send_queue_waits.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError("send queue full: waiting for completions");
  }
  if (batching() && !SendAloneLocked(call, size)) {
    return AddToBatchLocked(call, serialized, request, size);
  }
  return StartPlainLocked(call, serialized, request, size,
                          /*alone=*/batching());
}

absl::Status ClientConnection::StartPlainLocked(
    PendingCall* call, const char* serialized,
    const google::protobuf::MessageLite* request, size_t size, bool alone) {
  if (size > layout_.RequestPayloadCapacity()) {
    return absl::InvalidArgumentError(
        absl::StrCat("request of ", size, " bytes exceeds the connection's ",
                     layout_.RequestPayloadCapacity(),
                     "-byte request slots (ChannelOptions::max_request_bytes)"));
  }
  if (free_slots_.empty()) {
    return absl::ResourceExhaustedError("all slots of the connection are busy");
  }
  const uint32_t s = free_slots_.back();
  free_slots_.pop_back();
  used_slots_ = std::max(used_slots_, s + 1);
  Slot& slot = slots_[s];
  char* buf = staging(s);
  if (serialized != nullptr) {
    std::memcpy(buf + wire::kHeaderBytes, serialized, size);
  } else {
    request->SerializeWithCachedSizesToArray(
        reinterpret_cast<uint8_t*>(buf + wire::kHeaderBytes));
  }
  slot.seq = wire::NextSeq(slot.seq);
  const int64_t now = NowNs();
  slot.bucket = static_cast<uint8_t>(wire::ModeBucket(call->method_id));
  // A call of a method whose last call was long (its waiting thread, the
  // caller or the progress thread, will sleep) in server-reply: the push
  // wakes that thread (SleepForPush).
  call->notify = !options_.busy_wait && ServerReply(slot.bucket) &&
                 ((long_buckets_ >> slot.bucket) & 1) != 0;
  slot.push_notify = call->notify;
  // The caller's remaining budget travels with the request (aux).
  const uint16_t budget = wire::EncodeBudget(call->deadline_ns, now);
  const size_t framed = wire::FinishRequest(
      buf, static_cast<uint32_t>(size), slot.seq, call->method_id, budget,
      static_cast<uint16_t>(
          (budget == wire::kNoBudget ? 0 : wire::kRequestFlagDeadline) |
          (call->notify ? wire::kRequestFlagNotify : 0)));

  WorkRequest wrs[3];
  wrs[0] = WorkRequest::Write(
      WrId(s, kRequestWrite), local_.get(),
      staging_offset_ + size_t{s} * layout_.request_slot_bytes,
      static_cast<uint32_t>(framed), server_region_,
      layout_.RequestSlotOffset(s));
  wrs[0].signaled = false;
  slot.batch = false;
  slot.call = call;
  slot.earliest_deadline_ns = call->deadline_ns;
  slot.fetches = 0;
  slot.reads = 0;
  slot.counted_slow = false;
  slot.read_outstanding = false;
  slot.posted_ns = now;
  slot.last_probe_ns = now;
  slot.fetched_bytes = 0;
  slot.part_offset = 0;
  slot.suspect_offset = Slot::kNoOffset;
  ++busy_slots_;
  ++outstanding_;
  if (!call->sync) ++async_slots_;
  if (alone) {
    // A batch of one sent as the plain request it is (SendAloneLocked): in
    // flight for the idle flush, as the batch it stands for.
    call->alone = true;
    slot.in_flight_counted = true;
    // Its turnaround matters to the batches that wait behind it: an async
    // call's (Nagle's rule, MayGoAlone), and a sync call's only with
    // sync_combine. The clock is not read for it otherwise.
    slot.timed = !call->sync || batcher_.sync_combine();
    batcher_.Sent();
    NoteOutstandingLocked();
    counts_.batches_plain.Add(1);
    counts_.flushes_idle.Add(1);
  }
  if (ServerReply(slot.bucket)) {
    slot.phase = Phase::kWaitReply;
  } else {
    slot.phase = Phase::kFetchHeader;
    slot.next_fetch_ns = timing_.FirstFetchAt(now);
  }
  TrackContext(call);
  UpdateNeedsDriver();
  if (!PostRequest(s, now, wrs, 1)) {
    absl::Status st = status_;
    // The call never left: undo and report.
    UntrackContext(call);
    slot.call = nullptr;
    if (!call->sync) --async_slots_;
    FreeSlot(s);
    UpdateNeedsDriver();
    return st;
  }
  return absl::OkStatus();
}

uint32_t ClientConnection::ResultRoomMiss(uint32_t method_id) {
  const uint32_t b = wire::ModeBucket(method_id);
  const size_t bound = ((result_seen_ >> b) & 1) != 0 ? result_bound_[b]
                       : options_.batching.result_bytes > 0
                           ? std::min<size_t>(options_.batching.result_bytes,
                                              layout_.ResponsePayloadCapacity())
                           : layout_.ResponsePayloadCapacity();
  // An error's message may take up to kBatchErrorBytes whatever the bound.
  room_method_ = method_id;
  room_ = static_cast<uint32_t>(
      wire::kHeaderBytes + wire::kTailBytes +
      wire::EntryBytes(std::max(bound, wire::kBatchErrorBytes)));
  return room_;
}

void ClientConnection::NoteResultMiss(uint32_t method_id, size_t bound) {
  const uint32_t b = wire::ModeBucket(method_id);
  const uint64_t bit = uint64_t{1} << b;
  if ((result_seen_ & bit) == 0 || bound > result_bound_[b]) {
    result_bound_[b] = static_cast<uint32_t>(
        std::min(bound, layout_.ResponsePayloadCapacity()));
    result_seen_ |= bit;
    room_method_ = UINT32_MAX;  // Its room may have changed.
  }
  noted_method_ = method_id;
  noted_bound_ = result_bound_[b];
}

// A RESOURCE_EXHAUSTED result of a batched call: the server's
// wire::ResultTooLargeMessage names the size of a result its batch had no
// room left for, and the bucket's bound becomes that size, unless no slot
// could hold it (such a result fails alone too). Any other message (a
// handler's own) counts as an error's message.
void ClientConnection::NoteOverflow(uint32_t method_id,
                                    absl::string_view message) {
  const uint64_t bytes = wire::ResultTooLargeBytes(message);
  if (bytes == 0) {
    NoteResult(method_id, message.size());
    return;
  }
  if (bytes > layout_.ResponsePayloadCapacity()) return;
  NoteResult(method_id, static_cast<size_t>(bytes));
}

absl::Status ClientConnection::AddToBatchLocked(
    PendingCall* call, const char* serialized,
    const google::protobuf::MessageLite* request, size_t size) {
  const size_t entry = wire::EntryBytes(size);
  // Each entry also takes a budget code after the entries (PublishLocked).
  if (entry + wire::BudgetCodesBytes(1) > layout_.RequestPayloadCapacity()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "request of ", size, " bytes (", entry,
        " as a batch entry) exceeds the connection's ",
        layout_.RequestPayloadCapacity(),
        "-byte request slots (ChannelOptions::max_request_bytes)"));
  }
  if (outstanding_ >= max_outstanding_) {
    return absl::ResourceExhaustedError(
        "max_outstanding requests already in flight on the connection");
  }
  const size_t capacity = layout_.RequestPayloadCapacity();
  // The batch's results share one response slot: each entry keeps room
  // there for a result as large as its method's largest yet (ResultRoom).
  const uint32_t room = ResultRoom(call->method_id);
  const uint32_t result_capacity =
      layout_.response_slot_bytes - kResultRoomSlack;
  if (open_ >= 0) {
    const Slot& o = slots_[open_];
    const bool no_result_room = o.result_room + room > result_capacity;
    if (batcher_.BeforeAdd(static_cast<int>(o.calls.size()), o.bytes, entry,
                           capacity) == FlushReason::kBytes ||
        no_result_room) {
      // kBytes publishes even while a previous publish is in flight
      // (RequestBatcher::PublishesNow): no batch is open after it, so the
      // call always finds room in the batch it is added to.
      FlushLocked(FlushReason::kBytes);
      // Flushing may have failed the connection: then the call is not taken.
      if (!status_.ok()) return status_;
    }
  }
  if (open_ < 0) {
    if (free_slots_.empty()) {
      return absl::ResourceExhaustedError("all slots of the connection are busy");
    }
    open_ = static_cast<int>(free_slots_.back());
    free_slots_.pop_back();
    used_slots_ = std::max(used_slots_, static_cast<uint32_t>(open_) + 1);
    Slot& slot = slots_[open_];
    slot.phase = Phase::kFilling;
    slot.batch = true;
    slot.call = nullptr;
    slot.calls.clear();
    slot.bytes = 0;
    slot.result_room = 0;
    slot.transmitted = 0;
    slot.untransmitted_entries = 0;
    slot.first_ns = NowNs();  // The only clock read of adding a call.
    slot.results_done = 0;
    slot.live_calls = 0;
    slot.publish_pending = false;
    slot.has_sync = false;
    slot.earliest_deadline_ns = INT64_MAX;
    ++busy_slots_;
  }
  const uint32_t s = static_cast<uint32_t>(open_);
  Slot& slot = slots_[s];
  char* p = staging(s) + wire::kHeaderBytes + slot.bytes;
  if (serialized != nullptr) {
    std::memcpy(p + wire::kEntryHeaderBytes, serialized, size);
  } else {
    request->SerializeWithCachedSizesToArray(
        reinterpret_cast<uint8_t*>(p + wire::kEntryHeaderBytes));
  }
  wire::PutBatchEntry(p, static_cast<uint32_t>(size), call->method_id);
  slot.bytes += static_cast<uint32_t>(entry);
  slot.result_room += room;
  slot.calls.push_back(call);
  slot.earliest_deadline_ns =
      std::min(slot.earliest_deadline_ns, call->deadline_ns);
  TrackContext(call);
  ++slot.live_calls;
  ++slot.untransmitted_entries;
  ++outstanding_;
  NoteOutstandingLocked();
  if (call->sync) slot.has_sync = true;
  if (!call->sync) ++async_slots_;
  const RequestBatcher::Added added = batcher_.AfterAdd(
      static_cast<int>(slot.calls.size()),
      static_cast<int>(slot.untransmitted_entries), call->sync,
      /*held=*/slot.publish_pending);
  if (added.send_group) TransmitGroupLocked(s);
  if (added.flush == FlushReason::kEntries) {
    FlushLocked(FlushReason::kEntries);
  } else if (slot.result_room + room > result_capacity) {
    // No room left for another result like this one's: the batch cannot
    // grow, so it goes now rather than waiting for company.
    FlushLocked(FlushReason::kBytes);
  } else if (added.check_idle) {
    // A batch opened by this call read the clock just now.
    FlushIfIdleLocked(slot.calls.size() == 1 ? slot.first_ns : 0);
  }
  // Adding a call abandons no slot: the count of the last scan still holds.
  StoreNeedsDriver();
  // The call belongs to the batch now, whatever the flush did: if the
  // connection failed, Progress fails the call (exactly once) from the slot.
  // Returning an error here would make the caller finish it a second time.
  return absl::OkStatus();
}

void ClientConnection::TransmitGroupLocked(uint32_t s) {
  Slot& slot = slots_[s];
  if (slot.bytes == slot.transmitted) return;
  WorkRequest wr = WorkRequest::Write(
      WrId(s, kRequestWrite), local_.get(),
      staging_offset_ + size_t{s} * layout_.request_slot_bytes +
          wire::kHeaderBytes + slot.transmitted,
      slot.bytes - slot.transmitted, server_region_,
      layout_.RequestSlotOffset(s) + wire::kHeaderBytes + slot.transmitted);
  wr.signaled = false;
  SignalAccounting(&wr, 1);
  if (Post(wr)) {
    slot.transmitted = slot.bytes;
    slot.untransmitted_entries = 0;
    counters_->groups_sent_ahead.fetch_add(1, std::memory_order_relaxed);
  }
}

void ClientConnection::NoteOutstandingLocked() {
  if (outstanding_ <= outstanding_peak_) return;
  outstanding_peak_ = outstanding_;
  int peak = counters_->outstanding_peak.load(std::memory_order_relaxed);
  while (peak < outstanding_peak_ &&
         !counters_->outstanding_peak.compare_exchange_weak(
             peak, outstanding_peak_, std::memory_order_relaxed)) {
  }
}

bool ClientConnection::IdleLocked(int entries, bool sync, int64_t first_ns,
                                  int64_t* now) {
  return batcher_.Idle(entries, sync, adding_.load(std::memory_order_relaxed),
                       first_ns, now, NowNs,
                       [this](int64_t t) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                         return OldestInFlightLocked(t);
                       });
}

int64_t ClientConnection::OldestInFlightLocked(int64_t now) const {
  int64_t oldest = now;
  for (uint32_t s = 0; s < used_slots_; ++s) {
    const Slot& b = slots_[s];
    if (b.in_flight_counted) oldest = std::min(oldest, b.posted_ns);
  }
  return oldest;
}

void ClientConnection::FlushIfIdleLocked(int64_t now) {
  if (open_ < 0) return;
  const Slot& o = slots_[open_];
  if (o.publish_pending) return;  // Goes when the previous publish is done.
  if (IdleLocked(static_cast<int>(o.calls.size()), o.has_sync, o.first_ns,
                 &now)) {
    FlushLocked(FlushReason::kIdle, now);
  }
}

void ClientConnection::FlushLocked(FlushReason reason, int64_t now) {
  if (open_ < 0) return;
  const uint32_t s = static_cast<uint32_t>(open_);
  Slot& slot = slots_[s];
  switch (reason) {
    case FlushReason::kEntries:
      counters_->flushes_full.fetch_add(1, std::memory_order_relaxed);
      break;
    case FlushReason::kBytes:
      counters_->flushes_bytes.fetch_add(1, std::memory_order_relaxed);
      break;
    case FlushReason::kTimeout:
      counters_->flushes_timeout.fetch_add(1, std::memory_order_relaxed);
      break;
    case FlushReason::kIdle:
      counts_.flushes_idle.Add(1);
      break;
    case FlushReason::kNone:
      break;
  }
  if (!batcher_.PublishesNow(reason)) {
    // Elastic threshold: the previous publish is still in flight; keep
    // transmitting entries and publish when it completes.
    if (!slot.publish_pending) {
      slot.publish_pending = true;
      counters_->publishes_delayed.fetch_add(1, std::memory_order_relaxed);
    }
    TransmitGroupLocked(s);
    return;
  }
  PublishLocked(s, now);
}

void ClientConnection::PublishLocked(uint32_t s, int64_t now) {
  Slot& slot = slots_[s];
  open_ = -1;
  slot.publish_pending = false;
  slot.in_flight_counted = true;
  slot.timed = true;
  char* buf = staging(s);
  slot.seq = wire::NextSeq(slot.seq);
  if (now == 0) now = NowNs();
  // A batch of one has nothing to share its framing with: it goes as the
  // plain request it would have been unbatched (its payload moved over the
  // entry header, its budget in aux), and the server answers it with a
  // plain response. Not in adaptive mode, whose entries may already be in
  // the server's slot and whose slots carry batches only (see
  // SendAloneLocked).
  const int entries = static_cast<int>(slot.calls.size());
  const bool plain =
      batcher_.SendsPlain(entries, entries == 1 && slot.calls[0] != nullptr);
  size_t framed;
  if (plain) {
    PendingCall* call = slot.calls[0];
    uint32_t size;  // The entry's size field (batch_format.h).
    std::memcpy(&size, buf + wire::kHeaderBytes, sizeof(size));
    std::memmove(buf + wire::kHeaderBytes,
                 buf + wire::kHeaderBytes + wire::kEntryHeaderBytes, size);
    const uint16_t budget = wire::EncodeBudget(call->deadline_ns, now);
    framed = wire::FinishRequest(
        buf, size, slot.seq, call->method_id, budget,
        budget == wire::kNoBudget ? 0 : wire::kRequestFlagDeadline);
    slot.batch = false;
    slot.call = call;
    slot.calls.clear();
    slot.live_calls = 0;
    counts_.batches_plain.Add(1);
  } else {
    // The callers' remaining budgets, one code per entry, after the
    // entries; method_id says where they start (rpc/batch_format.h). A call
    // already finished (expired, cancelled) gets 0: the server does not
    // run it.
    char* codes = buf + wire::kHeaderBytes + slot.bytes;
    for (size_t i = 0; i < slot.calls.size(); ++i) {
      const uint16_t code =
          slot.calls[i] == nullptr
              ? 0
              : wire::EncodeBudget(slot.calls[i]->deadline_ns, now);
      std::memcpy(codes + 2 * i, &code, sizeof(code));
    }
    const size_t codes_bytes = wire::BudgetCodesBytes(slot.calls.size());
    if (codes_bytes > 2 * slot.calls.size()) {
      std::memset(codes + 2 * slot.calls.size(), 0,
                  codes_bytes - 2 * slot.calls.size());
    }
    framed = wire::FinishRequest(
        buf, static_cast<uint32_t>(slot.bytes + codes_bytes), slot.seq,
        /*method_id=*/slot.bytes,
        batcher_.PartEntries(static_cast<int>(slot.calls.size())),
        wire::kRequestFlagBatch | wire::kRequestFlagDeadline);
  }
  const uint64_t base = staging_offset_ + size_t{s} * layout_.request_slot_bytes;
  const uint64_t rbase = layout_.RequestSlotOffset(s);
  bool ok;
  // The phase first: the doorbell names the slot only if it is outstanding.
  // The mode bucket is the one the server reads for this request
  // (wire::RequestModeBucket): a batch's, or the method's for a batch of
  // one sent plain. With the batch's bucket on a plain request, hybrid mode
  // waited for pushes the server never made (its method's bit was clear),
  // each found by a probe 1 ms later.
  slot.bucket = static_cast<uint8_t>(
      plain ? wire::ModeBucket(slot.call->method_id) : wire::kBatchModeBucket);
  slot.push_notify = false;
  slot.phase = WaitPhase(slot.bucket);
  if (batch_mode_ == BatchMode::kAdaptive) {
    // Entries already sent ahead; now the rest and the tail, then the
    // header, then the doorbell. WRITEs apply in order, but within one
    // WRITE only the last 8 bytes are ordered (transport.h): the header goes
    // as two, bytes [8, 16) (aux, flags, method_id = the entries' length)
    // before the head word [0, 8), so a server that sees the new head word
    // sees this batch's header behind it, never the previous batch's.
    const uint32_t from = wire::kHeaderBytes + slot.transmitted;
    constexpr uint32_t kHead = 8;
    static_assert(wire::kHeaderBytes == 2 * kHead, "header = head word + 8");
    WorkRequest wrs[5];
    wrs[0] = WorkRequest::Write(WrId(s, kRequestWrite), local_.get(), base + from,
                                static_cast<uint32_t>(framed - from),
                                server_region_, rbase + from);
    wrs[0].signaled = false;
    wrs[1] = WorkRequest::Write(WrId(s, kRequestWrite), local_.get(),
                                base + kHead, wire::kHeaderBytes - kHead,
                                server_region_, rbase + kHead);
    wrs[1].signaled = false;
    wrs[2] = WorkRequest::Write(WrId(s, kPublishWrite), local_.get(), base,
                                kHead, server_region_, rbase);
    wrs[2].signaled = true;
    batcher_.Sent();  // In flight until FreeSlot.
    ok = PostRequest(s, now, wrs, 3);
    if (ok) batcher_.PublishPosted(now);  // Until its completion.
  } else {
    WorkRequest wrs[3];
    wrs[0] = WorkRequest::Write(WrId(s, kRequestWrite), local_.get(), base,
                                static_cast<uint32_t>(framed), server_region_,
                                rbase);
    wrs[0].signaled = false;
    batcher_.Sent();  // In flight until FreeSlot.
    ok = PostRequest(s, now, wrs, 1);
  }
  if (!plain) {  // Plain ones are counted in batches_plain only.
    counters_->batches.fetch_add(1, std::memory_order_relaxed);
    counters_->batched_calls.fetch_add(slot.calls.size(),
                                       std::memory_order_relaxed);
  }
  slot.fetches = 0;
  slot.reads = 0;
  slot.counted_slow = false;
  slot.read_outstanding = false;
  slot.posted_ns = now;
  slot.last_probe_ns = now;
  slot.fetched_bytes = 0;
  slot.part_offset = 0;
  slot.suspect_offset = Slot::kNoOffset;
  slot.results_done = 0;
  if (slot.phase == Phase::kFetchHeader) {
    slot.next_fetch_ns = timing_.FirstFetchAt(now);
  }
  (void)ok;  // A failed post failed the connection; Progress fails the calls.
}

WorkRequest ClientConnection::HeaderRead(uint32_t s, int64_t now) {
  Slot& slot = slots_[s];
  const uint32_t room = layout_.response_slot_bytes - slot.part_offset;
  // A batch's result part is READ whole at once when the last one's size
  // is known (see batch_fetch_bytes_); a single call's takes F.
  const uint32_t want =
      slot.batch ? std::max(fetch_size_, batch_fetch_bytes_) : fetch_size_;
  const uint32_t len = std::min<uint32_t>(want, room);
  WorkRequest wr = WorkRequest::Read(
      WrId(s, kHeaderRead), local_.get(),
      fetch_offset_ + size_t{s} * layout_.response_slot_bytes + slot.part_offset,
      len, server_region_, layout_.ResponseSlotOffset(s) + slot.part_offset);
  slot.read_posted_ns = now;
  slot.fetched_bytes = len;
  slot.read_offset = slot.part_offset;
  // Counted as posted now: if the post fails, the connection fails and
  // every call on it with it.
  slot.read_outstanding = true;
  ++slot.reads;
  counts_.fetches.Add(1);
  return wr;
}

void ClientConnection::PostHeaderRead(uint32_t s, int64_t now) {
  Post(HeaderRead(s, now));
}

void ClientConnection::PostHeaderReads(const uint32_t* slots, int n,
                                       int64_t now) {
  if (n == 1) {  // The common case (a sync caller): no list to build.
    PostHeaderRead(slots[0], now);
    return;
  }
  // Only the first n are built: a WorkRequest[kReadList] would run every
  // element's default member initializers first (~40 instructions a list
  // under callgrind, most of them for elements never posted).
  static_assert(std::is_trivially_destructible_v<WorkRequest>);
  union List {
    List() {}
    WorkRequest wrs[kReadList];
  } list;
  for (int i = 0; i < n; ++i) {
    new (&list.wrs[i]) WorkRequest(HeaderRead(slots[i], now));
  }
  PostList(absl::MakeSpan(list.wrs, static_cast<size_t>(n)));
}

void ClientConnection::WriteModeWord() {
  const uint64_t word = mode_bits_;
  char* src = local_->data() + mode_word_offset_;
  std::memcpy(src, &word, sizeof(word));
  WorkRequest wr = WorkRequest::Write(WrId(0, kModeWrite), local_.get(),
                                      mode_word_offset_, sizeof(word),
                                      server_region_, 0);
  wr.signaled = true;
  Post(wr);
  // Order the flag's WRITE before the READs that follow (the server's side
  // of this Dekker pair is in ServerWorker::Serve).
  transport::FullFence();
}

void ClientConnection::FreeSlot(uint32_t s) {
  Slot& slot = slots_[s];
  if (slot.phase == Phase::kDraining) return;
  // A batch's calls leave outstanding_ one by one as their results arrive
  // (CompletePart); the rest (a failed or never-sent batch) leave here.
  outstanding_ -= slot.batch ? static_cast<int>(slot.calls.size() -
                                                slot.results_done)
                             : 1;
  if (slot.in_flight_counted) {
    slot.in_flight_counted = false;
    slot.timed = false;
    batcher_.Retired();
  }
  slot.call = nullptr;
  slot.calls.clear();
  slot.live_calls = 0;
  slot.publish_pending = false;
  if (open_ == static_cast<int>(s)) open_ = -1;
  if (slot.read_outstanding && status_.ok()) {
    // A READ (e.g. a probe) still lands in this slot's fetch buffer: the
    // slot waits for its completion before anyone reuses the buffer.
    slot.phase = Phase::kDraining;
    return;
  }
  slot.phase = Phase::kFree;
  slot.read_outstanding = false;
  --busy_slots_;
  free_slots_.push_back(s);
}

void ClientConnection::UpdateNeedsDriver() {
  int abandoned = 0;
  if (busy_slots_ == 0) {
    may_abandon_ = false;  // Nothing in flight: nothing abandoned.
  } else if (may_abandon_) {
    for (uint32_t s = 0; s < used_slots_; ++s) {
      const Slot& slot = slots_[s];
      if (slot.phase != Phase::kFree && slot.phase != Phase::kFilling &&
          Abandoned(slot)) {
        ++abandoned;
      }
    }
  }
  abandoned_slots_ = abandoned;
  StoreNeedsDriver();
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ClientConnection::FinishCallInline(
    PendingCall* call, absl::Status&& status,
    std::vector<PendingCall*>* finished) {
  if (!status.ok()) {
    counters_->calls_failed.fetch_add(1, std::memory_order_relaxed);
  } else if (call->sync && batcher_.Times(/*ok=*/true, call->alone)) {
    // A sync caller returns as soon as it sees `finished`; an async call's
    // latency is taken when its callback starts (RecordLatencies).
    NoteSizerLocked(batcher_.RecordSync(call->start_ns, NowNs(),
                                        /*open_entries=*/0));
  }
  call->status = std::move(status);
  call->finish_ns = now_ns_;
  if (call->ctx != nullptr) {
    UntrackContext(call);
    ClientContextAccess::SetResult(*call->ctx, call->mode_used, call->fetches,
                                   call->reads,
                                   absl::Nanoseconds(call->server_time_ns));
  }
  if (call->sync) {
    call->finished.store(true, std::memory_order_release);
  } else {
    --async_slots_;
    finished->push_back(call);
  }
}

void ClientConnection::FinishCall(PendingCall* call, absl::Status status,
                                  std::vector<PendingCall*>* finished) {
  FinishCallInline(call, std::move(status), finished);
}

void ClientConnection::CountResults(uint64_t n, RpcMode via, int fetches,
                                    int64_t server_ns) {
  if (n == 0) return;
  counts_.calls.Add(n);
  counts_.server_time_ns.Add(n * static_cast<uint64_t>(server_ns));
  if (via == RpcMode::kRemoteFetch) {
    counts_.calls_remote_fetch.Add(n);
    const int b = std::min(std::max(fetches, 1), 16) - 1;
    counts_.fetch_histogram[b].Add(n);
    counts_.fetched_call_fetches.Add(
        n * static_cast<uint64_t>(std::max(fetches, 1)));
  } else {
    counts_.calls_server_reply.Add(n);
  }
}

void ClientConnection::NoteSizerLocked(const RequestBatcher::Recorded& r) {
  // The shared counters once per round, not once per call.
  if (r.adjustments > 0) {
    counters_->sizer_adjustments.fetch_add(r.adjustments,
                                           std::memory_order_relaxed);
  }
  counters_->batch_size.store(batcher_.SizeNow(), std::memory_order_relaxed);
  counters_->sizer_k.store(batcher_.sizer().last_k(),
                           std::memory_order_relaxed);
}

void ClientConnection::RecordLatencies(absl::Span<const int64_t> latencies_ns,
                                       int64_t now_ns) {
  if (batch_mode_ != BatchMode::kAuto || latencies_ns.empty()) return;
  MutexLock lock(&mu_);
  const int open_entries = open_ >= 0 && !slots_[open_].publish_pending
                               ? static_cast<int>(slots_[open_].calls.size())
                               : 0;
  const RequestBatcher::Recorded r =
      batcher_.Record(latencies_ns, now_ns, open_entries);
  NoteSizerLocked(r);
  if (r.open_batch_full) FlushLocked(FlushReason::kEntries);
}

namespace {

// A response that does not parse as `response` (out of line: FinishWithResult
// is inline in the result loop, and this never runs there).
ABSL_ATTRIBUTE_NOINLINE absl::Status UnparsedResponse(
    size_t bytes, const google::protobuf::MessageLite& response) {
  return absl::InternalError(absl::StrCat("response of ", bytes,
                                          " bytes does not parse as ",
                                          response.GetTypeName()));
}

}  // namespace

// Inline: it runs once per call, in CompletePart's loop over a part's
// results, where its own frame cost more than its stores.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ClientConnection::FinishWithResult(
    PendingCall* call, uint16_t status_code, absl::string_view payload,
    RpcMode via, const Slot& slot, int64_t server_ns,
    std::vector<PendingCall*>* finished) {
  call->mode_used = via;
  call->fetches = slot.fetches;
  call->reads = slot.reads;
  call->server_time_ns = server_ns;
  absl::Status st;
  if (status_code != 0) {
    st = absl::Status(static_cast<absl::StatusCode>(status_code), payload);
  } else if (!call->response->ParseFromArray(payload.data(),
                                             static_cast<int>(payload.size()))) {
    st = UnparsedResponse(payload.size(), *call->response);
  }
  FinishCallInline(call, std::move(st), finished);
}

void ClientConnection::Complete(uint32_t s, const char* payload,
                                const wire::ResponseView& view, RpcMode via,
                                std::vector<PendingCall*>* finished) {
  Slot& slot = slots_[s];
  // Answered: the slot's next request may skip the doorbell if the worker
  // keeps polling it (kResponseFlagHot), within half its window of this one.
  slot.hot_until_ns = (view.flags & wire::kResponseFlagHot) != 0 &&
                              hot_half_window_ns_ > 0
                          ? slot.posted_ns + hot_half_window_ns_
                          : 0;
  const int64_t server_ns = wire::DecodeServerTimeNs(view.server_time);
  // The 16-bit field saturates at 6.5 ms: a saturated time is "very slow".
  const int64_t policy_server_ns =
      view.server_time == 0xffff ? int64_t{1} << 50 : server_ns;
  if (!slot.batch) {
    const uint64_t bit = wire::ModeBit(slot.bucket);
    long_buckets_ = policy_server_ns >= kLongWaitNs ? (long_buckets_ | bit)
                                                    : (long_buckets_ & ~bit);
  }
  if (via == RpcMode::kRemoteFetch) {
    Policy(slot.bucket).OnFetchedCall(timing_.Slow(slot.fetches));
  } else if (const double reply_ns = static_cast<double>(
                 std::max<int64_t>(0, NowNs() - slot.posted_ns));
             (reply_ns_ =
                  reply_ns_ == 0 ? reply_ns : 0.8 * reply_ns_ + 0.2 * reply_ns),
             Policy(slot.bucket)
                 .OnServerReplyCall(absl::Nanoseconds(policy_server_ns),
                                    absl::Nanoseconds(reply_ns),
                                    absl::Nanoseconds(timing_.BudgetNs()))) {
    counters_->switches_to_remote_fetch.fetch_add(1, std::memory_order_relaxed);
    // Results showed up about one fetch before the replies did: start the
    // first-fetch delay there rather than where remote fetching left it.
    timing_.RestartFromReplies(reply_ns_);
    SetModeBit(slot.bucket, false);
    const int64_t now = NowNs();
    for (uint32_t i = 0; i < slots_.size(); ++i) {
      if (i != s && slots_[i].phase == Phase::kWaitReply &&
          slots_[i].bucket == slot.bucket) {
        slots_[i].phase = Phase::kFetchHeader;
        slots_[i].next_fetch_ns = now;
      }
    }
  }
  if (has_on_result_) {
    options_.on_result(static_cast<uint32_t>(wire::FramedBytes(view.size)),
                       absl::Nanoseconds(server_ns));
  }
  if (slot.timed && slot.part_offset == 0) {
    // The batcher's turnaround (publish to first result), tracked near its
    // lower envelope as the READ round trip is: how long a batch in flight
    // is worth waiting for (FlushPolicy::WhenIdle).
    batcher_.Turnaround(NowNs() - slot.posted_ns);
  }
  if (slot.batch) {
    CompletePart(s, payload, view, via, finished);
    return;
  }
  if (slot.call != nullptr) {
    CountResults(1, via, slot.fetches, server_ns);
    if (view.status_code == 0) {
      NoteResult(slot.call->method_id, view.size);
    }
    FinishWithResult(slot.call, view.status_code,
                     absl::string_view(payload, view.size), via, slot,
                     server_ns, finished);
  }
  FreeSlot(s);
}

void ClientConnection::CompletePart(uint32_t s, const char* payload,
                                    const wire::ResponseView& view, RpcMode via,
                                    std::vector<PendingCall*>* finished) {
  Slot& slot = slots_[s];
  const int64_t server_ns = wire::DecodeServerTimeNs(view.server_time);
  counters_->result_parts.fetch_add(1, std::memory_order_relaxed);
  if ((view.flags & wire::kResponseFlagBatch) == 0) {
    // A batch-level error (e.g. a malformed batch): every call gets it.
    const absl::string_view msg(payload, view.size);
    CountResults(slot.live_calls, via, slot.fetches, server_ns);
    for (PendingCall*& call : slot.calls) {
      if (call == nullptr) continue;
      FinishWithResult(call, view.status_code != 0 ? view.status_code
                                                   : static_cast<uint16_t>(absl::StatusCode::kInternal),
                       msg, via, slot, server_ns, finished);
      call = nullptr;
    }
    FreeSlot(s);
    return;
  }
  wire::ResultReader reader(absl::string_view(payload, view.size));
  uint16_t code;
  absl::string_view result;
  uint32_t n = 0;
  uint32_t delivered = 0;
  while (reader.Next(&code, &result)) {
    if (slot.results_done >= slot.calls.size()) break;
    PendingCall*& call = slot.calls[slot.results_done++];
    ++n;
    --outstanding_;  // Its result is here: no longer in flight.
    if (call != nullptr) {
      if (code == static_cast<uint16_t>(absl::StatusCode::kResourceExhausted)) {
        NoteOverflow(call->method_id, result);
      } else {
        // An error's message counts too (at most kBatchErrorBytes): a
        // method that only fails still batches once it has failed once.
        NoteResult(call->method_id, result.size());
      }
      FinishWithResult(call, code, result, via, slot, server_ns, finished);
      call = nullptr;
      --slot.live_calls;
      ++delivered;
    }
  }
  // Once per part rather than per call: these are shared atomics.
  CountResults(delivered, via, slot.fetches, server_ns);
  if (!reader.error().ok() || n != view.entries) {
    FailLocked(absl::InternalError(absl::StrCat(
                   "malformed result part on slot ", s, ": ",
                   reader.error().ok() ? absl::StrCat(n, " entries, header says ",
                                                      view.entries)
                                       : std::string(reader.error().message()))),
               finished);
    return;
  }
  if (slot.results_done >= slot.calls.size()) {
    FreeSlot(s);
    return;
  }
  // More parts follow, back to back: fetch the next one at once.
  slot.part_offset += static_cast<uint32_t>(wire::FramedBytes(view.size));
  if (slot.part_offset + wire::kHeaderBytes > layout_.response_slot_bytes) {
    FailLocked(absl::InternalError("result parts run past the response buffer"),
               finished);
    return;
  }
  slot.fetches = 0;
  slot.counted_slow = true;  // Only a batch's first part feeds the policy.
  slot.phase = WaitPhase(slot.bucket);
  slot.next_fetch_ns = 0;
  slot.last_probe_ns = NowNs();
}

bool ClientConnection::TakeReplyLocked(uint32_t s,
                                       std::vector<PendingCall*>* finished,
                                       bool* suspect) {
  Slot& slot = slots_[s];
  wire::ResponseView view;
  const char* buf = reply_slot(s) + slot.part_offset;
  const uint32_t room = layout_.response_slot_bytes - slot.part_offset;
  const wire::FetchState st = wire::InspectResponse(
      buf, room, wire::SlotPayloadCapacity(room), slot.seq,
      /*require_tail=*/true, &view);
  if (suspect != nullptr) *suspect = st == wire::FetchState::kCorrupt;
  if (st != wire::FetchState::kReady) return false;
  Complete(s, buf + wire::kHeaderBytes, view, RpcMode::kServerReply, finished);
  return true;
}

void ClientConnection::HandleHeader(uint32_t s, int64_t now,
                                    std::vector<PendingCall*>* finished) {
  Slot& slot = slots_[s];
  // A server-reply probe is polled a round (and maybe a yield) after it was
  // posted: not a round-trip sample.
  if (slot.phase != Phase::kWaitReply) {
    timing_.OnRoundTrip(static_cast<double>(now - slot.read_posted_ns));
  }
  char* buf = fetch_buf(s) + slot.part_offset;
  const size_t capacity =
      wire::SlotPayloadCapacity(layout_.response_slot_bytes - slot.part_offset);
  wire::ResponseView view;
  wire::FetchState st = wire::InspectResponse(
      buf, slot.fetched_bytes, capacity, slot.seq, /*require_tail=*/false, &view);
  // A READ that overlaps the server's store of the head word may pair the new
  // seq with old size bytes: the READ contract orders the first 8 bytes
  // before the rest, but Soft-RoCE copies them byte by byte. The tail, which
  // the server writes before the head, vouches for the size: a head whose
  // tail is not where it says is not a result yet (READ again). Results past
  // the fetched bytes are checked the same way after the rest READ.
  if (st == wire::FetchState::kReady &&
      (view.flags & wire::kResponseFlagPushed) == 0 &&
      wire::FramedBytes(view.size) <= slot.fetched_bytes &&
      transport::LoadAcquire64(buf + wire::TailOffset(view.size)) !=
          wire::TailWord(slot.seq, view.size)) {
    st = wire::FetchState::kNotReady;
  }
  if (st == wire::FetchState::kCorrupt) {
    const uint64_t head = transport::LoadAcquire64(buf);
    FailLocked(absl::InternalError(absl::StrCat(
                   "server sent a corrupt response header on slot ", s,
                   ": seq ", slot.seq, ", size ",
                   wire::HeadSizeStatus(head) & wire::kSizeMask,
                   " past the ", capacity, "-byte capacity left at part offset ",
                   slot.part_offset)),
               finished);
    return;
  }
  const bool probe = slot.phase == Phase::kWaitReply;
  const bool found = st == wire::FetchState::kReady;
  if (probe && found && TakeReplyLocked(s, finished)) {
    // The probe raced the server's push and the push has landed too (a
    // sleeping caller polls its completions long after the probe was
    // posted): the result came by server-reply.
    return;
  }
  FetchRead read;
  read.kind = probe ? FetchRead::Kind::kProbe
              : slot.phase == Phase::kSwitchCheck
                  ? FetchRead::Kind::kSwitchCheck
                  : FetchRead::Kind::kFetch;
  read.found = found;
  read.pushed = found && (view.flags & wire::kResponseFlagPushed) != 0;
  read.fits = found && wire::FramedBytes(view.size) <= slot.fetched_bytes;
  read.abandoned = Abandoned(slot);
  read.first_part = slot.part_offset == 0;
  read.notified = slot.notified;
  read.counted_slow = slot.counted_slow;
  read.fetches = slot.fetches;
  read.posted_ns = slot.posted_ns;
  const FetchStep step = timing_.AfterRead(
      read, /*learn_misses=*/mode_option_ != RpcMode::kServerReply, now);
  slot.fetches = step.fetches;
  if (found && !read.pushed && slot.batch) {
    // The next batch's parts are about this size: READ that much the
    // first time instead of F and then the rest (one READ, one doorbell
    // fewer per part in a steady batched load).
    batch_fetch_bytes_ = static_cast<uint32_t>(std::min<uint64_t>(
        (wire::FramedBytes(view.size) + 63) / 64 * 64, kMaxBatchFetchBytes));
  }
  switch (step.next) {
    case FetchStep::Next::kComplete:
      Complete(s, buf + wire::kHeaderBytes, view, RpcMode::kRemoteFetch,
               finished);
      return;
    case FetchStep::Next::kReadRest: {
      // The result (with its tail) is larger than F: one more READ for the
      // rest.
      const uint32_t rest =
          static_cast<uint32_t>(wire::FramedBytes(view.size)) -
          slot.fetched_bytes;
      WorkRequest wr = WorkRequest::Read(
          WrId(s, kRestRead), local_.get(),
          fetch_offset_ + size_t{s} * layout_.response_slot_bytes +
              slot.part_offset + slot.fetched_bytes,
          rest, server_region_,
          layout_.ResponseSlotOffset(s) + slot.part_offset +
              slot.fetched_bytes);
      if (Post(wr)) {
        slot.read_outstanding = true;
        slot.read_posted_ns = now;
        ++slot.reads;
        slot.phase = Phase::kFetchRest;
      }
      return;
    }
    case FetchStep::Next::kWaitReply:
      // Pushed, or the READ after the switch found nothing: the server
      // WRITEs the result.
      if (!found) slot.last_probe_ns = now;
      slot.phase = Phase::kWaitReply;
      return;
    case FetchStep::Next::kKeepWaiting:
      return;
    case FetchStep::Next::kFetchAgain:
      // Repeated fetching: at once while within R; past R, backing off
      // exponentially (capped) so a slow or descheduled server is not
      // hammered and the poller leaves the core to others.
      slot.next_fetch_ns = step.fetch_at_ns;
      break;
  }
  if (!step.newly_slow) return;
  slot.counted_slow = true;
  if (Policy(slot.bucket).OnCallExceededRetries()) {
    counters_->switches_to_server_reply.fetch_add(1, std::memory_order_relaxed);
    SetModeBit(slot.bucket, true);
    // Every call of the bucket still fetching gets one READ after the
    // flag landed: either the result was already published, or the
    // server will WRITE it. Other methods keep fetching.
    for (uint32_t i = 0; i < slots_.size(); ++i) {
      Slot& o = slots_[i];
      if (o.phase == Phase::kFetchHeader && o.bucket == slot.bucket) {
        o.phase = Phase::kSwitchCheck;
        o.next_fetch_ns = now;
      }
    }
  }
}

void ClientConnection::FailLocked(absl::Status status,
                                  std::vector<PendingCall*>* finished) {
  if (status_.ok()) {
    status_ = status;
    if (status.code() != absl::StatusCode::kCancelled) {
      LOG(WARNING) << "rfrpc connection to worker " << worker_
                   << " failed: " << status;
    }
    conn_->Fail(status);
  }
  failed_.store(true, std::memory_order_release);
  for (uint32_t s = 0; s < slots_.size(); ++s) {
    Slot& slot = slots_[s];
    if (slot.phase == Phase::kFree) continue;
    if (slot.phase == Phase::kDraining) {
      slot.phase = Phase::kFree;
      slot.read_outstanding = false;
      --busy_slots_;
      free_slots_.push_back(s);
      continue;
    }
    if (slot.batch) {
      for (PendingCall*& call : slot.calls) {
        if (call != nullptr) FinishCall(call, status_, finished);
        call = nullptr;
      }
    } else if (slot.call != nullptr) {
      FinishCall(slot.call, status_, finished);
    }
    FreeSlot(s);
  }
  while (!queued_.empty()) {
    PendingCall* call = queued_.front();
    queued_.pop_front();
    ++async_slots_;  // FinishCall decrements for async calls.
    FinishCall(call, status_, finished);
  }
  UpdateNeedsDriver();
}

void ClientConnection::Abort(absl::Status status,
                             std::vector<PendingCall*>* finished) {
  MutexLock lock(&mu_);
  FailLocked(std::move(status), finished);
}

void ClientConnection::PostCancel(uint32_t s, int64_t now) {
  // The server answers the request with CANCELLED if its result is still
  // being computed, and its handler sees ServerContext::IsCancelled. The
  // ring after it makes the worker look at the slot (and wakes it if it
  // may be parked); the slot stays abandoned until that answer (or the
  // result, if it won the race) lands.
  const uint64_t word = wire::CancelWord(slots_[s].seq);
  const size_t src = cancel_src_offset_ + size_t{s} * 8;
  std::memcpy(local_->data() + src, &word, sizeof(word));
  WorkRequest wrs[3];
  wrs[0] = WorkRequest::Write(WrId(s, kCancelWrite), local_.get(), src,
                              sizeof(word), server_region_,
                              layout_.CancelOffset(s));
  wrs[0].signaled = false;
  const bool notify = NotifyDue(now);
  BellWrites(s, /*all=*/false, notify, wrs + 1);
  SignalAccounting(wrs, 3);
  if (PostList(absl::MakeSpan(wrs, 3))) {
    counters_->cancel_writes.fetch_add(1, std::memory_order_relaxed);
  }
}

void ClientConnection::CancelLocked(int64_t now,
                                    std::vector<PendingCall*>* finished) {
  auto wanted = [](const PendingCall* call) {
    return call != nullptr && call->ctx != nullptr && call->ctx->cancelled();
  };
  const absl::Status cancelled =
      absl::CancelledError("call cancelled (ClientContext::TryCancel)");
  may_abandon_ = true;
  for (uint32_t s = 0; s < used_slots_; ++s) {
    Slot& slot = slots_[s];
    if (slot.phase == Phase::kFree || slot.phase == Phase::kDraining) continue;
    const bool sent = slot.phase != Phase::kFilling;
    if (!slot.batch) {
      if (!wanted(slot.call)) continue;
      PendingCall* call = slot.call;
      slot.call = nullptr;  // Abandoned: reused once the server answers.
      call->fetches = slot.fetches;
      call->reads = slot.reads;
      counters_->calls_cancelled.fetch_add(1, std::memory_order_relaxed);
      FinishCall(call, cancelled, finished);
      if (sent) PostCancel(s, now);
      continue;
    }
    bool any = false;
    for (PendingCall*& call : slot.calls) {
      if (!wanted(call)) continue;
      counters_->calls_cancelled.fetch_add(1, std::memory_order_relaxed);
      FinishCall(call, cancelled, finished);
      call = nullptr;
      --slot.live_calls;
      any = true;
    }
    // The server learns of it per slot: once no call of the batch is left.
    if (any && sent && slot.live_calls == 0) PostCancel(s, now);
  }
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (!wanted(*it)) {
      ++it;
      continue;
    }
    PendingCall* call = *it;
    it = queued_.erase(it);
    ++async_slots_;  // FinishCall decrements for async calls.
    counters_->calls_cancelled.fetch_add(1, std::memory_order_relaxed);
    FinishCall(call, cancelled, finished);
  }
}

void ClientConnection::ExpireCalls(uint32_t s, int64_t now,
                                   std::vector<PendingCall*>* finished) {
  Slot& slot = slots_[s];
  if (now <= slot.earliest_deadline_ns) return;
  auto expire = [&](PendingCall* call) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    may_abandon_ = true;
    call->fetches = slot.fetches;
    call->reads = slot.reads;
    FinishCall(call,
               absl::DeadlineExceededError(absl::StrCat(
                   "deadline exceeded after ",
                   absl::FormatDuration(absl::Nanoseconds(now - call->start_ns)),
                   " (", slot.fetches, " fetches, mode ",
                   RpcModeName(ServerReply(slot.bucket) ? RpcMode::kServerReply
                                                        : RpcMode::kRemoteFetch),
                   ")")),
               finished);
  };
  int64_t earliest = INT64_MAX;
  if (slot.batch) {
    for (PendingCall*& call : slot.calls) {
      if (call == nullptr) continue;
      if (now > call->deadline_ns) {
        expire(call);
        call = nullptr;
        --slot.live_calls;
      } else {
        earliest = std::min(earliest, call->deadline_ns);
      }
    }
  } else if (slot.call != nullptr && now > slot.call->deadline_ns) {
    PendingCall* call = slot.call;
    slot.call = nullptr;  // Abandoned: reused once its result shows up.
    expire(call);
  } else if (slot.call != nullptr) {
    earliest = slot.call->deadline_ns;
  }
  slot.earliest_deadline_ns = earliest;
}

bool ClientConnection::WaitsOnlyForPushes(int64_t* earliest_deadline_ns) const {
  MutexLock lock(&mu_);
  // Calls with a context may be cancelled (TryCancel only bumps a count
  // that Progress reads): those are driven the timed way.
  if (!status_.ok() || busy_slots_ == 0 || !queued_.empty() || open_ >= 0 ||
      ctx_calls_ > 0) {
    return false;
  }
  *earliest_deadline_ns = INT64_MAX;
  for (uint32_t s = 0; s < used_slots_; ++s) {
    const Slot& slot = slots_[s];
    if (slot.phase == Phase::kFree) continue;
    if (slot.phase != Phase::kWaitReply || !slot.push_notify ||
        slot.read_outstanding) {
      return false;
    }
    *earliest_deadline_ns =
        std::min(*earliest_deadline_ns, slot.earliest_deadline_ns);
  }
  return true;
}

void ClientConnection::InterruptPushSleep() { cq_->Interrupt(); }

void ClientConnection::SleepForPush(int64_t ns,
                                    std::vector<PendingCall*>* finished) {
  // One thread at a time sleeps on the queue: the wake word (shm) and the
  // armed event (verbs) are the queue's, so a second sleeper's disarm or
  // drained event could take a wake-up meant for the first. Others sleep
  // the timed way.
  if (push_sleeping_.exchange(true, std::memory_order_acquire)) {
    absl::SleepFor(absl::Nanoseconds(ns / PushSleepStretch()));
    return;
  }
  struct Done {
    std::atomic<bool>* flag;
    ~Done() { flag->store(false, std::memory_order_release); }
  } done{&push_sleeping_};
  {
    // Under the lock: polls (other threads' Progress) and the arm do not
    // overlap (verbs: ibv_req_notify_cq against ibv_poll_cq).
    MutexLock lock(&mu_);
    cq_->ArmWake();  // A full fence before the look below.
  }
  // A push (and its notify) that came before the arm is found here; one
  // that comes after it wakes the wait (the server stores, fences, then
  // loads the armed word: docs/rpc.md "Threads and waiting").
  if (Progress(finished)) {
    cq_->Disarm();
    return;
  }
  counters_->push_sleeps.fetch_add(1, std::memory_order_relaxed);
  (void)cq_->WaitWoken(absl::Nanoseconds(ns));
}

// Progress's steps are inlined into it, their only caller: a round is the
// loop every waiting caller spins in, and the split must not cost it calls
// (rpc_bench, interleaved A/B: within noise either way).
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ClientConnection::PostDueReadsLocked(
    int64_t now, std::vector<PendingCall*>* finished, bool* progressed) {
  // Post the header READs that are due, in one post list (one doorbell;
  // up to kReadList at a time).
  uint32_t due[kReadList];
  int n_due = 0;
  for (uint32_t s = 0; s < used_slots_; ++s) {
    Slot& slot = slots_[s];
    if (slot.hot_unconfirmed) {
      // Posted without a doorbell on a hot slot. `now` is after that post:
      // if the slot's window had run out by now, the post may have come
      // after the worker stopped polling it (the poster was descheduled
      // between its clock read and its post): ring, so it is not left for
      // the re-ring.
      slot.hot_unconfirmed = false;
      if (now >= slot.hot_until_ns && slot.phase != Phase::kFree &&
          slot.phase != Phase::kDraining && slot.phase != Phase::kFilling) {
        WorkRequest wrs[2];
        BellWrites(s, /*all=*/false, /*notify=*/true, wrs);
        SignalAccounting(wrs, 2);
        slot.rung = true;
        PostList(absl::MakeSpan(wrs, 2));
      }
    }
    if ((slot.phase == Phase::kFetchHeader || slot.phase == Phase::kSwitchCheck) &&
        !slot.read_outstanding && now >= slot.next_fetch_ns) {
      due[n_due++] = s;
      if (n_due == kReadList) {
        PostHeaderReads(due, n_due, now);
        n_due = 0;
      }
    }
  }
  if (n_due > 0) PostHeaderReads(due, n_due, now);
  if (!status_.ok()) {
    FailLocked(status_, finished);
    *progressed = true;
    return false;
  }
  return true;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool
ClientConnection::TakeCompletionsLocked(int64_t* now,
                                        std::vector<PendingCall*>* finished,
                                        bool* progressed) {
  // Completions take a fresh clock read: results found now are timed from it.
  transport::Completion comps[16];
  int n;
  if (inline_completions_) {
    n = inline_comps_.Take(absl::MakeSpan(comps));
    inline_polls_.Add(1);
    if (n == 0) inline_empty_polls_.Add(1);
  } else {
    n = cq_->Poll(absl::MakeSpan(comps));
  }
  if (n > 0) now_ns_ = *now = NowNs();
  for (int i = 0; i < n; ++i) {
    const transport::Completion& c = comps[i];
    if (!c.ok()) {
      FailLocked(c.ToStatus(), finished);
      *progressed = true;
      return false;
    }
    sq_.Completed(c.wr_id);
    const uint32_t s = static_cast<uint32_t>(c.wr_id >> 4);
    const WrKind kind = static_cast<WrKind>(c.wr_id & 0xf);
    if (kind == kPublishWrite) {
      batcher_.PublishCompleted();
      if (open_ >= 0 && slots_[open_].publish_pending) {
        PublishLocked(static_cast<uint32_t>(open_));
      }
      *progressed = true;
      continue;
    }
    if (kind == kRequestWrite || kind == kModeWrite || kind == kBellWrite ||
        kind == kCancelWrite) {
      continue;
    }
    if (s >= slots_.size()) continue;
    Slot& slot = slots_[s];
    slot.read_outstanding = false;
    *progressed = true;
    if (slot.phase == Phase::kDraining) {
      slot.phase = Phase::kFree;
      --busy_slots_;
      free_slots_.push_back(s);
      continue;
    }
    if (kind == kHeaderRead) {
      // A server-reply probe can land after the push it raced with already
      // completed its part: the slot has moved on, the fetched bytes belong
      // to an earlier part and say nothing about the current one.
      if (slot.read_offset != slot.part_offset) continue;
      if (slot.phase == Phase::kFetchHeader || slot.phase == Phase::kSwitchCheck ||
          slot.phase == Phase::kWaitReply) {
        HandleHeader(s, *now, finished);
      }
    } else if (kind == kRestRead && slot.phase == Phase::kFetchRest) {
      wire::ResponseView view;
      const char* buf = fetch_buf(s) + slot.part_offset;
      const uint32_t room = layout_.response_slot_bytes - slot.part_offset;
      const wire::FetchState st = wire::InspectResponse(
          buf, room, wire::SlotPayloadCapacity(room), slot.seq,
          /*require_tail=*/true, &view);
      if (st == wire::FetchState::kReady) {
        Complete(s, buf + wire::kHeaderBytes, view, RpcMode::kRemoteFetch,
                 finished);
      } else if (st == wire::FetchState::kNotReady) {
        // No tail where the head said: the head READ was torn (see
        // HandleHeader). READ the header again.
        slot.phase = WaitPhase(slot.bucket);
        slot.next_fetch_ns = *now;
        slot.last_probe_ns = 0;
      } else {
        FailLocked(absl::InternalError(absl::StrCat(
                       "response header changed between READs on slot ", s)),
                   finished);
        *progressed = true;
        return false;
      }
    }
    if (!status_.ok()) {
      FailLocked(status_, finished);
      *progressed = true;
      return false;
    }
  }
  return true;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ClientConnection::SweepSlotsLocked(
    int64_t now, std::vector<PendingCall*>* finished, bool* progressed) {
  // Doorbells that may have been lost, lost completions, server-reply
  // slots, deadlines, probes.
  if (now >= next_rering_ns_) ReRingLocked(now);
  if (batcher_.PublishLost(now, kLostCompletionNs)) {
    FailLocked(absl::UnavailableError(
                   "no completion for a batch publish WRITE within 2 s; "
                   "connection presumed lost"),
               finished);
    *progressed = true;
    return false;
  }
  if (busy_slots_ > 0) {
    for (uint32_t s = 0; s < used_slots_; ++s) {
      Slot& slot = slots_[s];
      if (slot.read_outstanding && now - slot.read_posted_ns > kLostCompletionNs) {
        FailLocked(absl::UnavailableError(absl::StrCat(
                       "no completion for a READ on slot ", s,
                       " within 2 s; connection presumed lost")),
                   finished);
        *progressed = true;
        return false;
      }
      if (slot.phase == Phase::kFree || slot.phase == Phase::kDraining) continue;
      if (slot.phase == Phase::kWaitReply) {
        bool suspect = false;
        if (TakeReplyLocked(s, finished, &suspect)) {
          *progressed = true;
          if (!status_.ok()) return false;
          continue;
        }
        // A head with our seq whose frame does not fit is suspect, not yet
        // corrupt: until this part's push lands, a batch part's offset holds
        // what earlier batches left there (their payload), and a landing
        // WRITE may show its first word in pieces. The server's published
        // copy decides: a probe READ takes the result from it, or waits if
        // it is not published, or fails the connection if it is corrupt.
        if (suspect && slot.suspect_offset != slot.part_offset) {
          slot.suspect_offset = slot.part_offset;
          slot.last_probe_ns = 0;  // Probe now.
        }
        if ((suspect ||
             (mode_option_ != RpcMode::kServerReply && !slot.push_notify)) &&
            !slot.read_outstanding &&
            now - slot.last_probe_ns > kReplyProbeNs) {
          slot.last_probe_ns = now;
          PostHeaderRead(s, now);
        }
      }
      const bool was_abandoned = slot.phase != Phase::kFilling && Abandoned(slot);
      ExpireCalls(s, now, finished);
      if (!was_abandoned && slot.phase != Phase::kFilling && Abandoned(slot)) {
        *progressed = true;
      }
    }
  }
  return true;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool ClientConnection::StartQueuedLocked(
    int64_t now, std::vector<PendingCall*>* finished) {
  // Queued async calls take freed slots.
  bool started = false;
  while (!queued_.empty()) {
    PendingCall* call = queued_.front();
    if (now > call->deadline_ns) {
      queued_.pop_front();
      ++async_slots_;
      FinishCall(call, absl::DeadlineExceededError("deadline exceeded waiting for a free slot"),
                 finished);
      continue;
    }
    absl::Status st = StartLocked(call, call->queued_request.data(), nullptr,
                                  call->queued_request.size());
    if (st.code() == absl::StatusCode::kResourceExhausted) break;
    queued_.pop_front();
    if (!st.ok()) {
      ++async_slots_;
      FinishCall(call, st, finished);
    }
    started = true;
  }
  return started;
}

bool ClientConnection::Progress(std::vector<PendingCall*>* finished) {
  MutexLock lock(&mu_);
  if (!status_.ok()) {
    if (busy_slots_ > 0 || !queued_.empty()) FailLocked(status_, finished);
    return false;
  }
  bool progressed = false;
  if (++rounds_ % kStatusCheckRounds == 0 || busy_slots_ == 0) {
    absl::Status ts = conn_->status();
    if (!ts.ok()) {
      FailLocked(ts, finished);
      return true;
    }
  }
  int64_t now = NowNs();
  now_ns_ = now;

  // Calls whose context was cancelled (ClientContext::TryCancel bumps the
  // channel's count): one load a round while calls with a context are here,
  // none otherwise.
  if (ctx_calls_ > 0) {
    const uint64_t cancels = counters_->cancels.load(std::memory_order_acquire);
    if (cancels != seen_cancels_ || rescan_cancels_) {
      seen_cancels_ = cancels;
      rescan_cancels_ = false;
      CancelLocked(now, finished);
      progressed = true;
    }
  }

  // 0. The open batch goes when T has passed.
  if (open_ >= 0) {
    const Slot& o = slots_[open_];
    if (!o.publish_pending &&
        batcher_.OnTick(static_cast<int>(o.calls.size()), o.first_ns, now) ==
            FlushReason::kTimeout) {
      FlushLocked(FlushReason::kTimeout);
      progressed = true;
    }
  }
  // Each step returns false once the connection has failed (every call
  // failed with it, `progressed` set).
  if (!PostDueReadsLocked(now, finished, &progressed) ||
      !TakeCompletionsLocked(&now, finished, &progressed) ||
      !SweepSlotsLocked(now, finished, &progressed)) {
    return true;
  }
  if (StartQueuedLocked(now, finished)) progressed = true;
  // Whoever polls is about to wait: send the open batch if nobody is
  // adding to it (and few enough batches are in flight).
  if (open_ >= 0) {
    FlushIfIdleLocked(now);
    if (open_ < 0) progressed = true;
  }
  UpdateNeedsDriver();
  return progressed;
}

}  // namespace internal
}  // namespace rfrpc
