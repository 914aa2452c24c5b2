// Copyright 2026 The rfrpc Authors.

#include "rpc/request_batcher.h"

#include <algorithm>

#include "rpc/fetch_timing.h"

namespace rfrpc {
namespace internal {

int RequestBatcher::InitialSize(const BatchingOptions& options) {
  return options.mode == BatchMode::kAuto
             ? std::clamp(options.size, 1, AutoBatchSizer::kMaxSize)
             : std::max(1, options.size);
}

RequestBatcher::RequestBatcher(const BatchingOptions& options)
    : mode_(options.mode),
      fixed_size_(std::max(1, options.size)),
      group_(std::max(1, options.group)),
      flush_(fixed_size_, options.bytes, options.timeout,
             options.idle_in_flight, options.sync_combine),
      sizer_(AutoBatchSizer::OptionsFor(options.sizer, options.size)) {}

void RequestBatcher::Turnaround(int64_t ns) {
  TrackLowerEnvelope(&turnaround_ns_, static_cast<double>(ns));
}

RequestBatcher::Recorded RequestBatcher::Record(
    absl::Span<const int64_t> latencies_ns, int64_t now_ns, int open_entries) {
  Recorded r;
  if (mode_ != BatchMode::kAuto || latencies_ns.empty()) return r;
  const int before = sizer_.size();
  r.adjustments = sizer_.RecordSpan(latencies_ns, now_ns);
  r.open_batch_full = sizer_.size() < before && open_entries > 0 &&
                      open_entries >= sizer_.size();
  return r;
}

absl::Span<const int64_t> CallbackLatencies::Finish(int64_t* end) {
  const size_t n = latencies_.size();
  if (n == 0) {
    *end = 0;
    return {};
  }
  const size_t last_group = (n - 1) / kClockEvery * kClockEvery;
  // The end of the last group: after its last callback (no read needed
  // when that group is one callback, whose start is its stamp).
  *end = n - last_group > 1 ? clock_() : stamps_.back();
  LatenciesToCallbackStart(stamps_, *end, kClockEvery,
                           absl::MakeSpan(latencies_));
  return latencies_;
}

}  // namespace internal
}  // namespace rfrpc
