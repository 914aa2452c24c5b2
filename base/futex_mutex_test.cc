// Copyright 2026 The rfrpc Authors.

#include "base/futex_mutex.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace {

// Threads adding to a plain counter under the lock lose no increment.
// More threads than this host's 2 CPUs, so holders are preempted and
// lockers go past the spin into the futex sleep; without mutual exclusion
// the read-modify-writes below overlap and the total comes out short.
TEST(FutexMutexTest, ExcludesUnderContention) {
  FutexMutex mu;
  int64_t counter = 0;  // Guarded by mu.
  constexpr int kThreads = 6;
  constexpr int kIncrements = 200000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIncrements; ++i) {
        MutexLock lock(&mu);
        // A read and a later write, so an overlap loses an increment.
        const int64_t v = counter;
        if ((i & 1023) == 0) std::this_thread::yield();
        counter = v + 1;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, int64_t{kThreads} * kIncrements);
}

// A locker that finds the lock held past its spin sleeps, and the holder's
// Unlock wakes it: it gets the lock soon after, not never.
TEST(FutexMutexTest, UnlockWakesASleepingLocker) {
  FutexMutex mu;
  mu.Lock();
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    mu.Lock();
    got.store(true);
    mu.Unlock();
  });
  // Past its spin the waiter marks the word and sleeps in the kernel.
  const auto marked_by = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!mu.HasSleepersForTesting() &&
         std::chrono::steady_clock::now() < marked_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(mu.HasSleepersForTesting()) << "the locker never went to sleep";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.load());
  mu.Unlock();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!got.load() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(got.load()) << "the sleeping locker was not woken";
  waiter.join();
  // And the lock is free again.
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
}

// Several sleepers: each Unlock hands on, none is left asleep.
TEST(FutexMutexTest, EverySleeperGetsItsTurn) {
  FutexMutex mu;
  mu.Lock();
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      MutexLock lock(&mu);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      done.fetch_add(1);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(done.load(), 0);
  mu.Unlock();
  for (auto& t : threads) t.join();
  EXPECT_EQ(done.load(), 4);
}

TEST(FutexMutexTest, TryLockFailsWhileHeld) {
  FutexMutex mu;
  ASSERT_TRUE(mu.TryLock());
  bool other = true;
  std::thread t([&] { other = mu.TryLock(); });
  t.join();
  EXPECT_FALSE(other);
  mu.Unlock();
  EXPECT_TRUE(mu.TryLock());
  mu.Unlock();
}

}  // namespace
}  // namespace rfrpc
