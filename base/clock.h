// Copyright 2026 The rfrpc Authors.
//
// The clock rfrpc uses for deadlines, latencies and server times.
//
// UnixNanos() is the system's CLOCK_REALTIME in nanoseconds since the Unix
// epoch, so its values mix with absl::Time deadlines (absl::ToUnixNanos). A
// call reads it several times between its request and its result, so where
// the kernel itself keeps time with the CPU's time-stamp counter
// (clocksource "tsc": invariant and synchronized across CPUs), it is read
// from that counter: each thread keeps an anchor, a (counter,
// CLOCK_REALTIME) pair taken at most kRefreshNs (2 ms) ago, and
// extrapolates from it at the counter's rate, which the process measures
// against CLOCK_MONOTONIC (RateEstimator: 500 us at the first read, then
// the last one to two seconds). On the development machine (KVM) a read
// costs ~8 ns this way against ~18 ns for clock_gettime through the vDSO,
// which fences its counter read and converts through a timespec.
//
// What a reader gets:
// - Within about (rate error x 2 ms) of clock_gettime(CLOCK_REALTIME):
//   under 1 us once the rate is measured. An anchor whose predecessor ran
//   ahead starts from the predecessor's reading and slews back to the clock
//   by its end (NextAnchor), so one thread's readings do not go back.
// - A step of the system clock shows within 2 ms: forward at once, back at
//   once if by more than kMaxLeadNs (100 us), as clock_gettime shows it.
// - Readings of two threads agree to within that error too; a duration
//   taken across threads may come out slightly negative.
// - A suspend, a counter reset or a migrated VM restarts the rate's span
//   (the rate is kept until 500 us of new span measure it again).
// - Not async-signal-safe (a handler may see a half-written anchor), and a
//   child forked while another thread was refining the rate keeps its rate.
// Elsewhere (another clocksource, not x86-64, or RFRPC_CLOCK_SOURCE=syscall
// in the environment) every read is clock_gettime.
//
// Thread-safe.

#ifndef RFRPC_BASE_CLOCK_H_
#define RFRPC_BASE_CLOCK_H_

#include <time.h>

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#define RFRPC_CLOCK_HAVE_TSC 1
#endif

namespace rfrpc {
namespace internal {

// Clock `id` through clock_gettime, in nanoseconds.
inline int64_t ClockNanos(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// CLOCK_REALTIME through clock_gettime, always.
inline int64_t SystemUnixNanos() { return ClockNanos(CLOCK_REALTIME); }

#ifdef RFRPC_CLOCK_HAVE_TSC

namespace clock_internal {

// A thread's anchor. Zero-initialized (no TLS guard): tsc 0 sends the first
// read of each thread to the slow path.
struct Anchor {
  uint64_t tsc;    // The counter at the anchor; 0: none.
  int64_t ns;      // The time at the anchor (see NextAnchor).
  uint64_t mult;   // Nanoseconds per tick, 32.32 fixed point.
  uint64_t ticks;  // Ticks after `tsc` within which the anchor is used.
};
inline thread_local Anchor anchor;

// What anchor `a` reads at counter value `tsc`, for tsc - a.tsc up to
// a.ticks (the product then stays below 2^63).
inline int64_t AnchorRead(const Anchor& a, uint64_t tsc) {
  return a.ns + static_cast<int64_t>(((tsc - a.tsc) * a.mult) >> 32);
}
// Set once the process found the counter unusable: reads skip it.
inline std::atomic<bool> use_syscall{false};

// Takes a new anchor and returns the time at it (or reads clock_gettime
// where the counter is not used).
int64_t SlowUnixNanos();

// The logic behind the anchors, on readings passed in (base/clock.cc runs
// it on real ones; clock_test on made-up ones).

// A clock reading and the counter at the same instant.
struct Pair {
  uint64_t tsc;
  int64_t ns;
};

// How long an anchor is used before the thread reads the clock again.
inline constexpr int64_t kRefreshNs = 2'000'000;
// An anchor whose predecessor's extrapolation is ahead of the clock by at
// most this much starts from that extrapolation and slews back to the
// clock over its life; a larger lead is the system clock stepping back,
// and is taken.
inline constexpr int64_t kMaxLeadNs = 100'000;

// The anchor that follows `old` (tsc 0: none) from `real`, a reading of
// CLOCK_REALTIME, at the rate `mult` (nanoseconds per tick, 32.32 fixed
// point). Never behind what `old` gives at real.tsc, unless the clock
// stepped back by more than kMaxLeadNs.
Anchor NextAnchor(const Anchor& old, const Pair& real, uint64_t mult);

// The counter's rate, measured against CLOCK_MONOTONIC readings: over the
// last one to two seconds once the process is that old (so it follows the
// clock's frequency as NTP sets it), from 500 us at the start. A reading
// more than 5 ms off what the rate predicts since the span began (a
// suspend the counter counted and the clock did not, a counter reset, a
// migrated VM) starts the span again, keeping the rate until the new span
// is 500 us long. Thread-compatible.
class RateEstimator {
 public:
  RateEstimator(const Pair& first, const Pair& second);
  // Nanoseconds per tick, 32.32 fixed point; 0 if the first span was
  // empty (the counter is not usable).
  uint64_t mult() const { return mult_; }
  // Refines the rate with `now`; returns it.
  uint64_t Refine(const Pair& now);

 private:
  void Restart(const Pair& now);

  Pair base_;   // Where the span starts.
  Pair mid_{};  // A reading a second or more into it.
  bool has_mid_ = false;
  uint64_t span_ticks_;  // The span behind mult_.
  uint64_t mult_;
};

}  // namespace clock_internal

inline int64_t UnixNanos() {
  if (clock_internal::use_syscall.load(std::memory_order_relaxed)) {
    return SystemUnixNanos();
  }
  const uint64_t tsc = __rdtsc();
  const clock_internal::Anchor& a = clock_internal::anchor;
  if (__builtin_expect(tsc - a.tsc >= a.ticks, 0)) {
    return clock_internal::SlowUnixNanos();
  }
  return clock_internal::AnchorRead(a, tsc);
}

// Whether UnixNanos reads the time-stamp counter (false: clock_gettime).
bool ClockUsesTsc();

#else

inline int64_t UnixNanos() { return SystemUnixNanos(); }
inline bool ClockUsesTsc() { return false; }

#endif  // RFRPC_CLOCK_HAVE_TSC

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_BASE_CLOCK_H_
