// Copyright 2026 The rfrpc Authors.
//
// Work discovery end to end (issue 15; docs/rpc.md "Work discovery"): the
// doorbells that tell a worker where a request is, hot slots that need
// none, parked workers woken by a client's notify, and the re-ring that
// recovers a lost doorbell. Every reply is checked; the mechanisms are
// asserted from the channel's and the server's counters (timing belongs in
// benchmarks/scale_bench).

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "tests/test_service.h"
#include "transport/testing/fault_injection.h"

namespace rfrpc {
namespace testing {
namespace {

using transport::testing::FaultKnobs;

class DiscoveryTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions opts = {}) {
    opts.provider = Provider();
    opts.address = ListenAddress();
    opts.workers = 1;
    opts.idle_spin_rounds = 200;
    server_ = std::make_unique<Server>(opts);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  std::unique_ptr<Channel> Connect(ChannelOptions opts = {}) {
    if (opts.provider == "shm") opts.provider = Provider();
    opts.default_timeout = absl::Seconds(60);
    absl::StatusOr<std::unique_ptr<Channel>> c =
        Channel::Create(server_->address(), opts);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  TestService service_;
  std::unique_ptr<Server> server_;
};

void Echo(Channel* ch, uint64_t id) {
  TestRequest req;
  req.set_id(id);
  req.set_payload(ExpectedPayload(id, 24));
  TestResponse resp;
  absl::Status s = CallEcho(ch, nullptr, req, &resp);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(resp.id(), id);
  EXPECT_EQ(resp.payload(), req.payload());
}

TEST_F(DiscoveryTest, AParkedWorkerIsWokenByTheFirstCall) {
  ServerOptions so;
  so.idle_park_after = absl::Milliseconds(1);
  StartServer(so);
  // No re-ring within the test: a call after a park is answered only
  // because its notify woke the worker, or at the worker's 100 ms check.
  ChannelOptions co;
  co.rering_after = absl::Seconds(30);
  std::unique_ptr<Channel> ch = Connect(co);
  ASSERT_NE(ch, nullptr);
  Echo(ch.get(), 1);
  for (int round = 0; round < 5; ++round) {
    const uint64_t parks = server_->stats().parks;
    // Quiet long enough for the worker to park.
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (server_->stats().parks == parks && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    ASSERT_GT(server_->stats().parks, parks) << "the idle worker never parked";
    absl::SleepFor(absl::Milliseconds(5));
    Echo(ch.get(), 100 + round);
  }
  const ChannelStats st = ch->stats();
  EXPECT_GE(st.notifies, 5u) << "each call after a quiet spell notifies";
  EXPECT_EQ(st.rerings, 0u);
  // Each of those parks ended with the client's notify, not with the
  // worker's own 100 ms check.
  EXPECT_GE(server_->stats().park_notifies, 5u);
}

// A worker told to park at once (idle_park_after 0) is still woken by each
// call's notify. The handshake once sent its park_after as 0, which meant
// "never parks" to the client: it sent no notify and each call waited for a
// re-ring (1 ms by default; never here) or the worker's own 100 ms check.
TEST_F(DiscoveryTest, AWorkerThatParksAtOnceIsNotifiedByEveryCall) {
  ServerOptions so;
  so.idle_park_after = absl::ZeroDuration();
  StartServer(so);
  ChannelOptions co;
  co.rering_after = absl::Seconds(30);
  std::unique_ptr<Channel> ch = Connect(co);
  ASSERT_NE(ch, nullptr);
  for (int i = 0; i < 5; ++i) {
    Echo(ch.get(), i);
    absl::SleepFor(absl::Milliseconds(2));
  }
  const ChannelStats st = ch->stats();
  EXPECT_GE(st.notifies, 5u) << "every ring notifies a worker that parks at once";
  EXPECT_EQ(st.rerings, 0u);
  EXPECT_GE(server_->stats().park_notifies, 1u);
}

// A client calling round robin over several connections to one worker
// notifies only when the worker may have parked: the "last request to this
// worker" clock is the process's, not each connection's. Here each
// connection's calls are 160 ms apart (more than half of park_after, so a
// clock per connection would notify on each), the process's 40 ms.
TEST_F(DiscoveryTest, ConnectionsOfOneProcessShareTheWorkersNotifyClock) {
  ServerOptions so;
  so.idle_park_after = absl::Milliseconds(200);
  so.hot_window = absl::ZeroDuration();  // Every call rings.
  StartServer(so);
  ChannelOptions co;
  co.rering_after = absl::Seconds(30);
  std::vector<std::unique_ptr<Channel>> chs;
  for (int i = 0; i < 4; ++i) {
    chs.push_back(Connect(co));
    ASSERT_NE(chs.back(), nullptr);
  }
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    for (size_t i = 0; i < chs.size(); ++i) {
      Echo(chs[i].get(), round * 10 + i);
      absl::SleepFor(absl::Milliseconds(40));
    }
  }
  auto notifies = [&chs] {
    uint64_t n = 0;
    for (const auto& ch : chs) n += ch->stats().notifies;
    return n;
  };
  // The first call notifies (nothing posted before it); a 40 ms sleep that
  // overslept past 100 ms on a loaded host may add one. A clock per
  // connection: at least 4 * (kRounds - 1) more.
  EXPECT_LE(notifies(), 3u);
  // After a quiet spell the worker parks, and the next call on any
  // connection still wakes it.
  const uint64_t before = notifies();
  const uint64_t parks = server_->stats().parks;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server_->stats().parks == parks && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GT(server_->stats().parks, parks) << "the idle worker never parked";
  absl::SleepFor(absl::Milliseconds(110));  // Past half of park_after.
  Echo(chs[2].get(), 999);
  EXPECT_EQ(notifies(), before + 1);
  EXPECT_EQ(chs[2]->stats().rerings, 0u);
}

TEST_F(DiscoveryTest, AClosedLoopCallerGoesHotAndSkipsTheDoorbell) {
  ServerOptions so;
  so.hot_window = absl::Milliseconds(50);  // Generous: TCG, a busy CI host.
  StartServer(so);
  std::unique_ptr<Channel> ch = Connect();
  ASSERT_NE(ch, nullptr);
  constexpr int kCalls = 400;
  for (int i = 0; i < kCalls; ++i) Echo(ch.get(), i);
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.calls, static_cast<uint64_t>(kCalls));
  // The first two calls ring (no history yet); then the slot is hot and
  // stays so while calls come within half the window of each other.
  EXPECT_GE(st.hot_posts, kCalls / 2u) << "rings " << st.rings;
  // Every call is either hot or rings (a hot post found late on a slow host
  // rings too).
  EXPECT_GE(st.hot_posts + st.rings - st.rerings, static_cast<uint64_t>(kCalls));
  EXPECT_GE(server_->stats().hot_serves, st.hot_posts);
  // Two WRITEs per ring on top of one WRITE and one READ (or more) per call.
  EXPECT_GE(st.rdma_writes, st.calls + 2 * st.rings);
}

TEST_F(DiscoveryTest, WithoutHotSlotsEveryCallRings) {
  ServerOptions so;
  so.hot_window = absl::ZeroDuration();
  StartServer(so);
  std::unique_ptr<Channel> ch = Connect();
  ASSERT_NE(ch, nullptr);
  for (int i = 0; i < 100; ++i) Echo(ch.get(), i);
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.hot_posts, 0u);
  EXPECT_EQ(st.rings - st.rerings, 100u);
  EXPECT_EQ(server_->stats().hot_serves, 0u);
  // (The first call may be found by the look every new connection gets.)
  EXPECT_GE(server_->stats().rings, 99u);
}

// On verbs (the Soft-RoCE VM suite) these are 256 real RC queue pairs.
TEST_F(DiscoveryTest, ManyIdleConnectionsAndEveryOneOfThemServed) {
  StartServer();
  constexpr int kChannels = 256;
  std::vector<std::unique_ptr<Channel>> chans;
  for (int i = 0; i < kChannels; ++i) {
    chans.push_back(Connect());
    ASSERT_NE(chans.back(), nullptr);
  }
  // One of them busy, the rest idle, then every one in turn, twice.
  for (int i = 0; i < 500; ++i) Echo(chans[kChannels / 2].get(), i);
  uint64_t id = 1000;
  for (int round = 0; round < 2; ++round) {
    for (auto& ch : chans) Echo(ch.get(), id++);
  }
  uint64_t calls = 0;
  for (auto& ch : chans) calls += ch->stats().calls;
  EXPECT_EQ(calls, 500u + 2 * kChannels);
  EXPECT_EQ(server_->stats().calls, calls);
  EXPECT_EQ(server_->stats().connections_accepted,
            static_cast<uint64_t>(kChannels));
}

// A doorbell that never lands (a client sharing the summary byte cleared
// it): the unanswered call rings again and is served.
TEST_F(DiscoveryTest, ALostDoorbellIsRecoveredByTheReRing) {
  StartServer();
  ChannelOptions co;
  co.provider = absl::StrCat("faulty@lostbell:", Provider());
  FaultKnobs* knobs = FaultKnobs::Named("lostbell");
  knobs->Reset();
  std::unique_ptr<Channel> ch = Connect(co);
  ASSERT_NE(ch, nullptr);
  Echo(ch.get(), 1);
  // Let the slot go cold, then lose the next summary byte (a 1-byte WRITE).
  absl::SleepFor(absl::Milliseconds(5));
  knobs->DropNextWritesOfLength(1, 1);
  Echo(ch.get(), 2);
  EXPECT_EQ(knobs->counters().writes_dropped, 1u);
  EXPECT_GE(ch->stats().rerings, 1u);
  Echo(ch.get(), 3);
}

// Doorbells are given back when connections close: with room for 8
// connections, 3 rounds of 8 connect, call and close.
// A parked worker's 100 ms checks walk its connections' liveness only after
// some connection of the process failed (transport::ConnectionFailures): an
// idle server costs a wake-up per check, not a cold walk of every
// connection. A client that goes away is still closed within a check.
TEST_F(DiscoveryTest, AnIdleServerWalksItsConnectionsOnlyAfterAFailure) {
  StartServer();
  std::vector<std::unique_ptr<Channel>> chans;
  for (int i = 0; i < 8; ++i) {
    chans.push_back(Connect());
    ASSERT_NE(chans.back(), nullptr);
    Echo(chans.back().get(), i);
  }
  // Earlier tests' connections failed too: their walk comes first.
  absl::SleepFor(absl::Milliseconds(500));
  const ServerStats a = server_->stats();
  absl::SleepFor(absl::Milliseconds(600));  // About six parked checks.
  const ServerStats b = server_->stats();
  EXPECT_GT(b.parks, a.parks) << "the idle worker did not park";
  EXPECT_EQ(b.liveness_walks, a.liveness_walks)
      << "walked with no connection failed";
  // One client leaves: a walk closes its side.
  chans.pop_back();
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (server_->stats().connections_closed == b.connections_closed &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  const ServerStats c = server_->stats();
  EXPECT_EQ(c.connections_closed, b.connections_closed + 1);
  EXPECT_GT(c.liveness_walks, b.liveness_walks);
  std::printf("%s: %llu parks and %llu walks idle; the closed client's side "
              "closed after %llu walk(s)\n",
              Provider().c_str(),
              static_cast<unsigned long long>(b.parks - a.parks),
              static_cast<unsigned long long>(b.liveness_walks -
                                              a.liveness_walks),
              static_cast<unsigned long long>(c.liveness_walks -
                                              b.liveness_walks));
  for (auto& ch : chans) Echo(ch.get(), 100);
}

TEST_F(DiscoveryTest, BellsOfClosedConnectionsAreReused) {
  ServerOptions so;
  so.max_connections = 8;
  StartServer(so);
  uint64_t id = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::unique_ptr<Channel>> chans;
    for (int i = 0; i < 8; ++i) {
      chans.push_back(Connect());
      ASSERT_NE(chans.back(), nullptr) << "round " << round << " channel " << i;
    }
    for (auto& ch : chans) Echo(ch.get(), id++);
    chans.clear();
    const uint64_t want = 8u * (round + 1);
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (server_->stats().connections_closed < want && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    ASSERT_EQ(server_->stats().connections_closed, want);
  }
  // One over the limit is refused with a clear error, and the rest served.
  std::vector<std::unique_ptr<Channel>> chans;
  for (int i = 0; i < 8; ++i) chans.push_back(Connect());
  ChannelOptions co;
  co.provider = Provider();
  absl::StatusOr<std::unique_ptr<Channel>> extra =
      Channel::Create(server_->address(), co);
  ASSERT_FALSE(extra.ok());
  EXPECT_EQ(extra.status().code(), absl::StatusCode::kResourceExhausted)
      << extra.status();
  for (auto& ch : chans) Echo(ch.get(), id++);
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc
