// Copyright 2026 The rfrpc Authors.
//
// rfrpc::Mutex: a std::mutex with Abseil's thread-safety annotations, so
// ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED keep working under clang's
// -Wthread-safety, while ThreadSanitizer sees every lock (Debian's abseil is
// not built with TSan, so absl::Mutex locking is invisible to it and every
// guarded access would be reported as a race). Waits go through a
// std::condition_variable that the caller notifies when the state a waiter
// tests changes (unlike absl::Mutex::Await, nothing re-checks on unlock).
//
//   Mutex mu;
//   std::condition_variable cv;
//   int n ABSL_GUARDED_BY(mu);
//   { MutexLock lock(&mu); ++n; cv.notify_all(); }
//   { MutexLock lock(&mu); mu.Await(&cv, [&] { return n > 0; }); }
//
// rfrpc::SharedMutex: the same over std::shared_mutex, with reader locks
// (ReaderMutexLock), for state read far more often than written.
//
// Thread-safe, as a mutex is.

#ifndef RFRPC_BASE_MUTEX_H_
#define RFRPC_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

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

  // Waits on `cv` (REQUIRES: this mutex is held) until `pred()` is true.
  // `cv` must not be null; it is not kept.
  template <typename Pred>
  void Await(std::condition_variable* cv, Pred pred)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    cv->wait(lock, pred);
    lock.release();  // Still held by the caller.
  }

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

// Holds `mu` for its scope. Any lock with Lock() and Unlock() (Mutex,
// FutexMutex): `MutexLock lock(&mu);` deduces which.
template <typename M = Mutex>
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(M* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  M* const mu_;
};

class ABSL_LOCKABLE SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `mu` exclusively for its scope.
class ABSL_SCOPED_LOCKABLE WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->Lock();
  }
  ~WriterMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds `mu` shared (with other readers) for its scope.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->ReaderLock();
  }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

}  // namespace rfrpc

#endif  // RFRPC_BASE_MUTEX_H_
