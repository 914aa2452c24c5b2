// Copyright 2026 The rfrpc Authors.
//
// Isolation and access against a real rfrpc Server:
//   - a client that forges descriptors (another client's region, stolen or
//     guessed keys and addresses, out-of-range offsets of its own region)
//     gets a remote-access error and sees nothing; the victim is served on;
//   - the bootstrap listener caps half-open handshakes and times silent
//     ones out while good clients still connect;
//   - the shared-secret token: mismatch is UNAUTHENTICATED at connect.
//
// Runs on shm by default; RFRPC_TEST_PROVIDER=verbs RFRPC_TEST_ADDRESS=<ip>:0
// runs the descriptor and token cases on verbs (the Soft-RoCE VM); the raw
// socket cases are shm-only (they speak to the Unix bootstrap socket).

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
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
#include "rpc/rpc_handshake.pb.h"
#include "rpc/server.h"
#include "rpc/wire_format.h"
#include "tests/test_service.h"
#include "transport/shm/shm_provider.h"
#include "transport/testing/fault_injection.h"
#include "transport/transport.h"

namespace rfrpc {
namespace testing {
namespace {

using transport::Completion;
using transport::RemoteRegion;
using transport::WcStatus;
using transport::WorkRequest;
using transport::testing::FaultKnobs;

class IsolationTest : public ::testing::Test {
 protected:
  void StartServer(ServerOptions opts = {}) {
    opts.provider = Provider();
    opts.address = ListenAddress();
    opts.idle_spin_rounds = 100;
    server_ = std::make_unique<Server>(opts);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }
  TestService service_;
  std::unique_ptr<Server> server_;
};

// A hand-made rfrpc client connection: a valid RpcHello, then raw WRITEs and
// READs with whatever descriptors the test forges.
struct RawClient {
  std::unique_ptr<transport::Provider> provider;
  std::unique_ptr<transport::CompletionQueue> cq;
  std::unique_ptr<transport::MemoryRegion> local;  // 8 KiB landing/staging.
  std::unique_ptr<transport::MemoryRegion> reply;
  std::unique_ptr<transport::Connection> conn;

  absl::Status Connect(const std::string& address) {
    auto p = transport::Provider::Open(Provider(), {});
    if (!p.ok()) return p.status();
    provider = std::move(*p);
    cq = *provider->CreateCompletionQueue({});
    local = *provider->AllocateMemory(8192);
    reply = *provider->AllocateMemory(4096);
    rpc::RpcHello hello;
    hello.set_version(wire::kRpcVersion);
    hello.set_worker(-1);
    hello.set_slots(1);
    hello.set_request_slot_bytes(256);
    hello.set_response_slot_bytes(256);
    hello.set_client_name("attacker");
    transport::ConnectionSetup setup;
    setup.cq = cq.get();
    setup.exposed.push_back(
        transport::ExposedRegion{reply.get(), 0, 0, true, false});
    setup.user_data = hello.SerializeAsString();
    auto c = provider->Connect(address, setup);
    if (!c.ok()) return c.status();
    conn = std::move(*c);
    return absl::OkStatus();
  }
  RemoteRegion own() const { return conn->peer().regions[0]; }

  // Posts one READ (into local[4096, 4096+len)) or WRITE (from local[0, len))
  // and returns its completion.
  absl::StatusOr<Completion> Do(transport::Opcode op, const RemoteRegion& r,
                                uint64_t offset, uint32_t len) {
    WorkRequest wr = op == transport::Opcode::kRead
                         ? WorkRequest::Read(7, local.get(), 4096, len, r, offset)
                         : WorkRequest::Write(7, local.get(), 0, len, r, offset);
    absl::Status s = conn->Post({&wr, 1});
    if (!s.ok()) return s;
    Completion c;
    s = cq->Wait(&c, absl::Seconds(10));
    if (!s.ok()) return s;
    return c;
  }
};

bool AllBytes(const char* p, size_t n, char v) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != v) return false;
  }
  return true;
}

TEST_F(IsolationTest, ForgedDescriptorsGetRemoteAccessErrorsAndSeeNothing) {
  StartServer();
  // The victim: a normal channel. Its provider is wrapped (no faults) only
  // so the test can learn the real descriptor of the victim's memory, the
  // strongest forgery: a key and address leaked from someone else.
  ChannelOptions vo;
  vo.provider = absl::StrCat("faulty@victim:", Provider());
  FaultKnobs::Named("victim")->Reset();
  auto victim = Channel::Create(server_->address(), vo);
  ASSERT_TRUE(victim.ok()) << victim.status();
  const std::string secret = "victim's secret request payload";
  auto victim_call = [&](uint64_t id) {
    TestRequest req;
    req.set_id(id);
    req.set_payload(secret);
    TestResponse resp;
    absl::Status s = CallEcho(victim->get(), nullptr, req, &resp);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(resp.id(), id);
    EXPECT_EQ(resp.payload(), secret);
  };
  victim_call(1);  // The secret now sits in the victim's slot and result.
  std::vector<transport::ConnectionInfo> peers =
      FaultKnobs::Named("victim")->LivePeers();
  ASSERT_EQ(peers.size(), 1u);
  ASSERT_FALSE(peers[0].regions.empty());
  const RemoteRegion stolen = peers[0].regions[0];

  // Sanity: the attacker can use its own region, in range.
  RawClient probe;
  ASSERT_TRUE(probe.Connect(server_->address()).ok());
  const RemoteRegion own = probe.own();
  auto ok = probe.Do(transport::Opcode::kRead, own, 0, 64);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(ok->ok()) << WcStatusName(ok->status);

  struct Case {
    std::string name;
    RemoteRegion r;
    uint64_t offset;
    uint32_t len;
  };
  std::vector<Case> cases = {
      {"victim's exact descriptor", stolen, 0, 64},
      {"victim's result buffer",
       stolen, wire::ConnectionLayout{8, 4160, 65600}.ResponseSlotOffset(0), 64},
      {"own address, victim's key", RemoteRegion{own.addr, own.length, stolen.rkey},
       0, 64},
      {"victim's address, own key", RemoteRegion{stolen.addr, stolen.length, own.rkey},
       0, 64},
      {"own region, offset at the end", own, own.length, 8},
      {"own region, straddling the end", own, own.length - 4, 8},
      {"own region, huge offset", own, uint64_t{1} << 62, 8},
      {"own region, wrapping offset", own, ~uint64_t{0} - 3, 8},
      {"just before own region", RemoteRegion{own.addr - 64, 64, own.rkey}, 0, 8},
      {"just after own region", RemoteRegion{own.addr + own.length, 4096, own.rkey},
       0, 8},
  };
  // The victim's doorbell pieces (its bell word, its group's summary byte)
  // sit in the same worker-wide area as the attacker's own: the attacker
  // may touch its own word and byte only.
  ASSERT_GE(peers[0].regions.size(), 3u);
  ASSERT_GE(probe.conn->peer().regions.size(), 3u);
  const RemoteRegion victim_bell = peers[0].regions[1];
  const RemoteRegion own_bell = probe.conn->peer().regions[1];
  cases.push_back({"victim's bell word", victim_bell, 0, 8});
  cases.push_back({"victim's bell word, own key",
                   RemoteRegion{victim_bell.addr, 8, own_bell.rkey}, 0, 8});
  for (uint32_t delta : {1u, 2u, 0x100u, 0x10000u, 0x80000000u}) {
    cases.push_back({absl::StrCat("guessed key own^", delta),
                     RemoteRegion{own.addr, own.length, own.rkey ^ delta}, 0, 8});
    cases.push_back({absl::StrCat("guessed key victim+", delta),
                     RemoteRegion{stolen.addr, stolen.length, stolen.rkey + delta},
                     0, 8});
  }
  uint64_t id = 100;
  for (const Case& k : cases) {
    for (transport::Opcode op : {transport::Opcode::kRead, transport::Opcode::kWrite}) {
      SCOPED_TRACE(absl::StrCat(k.name,
                                op == transport::Opcode::kRead ? " READ" : " WRITE"));
      // A violation fails the attacker's connection (RC semantics), so
      // each attempt gets a fresh one.
      RawClient attacker;
      ASSERT_TRUE(attacker.Connect(server_->address()).ok());
      std::memset(attacker.local->data(), 'A', 4096);
      std::memset(attacker.local->data() + 4096, 0x77, 4096);
      auto c = attacker.Do(op, k.r, k.offset, k.len);
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_EQ(c->status, WcStatus::kRemoteAccessError) << WcStatusName(c->status);
      EXPECT_EQ(c->ToStatus().code(), absl::StatusCode::kPermissionDenied);
      EXPECT_TRUE(AllBytes(attacker.local->data() + 4096, 4096, 0x77))
          << "the READ landing area changed: the attacker saw something";
      // The victim is served on, its bytes intact.
      victim_call(id++);
    }
  }
  // Past the attacker's own doorbell pieces (their neighbours are other
  // connections' bells).
  for (int which = 0; which < 4; ++which) {
    RawClient attacker;
    ASSERT_TRUE(attacker.Connect(server_->address()).ok());
    const RemoteRegion word = attacker.conn->peer().regions[1];
    const RemoteRegion summary = attacker.conn->peer().regions[2];
    auto c = which == 0   ? attacker.Do(transport::Opcode::kWrite, word, 8, 8)
             : which == 1 ? attacker.Do(transport::Opcode::kWrite,
                                        RemoteRegion{word.addr - 8, 16, word.rkey},
                                        0, 8)
             : which == 2 ? attacker.Do(transport::Opcode::kWrite, summary, 0, 2)
                          : attacker.Do(transport::Opcode::kRead, word, 0, 8);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->status, WcStatus::kRemoteAccessError)
        << "case " << which << ": " << WcStatusName(c->status);
    victim_call(id++);
  }
  EXPECT_EQ(FaultKnobs::Named("victim")->live_connections(), 1u)
      << "the victim's connection must not have been failed";
}

#define SKIP_UNLESS_SHM()                                             \
  if (Provider() != "shm") GTEST_SKIP() << "raw Unix-socket case (shm)"

int UnixConnect(const std::string& address) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  socklen_t len = sizeof(sa);
  if (address[0] == '@') {
    std::memcpy(sa.sun_path + 1, address.data() + 1, address.size() - 1);
    len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size());
  } else {
    std::memcpy(sa.sun_path, address.data(), address.size());
  }
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True once the listener has closed `fd` (EOF after any error reply).
bool ClosedByPeer(int fd, absl::Duration within) {
  const absl::Time deadline = absl::Now() + within;
  char buf[512];
  while (absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const int left = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (::poll(&p, 1, std::max(1, left)) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return true;
  }
  return false;
}

TEST_F(IsolationTest, SilentHandshakesAreCappedAndTimedOutGoodClientsGetIn) {
  SKIP_UNLESS_SHM();
  StartServer();
  ChannelOptions opts;
  auto before = Channel::Create(server_->address(), opts);
  ASSERT_TRUE(before.ok()) << before.status();

  // Fewer silent peers than the cap: good clients connect at once.
  std::vector<int> silent;
  for (int i = 0; i < transport::shm::kMaxHalfOpenHandshakes / 2; ++i) {
    silent.push_back(UnixConnect(server_->address()));
    ASSERT_GE(silent.back(), 0);
  }
  absl::SleepFor(absl::Milliseconds(100));
  {
    auto good = Channel::Create(server_->address(), opts);
    ASSERT_TRUE(good.ok()) << good.status();
    TestResponse resp;
    ASSERT_TRUE(CallEcho(good->get(), nullptr, TestRequest(), &resp).ok());
  }
  // More than the cap: the excess is refused at once (RESOURCE_EXHAUSTED
  // reply, then closed); the first ones hold their slots until the
  // handshake timeout closes them.
  const absl::Time flood = absl::Now();
  for (int i = 0; i < transport::shm::kMaxHalfOpenHandshakes; ++i) {
    silent.push_back(UnixConnect(server_->address()));
    ASSERT_GE(silent.back(), 0);
  }
  // Established connections are not affected by the flood.
  for (int i = 0; i < 50; ++i) {
    TestRequest req;
    req.set_id(i);
    TestResponse resp;
    ASSERT_TRUE(CallEcho(before->get(), nullptr, req, &resp).ok());
    EXPECT_EQ(resp.id(), static_cast<uint64_t>(i));
  }
  // Every silent peer is closed within the handshake timeout (+ slack).
  int closed = 0;
  for (int fd : silent) {
    if (ClosedByPeer(fd, transport::shm::kListenerHandshakeTimeout +
                             absl::Seconds(3) - (absl::Now() - flood))) {
      ++closed;
    }
  }
  EXPECT_EQ(closed, static_cast<int>(silent.size()));
  for (int fd : silent) ::close(fd);
  // And good clients connect again at once.
  auto after = Channel::Create(server_->address(), opts);
  ASSERT_TRUE(after.ok()) << after.status();
  TestRequest req;
  req.set_id(9);
  TestResponse resp;
  ASSERT_TRUE(CallEcho(after->get(), nullptr, req, &resp).ok());
  EXPECT_EQ(resp.id(), 9u);
}

TEST_F(IsolationTest, AuthTokenMismatchIsUnauthenticatedAtConnect) {
  ServerOptions so;
  so.auth_token = "s3cret";
  StartServer(so);
  ChannelOptions opts;
  opts.provider = Provider();
  opts.auth_token = "wrong";
  auto bad = Channel::Create(server_->address(), opts);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnauthenticated) << bad.status();
  opts.auth_token = "";
  auto none = Channel::Create(server_->address(), opts);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated)
      << none.status();
  opts.auth_token = "s3cret";
  auto good = Channel::Create(server_->address(), opts);
  ASSERT_TRUE(good.ok()) << good.status();
  TestRequest req;
  req.set_id(5);
  TestResponse resp;
  ASSERT_TRUE(CallEcho(good->get(), nullptr, req, &resp).ok());
  EXPECT_EQ(resp.id(), 5u);
  EXPECT_EQ(server_->stats().connections_accepted, 1u);
  EXPECT_EQ(server_->stats().connections_rejected, 2u);
}

TEST_F(IsolationTest, TokenlessServerAndClientWithAToken) {
  StartServer();
  ChannelOptions opts;
  opts.provider = Provider();
  auto plain = Channel::Create(server_->address(), opts);
  ASSERT_TRUE(plain.ok()) << plain.status();  // Off by default: no token needed.
  opts.auth_token = "anything";
  auto ch = Channel::Create(server_->address(), opts);
  // Only the listener checks tokens, on every provider (transport/
  // auth_token.h): the client sends its token first and in clear, so a
  // listener echoing it back would authenticate nothing. A server without a
  // token therefore accepts a client that has one.
  ASSERT_TRUE(ch.ok()) << ch.status();
  TestRequest req;
  req.set_id(6);
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch->get(), nullptr, req, &resp).ok());
  EXPECT_EQ(resp.id(), 6u);
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc
