// Copyright 2026 The rfrpc Authors.

#include "rpc/hybrid_policy.h"

#include "gtest/gtest.h"

namespace rfrpc {
namespace {

HybridPolicy::Params Hybrid() {
  HybridPolicy::Params p;
  p.mode = RpcMode::kHybrid;
  p.switch_after = 2;
  p.switch_back_ratio = 0.8;
  return p;
}

// Feeds one remote-fetching call that needed `fetches` fetches, the way the
// connection does; returns true if it switched.
bool FetchCall(HybridPolicy* p, int fetches, int retries = 5) {
  bool switched = false;
  if (fetches > retries) switched = p->OnCallExceededRetries();
  if (!switched) p->OnFetchedCall(/*slow=*/fetches > retries);
  return switched;
}

// What remote fetching waits before a call is slow; * 0.8 = 4 us.
const absl::Duration kRtt = absl::Nanoseconds(5000);
// A reply latency well within that budget.
const absl::Duration kQuick = absl::Microseconds(2);

TEST(HybridPolicyTest, StartsInRemoteFetch) {
  HybridPolicy p(Hybrid());
  EXPECT_EQ(p.current(), RpcMode::kRemoteFetch);
}

TEST(HybridPolicyTest, CallsWithinRetriesStayRemoteFetch) {
  HybridPolicy p(Hybrid());
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(FetchCall(&p, 1 + i % 5));
  EXPECT_EQ(p.current(), RpcMode::kRemoteFetch);
  EXPECT_EQ(p.switches_to_server_reply(), 0u);
}

TEST(HybridPolicyTest, KConsecutiveSlowCallsSwitch) {
  HybridPolicy p(Hybrid());
  EXPECT_FALSE(FetchCall(&p, 6));
  EXPECT_EQ(p.current(), RpcMode::kRemoteFetch);
  EXPECT_TRUE(FetchCall(&p, 7));
  EXPECT_EQ(p.current(), RpcMode::kServerReply);
  EXPECT_EQ(p.switches_to_server_reply(), 1u);
}

TEST(HybridPolicyTest, SingleOutliersDoNotSwitch) {
  HybridPolicy p(Hybrid());
  for (int i = 0; i < 50; ++i) {
    EXPECT_FALSE(FetchCall(&p, 9));  // Outlier...
    EXPECT_FALSE(FetchCall(&p, 2));  // ...then a fast call resets the count.
  }
  EXPECT_EQ(p.current(), RpcMode::kRemoteFetch);
}

TEST(HybridPolicyTest, FasterResponsesSwitchBack) {
  HybridPolicy p(Hybrid());
  FetchCall(&p, 8);
  ASSERT_TRUE(FetchCall(&p, 8));
  // Still slow on the server: stay in server-reply.
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(10), kQuick, kRtt));
  }
  EXPECT_EQ(p.current(), RpcMode::kServerReply);
  // One fast result is not enough...
  EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(1), kQuick, kRtt));
  EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(10), kQuick, kRtt));
  EXPECT_EQ(p.current(), RpcMode::kServerReply);
  // ...K in a row are.
  EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(1), kQuick, kRtt));
  EXPECT_TRUE(p.OnServerReplyCall(absl::Microseconds(1), kQuick, kRtt));
  EXPECT_EQ(p.current(), RpcMode::kRemoteFetch);
  EXPECT_EQ(p.switches_to_remote_fetch(), 1u);
}

TEST(HybridPolicyTest, SwitchBackThresholdIsRatioTimesFetchBudget) {
  HybridPolicy p(Hybrid());
  FetchCall(&p, 8);
  ASSERT_TRUE(FetchCall(&p, 8));
  // Exactly at the budget (4 us) is not below it.
  EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(4), kQuick, kRtt));
  EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(4), kQuick, kRtt));
  EXPECT_EQ(p.current(), RpcMode::kServerReply);
  EXPECT_FALSE(p.OnServerReplyCall(absl::Nanoseconds(3999), kQuick, kRtt));
  EXPECT_TRUE(p.OnServerReplyCall(absl::Nanoseconds(3999), kQuick, kRtt));
}

TEST(HybridPolicyTest, SlowRepliesDoNotSwitchBackEvenIfServerTimeIsShort) {
  HybridPolicy p(Hybrid());
  FetchCall(&p, 8);
  ASSERT_TRUE(FetchCall(&p, 8));
  // The server computes fast, but replies take longer than remote fetching
  // would wait (queueing, a busy server thread): stay in server-reply.
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(1),
                                     absl::Microseconds(6), kRtt));
  }
  EXPECT_EQ(p.current(), RpcMode::kServerReply);
  EXPECT_FALSE(p.OnServerReplyCall(absl::Microseconds(1), kQuick, kRtt));
  EXPECT_TRUE(p.OnServerReplyCall(absl::Microseconds(1), kQuick, kRtt));
}

TEST(HybridPolicyTest, ForcedModesNeverSwitch) {
  HybridPolicy::Params rf = Hybrid();
  rf.mode = RpcMode::kRemoteFetch;
  HybridPolicy p(rf);
  for (int i = 0; i < 10; ++i) FetchCall(&p, 50);
  EXPECT_EQ(p.current(), RpcMode::kRemoteFetch);

  HybridPolicy::Params sr = Hybrid();
  sr.mode = RpcMode::kServerReply;
  HybridPolicy q(sr);
  EXPECT_EQ(q.current(), RpcMode::kServerReply);
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(q.OnServerReplyCall(absl::ZeroDuration(), kQuick, kRtt));
  }
  EXPECT_EQ(q.current(), RpcMode::kServerReply);
}

TEST(HybridPolicyTest, KOfThreeNeedsThree) {
  HybridPolicy::Params k3 = Hybrid();
  k3.switch_after = 3;
  HybridPolicy p(k3);
  EXPECT_FALSE(FetchCall(&p, 6));
  EXPECT_FALSE(FetchCall(&p, 6));
  EXPECT_TRUE(FetchCall(&p, 6));
}

}  // namespace
}  // namespace rfrpc
