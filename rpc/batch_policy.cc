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
      min_window_ns_(std::max<int64_t>(
          0, absl::ToInt64Nanoseconds(options.min_window_duration))),
      max_window_ns_(std::max<int64_t>(
          0, absl::ToInt64Nanoseconds(options.max_window_duration))),
      max_window_(min_window_ns_ > 0
                      ? static_cast<int>(std::min<int64_t>(
                            int64_t{kMaxWindowFactor} * window_, INT32_MAX))
                      : window_),
      keep_(RankOf(options.alpha, max_window_)),
      size_(std::clamp(options.initial_size, options.min_size,
                       options.max_size)),
      low_(kLowBuckets, 0) {
  if (options_.proportional_steps) slowest_.reserve(keep_);
  // The smallest power-of-two width whose kLowBuckets buckets cover
  // [0, l_limit] (an infinite limit: the widest, 2^53 ns).
  while (low_shift_ < 53 && (int64_t{kLowBuckets} << low_shift_) <= limit_ns_) {
    ++low_shift_;
  }
}

AutoBatchSizer::Options AutoBatchSizer::OptionsFor(const SizerOptions& sizer,
                                                   int initial_size) {
  Options o;
  o.latency_limit = sizer.latency_limit;
  o.alpha = sizer.alpha;
  o.window = std::max(1, sizer.window);
  o.min_size = 1;
  o.max_size = kMaxSize;
  o.initial_size = std::max(1, initial_size);
  o.proportional_steps = sizer.proportional_steps;
  o.holdoff_windows = std::max(0, sizer.holdoff_windows);
  o.min_window_duration = std::max(absl::ZeroDuration(), sizer.min_window);
  o.shrink_windows = std::max(1, sizer.shrink_windows);
  o.max_window_duration = std::max(absl::ZeroDuration(), sizer.max_window);
  o.peak_guard = sizer.peak_guard;
  o.grow_to = sizer.grow_to;
  return o;
}

int64_t AutoBatchSizer::Slowest(int rank) {
  const size_t i = static_cast<size_t>(rank - 1);
  // Among the kept latencies above l_limit (all of them unless more than
  // keep_ were; rank <= keep_ always).
  if (i < slowest_.size()) {
    // Descending: the i-th element is the (i + 1)-th slowest.
    std::nth_element(slowest_.begin(), slowest_.begin() + i, slowest_.end(),
                     std::greater<>());
    return slowest_[i];
  }
  // Among those at or below it: the lower end of the bucket holding it.
  int64_t left = static_cast<int64_t>(i) - above_window_ + 1;
  for (int b = kLowBuckets - 1; b >= 0; --b) {
    left -= low_[b];
    if (left <= 0) return int64_t{b} << low_shift_;
  }
  return 0;
}

int AutoBatchSizer::Decide(int calls) {
  const double alpha = options_.alpha;
  if (last_k_ > alpha) {
    if (over_streak_ < std::max(1, options_.shrink_windows)) return size_;
    if (!options_.proportional_steps) return size_ - 1;
    // Q(1 - alpha) > l_limit in each window of the streak: at least
    // ceil(alpha * calls) calls were above it.
    const int64_t q = streak_q_;
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
    const int64_t q = Slowest(RankOf(0.1 * alpha, calls));
    to = q > 0 ? static_cast<double>(size_) * limit_ns_ / q : 2.0 * size_;
  } else {
    // In the band: grow only if the window's p95 (for alpha = 5%) is at
    // most grow_to of the bound, and then to where it would reach that.
    // Late calls that come from the host, not from N, keep k in the band
    // at any N; without this the sizer never grew again once it was there.
    const int64_t q = Slowest(RankOf(alpha, calls));
    to = q > 0 ? static_cast<double>(size_) * options_.grow_to * limit_ns_ /
                     static_cast<double>(q)
               : 2.0 * size_;
    if (to < size_ + 1) return size_;
  }
  // After a shrink: half way there.
  if (shrunk_) to = size_ + (to - size_) / 2;
  return static_cast<int>(
      std::clamp(to, static_cast<double>(size_ + 1), 2.0 * size_));
}

void AutoBatchSizer::KeepSlowest(int64_t ns) {
  if (static_cast<int>(slowest_.size()) < keep_) {
    slowest_.push_back(ns);
    std::push_heap(slowest_.begin(), slowest_.end(), std::greater<>());
  } else if (ns > slowest_.front()) {
    std::pop_heap(slowest_.begin(), slowest_.end(), std::greater<>());
    slowest_.back() = ns;
    std::push_heap(slowest_.begin(), slowest_.end(), std::greater<>());
  }
}

int AutoBatchSizer::CallsDue(int64_t age) const {
  // A window too slow to fill its call count still ends once it is
  // max_window_ns_ old (and min_window_ns_, which wins if larger): at its
  // next call.
  if (max_window_ns_ > 0 && age >= std::max(max_window_ns_, min_window_ns_)) {
    return 0;
  }
  // Younger than min_window_ns_: only its call cap ends it.
  return min_window_ns_ > 0 && age < min_window_ns_ ? max_window_ : window_;
}

size_t AutoBatchSizer::CallsUntilDue(int64_t now_ns) const {
  // now_ns is the same for every call of a span, so is this.
  return static_cast<size_t>(
      std::max(1, CallsDue(now_ns - window_start_ns_) - in_window_));
}

int AutoBatchSizer::RecordSpan(absl::Span<const int64_t> latencies_ns,
                               int64_t now_ns) {
  int changes = 0;
  while (!latencies_ns.empty()) {
    if (in_window_ == 0) window_start_ns_ = now_ns;
    // Up to where the window may end: the same decisions as one call at a
    // time, with one window check per stretch instead of per call.
    const size_t take = std::min(latencies_ns.size(), CallsUntilDue(now_ns));
    int above = 0;
    if (options_.proportional_steps) {
      uint32_t* const low = low_.data();
      for (size_t i = 0; i < take; ++i) {
        const int64_t ns = latencies_ns[i];
        if (ns > limit_ns_) {
          ++above;
          KeepSlowest(ns);
        } else {
          const uint64_t b =
              static_cast<uint64_t>(std::max<int64_t>(ns, 0)) >> low_shift_;
          ++low[std::min<uint64_t>(b, kLowBuckets - 1)];
        }
      }
    } else {
      for (size_t i = 0; i < take; ++i) above += latencies_ns[i] > limit_ns_;
    }
    above_ += above;
    in_window_ += static_cast<int>(take);
    latencies_ns.remove_prefix(take);
    if (EndWindowIfDue(now_ns)) ++changes;
  }
  return changes;
}

bool AutoBatchSizer::EndWindowIfDue(int64_t now_ns) {
  const int64_t age = now_ns - window_start_ns_;
  if (in_window_ < CallsDue(age)) return false;
  const int calls = in_window_;
  // Calls per second of this window (0: no timestamps).
  const double rate =
      age > 0 ? static_cast<double>(calls) * 1e9 / static_cast<double>(age)
              : 0.0;
  // This window and the last were at one size: their rates' difference is
  // noise. (The last may be the hold-off window after a change, whose first
  // calls went out under the old size: during a climb no other pair is at
  // one size. Its share of the change only makes the noise look larger.)
  if (++ends_since_change_ >= 2 && rate > 0 && last_rate_ > 0) {
    const double move =
        std::abs(rate - last_rate_) / std::max(rate, last_rate_);
    rate_noise_ = noise_samples_ == 0
                      ? move
                      : rate_noise_ + kNoiseWeight * (move - rate_noise_);
    ++noise_samples_;
  }
  last_rate_ = rate;
  last_k_ = static_cast<double>(above_) / calls;
  above_window_ = above_;
  in_window_ = 0;
  above_ = 0;
  ++windows_;
  int next = size_;
  // Undoing a grow or a probe, or probing: not a shrink the latency asked
  // for, so later growth need not go half way.
  bool guard_move = false;
  if (cap_windows_left_ > 0) --cap_windows_left_;
  if (probe_wait_ > 0) --probe_wait_;
  if (holdoff_left_ > 0) {
    // Measured, not acted on, and no part of a streak: its first calls
    // went out under the old size.
    --holdoff_left_;
  } else if (probed_from_ > 0 &&
             (last_k_ > options_.alpha || rate < rate_before_probe_)) {
    // The smaller batch lost calls per second, or put more than alpha of
    // calls over the limit where the larger one did not (calls queued for
    // a batch that drains slower): back, and probe again only in a while.
    next = probed_from_;
    ++probes_undone_;
    probed_from_ = 0;
    guard_move = true;
  } else if (grown_from_ > 0 && last_k_ <= options_.alpha &&
             noise_samples_ >= kMinNoiseSamples &&
             rate < rate_before_ * (1.0 - GrowthLossAllowed())) {
    // The grow cost calls per second (and latency does not call for a
    // shrink): back, and stay there a while.
    next = grown_from_;
    growth_cap_ = grown_from_;
    cap_windows_left_ = kReprobeWindows;
    ++grows_undone_;
    grown_from_ = 0;
    guard_move = true;
  } else {
    grown_from_ = 0;
    if (probed_from_ > 0) {
      // Kept: the smaller batch held the rate. Latency alone would grow it
      // back at once; growth waits here a while.
      growth_cap_ = size_;
      cap_windows_left_ = kReprobeWindows;
      probed_from_ = 0;
    }
    if (last_k_ > options_.alpha) {
      const int64_t q = options_.proportional_steps
                            ? Slowest(RankOf(options_.alpha, calls))
                            : 0;
      streak_q_ = over_streak_ == 0 ? q : std::min(streak_q_, q);
      ++over_streak_;
    } else {
      over_streak_ = 0;
    }
    const int wanted = Decide(calls);
    next = std::clamp(wanted, options_.min_size, options_.max_size);
    if (next > size_ && cap_windows_left_ > 0) {
      next = std::max(size_, std::min(next, growth_cap_));
    }
    if (next > size_ && options_.peak_guard && rate > 0) {
      grown_from_ = size_;
      rate_before_ = rate;
    }
    if (wanted > size_ && size_ == options_.max_size && options_.peak_guard &&
        rate > 0 && size_ > options_.min_size) {
      // The mean of the first windows, then a moving average weighted
      // to the last few: a host's rate drifts over a long stay.
      const double weight =
          std::max(1.0 / (steady_windows_ + 1), kSteadyRateWeight);
      steady_rate_ = steady_windows_ == 0
                         ? rate
                         : steady_rate_ + weight * (rate - steady_rate_);
      if (++steady_windows_ >= kProbeAfterWindows && probe_wait_ == 0) {
        probed_from_ = size_;
        rate_before_probe_ = steady_rate_;
        next = std::max(options_.min_size, size_ - std::max(1, size_ / 4));
        probe_wait_ = kReprobeWindows;
        ++probes_;
        guard_move = true;
      }
    } else {
      steady_windows_ = 0;
    }
  }
  slowest_.clear();
  std::fill(low_.begin(), low_.end(), 0);
  if (next == size_) return false;
  if (next < size_ && !guard_move) shrunk_ = true;
  ends_since_change_ = 0;
  size_ = next;
  over_streak_ = 0;
  steady_windows_ = 0;
  ++adjustments_;
  holdoff_left_ = options_.holdoff_windows;
  return true;
}

void LatenciesToCallbackStart(absl::Span<const int64_t> stamps, int64_t end,
                              size_t every, absl::Span<int64_t> starts) {
  // Group by group: one division per group, not two per call (a hot loop
  // at millions of callbacks a second).
  const size_t n = starts.size();
  for (size_t m = 0, first = 0; first < n; ++m, first += every) {
    const int64_t from = stamps[m];
    const int64_t to = m + 1 < stamps.size() ? stamps[m + 1] : end;
    const size_t len = std::min(n, first + every) - first;
    if (to < from) {
      // A clock that stepped back: the per-call formula (rare).
      for (size_t i = 0; i < len; ++i) {
        starts[first + i] = from + (to - from) * static_cast<int64_t>(i) /
                                       static_cast<int64_t>(len) -
                            starts[first + i];
      }
      continue;
    }
    const int64_t step = (to - from) / static_cast<int64_t>(len);
    const int64_t rem = (to - from) % static_cast<int64_t>(len);
    // at = from + (to - from) * i / len, exactly, without dividing per i.
    int64_t whole = from;
    int64_t frac = 0;  // (to - from) * i mod len, kept in [0, len).
    for (size_t i = 0; i < len; ++i) {
      starts[first + i] = whole - starts[first + i];
      whole += step;
      frac += rem;
      if (frac >= static_cast<int64_t>(len)) {
        frac -= static_cast<int64_t>(len);
        ++whole;
      }
    }
  }
}

}  // namespace rfrpc
