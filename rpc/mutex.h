// Copyright 2026 The rfrpc Authors.
//
// rfrpc::Mutex: a std::mutex with Abseil's thread-safety annotations, so
// ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED keep working under clang's
// -Wthread-safety, while ThreadSanitizer sees every lock (Debian's abseil is
// not built with TSan, so absl::Mutex locking is invisible to it and every
// guarded access would be reported as a race).
//
//   Mutex mu;
//   int n ABSL_GUARDED_BY(mu);
//   { MutexLock lock(&mu); ++n; }
//
// Thread-safe, as a mutex is.

#ifndef RFRPC_RPC_MUTEX_H_
#define RFRPC_RPC_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace rfrpc {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }

  // Waits on `cv` (REQUIRES: this mutex is held) until `pred()` is true or
  // `timeout` passes. Returns pred().
  template <typename Pred>
  bool AwaitWithTimeout(std::condition_variable* cv, absl::Duration timeout,
                        Pred pred) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    const bool ok = cv->wait_for(
        lock, std::chrono::nanoseconds(absl::ToInt64Nanoseconds(timeout)), pred);
    lock.release();  // Still held by the caller.
    return ok;
  }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_MUTEX_H_
