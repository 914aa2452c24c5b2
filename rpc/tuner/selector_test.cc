// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/selector.h"

#include <cmath>
#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/tuner/test_profiles.h"

namespace rfrpc {
namespace tuner {
namespace {

// Peaks at R = 3 whatever F is.
double RetryShape(int r) { return 1.0 - 0.05 * std::abs(r - 3); }

Profile MakeProfile(SyntheticSpec spec) {
  absl::StatusOr<Profile> p = Profile::FromProto(MakeSyntheticProto(spec), "");
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// I flat in F over [L, H]: covering a large result costs nothing.
Profile FlatProfile() {
  SyntheticSpec spec;
  spec.ops = [](int r, uint32_t, uint32_t) { return 1e6 * RetryShape(r); };
  return MakeProfile(spec);
}

// I bandwidth-bound above L: ops/s falls as 1/F.
Profile BandwidthBoundProfile() {
  SyntheticSpec spec;
  spec.ops = [](int r, uint32_t f, uint32_t) {
    return 1e6 * RetryShape(r) * 128.0 / f;
  };
  return MakeProfile(spec);
}

TEST(SelectorTest, CandidatesAreLThenStepMultiplesThenH) {
  EXPECT_THAT(CandidateFetchSizes(100, 300, 64),
              ::testing::ElementsAre(100, 128, 192, 256, 300));
  EXPECT_THAT(CandidateFetchSizes(128, 256, 64),
              ::testing::ElementsAre(128, 192, 256));
  EXPECT_THAT(CandidateFetchSizes(256, 256, 64), ::testing::ElementsAre(256));
}

TEST(SelectorTest, AllSmallResultsPickSmallestCoveringF) {
  SizeHistogram h;
  h.Add(56, 500);
  h.Add(100, 300);
  h.Add(200, 200);
  // A gently falling I (1% per 1000 B): covering 200 B beats a second READ
  // for 20% of the results. (With the bandwidth-bound profile it would not:
  // I(256) = I(128) / 2 < 0.9 I(128); see the bimodal tests.)
  SyntheticSpec gentle;
  gentle.ops = [](int r, uint32_t f, uint32_t) {
    return 1e6 * RetryShape(r) * (1.0 - f / 100000.0);
  };
  for (const Profile& p : {FlatProfile(), MakeProfile(gentle)}) {
    absl::StatusOr<Selection> s = Select(p, h, 0);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->fetch_size, 256u);  // Candidates 128, 192, 256: 256 >= 200.
    EXPECT_EQ(s->retries, 3);
    EXPECT_DOUBLE_EQ(s->reads_per_call, 1.0);
    EXPECT_EQ(s->table.size(), p.candidate_fetch_sizes().size() * 5);
  }
}

TEST(SelectorTest, ResultsBelowLPickL) {
  SizeHistogram h;
  h.Add(56, 1000);
  absl::StatusOr<Selection> s = Select(BandwidthBoundProfile(), h, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fetch_size, 128u);
  EXPECT_EQ(s->retries, 3);
}

TEST(SelectorTest, BimodalCoversBigModeWhenFetchingItIsCheap) {
  // 90% of results are 100 B, 10% are 4000 B. With flat I, F = 4032 (the
  // smallest candidate >= 4000) gets every result in one READ:
  // T = I vs T(128) = I * (0.9 + 0.1 / 2).
  SizeHistogram h;
  h.Add(100, 900);
  h.Add(4000, 100);
  absl::StatusOr<Selection> s = Select(FlatProfile(), h, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fetch_size, 4032u);
  EXPECT_EQ(s->retries, 3);
  EXPECT_DOUBLE_EQ(s->score, 1e6);
  EXPECT_DOUBLE_EQ(s->reads_per_call, 1.0);
}

TEST(SelectorTest, BimodalLeavesBigModeToASecondReadWhenFetchingItIsDear) {
  // Same sizes, bandwidth-bound I: I(4032) = I(128) * 128 / 4032, far below
  // the 0.95 * I(128) that F = 128 gets with a second READ for 10%.
  SizeHistogram h;
  h.Add(100, 900);
  h.Add(4000, 100);
  absl::StatusOr<Selection> s = Select(BandwidthBoundProfile(), h, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fetch_size, 128u);
  EXPECT_EQ(s->retries, 3);
  EXPECT_DOUBLE_EQ(s->score, 0.95e6);
  EXPECT_DOUBLE_EQ(s->reads_per_call, 1.1);
}

TEST(SelectorTest, BimodalCrossoverFollowsTheProfile) {
  // I(F) = I0 * (1 - F / 10000): covering 4000 B costs I(4032) = 0.597 I0.
  // Half the results big: F = 128 scores 0.987 * 0.75 = 0.740 I0 -> small F.
  // 90% big: F = 128 scores 0.987 * 0.55 = 0.543 I0 < 0.597 I0 -> F = 4032.
  SyntheticSpec spec;
  spec.ops = [](int r, uint32_t f, uint32_t) {
    return 1e6 * RetryShape(r) * (1.0 - f / 10000.0);
  };
  const Profile p = MakeProfile(spec);
  SizeHistogram few_big;
  few_big.Add(100, 500);
  few_big.Add(4000, 500);
  absl::StatusOr<Selection> s = Select(p, few_big, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fetch_size, 128u);
  SizeHistogram mostly_big;
  mostly_big.Add(100, 100);
  mostly_big.Add(4000, 900);
  s = Select(p, mostly_big, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fetch_size, 4032u);
}

TEST(SelectorTest, TiesGoToSmallerFThenSmallerR) {
  SyntheticSpec spec;
  spec.ops = [](int, uint32_t, uint32_t) { return 2e6; };
  const Profile p = MakeProfile(spec);
  SizeHistogram h;
  h.Add(40, 10);
  absl::StatusOr<Selection> s = Select(p, h, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->fetch_size, 128u);
  EXPECT_EQ(s->retries, 1);
}

TEST(SelectorTest, ScoresWithinTheTieToleranceGoToTheSmallerF) {
  // Measured I creeps up slowly with F: noise on a flat curve. Within a 3%
  // tolerance every F ties with the best, so the smallest covering F wins;
  // with no tolerance (the default) the largest F does.
  SyntheticSpec spec;
  spec.ops = [](int r, uint32_t f, uint32_t) {
    return 1e6 * RetryShape(r) * (1.0 + 0.01 * std::log2(f / 128.0) / 10);
  };
  const Profile p = MakeProfile(spec);
  SizeHistogram h;
  h.Add(64, 100);
  absl::StatusOr<Selection> tolerant = Select(p, h, 0, kCliTieTolerance);
  ASSERT_TRUE(tolerant.ok());
  EXPECT_EQ(tolerant->fetch_size, 128u);
  EXPECT_EQ(tolerant->retries, 3);  // 5% apart in R: no tie.
  absl::StatusOr<Selection> strict = Select(p, h, 0);
  ASSERT_TRUE(strict.ok());
  EXPECT_EQ(strict->fetch_size, p.candidate_fetch_sizes().back());
  EXPECT_GT(strict->score, tolerant->score);
}

TEST(SelectorTest, TieToleranceOutsideZeroToOneIsInvalid) {
  SizeHistogram h;
  h.Add(64, 1);
  for (double bad : {-0.01, 1.0, 2.0}) {
    absl::StatusOr<Selection> s = Select(FlatProfile(), h, 0, bad);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(SelectorTest, ServerTimeSelectsTheMatchingTable) {
  // At P = 0 the best R is 1; at P = 4 us it is 5 (more retries before
  // giving up on fetching). In between the tables are interpolated.
  SyntheticSpec spec;
  spec.server_times_ns = {0, 4000};
  spec.ops = [](int r, uint32_t, uint32_t t) {
    return t == 0 ? 1e6 - 1e4 * r : 1e6 + 1e4 * r;
  };
  const Profile p = MakeProfile(spec);
  SizeHistogram h;
  h.Add(64, 10);
  EXPECT_EQ(Select(p, h, 0)->retries, 1);
  EXPECT_EQ(Select(p, h, 4000)->retries, 5);
  EXPECT_EQ(Select(p, h, 1e9)->retries, 5);  // Clamped to the last table.
  EXPECT_DOUBLE_EQ(p.Throughput(2, 128, 2000), 1e6);
}

TEST(SelectorTest, EmptyHistogramIsInvalid) {
  EXPECT_EQ(Select(FlatProfile(), SizeHistogram(), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SelectorTest, ParseList) {
  absl::StatusOr<SizeHistogram> h =
      SizeHistogram::ParseList("32,32, 4000\n56:10");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->total(), 13u);
  EXPECT_EQ(h->buckets().at(32), 2u);
  EXPECT_EQ(h->buckets().at(56), 10u);
  EXPECT_EQ(SizeHistogram::ParseList("32,x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SizeHistogram::ParseList("32:1:2").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SelectorTest, ScoreOfANonCandidate) {
  SizeHistogram h;
  h.Add(100, 1);
  h.Add(300, 1);
  const Candidate c = Score(FlatProfile(), h, 3, 200, 0);
  EXPECT_DOUBLE_EQ(c.reads_per_call, 1.5);
  EXPECT_DOUBLE_EQ(c.score, 1e6 * 0.75);
}

}  // namespace
}  // namespace tuner
}  // namespace rfrpc
