// Copyright 2026 The rfrpc Authors.

#include "rpc/batch_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace rfrpc {
namespace {

// The `rank`-th slowest of a window of `window` calls whose quantile is
// q = 1 - fraction: rank ceil(fraction * window), at least 1.
int RankOf(double fraction, int window) {
  return std::max(1, static_cast<int>(std::ceil(fraction * window - 1e-9)));
}

}  // namespace

AutoBatchSizer::AutoBatchSizer(const Options& options)
    : options_(options),
      window_(std::max(1, options.window)),
      limit_ns_(absl::ToInt64Nanoseconds(options.latency_limit)),
      keep_(RankOf(options.alpha, window_)),
      size_(std::clamp(options.initial_size, options.min_size,
                       options.max_size)) {
  slowest_.reserve(keep_);
}

int64_t AutoBatchSizer::Slowest(int rank) const {
  const size_t i = static_cast<size_t>(rank - 1);
  return i < slowest_.size() ? slowest_[i] : 0;
}

int AutoBatchSizer::Decide() const {
  const double alpha = options_.alpha;
  if (last_k_ > alpha) {
    if (!options_.proportional_steps) return size_ - 1;
    // Q(1 - alpha) > l_limit here: at least ceil(alpha * window) calls were
    // above it.
    const int64_t q = Slowest(RankOf(alpha, window_));
    const int to =
        q > 0 ? static_cast<int>(static_cast<double>(size_) * limit_ns_ / q)
              : size_ - 1;
    return std::clamp(to, size_ / 2, size_ - 1);
  }
  if (!options_.proportional_steps) {
    return last_k_ < 0.1 * alpha ? size_ + 1 : size_;
  }
  double to;
  if (last_k_ < 0.1 * alpha) {
    const int64_t q = Slowest(RankOf(0.1 * alpha, window_));
    to = q > 0 ? static_cast<double>(size_) * limit_ns_ / q : 2.0 * size_;
  } else {
    // In the band: grow only if the window's p95 (for alpha = 5%) is at
    // most half the bound, and then to where it would reach half. Late
    // calls that come from the host, not from N, keep k in the band at any
    // N; without this the sizer never grew again once it was there.
    const int64_t q = Slowest(RankOf(alpha, window_));
    to = q > 0 ? static_cast<double>(size_) * limit_ns_ / (2.0 * q)
               : 2.0 * size_;
    if (to < size_ + 1) return size_;
  }
  // After a shrink: half way there.
  if (shrunk_) to = size_ + (to - size_) / 2;
  return static_cast<int>(
      std::clamp(to, static_cast<double>(size_ + 1), 2.0 * size_));
}

bool AutoBatchSizer::Record(absl::Duration latency) {
  const int64_t ns = absl::ToInt64Nanoseconds(latency);
  if (ns > limit_ns_) ++above_;
  if (options_.proportional_steps) {
    if (static_cast<int>(slowest_.size()) < keep_) {
      slowest_.push_back(ns);
      std::push_heap(slowest_.begin(), slowest_.end(), std::greater<>());
    } else if (ns > slowest_.front()) {
      std::pop_heap(slowest_.begin(), slowest_.end(), std::greater<>());
      slowest_.back() = ns;
      std::push_heap(slowest_.begin(), slowest_.end(), std::greater<>());
    }
  }
  if (++in_window_ < window_) return false;
  last_k_ = static_cast<double>(above_) / in_window_;
  in_window_ = 0;
  above_ = 0;
  ++windows_;
  std::sort(slowest_.begin(), slowest_.end(), std::greater<>());
  int next = size_;
  if (holdoff_left_ > 0) {
    --holdoff_left_;
  } else {
    next = std::clamp(Decide(), options_.min_size, options_.max_size);
  }
  slowest_.clear();
  if (next == size_) return false;
  if (next < size_) shrunk_ = true;
  size_ = next;
  ++adjustments_;
  holdoff_left_ = options_.holdoff_windows;
  return true;
}

}  // namespace rfrpc
