// Copyright 2026 The rfrpc Authors.
//
// The request batcher of one client connection: every batching decision
// (fixed, auto and adaptive modes) and the one place where a call's latency
// is measured for the auto sizer. It owns the flush policy, the sizer and
// the accounting of batches in flight; the connection owns the slots and
// the posts, asks the batcher, and does what it says. No transport, no
// clock of its own (callers pass times in): unit-tested with plain numbers
// (request_batcher_test.cc). Internal to rpc/.
//
// Thread-compatible: a connection calls it under its lock.

#ifndef RFRPC_RPC_REQUEST_BATCHER_H_
#define RFRPC_RPC_REQUEST_BATCHER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "rpc/batch_format.h"
#include "rpc/batch_policy.h"
#include "rpc/options.h"

namespace rfrpc {
namespace internal {

class RequestBatcher {
 public:
  explicit RequestBatcher(const BatchingOptions& options);

  RequestBatcher(const RequestBatcher&) = delete;
  RequestBatcher& operator=(const RequestBatcher&) = delete;

  // N before any call was timed: the fixed N, or where auto starts. The
  // channel reports it until its first connection's sizer has decided.
  static int InitialSize(const BatchingOptions& options);

  BatchMode mode() const { return mode_; }
  bool adaptive() const { return mode_ == BatchMode::kAdaptive; }
  // N now: the fixed N, or the auto sizer's.
  int SizeNow() const {
    return mode_ == BatchMode::kAuto ? sizer_.size() : fixed_size_;
  }

  // ---- Adding a call ----

  // Before an entry of `entry_bytes` joins the open batch of `entries`
  // entries and `bytes` payload bytes, in a slot of `capacity` payload
  // bytes: kBytes if the batch must go first (past L, or no room for the
  // entry and every entry's budget code), else kNone.
  FlushReason BeforeAdd(int entries, uint32_t bytes, size_t entry_bytes,
                        size_t capacity) const {
    if (flush_.BeforeAdd(entries, bytes, entry_bytes) == FlushReason::kBytes ||
        !Fits(entries, bytes, entry_bytes, capacity)) {
      return FlushReason::kBytes;
    }
    return FlushReason::kNone;
  }
  // Whether an entry of `entry_bytes` fits into a batch of `entries`
  // entries and `bytes` payload bytes in a slot of `capacity` payload
  // bytes, budget codes included (rpc/batch_format.h).
  static bool Fits(int entries, uint32_t bytes, size_t entry_bytes,
                   size_t capacity) {
    return bytes + entry_bytes +
               wire::BudgetCodesBytes(static_cast<size_t>(entries) + 1) <=
           capacity;
  }

  // What the connection does after a call went into the open batch.
  struct Added {
    // Adaptive: WRITE the entries not sent yet into the server's slot
    // ahead of the publish (a group of `group` is complete).
    bool send_group = false;
    // kEntries: the batch holds N; kIdle: a sync caller's batch the idle
    // flush sends (the connection asks Idle, which may read the clock).
    FlushReason flush = FlushReason::kNone;
    bool check_idle = false;
  };
  // The open batch now holds `entries` entries, `unsent` of them not sent
  // ahead; `held`: its publish waits for the previous one (adaptive's
  // elastic threshold); `sync`: the call just added is a sync caller's.
  Added AfterAdd(int entries, int unsent, bool sync, bool held) const {
    Added a;
    a.send_group = mode_ == BatchMode::kAdaptive && unsent >= group_;
    if (held) return a;  // Published when the previous publish completes.
    if (flush_.AfterAdd(entries, SizeNow()) == FlushReason::kEntries) {
      a.flush = FlushReason::kEntries;
    } else {
      // A sync caller waits for its result from here on: nobody else
      // coming means nothing to wait for. (An async caller may add more;
      // the poller flushes its batch when idle.)
      a.check_idle = sync;
    }
    return a;
  }

  // Whether a call about to open a batch (`batch_open` false) may go alone,
  // as the plain request it is: Nagle's rule. Then a sync call goes as Idle
  // decides for a batch of one being opened (its caller is about to wait
  // and nobody else adds meanwhile), an async call as AsyncGoesAlone
  // decides (no batch in flight to wait behind, nobody adding). Otherwise
  // it opens a batch that later calls join while earlier batches are out.
  // Without it a shallow pipeline ran stop-and-wait: its calls come back
  // together, go out again in one batch, and client and server take turns
  // (4 in flight batched: 0.62-0.66 of unbatched). Never in adaptive mode,
  // whose slots carry batches only (entries may be in the server's slot
  // before the batch is complete). `room()`: whether the call fits a plain
  // request and the pipeline has room; the connection checks those, asked
  // last, once per batch opened.
  template <typename Room>
  bool MayGoAlone(bool batch_open, Room room) const {
    return !batch_open && mode_ != BatchMode::kAdaptive && room();
  }
  // For an async call that MayGoAlone: whether it goes, with `adders`
  // callers waiting to add. Only while fewer than idle_in_flight batches
  // are in flight, however late they are. A late batch sends an open batch
  // (Idle), which then waits at the server beside it; but a call that went
  // alone for it would leave nothing open, and each call of a burst behind
  // that batch would go alone in turn (a loaded CI host, whose turnarounds
  // learned idle looked short, sent 2 000 async calls in 1 496 batches).
  // Opened instead, the batch collects the burst and the idle flush sends
  // it at the next poll.
  bool AsyncGoesAlone(int adders) const {
    return flush_.idle_in_flight() > 0 && adders == 0 &&
           in_flight_ < flush_.idle_in_flight();
  }

  // The idle flush (FlushPolicy::WhenIdle): whether an open batch of
  // `entries` entries (with a sync call in it: `sync`), opened at
  // `first_ns` (0: being opened now), goes now. `adders`: callers waiting
  // for the connection's lock to add a call (the connection counts them
  // outside its lock); the batch waits for them briefly (flat combining).
  // Ages matter only while a wait may apply, so only then is `*now` read
  // (`clock()`, if still 0) and `oldest_posted_ns(*now)` asked for the
  // publish time of the oldest batch in flight (the connection scans its
  // slots; returns *now if none).
  template <typename Clock, typename OldestPosted>
  bool Idle(int entries, bool sync, int adders, int64_t first_ns, int64_t* now,
            Clock clock, OldestPosted oldest_posted_ns) const {
    if (flush_.idle_in_flight() <= 0) return false;
    FlushPolicy::IdleState st;
    st.entries = entries;
    st.sync = sync;
    st.adding = adders;
    st.in_flight = in_flight_;
    st.turnaround_ns = static_cast<int64_t>(turnaround_ns_);
    if ((!sync || flush_.sync_combine()) &&
        (st.adding > 0 || st.in_flight >= flush_.idle_in_flight())) {
      if (*now == 0) *now = clock();
      st.open_age_ns = first_ns == 0 ? 0 : *now - first_ns;
      st.oldest_in_flight_age_ns =
          st.in_flight > 0 ? *now - oldest_posted_ns(*now) : 0;
    }
    return flush_.WhenIdle(st) == FlushReason::kIdle;
  }
  // The timeout T: kTimeout once the open batch of `entries`, opened at
  // `first_ns`, is T old (the connection's progress rounds ask).
  FlushReason OnTick(int entries, int64_t first_ns, int64_t now_ns) const {
    return flush_.OnTick(entries, first_ns, now_ns);
  }

  // ---- Sending ----

  // Whether a flush for `reason` publishes now. False: adaptive's elastic
  // threshold holds it while the previous publish is in flight (RB²);
  // the connection keeps sending entries ahead and publishes when that
  // completes. A batch flushed for its bytes goes regardless.
  bool PublishesNow(FlushReason reason) const {
    return !(mode_ == BatchMode::kAdaptive && publish_in_flight_ &&
             reason != FlushReason::kBytes);
  }
  // Whether a batch of `entries` goes as the plain request its only call
  // would have been unbatched (`live`: that call has not finished early).
  // Not in adaptive mode (see MayGoAlone).
  bool SendsPlain(int entries, bool live) const {
    return entries == 1 && live && mode_ != BatchMode::kAdaptive;
  }
  // Entries per result part, which the server is told in the batch's
  // header (aux): N, or all of a batch's `entries` if auto shrank N after
  // they were added (else their results would come in two parts, two
  // fetches).
  uint16_t PartEntries(int entries) const {
    const int n =
        mode_ == BatchMode::kAuto ? std::max(SizeNow(), entries) : SizeNow();
    return static_cast<uint16_t>(std::min(n, 0xffff));
  }
  // The sync_combine option: a batch sent alone is timed then (its
  // turnaround matters to sync callers combining behind it).
  bool sync_combine() const { return flush_.sync_combine(); }

  // ---- In flight ----

  // A batch (or a call sent alone for one, MayGoAlone) is being posted: it
  // counts in flight until Retired, whether or not the post succeeds (a
  // failed post fails the connection, whose slots retire it).
  void Sent() { ++in_flight_; }
  // Adaptive: a batch's header went by the signaled publish WRITE, posted
  // at `now`; in flight until PublishCompleted.
  void PublishPosted(int64_t now) {
    publish_in_flight_ = true;
    publish_posted_ns_ = now;
  }
  void PublishCompleted() { publish_in_flight_ = false; }
  void Retired() { --in_flight_; }
  // A timed batch's first result part came `ns` after its publish: the
  // turnaround, tracked near its lower envelope as the READ round trip is,
  // says how long a batch in flight is worth waiting for (Idle).
  void Turnaround(int64_t ns);
  // A publish WRITE without a completion for `lost_after_ns`: the
  // connection is presumed lost.
  bool PublishLost(int64_t now, int64_t lost_after_ns) const {
    return publish_in_flight_ && now - publish_posted_ns_ > lost_after_ns;
  }
  bool publish_in_flight() const { return publish_in_flight_; }
  int in_flight() const { return in_flight_; }
  // The last field a call may touch: the connection prefetches this
  // object's lines up to here (what follows, the sizer, is colder).
  const void* hot_end() const { return &publish_posted_ns_; }

  // ---- Call latency (auto) ----
  //
  // A call's latency is what its caller saw: from its start (PendingCall's
  // start_ns) to when a sync caller sees its result, or to the start of an
  // async call's callback (CallbackLatencies below), so the time spent
  // delivering a batch's results one callback after another counts against
  // l_limit too. Only calls that finished OK and waited in a batch are
  // timed: a call sent alone tells nothing about N.
  static bool Times(BatchMode mode, bool ok, bool alone) {
    return mode == BatchMode::kAuto && ok && !alone;
  }
  bool Times(bool ok, bool alone) const { return Times(mode_, ok, alone); }
  struct Recorded {
    int adjustments = 0;  // Decisions that changed N.
    // N shrank to `open_entries` or less: the open batch is full now (the
    // full check runs only as calls are added, and a caller that keeps at
    // most N calls in flight adds none until this batch goes).
    bool open_batch_full = false;
  };
  // Feeds the sizer the latencies of calls that finished (sync) or whose
  // callbacks started (async) by `now_ns`; `open_entries`: calls in the
  // open batch, if it is not held (0 otherwise).
  Recorded Record(absl::Span<const int64_t> latencies_ns, int64_t now_ns,
                  int open_entries);
  // One sync call, started at `start_ns`, whose caller sees it at `now_ns`.
  Recorded RecordSync(int64_t start_ns, int64_t now_ns, int open_entries) {
    const int64_t latency = now_ns - start_ns;
    return Record(absl::MakeConstSpan(&latency, 1), now_ns, open_entries);
  }
  const AutoBatchSizer& sizer() const { return sizer_; }

 private:
  const BatchMode mode_;
  bool publish_in_flight_ = false;
  const int fixed_size_;  // max(1, size).
  const int group_;       // Adaptive: entries sent ahead at a time.
  int in_flight_ = 0;     // Sent and not retired.
  FlushPolicy flush_;
  double turnaround_ns_ = 0;  // 0 until the first timed batch.
  int64_t publish_posted_ns_ = 0;
  // Colder.
  AutoBatchSizer sizer_;
};

// Async calls' latencies up to the start of their callbacks, as a poller
// runs them one after another: the clock is read before every
// kClockEvery-th timed callback and after the last (unless the last group
// is one callback, whose start is its stamp); the ones between get start
// times interpolated linearly (LatenciesToCallbackStart), since a clock
// read costs about as much as a short callback (a batch of 128 takes 17
// reads, not 128). A failed call's callback, untimed, counts in its
// group's span.
class CallbackLatencies {
 public:
  static constexpr size_t kClockEvery = 8;

  // `clock`: UnixNanos, or a test's.
  explicit CallbackLatencies(int64_t (*clock)()) : clock_(clock) {}

  // Just before running the callback of a timed call started at `start_ns`.
  void Before(int64_t start_ns) {
    if (latencies_.size() % kClockEvery == 0) stamps_.push_back(clock_());
    latencies_.push_back(start_ns);
  }
  bool empty() const { return latencies_.empty(); }
  // After the last callback: the calls' latencies, in order, and in `*end`
  // the time they are known at (for RequestBatcher::Record).
  absl::Span<const int64_t> Finish(int64_t* end);

 private:
  int64_t (*const clock_)();
  // Each timed call's start, made its latency by Finish.
  absl::InlinedVector<int64_t, 128> latencies_;
  // stamps_[m]: the clock before timed callback m * kClockEvery.
  absl::InlinedVector<int64_t, 128 / kClockEvery + 1> stamps_;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_REQUEST_BATCHER_H_
