// Copyright 2026 The rfrpc Authors.

#include "base/futex_mutex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/cpu_relax.h"

namespace rfrpc {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the futex word is the atomic's own 4 bytes");

// Spin reads of the word before sleeping. PAUSE is ~40-140 cycles
// depending on the core, so this is ~1-5 us: longer than the critical
// sections it protects, shorter than a futex round trip (sleep and wake-up
// cost several us each, more in a VM).
constexpr int kSpins = 64;

}  // namespace

void FutexMutex::LockSlow() {
  for (int i = 0; i < kSpins; ++i) {
    CpuRelax();
    uint32_t seen = word_.load(std::memory_order_relaxed);
    if (seen == kFree &&
        word_.compare_exchange_weak(seen, kHeld, std::memory_order_acquire,
                                    std::memory_order_relaxed)) {
      return;
    }
  }
  // From here this thread may sleep: it takes the lock as "held with
  // sleepers", so its own Unlock wakes whoever came after it (a spurious
  // wake-up at worst, never a lost one).
  while (word_.exchange(kSleepers, std::memory_order_acquire) != kFree) {
    // Sleeps only while the word is still kSleepers: an Unlock between the
    // exchange and the wait returns at once.
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAIT_PRIVATE,
            kSleepers, nullptr, nullptr, 0);
  }
}

void FutexMutex::WakeOne() {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_), FUTEX_WAKE_PRIVATE, 1,
          nullptr, nullptr, 0);
}

}  // namespace rfrpc
