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
// CLOCK_REALTIME) pair taken at most 2 ms ago (base/clock.cc), and
// extrapolates from it at the counter's rate, which the process measures
// against CLOCK_MONOTONIC over its lifetime (500 us at its first read, then
// longer spans as threads re-anchor). On the development machine (KVM) a
// read costs ~8 ns this way against ~18 ns for clock_gettime through the
// vDSO, which fences its counter read and converts through a timespec.
//
// What a reader gets:
// - Within ~1 us of clock_gettime(CLOCK_REALTIME) (within a few us in a
//   process's first milliseconds), re-anchored every 2 ms, so a step of the
//   system clock shows within 2 ms.
// - Monotonic on one thread: a new anchor earlier than the old one's
//   extrapolation by up to 100 us holds the old value; only a step of the
//   system clock back by more than that goes back (as clock_gettime does).
//   Readings of two threads agree to about the extrapolation error.
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

// CLOCK_REALTIME through clock_gettime, always.
inline int64_t SystemUnixNanos() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

#ifdef RFRPC_CLOCK_HAVE_TSC

namespace clock_internal {

// A thread's anchor. Zero-initialized (no TLS guard): tsc 0 sends the first
// read of each thread to the slow path.
struct Anchor {
  uint64_t tsc;    // The counter at the anchor; 0: none.
  int64_t ns;      // CLOCK_REALTIME at the anchor (or the held value).
  uint64_t mult;   // Nanoseconds per tick, 32.32 fixed point.
  uint64_t ticks;  // Ticks after `tsc` within which the anchor is used.
};
inline thread_local Anchor anchor;
// Set once the process found the counter unusable: reads skip it.
inline std::atomic<bool> use_syscall{false};

// Takes a new anchor (or reads clock_gettime where the counter is not
// used) and returns the time at `tsc`.
int64_t SlowUnixNanos(uint64_t tsc);

}  // namespace clock_internal

inline int64_t UnixNanos() {
  if (clock_internal::use_syscall.load(std::memory_order_relaxed)) {
    return SystemUnixNanos();
  }
  const uint64_t tsc = __rdtsc();
  const clock_internal::Anchor& a = clock_internal::anchor;
  const uint64_t delta = tsc - a.tsc;
  if (__builtin_expect(delta >= a.ticks, 0)) {
    return clock_internal::SlowUnixNanos(tsc);
  }
  return a.ns + static_cast<int64_t>((delta * a.mult) >> 32);
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
