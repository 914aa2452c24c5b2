// Copyright 2026 The rfrpc Authors.
//
// The adaptive first-fetch delay, driven by a simulated server whose
// results come T ns after the request (T drawn per call): the first fetch,
// issued after the delay, hits when T <= delay; the retry right after it
// (one READ round trip later) is a near miss; anything later a far miss.

#include "rpc/fetch_delay.h"

#include <random>

#include "gtest/gtest.h"
#include "rpc/options.h"

namespace rfrpc {
namespace internal {
namespace {

constexpr double kRttNs = 100;
constexpr double kCapNs = 100000;

struct Outcomes {
  int hits = 0, near = 0, far = 0;
  int calls() const { return hits + near + far; }
};

// One call whose result is ready `t_ns` after posting.
void Call(FetchDelay* d, double shrink, double t_ns, Outcomes* o) {
  if (t_ns <= d->ns()) {
    d->OnHit(shrink);
    ++o->hits;
  } else if (t_ns <= d->ns() + kRttNs) {
    d->OnMiss(2, kCapNs);
    ++o->near;
  } else {
    d->OnMiss(3, kCapNs);
    ++o->far;
  }
}

// Results come 1-2 us after the request, evenly spread: the delay settles
// near the (1 - t) quantile, with near misses a fraction ~t of calls, and
// far misses only while it climbs. Without the shrink on hits the delay
// never comes back down (no near misses); without the growth on misses it
// stays at 0 (every call a far miss).
TEST(FetchDelayTest, SettlesWhereNearMissesAreTheTarget) {
  EXPECT_DOUBLE_EQ(FetchDelay::ShrinkFor(1.0 / 129), 1.0 / 2048);
  // ChannelOptions' default, and the default until 2026-11-26.
  for (const double target :
       {ChannelOptions().fetch.delay_miss_target, 1.0 / 129}) {
    SCOPED_TRACE(target);
    const double shrink = FetchDelay::ShrinkFor(target);
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> result_ns(1000, 2000);
    FetchDelay d;
    Outcomes warm;
    for (int i = 0; i < 200000; ++i) Call(&d, shrink, result_ns(rng), &warm);
    Outcomes o;
    for (int i = 0; i < 1000000; ++i) Call(&d, shrink, result_ns(rng), &o);
    const double near = static_cast<double>(o.near) / o.calls();
    EXPECT_GT(near, target / 2);
    EXPECT_LT(near, target * 2);
    EXPECT_LT(static_cast<double>(o.far) / o.calls(), target / 4);
    // The (1 - t) quantile of T: 2000 - 1000 t ns (1950 at 1/20, ~1992 at
    // 1/129).
    EXPECT_GT(d.ns(), 2000 - 1000 * target - 100);
    EXPECT_LT(d.ns(), 2000 + kRttNs);
  }
}

// A share p of calls are outliers (a descheduled thread: T = 1 ms, a far
// miss whatever the delay). Below ~11% (p / 256 = (1 - p) / 2048) they do
// not move the delay off the normal calls' quantile; above, the server
// really got slower for that share and the delay goes to its cap. With
// far misses grown as much as near ones, 5% of outliers would already
// drive it to the cap.
TEST(FetchDelayTest, OutliersMoveItOnlyPastTheirThreshold) {
  const double shrink = FetchDelay::ShrinkFor(1.0 / 129);
  for (const double p : {0.05, 0.25}) {
    SCOPED_TRACE(p);
    std::mt19937_64 rng(11);
    std::uniform_real_distribution<double> result_ns(1000, 2000);
    std::bernoulli_distribution outlier(p);
    FetchDelay d;
    Outcomes o;
    for (int i = 0; i < 1000000; ++i) {
      Call(&d, shrink, outlier(rng) ? 1e6 : result_ns(rng), &o);
    }
    if (p < 0.11) {
      EXPECT_LT(d.ns(), 2 * 2000);
    } else {
      EXPECT_GT(d.ns(), 0.9 * kCapNs);  // At the cap, less the last hits.
    }
  }
}

TEST(FetchDelayTest, StepsGrowthCapAndRestart) {
  FetchDelay d;
  EXPECT_EQ(d.ns(), 0);
  d.OnMiss(2, kCapNs);  // Leaves 0 by the step.
  EXPECT_DOUBLE_EQ(d.ns(), FetchDelay::kStepNs);
  d.Restart(1600, kCapNs);
  d.OnMiss(2, kCapNs);  // Near: 1/16.
  EXPECT_DOUBLE_EQ(d.ns(), 1600 * (1 + 1.0 / 16) + FetchDelay::kStepNs);
  d.Restart(1600, kCapNs);
  d.OnMiss(5, kCapNs);  // Far: 1/256.
  EXPECT_DOUBLE_EQ(d.ns(), 1600 * (1 + 1.0 / 256) + FetchDelay::kStepNs);
  d.OnHit(0.5);
  EXPECT_DOUBLE_EQ(d.ns(), (1600 * (1 + 1.0 / 256) + FetchDelay::kStepNs) / 2);
  for (int i = 0; i < 1000; ++i) d.OnMiss(2, 5000);
  EXPECT_DOUBLE_EQ(d.ns(), 5000);  // Never past the cap.
  d.Restart(-3, 5000);
  EXPECT_EQ(d.ns(), 0);
  d.Restart(9000, 5000);
  EXPECT_EQ(d.ns(), 5000);
  d.Restart(9000, 0);  // Adaptive delay off: cap 0.
  EXPECT_EQ(d.ns(), 0);
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
