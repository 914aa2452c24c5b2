// Copyright 2026 The rfrpc Authors.
//
// The waiting rule on a scripted clock: what a waiting thread does (pause,
// yield, sleep) as its wait goes on and events come.

#include "rpc/waiter.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace rfrpc {
namespace internal {
namespace {

// What the waiter did; the clock advances 100 ns per pause and 1 us per
// yield, and by the sleep asked for.
struct Script {
  static inline int pauses = 0, yields = 0, sleeps = 0;
  static inline int64_t now = 1;
  static inline int64_t slept_ns = 0;
  static void Clear() {
    pauses = yields = sleeps = 0;
    now = 1;
    slept_ns = 0;
  }
  static Waiter::Ops Ops() {
    Waiter::Ops ops;
    ops.relax = [] {
      ++pauses;
      now += 100;
    };
    ops.yield = [] {
      ++yields;
      now += 1000;
    };
    ops.sleep_ns = [](int64_t ns) {
      ++sleeps;
      slept_ns += ns;
      now += ns;
    };
    ops.now_ns = [] { return now; };
    return ops;
  }
};

// A quiet wait spins kSpinRounds, then yields.
TEST(WaiterTest, SpinsThenYields) {
  Script::Clear();
  Waiter w(/*busy=*/false, Script::Ops());
  for (int i = 0; i < 1000; ++i) w.Wait();
  EXPECT_EQ(Script::pauses, Waiter::kSpinRounds - 1);
  EXPECT_EQ(Script::yields, 1000 - Waiter::kSpinRounds + 1);
  EXPECT_EQ(Script::sleeps, 0);
}

// Events (empty fetch READs every few polls) restart the spin, but a wait
// spins at most kMaxSpinRounds in all: then it yields between polls, so a
// server worker it woke on its core can run. Without the cap this wait
// never yields.
TEST(WaiterTest, EventsRestartTheSpinOnlyUpToTheCap) {
  Script::Clear();
  Waiter w(/*busy=*/false, Script::Ops());
  for (int i = 0; i < 20000; ++i) {
    w.Wait();
    if (i % 20 == 19) w.Reset();  // A READ came back empty.
  }
  EXPECT_LE(Script::pauses, Waiter::kMaxSpinRounds);
  EXPECT_GT(Script::yields, 0);
  // The wait goes on: yields, then sleeps once it has lasted 1 ms.
  EXPECT_GT(Script::sleeps, 0);

  // A finished call starts the next wait with a fresh spin.
  w.Restart();
  const int before = Script::pauses;
  for (int i = 0; i < 10; ++i) w.Wait();
  EXPECT_EQ(Script::pauses - before, 10);
}

// Past 1 ms a wait sleeps a sixteenth of its length between polls, at most
// 2 ms; busy_wait never sleeps.
TEST(WaiterTest, LongWaitsSleepAShare) {
  Script::Clear();
  Waiter w(/*busy=*/false, Script::Ops());
  while (Script::now < 101 * 1000 * 1000) w.Wait();
  EXPECT_GT(Script::sleeps, 50);
  EXPECT_LT(Script::sleeps, 120);
  EXPECT_LT(Script::yields, 1100);

  Script::Clear();
  Waiter busy(/*busy=*/true, Script::Ops());
  for (int i = 0; i < 5000; ++i) busy.Wait();
  EXPECT_EQ(Script::sleeps, 0);
  EXPECT_EQ(Script::yields, 5000 - Waiter::kSpinRounds + 1);
}

// Once a wait sleeps, its events are the call's sparse fetches: they do
// not restart the spin (on a slow host 256 polls after each would be
// milliseconds of CPU).
TEST(WaiterTest, ASleepingWaitDoesNotSpinAgainAfterAnEvent) {
  Script::Clear();
  Waiter w(/*busy=*/false, Script::Ops());
  while (Script::sleeps == 0) w.Wait();
  const int pauses = Script::pauses;
  for (int i = 0; i < 10; ++i) {
    w.Reset();
    w.Wait();
  }
  EXPECT_EQ(Script::pauses, pauses);
  EXPECT_EQ(Script::sleeps, 11);
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
