// Copyright 2026 The rfrpc Authors.
//
// The clock rfrpc uses for deadlines, latencies and server times.
//
// UnixNanos() is the same clock as absl::GetCurrentTimeNanos(): the system's
// CLOCK_REALTIME in nanoseconds since the Unix epoch, so its values mix with
// absl::Time deadlines (absl::ToUnixNanos). It reads the clock directly
// (vDSO): on the development machine (KVM, tsc clocksource) 23 ns against
// 52-61 ns for absl::GetCurrentTimeNanos, which an rf call reads about six
// times between its request and its result.
//
// Thread-safe.

#ifndef RFRPC_BASE_CLOCK_H_
#define RFRPC_BASE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace rfrpc {
namespace internal {

inline int64_t UnixNanos() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_BASE_CLOCK_H_
