// Copyright 2026 The rfrpc Authors.
//
// Failure scenarios, each asserting the status code the affected callers
// get and that nobody else is affected: faults injected through the
// transport interface (transport/testing/fault_injection.h: corrupt header
// bytes, dropped completions, failed posts and connections), handlers that
// throw, sleep or crash the process, and peers killed mid-call.
//
// Runs on shm by default; RFRPC_TEST_PROVIDER=verbs RFRPC_TEST_ADDRESS=<ip>:0
// runs it on verbs (the Soft-RoCE VM; RFRPC_RPC_PEER names the peer binary).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
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

// A provider name whose faults come from FaultKnobs::Named(tag) (reset).
std::string Faulty(const std::string& tag) {
  FaultKnobs::Named(tag)->Reset();
  return absl::StrCat("faulty@", tag, ":", Provider());
}
std::string FreshAddress() {
  if (Provider() == "shm") {
    return absl::StrCat("@rfrpc-fi-test-", ::getpid(), "-",
                        absl::ToUnixNanos(absl::Now()));
  }
  return ListenAddress();
}

// Starts a peer server and returns its address ("" on failure).
std::string StartPeerServer(std::unique_ptr<PeerProcess>* peer,
                            const std::string& address) {
  *peer = std::make_unique<PeerProcess>("server", address);
  const std::string line = (*peer)->Line();
  if (line.rfind("listening on ", 0) != 0) return "";
  return line.substr(13);
}

// Async calls whose callbacks record status and arrival time.
struct AsyncCalls {
  explicit AsyncCalls(int n) : statuses(n), resps(n), took(n) {}
  std::vector<absl::Status> statuses;
  std::vector<TestResponse> resps;
  std::vector<absl::Duration> took;
  std::atomic<int> done{0};

  void Start(Channel* ch, int i, const TestRequest& req, absl::Duration timeout) {
    auto* ctx = new ClientContext;
    ctx->set_timeout(timeout);
    const absl::Time start = absl::Now();
    ch->CallAsync(MethodId(kEchoMethod), req, &resps[i], ctx,
                  [this, i, ctx, start](absl::Status s) {
                    statuses[i] = s;
                    took[i] = absl::Now() - start;
                    delete ctx;
                    done.fetch_add(1, std::memory_order_release);
                  });
  }
};

class FaultScenarioTest : public ::testing::Test {
 protected:
  void StartServer(int workers, const std::string& provider = "",
                   ServerOptions opts = {}) {
    opts.provider = provider.empty() ? Provider() : provider;
    opts.address = ListenAddress();
    opts.workers = workers;
    opts.idle_spin_rounds = 100;
    server_ = std::make_unique<Server>(opts);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  std::unique_ptr<Channel> Connect(RpcMode mode, const std::string& provider = "",
                                   ChannelOptions opts = {}) {
    opts.provider = provider.empty() ? Provider() : provider;
    opts.mode = mode;
    absl::StatusOr<std::unique_ptr<Channel>> c =
        Channel::Create(server_->address(), opts);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  TestService service_;  // Outlives the server.
  std::unique_ptr<Server> server_;
};

// One checked Echo: OK and the reply is this request's, or the status.
absl::Status Echo(Channel* ch, uint64_t id,
                  absl::Duration timeout = absl::Seconds(5)) {
  TestRequest req;
  req.set_id(id);
  req.set_payload(ExpectedPayload(id, id % 200));
  TestResponse resp;
  ClientContext ctx;
  ctx.set_timeout(timeout);
  absl::Status s = CallEcho(ch, &ctx, req, &resp);
  if (s.ok() && (resp.id() != id || resp.payload() != req.payload())) {
    return absl::DataLossError(absl::StrCat("call ", id, " got the reply of ",
                                            resp.id()));
  }
  return s;
}

void ExpectHealthy(Channel* ch, uint64_t first, int n) {
  for (int i = 0; i < n; ++i) {
    absl::Status s = Echo(ch, first + i);
    ASSERT_TRUE(s.ok()) << "call " << first + i << ": " << s;
  }
}

// Calls until one succeeds (a failed connection reconnects on use).
absl::Status EchoUntilOk(Channel* ch, uint64_t id, absl::Duration within) {
  const absl::Time deadline = absl::Now() + within;
  absl::Status s;
  do {
    s = Echo(ch, id, absl::Seconds(2));
    if (s.ok()) return s;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < deadline);
  return s;
}

// --- Handlers -------------------------------------------------------------

TEST_F(FaultScenarioTest, HandlerThatThrowsGivesInternalAndTheServerServesOn) {
  StartServer(1);
  std::unique_ptr<Channel> a = Connect(RpcMode::kHybrid);
  std::unique_ptr<Channel> b = Connect(RpcMode::kRemoteFetch);
  ASSERT_TRUE(a && b);
  TestRequest req;
  req.set_id(1);
  req.set_throw_message("boom");
  TestResponse resp;
  absl::Status s = CallEcho(a.get(), nullptr, req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("threw: boom"), std::string::npos) << s;
  // Same connection, other connections: all served.
  ExpectHealthy(a.get(), 100, 50);
  ExpectHealthy(b.get(), 200, 50);
  EXPECT_EQ(server_->stats().calls_failed, 1u);
  EXPECT_EQ(server_->stats().connections_closed, 0u);
}

TEST_F(FaultScenarioTest, HandlerThatCrashesTheProcessGivesUnavailable) {
  std::unique_ptr<PeerProcess> peer;
  const std::string address = StartPeerServer(&peer, FreshAddress());
  ASSERT_FALSE(address.empty());
  ChannelOptions opts;
  opts.provider = Provider();
  auto a = Channel::Create(address, opts);
  opts.mode = RpcMode::kRemoteFetch;
  auto b = Channel::Create(address, opts);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(Echo(a->get(), 1).ok());
  ASSERT_TRUE(Echo(b->get(), 2).ok());
  // B has calls in flight (sleeping handler) when A's call crashes the server.
  AsyncCalls inflight(4);
  for (int i = 0; i < 4; ++i) {
    TestRequest req;
    req.set_id(10 + i);
    req.set_sleep_ms(i == 0 ? 300 : 0);
    inflight.Start(b->get(), i, req, absl::Seconds(20));
  }
  TestRequest crash;
  crash.set_id(3);
  crash.set_abort_process(true);
  TestResponse resp;
  ClientContext ctx;
  ctx.set_timeout(absl::Seconds(20));
  const absl::Time start = absl::Now();
  absl::Status s = CallEcho(a->get(), &ctx, crash, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  const int wstatus = peer->Reap();
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGABRT) << wstatus;
  ASSERT_TRUE(WaitForCount(inflight.done, 4, absl::Seconds(5)));
  for (int i = 0; i < 4; ++i) {
    // Calls that finished before the crash are OK and checked; the rest
    // learn the loss, long before their 20 s deadlines.
    if (inflight.statuses[i].ok()) {
      EXPECT_EQ(inflight.resps[i].id(), 10u + i);
    } else {
      EXPECT_EQ(inflight.statuses[i].code(), absl::StatusCode::kUnavailable)
          << inflight.statuses[i];
    }
    EXPECT_LT(inflight.took[i], absl::Seconds(5));
  }
  EXPECT_FALSE(inflight.statuses[0].ok()) << "the sleeping call was in flight";
}

TEST_F(FaultScenarioTest, SlowHandlerDelaysOnlyItsOwnWorkersCallers) {
  StartServer(2);
  ChannelOptions opts;
  opts.connections = 0;  // One connection per worker; shards pick them.
  std::unique_ptr<Channel> slow = Connect(RpcMode::kHybrid, "", opts);
  std::unique_ptr<Channel> fast = Connect(RpcMode::kHybrid, "", opts);
  ASSERT_TRUE(slow && fast);
  ASSERT_EQ(fast->server_workers(), 2);
  AsyncCalls slow_call(1);
  TestRequest req;
  req.set_id(1);
  req.set_sleep_ms(1000);
  auto* ctx = new ClientContext;  // Routes to worker 0.
  ctx->set_shard(0);
  ctx->set_timeout(absl::Seconds(20));
  slow->CallAsync(MethodId(kEchoMethod), req, &slow_call.resps[0], ctx,
                  [&, ctx](absl::Status s) {
                    slow_call.statuses[0] = s;
                    delete ctx;
                    slow_call.done.fetch_add(1, std::memory_order_release);
                  });
  absl::SleepFor(absl::Milliseconds(50));  // The handler is running now.
  std::vector<absl::Duration> lat;
  int during = 0;  // Fast calls that completed while the slow one ran.
  for (uint64_t i = 0; i < 100; ++i) {
    TestRequest r;
    r.set_id(1000 + i);
    TestResponse resp;
    ClientContext c;
    c.set_shard(1);  // Worker 1.
    const absl::Time t0 = absl::Now();
    absl::Status s = CallEcho(fast.get(), &c, r, &resp);
    lat.push_back(absl::Now() - t0);
    ASSERT_TRUE(s.ok()) << s;
    ASSERT_EQ(resp.id(), 1000 + i);
    ASSERT_EQ(resp.worker(), 1u);
    if (slow_call.done.load(std::memory_order_acquire) == 0) ++during;
  }
  EXPECT_GE(during, 20) << "the other worker's calls waited for the slow handler";
  std::sort(lat.begin(), lat.end());
  // Generous bounds (2 shared cores, other tests running): every call is
  // far below the 1000 ms the slow handler takes.
  EXPECT_LT(lat[lat.size() / 2], absl::Milliseconds(50)) << lat[lat.size() / 2];
  EXPECT_LT(lat.back(), absl::Milliseconds(500)) << lat.back();
  ASSERT_TRUE(WaitForCount(slow_call.done, 1, absl::Seconds(10)));
  EXPECT_TRUE(slow_call.statuses[0].ok()) << slow_call.statuses[0];
  EXPECT_EQ(slow_call.resps[0].id(), 1u);
}

// --- Lost peers -------------------------------------------------------------

TEST_F(FaultScenarioTest, KilledServerFailsCallsInEveryModeBeforeTheirDeadlines) {
  std::unique_ptr<PeerProcess> peer;
  std::string address = StartPeerServer(&peer, FreshAddress());
  ASSERT_FALSE(address.empty());
  struct Mode {
    const char* name;
    RpcMode mode;
    BatchMode batch;
  };
  const Mode modes[] = {{"rf", RpcMode::kRemoteFetch, BatchMode::kOff},
                        {"server_reply", RpcMode::kServerReply, BatchMode::kOff},
                        {"hybrid", RpcMode::kHybrid, BatchMode::kOff},
                        {"batched", RpcMode::kHybrid, BatchMode::kFixed}};
  std::vector<std::unique_ptr<Channel>> channels;
  for (const Mode& m : modes) {
    ChannelOptions opts;
    opts.provider = Provider();
    opts.mode = m.mode;
    opts.batching.mode = m.batch;
    opts.batching.size = 4;
    auto ch = Channel::Create(address, opts);
    ASSERT_TRUE(ch.ok()) << m.name << ": " << ch.status();
    ASSERT_TRUE(Echo(ch->get(), 1).ok()) << m.name;
    channels.push_back(std::move(*ch));
  }
  constexpr int kPer = 4;
  AsyncCalls calls(kPer * 4);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < kPer; ++i) {
      TestRequest req;
      req.set_id(c * 100 + i);
      req.set_sleep_ms(200);
      calls.Start(channels[c].get(), c * kPer + i, req, absl::Seconds(20));
    }
  }
  absl::SleepFor(absl::Milliseconds(50));
  peer->Kill();
  ASSERT_TRUE(WaitForCount(calls.done, kPer * 4, absl::Seconds(10)));
  for (int i = 0; i < kPer * 4; ++i) {
    SCOPED_TRACE(modes[i / kPer].name);
    EXPECT_EQ(calls.statuses[i].code(), absl::StatusCode::kUnavailable)
        << calls.statuses[i];
    EXPECT_LT(calls.took[i], absl::Seconds(3));
  }
  // A new server at the same address: every channel reconnects.
  address = StartPeerServer(&peer, address);
  ASSERT_FALSE(address.empty());
  for (size_t c = 0; c < channels.size(); ++c) {
    SCOPED_TRACE(modes[c].name);
    EXPECT_TRUE(EchoUntilOk(channels[c].get(), 1000 + c, absl::Seconds(10)).ok());
    ExpectHealthy(channels[c].get(), 2000 + 100 * c, 20);
  }
}

TEST_F(FaultScenarioTest, KilledClientsConnectionsAndSlotsAreReclaimed) {
  ServerOptions so;
  so.max_connections = 2;  // Room for the healthy client and ONE more.
  StartServer(1, "", so);
  std::unique_ptr<Channel> healthy = Connect(RpcMode::kHybrid);
  ASSERT_TRUE(healthy);
  for (int round = 1; round <= 3; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    // Connects only if the previous dead client's connection was reclaimed.
    PeerProcess client("client", server_->address());
    ASSERT_EQ(client.Line(), "calling");
    client.Kill();  // Mid-call: it calls in a loop, half of them slow.
    const absl::Time start = absl::Now();
    uint64_t id = round * 10000;
    while (server_->stats().connections_closed < static_cast<uint64_t>(round) &&
           absl::Now() - start < absl::Seconds(5)) {
      const absl::Time t0 = absl::Now();
      ASSERT_TRUE(Echo(healthy.get(), id++).ok());
      EXPECT_LT(absl::Now() - t0, absl::Milliseconds(500));
    }
    EXPECT_EQ(server_->stats().connections_closed, static_cast<uint64_t>(round));
    EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  }
  ExpectHealthy(healthy.get(), 90000, 100);
  EXPECT_EQ(server_->stats().connections_accepted, 4u);
}

// --- Injected transport faults -----------------------------------------------

// Flipping bit 6 of the size's third byte makes it 4 MiB larger: more than
// any slot, so the reader must refuse it rather than read past the slot.
constexpr uint32_t kSizeByte = 2;
constexpr uint8_t kSizeMask = 0x40;

TEST_F(FaultScenarioTest, CorruptResponseHeaderFailsOnlyThatConnection) {
  StartServer(1);
  std::unique_ptr<Channel> a = Connect(RpcMode::kRemoteFetch, Faulty("resp_a"));
  std::unique_ptr<Channel> b = Connect(RpcMode::kRemoteFetch);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Echo(a.get(), 1).ok());
  FaultKnobs* k = FaultKnobs::Named("resp_a");
  // Every header READ of the next call arrives with a garbled size; the
  // first one that shows the call's result ready must be refused (earlier
  // ones show an older seq and are just "not ready").
  // (A count no call reaches: a descheduled server makes a call fetch
  // more than 1000 times, and an uncorrupted READ would then find it.)
  k->CorruptNextRead(kSizeByte, kSizeMask, /*count=*/1 << 30);
  absl::Status s = Echo(a.get(), 2);
  k->CorruptNextRead(kSizeByte, kSizeMask, /*count=*/0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("corrupt response header"), std::string::npos) << s;
  EXPECT_GE(k->counters().reads_corrupted, 1u);
  // Others are unaffected; the server is alive; A reconnects.
  ExpectHealthy(b.get(), 100, 50);
  EXPECT_TRUE(EchoUntilOk(a.get(), 3, absl::Seconds(5)).ok());
  ExpectHealthy(a.get(), 200, 50);
  EXPECT_EQ(server_->stats().connections_accepted, 3u);
}

// A header READ that overlaps the server's store of the head word can pair
// the new seq with old size bytes (Soft-RoCE copies READ data byte by byte).
// Simulated by flipping bit 3 of the size's first byte in the next 1000
// READs (the first few may come before the result is published):
// such a head names an offset where its tail is not, so the client READs
// again instead of taking a result of the wrong length.
TEST_F(FaultScenarioTest, TornResponseHeaderIsReadAgain) {
  StartServer(1);
  std::unique_ptr<Channel> a = Connect(RpcMode::kRemoteFetch, Faulty("torn_a"));
  ASSERT_TRUE(a != nullptr);
  ASSERT_TRUE(Echo(a.get(), 1).ok());
  FaultKnobs* k = FaultKnobs::Named("torn_a");
  k->CorruptNextRead(/*offset=*/0, /*xor_mask=*/0x08, /*count=*/1000);
  absl::Status s = Echo(a.get(), 2);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(k->counters().reads_corrupted, 1000u);
  ExpectHealthy(a.get(), 100, 50);
  EXPECT_EQ(server_->stats().connections_accepted, 1u);  // No reconnect.
}

TEST_F(FaultScenarioTest, CorruptRequestHeaderIsAnsweredWithASpecificError) {
  StartServer(1);
  std::unique_ptr<Channel> a = Connect(RpcMode::kRemoteFetch, Faulty("req_a"));
  std::unique_ptr<Channel> b = Connect(RpcMode::kHybrid);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Echo(a.get(), 1).ok());
  FaultKnobs* k = FaultKnobs::Named("req_a");
  struct Case {
    const char* what;
    uint32_t offset;
    uint8_t mask;
    absl::StatusCode code;
  } cases[] = {
      {"size beyond the slot", kSizeByte, kSizeMask,
       absl::StatusCode::kInvalidArgument},
      {"method id", 12, 0x01, absl::StatusCode::kUnimplemented},
      {"unknown flag", 10, 0x80, absl::StatusCode::kInvalidArgument},
  };
  uint64_t id = 10;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    k->CorruptNextWrite(c.offset, c.mask);
    absl::Status s = Echo(a.get(), id++);
    EXPECT_EQ(s.code(), c.code) << s;
    // The same connection goes on serving; so does everyone else.
    ExpectHealthy(a.get(), id, 20);
    id += 20;
    ExpectHealthy(b.get(), id, 20);
    id += 20;
  }
  EXPECT_EQ(k->counters().writes_corrupted, 3u);
  EXPECT_GE(server_->stats().bad_requests, 2u);
  EXPECT_EQ(server_->stats().connections_closed, 0u);
}

// A pushed head with the call's seq and a size past the slot cannot be told
// from bytes an earlier result left in the reply slot (or a WRITE still
// landing), so the client checks it against the server's published copy with
// one READ: here that copy is intact, so the call gets its real result and
// the connection lives on. (A corrupt published header fails the connection:
// CorruptResponseHeaderFailsOnlyThatConnection.)
TEST_F(FaultScenarioTest, CorruptServerReplyHeaderIsCheckedAgainstThePublishedCopy) {
  StartServer(1, Faulty("srv_reply"));
  std::unique_ptr<Channel> a = Connect(RpcMode::kServerReply);
  std::unique_ptr<Channel> b = Connect(RpcMode::kRemoteFetch);  // No server WRITEs.
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Echo(a.get(), 1).ok());
  FaultKnobs* k = FaultKnobs::Named("srv_reply");
  const uint64_t reads_before = a->stats().rdma_reads;
  k->CorruptNextWrite(kSizeByte, kSizeMask);
  EXPECT_TRUE(Echo(a.get(), 2).ok());  // Checked: the reply is call 2's.
  EXPECT_EQ(k->counters().writes_corrupted, 1u);
  EXPECT_EQ(a->stats().rdma_reads, reads_before + 1);
  ExpectHealthy(b.get(), 100, 50);
  ExpectHealthy(a.get(), 200, 50);
  EXPECT_EQ(server_->stats().connections_accepted, 2u);  // No reconnect.
}

TEST_F(FaultScenarioTest, FailedPostOrConnectionGivesUnavailableThenReconnects) {
  StartServer(1);
  std::unique_ptr<Channel> a = Connect(RpcMode::kHybrid, Faulty("post_a"));
  std::unique_ptr<Channel> b = Connect(RpcMode::kHybrid);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Echo(a.get(), 1).ok());
  FaultKnobs* k = FaultKnobs::Named("post_a");
  k->FailNextPosts(1);
  EXPECT_EQ(Echo(a.get(), 2).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(EchoUntilOk(a.get(), 3, absl::Seconds(5)).ok());
  // A connection failing mid-call (the request WRITE went out, then the
  // connection broke under the call's READs).
  k->FailConnectionAtPost(2);
  TestRequest req;
  req.set_id(4);
  req.set_sleep_ms(20);
  TestResponse resp;
  absl::Status s = CallEcho(a.get(), nullptr, req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(k->counters().posts_failed, 1u);
  EXPECT_EQ(k->counters().connections_failed, 1u);
  EXPECT_TRUE(EchoUntilOk(a.get(), 5, absl::Seconds(5)).ok());
  ExpectHealthy(a.get(), 100, 50);
  ExpectHealthy(b.get(), 200, 50);
}

// Calls use a channel's connection through a plain pointer; a connection
// replaced after a failure is kept until no call can hold it, then freed.
// Sync and async callers run while the connection fails and is replaced
// again and again: every call ends OK with its own reply or UNAVAILABLE
// (asan and tsan check nobody used a freed connection), and once they stop
// every replaced connection is closed (the server sees it go).
TEST_F(FaultScenarioTest,
       ConnectionsReplacedUnderRunningCallsAreFreedOnceUnused) {
  StartServer(1);
  std::unique_ptr<Channel> a = Connect(RpcMode::kHybrid, Faulty("churn"));
  ASSERT_TRUE(a);
  ASSERT_TRUE(Echo(a.get(), 1).ok());
  FaultKnobs* k = FaultKnobs::Named("churn");
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, bad{0};
  auto check = [&](const absl::Status& s) {
    if (s.ok()) {
      ok.fetch_add(1);
    } else if (s.code() != absl::StatusCode::kUnavailable) {
      bad.fetch_add(1);
      ADD_FAILURE() << s;
    }
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&, t] {
      for (uint64_t id = 1000 * (t + 1); !stop.load(); ++id)
        check(Echo(a.get(), id));
    });
  }
  callers.emplace_back([&] {
    while (!stop.load()) {
      AsyncCalls calls(8);
      TestRequest req;
      req.set_id(7);
      for (int i = 0; i < 8; ++i)
        calls.Start(a.get(), i, req, absl::Seconds(5));
      while (calls.done.load(std::memory_order_acquire) < 8) {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      for (int i = 0; i < 8; ++i) {
        check(calls.statuses[i]);
        if (calls.statuses[i].ok()) {
          EXPECT_EQ(calls.resps[i].id(), 7u);
        }
      }
    }
  });
  constexpr int kFailures = 6;
  for (int f = 0; f < kFailures; ++f) {
    k->FailNextPosts(1);
    // Past the channel's reconnect interval (100 ms), so each failure is
    // followed by a reconnect.
    absl::SleepFor(absl::Milliseconds(150));
  }
  stop.store(true);
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(ok.load(), 100);
  EXPECT_EQ(k->counters().posts_failed, static_cast<uint64_t>(kFailures));
  // The last call's end frees what is retired (no call holds it then).
  ASSERT_TRUE(EchoUntilOk(a.get(), 9, absl::Seconds(5)).ok());
  const uint64_t accepted = server_->stats().connections_accepted;
  EXPECT_GE(accepted, 1u + kFailures);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (server_->stats().connections_closed < accepted - 1 &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  // Only the live connection is left open.
  EXPECT_EQ(server_->stats().connections_closed, accepted - 1);
  ExpectHealthy(a.get(), 100, 50);
}

TEST_F(FaultScenarioTest, DroppedCompletionsEndInDeadlineOrUnavailableNeverAHang) {
  StartServer(1, Faulty("drop_srv"));
  ChannelOptions opts;
  // One slot: a completion lost for good would wedge the connection.
  opts.slots_per_connection = 1;
  std::unique_ptr<Channel> rf = Connect(RpcMode::kRemoteFetch, Faulty("drop_rf"), opts);
  std::unique_ptr<Channel> sr = Connect(RpcMode::kServerReply, "", opts);
  ASSERT_TRUE(rf && sr);
  ASSERT_TRUE(Echo(rf.get(), 1).ok());
  ASSERT_TRUE(Echo(sr.get(), 2).ok());
  // Client side: the header READ's completion never comes.
  FaultKnobs::Named("drop_rf")->DropNextCompletions(1);
  // Server side: the completion of a server-reply WRITE never comes.
  FaultKnobs::Named("drop_srv")->DropNextCompletions(1);
  uint64_t id = 10;
  for (Channel* ch : {rf.get(), sr.get()}) {
    int ok = 0, failed = 0;
    // Each call ends, OK with its own reply or DEADLINE_EXCEEDED /
    // UNAVAILABLE, within its deadline plus slack; the lost completion is
    // detected (2 s) and the channel reconnects, so calls succeed again.
    for (int i = 0; i < 40; ++i) {
      const absl::Time t0 = absl::Now();
      absl::Status s = Echo(ch, id++, absl::Milliseconds(300));
      EXPECT_LT(absl::Now() - t0, absl::Milliseconds(800));
      if (s.ok()) {
        ++ok;
      } else {
        ++failed;
        EXPECT_TRUE(s.code() == absl::StatusCode::kDeadlineExceeded ||
                    s.code() == absl::StatusCode::kUnavailable)
            << s;
      }
    }
    EXPECT_GE(ok, 30);
    EXPECT_TRUE(EchoUntilOk(ch, id++, absl::Seconds(10)).ok());
    ExpectHealthy(ch, id, 50);
    id += 50;
  }
  EXPECT_EQ(FaultKnobs::Named("drop_rf")->counters().completions_dropped, 1u);
  EXPECT_EQ(FaultKnobs::Named("drop_srv")->counters().completions_dropped, 1u);
}

TEST_F(FaultScenarioTest, DelayedCompletionsOnlySlowCallsDown) {
  StartServer(1, Faulty("delay_srv"));
  std::unique_ptr<Channel> a = Connect(RpcMode::kHybrid, Faulty("delay_a"));
  ASSERT_TRUE(a);
  FaultKnobs::Named("delay_a")->set_completion_delay(absl::Microseconds(10),
                                                    absl::Microseconds(500));
  FaultKnobs::Named("delay_srv")->set_completion_delay(absl::Microseconds(10),
                                                      absl::Microseconds(500));
  ExpectHealthy(a.get(), 1, 200);
  EXPECT_GT(FaultKnobs::Named("delay_a")->counters().completions_delayed, 100u);
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc
