// Copyright 2026 The rfrpc Authors.
//
// Channel set-up, call routing, the progress thread for async calls, and
// reconnection after a lost server.

#include "rpc/channel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "rpc/batch_policy.h"
#include "rpc/client_connection.h"
#include "base/clock.h"
#include "base/status_macros.h"
#include "rpc/method_counters.h"
#include "rpc/progress_engine_testing.h"
#include "rpc/stats_registry.h"
#include "rpc/waiter.h"
#include "rpc/wire_format.h"
#include "base/mutex.h"

namespace rfrpc {
namespace {

using internal::ClientConnection;
using internal::PendingCall;
using internal::RequestBatcher;
using internal::Waiter;

// A sync caller's long waits for a call whose push will wake it. The push
// ends the sleep, so the timeout is only what the caller would otherwise
// notice late: its deadline (never slept past), a cancellation or a
// failed connection (up to kMaxPushSleepNs). So it sleeps 8 times the
// timed pause, 8 times fewer wake-ups.
class PushSleeper final : public Waiter::Sleeper {
 public:
  static constexpr int64_t kStretch = ClientConnection::PushSleepStretch();
  static constexpr int64_t kMaxPushSleepNs = 10 * 1000 * 1000;

  // A call with a context may be cancelled from another thread, which only
  // Progress notices: its sleeps stay the timed pause (still ended by the
  // push).
  PushSleeper(const PendingCall* call, ClientConnection* conn,
              std::vector<PendingCall*>* finished)
      : call_(call), conn_(conn), finished_(finished) {}
  void Sleep(int64_t ns) override {
    const int64_t left = call_->deadline_ns - internal::UnixNanos();
    const int64_t stretched =
        call_->ctx != nullptr ? ns : std::min(ns * kStretch, kMaxPushSleepNs);
    conn_->SleepForPush(
        std::clamp<int64_t>(stretched, 1000, std::max<int64_t>(left, 1000)),
        finished_);
  }

 private:
  const PendingCall* const call_;
  ClientConnection* const conn_;
  std::vector<PendingCall*>* const finished_;
};

// Don't retry a failed connection more often than this.
constexpr absl::Duration kReconnectInterval = absl::Milliseconds(100);

// The channel whose progress thread this is (null on other threads).
thread_local const void* driving_channel = nullptr;

// `t` in Unix ns, clamped to the int64 range (INT64_MAX: never).
int64_t UnixNanosSaturated(absl::Time t) {
  if (t >= absl::FromUnixNanos(INT64_MAX)) return INT64_MAX;
  if (t <= absl::FromUnixNanos(INT64_MIN)) return INT64_MIN;
  return absl::ToUnixNanos(t);
}

// The deadline `timeout_ns` after `start_ns` (Unix ns), saturating at the
// int64 range: a timeout too long to represent, such as an infinite one
// (absl::ToInt64Nanoseconds(absl::InfiniteDuration()) is INT64_MAX), gives
// INT64_MAX: never.
int64_t DeadlineAfter(int64_t start_ns, int64_t timeout_ns) {
  int64_t sum;
  if (__builtin_add_overflow(start_ns, timeout_ns, &sum)) {
    return timeout_ns > 0 ? INT64_MAX : INT64_MIN;
  }
  return sum;
}

// Async calls' PendingCall objects, kept by the thread that ran their
// callbacks for its next CallAsync (which, in a closed loop, is the same
// thread): a call then costs no heap allocation. Bounded; freed at thread
// exit. `recycled_calls_gone` is trivially destructible, so it can still be
// read after the list's destructor has run (callbacks run from another
// thread_local's or a static's destructor then just delete).
constexpr size_t kKeptCalls = 256;
thread_local bool recycled_calls_gone = false;
struct RecycledCalls {
  std::vector<PendingCall*> calls;
  ~RecycledCalls() {
    recycled_calls_gone = true;
    for (PendingCall* c : calls) delete c;
  }
};
thread_local RecycledCalls recycled_calls;

PendingCall* NewAsyncCall() {
  if (recycled_calls_gone || recycled_calls.calls.empty()) {
    return new PendingCall;
  }
  PendingCall* c = recycled_calls.calls.back();
  recycled_calls.calls.pop_back();
  return c;
}

// REQUIRES: nothing refers to `call` any more.
void RecycleAsyncCall(PendingCall* call) {
  if (recycled_calls_gone || recycled_calls.calls.size() >= kKeptCalls) {
    delete call;
    return;
  }
  // Back to a default-constructed PendingCall, whatever fields it grows.
  call->~PendingCall();
  new (call) PendingCall;
  recycled_calls.calls.push_back(call);
}

class ChannelImpl;

// Test hooks (progress_engine_testing.h).
std::atomic<int64_t> wake_cost_for_test{0};
std::atomic<uint64_t> idle_sleeps_for_test{0};

// The process's progress thread: one thread advances the async calls of
// every channel that has a progress thread (ChannelOptions::progress_thread)
// and runs their callbacks. A thread per channel cost a core's worth of
// wake-ups once thousands of channels had made an async call (each idle
// one woke every 5 ms), and thousands of spinning threads when their calls
// were in flight: round robin over 1 024 channels, 32 calls in flight,
// went at 212-490 calls/s (benchmarks/RESULTS.md, 2026-12-07 20:50).
//
// A channel is on the active list while it has calls to advance
// (ChannelImpl::engine_queued_): a pass drives only those, so its cost
// follows the channels in use, not the channels open. Created on first use
// and never destroyed (a channel may outlive static destructors).
class ProgressEngine {
 public:
  static ProgressEngine& Get() {
    ProgressEngine* e = instance_.load(std::memory_order_acquire);
    return e != nullptr ? *e : Create();
  }
  // `ch` has calls to advance: on the active list until a pass finds it
  // has none. Called by the one that set ch->engine_queued_.
  void Activate(ChannelImpl* ch);
  // Off the active list, once no pass drives it (not waited for on the
  // engine's own thread, where a callback is destroying its channel).
  void Detach(ChannelImpl* ch, bool on_engine);
  // A call started: the engine's wait starts again from spinning.
  void Poke() { pokes_.fetch_add(1, std::memory_order_relaxed); }

  // The engine's sleep on `conn`'s queue until a push
  // (ChannelImpl::WaitForPushes): begins only if no channel was activated
  // since the pass copied the list at `version`, and until it ends an
  // Activate interrupts it (another channel's call must not wait for it).
  bool BeginPushSleep(internal::ClientConnection* conn, uint64_t version);
  void EndPushSleep();

  // The engine's timed pauses in a long wait: ended by an Activate.
  class Sleeper final : public internal::Waiter::Sleeper {
   public:
    explicit Sleeper(ProgressEngine* engine) : engine_(engine) {}
    void set_version(uint64_t v) { version_ = v; }
    uint64_t version() const { return version_; }
    void Sleep(int64_t ns) override;

   private:
    ProgressEngine* const engine_;
    uint64_t version_ = 0;
  };

 private:
  ProgressEngine() {
    std::thread([this] { Loop(); }).detach();
  }
  void Loop();
  static ProgressEngine& Create();
  // What waking the engine costs its caller: the least of the last
  // kWakeCosts wakes (a wake that preempted its caller is no measure).
  int64_t WakeCost() const;

  // The process's engine, created by the first async call. A child of
  // fork() has none of its parent's threads: it starts its own (the
  // parent's, its lock maybe held at the fork, is left alone).
  static std::atomic<ProgressEngine*> instance_;

  Mutex mu_;
  std::condition_variable wake_cv_;  // Loop's sleep with nothing active.
  std::vector<ChannelImpl*> active_ ABSL_GUARDED_BY(mu_);
  uint64_t activations_ ABSL_GUARDED_BY(mu_) = 0;
  // The connection the engine sleeps on until a push (BeginPushSleep).
  internal::ClientConnection* push_sleep_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Bumped (under mu_) by every change of active_: a pass takes a new copy
  // of the list only when it moved, so a pass over an unchanged list takes
  // no lock.
  std::atomic<uint64_t> list_version_{0};
  // The channel a pass is driving (a hazard pointer) and Detach's count:
  // the engine publishes current_ and then reads detaches_, Detach bumps
  // detaches_ and then reads current_ (both sequentially consistent), so
  // either the engine sees the detach and checks the list under mu_, or
  // Detach sees the channel driven and waits for the step to end.
  std::atomic<ChannelImpl*> current_{nullptr};
  std::atomic<uint64_t> detaches_{0};
  std::atomic<uint64_t> pokes_{0};
  // Whether Loop sleeps on wake_cv_ with nothing to drive and no Activate
  // has claimed its wake yet.
  bool idle_sleep_ ABSL_GUARDED_BY(mu_) = false;
  // What the last Activates that woke the engine from that sleep spent in
  // the wake (WakeCost), and the bounds of Loop's linger.
  static constexpr int kWakeCosts = 8;
  std::atomic<int64_t> wake_costs_ns_[kWakeCosts] = {};
  std::atomic<uint32_t> wake_costs_next_{0};
  static constexpr int64_t kLingerWakeCostNs = 20'000;
  static constexpr int64_t kMaxLingerNs = 250'000;
};

class ChannelImpl final : public Channel,
                          public internal::ChannelStatsSource {
 public:
  ChannelImpl(std::string address, ChannelOptions options)
      : busy_wait_(options.busy_wait),
        default_timeout_ns_(absl::ToInt64Nanoseconds(options.default_timeout)),
        call_counters_(options.method_stats),
        address_(std::move(address)),
        options_(std::move(options)),
        fetch_params_(Pack(options_.fetch.retries, options_.fetch.size)) {
    for (auto& h : hot_lines_) h.store(this, std::memory_order_relaxed);
  }

  // May run on the progress engine's thread, from a callback that dropped
  // the last reference: driving_channel (reset here) tells RunCallbacks
  // and the engine, below that callback on the stack, that `this` is gone.
  ~ChannelImpl() override {
    const bool on_driver = driving_channel == this;
    // A CallAsync whose call finished (and whose callback is running this)
    // may still be on its way out.
    while (async_entries_.load(std::memory_order_acquire) != 0) {
      std::this_thread::yield();
    }
    {
      MutexLock lock(&driver_mu_);
      // Set under driver_mu_, so the engine cannot miss it between its
      // check and a sleep on a connection's queue.
      stopping_.store(true, std::memory_order_release);
      if (driver_push_sleep_ != nullptr) {
        driver_push_sleep_->InterruptPushSleep();
      }
    }
    if (driver_running_.load(std::memory_order_acquire)) {
      ProgressEngine::Get().Detach(this, on_driver);
    }
    // Fail what is still outstanding so no callback is lost.
    std::vector<PendingCall*> finished;
    for (size_t i = 0, n = NumSlots(); i < n; ++i) {
      std::shared_ptr<ClientConnection> c = Get(SlotAt(i));
      if (c) c->Abort(absl::CancelledError("channel destroyed"), &finished);
    }
    RunCallbacks(nullptr, &finished);
    if (on_driver) driving_channel = nullptr;
    // Its counts, cancellations included, stay in the address's totals.
    // First: until then a snapshot (rpc/stats.h) may read the connections.
    internal::RetireChannel(this);
    // The connections go while counters_, which their destructors fold
    // their counts into, still exists (owned_slots_ is declared before it).
    driver_conns_.clear();
    MutexLock lock(&grow_mu_);
    owned_slots_.clear();
  }

  absl::Status Init() {
    transport::ProviderOptions po = options_.provider_options;
    if (po.address_hint.empty()) po.address_hint = transport::AddressHost(address_);
    RFRPC_ASSIGN_OR_RETURN(provider_, transport::Provider::Open(options_.provider, po));
    int count = options_.connections;
    std::vector<std::unique_ptr<ConnSlot>> slots;
    if (count <= 0) {
      // One per server worker: the first connection tells how many.
      RFRPC_ASSIGN_OR_RETURN(auto first, Open(0));
      const int n = first->server_workers();
      slots.push_back(std::make_unique<ConnSlot>(std::move(first), 0));
      for (int w = 1; w < n; ++w) {
        RFRPC_ASSIGN_OR_RETURN(auto c, Open(w));
        slots.push_back(std::make_unique<ConnSlot>(std::move(c), w));
      }
    } else {
      for (int i = 0; i < count; ++i) {
        RFRPC_ASSIGN_OR_RETURN(auto c, Open(-1));
        slots.push_back(std::make_unique<ConnSlot>(std::move(c), -1));
      }
    }
    server_workers_.store(Get(slots[0].get())->server_workers(),
                          std::memory_order_release);
    {
      MutexLock lock(&grow_mu_);
      AppendSlotsLocked(std::move(slots));
    }
    internal::RegisterChannel(this, address_);
    return absl::OkStatus();
  }

  absl::Status Call(uint32_t method_id,
                    const google::protobuf::MessageLite& request,
                    google::protobuf::MessageLite* response,
                    ClientContext* ctx) override {
    PendingCall call;
    call.sync = true;
    if (Prepare(&call, method_id, response, ctx)) {
      return Fail(&call, CancelledAtStart());
    }
    const bool cold = StartsCold(call.start_ns);
    const size_t i = Pick(ctx);
    SlotUse use(SlotAt(i));
    ClientConnection* conn = use.conn();
    // Held only when this call reconnects (Route): the connection it gets
    // may be replaced again before the call ends.
    std::shared_ptr<ClientConnection> routed;
    absl::Status s;
    if (conn->failed()) {
      s = Route(i, &routed);
      if (!s.ok()) return Fail(&call, s);
      conn = routed.get();
    }
    std::vector<PendingCall*> finished;
    Waiter waiter(busy_wait_);
    for (;;) {
      s = conn->Start(&call, request);
      if (s.ok()) break;
      if (s.code() != absl::StatusCode::kResourceExhausted) {
        return Fail(&call, s);
      }
      // Every slot busy: help the connection along, then try again.
      if (internal::UnixNanos() > call.deadline_ns) {
        return Fail(&call, absl::DeadlineExceededError(
                               "deadline exceeded waiting for a free slot"));
      }
      if (ctx != nullptr && ctx->cancelled()) {
        return Fail(&call, CancelledAtStart());
      }
      if (!conn->Progress(&finished)) waiter.Wait();
      RunCallbacks(conn, &finished);
    }
    waiter.Restart();
    // A long call's push wakes its caller (PendingCall::notify).
    PushSleeper push_sleeper(&call, conn, &finished);
    while (!call.finished.load(std::memory_order_acquire)) {
      if (conn->Progress(&finished)) {
        waiter.Reset();
      } else {
        waiter.Wait(call.notify ? &push_sleeper : nullptr);
      }
      RunCallbacks(conn, &finished);
    }
    const void* counted = CountSyncFinish(call);
    if (ABSL_PREDICT_FALSE(!call.status.ok()) &&
        driver_running_.load(std::memory_order_relaxed) &&
        conn->NeedsDriver()) {
      // It left its slot abandoned (a deadline or a cancel before the
      // answer): the progress engine frees it when the answer lands, as it
      // does an async call's, rather than the connection's next call.
      WakeDriver();
    }
    if (cold) {
      // Hints for the next call, which will likely find the channel cold
      // too.
      conn->PublishHotLines();
      if (counted != nullptr)
        method_hint_.store(counted, std::memory_order_relaxed);
    }
    return call.status;
  }

  void CallAsync(uint32_t method_id,
                 const google::protobuf::MessageLite& request,
                 google::protobuf::MessageLite* response, ClientContext* ctx,
                 std::function<void(absl::Status)> done) override {
    PendingCall* call = NewAsyncCall();
    call->sync = false;
    // A new or recycled call's callback is empty: a swap, which a move
    // assignment is plus a temporary built and destroyed.
    call->done.swap(done);
    const bool cancelled = Prepare(call, method_id, response, ctx);
    StartsCold(call->start_ns);
    if (cancelled) {
      (void)Fail(call, CancelledAtStart());
      std::vector<PendingCall*> one{call};
      RunFinished(nullptr, &one);
      return;
    }
    // Until it returns, this call may finish on the progress thread and its
    // callback destroy the channel: ~ChannelImpl waits for async_entries_
    // to drop to 0. So no callback runs in here: the calls that finish here
    // (this one if it fails to start, a reconnected connection's leftovers)
    // are delivered after the count drops, touching nothing of the channel.
    async_entries_.fetch_add(1, std::memory_order_relaxed);
    std::vector<PendingCall*> finished_here;
    const size_t i = Pick(ctx);
    absl::Status s;
    bool started = false;
    {
      // Gone before async_entries_ drops (the channel may go then). No
      // callback runs in here.
      SlotUse use(SlotAt(i));
      if (!use.conn()->failed()) {
        s = StartOrEnqueue(use.conn(), call, request);
        started = true;
      }
    }
    if (!started) {
      std::shared_ptr<ClientConnection> conn;
      s = Route(i, &conn, &finished_here);
      if (s.ok()) s = StartOrEnqueue(conn.get(), call, request);
    }
    if (!s.ok()) {
      // Never started: nothing but this thread can finish it.
      (void)Fail(call, s);
      finished_here.push_back(call);
    } else if (options_.progress_thread) {
      // The process's progress engine drives the channel from its first
      // async call: a channel used only for sync calls (its callers drive
      // their own connections) is never on its lists.
      if (!driver_running_.load(std::memory_order_relaxed)) {
        driver_running_.store(true, std::memory_order_release);
      }
      WakeDriver();
    }
    for (const PendingCall* c : finished_here) CountFinished(*c);
    async_entries_.fetch_sub(1, std::memory_order_release);
    // From here on nothing of the channel is touched.
    for (PendingCall* c : finished_here) Deliver(c);
  }

  bool Poll() override {
    std::vector<PendingCall*> finished;
    bool progressed = false;
    for (size_t i = 0, n = NumSlots(); i < n; ++i) {
      std::shared_ptr<ClientConnection> c = Get(SlotAt(i));
      if (!c || !c->NeedsDriver()) continue;
      progressed |= c->Progress(&finished);
      RunCallbacks(c.get(), &finished);
    }
    return progressed;
  }

  int server_workers() const override {
    // The server has workers the channel could not connect to yet: try
    // again every kReconnectInterval, from whoever routes by the count.
    if (ABSL_PREDICT_FALSE(follow_workers_.load(std::memory_order_relaxed) !=
                           0)) {
      const_cast<ChannelImpl*>(this)->RetryFollow();
    }
    return server_workers_.load(std::memory_order_acquire);
  }
  int connections() const override { return static_cast<int>(NumSlots()); }
  RpcMode connection_mode(int i) const override {
    if (i < 0 || static_cast<size_t>(i) >= NumSlots()) return options_.mode;
    std::shared_ptr<ClientConnection> c = Get(SlotAt(i));
    return c ? c->mode() : options_.mode;
  }

  absl::Status SetFetchParams(int retries, uint32_t fetch_size) override {
    // The bounds Channel::Create and the flags check, with their message.
    ChannelOptions probe = options_;
    probe.fetch.retries = retries;
    probe.fetch.size = fetch_size;
    absl::Status valid = ValidateChannelOptions(probe);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("SetFetchParams: ", valid.message()));
    }
    fetch_params_.store(Pack(retries, fetch_size));
    // A connection that Route installs meanwhile takes them there (it reads
    // them again under its slot's lock, which this takes next).
    for (size_t i = 0, n = NumSlots(); i < n; ++i) {
      std::shared_ptr<ClientConnection> c = Get(SlotAt(i));
      if (c) c->SetFetchParams(retries, fetch_size);
    }
    return absl::OkStatus();
  }
  int retries() const override { return Retries(fetch_params_.load()); }
  uint32_t fetch_size() const override {
    return FetchSize(fetch_params_.load());
  }

  int batch_size() const override {
    switch (options_.batching.mode) {
      case BatchMode::kOff:
        return 0;
      case BatchMode::kAuto: {
        // Each connection's sizer publishes its N as it decides.
        const int n = counters_.batch_size.load(std::memory_order_relaxed);
        return n > 0 ? n : RequestBatcher::InitialSize(options_.batching);
      }
      default:
        return RequestBatcher::InitialSize(options_.batching);
    }
  }

  ChannelStats stats() const override {
    ChannelStats st;
    st.calls = counters_.calls.load();
    st.calls_remote_fetch = counters_.calls_remote_fetch.load();
    st.calls_server_reply = counters_.calls_server_reply.load();
    st.calls_failed = counters_.calls_failed.load();
    st.rdma_writes = counters_.rdma_writes.load();
    st.rdma_reads = counters_.rdma_reads.load();
    st.fetches = counters_.fetches.load();
    st.switches_to_server_reply = counters_.switches_to_server_reply.load();
    st.switches_to_remote_fetch = counters_.switches_to_remote_fetch.load();
    for (int i = 0; i < 16; ++i) {
      st.fetch_histogram[i] = counters_.fetch_histogram[i].load();
    }
    st.server_time_ns = counters_.server_time_ns.load();
    // Batches of one sent plain are counted apart, per connection (they
    // join batches and batched_calls below).
    st.batches_plain = counters_.batches_plain.load();
    st.batches = counters_.batches.load();
    st.batched_calls = counters_.batched_calls.load();
    st.flushes_full = counters_.flushes_full.load();
    st.flushes_bytes = counters_.flushes_bytes.load();
    st.flushes_timeout = counters_.flushes_timeout.load();
    st.flushes_idle = counters_.flushes_idle.load();
    st.groups_sent_ahead = counters_.groups_sent_ahead.load();
    st.outstanding_peak = counters_.outstanding_peak.load();
    st.result_parts = counters_.result_parts.load();
    st.publishes_delayed = counters_.publishes_delayed.load();
    st.calls_queued = counters_.calls_queued.load();
    st.send_queue_waits = counters_.send_queue_waits.load();
    // Fixed and adaptive modes' N, not only the sizer's (0 unbatched).
    st.batch_size = batch_size();
    st.sizer_k = counters_.sizer_k.load();
    st.sizer_adjustments = counters_.sizer_adjustments.load();
    st.fetched_call_fetches = counters_.fetched_call_fetches.load();
    st.rings = counters_.rings.load();
    st.rerings = counters_.rerings.load();
    st.notifies = counters_.notifies.load();
    st.hot_posts = counters_.hot_posts.load();
    st.push_sleeps = counters_.push_sleeps.load();
    st.calls_cancelled = counters_.calls_cancelled.load();
    st.cancel_writes = counters_.cancel_writes.load();
    {
      MutexLock lock(&counters_.closed_mu);
      st.work = counters_.closed_work;
    }
    int n = 0;
    for (size_t i = 0, slots = NumSlots(); i < slots; ++i) {
      const ConnSlot* slot = SlotAt(i);
      // Replaced connections not yet freed still hold their counts (their
      // destructors fold them into counters_).
      std::vector<std::shared_ptr<ClientConnection>> retired;
      std::shared_ptr<ClientConnection> c;
      {
        MutexLock lock(&slot->mu);
        c = slot->conn;
        retired = slot->retired;
      }
      for (const auto& r : retired) {
        r->AddCallCounts(&st);
        r->AddWorkCounts(&st.work);
      }
      if (!c) continue;
      c->AddCallCounts(&st);
      c->AddWorkCounts(&st.work);
      st.fetch_rtt_ns += absl::ToDoubleNanoseconds(c->fetch_rtt());
      st.fetch_delay_ns += absl::ToDoubleNanoseconds(c->fetch_delay());
      st.slots_in_use += c->busy_slots();
      ++n;
    }
    if (n > 0) {
      st.fetch_rtt_ns /= n;
      st.fetch_delay_ns /= n;
    }
    st.batches += st.batches_plain;
    st.batched_calls += st.batches_plain;
    return st;
  }

  std::vector<MethodStats> method_stats() const override {
    return call_counters_.Snapshot();
  }

 private:
  // A connection that may be replaced after a failure.
  //
  // A call uses the slot's connection through a plain pointer (SlotUse):
  // no lock and no shared_ptr copy a call, on lines a client cycling
  // through thousands of channels finds cold. A connection Route replaces
  // is retired, not destroyed, until no call can hold it any more.
  struct ConnSlot {
    ConnSlot(std::unique_ptr<ClientConnection> c, int w)
        : live(c.get()), conn(std::move(c)), worker(w) {}
    // Calls between SlotUse's load of `live` and their last use of it.
    std::atomic<int> users{0};
    std::atomic<ClientConnection*> live;  // == conn.get().
    std::atomic<bool> has_retired{false};
    mutable Mutex mu;
    std::shared_ptr<ClientConnection> conn ABSL_GUARDED_BY(mu);
    // Replaced connections (failed, their calls aborted) that a call may
    // still hold; destroyed once `users` is seen at 0 (SlotUse).
    std::vector<std::shared_ptr<ClientConnection>> retired ABSL_GUARDED_BY(mu);
    int worker;  // Requested worker (-1: any).
    absl::Time last_attempt ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  };

  // Holds a slot's current connection for one call: the pointer stays valid
  // until the SlotUse goes, even if Route replaces the connection meanwhile.
  // The count is taken before the pointer is read, and Route publishes the
  // new connection before the retired one can be freed (both sequentially
  // consistent), so a call that counted itself after the count was seen at
  // 0 reads the new connection.
  class SlotUse {
   public:
    explicit SlotUse(ConnSlot* slot) : slot_(slot) {
      slot_->users.fetch_add(1, std::memory_order_seq_cst);
      conn_ = slot_->live.load(std::memory_order_seq_cst);
    }
    ~SlotUse() {
      if (slot_->users.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
          slot_->has_retired.load(std::memory_order_acquire)) {
        Reclaim(slot_);
      }
    }
    SlotUse(const SlotUse&) = delete;
    SlotUse& operator=(const SlotUse&) = delete;

    ClientConnection* conn() const { return conn_; }

   private:
    ConnSlot* const slot_;
    ClientConnection* conn_;
  };

  // Frees the slot's retired connections if no call holds one.
  static void Reclaim(ConnSlot* slot) {
    std::vector<std::shared_ptr<ClientConnection>> gone;
    {
      MutexLock lock(&slot->mu);
      if (slot->users.load(std::memory_order_seq_cst) != 0) return;
      gone.swap(slot->retired);
      slot->has_retired.store(false, std::memory_order_release);
    }
    // Destroyed here, outside the lock (a destructor folds counts into the
    // channel's and closes the transport connection).
  }

  absl::StatusOr<std::unique_ptr<ClientConnection>> Open(int worker) {
    ChannelOptions opts = options_;
    const uint64_t params = fetch_params_.load();
    opts.fetch.retries = Retries(params);
    opts.fetch.size = FetchSize(params);
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<ClientConnection> conn,
                           ClientConnection::Connect(provider_.get(), address_,
                                                     worker, opts, &counters_));
    conn->SetHotLinesSink(hot_lines_);
    return conn;
  }

  size_t NumSlots() const { return num_slots_.load(std::memory_order_acquire); }
  // REQUIRES: i < a NumSlots() read before.
  ConnSlot* SlotAt(size_t i) const {
    return slots_.load(std::memory_order_acquire)[i];
  }

  // Publishes `more` after the slots there are (see num_slots_).
  void AppendSlotsLocked(std::vector<std::unique_ptr<ConnSlot>> more)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(grow_mu_) {
    const size_t old_n = owned_slots_.size();
    auto array = std::make_unique<ConnSlot*[]>(old_n + more.size());
    for (size_t i = 0; i < old_n; ++i) array[i] = owned_slots_[i].get();
    for (auto& slot : more) {
      array[owned_slots_.size()] = slot.get();
      owned_slots_.push_back(std::move(slot));
    }
    slots_.store(array.get(), std::memory_order_release);
    // Before the count and after it: the progress engine, which drops a
    // channel whose snapshot has nothing to advance, sees the change if a
    // call could have found the new slots (ProgressEngine::Loop).
    generation_.fetch_add(1, std::memory_order_seq_cst);
    num_slots_.store(owned_slots_.size(), std::memory_order_release);
    slot_arrays_.push_back(std::move(array));
    // The progress thread's snapshot of the connections is old.
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }

  // A per-worker channel whose reconnect found the server with `workers`
  // workers (it may have restarted with another --workers): the count
  // callers route by (server_workers()) follows, and connections to the
  // new workers are opened. With fewer workers, the slots of the workers
  // that are gone stay (a reconnect lands on a worker the server picks) and
  // callers routing by server_workers() no longer use them.
  void FollowServerWorkers(int workers) {
    if (workers <= 0) return;
    MutexLock lock(&grow_mu_);
    const int had = static_cast<int>(owned_slots_.size());
    std::vector<std::unique_ptr<ConnSlot>> more;
    for (int w = had; w < workers; ++w) {
      absl::StatusOr<std::unique_ptr<ClientConnection>> c = Open(w);
      if (!c.ok()) {
        // Callers keep routing by the count the channel can serve; the next
        // reconnect tries again.
        LOG(WARNING) << "rfrpc channel to " << address_ << ": the server now has "
                     << workers << " workers, but connecting to worker " << w
                     << " failed: " << c.status();
        break;
      }
      more.push_back(std::make_unique<ConnSlot>(std::move(*c), w));
    }
    const int reached = had + static_cast<int>(more.size());
    if (!more.empty()) {
      LOG(INFO) << "rfrpc channel to " << address_ << ": the server has "
                << workers << " workers now (had " << had
                << " connections); connected to workers " << had << ".."
                << reached - 1;
      AppendSlotsLocked(std::move(more));
    }
    // Workers not reached are tried again (RetryFollow): until then the
    // keys of their partitions would all go to the workers reached, which
    // own none of them, and no reconnect would come to try again.
    follow_retry_ns_.store(
        internal::UnixNanos() + absl::ToInt64Nanoseconds(kReconnectInterval),
        std::memory_order_relaxed);
    follow_workers_.store(reached < workers ? workers : 0,
                          std::memory_order_relaxed);
    // Release: a caller that reads the new count (acquire) finds the slots
    // it may pick.
    const int previous = server_workers_.exchange(
        std::min(workers, reached), std::memory_order_acq_rel);
    if (previous != workers && workers < had) {
      LOG(INFO) << "rfrpc channel to " << address_ << ": the server has "
                << workers << " workers now (had " << previous << ")";
    }
  }

  // FollowServerWorkers again for the count it could not reach, once
  // kReconnectInterval has passed since it tried; one caller at a time.
  void RetryFollow() {
    int64_t due = follow_retry_ns_.load(std::memory_order_relaxed);
    const int64_t now = internal::UnixNanos();
    if (now < due ||
        !follow_retry_ns_.compare_exchange_strong(
            due, now + absl::ToInt64Nanoseconds(kReconnectInterval),
            std::memory_order_relaxed)) {
      return;
    }
    const int workers = follow_workers_.load(std::memory_order_relaxed);
    if (workers != 0) FollowServerWorkers(workers);
  }

  static std::shared_ptr<ClientConnection> Get(const ConnSlot* slot) {
    MutexLock lock(&slot->mu);
    return slot->conn;
  }

  static absl::Status CancelledAtStart() {
    return absl::CancelledError(
        "call cancelled before it started (ClientContext::TryCancel)");
  }

  // Fills `call`; returns true if `ctx` is cancelled already (the call
  // must not start). Always inline: GCC's own choice flips with the size
  // of the callers (out of line it cost CallAsync ~20 instructions).
  ABSL_ATTRIBUTE_ALWAYS_INLINE bool Prepare(
      PendingCall* call, uint32_t method_id,
      google::protobuf::MessageLite* response, ClientContext* ctx) {
    call->method_id = method_id;
    call->response = response;
    call->ctx = ctx;
    call->start_ns = internal::UnixNanos();
    if (ctx != nullptr && ctx->deadline() != absl::InfiniteFuture()) {
      call->deadline_ns = UnixNanosSaturated(ctx->deadline());
    } else if (ctx != nullptr && ctx->timeout() != absl::InfiniteDuration()) {
      call->deadline_ns = DeadlineAfter(
          call->start_ns, absl::ToInt64Nanoseconds(ctx->timeout()));
    } else {
      call->deadline_ns = DeadlineAfter(call->start_ns, default_timeout_ns_);
    }
    return ctx != nullptr &&
           internal::ClientContextAccess::BindCancel(*ctx, &counters_.cancels);
  }

  absl::Status Fail(PendingCall* call, absl::Status s) {
    counters_.calls_failed.fetch_add(1, std::memory_order_relaxed);
    call->status = s;
    call->finished.store(true, std::memory_order_release);
    if (call->ctx != nullptr) {
      internal::ClientContextAccess::SetResult(*call->ctx, options_.mode, 0, 0,
                                                absl::ZeroDuration());
    }
    // Async: counted with its callback (RunCallbacks).
    if (call->sync) CountSyncFinish(*call);
    return s;
  }

  // Per-method counts of a sync call that is returning.
  // Returns the counters it updated (null: none; a prefetch hint).
  const void* CountSyncFinish(const PendingCall& call) {
    if (!call_counters_.enabled()) return nullptr;
    return call_counters_.Finished(
        call.method_id,
        call.status.ok() ? 0 : static_cast<int>(call.status.code()),
        FinishNs(call) - call.start_ns);
  }

  // Whether the call starting at `now_ns` finds the channel cold: no call
  // started on it for kColdAfterNs (a client cycling through many channels).
  // If so, prefetches what the call reads first, at once
  // (ClientConnection::SetHotLinesSink): the misses then overlap instead of
  // forming a chain. The start stamp is stored at most every kStampEveryNs,
  // so threads calling a hot channel do not all write its line.
  bool StartsCold(int64_t now_ns) {
    const int64_t last = last_start_ns_.load(std::memory_order_relaxed);
    if (now_ns - last < kStampEveryNs) return false;
    last_start_ns_.store(now_ns, std::memory_order_relaxed);
    if (now_ns - last < kColdAfterNs) return false;
    for (const auto& h : hot_lines_) {
      __builtin_prefetch(h.load(std::memory_order_relaxed), 1);
    }
    __builtin_prefetch(call_counters_.owners_line(), 1);
    __builtin_prefetch(method_hint_.load(std::memory_order_relaxed), 1);
    return true;
  }
  static constexpr int64_t kStampEveryNs = 2'000;
  static constexpr int64_t kColdAfterNs = 20'000;

  // When `call` finished: as its connection's progress round saw it, or
  // now if it never reached a connection.
  static int64_t FinishNs(const PendingCall& call) {
    return call.finish_ns != 0 ? call.finish_ns : internal::UnixNanos();
  }

  // Picks the call's connection, reconnecting a failed one if it is time.
  // The connection a call goes to: its shard's, else round robin.
  size_t Pick(ClientContext* ctx) {
    const size_t n = NumSlots();
    if (n == 1) return 0;  // No shared atomic add a call.
    if (ctx != nullptr && ctx->has_shard()) return ctx->shard() % n;
    return next_.fetch_add(1, std::memory_order_relaxed) % n;
  }

  // Starts `call` on `conn`, or queues it there if every slot is busy.
  static absl::Status StartOrEnqueue(ClientConnection* conn, PendingCall* call,
                                     const google::protobuf::MessageLite& request) {
    absl::Status s = conn->Start(call, request);
    // ok() is inline; code() is a call into Debian's libabsl_status.
    if (!s.ok() && s.code() == absl::StatusCode::kResourceExhausted) {
      request.SerializeToString(&call->queued_request);
      s = conn->Enqueue(call);
    }
    return s;
  }

  // Connection i, reconnecting it if it failed and it is time. The old
  // connection's calls fail with its status: their callbacks run here, or,
  // with `aborted`, are left there for the caller to run.
  absl::Status Route(size_t i, std::shared_ptr<ClientConnection>* out,
                     std::vector<PendingCall*>* aborted = nullptr) {
    ConnSlot* slot = SlotAt(i);
    std::shared_ptr<ClientConnection> old;
    absl::Status result;
    {
      MutexLock lock(&slot->mu);
      if (!slot->conn->failed()) {
        *out = slot->conn;
        return absl::OkStatus();
      }
      absl::Status s = slot->conn->status();
      const absl::Time now = absl::Now();
      if (now - slot->last_attempt < kReconnectInterval) {
        return absl::UnavailableError(
            absl::StrCat("connection to ", address_, " lost: ", s.message()));
      }
      slot->last_attempt = now;
      absl::StatusOr<std::unique_ptr<ClientConnection>> fresh =
          Open(slot->worker);
      if (!fresh.ok()) {
        return absl::UnavailableError(absl::StrCat(
            "connection to ", address_, " lost (", s.message(),
            ") and reconnecting failed: ", fresh.status().message()));
      }
      LOG(INFO) << "rfrpc channel reconnected to " << address_;
      // The count first, and the new workers' connections: a call that
      // finds this slot's new connection then routes by it (or, routed
      // just before, sees it changed: JakiroClient retries such a call).
      // Lock order: a slot's mu, then grow_mu_.
      if (options_.connections <= 0) {
        FollowServerWorkers((*fresh)->server_workers());
      }
      old = std::move(slot->conn);
      slot->conn = std::move(*fresh);
      // Before the new connection is seen, and after (below): see
      // AppendSlotsLocked.
      generation_.fetch_add(1, std::memory_order_seq_cst);
      slot->live.store(slot->conn.get(), std::memory_order_seq_cst);
      // Calls that read the old pointer may still use it (SlotUse).
      slot->retired.push_back(old);
      slot->has_retired.store(true, std::memory_order_release);
      // SetFetchParams may have run since Open read R and F: it reaches
      // this slot after this lock, or stored them before this load.
      const uint64_t params = fetch_params_.load();
      slot->conn->SetFetchParams(Retries(params), FetchSize(params));
      *out = slot->conn;
      result = s;
    }
    generation_.fetch_add(1, std::memory_order_acq_rel);
    // Whatever the old connection still had fails with its status.
    if (aborted != nullptr) {
      old->Abort(result, aborted);
      return absl::OkStatus();
    }
    std::vector<PendingCall*> finished;
    old->Abort(result, &finished);
    RunCallbacks(nullptr, &finished);
    return absl::OkStatus();
  }

  // Runs the callbacks of `finished` (async calls), in order, and empties it.
  // `conn` (may be null; not kept) is the connection that finished them: on
  // an auto-batching connection the sizer is then fed each successful
  // call's latency as its caller sees it, up to the start of its callback
  // (internal::CallbackLatencies, next to the batcher that defines it).
  void RunCallbacks(ClientConnection* conn,
                    std::vector<PendingCall*>* finished) {
    // Most progress rounds finish nothing. The check is inline: in one
    // function with the work below it came after that function's prologue
    // and before its epilogue (its frame holds CallbackLatencies' inline
    // buffers), ~25 instructions per empty round.
    if (!finished->empty()) RunFinished(conn, finished);
  }

  ABSL_ATTRIBUTE_NOINLINE void RunFinished(
      ClientConnection* conn, std::vector<PendingCall*>* finished) {
    const bool on_driver = driving_channel == this;
    internal::CallbackLatencies latencies(internal::UnixNanos);
    for (size_t i = 0; i < finished->size(); ++i) {
      PendingCall* call = (*finished)[i];
      CountFinished(*call);
      if (conn != nullptr && conn->TimesLatency(*call)) {
        latencies.Before(call->start_ns);
      }
      Deliver(call);
      if (on_driver && driving_channel != this) {
        // That callback destroyed the channel (see ~ChannelImpl): the
        // rest are delivered without touching it.
        for (size_t j = i + 1; j < finished->size(); ++j) {
          Deliver((*finished)[j]);
        }
        finished->clear();
        return;
      }
    }
    finished->clear();
    if (latencies.empty()) return;
    int64_t end = 0;
    const absl::Span<const int64_t> measured = latencies.Finish(&end);
    conn->RecordLatencies(measured, end);
  }

  // Counts a finished async call in the per-method counters; Deliver then
  // runs its callback.
  void CountFinished(const PendingCall& call) {
    if (!call_counters_.enabled()) return;
    call_counters_.Finished(
        call.method_id,
        call.status.ok() ? 0 : static_cast<int>(call.status.code()),
        FinishNs(call) - call.start_ns);
  }

  // Runs `call`'s callback and recycles it, touching nothing of the
  // channel: the callback may destroy it. The callback runs where it is and
  // the call is recycled after it: moving the callback out first cost a
  // std::function move and a second destruction every call. Out of line,
  // as it was before it got this small: tools/batch_instructions.sh counts
  // calls by their Deliver and measures it apart from RunCallbacks.
  ABSL_ATTRIBUTE_NOINLINE static void Deliver(PendingCall* call) {
    if (call->done) call->done(std::move(call->status));
    RecycleAsyncCall(call);
  }

  void WakeDriver() {
    // A call started by the engine itself (from a callback of this
    // channel) needs no wake-up: the engine looks at the channel's
    // connections again right after.
    // Nor one on a channel being destroyed (a callback of its own aborted
    // calls calling it again): it is off the engine's lists for good.
    if (driving_channel == this ||
        stopping_.load(std::memory_order_acquire)) {
      return;
    }
    ProgressEngine& engine = ProgressEngine::Get();
    engine.Poke();
    driver_wakes_.fetch_add(1, std::memory_order_relaxed);
    {
      MutexLock lock(&driver_mu_);
      // The engine may be asleep on a connection's queue until a push
      // (DriverPushSleeper): the new call needs it now.
      if (driver_push_sleep_ != nullptr) {
        driver_push_sleep_->InterruptPushSleep();
      }
    }
    if (!engine_queued_.exchange(true, std::memory_order_seq_cst)) {
      engine.Activate(this);
    }
  }

  // The connections as of now. Keeps each alive while the copy lives.
  std::vector<std::shared_ptr<ClientConnection>> Snapshot() const {
    std::vector<std::shared_ptr<ClientConnection>> conns;
    const size_t n = NumSlots();
    conns.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      std::shared_ptr<ClientConnection> c = Get(SlotAt(i));
      if (c) conns.push_back(std::move(c));
    }
    return conns;
  }

  // The progress thread's long waits when all it drives is one
  // connection's calls waiting for notifying pushes: it sleeps on that
  // connection's queue (ClientConnection::SleepForPush) instead of a timer,
  // so their callbacks run when the results land. A new async call ends the
  // sleep (WakeDriver).
  class DriverPushSleeper final : public Waiter::Sleeper {
   public:
    // `version`: the engine's list as its pass copied it (BeginPushSleep).
    DriverPushSleeper(ChannelImpl* ch, uint64_t version)
        : ch_(ch), version_(version) {}
    // `seen`: driver_wakes_ when the driver last looked at its connections;
    // the sleep ends by `deadline_ns` (Unix ns), the earliest call's.
    void set(ClientConnection* conn, uint64_t seen, int64_t deadline_ns,
             std::vector<PendingCall*>* finished) {
      conn_ = conn;
      seen_ = seen;
      deadline_ns_ = deadline_ns;
      finished_ = finished;
    }
    void Sleep(int64_t ns) override {
      {
        // A call started since the driver's look: no sleep. One started
        // from now on finds driver_push_sleep_ and interrupts the sleep
        // (WakeDriver counts, then takes the lock).
        MutexLock lock(&ch_->driver_mu_);
        if (ch_->driver_wakes_.load(std::memory_order_relaxed) != seen_ ||
            ch_->stopping_.load(std::memory_order_relaxed)) {
          return;
        }
        ch_->driver_push_sleep_ = conn_;
      }
      ProgressEngine& engine = ProgressEngine::Get();
      if (!engine.BeginPushSleep(conn_, version_)) {
        // Another channel was activated since the pass: drive it first.
        MutexLock lock(&ch_->driver_mu_);
        ch_->driver_push_sleep_ = nullptr;
        return;
      }
      const int64_t left = deadline_ns_ == INT64_MAX
                               ? INT64_MAX
                               : deadline_ns_ - internal::UnixNanos();
      conn_->SleepForPush(
          std::clamp<int64_t>(
              std::min(ns * PushSleeper::kStretch, PushSleeper::kMaxPushSleepNs),
              1000, std::max<int64_t>(left, 1000)),
          finished_);
      engine.EndPushSleep();
      MutexLock lock(&ch_->driver_mu_);
      ch_->driver_push_sleep_ = nullptr;
    }

   private:
    ChannelImpl* const ch_;
    const uint64_t version_;
    ClientConnection* conn_ = nullptr;
    uint64_t seen_ = 0;
    int64_t deadline_ns_ = INT64_MAX;
    std::vector<PendingCall*>* finished_ = nullptr;
  };

  // What one of the engine's passes did on a channel.
  struct DriveResult {
    int driven = 0;  // Connections that needed driving.
    ClientConnection* last = nullptr;
    bool progressed = false;
    bool completed = false;
    bool gone = false;  // A callback destroyed the channel.
    uint64_t wakes = 0;  // driver_wakes_ before the pass.
  };

  // The engine's pass over this channel: advances the async calls and
  // abandoned slots of each connection that has any, and runs their
  // callbacks. Works on a snapshot of the connections, taken again only
  // when Route has replaced one (generation_), so it takes no lock but the
  // connections' own. Engine thread only.
  DriveResult DriveRound(std::vector<PendingCall*>* finished) {
    const uint64_t g = generation_.load(std::memory_order_acquire);
    if (g != driver_generation_) {
      driver_generation_ = g;
      driver_conns_ = Snapshot();
    }
    DriveResult r;
    r.wakes = driver_wakes_.load(std::memory_order_relaxed);
    for (const auto& c : driver_conns_) {
      if (!c->NeedsDriver()) continue;
      ++r.driven;
      r.last = c.get();
      r.progressed |= c->Progress(finished);
      r.completed |= !finished->empty();
      RunCallbacks(c.get(), finished);
      // A callback destroyed the channel: `this` is gone.
      if (driving_channel != this) {
        r.gone = true;
        return r;
      }
    }
    return r;
  }

  // Whether any connection has calls or slots to advance. Engine thread
  // only, after DriveRound.
  bool NeedsDriving() const {
    if (stopping_.load(std::memory_order_acquire)) return false;
    for (const auto& c : driver_conns_) {
      if (c->NeedsDriver()) return true;
    }
    return generation_.load(std::memory_order_acquire) != driver_generation_;
  }

  // The engine's long wait when all it drives is `conn`'s calls, each
  // waiting for a notifying push: a sleep on that connection's queue
  // (ClientConnection::SleepForPush) instead of a timer, so their callbacks
  // run when the results land. A new async call ends it (WakeDriver).
  // Returns false if a callback destroyed the channel.
  bool WaitForPushes(Waiter* waiter, const DriveResult& r,
                     ProgressEngine::Sleeper* timed,
                     std::vector<PendingCall*>* finished) {
    ClientConnection* const conn = r.last;
    int64_t deadline_ns = INT64_MAX;
    if (!waiter->sleeping() || !conn->WaitsOnlyForPushes(&deadline_ns)) {
      waiter->Wait(timed);
      return true;
    }
    DriverPushSleeper sleeper(this, timed->version());
    sleeper.set(conn, r.wakes, deadline_ns, finished);
    waiter->Wait(&sleeper);
    RunCallbacks(conn, finished);
    return driving_channel == this;
  }

  friend class ProgressEngine;

  // What every call reads, first: on the object's first line, with the
  // vtable pointer (a client calling round robin over thousands of
  // channels finds each cold).
  const bool busy_wait_;              // options_.busy_wait.
  const int64_t default_timeout_ns_;  // INT64_MAX: none.
  // The connection slots a call picks from, read without a lock: the count
  // and an array of that many slots (or more). A per-worker channel grows
  // them when a reconnect finds the server with more workers
  // (FollowServerWorkers): the longer array is stored first, then the
  // count, so a reader that sees the new count sees the new array; one that
  // sees the old count reads a prefix both arrays share. Arrays and slots
  // live as long as the channel (owned_slots_, slot_arrays_).
  std::atomic<size_t> num_slots_{0};
  std::atomic<ConnSlot* const*> slots_{nullptr};
  // Per-method counts, kept per calling thread.
  internal::ClientMethodCounters call_counters_;
  // Prefetch hints (StartsCold): the connections' (PublishHotLines) and
  // the counters of a cold sync call's method.
  std::atomic<const void*> hot_lines_[ClientConnection::kHotLines];
  std::atomic<const void*> method_hint_{this};
  std::atomic<int64_t> last_start_ns_{0};  // StartsCold.

  const std::string address_;
  const ChannelOptions options_;
  std::unique_ptr<transport::Provider> provider_;
  // Every slot and slot array ever published, appended under grow_mu_.
  // Before counters_: the connections' destructors fold their counts into
  // it (the destructor clears owned_slots_ first anyway).
  Mutex grow_mu_;
  std::vector<std::unique_ptr<ConnSlot>> owned_slots_ ABSL_GUARDED_BY(grow_mu_);
  std::vector<std::unique_ptr<ConnSlot*[]>> slot_arrays_
      ABSL_GUARDED_BY(grow_mu_);
  internal::ChannelCounters counters_;
  // The server's worker count, as the last (re)connect learned it.
  std::atomic<int> server_workers_{1};
  // A count the last FollowServerWorkers could not connect to every worker
  // of (0: none), and when RetryFollow may try it again.
  std::atomic<int> follow_workers_{0};
  std::atomic<int64_t> follow_retry_ns_{0};
  std::atomic<uint64_t> next_{0};
  // The runtime R and F, held once (SetFetchParams; new connections take
  // them from here), in one word so that no reader sees one's old value
  // with the other's new one.
  static uint64_t Pack(int retries, uint32_t fetch_size) {
    return (uint64_t{static_cast<uint32_t>(retries)} << 32) | fetch_size;
  }
  static int Retries(uint64_t p) { return static_cast<int>(p >> 32); }
  static uint32_t FetchSize(uint64_t p) { return static_cast<uint32_t>(p); }
  std::atomic<uint64_t> fetch_params_;

  Mutex driver_mu_;
  // Set once, under driver_mu_ (see the destructor); read with or without it.
  std::atomic<bool> stopping_{false};
  // Bumped after Route replaces a connection: the driver's snapshot is old.
  std::atomic<uint64_t> generation_{0};
  // WakeDriver's count, read without the lock at the start of each driver
  // round, and the connection the driver sleeps on until a push (null if
  // none): DriverPushSleeper.
  std::atomic<uint64_t> driver_wakes_{0};
  ClientConnection* driver_push_sleep_ ABSL_GUARDED_BY(driver_mu_) = nullptr;
  // CallAsyncs past Prepare and not yet returned (see the destructor).
  std::atomic<int> async_entries_{0};
  // Set (release) by the first async call: the progress engine has the
  // channel on its lists from then on (Detach when it goes).
  std::atomic<bool> driver_running_{false};
  // On the engine's active list (WakeDriver sets it; a pass that finds
  // nothing to advance clears it, ProgressEngine::Loop).
  std::atomic<bool> engine_queued_{false};
  // DriveRound's snapshot of the connections and the generation_ it was
  // taken at; only the engine touches them. A member so that a channel
  // destroyed by one of its callbacks (on the engine) drops it with conns_,
  // before counters_ goes.
  std::vector<std::shared_ptr<ClientConnection>> driver_conns_;
  uint64_t driver_generation_ = ~uint64_t{0};
};

std::atomic<ProgressEngine*> ProgressEngine::instance_{nullptr};

ProgressEngine& ProgressEngine::Create() {
  static std::mutex create_mu;
  std::lock_guard<std::mutex> lock(create_mu);
  ProgressEngine* e = instance_.load(std::memory_order_acquire);
  if (e == nullptr) {
    static std::once_flag at_fork;
    std::call_once(at_fork, [] {
      pthread_atfork(nullptr, nullptr, [] {
        instance_.store(nullptr, std::memory_order_release);
        driving_channel = nullptr;  // Forked from inside a callback.
      });
    });
    e = new ProgressEngine;
    instance_.store(e, std::memory_order_release);
  }
  return *e;
}

void ProgressEngine::Activate(ChannelImpl* ch) {
  bool asleep;
  {
    MutexLock lock(&mu_);
    active_.push_back(ch);
    list_version_.fetch_add(1, std::memory_order_release);
    ++activations_;
    if (push_sleep_ != nullptr) push_sleep_->InterruptPushSleep();
    // Only the first Activate since the engine fell asleep wakes it: a
    // later one's notify finds no sleeper and costs nothing.
    asleep = idle_sleep_;
    idle_sleep_ = false;
  }
  // After the unlock: the engine, woken, may preempt this thread on its
  // CPU, and would then wait for the lock it still held.
  if (!asleep) {
    wake_cv_.notify_one();  // A timed pause (Sleeper) may wait on it.
    return;
  }
  // The engine slept with nothing to drive: what waking it cost this
  // caller decides whether the engine lingers next time (Loop).
  const int64_t start = internal::ClockNanos(CLOCK_MONOTONIC);
  wake_cv_.notify_one();
  const int64_t cost = internal::ClockNanos(CLOCK_MONOTONIC) - start +
                       wake_cost_for_test.load(std::memory_order_relaxed);
  const uint32_t i = wake_costs_next_.fetch_add(1, std::memory_order_relaxed);
  wake_costs_ns_[i % kWakeCosts].store(cost, std::memory_order_relaxed);
}

int64_t ProgressEngine::WakeCost() const {
  int64_t least = INT64_MAX;
  for (const std::atomic<int64_t>& c : wake_costs_ns_) {
    least = std::min(least, c.load(std::memory_order_relaxed));
  }
  return least;
}

bool ProgressEngine::BeginPushSleep(ClientConnection* conn, uint64_t version) {
  MutexLock lock(&mu_);
  if (list_version_.load(std::memory_order_relaxed) != version) return false;
  push_sleep_ = conn;
  return true;
}

void ProgressEngine::EndPushSleep() {
  MutexLock lock(&mu_);
  push_sleep_ = nullptr;
}

void ProgressEngine::Sleeper::Sleep(int64_t ns) {
  MutexLock lock(&engine_->mu_);
  if (engine_->list_version_.load(std::memory_order_relaxed) != version_) {
    return;
  }
  const uint64_t seen = engine_->activations_;
  engine_->mu_.AwaitWithTimeout(
      &engine_->wake_cv_, absl::Nanoseconds(ns),
      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return engine_->activations_ != seen;
      });
}

void ProgressEngine::Detach(ChannelImpl* ch, bool on_engine) {
  {
    MutexLock lock(&mu_);
    active_.erase(std::remove(active_.begin(), active_.end(), ch),
                  active_.end());
    list_version_.fetch_add(1, std::memory_order_release);
    detaches_.fetch_add(1, std::memory_order_seq_cst);
  }
  if (on_engine) return;  // The step driving it is below us on the stack.
  // A step lasts one progress round and its callbacks (a sleep on a push
  // was interrupted by the destructor).
  for (int i = 0; current_.load(std::memory_order_seq_cst) == ch; ++i) {
    if (i < 64) {
      std::this_thread::yield();
    } else {
      absl::SleepFor(absl::Microseconds(50));
    }
  }
}

void ProgressEngine::Loop() {
  // Named for top -H and debuggers (15 characters at most).
  pthread_setname_np(pthread_self(), "rfrpc-progress");
  std::vector<PendingCall*> finished;
  // A channel with busy_wait has its calls' waits spin and yield however
  // long they last: while one is active, the engine's do.
  Waiter timed(/*busy=*/false);
  Waiter spinning(/*busy=*/true);
  uint64_t last_pokes = 0;
  bool busy = false;
  std::vector<ChannelImpl*> pass;  // A copy of active_ at list_version.
  uint64_t version = ~uint64_t{0};
  Sleeper sleeper(this);
  uint64_t detaches = 0;
  // How long the last sleep with nothing to drive lasted.
  int64_t last_idle_ns = INT64_MAX;
  for (;;) {
    const uint64_t pokes = pokes_.load(std::memory_order_relaxed);
    if (pokes != last_pokes) {
      // A call started: its wait starts now (spin first), whatever long
      // wait the others are in.
      last_pokes = pokes;
      timed.Restart();
      spinning.Restart();
    }
    if (list_version_.load(std::memory_order_acquire) != version) {
      MutexLock lock(&mu_);
      version = list_version_.load(std::memory_order_relaxed);
      pass = active_;
      detaches = detaches_.load(std::memory_order_relaxed);
      sleeper.set_version(version);
    }
    Waiter& waiter = busy ? spinning : timed;
    bool progressed = false;
    bool completed = false;
    bool any_busy = false;
    bool waited = false;
    for (ChannelImpl* ch : pass) {
      current_.store(ch, std::memory_order_seq_cst);
      if (detaches_.load(std::memory_order_seq_cst) != detaches) {
        // A channel went since the copy: drive `ch` only if it is still
        // listed (it may be the one that went).
        MutexLock lock(&mu_);
        if (std::find(active_.begin(), active_.end(), ch) == active_.end()) {
          current_.store(nullptr, std::memory_order_release);
          continue;
        }
      }
      driving_channel = ch;
      ChannelImpl::DriveResult r = ch->DriveRound(&finished);
      bool keep = !r.gone;
      if (keep) {
        any_busy |= ch->busy_wait_;
        progressed |= r.progressed;
        completed |= r.completed;
        if (pass.size() == 1 && r.driven == 1 && !r.progressed &&
            !r.completed) {
          // All the engine drives is one connection: it may sleep on its
          // queue until a push (WaitForPushes), still current_.
          keep = ch->WaitForPushes(&waiter, r, &sleeper, &finished);
          waited = true;
        }
      }
      if (keep && !ch->NeedsDriving()) {
        // Nothing left to advance: off the list, unless a call started
        // since the check (its WakeDriver saw engine_queued_ still set and
        // did not activate the channel: the engine keeps it).
        // An exchange, not a store: reading a WakeDriver's `true` orders
        // what that caller saw (a new connection's generation_) before
        // the check below.
        ch->engine_queued_.exchange(false, std::memory_order_seq_cst);
        if (!ch->NeedsDriving() ||
            ch->engine_queued_.exchange(true, std::memory_order_seq_cst)) {
          // Off the list, while still current_ (so not destroyed). A
          // channel activated again since is listed twice, once by that
          // Activate: the later entry stays.
          MutexLock lock(&mu_);
          auto it = std::find(active_.begin(), active_.end(), ch);
          if (it != active_.end()) active_.erase(it);
          list_version_.fetch_add(1, std::memory_order_release);
        }
      }
      driving_channel = nullptr;
      current_.store(nullptr, std::memory_order_release);
    }
    busy = any_busy;
    if (completed) {
      waiter.Restart();
      continue;
    }
    if (progressed) {
      waiter.Reset();
      continue;
    }
    if (!pass.empty()) {
      if (!waited) waiter.Wait(&sleeper);
      continue;
    }
    // Nothing to drive. Where waking the engine costs the caller more than
    // a round trip may take (kLingerWakeCostNs: a futex wake under qemu
    // TCG took ~120 us), and calls have come soon after it went idle, it
    // lingers a while first, yielding: a call that comes meanwhile finds
    // it awake and wakes no one. (Not where wakes are cheap: the yielding
    // engine then only takes CPU from an issuer waiting on a condition
    // variable.)
    const int64_t wake_cost = WakeCost();
    if (wake_cost > kLingerWakeCostNs && last_idle_ns < kMaxLingerNs) {
      const int64_t limit = std::min(2 * wake_cost, kMaxLingerNs);
      const int64_t start = internal::ClockNanos(CLOCK_MONOTONIC);
      int64_t now = start;
      while (list_version_.load(std::memory_order_acquire) == version &&
             now - start < limit) {
        std::this_thread::yield();
        now = internal::ClockNanos(CLOCK_MONOTONIC);
      }
      if (list_version_.load(std::memory_order_acquire) != version) continue;
    }
    // Sleep until a channel is activated.
    const int64_t sleep_start = internal::ClockNanos(CLOCK_MONOTONIC);
    {
      MutexLock lock(&mu_);
      const uint64_t seen = activations_;
      if (!active_.empty()) continue;
      idle_sleep_ = true;
      idle_sleeps_for_test.fetch_add(1, std::memory_order_relaxed);
      mu_.Await(&wake_cv_, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return activations_ != seen;
      });
      idle_sleep_ = false;
    }
    last_idle_ns = internal::ClockNanos(CLOCK_MONOTONIC) - sleep_start;
    timed.Restart();
    spinning.Restart();
  }
}

}  // namespace

namespace internal {
namespace testing {

void AddToEngineWakeCost(int64_t ns) {
  wake_cost_for_test.store(ns, std::memory_order_relaxed);
}

uint64_t EngineIdleSleeps() {
  return idle_sleeps_for_test.load(std::memory_order_relaxed);
}

}  // namespace testing
}  // namespace internal

absl::StatusOr<std::unique_ptr<Channel>> Channel::Create(
    const std::string& address, const ChannelOptions& options) {
  RFRPC_RETURN_IF_ERROR(ValidateChannelOptions(options));
  auto channel = std::make_unique<ChannelImpl>(address, options);
  RFRPC_RETURN_IF_ERROR(channel->Init());
  return channel;
}

std::future<absl::Status> Channel::CallFuture(
    uint32_t method_id, const google::protobuf::MessageLite& request,
    google::protobuf::MessageLite* response, ClientContext* ctx) {
  auto promise = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> f = promise->get_future();
  CallAsync(method_id, request, response, ctx,
            [promise](absl::Status s) { promise->set_value(std::move(s)); });
  return f;
}

}  // namespace rfrpc
