// Copyright 2026 The rfrpc Authors.
//
// Small helpers shared by the benchmark binaries: flag-list parsing,
// percentiles, CPU pinning, the host's load average (printed beside every
// figure, since the machine is shared) and a latency CDF writer.
//
// Header-only; every function is thread-compatible (no shared state).

#ifndef RFRPC_BENCHMARKS_BENCH_UTIL_H_
#define RFRPC_BENCHMARKS_BENCH_UTIL_H_

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace rfrpc {
namespace bench {

// "8,32,256" -> {8, 32, 256}. Entries that are not numbers are skipped and
// reported on stderr.
inline std::vector<int> ParseInts(absl::string_view s) {
  std::vector<int> out;
  for (absl::string_view p : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    int v;
    if (absl::SimpleAtoi(p, &v)) {
      out.push_back(v);
    } else {
      std::fprintf(stderr, "bench: not a number: %.*s\n",
                   static_cast<int>(p.size()), p.data());
    }
  }
  return out;
}

inline std::vector<std::string> ParseList(absl::string_view s) {
  return absl::StrSplit(s, ',', absl::SkipEmpty());
}

// The q-quantile (0 <= q <= 1) of `sorted`, which must be sorted ascending.
// 0 for an empty vector.
inline double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t k = static_cast<size_t>(q * sorted.size());
  if (k >= sorted.size()) k = sorted.size() - 1;
  return sorted[k];
}

inline double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / v.size();
}

// Pins the calling thread to cpu % hardware_concurrency.
inline void PinSelf(int cpu) {
  const int n = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % n, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// The 1-minute load average from /proc/loadavg, or -1.
inline double LoadAverage1() {
  double l = -1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

// Appends the CDF of `sorted` (ascending, microseconds) to `f` as CSV rows
// "<label>,<latency_us>,<fraction>": up to `points` evenly spaced quantiles
// plus the maximum. `f` must not be null; it is not closed.
inline void WriteCdf(FILE* f, const std::string& label,
                     const std::vector<double>& sorted, int points = 200) {
  if (sorted.empty()) return;
  for (int i = 0; i < points; ++i) {
    const double q = static_cast<double>(i) / points;
    std::fprintf(f, "%s,%.3f,%.4f\n", label.c_str(), Quantile(sorted, q), q);
  }
  // The tail in finer steps: 99.0 .. 99.99 %.
  for (double q : {0.991, 0.993, 0.995, 0.997, 0.999, 0.9999}) {
    std::fprintf(f, "%s,%.3f,%.4f\n", label.c_str(), Quantile(sorted, q), q);
  }
  std::fprintf(f, "%s,%.3f,1.0000\n", label.c_str(), sorted.back());
}

// The best of several repeats of a sync echo point: calls/s, every measured
// latency (us, ascending) and failed calls.
struct EchoPoint {
  double ops = -1;
  std::vector<double> sorted_us;
  unsigned long long failed = 0;

  // Folds in one repeat: per-thread latencies measured over `secs`. Keeps
  // the repeat with the most calls/s (other work on a shared machine only
  // slows runs down).
  void Keep(const std::vector<std::vector<double>>& per_thread, double secs,
            unsigned long long failed_calls) {
    std::vector<double> got;
    for (const auto& v : per_thread) got.insert(got.end(), v.begin(), v.end());
    if (got.size() / secs > ops) {
      ops = got.size() / secs;
      std::sort(got.begin(), got.end());
      sorted_us.swap(got);
      failed = failed_calls;
    }
  }

  // One line: CSV (system,transport,threads,size,ops,avg,p50,p99,calls,
  // failed,load) or a table row.
  void Print(const char* system, const std::string& transport, int threads,
             int size, bool csv) const {
    if (csv) {
      std::printf("%s,%s,%d,%d,%.0f,%.2f,%.2f,%.2f,%zu,%llu,%.2f\n", system,
                  transport.c_str(), threads, size, ops, Mean(sorted_us),
                  Quantile(sorted_us, 0.5), Quantile(sorted_us, 0.99),
                  sorted_us.size(), failed, LoadAverage1());
    } else {
      std::printf("%s %-5s threads=%d size=%6d %10.0f ops/s avg %8.2f p50 %8.2f "
                  "p99 %8.2f us failed %llu load %.2f\n",
                  system, transport.c_str(), threads, size, ops,
                  Mean(sorted_us), Quantile(sorted_us, 0.5),
                  Quantile(sorted_us, 0.99), failed, LoadAverage1());
    }
    std::fflush(stdout);
  }
};

}  // namespace bench
}  // namespace rfrpc

#endif  // RFRPC_BENCHMARKS_BENCH_UTIL_H_
