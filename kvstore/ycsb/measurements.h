// Copyright 2026 The rfrpc Authors.
//
// Latency measurement for the YCSB client.
//
// Histogram: an HDR-style log-linear histogram of non-negative integers
// (latencies in nanoseconds). Values below 256 have exact buckets; above, each
// power of two is split into 128 buckets, so a bucket spans at most 1/128 of
// its values (< 0.8%) and a reported percentile is within 0.4% of a value
// that was recorded at that rank. Covers the whole int64 range; memory grows
// with the largest value (about 4.5 KB for values up to 1 ms, 35 KB up to
// 1000 s). Histograms merge exactly. Not thread-safe.
//
// Measurements: one per client thread; records latencies per operation name
// ("READ", "READ-FAILED", "VERIFY") and counts YCSB return codes per
// operation. Thread-safe: the owning thread records while the status thread
// takes interval snapshots (an uncontended mutex on the recording path).
// Recording is on every operation's path, so it is made cheap: Record()
// takes the latency and the return code under one lock, and the last
// operation names and return name used are remembered, so the common case
// compares a few bytes instead of hashing and allocating.
//
// TextExporter / ExportMeasurements: Java YCSB's text report,
//   [READ], Operations, 1000
//   [READ], AverageLatency(us), 12.345
//   [READ], MinLatency(us), 7
//   ...
//   [READ], Return=OK, 1000
// with doubles printed as Java's Double.toString prints them.

#ifndef RFRPC_KVSTORE_YCSB_MEASUREMENTS_H_
#define RFRPC_KVSTORE_YCSB_MEASUREMENTS_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"

namespace rfrpc {
namespace ycsb {

class Histogram {
 public:
  // Values below 2^(kSubBucketBits + 1) are recorded exactly.
  static constexpr int kSubBucketBits = 7;

  // Records `value`; negative values count as 0.
  void Record(int64_t value);
  // Adds every value recorded in `other`.
  void Merge(const Histogram& other);
  void Clear();

  int64_t count() const { return count_; }
  // 0 when empty.
  int64_t min() const { return count_ == 0 ? 0 : min_; }
  int64_t max() const { return count_ == 0 ? 0 : max_; }
  double mean() const;
  // The value at percentile `p` (0..100): the smallest recorded value v (to
  // within the bucket precision) such that at least p% of the values are
  // <= v; p = 0 gives min(), p = 100 max(). 0 when empty.
  int64_t ValueAtPercentile(double p) const;

  // Bucket arithmetic, public for tests.
  static int BucketIndex(uint64_t value);
  static uint64_t BucketLowest(int index);
  static uint64_t BucketHighest(int index);

 private:
  std::vector<int64_t> counts_;  // Grown on demand up to the top bucket used.
  int64_t count_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
  // Exact sum for the mean; long double keeps integer precision past 2^63.
  long double sum_ = 0;
};

// The statistics of one operation name.
struct OpStats {
  Histogram latency_ns;
  // YCSB return-code name ("OK", "NOT_FOUND") -> count.
  std::map<std::string, int64_t> returns;

  void Merge(const OpStats& other);
};

// Operation name -> statistics.
using MeasurementSnapshot = std::map<std::string, OpStats>;

void MergeSnapshot(const MeasurementSnapshot& from, MeasurementSnapshot* into);

class Measurements {
 public:
  // Records one latency under `op`.
  void Measure(absl::string_view op, int64_t latency_ns)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Counts one `return_name` (e.g. "OK") under `op`.
  void ReportReturn(absl::string_view op, absl::string_view return_name)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Measure(measured_op, latency_ns) and ReportReturn(op, return_name) in
  // one step (a call's latency goes under "READ" or "READ-FAILED", its
  // return code always under "READ").
  void Record(absl::string_view measured_op, int64_t latency_ns,
              absl::string_view op, absl::string_view return_name)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Since when (NowNanos) every call recorded has been SERVICE_UNAVAILABLE:
  // 0 while the last call got any other return. RecordCall keeps it; the
  // client loop stops a thread whose database has been unreachable too long.
  int64_t unavailable_since_ns() const {
    return unavailable_since_ns_.load(std::memory_order_relaxed);
  }
  void set_unavailable_since_ns(int64_t ns) {
    unavailable_since_ns_.store(ns, std::memory_order_relaxed);
  }

  // Set once a call other than a SCAN returned NOT_IMPLEMENTED: the
  // database does not serve that operation at all (an rfrpc server of
  // another service answers every Jakiro call so), and the client loop
  // stops the run rather than count it to the end. (A SCAN of a driver
  // whose keys have no order is NOT_IMPLEMENTED by design: CheckDriverCanRun
  // warns of it.)
  bool unsupported() const {
    return unsupported_.load(std::memory_order_relaxed);
  }
  void set_unsupported() { unsupported_.store(true, std::memory_order_relaxed); }

  // Merges what was recorded since the last call into `*into` and starts a
  // new interval. `into` must not be null.
  void TakeInterval(MeasurementSnapshot* into) ABSL_LOCKS_EXCLUDED(mu_);
  // Merges everything recorded so far into `*into` (not null).
  void MergeTotalInto(MeasurementSnapshot* into) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Op {
    std::string name;
    OpStats total;
    OpStats interval;
    // The entry of total.returns counted last (std::map nodes stay put),
    // or null.
    std::pair<const std::string, int64_t>* last_return = nullptr;
  };
  // The statistics of `op`, created on first use.
  Op* FindOp(absl::string_view op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void CountReturn(Op* o, absl::string_view return_name);

  mutable Mutex mu_;
  // Ops are boxed so the pointers in recent_ stay valid as the map grows.
  absl::flat_hash_map<std::string, std::unique_ptr<Op>> ops_
      ABSL_GUARDED_BY(mu_);
  // The ops found last, most recent first (a YCSB thread cycles through
  // one to three names).
  static constexpr int kRecent = 4;
  Op* recent_[kRecent] ABSL_GUARDED_BY(mu_) = {};
  std::atomic<int64_t> unavailable_since_ns_{0};
  std::atomic<bool> unsupported_{false};
};

// Java's Double.toString(d): the shortest digits that read back as `d`, in
// plain notation for 1e-3 <= |d| < 1e7 ("12.5", "3.0"), otherwise
// computerized scientific ("1.2345E7").
std::string FormatJavaDouble(double d);

// Java DecimalFormat("#.##"): at most two decimals, no trailing zeros.
std::string FormatTwoDecimals(double d);

// "95th", "99th", "1st", "99.9th" (YCSB's ordinal, with "th" also after
// fractional percentiles).
std::string PercentileLabel(double p);

// Java YCSB's TextMeasurementsExporter: "[metric], measurement, value".
class TextExporter {
 public:
  // `out` is not owned and must outlive the exporter.
  explicit TextExporter(std::ostream* out) : out_(out) {}
  void Write(absl::string_view metric, absl::string_view measurement,
             int64_t value);
  void Write(absl::string_view metric, absl::string_view measurement,
             double value);

 private:
  std::ostream* out_;
};

// The order operations are reported in: READ, UPDATE, INSERT, SCAN,
// READ-MODIFY-WRITE, DELETE, VERIFY, CLEANUP, then any others by name.
std::vector<std::string> ReportOrder(const MeasurementSnapshot& snapshot);

// Writes every operation's Operations, AverageLatency(us), MinLatency(us),
// MaxLatency(us), one <label>PercentileLatency(us) per entry of
// `percentiles`, then Return=<name> counts. Latencies are reported in
// microseconds; min, max and percentiles truncated to whole microseconds as
// Java YCSB's integer-microsecond recording does.
void ExportMeasurements(const MeasurementSnapshot& snapshot,
                        const std::vector<double>& percentiles,
                        TextExporter* exporter);

// The status-line summary of an interval:
// "[READ: Count=10, Max=12.5, Min=3.1, Avg=5.02, 90=8, 99=12, 99.9=12.5,
// 99.99=12.5] [UPDATE: ...]", latencies in microseconds.
std::string IntervalSummary(const MeasurementSnapshot& interval);

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_MEASUREMENTS_H_
