// Copyright 2026 The rfrpc Authors.
//
// Small helpers shared by the benchmark binaries: flag-list parsing,
// percentiles, CPU pinning, the host's load average (printed beside every
// figure, since the machine is shared), a cheap per-operation clock and a
// latency CDF writer.
//
// Header-only; every function is thread-compatible (no shared state), and a
// TickClock is safe to read from several threads (its methods are const).

#ifndef RFRPC_BENCHMARKS_BENCH_UTIL_H_
#define RFRPC_BENCHMARKS_BENCH_UTIL_H_

#include <errno.h>  // program_invocation_short_name (GNU).
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/integer_text.h"

namespace rfrpc {
namespace bench {

// The list flag `flag` (e.g. "--sizes") with value "8,32,256" -> {8, 32,
// 256}. An entry that is not an integer, or not one an int holds, ends the
// program (status 2) with a message naming the flag: a list flag is
// mistyped, and running without the entry would measure something else
// than asked.
inline std::vector<int> ParseInts(absl::string_view flag, absl::string_view s) {
  std::vector<int> out;
  for (absl::string_view p : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    int v;
    if (absl::SimpleAtoi(p, &v)) {
      out.push_back(v);
    } else {
      const std::string why =
          IsIntegerText(p)
              ? absl::StrCat("is out of range [",
                             std::numeric_limits<int>::min(), ", ",
                             std::numeric_limits<int>::max(), "]")
              : std::string("is not an integer");
      std::fprintf(stderr, "%s: %.*s: \"%.*s\" %s (in \"%.*s\")\n",
                   program_invocation_short_name, static_cast<int>(flag.size()),
                   flag.data(), static_cast<int>(p.size()), p.data(),
                   why.c_str(), static_cast<int>(s.size()), s.data());
      std::fflush(stderr);
      std::_Exit(2);
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

// The median of `v` (the upper one for an even count); 0 for an empty one.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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

// Per-operation timestamps: on x86 the time-stamp counter (one RDTSC, as
// perftest's get_cycles), converted with a rate measured against
// steady_clock when constructed (a 50 ms sleep); steady_clock elsewhere.
// Worth it where clock_gettime is slow: inside the Soft-RoCE VM (qemu TCG)
// the guest's clocksource is the emulated HPET and one clock_gettime costs
// several microseconds, which a per-op steady_clock timestamp added to every
// latency measured there (~5.5 us against perftest's ~26 us READ).
//
//   const TickClock ticks;
//   const uint64_t t0 = ticks.Now();
//   ...
//   const double ns = ticks.NsBetween(t0, ticks.Now());
class TickClock {
 public:
  TickClock() {
#if defined(__x86_64__)
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t c0 = __builtin_ia32_rdtsc();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t c1 = __builtin_ia32_rdtsc();
    const double ns = std::chrono::duration<double, std::nano>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
    if (c1 > c0 && ns > 0) ns_per_tick_ = ns / static_cast<double>(c1 - c0);
#endif
  }

  // A timestamp in ticks; only differences (NsBetween) mean anything.
  uint64_t Now() const {
#if defined(__x86_64__)
    if (ns_per_tick_ > 0) return __builtin_ia32_rdtsc();
#endif
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(
            std::chrono::steady_clock::now().time_since_epoch())
            .count());
  }

  // Nanoseconds from `a` to `b` (two Now() values); 0 if b is not after a.
  double NsBetween(uint64_t a, uint64_t b) const {
    const double d = b > a ? static_cast<double>(b - a) : 0.0;
    return ns_per_tick_ > 0 ? d * ns_per_tick_ : d;
  }

  // "rdtsc" or "steady_clock": what Now() reads, for the benchmark's output.
  const char* source() const {
    return ns_per_tick_ > 0 ? "rdtsc" : "steady_clock";
  }

 private:
  double ns_per_tick_ = 0;  // 0: Now() is steady_clock nanoseconds.
};

// The process's TickClock, calibrated once on first use (50 ms), for
// per-call timestamps: a clock read costs 23-60 ns on the development
// machine and microseconds in the Soft-RoCE VM, and a timed latency
// includes about one of them.
inline const TickClock& ProcessTicks() {
  static const TickClock* const ticks = new TickClock;
  return *ticks;
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
