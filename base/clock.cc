// Copyright 2026 The rfrpc Authors.

#include "base/clock.h"

#ifdef RFRPC_CLOCK_HAVE_TSC

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>

namespace rfrpc {
namespace internal {
namespace clock_internal {
namespace {

// The shortest span a rate is measured over (also the first one, at a
// process's first read).
constexpr int64_t kFirstRateNs = 500'000;
// Once a span is this long, a reading this far into it becomes the next
// span's start: the rate covers the last one to two of these.
constexpr int64_t kWindowNs = 1'000'000'000;
// A reading this far from what the rate predicts over the span breaks it.
constexpr int64_t kBreakNs = 5'000'000;

// A clock reading paired with the counter: the clock read between two
// counter reads, paired with their middle. The tightest of a few tries, so
// a thread preempted between the reads (or a slow clock read, as under
// valgrind) does not skew the pair by the time it lost: an anchor taken
// from a skewed pair would be that far behind for its whole life. false if
// the counter never moved forward across a try.
bool ReadPair(clockid_t id, Pair* pair) {
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const uint64_t before = __rdtsc();
    const int64_t ns = ClockNanos(id);
    const uint64_t after = __rdtsc();
    if (after >= before && after - before < best_width) {
      best_width = after - before;
      *pair = {before + (after - before) / 2, ns};
    }
    if (best_width < 500) break;  // About 200 ns at 2.5 GHz.
  }
  return best_width != UINT64_MAX;
}

// Nanoseconds per tick in 32.32 fixed point, from `ns` over `ticks`.
uint64_t MultOf(int64_t ns, uint64_t ticks) {
  if (ns <= 0 || ticks == 0) return 0;
  return static_cast<uint64_t>((static_cast<unsigned __int128>(ns) << 32) /
                               ticks);
}

// `ticks` at `mult`, in nanoseconds.
int64_t NanosOf(uint64_t ticks, uint64_t mult) {
  return static_cast<int64_t>((static_cast<unsigned __int128>(ticks) * mult) >>
                              32);
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

// The process's rate: a RateEstimator fed by whichever thread re-anchors
// and finds no other at it.
class Rate {
 public:
  Rate() {
    if (!KernelKeepsTimeWithTsc()) return;
    Pair first{}, now{};
    if (!ReadPair(CLOCK_MONOTONIC, &first)) return;
    now = first;
    while (now.ns - first.ns < kFirstRateNs) {
      if (!ReadPair(CLOCK_MONOTONIC, &now)) return;
    }
    estimator_.emplace(first, now);
    mult_.store(estimator_->mult(), std::memory_order_relaxed);
  }

  bool use_tsc() const { return mult_.load(std::memory_order_relaxed) != 0; }

  uint64_t Refine(const Pair& now) {
    std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
    if (!lock.owns_lock()) return mult_.load(std::memory_order_relaxed);
    const uint64_t mult = estimator_->Refine(now);
    mult_.store(mult, std::memory_order_relaxed);
    return mult;
  }

 private:
  std::mutex mu_;
  std::optional<RateEstimator> estimator_;  // Guarded by mu_ after Rate().
  std::atomic<uint64_t> mult_{0};           // 0: the counter is not used.
};

Rate& TheRate() {
  static Rate* const rate = new Rate();
  return *rate;
}

}  // namespace

RateEstimator::RateEstimator(const Pair& first, const Pair& second)
    : base_(first),
      span_ticks_(second.tsc > first.tsc ? second.tsc - first.tsc : 0),
      mult_(MultOf(second.ns - first.ns, span_ticks_)) {}

void RateEstimator::Restart(const Pair& now) {
  base_ = now;
  has_mid_ = false;
  span_ticks_ = 0;
}

uint64_t RateEstimator::Refine(const Pair& now) {
  if (mult_ == 0) return 0;
  if (now.tsc <= base_.tsc) {
    Restart(now);  // The counter went back (reset by a resume).
    return mult_;
  }
  const uint64_t ticks = now.tsc - base_.tsc;
  const int64_t ns = now.ns - base_.ns;
  const int64_t predicted = NanosOf(ticks, mult_);
  if (ns <= 0 || ns - predicted > kBreakNs || predicted - ns > kBreakNs) {
    Restart(now);
    return mult_;
  }
  if (ns < kFirstRateNs) return mult_;
  if (ticks >= span_ticks_ || ns >= kWindowNs) {
    span_ticks_ = ticks;
    mult_ = MultOf(ns, ticks);
  }
  if (ns >= kWindowNs) {
    if (!has_mid_) {
      mid_ = now;
      has_mid_ = true;
    } else if (now.ns - mid_.ns >= kWindowNs) {
      base_ = mid_;
      mid_ = now;
    }
  }
  return mult_;
}

Anchor NextAnchor(const Anchor& old, const Pair& real, uint64_t mult) {
  Anchor next;
  next.tsc = real.tsc;
  next.ns = real.ns;
  next.mult = mult;
  next.ticks = static_cast<uint64_t>(
      (static_cast<unsigned __int128>(kRefreshNs) << 32) / mult);
  if (old.tsc == 0 || real.tsc < old.tsc ||
      real.tsc - old.tsc >= 2 * old.ticks) {
    return next;
  }
  // What the old anchor gives at the same instant.
  const int64_t prev = old.ns + NanosOf(real.tsc - old.tsc, old.mult);
  const int64_t lead = prev - real.ns;
  if (lead > 0 && lead <= kMaxLeadNs) {
    // The old anchor ran ahead (its rate a little fast): start where it is
    // and run slower, to meet the clock at this anchor's end.
    next.ns = prev;
    next.mult =
        mult - static_cast<uint64_t>((static_cast<unsigned __int128>(mult) *
                                      static_cast<uint64_t>(lead)) /
                                     static_cast<uint64_t>(kRefreshNs));
  }
  return next;
}

int64_t SlowUnixNanos() {
  Rate& rate = TheRate();
  Pair mono{}, real{};
  if (!rate.use_tsc() || !ReadPair(CLOCK_MONOTONIC, &mono) ||
      !ReadPair(CLOCK_REALTIME, &real)) {
    if (!rate.use_tsc()) use_syscall.store(true, std::memory_order_relaxed);
    return SystemUnixNanos();
  }
  const uint64_t mult = rate.Refine(mono);
  anchor = NextAnchor(anchor, real, mult);
  return anchor.ns;
}

}  // namespace clock_internal

bool ClockUsesTsc() { return clock_internal::TheRate().use_tsc(); }

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_CLOCK_HAVE_TSC
