// Copyright 2026 The rfrpc Authors.
//
// Pure batching decisions, tested with a fake clock: when a client flushes
// its open request batch (paper §4.1), and the automatic batch sizer that
// keeps at most alpha of calls above a latency bound (paper §4.2).
// Thread-compatible.

#ifndef RFRPC_RPC_BATCH_POLICY_H_
#define RFRPC_RPC_BATCH_POLICY_H_

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"

namespace rfrpc {

enum class FlushReason { kNone, kEntries, kBytes, kTimeout };

// Flush when the batch holds N requests, or its payload would exceed L, or T
// has passed since its first request.
class FlushPolicy {
 public:
  FlushPolicy(int max_entries, size_t max_bytes, absl::Duration timeout)
      : max_entries_(max_entries),
        max_bytes_(max_bytes),
        timeout_ns_(absl::ToInt64Nanoseconds(timeout)) {}

  // Before adding an entry of `entry_bytes` to a batch of `entries` entries
  // and `bytes` payload bytes: kBytes if the batch must go first because
  // the entry would push it past L. A lone entry larger than L still goes
  // (alone).
  FlushReason BeforeAdd(int entries, size_t bytes, size_t entry_bytes) const {
    return entries > 0 && bytes + entry_bytes > max_bytes_ ? FlushReason::kBytes
                                                           : FlushReason::kNone;
  }
  // After adding: kEntries once the batch holds N (or `size_now` when the
  // auto sizer has set a smaller or larger N).
  FlushReason AfterAdd(int entries, int size_now) const {
    return entries >= size_now ? FlushReason::kEntries : FlushReason::kNone;
  }
  // Periodically: kTimeout once T passed since the first entry.
  FlushReason OnTick(int entries, int64_t first_ns, int64_t now_ns) const {
    return entries > 0 && now_ns - first_ns >= timeout_ns_ ? FlushReason::kTimeout
                                                          : FlushReason::kNone;
  }

  int max_entries() const { return max_entries_; }
  size_t max_bytes() const { return max_bytes_; }
  int64_t timeout_ns() const { return timeout_ns_; }

 private:
  int max_entries_;
  size_t max_bytes_;
  int64_t timeout_ns_;
};

// Paper §4.2: over each window of `window` calls, k = fraction of calls whose
// latency exceeded l_limit. k > alpha: batch size - 1; k < 0.1 * alpha:
// + 1; otherwise keep. The size stays within [min_size, max_size].
class AutoBatchSizer {
 public:
  struct Options {
    absl::Duration latency_limit = absl::Microseconds(100);  // l_limit.
    double alpha = 0.05;
    int window = 1000;   // Calls per decision.
    int min_size = 1;
    int max_size = 128;
    int initial_size = 1;
  };

  explicit AutoBatchSizer(const Options& options);

  // Records one call's latency; at the end of a window adjusts the size.
  // Returns true if the size changed.
  bool Record(absl::Duration latency);

  int size() const { return size_; }
  double last_k() const { return last_k_; }
  uint64_t adjustments() const { return adjustments_; }
  uint64_t windows() const { return windows_; }

 private:
  const Options options_;
  int size_;
  int in_window_ = 0;
  int above_ = 0;
  double last_k_ = 0;
  uint64_t adjustments_ = 0;
  uint64_t windows_ = 0;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_BATCH_POLICY_H_
