// Copyright 2026 The rfrpc Authors.
//
// A connection's fetch timing, driven through whole calls against a
// simulated server and clock: a request is posted at time 0, its result is
// published at `ready_ns`, and each READ sees it if it reaches the server
// (half a round trip after its post) once it is published. The timing
// decides when each READ goes, as ClientConnection does with it.

#include "rpc/fetch_timing.h"

#include <algorithm>
#include <cstdint>

#include "gtest/gtest.h"
#include "rpc/hybrid_policy.h"

namespace rfrpc {
namespace internal {
namespace {

constexpr int64_t kRttNs = 100;

struct CallResult {
  int fetches = 0;         // READs, the one that found the result included.
  int64_t found_ns = 0;    // When the READ that found it completed.
  int64_t max_gap_ns = 0;  // Longest pause between a READ and the next.
  int slow_marks = 0;      // READs that reported the call newly slow.
};

// One call through the per-slot state machine (FetchTiming::AfterRead), as
// ClientConnection drives it.
CallResult RunCall(FetchTiming* t, int64_t ready_ns, bool notified = false) {
  CallResult r;
  FetchRead read;
  read.notified = notified;
  read.posted_ns = 0;
  int64_t post = t->FirstFetchAt(0);
  for (;;) {
    const int64_t done = post + kRttNs;
    t->OnRoundTrip(static_cast<double>(kRttNs));
    read.found = post + kRttNs / 2 >= ready_ns;
    read.fits = true;
    const FetchStep step = t->AfterRead(read, /*learn_misses=*/true, done);
    EXPECT_EQ(step.fetches, read.fetches + 1);
    r.fetches = read.fetches = step.fetches;
    if (step.newly_slow) {
      read.counted_slow = true;
      ++r.slow_marks;
    }
    if (read.found) {
      EXPECT_EQ(step.next, FetchStep::Next::kComplete);
      r.found_ns = done;
      return r;
    }
    EXPECT_EQ(step.next, FetchStep::Next::kFetchAgain);
    EXPECT_GE(step.fetch_at_ns, done);
    r.max_gap_ns = std::max(r.max_gap_ns, step.fetch_at_ns - done);
    post = step.fetch_at_ns;
  }
}

FetchTiming::Params DelayOff() {
  FetchTiming::Params p;
  p.adaptive_delay = false;
  return p;
}

FetchRead Found(bool fits, bool pushed = false) {
  FetchRead read;
  read.found = true;
  read.fits = fits;
  read.pushed = pushed;
  return read;
}

// A READ that found the result: complete it, READ the part past the bytes
// READ, or (pushed) wait for the server's WRITE; each counts the READ.
// A round trip at or below zero (its two times from two threads' clocks,
// which may disagree a little) is dropped: taken, a negative sample pulled
// the envelope below zero, and from there every sample pushed it further.
TEST(TrackLowerEnvelopeTest, DropsSamplesAtOrBelowZero) {
  double ewma = 0;
  TrackLowerEnvelope(&ewma, -500);
  EXPECT_EQ(ewma, 0) << "not a first sample";
  TrackLowerEnvelope(&ewma, 1000);
  EXPECT_EQ(ewma, 1000);
  for (int i = 0; i < 10; ++i) TrackLowerEnvelope(&ewma, -20000);
  TrackLowerEnvelope(&ewma, 0);
  EXPECT_EQ(ewma, 1000);
}

TEST(FetchStateTest, AFoundResultCompletesReadsTheRestOrWaitsForThePush) {
  FetchTiming t(DelayOff());
  FetchRead read = Found(/*fits=*/true);
  read.fetches = 2;
  FetchStep step = t.AfterRead(read, true, 1000);
  EXPECT_EQ(step.next, FetchStep::Next::kComplete);
  EXPECT_EQ(step.fetches, 3);
  EXPECT_FALSE(step.newly_slow);
  EXPECT_EQ(t.AfterRead(Found(/*fits=*/false), true, 1000).next,
            FetchStep::Next::kReadRest);
  EXPECT_EQ(t.AfterRead(Found(/*fits=*/true, /*pushed=*/true), true, 1000).next,
            FetchStep::Next::kWaitReply);
  // A probe or the switch check that finds it takes it the same way.
  read.kind = FetchRead::Kind::kProbe;
  EXPECT_EQ(t.AfterRead(read, true, 1000).next, FetchStep::Next::kComplete);
  read.kind = FetchRead::Kind::kSwitchCheck;
  EXPECT_EQ(t.AfterRead(read, true, 1000).next, FetchStep::Next::kComplete);
}

// Within R a miss READs again at once; the READ that takes the call past R
// backs off and marks it slow, once; a notified call's pauses stay at 2 us.
TEST(FetchStateTest, MissesRepeatAtOnceThenBackOffAndMarkTheCallSlowOnce) {
  FetchTiming t(DelayOff());
  t.OnRoundTrip(kRttNs);
  FetchRead read;
  const int64_t now = 50 * 1000;
  for (int before = 0; before < 4; ++before) {
    read.fetches = before;
    const FetchStep step = t.AfterRead(read, true, now);
    EXPECT_EQ(step.next, FetchStep::Next::kFetchAgain);
    EXPECT_EQ(step.fetch_at_ns, now) << before;
    EXPECT_FALSE(step.newly_slow);
  }
  read.fetches = 5;  // This is READ 6: past R = 5.
  FetchStep step = t.AfterRead(read, true, now);
  EXPECT_EQ(step.fetch_at_ns, now + 2 * kRttNs);
  EXPECT_TRUE(step.newly_slow);
  read.counted_slow = true;
  read.fetches = 20;
  step = t.AfterRead(read, true, now);
  EXPECT_FALSE(step.newly_slow);
  EXPECT_EQ(step.fetch_at_ns,
            now + static_cast<int64_t>(FetchTiming::kMaxBackoffNs));
  read.notified = true;
  EXPECT_EQ(t.AfterRead(read, true, now).fetch_at_ns,
            now + static_cast<int64_t>(FetchTiming::kMaxNotifiedBackoffNs));
}

// After its method switched to server-reply a call's one more READ that
// finds nothing leaves it waiting for the push; a probe that finds nothing
// changes nothing, and is not counted.
TEST(FetchStateTest, TheSwitchCheckWaitsForThePushAndAProbeMissIsNotCounted) {
  FetchTiming t(DelayOff());
  FetchRead read;
  read.fetches = 3;
  read.kind = FetchRead::Kind::kSwitchCheck;
  FetchStep step = t.AfterRead(read, true, 1000);
  EXPECT_EQ(step.next, FetchStep::Next::kWaitReply);
  EXPECT_EQ(step.fetches, 4);
  read.kind = FetchRead::Kind::kProbe;
  step = t.AfterRead(read, true, 1000);
  EXPECT_EQ(step.next, FetchStep::Next::kKeepWaiting);
  EXPECT_EQ(step.fetches, 3);
}

// A slot whose call is gone READs every 20 us for the late result, however
// many READs it made, and never counts as a slow call.
TEST(FetchStateTest, AnAbandonedSlotReadsEvery20us) {
  FetchTiming t(DelayOff());
  FetchRead read;
  read.abandoned = true;
  read.fetches = 40;
  const FetchStep step = t.AfterRead(read, true, 1000);
  EXPECT_EQ(step.next, FetchStep::Next::kFetchAgain);
  EXPECT_EQ(step.fetch_at_ns, 1000 + FetchTiming::kAbandonedFetchNs);
  EXPECT_FALSE(step.newly_slow);
}

// Only a live call's own READ of its first result part teaches the
// first-fetch delay: not a probe, not an abandoned slot, not a batch's
// later part (their timing is the server's push or the first part's).
TEST(FetchStateTest, OnlyALiveCallsFirstPartTeachesTheDelay) {
  auto learned = [](void (*shape)(FetchRead*)) {
    FetchTiming t(FetchTiming::Params{});
    t.OnRoundTrip(kRttNs);
    FetchRead read = Found(/*fits=*/true);
    read.fetches = 3;  // Found by READ 4: three READs too early.
    shape(&read);
    for (int i = 0; i < 100; ++i) t.AfterRead(read, true, 1000);
    return t.delay_ns();
  };
  EXPECT_GT(learned([](FetchRead*) {}), 0);
  EXPECT_EQ(learned([](FetchRead* r) { r->kind = FetchRead::Kind::kProbe; }),
            0);
  EXPECT_EQ(learned([](FetchRead* r) { r->abandoned = true; }), 0);
  EXPECT_EQ(learned([](FetchRead* r) { r->first_part = false; }), 0);
}

// Within R, a READ that finds nothing is repeated at once.
TEST(FetchTimingTest, RepeatsAtOnceWithinR) {
  FetchTiming t(DelayOff());
  const CallResult r = RunCall(&t, 4 * kRttNs);
  EXPECT_EQ(r.fetches, 5);  // READs at 0, 100, 200, 300, 400.
  EXPECT_EQ(r.max_gap_ns, 0);
  EXPECT_EQ(r.slow_marks, 0);
  EXPECT_FALSE(t.Slow(r.fetches));
  EXPECT_TRUE(t.Slow(6));
}

// Past R the pauses double from the round trip and stop growing at 20 us:
// a result 1 ms late costs ~60 READs instead of ~10 000 back to back, and
// is found at most one capped pause after it was published. Without the
// back-off the READ count fails; without the cap the lateness does.
TEST(FetchTimingTest, BacksOffPastRUpToItsCap) {
  FetchTiming t(DelayOff());
  const int64_t ready = 900 * 1000;
  const CallResult r = RunCall(&t, ready);
  EXPECT_LE(r.fetches, 5 + 8 + ready / 20000 + 2);
  EXPECT_GE(r.fetches, ready / 20000);
  EXPECT_EQ(r.max_gap_ns, static_cast<int64_t>(FetchTiming::kMaxBackoffNs));
  EXPECT_LE(r.found_ns - ready,
            static_cast<int64_t>(FetchTiming::kMaxBackoffNs) + 2 * kRttNs);
  EXPECT_EQ(r.slow_marks, 1);  // One slow call, however many READs past R.
}

// A request whose doorbell woke a parked worker is answered one wake-up
// later (tens of microseconds): its pauses stay under 2 us, so the wake-up
// is all it adds.
TEST(FetchTimingTest, ANotifiedCallPausesAtMostTwoMicroseconds) {
  FetchTiming t(DelayOff());
  const int64_t ready = 70 * 1000;
  const CallResult notified = RunCall(&t, ready, /*notified=*/true);
  EXPECT_EQ(notified.max_gap_ns,
            static_cast<int64_t>(FetchTiming::kMaxNotifiedBackoffNs));
  EXPECT_LE(
      notified.found_ns - ready,
      static_cast<int64_t>(FetchTiming::kMaxNotifiedBackoffNs) + 2 * kRttNs);
  const CallResult plain = RunCall(&t, ready);
  EXPECT_EQ(plain.max_gap_ns, static_cast<int64_t>(FetchTiming::kMaxBackoffNs));
}

// Once a call has waited 1 ms its pauses grow to 1/16 of its wait (at most
// 2 ms): a 100 ms result costs under 200 READs, not the ~5 000 of 20 us
// pauses, and is found at most ~1/16 late. busy_wait keeps the 20 us cap.
TEST(FetchTimingTest, LongWaitsPauseAShareOfTheWait) {
  const int64_t ready = 100 * 1000 * 1000;
  FetchTiming t(DelayOff());
  const CallResult r = RunCall(&t, ready);
  EXPECT_LT(r.fetches, 200);
  EXPECT_EQ(r.max_gap_ns, kMaxLongWaitPauseNs);
  EXPECT_LE(r.found_ns - ready, kMaxLongWaitPauseNs + 2 * kRttNs);

  FetchTiming::Params busy = DelayOff();
  busy.busy_wait = true;
  FetchTiming b(busy);
  const CallResult rb = RunCall(&b, ready);
  EXPECT_GT(rb.fetches, 4000);
  EXPECT_EQ(rb.max_gap_ns, static_cast<int64_t>(FetchTiming::kMaxBackoffNs));
}

// A server that answers 3 us after each request: the first-fetch delay
// learns it, and calls settle at one READ each (not the ~10 of READing at
// once, repeating and backing off). It follows the server when it gets
// faster again. A server that stopped answering quickly cannot push
// the delay past its cap: max_fetch_delay, or R round trips if longer.
TEST(FetchTimingTest, TheFirstReadLearnsWhenResultsCome) {
  FetchTiming::Params p;
  p.max_delay_ns = 10 * 1000;
  FetchTiming t(p);
  for (int i = 0; i < 20000; ++i) RunCall(&t, 3000);
  int fetches = 0;
  for (int i = 0; i < 1000; ++i) fetches += RunCall(&t, 3000).fetches;
  EXPECT_LT(fetches, 1100);
  EXPECT_GT(t.delay_ns(), 2000);
  EXPECT_EQ(t.FirstFetchAt(1000), 1000 + static_cast<int64_t>(t.delay_ns()));

  for (int i = 0; i < 20000; ++i) RunCall(&t, 1000 * 1000);
  EXPECT_LE(t.delay_ns(), t.DelayCapNs());
  EXPECT_DOUBLE_EQ(t.DelayCapNs(), 10 * 1000);
  EXPECT_DOUBLE_EQ(t.BudgetNs(), 10 * 1000 + 5 * kRttNs);

  // Faster again: the delay comes back down (hits shrink it).
  for (int i = 0; i < 20000; ++i) RunCall(&t, 1000);
  EXPECT_LT(t.delay_ns(), 1500);

  FetchTiming off(DelayOff());
  for (int i = 0; i < 1000; ++i) RunCall(&off, 3000);
  EXPECT_EQ(off.FirstFetchAt(1000), 1000);
  EXPECT_EQ(off.DelayCapNs(), 0);
  EXPECT_GE(RunCall(&off, 3000).fetches, 8);
}

// A forced server-reply connection's fetches are probes of pushes: their
// misses do not grow the delay.
TEST(FetchTimingTest, MissesTeachOnlyWhenAsked) {
  FetchTiming t(FetchTiming::Params{});
  t.OnRoundTrip(kRttNs);
  t.OnFound(3, /*learn_misses=*/false);
  EXPECT_EQ(t.delay_ns(), 0);
  t.OnFound(3, /*learn_misses=*/true);
  EXPECT_GT(t.delay_ns(), 0);
}

// The round trip follows drops at once and rises slowly: one descheduled
// poller's 1 ms sample moves it by a few ns, not to 1 ms (R * rtt is the
// fetch budget the hybrid switch compares against).
TEST(FetchTimingTest, RoundTripTracksItsLowerEnvelope) {
  FetchTiming t(DelayOff());
  t.OnRoundTrip(100);
  EXPECT_EQ(t.rtt_ns(), 100);
  t.OnRoundTrip(1000 * 1000);
  EXPECT_LE(t.rtt_ns(), 104);
  t.OnRoundTrip(50);
  EXPECT_LT(t.rtt_ns(), 95);
  for (int i = 0; i < 100; ++i) t.OnRoundTrip(50);
  EXPECT_NEAR(t.rtt_ns(), 50, 1);
}

// Switching back from server-reply starts the delay one round trip before
// the replies came, within the cap.
TEST(FetchTimingTest, RestartsFromTheReplyLatency) {
  FetchTiming::Params p;
  p.max_delay_ns = 10 * 1000;
  FetchTiming t(p);
  t.OnRoundTrip(kRttNs);
  t.RestartFromReplies(5000);
  EXPECT_EQ(t.delay_ns(), 5000 - kRttNs);
  t.RestartFromReplies(1000 * 1000);
  EXPECT_EQ(t.delay_ns(), 10 * 1000);
  FetchTiming off(DelayOff());
  off.RestartFromReplies(5000);
  EXPECT_EQ(off.delay_ns(), 0);
}

// The timing and the hybrid policy together, as a connection runs them: a
// server that gets slow (results 200 us after the request, where they came
// after 0.4 us) turns the connection to server-reply after K = 2 slow
// calls; one slow call among fast ones does not. A new R counts from the
// next call.
TEST(FetchTimingTest, SlowCallsSwitchTheConnectionAfterK) {
  FetchTiming t(FetchTiming::Params{});
  HybridPolicy policy(HybridPolicy::Params{});
  auto call = [&](int64_t ready_ns) {
    const CallResult r = RunCall(&t, ready_ns);
    if (t.Slow(r.fetches)) return policy.OnCallExceededRetries();
    policy.OnFetchedCall(/*slow=*/false);
    return false;
  };
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(call(400));
  EXPECT_FALSE(call(200 * 1000));
  EXPECT_FALSE(call(400));
  EXPECT_FALSE(call(200 * 1000));
  EXPECT_TRUE(call(200 * 1000));
  EXPECT_EQ(policy.current(), RpcMode::kServerReply);

  t.set_retries(50);
  EXPECT_EQ(t.retries(), 50);
  EXPECT_FALSE(t.Slow(50));
  EXPECT_EQ(t.NextFetchAt(50, 0, false, 7000), 7000);
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
