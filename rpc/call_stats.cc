// Copyright 2026 The rfrpc Authors.

#include "rpc/call_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rfrpc {

uint64_t HistogramStats::count() const {
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

double HistogramStats::UpperBound(size_t i) const {
  if (i + 1 >= counts.size()) return std::numeric_limits<double>::infinity();
  return std::ldexp(1.0, first_log2 + static_cast<int>(i));
}

double HistogramStats::Quantile(double q) const {
  const uint64_t n = count();
  if (n == 0 || counts.size() < 2) return 0;
  q = std::min(std::max(q, 0.0), 1.0);
  const double rank = q * static_cast<double>(n);
  uint64_t below = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    if (static_cast<double>(below + counts[i]) >= rank) {
      if (i + 1 == counts.size()) return UpperBound(i - 1);
      // Bucket 0 starts at 0, the others at the previous bound.
      const double lo = i == 0 ? 0.0 : UpperBound(i - 1);
      const double hi = UpperBound(i);
      const double within = (rank - static_cast<double>(below)) /
                            static_cast<double>(counts[i]);
      return lo + (hi - lo) * within;
    }
    below += counts[i];
  }
  return UpperBound(counts.size() - 2);
}

void HistogramStats::Merge(const HistogramStats& other) {
  if (other.counts.empty()) return;
  if (counts.empty()) {
    first_log2 = other.first_log2;
    counts.assign(other.counts.size(), 0);
  }
  for (size_t i = 0; i < counts.size() && i < other.counts.size(); ++i) {
    counts[i] += other.counts[i];
  }
  sum += other.sum;
}

uint64_t MethodStats::failed() const {
  uint64_t n = 0;
  for (uint64_t f : failures) n += f;
  return n;
}

void MethodStats::Merge(const MethodStats& other) {
  calls += other.calls;
  for (int i = 0; i < kStatusCodes; ++i) failures[i] += other.failures[i];
  latency_ns.Merge(other.latency_ns);
  result_bytes.Merge(other.result_bytes);
}

}  // namespace rfrpc
