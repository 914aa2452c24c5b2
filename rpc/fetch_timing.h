// Copyright 2026 The rfrpc Authors.
//
// When a remote-fetching client READs a call's result (docs/rpc.md, "Fetch
// timing"): the fetch timing of one connection, as pure logic on times the
// caller passes in, so it is tested with a simulated clock and server
// (fetch_timing_test.cc) instead of end to end.
//
//  - The first READ goes the learned first-fetch delay after the request
//    (FetchDelay; 0 when ChannelOptions::fetch.adaptive_delay is off).
//  - A READ that finds no result is repeated at once while the call is
//    within R fetches. Past R the call is slow (the hybrid policy counts it)
//    and the pauses between READs start at twice the READ round trip and
//    double, capped at kMaxBackoffNs, or kMaxNotifiedBackoffNs if the
//    request woke a parked worker. Once the call has waited kLongWaitNs a
//    pause may grow to 1/kLongWaitShare of the wait so far (at most
//    kMaxLongWaitPauseNs), so a 100 ms result costs ~150 READs (not ~5 000)
//    and arrives at most ~1/16 late; ChannelOptions::busy_wait keeps the
//    short caps.
//  - The READ round trip is tracked near its lower envelope: an asymmetric
//    EWMA that follows drops quickly and rises slowly, so a descheduled
//    poller (a sample of milliseconds) barely moves R * rtt.
//
// Thread-compatible: the connection calls it under its lock.

#ifndef RFRPC_RPC_FETCH_TIMING_H_
#define RFRPC_RPC_FETCH_TIMING_H_

#include <algorithm>
#include <cstdint>

#include "rpc/fetch_delay.h"

namespace rfrpc {
namespace internal {

// Long waits (docs/rpc.md "Threads and waiting"): once a call has waited
// kLongWaitNs, the thread waiting for it sleeps between polls (Channel) and
// its fetches past R pause (FetchTiming), each for up to 1/kLongWaitShare
// of the wait so far and at most kMaxLongWaitPauseNs, unless
// ChannelOptions::busy_wait.
inline constexpr int64_t kLongWaitNs = 1000 * 1000;
inline constexpr int64_t kLongWaitShare = 16;
inline constexpr int64_t kMaxLongWaitPauseNs = 2 * 1000 * 1000;

// Moves `*ewma` towards `sample` near the samples' lower envelope: it
// follows a drop at once (a fifth of the way) and a rise slowly (1/100 of
// it, at most 4x the current value), so one descheduled measurement of
// milliseconds barely moves it. 0 means "no sample yet": the first one is
// taken as it is. A sample at or below 0 is no duration (its two times came
// from different threads' clocks, which may disagree by a little: see
// base/clock.h) and is dropped.
inline void TrackLowerEnvelope(double* ewma, double sample) {
  if (!(sample > 0)) return;
  if (*ewma == 0) {
    *ewma = sample;
  } else if (sample < *ewma) {
    *ewma += 0.2 * (sample - *ewma);
  } else {
    *ewma += 0.01 * (std::min(sample, 4 * *ewma) - *ewma);
  }
}

// One header READ of a slot, as it came back: the input of the per-slot
// fetch state machine (FetchTiming::AfterRead).
struct FetchRead {
  enum class Kind : uint8_t {
    kFetch,        // Remote fetching: the call's own READ.
    kSwitchCheck,  // The one READ after its method switched to server-reply.
    kProbe,        // Server-reply: a READ checking on a push.
  };
  Kind kind = Kind::kFetch;
  bool found = false;   // It holds a result with the call's seq.
  bool pushed = false;  // found, flagged pushed: the server WRITEs it.
  bool fits = false;    // found: the whole frame is in the bytes READ.
  // The call is gone (deadline, cancel); the slot waits for its result
  // only to be reused.
  bool abandoned = false;
  bool first_part = true;     // The READ was for the slot's first part.
  bool notified = false;      // The request's doorbell woke a parked worker.
  bool counted_slow = false;  // The call already went past R.
  int fetches = 0;            // The call's READs before this one.
  int64_t posted_ns = 0;      // When the request was posted.
};

// What the slot does next, and what the READ counted.
struct FetchStep {
  enum class Next : uint8_t {
    kComplete,     // The result is all here.
    kReadRest,     // READ the part of the result past the bytes READ.
    kWaitReply,    // The server WRITEs it: poll the local reply slot.
    kFetchAgain,   // Not there yet: READ again at fetch_at_ns.
    kKeepWaiting,  // A probe that found nothing: keep waiting for the push.
  };
  Next next = Next::kKeepWaiting;
  int fetches = 0;          // The call's READs, this one included if counted.
  int64_t fetch_at_ns = 0;  // kFetchAgain.
  // This READ took the call past R: one slow call toward K
  // (HybridPolicy::OnCallExceededRetries).
  bool newly_slow = false;
};

class FetchTiming {
 public:
  struct Params {
    int retries = 5;                 // R.
    bool adaptive_delay = true;      // ChannelOptions::fetch.adaptive_delay.
    double max_delay_ns = 2000;      // ChannelOptions::fetch.max_delay.
    double miss_target = 1.0 / 20;   // ChannelOptions::fetch.delay_miss_target.
    bool busy_wait = false;          // ChannelOptions::busy_wait.
  };

  // Longest pause between READs of a call past R.
  static constexpr double kMaxBackoffNs = 20 * 1000.0;
  // The same for a call whose request woke a parked worker: its result
  // comes one wake-up (tens of microseconds) later, and a 20 us pause would
  // add up to 20 us to it.
  static constexpr double kMaxNotifiedBackoffNs = 2 * 1000.0;
  // The shortest round trip backoff doubles from (a connection that has
  // not measured one yet).
  static constexpr double kMinBackoffBaseNs = 50.0;

  explicit FetchTiming(const Params& params)
      : shrink_(FetchDelay::ShrinkFor(params.miss_target)),
        max_delay_ns_(params.max_delay_ns),
        retries_(params.retries),
        adaptive_delay_(params.adaptive_delay),
        busy_wait_(params.busy_wait) {}

  // When to READ first for a request posted at `posted_ns`.
  int64_t FirstFetchAt(int64_t posted_ns) const {
    return posted_ns +
           (adaptive_delay_ ? static_cast<int64_t>(delay_.ns()) : 0);
  }

  // A header READ came back `rtt_ns` after it was posted.
  void OnRoundTrip(double rtt_ns) { TrackLowerEnvelope(&rtt_ns_, rtt_ns); }

  // A call's result was found by its READ number `fetches` (1: the first).
  // Only calls that fetched their first result part by themselves teach the
  // delay (not probes, not abandoned calls); `learn_misses` false (a forced
  // server-reply connection, whose fetches are probes of pushes) learns
  // from hits only.
  void OnFound(int fetches, bool learn_misses) {
    if (fetches <= 1) {
      delay_.OnHit(shrink_);
    } else if (learn_misses) {
      delay_.OnMiss(fetches, DelayCapNs());
    }
  }

  // A READ found no result; it was the call's READ number `fetches`, of a
  // request posted at `posted_ns` (`notified`: its doorbell woke a parked
  // worker). Returns when to READ again.
  int64_t NextFetchAt(int fetches, int64_t posted_ns, bool notified,
                      int64_t now) const {
    if (fetches <= retries_) return now;
    const int over = std::min(fetches - retries_, 16);
    const double backoff =
        std::max(rtt_ns_, kMinBackoffBaseNs) * static_cast<double>(1 << over);
    const int64_t waited = now - posted_ns;
    const double cap = waited < kLongWaitNs || busy_wait_
                           ? (notified ? kMaxNotifiedBackoffNs : kMaxBackoffNs)
                           : static_cast<double>(std::min(
                                 waited / kLongWaitShare, kMaxLongWaitPauseNs));
    return now + static_cast<int64_t>(std::min(backoff, cap));
  }

  // An abandoned slot (its call gone) READs at most this often until its
  // late result shows up and the slot can be reused.
  static constexpr int64_t kAbandonedFetchNs = 20 * 1000;

  // The per-slot fetch state machine: after `read` came back at `now`,
  // what the slot does next. A found result of a live call's first part
  // teaches the first-fetch delay (OnFound; `learn_misses` as there); a
  // miss schedules the next READ (NextFetchAt), and the first miss past R
  // is a slow call.
  FetchStep AfterRead(const FetchRead& read, bool learn_misses, int64_t now) {
    using Next = FetchStep::Next;
    FetchStep step;
    step.fetches = read.fetches;
    const bool probe = read.kind == FetchRead::Kind::kProbe;
    if (read.found) {
      step.fetches = read.fetches + 1;
      if (!probe && !read.abandoned && read.first_part) {
        OnFound(step.fetches, learn_misses);
      }
      step.next = read.pushed ? Next::kWaitReply
                  : read.fits ? Next::kComplete
                              : Next::kReadRest;
      return step;
    }
    if (probe) return step;  // kKeepWaiting.
    step.fetches = read.fetches + 1;
    if (read.kind == FetchRead::Kind::kSwitchCheck) {
      step.next = Next::kWaitReply;
      return step;
    }
    step.next = Next::kFetchAgain;
    if (read.abandoned) {
      step.fetch_at_ns = now + kAbandonedFetchNs;
      return step;
    }
    step.fetch_at_ns =
        NextFetchAt(step.fetches, read.posted_ns, read.notified, now);
    step.newly_slow = Slow(step.fetches) && !read.counted_slow;
    return step;
  }

  // Whether a call that has made `fetches` READs is slow (past R).
  bool Slow(int fetches) const { return fetches > retries_; }

  // The cap of the first-fetch delay: max_delay, or R round trips when
  // longer (0 when the delay is off).
  double DelayCapNs() const {
    if (!adaptive_delay_) return 0;
    return std::max(max_delay_ns_, rtt_ns_ * retries_);
  }
  // How long remote fetching waits before a call counts as slow: the delay
  // cap plus R round trips (HybridPolicy::OnServerReplyCall's rf_budget).
  double BudgetNs() const { return DelayCapNs() + rtt_ns_ * retries_; }

  // Switching back from server-reply, where replies arrived `reply_ns`
  // after their requests: the first READ goes about one round trip before
  // that, not where remote fetching left the delay (which stays 0 when the
  // adaptive delay is off: its cap is 0).
  void RestartFromReplies(double reply_ns) {
    delay_.Restart(reply_ns - rtt_ns_, DelayCapNs());
  }

  void set_retries(int retries) { retries_ = retries; }
  int retries() const { return retries_; }
  double rtt_ns() const { return rtt_ns_; }
  double delay_ns() const { return delay_.ns(); }

 private:
  double rtt_ns_ = 0;  // EWMA of READ round trips.
  FetchDelay delay_;
  const double shrink_;  // FetchDelay::ShrinkFor(miss_target).
  const double max_delay_ns_;
  int retries_;
  const bool adaptive_delay_;
  const bool busy_wait_;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_FETCH_TIMING_H_
