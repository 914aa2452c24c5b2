// Copyright 2026 The rfrpc Authors.

#include "base/clock.h"

#ifdef RFRPC_CLOCK_HAVE_TSC

#include <atomic>
#include <cstdint>
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
// A rate measured over this long is trusted: a later one that differs by
// more than 1% is taken as a break between the counter and the clock.
constexpr int64_t kTrustNs = 100'000'000;

int64_t ClockNanos(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// A clock reading paired with the counter: the clock read between two
// counter reads, paired with their middle. The tightest of a few tries, so
// a thread preempted between the reads (or a slow clock read, as under
// valgrind) does not skew the pair by the time it lost: an anchor taken
// from a skewed pair would be that far behind for its whole life.
struct Pair {
  uint64_t tsc;
  int64_t ns;
};
Pair ReadPair(clockid_t id) {
  Pair best{};
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = __rdtsc();
    const int64_t ns = ClockNanos(id);
    const uint64_t after = __rdtsc();
    if (after >= before && after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, ns};
    }
    if (best_width < 500) break;  // About 200 ns at 2.5 GHz.
  }
  return best;
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
    base_ = ReadPair(CLOCK_MONOTONIC);
    Pair now = base_;
    while (now.ns - base_.ns < kFirstRateNs) now = ReadPair(CLOCK_MONOTONIC);
    span_ticks_ = now.tsc - base_.tsc;
    mult_.store(MultOf(now.ns - base_.ns, span_ticks_),
                std::memory_order_relaxed);
    if (mult_.load(std::memory_order_relaxed) == 0) use_tsc_ = false;
  }

  bool use_tsc() const { return use_tsc_; }

  // The rate now, refined with `now` when no other thread is at it: a span
  // longer than the one behind the current rate replaces it. A rate
  // measured over at least kTrustNs that moves by more than 1% means the
  // counter and the clock parted (a suspend one of them did not count, a
  // migrated VM): the measure starts again from `now`, keeping the rate
  // until the new span says otherwise.
  uint64_t Refine(const Pair& now) {
    const uint64_t mult = mult_.load(std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return mult;
    const uint64_t ticks = now.tsc > base_.tsc ? now.tsc - base_.tsc : 0;
    const uint64_t next = ticks > 0 ? MultOf(now.ns - base_.ns, ticks) : 0;
    const uint64_t diff = next > mult ? next - mult : mult - next;
    const bool trusted =
        static_cast<int64_t>(
            (static_cast<unsigned __int128>(span_ticks_) * mult) >> 32) >=
        kTrustNs;
    if (next == 0 || (trusted && diff > mult / 100)) {
      base_ = now;
      span_ticks_ = 0;
      return mult;
    }
    if (ticks < span_ticks_) return mult;
    span_ticks_ = ticks;
    mult_.store(next, std::memory_order_relaxed);
    return next;
  }

 private:
  bool use_tsc_;
  std::mutex mu_;
  // Guarded by mu_ after construction: where the current span starts, and
  // the span (in ticks) behind the current rate.
  Pair base_{};
  uint64_t span_ticks_ = 0;
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
  const Pair mono = ReadPair(CLOCK_MONOTONIC);
  const Pair real_pair = ReadPair(CLOCK_REALTIME);
  const int64_t real = real_pair.ns;
  const uint64_t mult = rate.Refine(mono);
  a.tsc = real_pair.tsc;
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
