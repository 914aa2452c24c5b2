// Copyright 2026 The rfrpc Authors.
//
// Run twice: as clock_test (the counter where the kernel keeps time with
// it) and as clock_syscall_test (RFRPC_CLOCK_SOURCE=syscall: clock_gettime).

#include "base/clock.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace internal {
namespace {

// Readings may lie this far outside a bracket of two clock_gettime reads:
// the extrapolation's error (under ~1 us once the rate is known; a few us
// in a process's first milliseconds), with room for a loaded host.
constexpr int64_t kSlackNs = 20'000;

std::string KernelClockSource() {
  FILE* f = std::fopen(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return "";
  char name[32] = {};
  const bool read = std::fgets(name, sizeof(name), f) != nullptr;
  std::fclose(f);
  std::string s = read ? name : "";
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The counter is read exactly where the kernel keeps time with it, unless
// the environment turns it off.
TEST(ClockTest, ReadsTheCounterWhereTheKernelDoes) {
  const char* env = std::getenv("RFRPC_CLOCK_SOURCE");
  const bool off = env != nullptr && std::strcmp(env, "syscall") == 0;
#if defined(__x86_64__)
  EXPECT_EQ(ClockUsesTsc(), !off && KernelClockSource() == "tsc")
      << "clocksource " << KernelClockSource();
#else
  EXPECT_FALSE(ClockUsesTsc());
#endif
}

// UnixNanos is CLOCK_REALTIME: each reading lies between two
// clock_gettime reads around it, over 100 ms of reads with pauses longer
// than an anchor lasts (2 ms) and shorter, so readings come from fresh
// anchors and extrapolated ones alike.
TEST(ClockTest, UnixNanosIsTheSystemClock) {
  int64_t worst = 0;
  const int64_t end = SystemUnixNanos() + 100'000'000;
  int i = 0;
  while (SystemUnixNanos() < end) {
    const int64_t before = SystemUnixNanos();
    const int64_t ours = UnixNanos();
    const int64_t after = SystemUnixNanos();
    ASSERT_GE(ours, before - kSlackNs) << "read " << i;
    ASSERT_LE(ours, after + kSlackNs) << "read " << i;
    worst = std::max({worst, before - ours, ours - after});
    if (++i % 1000 == 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 3000));
    }
  }
  std::printf("%d reads, furthest outside the bracket: %lld ns\n", i,
              static_cast<long long>(worst));
}

// And absl's clock, which deadlines come from, agrees.
TEST(ClockTest, UnixNanosIsAbslsClock) {
  for (int i = 0; i < 1000; ++i) {
    const int64_t before = absl::GetCurrentTimeNanos();
    const int64_t ours = UnixNanos();
    const int64_t after = absl::GetCurrentTimeNanos();
    ASSERT_GE(ours, before - kSlackNs - 1'000'000);  // absl may interpolate.
    ASSERT_LE(ours, after + kSlackNs + 1'000'000);
  }
}

// One thread's readings never go back, across re-anchoring, on each of
// several threads at once.
TEST(ClockTest, MonotonicOnEachThread) {
  std::vector<std::thread> threads;
  std::vector<int> backwards(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &backwards] {
      int64_t last = UnixNanos();
      const int64_t end = last + 50'000'000;
      while (last < end) {
        for (int i = 0; i < 10000; ++i) {
          const int64_t now = UnixNanos();
          if (now < last) ++backwards[t];
          last = std::max(last, now);
        }
        std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(backwards[t], 0) << "thread " << t;
}

// Two threads' readings agree: a reading taken on one thread after a
// reading on another (ordered by a release/acquire handoff) is not earlier
// by more than the slack.
TEST(ClockTest, ThreadsAgree) {
  std::atomic<int64_t> handed{0};
  std::atomic<bool> done{false};
  int64_t worst = 0;
  std::thread producer([&] {
    while (!done.load(std::memory_order_acquire)) {
      handed.store(UnixNanos(), std::memory_order_release);
    }
  });
  const int64_t end = SystemUnixNanos() + 30'000'000;
  while (SystemUnixNanos() < end) {
    const int64_t theirs = handed.load(std::memory_order_acquire);
    const int64_t ours = UnixNanos();
    if (theirs != 0) worst = std::max(worst, theirs - ours);
  }
  done.store(true, std::memory_order_release);
  producer.join();
  EXPECT_LE(worst, kSlackNs);
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
