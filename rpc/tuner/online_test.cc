// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/online.h"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/server.h"
#include "rpc/tuner/calibration_service.h"
#include "rpc/tuner/test_profiles.h"

namespace rfrpc {
namespace tuner {
namespace {

// Flat in F over [128, 8192] (covering a result never costs throughput),
// best at R = 3: the optimum is "smallest candidate F covering the results,
// R = 3".
Profile FlatProfile() {
  SyntheticSpec spec;
  spec.ops = [](int r, uint32_t, uint32_t) {
    return 1e6 * (1.0 - 0.05 * std::abs(r - 3));
  };
  absl::StatusOr<Profile> p = Profile::FromProto(MakeSyntheticProto(spec), "shm");
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

OnlineTunerOptions Manual() {
  OnlineTunerOptions o;
  o.start_timer = false;
  o.min_samples = 20;
  return o;
}

TEST(OnlineTunerTest, HysteresisIgnoresSmallGains) {
  auto tuner = *OnlineTuner::Create(FlatProfile(), Manual());
  // Start at the optimum for 100 B results.
  for (int i = 0; i < 100; ++i) tuner->Record(100, absl::ZeroDuration());
  EXPECT_TRUE(tuner->Tick());
  EXPECT_EQ(tuner->stats().fetch_size, 128u);
  EXPECT_EQ(tuner->stats().retries, 3);
  // 2% of results at 200 B: F = 256 would gain 1% < 3% -> keep F = 128.
  for (int i = 0; i < 98; ++i) tuner->Record(100, absl::ZeroDuration());
  for (int i = 0; i < 2; ++i) tuner->Record(200, absl::ZeroDuration());
  EXPECT_FALSE(tuner->Tick());
  EXPECT_EQ(tuner->stats().fetch_size, 128u);
  EXPECT_NEAR(tuner->stats().last_gain, 0.01 / 0.99, 1e-9);
  // 10% at 200 B: F = 256 gains 5.3% -> change.
  for (int i = 0; i < 90; ++i) tuner->Record(100, absl::ZeroDuration());
  for (int i = 0; i < 10; ++i) tuner->Record(200, absl::ZeroDuration());
  EXPECT_TRUE(tuner->Tick());
  EXPECT_EQ(tuner->stats().fetch_size, 256u);
  EXPECT_EQ(tuner->stats().reselections, 2u);
}

TEST(OnlineTunerTest, TooFewSamplesCarryOver) {
  auto tuner = *OnlineTuner::Create(FlatProfile(), Manual());
  for (int i = 0; i < 15; ++i) tuner->Record(1000, absl::ZeroDuration());
  EXPECT_FALSE(tuner->Tick());
  EXPECT_EQ(tuner->stats().fetch_size, 256u);  // Initial.
  for (int i = 0; i < 15; ++i) tuner->Record(1000, absl::ZeroDuration());
  EXPECT_TRUE(tuner->Tick());
  EXPECT_EQ(tuner->stats().fetch_size, 1024u);
  EXPECT_EQ(tuner->stats().samples, 30u);
}

TEST(OnlineTunerTest, BadOptionsAreInvalid) {
  OnlineTunerOptions o = Manual();
  o.interval = absl::ZeroDuration();
  EXPECT_EQ(OnlineTuner::Create(FlatProfile(), o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class OnlineChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions so;
    so.provider = "shm";
    server_ = std::make_unique<Server>(so);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override { server_->Shutdown(); }

  // `n` calls whose results are `result_bytes` (header included).
  void Calls(Channel* ch, uint32_t result_bytes, int n) {
    CalibrationRequest req;
    req.set_result_bytes(result_bytes);
    CalibrationResponse resp;
    for (int i = 0; i < n; ++i) {
      req.set_id(static_cast<uint64_t>(i));
      ASSERT_TRUE(CallFetch(ch, nullptr, req, &resp).ok());
    }
  }

  CalibrationService service_;
  std::unique_ptr<Server> server_;
};

// A calibration result of B bytes is B bytes as fetched, tail included: the
// size the observer sees, and one READ of F = B covers it. (It was B + 8:
// every point of a calibrated I(R, F) grid took two READs a call.)
TEST_F(OnlineChannelTest, CalibrationResultsAreTheirBytesAsFetched) {
  std::vector<uint32_t> seen;
  for (uint32_t bytes : {32u, 64u, 128u, 256u, 1000u, 3000u, 8192u}) {
    ChannelOptions co;
    co.provider = "shm";
    co.mode = RpcMode::kRemoteFetch;
    co.fetch.retries = 100;
    co.fetch.size = bytes;
    co.on_result = [&seen](uint32_t b, absl::Duration) { seen.push_back(b); };
    absl::StatusOr<std::unique_ptr<Channel>> ch =
        Channel::Create(server_->address(), co);
    ASSERT_TRUE(ch.ok()) << ch.status();
    seen.clear();
    Calls(ch->get(), bytes, 20);
    ASSERT_EQ(seen.size(), 20u) << bytes;
    for (uint32_t b : seen) EXPECT_EQ(b, bytes);
    // No call needed a READ for the rest of its result.
    const ChannelStats st = (*ch)->stats();
    EXPECT_EQ(st.rdma_reads, st.fetches) << bytes;
  }
}

TEST_F(OnlineChannelTest, ConvergesWhenResultSizeChangesAndDoesNotFlap) {
  absl::StatusOr<std::unique_ptr<OnlineTuner>> tuner =
      OnlineTuner::Create(FlatProfile(), Manual());
  ASSERT_TRUE(tuner.ok());
  ChannelOptions co;
  co.provider = "shm";
  co.fetch.retries = 5;
  co.fetch.size = 256;
  co.on_result = (*tuner)->Observer();
  absl::StatusOr<std::unique_ptr<Channel>> ch =
      Channel::Create(server_->address(), co);
  ASSERT_TRUE(ch.ok()) << ch.status();
  (*tuner)->Attach(ch->get());

  // Phase 1: 100 B results. Within 3 intervals: F = 128 (smallest covering
  // candidate), R = 3; then 5 stable intervals change nothing.
  int ticks = 0;
  while ((*ch)->fetch_size() != 128u && ticks < 3) {
    Calls(ch->get(), 100, 100);
    (*tuner)->Tick();
    ++ticks;
  }
  EXPECT_EQ((*ch)->fetch_size(), 128u);
  EXPECT_EQ((*ch)->retries(), 3);
  const uint64_t resel = (*tuner)->stats().reselections;
  for (int i = 0; i < 5; ++i) {
    Calls(ch->get(), 100, 100);
    EXPECT_FALSE((*tuner)->Tick());
  }
  EXPECT_EQ((*tuner)->stats().reselections, resel);
  EXPECT_EQ((*ch)->fetch_size(), 128u);

  // Phase 2: the server's results grow to 3000 B. Within 3 intervals F
  // covers them: 3008, the smallest candidate >= 3000.
  ticks = 0;
  while ((*ch)->fetch_size() < 3000u && ticks < 3) {
    Calls(ch->get(), 3000, 100);
    (*tuner)->Tick();
    ++ticks;
  }
  EXPECT_EQ((*ch)->fetch_size(), 3008u);
  EXPECT_EQ((*ch)->retries(), 3);
  const uint64_t reads_before = (*ch)->stats().rdma_reads;
  const uint64_t fetches_before = (*ch)->stats().fetches;
  for (int i = 0; i < 5; ++i) {
    Calls(ch->get(), 3000, 100);
    EXPECT_FALSE((*tuner)->Tick());
  }
  EXPECT_EQ((*tuner)->stats().reselections, resel + 1);
  // F covers the results: no call needed a second READ for the rest, so
  // READs per call equal header fetches per call.
  const ChannelStats after = (*ch)->stats();
  EXPECT_EQ(after.rdma_reads - reads_before, after.fetches - fetches_before);
  (*tuner)->Detach();
}

TEST_F(OnlineChannelTest, TimerThreadTunes) {
  OnlineTunerOptions o;
  o.interval = absl::Milliseconds(50);
  o.min_samples = 20;
  absl::StatusOr<std::unique_ptr<OnlineTuner>> tuner =
      OnlineTuner::Create(FlatProfile(), o);
  ASSERT_TRUE(tuner.ok());
  ChannelOptions co;
  co.provider = "shm";
  co.on_result = (*tuner)->Observer();
  absl::StatusOr<std::unique_ptr<Channel>> ch =
      Channel::Create(server_->address(), co);
  ASSERT_TRUE(ch.ok()) << ch.status();
  (*tuner)->Attach(ch->get());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while ((*ch)->fetch_size() != 1024u && absl::Now() < deadline) {
    Calls(ch->get(), 1000, 50);
  }
  EXPECT_EQ((*ch)->fetch_size(), 1024u);
  EXPECT_GE((*tuner)->stats().ticks, 1u);
  (*tuner)->Detach();
}

}  // namespace
}  // namespace tuner
}  // namespace rfrpc
