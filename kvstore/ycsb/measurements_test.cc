// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/measurements.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace ycsb {
namespace {

// The exact value at percentile p of sorted samples, with the histogram's
// rank definition (smallest value with at least p% at or below it).
int64_t ExactPercentile(const std::vector<int64_t>& sorted, double p) {
  const double r = p / 100.0 * static_cast<double>(sorted.size());
  int64_t rank = static_cast<int64_t>(std::ceil(r - 1e-9 * std::max(1.0, r)));
  rank = std::clamp<int64_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

TEST(HistogramTest, BucketsAreContiguousAndNarrow) {
  int previous = -1;
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{255}, uint64_t{256},
                     uint64_t{257}, uint64_t{1000}, uint64_t{123456789},
                     uint64_t{1} << 40, (uint64_t{1} << 63) - 1}) {
    const int index = Histogram::BucketIndex(v);
    EXPECT_GE(index, previous) << v;
    previous = index;
    EXPECT_LE(Histogram::BucketLowest(index), v);
    EXPECT_GE(Histogram::BucketHighest(index), v);
    const double width = static_cast<double>(Histogram::BucketHighest(index) -
                                             Histogram::BucketLowest(index));
    EXPECT_LE(width, std::max(0.0, static_cast<double>(v) / 128.0)) << v;
  }
  for (int i = 1; i < 7000; ++i) {
    ASSERT_EQ(Histogram::BucketLowest(i), Histogram::BucketHighest(i - 1) + 1)
        << i;
    ASSERT_EQ(Histogram::BucketIndex(Histogram::BucketLowest(i)), i);
  }
}

TEST(HistogramTest, EmptyHistogram) {
  Histogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.ValueAtPercentile(99), 0);
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (int v = 1; v <= 100; ++v) h.Record(v);
  EXPECT_EQ(h.count(), 100);
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 100);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5);
  EXPECT_EQ(h.ValueAtPercentile(50), 50);
  EXPECT_EQ(h.ValueAtPercentile(95), 95);
  EXPECT_EQ(h.ValueAtPercentile(99), 99);
  EXPECT_EQ(h.ValueAtPercentile(99.9), 100);
  EXPECT_EQ(h.ValueAtPercentile(0), 1);
  EXPECT_EQ(h.ValueAtPercentile(100), 100);
}

// Latency-like samples from a microsecond to seconds (in ns): percentiles
// within 1% of the exact ones; count, min, max and mean exact.
TEST(HistogramTest, PercentilesMatchExactWithinOnePercent) {
  std::mt19937_64 rng(2026);
  std::lognormal_distribution<double> latency(std::log(20000.0), 1.5);
  std::vector<int64_t> samples;
  Histogram h;
  long double sum = 0;
  for (int i = 0; i < 200000; ++i) {
    int64_t v = static_cast<int64_t>(latency(rng));
    if (i % 1000 == 0) v = 3'000'000'000;  // A few 3 s outliers.
    samples.push_back(v);
    sum += v;
    h.Record(v);
  }
  std::sort(samples.begin(), samples.end());
  EXPECT_EQ(h.count(), 200000);
  EXPECT_EQ(h.min(), samples.front());
  EXPECT_EQ(h.max(), samples.back());
  EXPECT_NEAR(h.mean(), static_cast<double>(sum / samples.size()), 1e-6);
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9,
                   99.99, 99.999}) {
    const double exact = static_cast<double>(ExactPercentile(samples, p));
    const double got = static_cast<double>(h.ValueAtPercentile(p));
    EXPECT_LE(std::fabs(got - exact), 0.01 * exact)
        << "p" << p << " exact " << exact << " got " << got;
  }
}

TEST(HistogramTest, MergeEqualsRecordingEverything) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int64_t> d(0, 10'000'000);
  Histogram all, a, b;
  for (int i = 0; i < 10000; ++i) {
    const int64_t v = d(rng);
    all.Record(v);
    (i % 3 == 0 ? a : b).Record(v);
  }
  Histogram merged;
  merged.Merge(a);
  merged.Merge(b);
  merged.Merge(Histogram());
  EXPECT_EQ(merged.count(), all.count());
  EXPECT_EQ(merged.min(), all.min());
  EXPECT_EQ(merged.max(), all.max());
  EXPECT_DOUBLE_EQ(merged.mean(), all.mean());
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    EXPECT_EQ(merged.ValueAtPercentile(p), all.ValueAtPercentile(p));
  }
}

TEST(MeasurementsTest, ThreadsRecordWhileIntervalsAreTaken) {
  Measurements m;
  std::thread writer([&m] {
    for (int i = 0; i < 100000; ++i) {
      m.Measure("READ", 1000 + i % 100);
      m.ReportReturn("READ", i % 10 == 0 ? "NOT_FOUND" : "OK");
    }
  });
  int64_t interval_count = 0;
  for (int i = 0; i < 50; ++i) {
    MeasurementSnapshot interval;
    m.TakeInterval(&interval);
    if (interval.count("READ")) {
      interval_count += interval["READ"].latency_ns.count();
    }
  }
  writer.join();
  MeasurementSnapshot last, total;
  m.TakeInterval(&last);
  interval_count += last["READ"].latency_ns.count();
  m.MergeTotalInto(&total);
  EXPECT_EQ(interval_count, 100000);
  EXPECT_EQ(total["READ"].latency_ns.count(), 100000);
  EXPECT_EQ(total["READ"].returns["OK"], 90000);
  EXPECT_EQ(total["READ"].returns["NOT_FOUND"], 10000);
}

TEST(MeasurementsTest, RecordCountsLatencyAndReturnUnderTheirNames) {
  Measurements m;
  // More names than the recent-name cache holds, in a rotating order, and
  // return names that change from call to call.
  const char* const ops[] = {"READ", "UPDATE", "INSERT", "SCAN", "DELETE",
                             "VERIFY"};
  for (int i = 0; i < 600; ++i) {
    const std::string op = ops[i % 6];
    if (i % 4 == 3) {
      m.Record(op + "-FAILED", 2000, op, "NOT_FOUND");
    } else {
      m.Record(op, 1000, op, i % 2 == 0 ? "OK" : "ERROR");
    }
  }
  m.Measure("READ", 5000);
  m.ReportReturn("READ", "OK");
  MeasurementSnapshot total;
  m.MergeTotalInto(&total);
  // Even i (READ, INSERT, DELETE): i % 4 is 0 or 2, never a failure, "OK".
  // Odd i (UPDATE, SCAN, VERIFY): i % 4 == 3 fails (NOT_FOUND, 2000 ns under
  // "<op>-FAILED"), i % 4 == 1 succeeds with "ERROR". 100 calls per op.
  for (const char* op : {"READ", "INSERT", "DELETE"}) {
    const int64_t extra = std::string(op) == "READ" ? 1 : 0;
    EXPECT_EQ(total[op].latency_ns.count(), 100 + extra) << op;
    EXPECT_EQ(total[op].latency_ns.min(), 1000) << op;
    EXPECT_EQ(total[op].returns, (std::map<std::string, int64_t>{
                                     {"OK", 100 + extra}}))
        << op;
    EXPECT_EQ(total.count(std::string(op) + "-FAILED"), 0u) << op;
  }
  EXPECT_EQ(total["READ"].latency_ns.max(), 5000);
  for (const char* op : {"UPDATE", "SCAN", "VERIFY"}) {
    const OpStats& failed = total[std::string(op) + "-FAILED"];
    EXPECT_EQ(total[op].latency_ns.count(), 50) << op;
    EXPECT_EQ(total[op].latency_ns.max(), 1000) << op;
    EXPECT_EQ(failed.latency_ns.count(), 50) << op;
    EXPECT_EQ(failed.latency_ns.min(), 2000) << op;
    EXPECT_TRUE(failed.returns.empty()) << op;
    EXPECT_EQ(total[op].returns, (std::map<std::string, int64_t>{
                                     {"ERROR", 50}, {"NOT_FOUND", 50}}))
        << op;
  }
}

TEST(FormatTest, JavaDoubleToString) {
  EXPECT_EQ(FormatJavaDouble(0.0), "0.0");
  EXPECT_EQ(FormatJavaDouble(3.0), "3.0");
  EXPECT_EQ(FormatJavaDouble(12.5), "12.5");
  EXPECT_EQ(FormatJavaDouble(0.1), "0.1");
  EXPECT_EQ(FormatJavaDouble(1000.0 / 3.0), "333.3333333333333");
  EXPECT_EQ(FormatJavaDouble(9794.31929480901), "9794.31929480901");
  EXPECT_EQ(FormatJavaDouble(0.001), "0.001");
  EXPECT_EQ(FormatJavaDouble(0.0001), "1.0E-4");
  EXPECT_EQ(FormatJavaDouble(1e7), "1.0E7");
  EXPECT_EQ(FormatJavaDouble(12345678.9), "1.23456789E7");
  EXPECT_EQ(FormatJavaDouble(9999999.0), "9999999.0");
  EXPECT_EQ(FormatJavaDouble(-2.5), "-2.5");
  EXPECT_EQ(FormatTwoDecimals(3.14159), "3.14");
  EXPECT_EQ(FormatTwoDecimals(2.0), "2");
  EXPECT_EQ(FormatTwoDecimals(2.5), "2.5");
}

TEST(FormatTest, PercentileLabels) {
  EXPECT_EQ(PercentileLabel(95), "95th");
  EXPECT_EQ(PercentileLabel(99), "99th");
  EXPECT_EQ(PercentileLabel(1), "1st");
  EXPECT_EQ(PercentileLabel(2), "2nd");
  EXPECT_EQ(PercentileLabel(3), "3rd");
  EXPECT_EQ(PercentileLabel(11), "11th");
  EXPECT_EQ(PercentileLabel(50), "50th");
  EXPECT_EQ(PercentileLabel(99.9), "99.9th");
}

TEST(ExportTest, JavaTextExporterLines) {
  MeasurementSnapshot s;
  for (int v = 1; v <= 100; ++v) s["UPDATE"].latency_ns.Record(v * 1000 + 500);
  s["UPDATE"].returns["OK"] = 99;
  s["UPDATE"].returns["ERROR"] = 1;
  s["READ"].latency_ns.Record(4000);
  s["READ"].returns["OK"] = 1;
  s["CLEANUP"].latency_ns.Record(7000);
  std::ostringstream out;
  TextExporter exporter(&out);
  ExportMeasurements(s, {95, 99, 99.9}, &exporter);
  EXPECT_EQ(out.str(),
            "[READ], Operations, 1\n"
            "[READ], AverageLatency(us), 4.0\n"
            "[READ], MinLatency(us), 4\n"
            "[READ], MaxLatency(us), 4\n"
            "[READ], 95thPercentileLatency(us), 4\n"
            "[READ], 99thPercentileLatency(us), 4\n"
            "[READ], 99.9thPercentileLatency(us), 4\n"
            "[READ], Return=OK, 1\n"
            "[UPDATE], Operations, 100\n"
            "[UPDATE], AverageLatency(us), 51.0\n"
            "[UPDATE], MinLatency(us), 1\n"
            "[UPDATE], MaxLatency(us), 100\n"
            "[UPDATE], 95thPercentileLatency(us), 95\n"
            "[UPDATE], 99thPercentileLatency(us), 99\n"
            "[UPDATE], 99.9thPercentileLatency(us), 100\n"
            "[UPDATE], Return=OK, 99\n"
            "[UPDATE], Return=ERROR, 1\n"
            "[CLEANUP], Operations, 1\n"
            "[CLEANUP], AverageLatency(us), 7.0\n"
            "[CLEANUP], MinLatency(us), 7\n"
            "[CLEANUP], MaxLatency(us), 7\n"
            "[CLEANUP], 95thPercentileLatency(us), 7\n"
            "[CLEANUP], 99thPercentileLatency(us), 7\n"
            "[CLEANUP], 99.9thPercentileLatency(us), 7\n");
}

TEST(ExportTest, IntervalSummary) {
  MeasurementSnapshot s;
  s["READ"].latency_ns.Record(2000);
  s["READ"].latency_ns.Record(4000);
  s["SCAN"];  // Nothing recorded this interval: left out.
  EXPECT_EQ(IntervalSummary(s),
            "[READ: Count=2, Max=4, Min=2, Avg=3, 50=2, 90=4, 99=4, 99.9=4, "
            "99.99=4]");
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
