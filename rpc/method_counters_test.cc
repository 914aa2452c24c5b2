// Copyright 2026 The rfrpc Authors.
//
// The per-method counters: histogram bucketing at the bounds, quantiles,
// server tables with unknown ids, and per-thread client blocks that keep
// their counts when threads and channels come and go.

#include "rpc/method_counters.h"

#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace internal {
namespace {

constexpr int kNotFound = static_cast<int>(absl::StatusCode::kNotFound);
constexpr int kDeadline = static_cast<int>(absl::StatusCode::kDeadlineExceeded);

TEST(Log2HistogramTest, BucketsHoldValuesUpToTheirBound) {
  using H = Log2Histogram<7, 24>;  // 128 ns .. 2^30 ns, then +Inf.
  EXPECT_EQ(H::BucketOf(0), 0);
  EXPECT_EQ(H::BucketOf(1), 0);
  EXPECT_EQ(H::BucketOf(128), 0);
  EXPECT_EQ(H::BucketOf(129), 1);
  EXPECT_EQ(H::BucketOf(256), 1);
  EXPECT_EQ(H::BucketOf(257), 2);
  EXPECT_EQ(H::BucketOf(1000), 3);  // (512, 1024]
  EXPECT_EQ(H::BucketOf(uint64_t{1} << 30), 23);
  EXPECT_EQ(H::BucketOf((uint64_t{1} << 30) + 1), 24);  // +Inf.
  EXPECT_EQ(H::BucketOf(~uint64_t{0}), 24);
}

TEST(Log2HistogramTest, SnapshotHasLayoutCountsAndSum) {
  Log2Histogram<4, 3> h;  // 16, 32, 64, +Inf.
  for (uint64_t v : {1, 16, 17, 64, 65, 1000}) h.Record(v);
  HistogramStats s;
  h.AddTo(&s);
  EXPECT_EQ(s.first_log2, 4);
  EXPECT_THAT(s.counts, ::testing::ElementsAre(2, 1, 1, 2));
  EXPECT_EQ(s.sum, 1u + 16 + 17 + 64 + 65 + 1000);
  EXPECT_EQ(s.count(), 6u);
  EXPECT_EQ(s.UpperBound(0), 16.0);
  EXPECT_EQ(s.UpperBound(2), 64.0);
  EXPECT_TRUE(std::isinf(s.UpperBound(3)));
}

TEST(HistogramStatsTest, QuantileInterpolatesWithinABucket) {
  HistogramStats s;
  s.first_log2 = 4;
  s.counts = {0, 4, 0, 0};  // Four values in (16, 32].
  EXPECT_DOUBLE_EQ(s.Quantile(0.5), 24.0);
  EXPECT_DOUBLE_EQ(s.Quantile(1.0), 32.0);
  s.counts = {2, 0, 0, 2};  // Half past the last finite bound: report it.
  EXPECT_DOUBLE_EQ(s.Quantile(0.25), 8.0);
  EXPECT_DOUBLE_EQ(s.Quantile(0.99), 64.0);
  EXPECT_EQ(HistogramStats().Quantile(0.5), 0.0);
}

TEST(MethodCountersTest, ServedCountsCodesTimeAndOkResultSizes) {
  MethodCounters m;
  m.Served(0, 500, 100);
  m.Served(kNotFound, 700, 9999);  // A failed call's size is not a result.
  m.Served(99, 100, 0);            // Out of range: UNKNOWN.
  MethodStats s;
  m.AddTo(&s);
  EXPECT_EQ(s.calls, 3u);
  EXPECT_EQ(s.failures[kNotFound], 1u);
  EXPECT_EQ(s.failures[static_cast<int>(absl::StatusCode::kUnknown)], 1u);
  EXPECT_EQ(s.failures[0], 0u);
  EXPECT_EQ(s.failed(), 2u);
  EXPECT_EQ(s.latency_ns.count(), 3u);
  EXPECT_EQ(s.latency_ns.sum, 1300u);
  EXPECT_EQ(s.result_bytes.count(), 1u);
  EXPECT_EQ(s.result_bytes.sum, 100u);
}

TEST(WorkerMethodCountersTest, KnownMethodsByNameUnknownIdsTogether) {
  MethodEntry get, put;
  get.id = 11;
  get.full_name = "/kv.Store/Get";
  put.id = 22;
  put.full_name = "/kv.Store/Put";
  const MethodEntry* methods[] = {&get, &put};
  WorkerMethodCounters w(methods);
  w.For(11)->Served(0, 10, 1);
  w.For(11)->Served(0, 10, 1);
  w.For(33)->Served(kNotFound, 10, 0);  // Unknown id.
  w.unknown()->Served(kNotFound, 10, 0);
  std::vector<MethodStats> out;
  w.AddTo(&out);
  w.AddTo(&out);  // A second worker's (same) counts add up by name.
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].method, "/kv.Store/Get");
  EXPECT_EQ(out[0].calls, 4u);
  EXPECT_EQ(out[1].method, "/kv.Store/Put");
  EXPECT_EQ(out[1].calls, 0u);
  EXPECT_EQ(out[2].method, "");
  EXPECT_EQ(out[2].method_id, 0u);
  EXPECT_EQ(out[2].calls, 4u);
  EXPECT_EQ(out[2].failures[kNotFound], 4u);
}

TEST(WorkerMethodCountersTest, NoUnknownEntryWithoutUnknownCalls) {
  WorkerMethodCounters w({});
  std::vector<MethodStats> out;
  w.AddTo(&out);
  EXPECT_TRUE(out.empty());
}

TEST(ClientMethodCountersTest, DisabledKeepsNothing) {
  ClientMethodCounters c(/*enabled=*/false);
  c.Finished(1, 0, 100);
  EXPECT_TRUE(c.Snapshot().empty());
}

TEST(ClientMethodCountersTest, SumsThreadsAndKeepsCountsOfExitedThreads) {
  ClientMethodCounters c(/*enabled=*/true);
  constexpr int kThreads = 4, kCalls = 10000;
  for (int round = 0; round < 2; ++round) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&c, t] {
        for (int i = 0; i < kCalls; ++i) {
          const uint32_t id = 1 + (i % 2);
          c.Finished(id, t == 0 && i < 10 ? kDeadline : 0, 1000);
        }
      });
    }
    // Snapshots while threads write (tsan: no race).
    for (int i = 0; i < 20; ++i) (void)c.Snapshot();
    for (auto& th : threads) th.join();
  }
  const std::vector<MethodStats> s = c.Snapshot();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].method_id, 1u);
  EXPECT_EQ(s[1].method_id, 2u);
  const uint64_t per_method = 2ull * kThreads * kCalls / 2;
  EXPECT_EQ(s[0].calls, per_method);
  EXPECT_EQ(s[1].calls, per_method);
  EXPECT_EQ(s[0].failures[kDeadline] + s[1].failures[kDeadline], 20u);
  EXPECT_EQ(s[0].latency_ns.count(), per_method);
  EXPECT_EQ(s[0].latency_ns.sum, per_method * 1000);
}

TEST(ClientMethodCountersTest, ThreadUsingManyChannelsKeepsEachApart) {
  std::vector<std::unique_ptr<ClientMethodCounters>> channels;
  for (int i = 0; i < 100; ++i) {  // More than a thread's cache holds.
    channels.push_back(std::make_unique<ClientMethodCounters>(true));
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& c : channels) c->Finished(7, 0, 1);
  }
  for (auto& c : channels) {
    const std::vector<MethodStats> s = c->Snapshot();
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].calls, 3u);
  }
  // Destroyed channels: this thread lets their blocks go on its next miss.
  channels.resize(1);
  ClientMethodCounters fresh(true);
  fresh.Finished(7, 0, 1);
  EXPECT_EQ(fresh.Snapshot()[0].calls, 1u);
  EXPECT_EQ(channels[0]->Snapshot()[0].calls, 3u);
}

// A thread cycling through more channels than its cache holds (a client
// calling round robin over thousands of connections) claims one block per
// channel once, not one per call: without owner slots every call here would
// miss its cache and claim again (3 per channel).
TEST(ClientMethodCountersTest, ThreadCyclingManyChannelsClaimsEachOnce) {
  std::vector<std::unique_ptr<ClientMethodCounters>> channels;
  for (int i = 0; i < 200; ++i) {
    channels.push_back(std::make_unique<ClientMethodCounters>(true));
  }
  for (int round = 0; round < 3; ++round) {
    for (auto& c : channels) c->Finished(7, 0, 1);
  }
  for (auto& c : channels) {
    EXPECT_EQ(c->block_claims(), 1u);
    EXPECT_EQ(c->Snapshot()[0].calls, 3u);
  }
}

// Past ClientMethodCounters::kOwners threads, the rest go through their
// caches; an owner that exits leaves its block (and counts) for the next.
TEST(ClientMethodCountersTest, OwnersBeyondTheFirstFourAndAfterExit) {
  ClientMethodCounters c(true);
  constexpr int kThreads = ClientMethodCounters::kOwners + 2;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 1000; ++i) c.Finished(3, 0, 10);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(c.Snapshot()[0].calls, 1000u * kThreads);
  const uint64_t claims = c.block_claims();
  EXPECT_EQ(claims, static_cast<uint64_t>(kThreads));
  std::thread([&c] { c.Finished(3, 0, 10); }).join();
  EXPECT_EQ(c.Snapshot()[0].calls, 1000u * kThreads + 1);
  EXPECT_EQ(c.block_claims(), claims + 1);
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
