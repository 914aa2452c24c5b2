// Copyright 2026 The rfrpc Authors.

#include "rpc/batch_policy.h"

#include <algorithm>

namespace rfrpc {

AutoBatchSizer::AutoBatchSizer(const Options& options)
    : options_(options),
      size_(std::clamp(options.initial_size, options.min_size,
                       options.max_size)) {}

bool AutoBatchSizer::Record(absl::Duration latency) {
  if (latency > options_.latency_limit) ++above_;
  if (++in_window_ < options_.window) return false;
  last_k_ = static_cast<double>(above_) / in_window_;
  in_window_ = 0;
  above_ = 0;
  ++windows_;
  int next = size_;
  if (last_k_ > options_.alpha) {
    next = size_ - 1;
  } else if (last_k_ < 0.1 * options_.alpha) {
    next = size_ + 1;
  }
  next = std::clamp(next, options_.min_size, options_.max_size);
  if (next == size_) return false;
  size_ = next;
  ++adjustments_;
  return true;
}

}  // namespace rfrpc
