// Copyright 2026 The rfrpc Authors.
//
// Verbs provider scenarios against a real RDMA device: Soft-RoCE (rdma_rxe)
// inside the qemu VM, or any RDMA host. Tagged "manual" + "softroce", so a
// host `bazel test //...` does not run it. Inside the VM:
//
//   RFRPC_REQUIRE_VERBS=1 RFRPC_VERBS_ADDR=10.11.0.1:0
//     /abs/path/bazel-bin/transport/verbs/verbs_softroce_test
//
// Without a device the tests skip, unless RFRPC_REQUIRE_VERBS=1 (then they
// fail). Both ends of every connection live in this one process and talk
// over the bootstrap TCP socket to RFRPC_VERBS_ADDR (default 10.11.0.1:0,
// the VM's eth0; port 0 picks one).
//
// The scenarios read as Receive/Expect; connection pairs come from
// ConnectPair(), which the shared provider conformance suite can reuse to
// instantiate itself for "verbs".

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/bootstrap.h"
#include "transport/handshake.pb.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_provider.h"

namespace rfrpc {
namespace transport {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(10);

std::string ListenAddress() {
  const char* a = getenv("RFRPC_VERBS_ADDR");
  return a != nullptr && *a != '\0' ? a : "10.11.0.1:0";
}

void Fill(char* p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) {
    p[i] = static_cast<char>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  }
}

struct Pair {
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server;
};

class VerbsSoftRoceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Provider>> p = Provider::Open("verbs", {});
    if (!p.ok()) {
      if (getenv("RFRPC_REQUIRE_VERBS") != nullptr) {
        FAIL() << "RFRPC_REQUIRE_VERBS set but: " << p.status();
      }
      GTEST_SKIP() << p.status();
    }
    provider_ = std::move(*p);
    ASSERT_EQ(provider_->name(), "verbs");
    auto ccq = provider_->CreateCompletionQueue({});
    ASSERT_TRUE(ccq.ok()) << ccq.status();
    client_cq_ = std::move(*ccq);
    auto scq = provider_->CreateCompletionQueue({});
    ASSERT_TRUE(scq.ok()) << scq.status();
    server_cq_ = std::move(*scq);
    auto l = provider_->Listen(ListenAddress());
    ASSERT_TRUE(l.ok()) << l.status();
    listener_ = std::move(*l);
  }

  std::unique_ptr<MemoryRegion> Alloc(size_t n) {
    auto m = provider_->AllocateMemory(n);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? std::move(*m) : nullptr;
  }

  ConnectionSetup ClientSetup() {
    ConnectionSetup s;
    s.cq = client_cq_.get();
    return s;
  }
  ConnectionSetup ServerSetup(const MemoryRegion* exposed) {
    ConnectionSetup s;
    s.cq = server_cq_.get();
    if (exposed != nullptr) s.exposed.push_back({exposed, 0, 0, true, true});
    return s;
  }

  // Connects a client (Connect) to a server (Next + Accept) in this process.
  // `accept_status`, if not null, receives the server side's result.
  absl::StatusOr<Pair> ConnectPair(const ConnectionSetup& client_setup,
                                   const ConnectionSetup& server_setup,
                                   absl::Status* accept_status = nullptr) {
    Pair pair;
    absl::Status server_status;
    std::thread server([&] {
      auto in = listener_->Next(kWait);
      if (!in.ok()) {
        server_status = in.status();
        return;
      }
      auto c = (*in)->Accept(server_setup);
      if (!c.ok()) {
        server_status = c.status();
        return;
      }
      pair.server = std::move(*c);
    });
    auto c = provider_->Connect(listener_->address(), client_setup);
    server.join();
    if (accept_status != nullptr) *accept_status = server_status;
    if (!c.ok()) return c.status();
    if (!server_status.ok()) return server_status;
    pair.client = std::move(*c);
    return pair;
  }

  absl::StatusOr<Completion> WaitOne(CompletionQueue* cq) {
    Completion c;
    absl::Status s = cq->Wait(&c, kWait);
    if (!s.ok()) return s;
    return c;
  }

  std::unique_ptr<Provider> provider_;
  std::unique_ptr<CompletionQueue> client_cq_;
  std::unique_ptr<CompletionQueue> server_cq_;
  std::unique_ptr<Listener> listener_;
};

TEST_F(VerbsSoftRoceTest, HandshakeDeliversRegionsAndUserData) {
  auto target = Alloc(8192);
  ConnectionSetup cs = ClientSetup();
  cs.user_data = "from client";
  ConnectionSetup ss = ServerSetup(target.get());
  ss.user_data = std::string("srv\0x", 5);
  auto pair = ConnectPair(cs, ss);
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(pair->client->peer().provider, "verbs");
  EXPECT_EQ(pair->client->peer().user_data, std::string("srv\0x", 5));
  EXPECT_EQ(pair->server->peer().user_data, "from client");
  ASSERT_EQ(pair->client->peer().regions.size(), 1u);
  EXPECT_EQ(pair->client->peer().regions[0].addr,
            reinterpret_cast<uintptr_t>(target->data()));
  EXPECT_EQ(pair->client->peer().regions[0].length, 8192u);
  EXPECT_TRUE(pair->server->peer().regions.empty());
  EXPECT_TRUE(pair->client->ok());
  EXPECT_TRUE(pair->server->ok());
  EXPECT_NE(pair->client->id(), pair->server->id());
  std::cout << "client peer_name=" << pair->client->peer().peer_name
            << " server peer_name=" << pair->server->peer().peer_name
            << " listener=" << listener_->address() << std::endl;
}

TEST_F(VerbsSoftRoceTest, WriteThenReadByteExact1BTo64KiB) {
  constexpr size_t kMax = 64 * 1024;
  auto target = Alloc(kMax + 4096);
  auto src = Alloc(kMax);
  auto dst = Alloc(kMax);
  auto pair = ConnectPair(ClientSetup(), ServerSetup(target.get()));
  ASSERT_TRUE(pair.ok()) << pair.status();
  const RemoteRegion remote = pair->client->peer().regions[0];
  const std::vector<uint32_t> sizes = {1,    2,    3,    7,    8,     9,
                                       63,   64,   65,   127,  128,   129,
                                       1000, 1024, 4095, 4096, 4097,  8192,
                                       12345, 32768, 65535, 65536};
  uint64_t wr_id = 100;
  for (uint32_t n : sizes) {
    SCOPED_TRACE(n);
    const uint64_t roff = n % 4096;  // Unaligned remote offsets too.
    Fill(src->data(), n, n);
    memset(dst->data(), 0, kMax);
    WorkRequest w = WorkRequest::Write(++wr_id, src.get(), 0, n, remote, roff);
    ASSERT_TRUE(pair->client->Post({&w, 1}).ok());
    auto c = WaitOne(client_cq_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->status, WcStatus::kSuccess) << WcStatusName(c->status);
    EXPECT_EQ(c->wr_id, wr_id);
    EXPECT_EQ(c->opcode, Opcode::kWrite);
    EXPECT_EQ(c->connection, pair->client.get());
    EXPECT_EQ(c->connection_id, pair->client->id());
    ASSERT_EQ(memcmp(target->data() + roff, src->data(), n), 0);

    WorkRequest r = WorkRequest::Read(++wr_id, dst.get(), 0, n, remote, roff);
    ASSERT_TRUE(pair->client->Post({&r, 1}).ok());
    c = WaitOne(client_cq_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->status, WcStatus::kSuccess) << WcStatusName(c->status);
    EXPECT_EQ(c->wr_id, wr_id);
    EXPECT_EQ(c->opcode, Opcode::kRead);
    EXPECT_EQ(c->byte_len, n);
    ASSERT_EQ(memcmp(dst->data(), src->data(), n), 0);
  }
  const Connection::Counters& k = pair->client->counters();
  EXPECT_EQ(k.writes.load(), sizes.size());
  EXPECT_EQ(k.reads.load(), sizes.size());
  EXPECT_EQ(k.completions.load(), 2 * sizes.size());
  EXPECT_EQ(k.errors.load(), 0u);
  EXPECT_EQ(k.post_lists.load(), 2 * sizes.size());
  EXPECT_GT(k.bytes_written.load(), 0u);
  EXPECT_EQ(k.bytes_written.load(), k.bytes_read.load());
}

TEST_F(VerbsSoftRoceTest, InlineWriteCopiesAtPostTime) {
  auto target = Alloc(4096);
  auto pair = ConnectPair(ClientSetup(), ServerSetup(target.get()));
  ASSERT_TRUE(pair.ok()) << pair.status();
  const RemoteRegion remote = pair->client->peer().regions[0];
  for (uint32_t n : {1u, 8u, 64u, 91u, 128u}) {
    SCOPED_TRACE(n);
    char buf[128];
    Fill(buf, n, n + 1);
    std::string expect(buf, n);
    WorkRequest w = WorkRequest::Write(n, nullptr, 0, n, remote, 256);
    w.inline_write = true;
    w.inline_data = buf;
    ASSERT_TRUE(pair->client->Post({&w, 1}).ok());
    memset(buf, 0xee, sizeof(buf));  // Reusable once Post returned.
    auto c = WaitOne(client_cq_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->status, WcStatus::kSuccess);
    EXPECT_EQ(std::string(target->data() + 256, n), expect);
  }
  EXPECT_EQ(pair->client->counters().inline_writes.load(), 5u);

  char big[256] = {};
  WorkRequest w = WorkRequest::Write(9, nullptr, 0, 200, remote, 0);
  w.inline_write = true;
  w.inline_data = big;
  absl::Status s = pair->client->Post({&w, 1});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(pair->client->ok());
}

TEST_F(VerbsSoftRoceTest, PostListOfUnsignaledThenSignaledIsOneDoorbell) {
  auto target = Alloc(64 * 1024);
  auto src = Alloc(64 * 1024);
  auto dst = Alloc(64 * 1024);
  auto pair = ConnectPair(ClientSetup(), ServerSetup(target.get()));
  ASSERT_TRUE(pair.ok()) << pair.status();
  const RemoteRegion remote = pair->client->peer().regions[0];
  Fill(src->data(), 64 * 1024, 3);

  constexpr int kN = 16;
  std::vector<WorkRequest> list;
  for (int i = 0; i < kN; ++i) {
    WorkRequest w =
        WorkRequest::Write(1000 + i, src.get(), i * 4096, 4096, remote,
                           i * 4096);
    w.signaled = (i == kN - 1);
    list.push_back(w);
  }
  ASSERT_TRUE(pair->client->Post(list).ok());
  auto c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->wr_id, 1000u + kN - 1);  // Only the signaled one completes.
  EXPECT_EQ(c->status, WcStatus::kSuccess);
  EXPECT_EQ(memcmp(target->data(), src->data(), 64 * 1024), 0);
  Completion extra;
  EXPECT_EQ(client_cq_->Poll({&extra, 1}), 0);

  // Mixed: unsignaled READs then a signaled READ, one list.
  list.clear();
  for (int i = 0; i < kN; ++i) {
    WorkRequest r = WorkRequest::Read(2000 + i, dst.get(), i * 4096, 4096,
                                      remote, i * 4096);
    r.signaled = (i == kN - 1);
    list.push_back(r);
  }
  ASSERT_TRUE(pair->client->Post(list).ok());
  c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->wr_id, 2000u + kN - 1);
  EXPECT_EQ(c->opcode, Opcode::kRead);
  EXPECT_EQ(memcmp(dst->data(), src->data(), 64 * 1024), 0);

  const Connection::Counters& k = pair->client->counters();
  EXPECT_EQ(k.post_lists.load(), 2u);
  EXPECT_EQ(k.writes.load(), static_cast<uint64_t>(kN));
  EXPECT_EQ(k.reads.load(), static_cast<uint64_t>(kN));
  EXPECT_EQ(k.signaled.load(), 2u);
  EXPECT_EQ(k.completions.load(), 2u);
}

TEST_F(VerbsSoftRoceTest, WriteOrderWithinConnectionAndTrailingFlag) {
  auto target = Alloc(4096);
  auto src = Alloc(4096);
  auto pair = ConnectPair(ClientSetup(), ServerSetup(target.get()));
  ASSERT_TRUE(pair.ok()) << pair.status();
  const RemoteRegion remote = pair->client->peer().regions[0];
  // 100 WRITEs of an increasing counter to one word; the last one wins.
  std::vector<WorkRequest> list;
  for (uint64_t i = 1; i <= 100; ++i) {
    memcpy(src->data() + 8 * i, &i, 8);
    WorkRequest w = WorkRequest::Write(i, src.get(), 8 * i, 8, remote, 0);
    w.signaled = (i == 100);
    list.push_back(w);
  }
  ASSERT_TRUE(pair->client->Post(list).ok());
  ASSERT_TRUE(WaitOne(client_cq_.get()).ok());
  EXPECT_EQ(LoadAcquire64(target->data()), 100u);
}

TEST_F(VerbsSoftRoceTest, BadRkeyIsRemoteAccessErrorAndFailsConnection) {
  auto target = Alloc(4096);
  auto src = Alloc(4096);
  auto pair = ConnectPair(ClientSetup(), ServerSetup(target.get()));
  ASSERT_TRUE(pair.ok()) << pair.status();
  RemoteRegion bad = pair->client->peer().regions[0];
  bad.rkey ^= 0x5a5a00;
  WorkRequest w = WorkRequest::Write(7, src.get(), 0, 64, bad, 0);
  ASSERT_TRUE(pair->client->Post({&w, 1}).ok());
  auto c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->wr_id, 7u);
  EXPECT_EQ(c->opcode, Opcode::kWrite);
  EXPECT_EQ(c->status, WcStatus::kRemoteAccessError) << WcStatusName(c->status);
  EXPECT_EQ(c->ToStatus().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(pair->client->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(pair->client->status().message()),
              HasSubstr("remote access error"));
  std::cout << "client status after bad rkey: " << pair->client->status()
            << std::endl;
  EXPECT_EQ(pair->client->counters().errors.load(), 1u);

  // Posting on the failed connection: UNAVAILABLE, signaled work flushed.
  WorkRequest again = WorkRequest::Write(8, src.get(), 0, 64,
                                         pair->client->peer().regions[0], 0);
  absl::Status s = pair->client->Post({&again, 1});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->wr_id, 8u);
  EXPECT_EQ(c->status, WcStatus::kFlushed);

  // The peer learns through the liveness channel.
  const absl::Time give_up = absl::Now() + kWait;
  while (pair->server->ok() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(pair->server->status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(VerbsSoftRoceTest, OutOfExposedRangeAndReadOnlyAreRemoteAccessErrors) {
  auto region = Alloc(3 * 4096);
  auto src = Alloc(4096);
  ConnectionSetup ss = ServerSetup(nullptr);
  ss.exposed.push_back({region.get(), 4096, 4096, true, true});   // Middle.
  ss.exposed.push_back({region.get(), 8192, 4096, false, true});  // RO.
  {
    auto pair = ConnectPair(ClientSetup(), ss);
    ASSERT_TRUE(pair.ok()) << pair.status();
    const RemoteRegion mid = pair->client->peer().regions[0];
    EXPECT_EQ(mid.length, 4096u);
    // Two bytes past the end of the exposed window.
    WorkRequest w = WorkRequest::Write(1, src.get(), 0, 64, mid, 4096 - 62);
    ASSERT_TRUE(pair->client->Post({&w, 1}).ok());
    auto c = WaitOne(client_cq_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->status, WcStatus::kRemoteAccessError)
        << WcStatusName(c->status);
    for (int i = 0; i < 3 * 4096; ++i) ASSERT_EQ(region->data()[i], 0) << i;
  }
  {
    auto pair = ConnectPair(ClientSetup(), ss);
    ASSERT_TRUE(pair.ok()) << pair.status();
    const RemoteRegion ro = pair->client->peer().regions[1];
    Fill(src->data(), 64, 1);
    WorkRequest w = WorkRequest::Write(2, src.get(), 0, 64, ro, 0);
    ASSERT_TRUE(pair->client->Post({&w, 1}).ok());
    auto c = WaitOne(client_cq_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->status, WcStatus::kRemoteAccessError)
        << WcStatusName(c->status);
    for (int i = 0; i < 3 * 4096; ++i) ASSERT_EQ(region->data()[i], 0) << i;
  }
}

TEST_F(VerbsSoftRoceTest, RkeyOfAnotherConnectionsPdIsRemoteAccessError) {
  auto region_a = Alloc(4096);
  auto region_b = Alloc(4096);
  auto src = Alloc(4096);
  Fill(src->data(), 4096, 9);
  auto a = ConnectPair(ClientSetup(), ServerSetup(region_a.get()));
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = ConnectPair(ClientSetup(), ServerSetup(region_b.get()));
  ASSERT_TRUE(b.ok()) << b.status();
  const RemoteRegion of_a = a->client->peer().regions[0];

  // Positive control: A's key works on A.
  WorkRequest ok = WorkRequest::Write(1, src.get(), 0, 128, of_a, 0);
  ASSERT_TRUE(a->client->Post({&ok, 1}).ok());
  auto c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->status, WcStatus::kSuccess);
  memset(region_a->data(), 0, 4096);

  // The same (address, rkey) used on connection B: the target's QP for B is
  // in B's PD, where that key names nothing.
  WorkRequest forged = WorkRequest::Write(2, src.get(), 0, 128, of_a, 0);
  ASSERT_TRUE(b->client->Post({&forged, 1}).ok());
  c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->connection, b->client.get());
  EXPECT_EQ(c->status, WcStatus::kRemoteAccessError) << WcStatusName(c->status);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(region_a->data()[i], 0) << i;
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(region_b->data()[i], 0) << i;

  // A forged READ through B is refused as well; A keeps working.
  EXPECT_FALSE(b->client->ok());
  EXPECT_TRUE(a->client->ok());
  WorkRequest still = WorkRequest::Write(3, src.get(), 0, 128, of_a, 0);
  ASSERT_TRUE(a->client->Post({&still, 1}).ok());
  c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->status, WcStatus::kSuccess);
  EXPECT_EQ(memcmp(region_a->data(), src->data(), 128), 0);
}

TEST_F(VerbsSoftRoceTest, PeerClosedIsUnavailableAndFlushes) {
  auto target = Alloc(4096);
  auto src = Alloc(4096);
  auto pair = ConnectPair(ClientSetup(), ServerSetup(target.get()));
  ASSERT_TRUE(pair.ok()) << pair.status();
  const RemoteRegion remote = pair->client->peer().regions[0];
  pair->server.reset();  // The peer goes away.
  const absl::Time give_up = absl::Now() + kWait;
  while (pair->client->ok() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  absl::Status st = pair->client->status();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_THAT(std::string(st.message()), HasSubstr("closed"));
  std::cout << "client status after peer closed: " << st << std::endl;
  WorkRequest w = WorkRequest::Write(5, src.get(), 0, 8, remote, 0);
  absl::Status s = pair->client->Post({&w, 1});
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  auto c = WaitOne(client_cq_.get());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->wr_id, 5u);
  EXPECT_EQ(c->status, WcStatus::kFlushed);
  EXPECT_EQ(c->ToStatus().code(), absl::StatusCode::kUnavailable);
}

TEST_F(VerbsSoftRoceTest, FailByCallerReachesPeer) {
  auto pair = ConnectPair(ClientSetup(), ServerSetup(nullptr));
  ASSERT_TRUE(pair.ok()) << pair.status();
  pair->server->Fail(absl::InternalError("protocol violation"));
  pair->server->Fail(absl::InternalError("second reason ignored"));
  EXPECT_EQ(pair->server->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(pair->server->status().message()),
              HasSubstr("protocol violation"));
  const absl::Time give_up = absl::Now() + kWait;
  while (pair->client->ok() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(pair->client->status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(VerbsSoftRoceTest, AdaptivePollingBlocksThenWakesOnCompletion) {
  CompletionQueueOptions o;
  o.poll_mode = PollMode::kAdaptive;
  o.max_retry = 200;
  auto cq = provider_->CreateCompletionQueue(o);
  ASSERT_TRUE(cq.ok()) << cq.status();
  auto target = Alloc(4096);
  auto src = Alloc(4096);
  ConnectionSetup cs;
  cs.cq = cq->get();
  auto pair = ConnectPair(cs, ServerSetup(target.get()));
  ASSERT_TRUE(pair.ok()) << pair.status();

  // Nothing outstanding: spins max_retry rounds, arms, blocks, times out.
  Completion c;
  const absl::Time t0 = absl::Now();
  absl::Status s = (*cq)->Wait(&c, absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - t0;
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_GE(took, absl::Milliseconds(250));
  CompletionQueue::Stats st = (*cq)->stats();
  EXPECT_GE(st.blocks, 1u);
  EXPECT_GE(st.empty_polls, 200u);

  // A waiter blocked in the event phase is woken by a completion.
  absl::Status waited;
  Completion got;
  std::thread waiter([&] { waited = (*cq)->Wait(&got, absl::Seconds(20)); });
  absl::SleepFor(absl::Milliseconds(300));  // Let it arm and sleep.
  const uint64_t blocks_before = (*cq)->stats().blocks;
  const uint64_t wakeups_before = (*cq)->stats().wakeups;
  WorkRequest w = WorkRequest::Write(77, src.get(), 0, 64,
                                     pair->client->peer().regions[0], 0);
  ASSERT_TRUE(pair->client->Post({&w, 1}).ok());
  waiter.join();
  ASSERT_TRUE(waited.ok()) << waited;
  EXPECT_EQ(got.wr_id, 77u);
  st = (*cq)->stats();
  EXPECT_GE(blocks_before, 2u);
  EXPECT_GT(st.wakeups, wakeups_before);
  std::cout << "adaptive stats: polls=" << st.polls
            << " empty=" << st.empty_polls << " completions=" << st.completions
            << " blocks=" << st.blocks << " wakeups=" << st.wakeups
            << std::endl;
}

TEST_F(VerbsSoftRoceTest, InterruptWakesBlockedWait) {
  for (PollMode mode : {PollMode::kAdaptive, PollMode::kEvent,
                        PollMode::kBusy}) {
    SCOPED_TRACE(static_cast<int>(mode));
    CompletionQueueOptions o;
    o.poll_mode = mode;
    o.max_retry = 100;
    auto cq = provider_->CreateCompletionQueue(o);
    ASSERT_TRUE(cq.ok()) << cq.status();
    absl::Status waited;
    absl::Duration took;
    std::thread waiter([&] {
      Completion c;
      const absl::Time t0 = absl::Now();
      waited = (*cq)->Wait(&c, absl::Seconds(20));
      took = absl::Now() - t0;
    });
    absl::SleepFor(absl::Milliseconds(200));
    (*cq)->Interrupt();
    waiter.join();
    EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded) << waited;
    EXPECT_LT(took, absl::Seconds(5));
  }
}

TEST_F(VerbsSoftRoceTest, EventAndBusyModesDeliver) {
  for (PollMode mode : {PollMode::kEvent, PollMode::kBusy}) {
    SCOPED_TRACE(static_cast<int>(mode));
    CompletionQueueOptions o;
    o.poll_mode = mode;
    auto cq = provider_->CreateCompletionQueue(o);
    ASSERT_TRUE(cq.ok()) << cq.status();
    auto target = Alloc(4096);
    auto src = Alloc(4096);
    ConnectionSetup cs;
    cs.cq = cq->get();
    auto pair = ConnectPair(cs, ServerSetup(target.get()));
    ASSERT_TRUE(pair.ok()) << pair.status();
    for (int i = 0; i < 20; ++i) {
      WorkRequest w = WorkRequest::Write(i, src.get(), 0, 64,
                                         pair->client->peer().regions[0], 0);
      ASSERT_TRUE(pair->client->Post({&w, 1}).ok());
      Completion c;
      ASSERT_TRUE((*cq)->Wait(&c, kWait).ok());
      EXPECT_EQ(c.wr_id, static_cast<uint64_t>(i));
    }
  }
}

TEST_F(VerbsSoftRoceTest, AuthTokenMismatchFailsBothSidesListenerGoesOn) {
  ConnectionSetup cs = ClientSetup();
  cs.auth_token = "wrong";
  ConnectionSetup ss = ServerSetup(nullptr);
  ss.auth_token = "secret";
  absl::Status accept_status;
  auto pair = ConnectPair(cs, ss, &accept_status);
  ASSERT_FALSE(pair.ok());
  EXPECT_EQ(pair.status().code(), absl::StatusCode::kUnauthenticated)
      << pair.status();
  EXPECT_EQ(accept_status.code(), absl::StatusCode::kUnauthenticated)
      << accept_status;
  EXPECT_THAT(std::string(pair.status().message()), HasSubstr("auth token"));

  cs.auth_token = "secret";
  auto good = ConnectPair(cs, ss);
  ASSERT_TRUE(good.ok()) << good.status();
}

TEST_F(VerbsSoftRoceTest, GarbledAndForeignHandshakesAreAnsweredNotFatal) {
  std::string host, port;
  const std::string addr = listener_->address();
  host = addr.substr(0, addr.rfind(':'));
  port = addr.substr(addr.rfind(':') + 1);
  auto raw_connect = [&]() {
    ScopedFd fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    int p = 0;
    EXPECT_TRUE(absl::SimpleAtoi(port, &p));
    sa.sin_port = htons(static_cast<uint16_t>(p));
    inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa),
                        sizeof(sa)),
              0);
    return fd;
  };
  std::thread server([&] {
    // Both bad handshakes are answered inside Next(); none surfaces.
    auto in = listener_->Next(absl::Seconds(3));
    EXPECT_EQ(in.status().code(), absl::StatusCode::kDeadlineExceeded)
        << in.status();
  });
  {
    ScopedFd fd = raw_connect();
    const char junk[] = "GET / HTTP/1.0\r\n\r\n";
    ASSERT_EQ(::write(fd.get(), junk, sizeof(junk)),
              static_cast<ssize_t>(sizeof(junk)));
    HelloReply reply;
    absl::Status s = RecvFrame(fd.get(), &reply, absl::Seconds(5));
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(reply.status_code(),
              static_cast<int>(absl::StatusCode::kInvalidArgument));
    std::cout << "garbled: " << reply.error_message() << std::endl;
  }
  {
    ScopedFd fd = raw_connect();
    Hello hello;
    hello.set_provider("shm");
    ASSERT_TRUE(SendFrame(fd.get(), hello, absl::Seconds(1)).ok());
    HelloReply reply;
    absl::Status s = RecvFrame(fd.get(), &reply, absl::Seconds(5));
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(reply.status_code(),
              static_cast<int>(absl::StatusCode::kFailedPrecondition));
    EXPECT_THAT(reply.error_message(), HasSubstr("provider mismatch"));
    std::cout << "foreign: " << reply.error_message() << std::endl;
  }
  server.join();
  auto good = ConnectPair(ClientSetup(), ServerSetup(nullptr));
  EXPECT_TRUE(good.ok()) << good.status();
}

TEST_F(VerbsSoftRoceTest, RejectAndDropReachTheConnector) {
  std::thread server([&] {
    auto in = listener_->Next(kWait);
    ASSERT_TRUE(in.ok()) << in.status();
    (*in)->Reject(absl::ResourceExhaustedError("server full"));
  });
  auto c = provider_->Connect(listener_->address(), ClientSetup());
  server.join();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("server full"));
}

TEST_F(VerbsSoftRoceTest, ShutdownWakesNext) {
  std::thread t([&] {
    absl::SleepFor(absl::Milliseconds(100));
    listener_->Shutdown();
  });
  auto in = listener_->Next(absl::Seconds(20));
  t.join();
  EXPECT_EQ(in.status().code(), absl::StatusCode::kCancelled) << in.status();
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc
