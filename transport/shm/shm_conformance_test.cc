// Copyright 2026 The rfrpc Authors.
//
// Runs the provider conformance suite on shm, plus shm-specific behaviour
// the suite cannot require of every provider.

#include <stddef.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/bootstrap.h"
#include "transport/handshake.pb.h"
#include "transport/shm/shm_provider.h"
#include "transport/testing/conformance.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace testing {
namespace {

ConformanceParam ShmParam() {
  ConformanceParam p;
  p.provider = "shm";
  p.peer_binary = "transport/shm/shm_conformance_peer";
  // Detection is an epoll wake-up (~30 us measured); 500 ms leaves room for
  // sanitizer builds on a loaded 2-core CI machine.
  p.liveness_bound = absl::Milliseconds(500);
  return p;
}

INSTANTIATE_TEST_SUITE_P(Shm, TransportConformanceTest,
                         ::testing::Values(ShmParam()), ConformanceParamName);

struct Shm {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<MemoryRegion> mem;
  std::unique_ptr<Connection> client, server;

  void Connect(const CompletionQueueOptions& cq_options, uint32_t max_out) {
    provider = *Provider::Open("shm", {});
    listener = *provider->Listen("");
    cq = *provider->CreateCompletionQueue(cq_options);
    mem = *provider->AllocateMemory(4096);
    ConnectionSetup s;
    s.cq = cq.get();
    s.exposed.push_back(ExposedRegion{mem.get()});
    s.max_outstanding = max_out;
    std::thread t([&] { client = *provider->Connect(listener->address(), s); });
    server = *(*listener->Next(absl::Seconds(10)))->Accept(s);
    t.join();
  }
};

TEST(ShmProviderTest, FullCompletionQueueRefusesPostAndExecutesNothing) {
  CompletionQueueOptions o;
  o.depth = 4;
  Shm shm;
  shm.Connect(o, 256);
  const RemoteRegion r = shm.client->peer().regions[0];
  std::vector<WorkRequest> list;
  for (uint64_t i = 0; i < 5; ++i) {
    list.push_back(WorkRequest::Write(i, shm.mem.get(), 0, 8, r, 64 + i * 8));
  }
  shm.mem->data()[0] = 'x';
  EXPECT_EQ(shm.client->Post(list).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(shm.mem->data()[64], 0) << "nothing may have executed";
  list.resize(4);
  EXPECT_TRUE(shm.client->Post(list).ok());
  EXPECT_EQ(shm.client->Post({&list[0], 1}).code(),
            absl::StatusCode::kResourceExhausted);
  Completion cs[8];
  EXPECT_EQ(shm.cq->Poll(absl::MakeSpan(cs)), 4);
  EXPECT_TRUE(shm.client->Post({&list[0], 1}).ok());
  EXPECT_TRUE(shm.client->ok());
}

TEST(ShmProviderTest, PostTimeErrorReturnsUnusedQueueRoom) {
  CompletionQueueOptions o;
  o.depth = 4;
  Shm shm;
  shm.Connect(o, 256);
  const RemoteRegion r = shm.client->peer().regions[0];
  // Three signaled requests claim three cells; the second is refused at post
  // time (inline beyond max_inline), so one completion arrives and the two
  // cells it claimed for the others must come back.
  std::vector<WorkRequest> list(3, WorkRequest::Write(0, shm.mem.get(), 0, 8,
                                                      r, 64));
  list[0].wr_id = 1;
  list[1].wr_id = 2;
  list[1].inline_write = true;
  list[1].length = 4096;
  list[2].wr_id = 3;
  EXPECT_EQ(shm.client->Post(list).code(), absl::StatusCode::kInvalidArgument);
  Completion cs[8];
  ASSERT_EQ(shm.cq->Poll(absl::MakeSpan(cs)), 1);
  EXPECT_EQ(cs[0].wr_id, 1u);
  EXPECT_TRUE(cs[0].ok());
  // The whole depth is free again.
  list.assign(4, WorkRequest::Write(7, shm.mem.get(), 0, 8, r, 64));
  EXPECT_TRUE(shm.client->Post(list).ok());
  EXPECT_EQ(shm.cq->Poll(absl::MakeSpan(cs)), 4);
  EXPECT_TRUE(shm.client->ok());
}

TEST(ShmProviderTest, ConcurrentPostersShareATinyQueue) {
  // Two connections post signaled WRITEs (single requests and lists) from
  // two threads into one depth-8 queue while a third thread polls: every
  // completion arrives exactly once, in posting order per connection, and a
  // full queue only ever refuses a post (RESOURCE_EXHAUSTED), never loses one.
  CompletionQueueOptions o;
  o.depth = 8;
  Shm shm;
  shm.Connect(o, 256);
  constexpr uint64_t kPerConnection = 5000;
  std::atomic<bool> bad_status{false};
  auto poster = [&](Connection* c) {
    const RemoteRegion r = c->peer().regions[0];
    uint64_t next = 0;
    while (next < kPerConnection) {
      const uint64_t n = std::min<uint64_t>(1 + next % 3, kPerConnection - next);
      WorkRequest wrs[3];
      for (uint64_t i = 0; i < n; ++i) {
        wrs[i] = WorkRequest::Write(next + i, shm.mem.get(), 0, 8, r, 128);
      }
      const absl::Status st = c->Post(absl::MakeConstSpan(wrs, n));
      if (st.ok()) {
        next += n;
      } else if (st.code() != absl::StatusCode::kResourceExhausted) {
        bad_status = true;
        return;
      }
    }
  };
  std::thread a(poster, shm.client.get());
  std::thread b(poster, shm.server.get());
  std::map<uint64_t, uint64_t> expected;  // connection id -> next wr_id.
  uint64_t got = 0;
  Completion cs[16];
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (got < 2 * kPerConnection && !bad_status && absl::Now() < deadline) {
    const int n = shm.cq->Poll(absl::MakeSpan(cs));
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(cs[i].ok());
      ASSERT_EQ(cs[i].wr_id, expected[cs[i].connection_id]++);
    }
    got += static_cast<uint64_t>(n);
  }
  a.join();
  b.join();
  EXPECT_FALSE(bad_status);
  EXPECT_EQ(got, 2 * kPerConnection);
  EXPECT_EQ(shm.cq->Poll(absl::MakeSpan(cs)), 0);
}

TEST(ShmProviderTest, PostListLongerThanMaxOutstandingIsRefused) {
  Shm shm;
  shm.Connect({}, 2);
  const RemoteRegion r = shm.client->peer().regions[0];
  std::vector<WorkRequest> list(3, WorkRequest::Write(1, shm.mem.get(), 0, 8,
                                                      r, 0));
  EXPECT_EQ(shm.client->Post(list).code(),
            absl::StatusCode::kResourceExhausted);
}

// Connection::HotLines names, after the connection's own state, our
// mapping of the peer memory a WRITE will land in: a WRITE posted there is
// read back through the hinted address. Ranges the connection may not
// WRITE get no line, and `max` bounds the count.
TEST(ShmProviderTest, HotLinesNameWhereAWriteLands) {
  Shm shm;
  shm.Connect({}, 256);
  const RemoteRegion target = shm.client->peer().regions[0].Slice(192, 8);
  const void* lines[32];
  const int n =
      shm.client->HotLines(absl::MakeConstSpan(&target, 1), lines, 32);
  ASSERT_GE(n, 2);
  const int own = shm.client->HotLines({}, lines, 32);
  EXPECT_EQ(own, n - 1);
  ASSERT_EQ(shm.client->HotLines(absl::MakeConstSpan(&target, 1), lines, 32),
            n);
  const char* hinted = static_cast<const char*>(lines[n - 1]);
  std::memcpy(shm.mem->data(), "hotlines", 8);
  WorkRequest wr = WorkRequest::Write(1, shm.mem.get(), 0, 8, target, 0);
  wr.signaled = true;
  ASSERT_TRUE(shm.client->Post({&wr, 1}).ok());
  Completion c;
  ASSERT_EQ(*shm.cq->Wait({&c, 1}, absl::Seconds(10)), 1);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(std::string(hinted, 8), "hotlines");

  RemoteRegion foreign = target;
  foreign.rkey ^= 1;
  EXPECT_EQ(shm.client->HotLines(absl::MakeConstSpan(&foreign, 1), lines, 32),
            own);
  RemoteRegion past_end = shm.client->peer().regions[0];
  past_end.addr += past_end.length;
  past_end.length = 8;
  EXPECT_EQ(shm.client->HotLines(absl::MakeConstSpan(&past_end, 1), lines, 32),
            own);
  EXPECT_EQ(shm.client->HotLines(absl::MakeConstSpan(&target, 1), lines, 1), 1);

  // The completion queue names its indexes and the cells they point at.
  EXPECT_EQ(shm.cq->HotLines(lines, 32), 4);
  EXPECT_EQ(shm.cq->HotLines(lines, 3), 3);
}

TEST(ShmProviderTest, AdaptivePollingSpinsBeforeBlocking) {
  CompletionQueueOptions o;
  o.max_retry = 500;
  Shm shm;
  shm.Connect(o, 256);
  Completion c;
  EXPECT_EQ(shm.cq->Wait(&c, absl::Milliseconds(30)).code(),
            absl::StatusCode::kDeadlineExceeded);
  const CompletionQueue::Stats st = shm.cq->stats();
  EXPECT_GE(st.empty_polls, 500u);  // It spun max_retry rounds first...
  EXPECT_GE(st.blocks, 1u);         // ...then armed and slept.
  EXPECT_EQ(st.wakeups, 0u);
}

// An IP host:port given to shm (a verbs address) is refused, not made a
// socket file named "127.0.0.1:0" under the socket directory.
TEST(ShmProviderTest, AnIpHostPortIsRefused) {
  auto p = *Provider::Open("shm", {});
  for (const char* address : {"127.0.0.1:0", "[::1]:7000", "10.0.0.1:7001"}) {
    const absl::Status st = p->Listen(address).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(std::string(st.message()),
                ::testing::HasSubstr("is an IP host:port"))
        << address;
  }
}

TEST(ShmProviderTest, ListenerAddressForms) {
  auto p = *Provider::Open("shm", {});
  auto abstract = p->Listen("@rfrpc-shm-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(abstract.ok()) << abstract.status();
  EXPECT_EQ((*abstract)->address()[0], '@');
  auto fresh = p->Listen("");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(p->Listen((*abstract)->address()).status().code(),
            absl::StatusCode::kAlreadyExists);
  (*fresh)->Shutdown();
  EXPECT_EQ((*fresh)->Next(absl::Seconds(5)).status().code(),
            absl::StatusCode::kCancelled);
}

// bind's "Address already in use" says which of four things is in the way.
TEST(ShmProviderTest, AnAddressInUseSaysWhatIsThere) {
  auto p = *Provider::Open("shm", {});
  // Short paths: $TEST_TMPDIR may be longer than a socket path may be.
  const std::string base = absl::StrCat("/tmp/rfrpc-inuse-", ::getpid());
  const std::string dir = base + "-dir";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string file = base + "-file";
  { std::ofstream(file) << "x"; }
  const std::string stale = base + "-stale";
  {
    ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, stale.c_str(), sizeof(sa.sun_path) - 1);
    ASSERT_EQ(
        ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)),
        0);
    // Closed without unlinking: what a SIGKILLed server leaves.
  }
  const std::string live = base + "-live";
  auto listener = p->Listen(live);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const std::pair<std::string, std::string> cases[] = {
      {dir, "it is a directory"},
      {file, "a file that is not a socket is there"},
      {stale, "left by a server that is no longer running"},
      {live, "a server is listening there"},
  };
  for (const auto& [address, why] : cases) {
    const absl::Status st = p->Listen(address).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists) << address;
    EXPECT_THAT(std::string(st.message()), ::testing::HasSubstr(why))
        << address;
  }
  (*listener)->Shutdown();
  listener->reset();
  ::rmdir(dir.c_str());
  ::unlink(file.c_str());
  ::unlink(stale.c_str());
}

// The sockaddr of a listener's address (a path or "@name"); its length.
socklen_t UnixSockaddr(const std::string& address, sockaddr_un* sa) {
  *sa = sockaddr_un{};
  sa->sun_family = AF_UNIX;
  if (address[0] == '@') {
    std::memcpy(sa->sun_path + 1, address.data() + 1, address.size() - 1);
    return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) +
                                  address.size());
  }
  std::memcpy(sa->sun_path, address.data(), address.size());
  return sizeof(*sa);
}

ScopedFd UnixConnect(const std::string& address) {
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un sa;
  const socklen_t len = UnixSockaddr(address, &sa);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    return ScopedFd();
  }
  return fd;
}

TEST(ShmProviderTest, HalfOpenHandshakesAreCapped) {
  auto p = *Provider::Open("shm", {});
  auto l = *p->Listen("");
  // Peers that connect and say nothing occupy handshake slots...
  std::vector<ScopedFd> silent;
  for (int i = 0; i < shm::kMaxHalfOpenHandshakes; ++i) {
    silent.push_back(UnixConnect(l->address()));
    ASSERT_TRUE(silent.back().valid());
  }
  // ...so the next one is answered RESOURCE_EXHAUSTED at once.
  ScopedFd extra;
  HelloReply reply;
  for (int attempt = 0; attempt < 50; ++attempt) {  // Until all are counted.
    extra = UnixConnect(l->address());
    ASSERT_TRUE(extra.valid());
    ASSERT_TRUE(RecvFrame(extra.get(), &reply, absl::Seconds(10)).ok());
    if (reply.status_code() != 0) break;
  }
  EXPECT_EQ(reply.status_code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  // Once they hang up, good peers get through again.
  silent.clear();
  auto cq = *p->CreateCompletionQueue({});
  ConnectionSetup s;
  s.cq = cq.get();
  absl::StatusOr<std::unique_ptr<Connection>> client;
  std::thread t([&] {
    for (int attempt = 0; attempt < 100; ++attempt) {
      client = p->Connect(l->address(), s);
      if (client.ok() ||
          client.status().code() != absl::StatusCode::kResourceExhausted) {
        return;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  auto inc = l->Next(absl::Seconds(10));
  ASSERT_TRUE(inc.ok()) << inc.status();
  auto server = (*inc)->Accept(s);
  t.join();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(client.ok()) << client.status();
}

// A listener whose process is out of descriptors still answers. accept4
// fails with EMFILE and leaves the peer in the backlog, which poll reports
// readable at once, forever: the acceptor spun and the peer timed out with
// no reason given. It takes the peer with its reserve and says why.
TEST(ShmProviderTest, AListenerOutOfDescriptorsSaysSo) {
  auto p = *Provider::Open("shm", {});
  auto l = *p->Listen("");
  const std::string address = l->address();
  ASSERT_FALSE(address.empty());
  // The peer's socket exists before the table fills: connecting to a Unix
  // socket then takes no descriptor on this side.
  ScopedFd peer(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_TRUE(peer.valid());
  sockaddr_un sa;
  const socklen_t len = UnixSockaddr(address, &sa);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  std::vector<ScopedFd> filler;
  {
    // A low limit just above the descriptors open now, then fill it.
    ScopedFd probe(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(probe.valid());
    rlimit low = old;
    low.rlim_cur = static_cast<rlim_t>(probe.get()) + 8;
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  }
  for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) {
    filler.emplace_back(fd);
  }
  const int open_errno = errno;
  const int connected =
      ::connect(peer.get(), reinterpret_cast<sockaddr*>(&sa), len);
  const int connect_errno = errno;
  HelloReply reply;
  const absl::Status got = RecvFrame(peer.get(), &reply, absl::Seconds(5));
  filler.clear();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_EQ(open_errno, EMFILE);
  ASSERT_EQ(connected, 0) << std::strerror(connect_errno);
  ASSERT_TRUE(got.ok()) << got;
  EXPECT_EQ(reply.status_code(),
            static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(reply.error_message(),
              ::testing::HasSubstr("out of file descriptors"));
  // With descriptors back, the next peer gets through.
  ScopedFd next = UnixConnect(address);
  ASSERT_TRUE(next.valid());
  ScopedFd again = UnixConnect(address);
  ASSERT_TRUE(again.valid());
}

// memfd mappings in this process (/proc/self/maps).
int ShmMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.find("memfd:rfrpc-shm") != std::string::npos) ++n;
  }
  return n;
}

// A server exposes to each connection its own region plus two small ranges
// of one region all connections share, as rpc/ does with a worker's bell
// words and summary bytes. The client process maps that segment once for
// all its connections, not twice per connection (once per region): WRITEs
// through it land, each in the range its connection was granted, and the
// mapping goes with the last connection.
TEST(ShmProviderTest, ASegmentSharedByConnectionsIsMappedOnce) {
  constexpr int kConnections = 8;
  auto p = *Provider::Open("shm", {});
  auto l = *p->Listen("");
  auto cli_cq = *p->CreateCompletionQueue({});
  // The worker's queue can be woken by its peers: each client maps its
  // wake word too, once for all its connections.
  CompletionQueueOptions wake;
  wake.remote_wake = true;
  auto srv_cq = *p->CreateCompletionQueue(wake);
  auto shared = *p->AllocateMemory(64 * 1024);
  auto src = *p->AllocateMemory(64);
  std::vector<std::unique_ptr<MemoryRegion>> own;
  std::vector<std::unique_ptr<Connection>> clients, servers;
  const int before = ShmMappings();
  for (int i = 0; i < kConnections; ++i) {
    own.push_back(*p->AllocateMemory(4096));  // The server's, per connection.
    own.push_back(*p->AllocateMemory(4096));  // The client's.
    ConnectionSetup srv;
    srv.cq = srv_cq.get();
    srv.exposed.push_back(ExposedRegion{own[own.size() - 2].get()});
    srv.exposed.push_back(
        ExposedRegion{shared.get(), 8 * static_cast<uint64_t>(i), 8, true, false});
    srv.exposed.push_back(
        ExposedRegion{shared.get(), 32 * 1024 + static_cast<uint64_t>(i), 1, true, false});
    ConnectionSetup cli;
    cli.cq = cli_cq.get();
    cli.exposed.push_back(ExposedRegion{own.back().get()});
    std::thread t([&] { clients.push_back(*p->Connect(l->address(), cli)); });
    servers.push_back(*(*l->Next(absl::Seconds(10)))->Accept(srv));
    t.join();
  }
  // Allocated: 2 per connection. Mapped as peers: each side's own region of
  // each connection, the shared region once and the wake word once (without
  // the sharing: 2 + 1 per connection, 56 in all).
  EXPECT_EQ(ShmMappings() - before, 2 * kConnections + 2 * kConnections + 2);

  std::memset(src->data(), 0, 64);
  for (int i = 0; i < kConnections; ++i) {
    src->data()[i] = static_cast<char>(0x10 + i);
    src->data()[8 + i] = static_cast<char>(0x50 + i);
    const std::vector<RemoteRegion>& r = clients[i]->peer().regions;
    ASSERT_EQ(r.size(), 3u);
    std::vector<WorkRequest> wrs = {
        WorkRequest::Write(1, src.get(), 0, 8, r[1], 0),
        WorkRequest::Write(2, src.get(), static_cast<uint64_t>(8 + i), 1, r[2], 0)};
    wrs[1].signaled = true;
    ASSERT_TRUE(clients[i]->Post(wrs).ok());
    Completion c;
    ASSERT_TRUE(cli_cq->Wait(&c, absl::Seconds(10)).ok());
    EXPECT_TRUE(c.ok()) << c.ToStatus();
  }
  for (int i = 0; i < kConnections; ++i) {
    EXPECT_EQ(shared->data()[8 * i + i], static_cast<char>(0x10 + i));
    EXPECT_EQ(shared->data()[32 * 1024 + i], static_cast<char>(0x50 + i));
  }
  clients.clear();
  servers.clear();
  EXPECT_EQ(ShmMappings() - before, 2 * kConnections);
}

}  // namespace
}  // namespace testing
}  // namespace transport
}  // namespace rfrpc
