// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/calibrator.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/tuner/test_profiles.h"

namespace rfrpc {
namespace tuner {
namespace {

using ::testing::HasSubstr;

std::vector<SizePoint> Curve(
    const std::vector<std::pair<uint32_t, double>>& pts) {
  std::vector<SizePoint> out;
  for (const auto& [size, ops] : pts) {
    SizePoint p;
    p.set_size(size);
    p.set_ops_per_sec(ops);
    out.push_back(p);
  }
  return out;
}

TEST(DeriveLowHighTest, PaperShapedCurve) {
  // Flat to 256 B, sub-linear fall to 1024 B, then bandwidth-bound
  // (ops * size = 10 GB/s) — the paper's IB figures: L = 256, H = 1024.
  const LowHigh lh = DeriveLowHigh(Curve({{8, 20e6},
                                          {16, 20.5e6},  // Noise.
                                          {32, 19.8e6},
                                          {64, 20e6},
                                          {128, 19.5e6},
                                          {256, 18.5e6},
                                          {512, 15e6},
                                          {1024, 9.8e6},
                                          {2048, 4.9e6},
                                          {4096, 2.45e6},
                                          {8192, 1.22e6}}),
                                   0.10, 0.05);
  EXPECT_EQ(lh.low, 256u);
  EXPECT_EQ(lh.high, 1024u);
}

TEST(DeriveLowHighTest, NoiseDipDoesNotEndTheFlatPart) {
  // A single low reading at 32 B (another process ran) is pooled away.
  const LowHigh lh = DeriveLowHigh(
      Curve({{8, 10e6}, {16, 10e6}, {32, 8.5e6}, {64, 10e6}, {128, 10e6},
             {256, 5e6}, {512, 2.5e6}}),
      0.10, 0.02);
  EXPECT_EQ(lh.low, 128u);
  EXPECT_EQ(lh.high, 256u);
}

TEST(DeriveLowHighTest, ClampsAndOrders) {
  // Falls from the start: L clamps to kMinFetchSize; never bandwidth-bound:
  // H is the largest size.
  const LowHigh lh = DeriveLowHigh(
      Curve({{8, 10e6}, {16, 8e6}, {32, 7e6}, {64, 6.5e6}, {128, 6e6}}), 0.10,
      0.05);
  EXPECT_EQ(lh.low, kMinFetchSize);
  EXPECT_EQ(lh.high, 128u);
}

std::vector<ModePoint> Modes(
    const std::vector<std::tuple<uint32_t, double, double>>& pts) {
  std::vector<ModePoint> out;
  for (const auto& [t, rf, sr] : pts) {
    ModePoint m;
    m.set_server_time_ns(t);
    m.set_rf_ops_per_sec(rf);
    m.set_sr_ops_per_sec(sr);
    out.push_back(m);
  }
  return out;
}

TEST(DerivePayoffTest, PaperShapedCurve) {
  // rf leads by > 10% up to 6 us, within 10% from 7 us: P* = 7 us; with a
  // 1.4 us READ that is N = 5 (the paper's figures).
  const Payoff p = DerivePayoff(Modes({{0, 5e6, 2e6},
                                       {2000, 4e6, 1.9e6},
                                       {5000, 1.8e6, 1.5e6},
                                       {6000, 1.5e6, 1.3e6},
                                       {7000, 1.3e6, 1.2e6},
                                       {8000, 1.1e6, 1.05e6},
                                       {12000, 0.8e6, 0.79e6}}),
                                0.10, 1400, 16);
  EXPECT_EQ(p.server_time_ns, 7000u);
  EXPECT_EQ(p.max_retries, 5);
}

// The summary line says what P* is: where rf stops paying off, or, if it
// never does, only the largest P measured (it said "within 10% from
// P*=12000 ns" where rf was 2.1x server-reply there).
TEST(FormatProfileTest, SaysWhetherRfPaysOffThroughout) {
  SyntheticSpec spec;
  spec.ops = [](int, uint32_t, uint32_t) { return 1e6; };
  TunerProfile proto = MakeSyntheticProto(spec);
  proto.set_payoff_threshold(0.10);
  proto.set_payoff_server_time_ns(12000);
  for (const auto& m : Modes({{0, 5e6, 2e6}, {12000, 2.1e6, 1e6}})) {
    *proto.add_mode_curve() = m;
  }
  absl::StatusOr<Profile> throughout = Profile::FromProto(proto, "");
  ASSERT_TRUE(throughout.ok()) << throughout.status();
  EXPECT_THAT(FormatProfile(*throughout),
              HasSubstr("rf beats server_reply by more than 10% up to the "
                        "largest P measured, P*=12000 ns"));
  proto.mutable_mode_curve(1)->set_rf_ops_per_sec(1.05e6);
  absl::StatusOr<Profile> crosses = Profile::FromProto(proto, "");
  ASSERT_TRUE(crosses.ok()) << crosses.status();
  EXPECT_THAT(FormatProfile(*crosses),
              HasSubstr("rf within 10% of server_reply from P*=12000 ns"));
}

TEST(DerivePayoffTest, Extremes) {
  // rf never pays off: N = 1.
  Payoff p = DerivePayoff(Modes({{0, 1e6, 1e6}, {4000, 0.5e6, 0.5e6}}), 0.10,
                          100, 16);
  EXPECT_EQ(p.server_time_ns, 0u);
  EXPECT_EQ(p.max_retries, 1);
  // rf pays off throughout: P* = the largest P, N capped.
  p = DerivePayoff(Modes({{0, 2e6, 1e6}, {12000, 1e6, 0.5e6}}), 0.10, 100, 16);
  EXPECT_EQ(p.server_time_ns, 12000u);
  EXPECT_EQ(p.max_retries, 16);
}

TEST(MeasuredFetchSizesTest, Grid) {
  EXPECT_THAT(MeasuredFetchSizes(256, 1024, true),
              ::testing::ElementsAre(256, 512, 1024));
  EXPECT_THAT(MeasuredFetchSizes(200, 1024, false),
              ::testing::ElementsAre(200, 256, 384, 512, 768, 1024));
  EXPECT_THAT(MeasuredFetchSizes(64, 64, false), ::testing::ElementsAre(64));
}

// Not a timing assertion: the shapes must be sane and the profile valid.
// With a listen path given, as tuner_bench --address gives one: the raw
// loopback listens beside the in-process server, not on the same path
// (which failed with ALREADY_EXISTS).
TEST(CalibratorTest, ShortCalibrationOverShm) {
  CalibratorOptions o;
  o.provider = "shm";
  o.short_mode = true;
  // Not under TEST_TMPDIR: a socket path must fit 107 bytes.
  o.listen_address = absl::StrCat("/tmp/rfrpc-calibrator.", ::getpid());
  int lines = 0;
  o.progress = [&](const std::string& line) {
    ++lines;
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  const absl::Time start = absl::Now();
  absl::StatusOr<Profile> p = Calibrate(o);
  ASSERT_TRUE(p.ok()) << p.status();
  std::fprintf(stderr, "calibrated in %.1f s\n%s",
               absl::ToDoubleSeconds(absl::Now() - start),
               FormatProfile(*p).c_str());
  const TunerProfile& pr = p->proto();
  EXPECT_EQ(pr.provider(), "shm");
  EXPECT_EQ(pr.format_version(), kProfileFormatVersion);
  EXPECT_FALSE(pr.host().empty());
  EXPECT_GT(lines, 10);
  ASSERT_EQ(pr.read_curve_size(), 11);  // 8 .. 8192, powers of two.
  for (const SizePoint& pt : pr.read_curve()) {
    EXPECT_GT(pt.ops_per_sec(), 0);
    EXPECT_TRUE(std::isfinite(pt.ops_per_sec())) << pt.size();
  }
  // Monotonic-ish: large READs (2-8 KiB) move more bytes/s than 8 B ones
  // (256-1024x the size). Each point is measured for 30 ms, which one stall
  // of a loaded 2-core host can fill (a CI run saw the 8 KiB point at 42 K
  // READs/s, one per 24 us): the best of the three large points decides.
  double large_bytes_per_sec = 0;
  for (int i = 8; i <= 10; ++i) {
    large_bytes_per_sec =
        std::max(large_bytes_per_sec, pr.read_curve(i).ops_per_sec() *
                                          static_cast<double>(8u << i));
  }
  EXPECT_GT(large_bytes_per_sec, pr.read_curve(0).ops_per_sec() * 8 * 4);
  EXPECT_LE(p->low_size(), p->high_size());
  EXPECT_GE(p->low_size(), kMinFetchSize);
  EXPECT_LE(p->high_size(), 8192u);
  EXPECT_GE(p->max_retries(), 1);
  EXPECT_LE(p->max_retries(), 6);
  ASSERT_EQ(pr.mode_curve_size(), 5);
  // One synchronous client cannot beat 1 / P calls/s (whatever the load).
  EXPECT_EQ(pr.mode_curve(4).server_time_ns(), 12000u);
  EXPECT_LE(pr.mode_curve(4).rf_ops_per_sec(), 1e9 / 12000 * 1.02);
  EXPECT_LE(pr.mode_curve(4).sr_ops_per_sec(), 1e9 / 12000 * 1.02);
  for (const ModePoint& m : pr.mode_curve()) {
    EXPECT_GT(m.rf_ops_per_sec(), 0);
    EXPECT_GT(m.sr_ops_per_sec(), 0);
  }
  ASSERT_EQ(pr.throughput_size(), 2);
  const size_t fs = MeasuredFetchSizes(p->low_size(), p->high_size(), true).size();
  for (const ThroughputTable& t : pr.throughput()) {
    EXPECT_EQ(static_cast<size_t>(t.points_size()), fs * p->max_retries());
    for (const ThroughputPoint& pt : t.points()) {
      EXPECT_GT(pt.ops_per_sec(), 0);
      if (t.server_time_ns() > 0) {
        EXPECT_LE(pt.ops_per_sec(), 1e9 / t.server_time_ns() * 1.02);
      }
      // No bound on READs per call: on an oversubscribed host a spinning
      // client can fetch thousands of times while the worker is descheduled.
      EXPECT_GE(pt.reads_per_call(), 0);
    }
  }
  // It round-trips as text.
  absl::StatusOr<Profile> q = Profile::Parse(p->ToText(), "shm");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->ToText(), p->ToText());
}

// A point shorter than one completion wait: the measured interval must
// still hold completions and take time. A CI run on a loaded host had the
// 8 and 16 B points at "inf" READs/s: the thread woke past the point's
// end, and the interval began and ended at that one stamp.
TEST(CalibratorTest, PointsShorterThanAWaitAreStillFinite) {
  CalibratorOptions o;
  o.provider = "shm";
  o.short_mode = true;
  o.point_time = absl::Nanoseconds(1);
  o.warmup = absl::Nanoseconds(1);
  o.read_sizes = {8, 64};
  o.mode_server_times_ns = {0};
  o.table_server_times_ns = {0};
  o.listen_address = absl::StrCat("/tmp/rfrpc-calibrator-short.", ::getpid());
  absl::StatusOr<Profile> p = Calibrate(o);
  ASSERT_TRUE(p.ok()) << p.status();
  const TunerProfile& pr = p->proto();
  ASSERT_EQ(pr.read_curve_size(), 2);
  for (const SizePoint& pt : pr.read_curve()) {
    EXPECT_GT(pt.ops_per_sec(), 0) << pt.size();
    EXPECT_TRUE(std::isfinite(pt.ops_per_sec())) << pt.size();
  }
  EXPECT_TRUE(std::isfinite(pr.read_rtt_ns()));
  EXPECT_GT(pr.read_rtt_ns(), 0);
}

}  // namespace
}  // namespace tuner
}  // namespace rfrpc
