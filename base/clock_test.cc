// Copyright 2026 The rfrpc Authors.

#include "base/clock.h"

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace internal {
namespace {

// UnixNanos and absl::GetCurrentTimeNanos read the same clock: a reading of
// one lies between two of the other (absl may interpolate its reading, so
// allow it a millisecond either way).
TEST(ClockTest, UnixNanosIsAbslsClock) {
  constexpr int64_t kSlackNs = 1000 * 1000;
  for (int i = 0; i < 1000; ++i) {
    const int64_t before = absl::GetCurrentTimeNanos();
    const int64_t ours = UnixNanos();
    const int64_t after = absl::GetCurrentTimeNanos();
    ASSERT_GE(ours, before - kSlackNs);
    ASSERT_LE(ours, after + kSlackNs);
  }
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
