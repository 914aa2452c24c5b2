// Copyright 2026 The rfrpc Authors.

#include "rpc/run_delay.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace rfrpc {
namespace {

TEST(RunDelayTest, ParsesTheSecondFieldOfASchedstatLine) {
  int64_t ns = -1;
  ASSERT_TRUE(RunDelay::Parse("95830441 668377 13\n", &ns));
  EXPECT_EQ(ns, 668377);
  EXPECT_FALSE(RunDelay::Parse("", &ns));
  EXPECT_FALSE(RunDelay::Parse("1 2\n", &ns));
  EXPECT_FALSE(RunDelay::Parse("1 2 3 4\n", &ns));
  EXPECT_FALSE(RunDelay::Parse("1 x 3\n", &ns));
  EXPECT_FALSE(RunDelay::Parse("1 -2 3\n", &ns));
}

TEST(RunDelayTest, WaitedAtLeastCountsOnlyWhatTheSpanMustHoldOfTheGrowth) {
  // A window of 12 ms whose last 10 ms were the span: of 8 ms of growth,
  // at most 2 ms fell before the span.
  EXPECT_EQ(RunDelay::WaitedAtLeast(8'000'000, 12'000'000, 10'000'000),
            6'000'000);
  // Growth the time before the span could hold alone: nothing is known.
  EXPECT_EQ(RunDelay::WaitedAtLeast(1'000'000, 12'000'000, 10'000'000), 0);
  // Never more than the span (a clock read late), never negative.
  EXPECT_EQ(RunDelay::WaitedAtLeast(30'000'000, 12'000'000, 10'000'000),
            10'000'000);
  EXPECT_EQ(RunDelay::WaitedAtLeast(5, 4, 10), 5);
  EXPECT_EQ(RunDelay::WaitedAtLeast(-5, 4, 10), 0);
}

// A thread that shares its CPU with another spinning thread waits for it:
// its run delay grows by a good part of the time it spins.
TEST(RunDelayTest, GrowsWhileAnotherThreadHasTheCpu) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &mask)) ++cpu;
  std::atomic<bool> stop{false};
  std::atomic<bool> hog_on{false};
  auto pin = [cpu] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
  };
  std::thread hog([&] {
    pin();
    hog_on.store(true);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  int64_t grew = -1;
  std::thread measured([&] {
    pin();
    while (!hog_on.load()) sched_yield();
    RunDelay d;
    if (!d.Open()) return;
    int64_t before, after;
    ASSERT_TRUE(d.Read(&before));
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
    while (std::chrono::steady_clock::now() < until) {
    }
    ASSERT_TRUE(d.Read(&after));
    grew = after - before;
  });
  measured.join();
  stop.store(true);
  hog.join();
  if (grew < 0) GTEST_SKIP() << "no /proc/thread-self/schedstat";
  // About 50 ms with the CPU shared evenly; more under load.
  EXPECT_GT(grew, 20'000'000) << "run delay grew by " << grew << " ns";
}

}  // namespace
}  // namespace rfrpc
