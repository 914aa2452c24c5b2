// Copyright 2026 The rfrpc Authors.
//
// rfrpc::FutexMutex: a mutex for the per-call paths, whose uncontended Lock
// and Unlock are one atomic instruction each, inline. std::mutex calls into
// glibc for both (pthread_mutex_lock and _unlock: ~57 instructions a pair,
// counted with callgrind), and a client connection takes its lock once to
// start a call and once per progress round. Contended, a locker spins a
// little (critical sections here are a few hundred ns) and then sleeps on a
// futex, as in Drepper's "Futexes Are Tricky" (mutex 3): the word is 0 free,
// 1 held, 2 held with possible sleepers, and only an Unlock that finds 2
// makes a system call.
//
// The same annotations as rfrpc::Mutex (ABSL_GUARDED_BY keeps working), and
// ThreadSanitizer sees the happens-before edges through the acquire and
// release operations on the word. No Await: a lock that a thread waits on
// with a condition variable stays an rfrpc::Mutex.
//
//   FutexMutex mu;
//   int n ABSL_GUARDED_BY(mu);
//   { MutexLock lock(&mu); ++n; }
//
// Not recursive; Unlock only by the holder. Thread-safe.

#ifndef RFRPC_BASE_FUTEX_MUTEX_H_
#define RFRPC_BASE_FUTEX_MUTEX_H_

#include <atomic>
#include <cstdint>

#include "absl/base/optimization.h"
#include "absl/base/thread_annotations.h"

namespace rfrpc {

class ABSL_LOCKABLE FutexMutex {
 public:
  FutexMutex() = default;
  FutexMutex(const FutexMutex&) = delete;
  FutexMutex& operator=(const FutexMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    uint32_t seen = kFree;
    if (ABSL_PREDICT_TRUE(word_.compare_exchange_strong(
            seen, kHeld, std::memory_order_acquire,
            std::memory_order_relaxed))) {
      return;
    }
    LockSlow();
  }

  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    uint32_t seen = kFree;
    return word_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire,
                                         std::memory_order_relaxed);
  }

  // Whether a locker may be asleep waiting for it (tests).
  bool HasSleepersForTesting() const {
    return word_.load(std::memory_order_relaxed) == kSleepers;
  }

  void Unlock() ABSL_UNLOCK_FUNCTION() {
    if (ABSL_PREDICT_FALSE(word_.exchange(kFree, std::memory_order_release) ==
                           kSleepers)) {
      WakeOne();
    }
  }

 private:
  static constexpr uint32_t kFree = 0;
  static constexpr uint32_t kHeld = 1;
  static constexpr uint32_t kSleepers = 2;

  void LockSlow();  // Spins, then sleeps until it holds the lock.
  void WakeOne();   // Wakes one sleeper, if any.

  std::atomic<uint32_t> word_{kFree};
};

}  // namespace rfrpc

#endif  // RFRPC_BASE_FUTEX_MUTEX_H_
