// Copyright 2026 The rfrpc Authors.
//
// Lost peers: a killed client's slots are reclaimed while others are served;
// a killed server's callers get UNAVAILABLE before their deadlines; a
// restarted server at the same address is reached again.

#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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
#include "transport/shm/shm_provider.h"

namespace rfrpc {
namespace testing {
namespace {

std::string FreshAddress() {
  if (Provider() == "shm") {
    return absl::StrCat("@rfrpc-fault-test-", ::getpid(), "-",
                        absl::ToUnixNanos(absl::Now()));
  }
  const char* a = std::getenv("RFRPC_TEST_ADDRESS");
  return a != nullptr ? a : "";
}

// An in-process server at a fresh address, quick to sleep when idle.
ServerOptions FaultTestServerOptions() {
  ServerOptions so;
  so.provider = Provider();
  so.address = FreshAddress();
  so.idle_spin_rounds = 100;
  return so;
}

TEST(RpcFaultTest, KilledServerGivesUnavailableBeforeDeadlineAndRestartReconnects) {
  std::string address = FreshAddress();
  auto server = std::make_unique<PeerProcess>("server", address);
  ASSERT_TRUE(server->started());
  std::string line = server->Line();
  ASSERT_EQ(line.rfind("listening on ", 0), 0u) << line;
  address = line.substr(13);

  ChannelOptions opts;
  opts.provider = Provider();
  auto ch = Channel::Create(address, opts);
  ASSERT_TRUE(ch.ok()) << ch.status();
  TestRequest req;
  req.set_id(1);
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch->get(), nullptr, req, &resp).ok());

  server->Kill();
  ClientContext ctx;
  ctx.set_timeout(absl::Seconds(10));
  const absl::Time start = absl::Now();
  req.set_id(2);
  req.set_delay_ns(1000000);
  absl::Status s = CallEcho(ch->get(), &ctx, req, &resp);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_LT(took, absl::Seconds(2)) << "took " << took;

  // A new server at the same address: the channel reconnects.
  server = std::make_unique<PeerProcess>("server", address);
  line = server->Line();
  ASSERT_EQ(line.rfind("listening on ", 0), 0u) << line;
  absl::Status last;
  for (int i = 0; i < 100; ++i) {
    req.set_id(100 + i);
    req.set_delay_ns(0);
    last = CallEcho(ch->get(), nullptr, req, &resp);
    if (last.ok()) break;
    EXPECT_EQ(last.code(), absl::StatusCode::kUnavailable) << last;
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_TRUE(last.ok()) << last;
  EXPECT_EQ(resp.id(), req.id());
}

// Hundreds of clients connecting at once meet a listener whose handshakes
// are at their cap ("retry later"): Channel::Create tries again until its
// connect timeout instead of failing at once (a YCSB run of 200 threads
// failed to start in 2 of 3 runs).
TEST(RpcFaultTest, ConnectWaitsOutAListenerAtItsHandshakeCap) {
  if (Provider() != "shm")
    GTEST_SKIP() << "the cap is filled over Unix sockets";
  TestService service;  // Outlives the server.
  Server server(FaultTestServerOptions());
  ASSERT_TRUE(server.RegisterService(&service).ok());
  ASSERT_TRUE(server.Start().ok());
  const std::string address = server.address();
  ASSERT_EQ(address[0], '@');  // FreshAddress: the abstract namespace.
  // Peers that connect and say nothing hold every handshake slot.
  std::vector<int> silent;
  for (int i = 0; i < transport::shm::kMaxHalfOpenHandshakes; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path + 1, address.data() + 1, address.size() - 1);
    const socklen_t len = static_cast<socklen_t>(
        offsetof(sockaddr_un, sun_path) + address.size());
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), len), 0);
    silent.push_back(fd);
  }
  // Until the listener has counted them all, a connect may still pass.
  absl::SleepFor(absl::Milliseconds(200));
  std::thread hang_up([&silent] {
    absl::SleepFor(absl::Milliseconds(300));
    for (int fd : silent) ::close(fd);
  });
  ChannelOptions opts;
  opts.provider = Provider();
  opts.connect_timeout = absl::Seconds(10);
  const absl::Time start = absl::Now();
  auto ch = Channel::Create(address, opts);
  const absl::Duration took = absl::Now() - start;
  hang_up.join();
  ASSERT_TRUE(ch.ok()) << ch.status();
  // It waited for the slots (the refusals came at once).
  EXPECT_GE(took, absl::Milliseconds(200)) << took;
  TestRequest req;
  req.set_id(3);
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch->get(), nullptr, req, &resp).ok());
  EXPECT_EQ(resp.id(), 3u);
}

TEST(RpcFaultTest, KilledClientIsReclaimedAndOthersUnaffected) {
  TestService service;  // Outlives the server.
  Server server(FaultTestServerOptions());
  ASSERT_TRUE(server.RegisterService(&service).ok());
  ASSERT_TRUE(server.Start().ok());

  ChannelOptions opts;
  opts.provider = Provider();
  auto healthy = Channel::Create(server.address(), opts);
  ASSERT_TRUE(healthy.ok()) << healthy.status();

  PeerProcess client("client", server.address());
  ASSERT_EQ(client.Line(), "calling");
  EXPECT_EQ(server.stats().connections_accepted, 2u);
  client.Kill();

  // The server notices and frees the dead client's connection and slots.
  const absl::Time start = absl::Now();
  while (server.stats().connections_closed < 1 &&
         absl::Now() - start < absl::Seconds(5)) {
    TestRequest req;
    req.set_id(7);
    TestResponse resp;
    ASSERT_TRUE(CallEcho(healthy->get(), nullptr, req, &resp).ok());
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(server.stats().connections_closed, 1u);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  // The healthy client still works.
  for (int i = 0; i < 100; ++i) {
    TestRequest req;
    req.set_id(1000 + i);
    TestResponse resp;
    ASSERT_TRUE(CallEcho(healthy->get(), nullptr, req, &resp).ok());
    EXPECT_EQ(resp.id(), 1000u + i);
  }
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc
