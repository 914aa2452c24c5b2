// Copyright 2026 The rfrpc Authors.
//
// Server datapath: server_recv (poll request slots), the handler call, and
// server_send (publish locally; WRITE back only in server-reply or for large
// results).

#include "rpc/server_worker.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/clock.h"
#include "base/cpu_relax.h"
#include "base/mutex.h"
#include "glog/logging.h"
#include "rpc/batch_format.h"
#include "rpc/slot_codec.h"

namespace rfrpc {
namespace internal {
namespace {

// A server-reply WRITE whose completion has not arrived after this long is
// lost: its slot would never be served again, so the connection is closed
// (the client sees UNAVAILABLE and reconnects).
constexpr int64_t kLostCompletionNs = int64_t{2} * 1000 * 1000 * 1000;
// Every kLivenessRounds rounds the liveness of kLivenessPerRound connections
// is checked (a cursor walks them all); all of them when a parked worker
// wakes at its timeout.
constexpr uint64_t kLivenessRounds = 16;
constexpr size_t kLivenessPerRound = 4;
// Rounds between clock reads when nothing needs a fresh time, and while
// hot slots are polled (see Loop).
constexpr uint64_t kClockRounds = 64;
constexpr uint64_t kHotClockRounds = 8;
// Rounds between polls of the completion queue when no push is in flight
// (see Loop).
constexpr uint64_t kNotifyPollRounds = 16;
// A parked worker wakes at least this often to check its connections'
// liveness (closing those whose client has gone). Everything else that needs
// a parked worker wakes it (a notify, a new connection, a finished async
// call, shutdown) or bounds the park (the next pending deadline). The walk
// runs only if some connection of the process failed since the last one
// (transport::ConnectionFailures): a cold walk of 4 096 idle connections
// every 100 ms was 1.3% of a core, over issue 15's 2% for an idle server.
constexpr absl::Duration kParkedCheck = absl::Milliseconds(100);
// How often a working worker refreshes its run-delay baseline (NoteStall):
// a stall's waiting is known to within this, plus a round.
constexpr int64_t kRunDelayEvery = 2 * 1000 * 1000;

// wr_id of a push: the bell and the slot (slots < 256), checked against the
// connection's id on completion (a bell may have a new owner by then).
constexpr uint64_t PushId(uint32_t bell, uint32_t slot) {
  return (uint64_t{bell} << 8) | slot;
}
constexpr uint64_t PushBell(uint64_t id) { return id >> 8; }
constexpr uint32_t PushSlot(uint64_t id) {
  return static_cast<uint32_t>(id & 0xff);
}

}  // namespace

ServerWorker::ServerWorker(int index, const ServerOptions& options,
                           const MethodTable* methods, ServerCounters* counters,
                           std::unique_ptr<transport::CompletionQueue> cq,
                           std::unique_ptr<transport::MemoryRegion> bells,
                           WorkerMethodCounters* method_counters,
                           HandlerPool* pool)
    : index_(index),
      options_(options),
      methods_(methods),
      counters_(counters),
      cq_(std::move(cq)),
      bells_(std::move(bells)),
      pool_(pool),
      mailbox_(std::make_shared<WorkerMailbox>(cq_.get())),
      finder_(bells_->data(),
              WorkFinder::Options{BellCapacity(options),
                                  absl::ToInt64Nanoseconds(options.hot_window),
                                  kMaxHotSlots, kDirectGroups, kMaxHotGroups}),
      by_bell_(BellCapacity(options), nullptr),
      method_counters_(method_counters),
      stall_warning_ns_(options.stall_warning <= absl::ZeroDuration()
                            ? INT64_MAX
                            : absl::ToInt64Nanoseconds(options.stall_warning)) {
  MutexLock lock(&bells_mu_);
  for (uint32_t b = BellCapacity(options); b > 0; --b) {
    free_bells_.push_back(b - 1);
  }
}

ServerWorker::~ServerWorker() { Stop(); }

void ServerWorker::Start() {
  thread_ = std::thread([this] { Loop(); });
  if (options_.pin_first_cpu >= 0) {
    const int ncpu = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((options_.pin_first_cpu + index_) % ncpu, &set);
    pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set);
  }
}

void ServerWorker::Stop() {
  stop_.store(true, std::memory_order_seq_cst);
  cq_->Interrupt();  // A parked worker wakes.
  if (thread_.joinable()) thread_.join();
  MutexLock lock(&inbox_mu_);
  inbox_.clear();
}

absl::StatusOr<uint32_t> ServerWorker::AllocateBell() {
  MutexLock lock(&bells_mu_);
  if (free_bells_.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "server worker ", index_, " has no free doorbell (max_connections ",
        options_.max_connections, ")"));
  }
  const uint32_t b = free_bells_.back();
  free_bells_.pop_back();
  return b;
}

void ServerWorker::ReleaseBell(uint32_t bell) {
  MutexLock lock(&bells_mu_);
  free_bells_.push_back(bell);
}

void ServerWorker::Adopt(std::unique_ptr<ServerConnection> c) {
  connections_.fetch_add(1);
  {
    MutexLock lock(&inbox_mu_);
    inbox_.push_back(std::move(c));
    inbox_nonempty_.store(true, std::memory_order_seq_cst);
  }
  cq_->Interrupt();  // Wakes the worker if it is parked.
}

void ServerWorker::AdoptInbox() {
  MutexLock lock(&inbox_mu_);
  for (auto& c : inbox_) {
    finder_.Add(c->bell, c->layout.slots);
    by_bell_[c->bell] = c.get();
    conns_.push_back(std::move(c));
  }
  inbox_.clear();
  inbox_nonempty_.store(false, std::memory_order_release);
}

void ServerWorker::Close(size_t i, const absl::Status& why) {
  FlushPushes();  // None may name a closed connection.
  ServerConnection* c = conns_[i].get();
  VLOG(1) << "worker " << index_ << ": closing connection from " << c->peer
          << ": " << why;
  c->conn->Fail(why);
  if (c->pending_count > 0) DropPending(c);
  finder_.Remove(c->bell);
  by_bell_[c->bell] = nullptr;
  ReleaseBell(c->bell);
  counters_->connections_open.fetch_sub(1, std::memory_order_relaxed);
  counters_->connection_slots.fetch_sub(c->layout.slots, std::memory_order_relaxed);
  conns_[i] = std::move(conns_.back());
  conns_.pop_back();
  connections_.fetch_sub(1);
  counters_->connections_closed.fetch_add(1, std::memory_order_relaxed);
}

void ServerWorker::TakeCompletions(
    absl::Span<const transport::Completion> comps) {
  pushes_in_flight_ -= std::min<uint64_t>(pushes_in_flight_, comps.size());
  for (const transport::Completion& wc : comps) {
    const uint64_t bell = PushBell(wc.wr_id);
    const uint32_t slot = PushSlot(wc.wr_id);
    if (bell >= by_bell_.size()) continue;
    ServerConnection* c = by_bell_[bell];
    if (c == nullptr || c->conn->id() != wc.connection_id) continue;  // Gone.
    if (!wc.ok()) {
      c->conn->Fail(wc.ToStatus());  // The liveness check closes it.
      continue;
    }
    if (slot < c->push_in_flight.size() && c->push_in_flight[slot] > 0) {
      --c->push_in_flight[slot];
      --c->pushes;
    }
  }
}

void ServerWorker::CheckLiveness(size_t n, int64_t now) {
  n = std::min(n, conns_.size());
  for (size_t k = 0; k < n && !conns_.empty(); ++k) {
    if (liveness_cursor_ >= conns_.size()) liveness_cursor_ = 0;
    const ServerConnection& sc = *conns_[liveness_cursor_];
    absl::Status s = sc.conn->status();
    for (size_t i = 0; s.ok() && sc.pushes > 0 && i < sc.push_in_flight.size();
         ++i) {
      if (sc.push_in_flight[i] > 0 &&
          now - sc.push_posted_ns[i] > kLostCompletionNs) {
        s = absl::UnavailableError(absl::StrCat(
            "no completion for a server-reply WRITE on slot ", i,
            " within 2 s"));
      }
    }
    if (!s.ok()) {
      Close(liveness_cursor_, s);  // The last one moved here: look at it next.
    } else {
      ++liveness_cursor_;
    }
  }
}

bool ServerWorker::Park() {
  mailbox_->set_parked(true);
  cq_->ArmWake();  // A full fence before the checks below.
  if (finder_.AnyRung() || inbox_nonempty_.load(std::memory_order_seq_cst) ||
      stop_.load(std::memory_order_seq_cst) || mailbox_->nonempty()) {
    cq_->Disarm();
    mailbox_->set_parked(false);
    return false;
  }
  counters_->parks.fetch_add(1, std::memory_order_relaxed);
  transport::Completion comps[16];
  // Wake for the next pending call's deadline too (it gets its answer).
  absl::Duration wait = kParkedCheck;
  if (next_expiry_ns_ != INT64_MAX) {
    wait = std::clamp(absl::Nanoseconds(next_expiry_ns_ - UnixNanos()),
                      absl::Microseconds(50), kParkedCheck);
  }
  absl::StatusOr<int> n = cq_->WaitArmed(absl::MakeSpan(comps), wait);
  mailbox_->set_parked(false);
  if (n.ok() && *n > 0) {
    TakeCompletions(absl::MakeConstSpan(comps, static_cast<size_t>(*n)));
  } else if (n.ok()) {
    // A client's notify: its request is waiting; serve it first (the
    // liveness walk goes on a few connections per round).
    counters_->park_notifies.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // The 100 ms check (or a new connection, or shutdown): look at every
  // connection's liveness while nobody is waiting, if any connection of the
  // process failed since the last look (read first: a failure during the
  // walk is looked at next time).
  const uint64_t failures = transport::ConnectionFailures();
  if (failures != parked_failures_seen_) {
    parked_failures_seen_ = failures;
    counters_->liveness_walks.fetch_add(1, std::memory_order_relaxed);
    CheckLiveness(conns_.size(), UnixNanos());
  }
  return true;
}

void ServerWorker::Loop() {
  int64_t last_work = UnixNanos();
  const int64_t park_after = options_.idle_park_after == absl::InfiniteDuration()
                                 ? INT64_MAX
                                 : absl::ToInt64Nanoseconds(options_.idle_park_after);
  int empty_rounds = 0;
  bool parked_idle = false;  // The last park ended with nothing to do.
  // A park ended with work: the first idle round after it yields.
  bool yield_after_wake = false;
  // Opened here: the file is the opening thread's.
  if (stall_warning_ns_ != INT64_MAX) run_delay_.Open();
  while (!stop_.load(std::memory_order_acquire)) {
    ++rounds_;
    if (inbox_nonempty_.load(std::memory_order_acquire)) AdoptInbox();
    // The clock costs about as much as an idle round (a third of a hot
    // worker's time when read every round): read it after work, every
    // kHotClockRounds while hot slots' windows run (a stale `now` only
    // keeps a slot polled a little longer than its window), and every
    // kClockRounds otherwise (what else uses `now` tolerates microseconds
    // of staleness).
    if (clock_stale_ ||
        rounds_ % (finder_.hot() > 0 ? kHotClockRounds : kClockRounds) == 0) {
      now_ = UnixNanos();
      clock_stale_ = false;
    }
    const int64_t now = now_;
    // A stale `now` only makes the baseline look older than it is, which
    // NoteStall takes as less of the delay being the stall's.
    if (now - delay_base_at_ns_ >= kRunDelayEvery && run_delay_.available() &&
        run_delay_.Read(&delay_base_ns_)) {
      delay_base_at_ns_ = now;
    }
    candidates_.clear();
    const uint64_t rings_before = finder_.rings();
    finder_.Collect(now, &candidates_);
    if (finder_.rings() != rings_before) {
      counters_->rings.fetch_add(finder_.rings() - rings_before,
                                 std::memory_order_relaxed);
    }
    bool served = false;
    for (const WorkFinder::Candidate& w : candidates_) {
      ServerConnection* c = by_bell_[w.bell];
      if (c == nullptr) continue;
      if (c->push_in_flight[w.slot] > 0) {
        // Its response buffer is still being pushed: look again later.
        finder_.KeepPolling(w.bell, w.slot, now);
        continue;
      }
      if (c->pending_count > 0 && c->pending[w.slot] != nullptr) {
        // Its answer is still being computed: no new request can be there
        // (one that is is not taken until then), but a cancel may.
        CheckCancel(c, w.slot);
        continue;
      }
      const char* slot = c->region->data() + c->layout.RequestSlotOffset(w.slot);
      // Cheap check first: the head word only.
      if (wire::HeadSeq(transport::LoadAcquire64(slot)) !=
          c->expected_seq[w.slot]) {
        continue;
      }
      if (Serve(c, w.slot)) {
        served = true;
      } else {
        finder_.KeepPolling(w.bell, w.slot, now);  // Still landing.
      }
    }
    // Async and offloaded calls finished on other threads, and deadlines.
    if (mailbox_->nonempty()) {
      TakeFinished();
      served = true;
    }
    if (now >= next_expiry_ns_) ExpirePending(now);
    FlushPushes();  // This round's last post list.
    // Completions of pushes (signaled WRITEs), and on verbs the receive
    // completions of clients' notifies, which the provider consumes inside
    // Poll and answers with a fresh receive: a queue pair whose receives
    // ran out would hold its client's send queue in RNR retries. So poll
    // every round while pushes are in flight, and every kNotifyPollRounds
    // otherwise.
    if (pushes_in_flight_ > 0 || rounds_ % kNotifyPollRounds == 0) {
      transport::Completion comps[16];
      const int n = cq_->Poll(absl::MakeSpan(comps));
      TakeCompletions(absl::MakeConstSpan(comps, static_cast<size_t>(n)));
    }
    if (rounds_ % kLivenessRounds == 0) CheckLiveness(kLivenessPerRound, now);
    if (served) {
      clock_stale_ = true;
      last_work = now;
      empty_rounds = 0;
      parked_idle = false;
      continue;
    }
    if (!candidates_.empty()) parked_idle = false;
    // Idle: spin, then yield, then park (RDMAbox's adaptive polling). After
    // a park that found nothing, park again at once.
    const bool quiet = (parked_idle || now - last_work >= park_after) &&
                       finder_.hot() == 0 && pushes_in_flight_ == 0;
    if (quiet) {
      if (Park()) {
        // Asleep for up to kParkedCheck: the next round reads the clock
        // (hot windows and the run-delay baseline start from it).
        clock_stale_ = true;
        parked_idle = !finder_.AnyRung();
        if (!parked_idle) last_work = UnixNanos();
        yield_after_wake = !parked_idle;
      }
      continue;
    }
    if (yield_after_wake) {
      // The client that woke this worker may share its CPU: the kernel
      // often runs a futex's wakee on the waker's CPU, preempting the
      // caller, which then waits for its result while this worker spins
      // idle_spin_rounds (~45 us here). One yield hands it back; alone on
      // a CPU it costs a system call per wake-up.
      yield_after_wake = false;
      sched_yield();
      continue;
    }
    if (++empty_rounds < options_.idle_spin_rounds) {
      CpuRelax();
    } else {
      sched_yield();
    }
  }
  // Stopping: fail every connection so clients learn at once (their
  // pending calls are cancelled); calls that finish from now on are
  // released by the mailbox.
  while (!conns_.empty()) Close(conns_.size() - 1, absl::UnavailableError("server shutting down"));
  mailbox_->Close(&finished_);
  for (ServerCall* call : finished_) call->Release();
  finished_.clear();
}

bool ServerWorker::Serve(ServerConnection* c, uint32_t s) {
  const wire::ConnectionLayout& l = c->layout;
  char* slot = c->region->data() + l.RequestSlotOffset(s);
  const uint32_t seq = c->expected_seq[s];
  wire::RequestView req;
  std::string why;
  const wire::SlotState state =
      wire::InspectRequest(slot, l.request_slot_bytes, seq, &req, &why);
  if (state == wire::SlotState::kEmpty || state == wire::SlotState::kIncomplete) {
    return false;  // Not (fully) there yet.
  }
  const int64_t start_ns = UnixNanos();
  // Hot: served within the window of its previous request, so polled for
  // another window; the client then needs no doorbell for its next one.
  // The window runs from now, not from the round's start: the request may
  // have landed during this round, after the round's clock read, and the
  // client counts its half window from when it posted.
  const uint16_t hot =
      finder_.OnServed(c->bell, s, start_ns) ? wire::kResponseFlagHot : 0;
  if (hot) counters_->hot_serves.fetch_add(1, std::memory_order_relaxed);
  char* resp = c->region->data() + l.ResponseSlotOffset(s);
  char* payload = resp + wire::kHeaderBytes;
  const size_t cap = l.ResponsePayloadCapacity();
  size_t len = 0;
  absl::Status status;
  if (state == wire::SlotState::kCorrupt) {
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    status = absl::InvalidArgumentError(why);
  } else if ((req.flags & ~wire::kRequestFlagsKnown) != 0) {
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    status = absl::InvalidArgumentError(
        absl::StrFormat("request flags 0x%x not supported", req.flags));
  } else if (req.flags & wire::kRequestFlagBatch) {
    ServeBatch(c, s, req, start_ns, hot);
    return true;
  } else {
    const int64_t deadline_ns =
        (req.flags & wire::kRequestFlagDeadline)
            ? wire::DeadlineFromBudget(req.aux, start_ns)
            : INT64_MAX;
    const MethodEntry* m = FindMethod(req.method_id);
    if (m != nullptr && m->kind != MethodKind::kSync &&
        start_ns <= deadline_ns) {
      StartCall(c, s, seq, req.payload, m, start_ns, deadline_ns, hot);
      return true;
    }
    if (start_ns > deadline_ns) {
      // The caller gave up already: its answer is all that is needed.
      counters_->calls_expired.fetch_add(1, std::memory_order_relaxed);
      status = absl::DeadlineExceededError(
          "the call's deadline passed before its handler started");
    } else {
      status = RunHandler(c, m, req.method_id, req.payload, start_ns,
                          deadline_ns, s, seq, payload, cap, &len,
                          /*in_batch=*/false);
    }
  }
  c->expected_seq[s] = wire::NextSeq(seq);
  // With per-method stats RunHandler read the clock as this call's handler
  // ended (an earlier call's end is before start_ns).
  PublishSingle(c, s, seq, start_ns, hot, status, len,
                method_counters_ != nullptr && last_handler_end_ns_ >= start_ns
                    ? last_handler_end_ns_
                    : 0);
  return true;
}

void ServerWorker::PublishSingle(ServerConnection* c, uint32_t s, uint32_t seq,
                                 int64_t start_ns, uint16_t hot,
                                 const absl::Status& status, size_t len,
                                 int64_t end_ns) {
  const wire::ConnectionLayout& l = c->layout;
  // The request's mode bucket, from its header, read before the result is
  // published: from then on the client may reuse the request slot.
  const char* request = c->region->data() + l.RequestSlotOffset(s);
  const uint32_t bucket = wire::RequestModeBucket(request);
  const bool notify = wire::RequestWantsNotify(request);
  char* resp = c->region->data() + l.ResponseSlotOffset(s);
  uint16_t code = 0;
  if (!status.ok()) {
    code = static_cast<uint16_t>(status.code());
    len = std::min(status.message().size(), l.ResponsePayloadCapacity());
    std::memcpy(resp + wire::kHeaderBytes, status.message().data(), len);
    counters_->calls_failed.fetch_add(1, std::memory_order_relaxed);
  }
  const bool large = len > options_.large_result_bytes;
  // With per-method stats RunHandler read the clock as this call's handler
  // ended (end_ns): no second read.
  const int64_t elapsed = (end_ns != 0 ? end_ns : UnixNanos()) - start_ns;
  const size_t framed = wire::PublishResponse(
      resp, static_cast<uint32_t>(len), seq, wire::EncodeServerTime(elapsed),
      code, static_cast<uint16_t>((large ? wire::kResponseFlagPushed : 0) | hot));
  counters_->calls.fetch_add(1, std::memory_order_relaxed);
  FinishPublish(c, s, 0, framed, large, bucket, notify);
  FlushMethodStats();
}

const MethodEntry* ServerWorker::FindOtherMethod(uint32_t id) {
  auto it = methods_->find(id);
  if (it == methods_->end()) return nullptr;
  last_method_ = it->second;
  // The per-method counters follow last_method_.
  if (method_counters_ != nullptr) {
    last_counters_ = method_counters_->For(it->second->id);
  }
  return it->second;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status ServerWorker::RunCatching(
    const MethodEntry* m, absl::string_view request, char* out, size_t cap,
    size_t* len) {
  // Each branch returns its status in place: no move into a local.
  try {
    return m->handler->Run(&ctx_, request, out, cap, len);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("handler of ", m->full_name, " threw: ", e.what()));
  } catch (...) {
    return absl::InternalError(
        absl::StrCat("handler of ", m->full_name, " threw"));
  }
}

// Inline: RunHandler, on the unbatched path, calls it for every request.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void ServerWorker::CountHandled(
    const absl::Status& st, int64_t start_ns, size_t len) {
  if (method_counters_ == nullptr) return;
  // A batch's calls share start_ns: each is timed from the previous end.
  const int64_t took = HandlerTime(start_ns, ctx_.method(), "sync handler");
  CountServed(last_counters_, st.ok() ? 0 : static_cast<int>(st.code()), took,
              len);
}

absl::Status ServerWorker::UnknownMethod(uint32_t method_id) {
  if (method_counters_ != nullptr) {
    method_counters_->unknown()->Served(
        static_cast<int>(absl::StatusCode::kUnimplemented), 0, 0);
  }
  return absl::UnimplementedError(
      absl::StrFormat("no method with id 0x%08x on this server", method_id));
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline absl::Status ServerWorker::RunHandler(
    ServerConnection* c, const MethodEntry* m, uint32_t method_id,
    absl::string_view request, int64_t start_ns, int64_t deadline_ns,
    uint32_t s, uint32_t seq, char* out, size_t cap, size_t* len,
    bool in_batch) {
  if (m == nullptr) return UnknownMethod(method_id);
  FlushPushesBeforeHandler();
  if (in_batch) {
    // ServeBatch set the fields its calls share.
    ctx_.SetCall(m->full_name, deadline_ns);
  } else {
    ctx_.Reset(m->full_name, c->peer, index_, start_ns, deadline_ns,
               c->region->data() + c->layout.CancelOffset(s), seq);
  }
  absl::Status status = RunCatching(m, request, out, cap, len);
  if (!status.ok() && status.code() == absl::StatusCode::kResourceExhausted &&
      *len > cap) {
    status = ResultTooLarge(*len, cap);
  }
  CountHandled(status, start_ns, *len);
  return status;
}

void ServerWorker::ServeBatch(ServerConnection* c, uint32_t s,
                              const wire::RequestView& req, int64_t start_ns,
                              uint16_t hot) {
  const wire::ConnectionLayout& l = c->layout;
  const uint32_t seq = req.seq;
  char* resp = c->region->data() + l.ResponseSlotOffset(s);
  const size_t buf_bytes = l.response_slot_bytes;
  c->expected_seq[s] = wire::NextSeq(seq);
  counters_->batches.fetch_add(1, std::memory_order_relaxed);

  wire::BatchPayload batch;
  absl::Status bad =
      wire::ParseBatchPayload(req.payload, req.flags, req.method_id, &batch);
  const uint32_t n = batch.count;
  // Room for every entry's result header in a part of its own, the worst
  // case, must exist before anything runs.
  if (bad.ok() && !ResultPartWriter::Fits(n, buf_bytes)) {
    bad = absl::ResourceExhaustedError(absl::StrCat(
        "batch of ", n, " requests cannot fit its results in a ", buf_bytes,
        "-byte response slot"));
  }
  if (!bad.ok()) {
    // A batch-level error answers the whole batch as one plain response.
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    const size_t len = std::min(bad.message().size(), l.ResponsePayloadCapacity());
    std::memcpy(resp + wire::kHeaderBytes, bad.message().data(), len);
    const size_t framed = wire::PublishResponse(
        resp, static_cast<uint32_t>(len), seq, 0,
        static_cast<uint16_t>(bad.code()), hot);
    counters_->calls.fetch_add(1, std::memory_order_relaxed);
    FinishPublish(c, s, 0, framed, false, wire::kBatchModeBucket);
    return;
  }
  const uint32_t max_entries = req.aux == 0 ? 128u : req.aux;
  const size_t part_bytes_limit = std::max<size_t>(options_.result_batch_bytes, 64);
  ResultPartWriter w(resp, buf_bytes, n, max_entries, part_bytes_limit);
  int64_t part_start = start_ns;
  // Set once an entry's result comes later: from then on results wait in
  // it until every earlier one is in (request order).
  std::unique_ptr<PendingSlot> p;

  // What the batch's calls share; RunHandler sets each one's method and
  // deadline.
  ctx_.Reset(absl::string_view(), c->peer, index_, start_ns, INT64_MAX,
             c->region->data() + l.CancelOffset(s), seq);
  wire::BatchReader reader(batch.entries);
  uint32_t method_id;
  absl::string_view entry;
  // Set when ServeRun read the entry after its run: the loop's next entry.
  bool peeked = false;
  for (uint32_t i = 0;; ++i) {
    if (!peeked && !reader.Next(&method_id, &entry)) break;
    peeked = false;
    // Every entry arrived with the batch: one clock read serves them all.
    const int64_t deadline_ns =
        wire::DeadlineFromBudget(batch.budget(i), start_ns);
    const bool expired = start_ns > deadline_ns;
    const MethodEntry* m = FindMethod(method_id);
    const bool later = m != nullptr && m->kind != MethodKind::kSync;
    if (p == nullptr && m != nullptr && !later && !expired) {
      // This entry and the sync calls of its method that follow it.
      i += ServeRun(c, s, seq, hot, m, start_ns, deadline_ns, batch, i, &reader,
                    &method_id, &entry, &peeked, &w, &part_start) -
           1;
      continue;
    }
    if (p == nullptr) {
      // In order: the result goes straight where it belongs.
      size_t cap;
      char* out = w.NextPayload(&cap);
      size_t len = 0;
      absl::Status st;
      if (expired) {
        counters_->calls_expired.fetch_add(1, std::memory_order_relaxed);
        st = absl::DeadlineExceededError(
            "the call's deadline passed before its handler started");
      } else if (later) {
        ServerCall* call =
            NewCall(c, s, seq, i, m, entry, start_ns, deadline_ns, &st);
        if (call != nullptr && !Launch(c, call, m)) {
          p = std::make_unique<PendingSlot>();
          p->slot = s;
          p->seq = seq;
          p->start_ns = start_ns;
          p->hot = hot;
          p->batch = true;
          p->base = i;
          p->entries.reserve(n - i);
          p->entries.emplace_back();
          p->entries.back().call = call;
          p->entries.back().deadline_ns = deadline_ns;
          continue;
        }
        if (call != nullptr) {
          st = CallResult(call, out, cap, &len);
          call->Release();
        }
      } else {
        // A known sync method's entries went to ServeRun above.
        st = UnknownMethod(method_id);
      }
      CommitResult(c, s, seq, hot, &w, &part_start, st, len);
      continue;
    }
    // Behind a result that comes later: run now, keep the result.
    p->entries.emplace_back();
    PendingSlot::Entry& e = p->entries.back();
    e.deadline_ns = deadline_ns;
    absl::Status st;
    size_t len = 0;
    if (expired) {
      counters_->calls_expired.fetch_add(1, std::memory_order_relaxed);
      st = absl::DeadlineExceededError(
          "the call's deadline passed before its handler started");
    } else if (later) {
      ServerCall* call =
          NewCall(c, s, seq, i, m, entry, start_ns, deadline_ns, &st);
      if (call != nullptr && !Launch(c, call, m)) {
        e.call = call;
        continue;
      }
      if (call != nullptr) {
        st = call->status();
        if (st.ok()) call->SerializeResponseTo(&e.result);
        CountCall(call, st, e.result.size());
        call->Release();
      }
    } else {
      scratch_.resize(l.ResponsePayloadCapacity());
      st = RunHandler(c, m, method_id, entry, start_ns, deadline_ns, s, seq,
                      scratch_.data(), scratch_.size(), &len,
                      /*in_batch=*/true);
      if (st.ok()) e.result.assign(scratch_.data(), len);
    }
    e.ready = true;
    if (!st.ok()) {
      e.code = static_cast<uint16_t>(st.code());
      e.result.assign(st.message().data(), st.message().size());
    }
  }
  if (p != nullptr) {
    // The results before the first late one go out now.
    ResultPartWriter::Part part;
    if (w.Close(&part)) PublishPart(c, s, seq, hot, part, &part_start);
    p->writer = w;
    p->part_start = part_start;
    AddPending(c, std::move(p));
    FlushMethodStats();
    return;
  }
  ResultPartWriter::Part last;
  if (w.Finish(&last)) PublishPart(c, s, seq, hot, last, &part_start);
  FlushMethodStats();
}

uint32_t ServerWorker::ServeRun(ServerConnection* c, uint32_t s, uint32_t seq,
                                uint16_t hot, const MethodEntry* m,
                                int64_t start_ns, int64_t deadline_ns,
                                const wire::BatchPayload& batch, uint32_t first,
                                wire::BatchReader* reader, uint32_t* method_id,
                                absl::string_view* entry, bool* peeked,
                                ResultPartWriter* w, int64_t* part_start) {
  // Take the run: the entries from `first` on that call m and have time
  // left. The entry that ends it is left in *method_id, *entry (*peeked).
  uint32_t k = 0;
  run_requests_[k] = *entry;
  run_deadlines_[k++] = deadline_ns;
  while (k < kMaxRun) {
    uint32_t id;
    absl::string_view e;
    if (!reader->Next(&id, &e)) break;
    const int64_t d =
        wire::DeadlineFromBudget(batch.budget(first + k), start_ns);
    if (id != m->id || start_ns > d) {
      *method_id = id;
      *entry = e;
      *peeked = true;
      break;
    }
    run_requests_[k] = e;
    run_deadlines_[k++] = d;
  }

  scratch_.resize(c->layout.ResponsePayloadCapacity());
  uint32_t pos = 0;
  bool batchable = true;  // Until m's handler says it has no RunBatch.
  while (pos < k) {
    FlushPushesBeforeHandler();
    ctx_.SetCall(m->full_name, run_deadlines_[pos]);
    uint32_t count = k - pos;
    BatchRun run;
    run.out = w->RunSpace(&count, &run.room);
    run.requests = run_requests_ + pos;
    run.deadlines_ns = run_deadlines_ + pos;
    run.count = count;
    run.spill = scratch_.data();
    run.spill_cap = scratch_.size();
    if (count > 0 && batchable &&
        (batchable = m->handler->RunBatch(&ctx_, &run))) {
      counters_->batch_runs.fetch_add(1, std::memory_order_relaxed);
      if (run.done > 0) {
        w->CommitRun(run.done, run.used);
        CountRun(run.out, run.done, start_ns);
        pos += run.done;
      }
      if (run.ran) {
        // Entry pos ran; its result (or status) did not fit in the run.
        size_t cap;
        char* out = w->NextPayload(&cap);
        absl::Status st = std::move(run.status);
        size_t len = run.result_len;
        if (st.ok() && len <= cap) {
          std::memcpy(out, scratch_.data(), len);
        } else if (st.ok() ||
                   (st.code() == absl::StatusCode::kResourceExhausted &&
                    len > cap)) {
          st = ResultTooLarge(len, cap);
        }
        CountHandled(st, start_ns, len);
        CommitResult(c, s, seq, hot, w, part_start, st, len);
        ++pos;
        continue;
      }
      // All of it ran, or the part is full: the next round sees.
      if (run.done == count) continue;
    }
    // Entry pos alone: the part takes no more (its result opens the next
    // one), the handler has no RunBatch, or the entry is one RunBatch
    // leaves to Run (a large request).
    size_t cap;
    char* out = w->NextPayload(&cap);
    size_t len = 0;
    const absl::Status st =
        RunHandler(c, m, m->id, run_requests_[pos], start_ns,
                   run_deadlines_[pos], s, seq, out, cap, &len,
                   /*in_batch=*/true);
    CommitResult(c, s, seq, hot, w, part_start, st, len);
    ++pos;
  }
  return k;
}

void ServerWorker::CountRun(const char* entries, uint32_t n, int64_t start_ns) {
  if (method_counters_ == nullptr) return;
  // One clock read for the run: each of its calls is counted at the run's
  // average time. As in CountServed, the run's last call waits in served_.
  const int64_t took =
      HandlerTime(start_ns, ctx_.method(), "batch run of the sync handler");
  const uint64_t each = static_cast<uint64_t>(std::max<int64_t>(took / n, 0));
  MethodCounters* m = last_counters_;
  JoinServedRun(m);
  if (n > 1) m->latency_ns.CountBucket(each, n - 1);
  // Result sizes, a bucket count per stretch of equal sizes.
  uint64_t bytes = 0;
  uint32_t size = 0;
  uint32_t same_size = 0;
  uint32_t same = 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(&size, entries, sizeof(size));
    entries += wire::EntryBytes(size);
    bytes += size;
    if (i + 1 == n) break;
    if (size != same_size || same == 0) {
      if (same > 0) m->result_bytes.CountBucket(same_size, same);
      same_size = size;
      same = 0;
    }
    ++same;
  }
  if (same > 0) m->result_bytes.CountBucket(same_size, same);
  served_.calls += n;
  served_.latency_sum += each * n;
  served_.bytes_sum += bytes;
  served_.last_latency = each;
  served_.last_bytes = size;
}

void ServerWorker::NoteStall(absl::string_view method, const char* what,
                             int64_t ns) {
  counters_->worker_stalls.fetch_add(1, std::memory_order_relaxed);
  // How much of it the worker spent waiting for a CPU, at least: what its
  // run delay grew by since the baseline, less the time from the baseline
  // to the handler's start.
  int64_t waited = -1;  // Unknown.
  int64_t delay_now;
  const int64_t now = UnixNanos();
  if (delay_base_at_ns_ != 0 && run_delay_.Read(&delay_now)) {
    waited = RunDelay::WaitedAtLeast(delay_now - delay_base_ns_,
                                     now - delay_base_at_ns_, ns);
    delay_base_ns_ = delay_now;
    delay_base_at_ns_ = now;
  }
  const size_t others = conns_.empty() ? 0 : conns_.size() - 1;
  if (waited >= 0 && 2 * waited >= ns) {
    // Preempted: the handler is not at fault, and its method's warning
    // stays for a stall that is its own.
    counters_->worker_stalls_preempted.fetch_add(1, std::memory_order_relaxed);
    if (!preempt_warned_) {
      preempt_warned_ = true;
      LOG(WARNING)
          << "rfrpc server: worker " << index_ << " was held "
          << absl::StrFormat("%.1f", ns / 1e6) << " ms by the " << what << " "
          << method << ", of which it waited at least "
          << absl::StrFormat("%.1f", waited / 1e6)
          << " ms for a CPU that another thread had (the worker's "
          << others
          << " other connection(s) waited too). The host is oversubscribed "
             "where this worker runs: give server workers CPUs of their own "
             "(fewer busy-polling threads than cores, or pinning). Said once "
             "per worker; ServerStats::worker_stalls_preempted counts each.";
    }
  } else if (stall_warned_.emplace(method).second) {
    LOG(WARNING)
        << "rfrpc server: worker " << index_ << " ran the " << what << " "
        << method << " for " << absl::StrFormat("%.1f", ns / 1e6)
        << " ms; the worker's " << others
        << " other connection(s) could not be served meanwhile"
        << (waited >= 0 ? absl::StrFormat(" (it waited for a CPU for at "
                                          "least %.1f ms of it)",
                                          waited / 1e6)
                        : std::string())
        << ". A handler that "
           "blocks belongs off the worker: option (rfrpc.handler) = "
           "HANDLER_BLOCKING in the .proto (or Service::SetBlocking), or "
           "HANDLER_ASYNC finishing from another thread. Said once per method "
           "and worker; ServerStats::worker_stalls counts each such call or "
           "batch run (ServerOptions::stall_warning, --rfrpc_stall_warning_ms).";
  }
  // The warning's own time is not the next handler's.
  last_handler_end_ns_ = UnixNanos();
}

absl::Status ServerWorker::ResultTooLarge(size_t len, size_t cap) {
  // The client reads the size back (wire::ResultTooLargeBytes).
  return absl::ResourceExhaustedError(wire::ResultTooLargeMessage(len, cap));
}

size_t ServerWorker::PlaceError(ResultPartWriter* w, const absl::Status& st) {
  counters_->calls_failed.fetch_add(1, std::memory_order_relaxed);
  size_t cap;
  char* out = w->NextPayload(&cap);
  const size_t len =
      std::min({st.message().size(), cap, wire::kBatchErrorBytes});
  std::memcpy(out, st.message().data(), len);
  return len;
}

void ServerWorker::PublishPart(ServerConnection* c, uint32_t s, uint32_t seq,
                               uint16_t hot, const ResultPartWriter::Part& part,
                               int64_t* part_start) {
  char* resp = c->region->data() + c->layout.ResponseSlotOffset(s);
  // Counted per part (one shared atomic add), before the client can see it.
  counters_->calls.fetch_add(part.entries, std::memory_order_relaxed);
  const bool large = part.size > options_.large_result_bytes;
  const int64_t now = UnixNanos();
  const size_t framed = wire::PublishResponse(
      resp + part.offset, part.size, seq,
      wire::EncodeServerTime(now - *part_start), 0,
      static_cast<uint16_t>(wire::kResponseFlagBatch | hot |
                            (large ? wire::kResponseFlagPushed : 0)),
      part.entries);
  FinishPublish(c, s, part.offset, framed, large, wire::kBatchModeBucket);
  *part_start = now;
}

void ServerWorker::FinishPublish(ServerConnection* c, uint32_t s, size_t offset,
                                 size_t framed, bool large, uint32_t bucket,
                                 bool notify) {
  // The other half of the client's Dekker pair in ClientConnection::SetMode:
  // publish, full fence, then read the mode flag. Either the client's fetch
  // after its flag WRITE sees the result, or we see the flag and WRITE back.
  transport::FullFence();
  const uint64_t mode = transport::LoadAcquire64(c->region->data());
  if (large || notify || ((mode >> bucket) & 1) != 0) {
    Push(c, s, offset, framed, notify);
  }
}

void ServerWorker::Push(ServerConnection* c, uint32_t s, size_t offset,
                        size_t framed, bool notify) {
  // Pushes to one connection made back to back go out as one post list
  // (one doorbell): results of calls finished elsewhere taken in one round
  // (async and offloaded handlers), the parts of a batch behind one. Another
  // connection's push, a full list, a handler about to run on this worker
  // (a result never waits for another call's handler) or the end of the
  // round (FlushPushes) posts them.
  if (push_conn_ != c || push_chain_.size() == kMaxPushChain) FlushPushes();
  push_conn_ = c;
  const wire::ConnectionLayout& l = c->layout;
  transport::WorkRequest wr = transport::WorkRequest::Write(
      PushId(c->bell, s), c->region.get(), l.ResponseSlotOffset(s) + offset,
      static_cast<uint32_t>(framed), c->client_reply,
      l.ReplySlotOffset(s) + offset);
  // Signaled, so the response buffer is not reused while the NIC still reads
  // it (Loop skips the slot until the completion). A small result goes
  // inline (copied at post time), one DMA read fewer for the NIC.
  wr.signaled = true;
  wr.inline_write = framed <= c->conn->max_inline();
  // A sleeping caller's queue is woken once the result has landed.
  wr.notify = notify;
  if (notify) counters_->push_notifies.fetch_add(1, std::memory_order_relaxed);
  ++c->push_in_flight[s];
  ++c->pushes;
  ++pushes_in_flight_;
  c->push_posted_ns[s] = UnixNanos();
  push_chain_.push_back(wr);
}

void ServerWorker::FlushPushes() {
  if (push_chain_.empty()) return;
  ServerConnection* c = push_conn_;
  const size_t n = push_chain_.size();
  absl::Status st = c->conn->Post(absl::MakeConstSpan(push_chain_));
  if (!st.ok()) {
    for (const transport::WorkRequest& wr : push_chain_) {
      --c->push_in_flight[PushSlot(wr.wr_id)];
      --c->pushes;
    }
    // pushes_in_flight_ stays: a provider may still queue a flushed
    // completion for them (shm does). Over-counting only means polling.
    c->conn->Fail(st);  // Liveness check closes it.
  } else {
    size_t inlined = 0;
    for (const transport::WorkRequest& wr : push_chain_) {
      inlined += wr.inline_write ? 1 : 0;
    }
    counters_->rdma_writes.fetch_add(n, std::memory_order_relaxed);
    counters_->push_doorbells.fetch_add(1, std::memory_order_relaxed);
    if (inlined > 0) {
      counters_->inline_writes.fetch_add(inlined, std::memory_order_relaxed);
    }
    counters_->calls_server_reply.fetch_add(n, std::memory_order_relaxed);
  }
  push_chain_.clear();
  push_conn_ = nullptr;
}

}  // namespace internal
}  // namespace rfrpc
