// Copyright 2026 The rfrpc Authors.

#include "base/clock.h"

#ifdef RFRPC_CLOCK_HAVE_TSC

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace rfrpc {
namespace internal {
namespace {

// How long a thread's anchor is used before it reads CLOCK_REALTIME again.
constexpr int64_t kRefreshNs = 2'000'000;
// A new anchor earlier than what the old one gave by up to this much holds
// the old value instead (the extrapolation ran ahead); a larger step back is
// the system clock's, and is taken.
constexpr int64_t kMaxHoldNs = 100'000;
// How long the first read of a process measures the counter's rate for.
constexpr int64_t kFirstRateNs = 500'000;

int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// A counter reading paired with CLOCK_MONOTONIC: the counter read between
// two clock reads, and the clock taken as their middle.
struct Pair {
  uint64_t tsc;
  int64_t mono;
};
Pair ReadPair() {
  const int64_t before = MonotonicNanos();
  const uint64_t tsc = __rdtsc();
  const int64_t after = MonotonicNanos();
  return {tsc, before + (after - before) / 2};
}

// Nanoseconds per tick in 32.32 fixed point, from `ns` over `ticks`.
uint64_t MultOf(int64_t ns, uint64_t ticks) {
  if (ns <= 0 || ticks == 0) return 0;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) /
                               ticks);
}

bool KernelKeepsTimeWithTsc() {
  const char* env = std::getenv("RFRPC_CLOCK_SOURCE");
  if (env != nullptr && std::strcmp(env, "syscall") == 0) return false;
  FILE* f = std::fopen(
      "/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f == nullptr) return false;
  char name[32] = {};
  const bool read = std::fgets(name, sizeof(name), f) != nullptr;
  std::fclose(f);
  return read && std::strncmp(name, "tsc\n", 4) == 0;
}

// The process's measure of the counter's rate, refined as threads re-anchor:
// the longer the span since `base`, the closer.
class Rate {
 public:
  Rate() : use_tsc_(KernelKeepsTimeWithTsc()) {
    if (!use_tsc_) return;
    base_ = ReadPair();
    Pair now = base_;
    while (now.mono - base_.mono < kFirstRateNs) now = ReadPair();
    mult_.store(MultOf(now.mono - base_.mono, now.tsc - base_.tsc),
                std::memory_order_relaxed);
    if (mult_.load(std::memory_order_relaxed) == 0) use_tsc_ = false;
  }

  bool use_tsc() const { return use_tsc_; }

  // The rate now, refined with `now` when no other thread is at it. A span
  // whose rate is off by more than 0.1% (a suspend the counter did or did
  // not count, a migrated VM) starts the measure again from `now`.
  uint64_t Refine(const Pair& now) {
    uint64_t mult = mult_.load(std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return mult;
    const uint64_t next =
        now.tsc > base_.tsc ? MultOf(now.mono - base_.mono, now.tsc - base_.tsc)
                            : 0;
    const uint64_t diff = next > mult ? next - mult : mult - next;
    if (next == 0 || diff > mult / 1000) {
      base_ = now;
      return mult;
    }
    mult_.store(next, std::memory_order_relaxed);
    return next;
  }

 private:
  bool use_tsc_;
  std::mutex mu_;
  Pair base_{};  // Guarded by mu_ after construction.
  std::atomic<uint64_t> mult_{0};
};

Rate& TheRate() {
  static Rate* const rate = new Rate();
  return *rate;
}

}  // namespace

bool ClockUsesTsc() { return TheRate().use_tsc(); }

namespace clock_internal {

int64_t SlowUnixNanos(uint64_t tsc) {
  Rate& rate = TheRate();
  if (!rate.use_tsc()) {
    use_syscall.store(true, std::memory_order_relaxed);
    return SystemUnixNanos();
  }
  Anchor& a = anchor;
  // What the old anchor gives now, if it is recent enough to say.
  bool have_prev = false;
  int64_t prev = 0;
  if (a.tsc != 0 && tsc - a.tsc < 2 * a.ticks) {
    have_prev = true;
    prev = a.ns + static_cast<int64_t>(((tsc - a.tsc) * a.mult) >> 32);
  }
  const Pair mono = ReadPair();
  const int64_t real = SystemUnixNanos();
  const uint64_t at = __rdtsc();
  const uint64_t mult = rate.Refine(mono);
  a.tsc = at;
  a.ns = have_prev && real < prev && prev - real <= kMaxHoldNs ? prev : real;
  a.mult = mult;
  // kRefreshNs in ticks: ns << 32 / mult.
  a.ticks = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(kRefreshNs) << 32) / mult);
  return a.ns;
}

}  // namespace clock_internal
}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_CLOCK_HAVE_TSC
