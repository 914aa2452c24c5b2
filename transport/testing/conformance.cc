// Copyright 2026 The rfrpc Authors.
//
// The provider conformance suite (see conformance.h). Each case reads as
// set-up, Receive/Expect. Busy waits are bounded and yield: tests share two
// cores.

#include "transport/testing/conformance.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "transport/auth_token.h"
#include "transport/bootstrap.h"
#include "transport/handshake.pb.h"

namespace rfrpc {
namespace transport {
namespace testing {

void PrintTo(const ConformanceParam& param, std::ostream* os) {
  *os << "provider " << param.provider;
}

std::string ConformanceParamName(
    const ::testing::TestParamInfo<ConformanceParam>& info) {
  std::string name = info.param.provider;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

namespace {

#define RFRPC_ASSERT_OK(expr)                 \
  do {                                        \
    const ::absl::Status _s = (expr);         \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s; \
  } while (false)

constexpr absl::Duration kWait = absl::Seconds(10);

// Spins (yielding) until `pred` or `limit` passes; returns pred().
template <typename Pred>
bool SpinUntil(Pred pred, absl::Duration limit) {
  const absl::Time deadline = absl::Now() + limit;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    if ((i & 63) == 63) {
      if (absl::Now() > deadline) return pred();
      std::this_thread::yield();
    }
  }
}

struct Pair {
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server;
};

// Connects `client_setup` to `listener` from another thread while this one
// accepts with `server_setup`.
absl::StatusOr<Pair> ConnectPair(Provider* provider, Listener* listener,
                                 const ConnectionSetup& client_setup,
                                 const ConnectionSetup& server_setup) {
  absl::StatusOr<std::unique_ptr<Connection>> client =
      absl::UnknownError("not run");
  std::thread t([&] {
    client = provider->Connect(listener->address(), client_setup);
  });
  absl::StatusOr<std::unique_ptr<Connection>> server =
      absl::UnknownError("no request");
  absl::StatusOr<std::unique_ptr<IncomingConnection>> inc =
      listener->Next(kWait);
  if (inc.ok()) {
    server = (*inc)->Accept(server_setup);
  } else {
    server = inc.status();
  }
  t.join();
  if (!client.ok()) return client.status();
  if (!server.ok()) return server.status();
  return Pair{std::move(*client), std::move(*server)};
}

// One provider, a listener, and a connected pair with a queue and a region
// on each side. Members are declared so that destruction honours
// transport.h (connections before regions and queues).
struct Env {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<CompletionQueue> client_cq;
  std::unique_ptr<CompletionQueue> server_cq;
  std::unique_ptr<MemoryRegion> client_mem;
  std::unique_ptr<MemoryRegion> server_mem;
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server;

  const RemoteRegion& server_region() const { return client->peer().regions[0]; }
  const RemoteRegion& client_region() const { return server->peer().regions[0]; }
};

struct EnvOptions {
  size_t client_bytes = 64 * 1024;
  size_t server_bytes = 64 * 1024;
  ExposedRegion server_exposed;  // region is filled in.
  CompletionQueueOptions cq;
  std::string client_user_data;
  std::string server_user_data;
};

absl::Status MakeEnv(const ConformanceParam& param, const EnvOptions& o,
                     Env* env) {
  absl::StatusOr<std::unique_ptr<Provider>> p =
      Provider::Open(param.provider, param.options);
  if (!p.ok()) return p.status();
  env->provider = std::move(*p);
  auto l = env->provider->Listen(param.listen_address);
  if (!l.ok()) return l.status();
  env->listener = std::move(*l);
  auto ccq = env->provider->CreateCompletionQueue(o.cq);
  if (!ccq.ok()) return ccq.status();
  env->client_cq = std::move(*ccq);
  auto scq = env->provider->CreateCompletionQueue(o.cq);
  if (!scq.ok()) return scq.status();
  env->server_cq = std::move(*scq);
  auto cm = env->provider->AllocateMemory(o.client_bytes);
  if (!cm.ok()) return cm.status();
  env->client_mem = std::move(*cm);
  auto sm = env->provider->AllocateMemory(o.server_bytes);
  if (!sm.ok()) return sm.status();
  env->server_mem = std::move(*sm);

  ConnectionSetup cs;
  cs.cq = env->client_cq.get();
  cs.exposed.push_back(ExposedRegion{env->client_mem.get()});
  cs.user_data = o.client_user_data;
  ConnectionSetup ss;
  ss.cq = env->server_cq.get();
  ExposedRegion se = o.server_exposed;
  se.region = env->server_mem.get();
  ss.exposed.push_back(se);
  ss.user_data = o.server_user_data;
  absl::StatusOr<Pair> pair =
      ConnectPair(env->provider.get(), env->listener.get(), cs, ss);
  if (!pair.ok()) return pair.status();
  env->client = std::move(pair->client);
  env->server = std::move(pair->server);
  return absl::OkStatus();
}

absl::StatusOr<Completion> WaitOne(CompletionQueue* cq,
                                   absl::Duration timeout = kWait) {
  Completion c;
  absl::Status s = cq->Wait(&c, timeout);
  if (!s.ok()) return s;
  return c;
}

// Posts one request and waits for its (signaled) completion.
absl::StatusOr<Completion> PostAndWait(Connection* conn, CompletionQueue* cq,
                                       WorkRequest wr) {
  wr.signaled = true;
  absl::Status s = conn->Post({&wr, 1});
  if (!s.ok()) return s;
  return WaitOne(cq);
}

uint8_t PatternByte(uint64_t seed, size_t i) {
  return static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}

void FillPattern(char* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<char>(PatternByte(seed, i));
}

// Index of the first byte of [p, p+n) that differs from the pattern, or -1.
long FirstMismatch(const char* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i) {
    if (static_cast<uint8_t>(p[i]) != PatternByte(seed, i)) {
      return static_cast<long>(i);
    }
  }
  return -1;
}

bool AllBytes(const char* p, size_t n, char v) {
  return std::all_of(p, p + n, [v](char c) { return c == v; });
}

// A raw client socket to a Listener's address: a Unix path ("/..."), an
// abstract name ("@...") or "host:port".
ScopedFd RawConnect(const std::string& address) {
  if (!address.empty() && (address[0] == '/' || address[0] == '@')) {
    ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    socklen_t len;
    if (address[0] == '@') {
      std::memcpy(sa.sun_path + 1, address.data() + 1, address.size() - 1);
      len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) +
                                   address.size());
    } else {
      std::memcpy(sa.sun_path, address.data(), address.size());
      len = sizeof(sa);
    }
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0) {
      return ScopedFd();
    }
    return fd;
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return ScopedFd();
  std::string host = address.substr(0, colon);
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
  const int port = std::atoi(address.c_str() + colon + 1);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) {
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  ScopedFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    return ScopedFd();
  }
  return fd;
}

// A listening socket of the same kind as `like` that never answers. Returns
// its address in *address.
ScopedFd SilentListener(const std::string& like, std::string* address) {
  if (!like.empty() && (like[0] == '/' || like[0] == '@')) {
    ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    absl::BitGen gen;
    const std::string name = absl::StrCat("rfrpc-silent-", ::getpid(), "-",
                                          absl::Uniform<uint32_t>(gen));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path + 1, name.data(), name.size());
    const socklen_t len =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
        ::listen(fd.get(), 8) != 0) {
      return ScopedFd();
    }
    *address = "@" + name;
    return fd;
  }
  ScopedFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
      ::listen(fd.get(), 8) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    return ScopedFd();
  }
  *address = absl::StrCat("127.0.0.1:", ntohs(sa.sin_port));
  return fd;
}

TEST_P(TransportConformanceTest, OpensByName) {
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  EXPECT_EQ((*p)->name(), GetParam().provider);
  EXPECT_EQ(Provider::Open("no-such-provider", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(TransportConformanceTest, AllocateMemoryIsZeroedAndPageAligned) {
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  auto m = (*p)->AllocateMemory(10000);
  RFRPC_ASSERT_OK(m.status());
  EXPECT_EQ((*m)->size(), 10000u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*m)->data()) % 4096, 0u);
  EXPECT_TRUE(AllBytes((*m)->data(), (*m)->size(), 0));
}

TEST_P(TransportConformanceTest, HandshakeCarriesUserDataAndRegions) {
  EnvOptions o;
  o.client_bytes = 8192;
  o.server_bytes = 3 * 4096;
  o.server_exposed.offset = 4096;
  o.server_exposed.length = 4096;
  o.client_user_data = std::string("client\0\xff", 8);
  o.server_user_data = "server side";
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));

  EXPECT_EQ(env.client->peer().provider, GetParam().provider);
  EXPECT_EQ(env.server->peer().provider, GetParam().provider);
  EXPECT_EQ(env.client->peer().user_data, "server side");
  EXPECT_EQ(env.server->peer().user_data, std::string("client\0\xff", 8));
  ASSERT_EQ(env.client->peer().regions.size(), 1u);
  ASSERT_EQ(env.server->peer().regions.size(), 1u);
  EXPECT_EQ(env.server_region().length, 4096u);
  EXPECT_EQ(env.client_region().length, 8192u);
  EXPECT_NE(env.server_region().rkey, 0u);
  EXPECT_FALSE(env.client->peer().peer_name.empty());
  EXPECT_FALSE(env.server->peer().peer_name.empty());
  EXPECT_NE(env.client->id(), env.server->id());
  EXPECT_TRUE(env.client->ok());
  EXPECT_TRUE(env.server->ok());
}

TEST_P(TransportConformanceTest, WriteAndReadAreByteExact) {
  constexpr size_t kGuard = 64;
  EnvOptions o;
  o.client_bytes = 160 * 1024;
  o.server_bytes = 160 * 1024;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  char* src = env.client_mem->data();
  char* dst = env.client_mem->data() + 80 * 1024;  // READ target.
  char* remote = env.server_mem->data();
  const std::vector<uint32_t> sizes = {1,    2,    3,    7,    8,     9,
                                       15,   16,   17,   63,   64,    65,
                                       127,  128,  129,  1000, 4095,  4096,
                                       4097, 8192, 16384, 65535, 65536};
  uint64_t wr_id = 0;
  for (uint32_t size : sizes) {
    for (uint64_t off : {0, 1, 11}) {
      SCOPED_TRACE(absl::StrCat("size ", size, " offset ", off));
      const uint64_t seed = size * 3 + off;
      // WRITE: client src -> server [kGuard + off, +size).
      FillPattern(src, size, seed);
      std::memset(remote, '\xcc', size + 2 * kGuard + off);
      auto c = PostAndWait(env.client.get(), env.client_cq.get(),
                           WorkRequest::Write(++wr_id, env.client_mem.get(), 0,
                                              size, env.server_region(),
                                              kGuard + off));
      RFRPC_ASSERT_OK(c.status());
      ASSERT_TRUE(c->ok()) << c->ToStatus();
      EXPECT_EQ(c->wr_id, wr_id);
      EXPECT_EQ(c->opcode, Opcode::kWrite);
      EXPECT_EQ(c->connection, env.client.get());
      EXPECT_EQ(c->connection_id, env.client->id());
      ASSERT_EQ(FirstMismatch(remote + kGuard + off, size, seed), -1);
      ASSERT_TRUE(AllBytes(remote, kGuard + off, '\xcc'));
      ASSERT_TRUE(AllBytes(remote + kGuard + off + size, kGuard, '\xcc'));

      // READ: server [off, +size) -> client dst [kGuard + off, +size).
      FillPattern(remote + off, size, seed + 1);
      std::memset(dst, '\xdd', size + 2 * kGuard + off);
      c = PostAndWait(env.client.get(), env.client_cq.get(),
                      WorkRequest::Read(++wr_id, env.client_mem.get(),
                                        80 * 1024 + kGuard + off, size,
                                        env.server_region(), off));
      RFRPC_ASSERT_OK(c.status());
      ASSERT_TRUE(c->ok()) << c->ToStatus();
      EXPECT_EQ(c->opcode, Opcode::kRead);
      ASSERT_EQ(FirstMismatch(dst + kGuard + off, size, seed + 1), -1);
      ASSERT_TRUE(AllBytes(dst, kGuard + off, '\xdd'));
      ASSERT_TRUE(AllBytes(dst + kGuard + off + size, kGuard, '\xdd'));
    }
  }
  const Connection::Counters& k = env.client->counters();
  EXPECT_EQ(k.writes.load(), sizes.size() * 3);
  EXPECT_EQ(k.reads.load(), sizes.size() * 3);
  EXPECT_EQ(k.signaled.load(), sizes.size() * 6);
  EXPECT_EQ(k.post_lists.load(), sizes.size() * 6);
  EXPECT_EQ(k.errors.load(), 0u);
  EXPECT_GT(k.bytes_written.load(), 0u);
  EXPECT_EQ(k.bytes_written.load(), k.bytes_read.load());
}

TEST_P(TransportConformanceTest, InlineWritesCopyAtPostTime) {
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), {}, &env));
  // From inline_data: the caller's buffer may change once Post returns.
  char buf[100];
  std::memset(buf, 'a', sizeof(buf));
  WorkRequest wr = WorkRequest::Write(1, nullptr, 0, sizeof(buf),
                                      env.server_region(), 0);
  wr.inline_write = true;
  wr.inline_data = buf;
  RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  std::memset(buf, 'b', sizeof(buf));
  auto c = WaitOne(env.client_cq.get());
  RFRPC_ASSERT_OK(c.status());
  ASSERT_TRUE(c->ok()) << c->ToStatus();
  EXPECT_TRUE(AllBytes(env.server_mem->data(), sizeof(buf), 'a'));

  // From the local region, inline.
  std::memset(env.client_mem->data(), 'c', 64);
  wr = WorkRequest::Write(2, env.client_mem.get(), 0, 64, env.server_region(),
                          128);
  wr.inline_write = true;
  RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  std::memset(env.client_mem->data(), 'd', 64);
  c = WaitOne(env.client_cq.get());
  RFRPC_ASSERT_OK(c.status());
  ASSERT_TRUE(c->ok()) << c->ToStatus();
  EXPECT_TRUE(AllBytes(env.server_mem->data() + 128, 64, 'c'));
  EXPECT_EQ(env.client->counters().inline_writes.load(), 2u);

  // Larger than max_inline (default 128): refused at post time.
  std::vector<char> big(4096, 'e');
  wr = WorkRequest::Write(3, nullptr, 0, 4096, env.server_region(), 0);
  wr.inline_write = true;
  wr.inline_data = big.data();
  EXPECT_EQ(env.client->Post({&wr, 1}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(TransportConformanceTest, PostListExecutesInOrder) {
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), {}, &env));
  // 64 WRITEs of 8 bytes to one word, then a READ of it: the READ sees the
  // last WRITE, and only the signaled READ completes.
  uint64_t* values = reinterpret_cast<uint64_t*>(env.client_mem->data());
  std::vector<WorkRequest> list;
  for (uint64_t i = 0; i < 64; ++i) {
    values[i] = 1000 + i;
    WorkRequest wr = WorkRequest::Write(i, env.client_mem.get(), i * 8, 8,
                                        env.server_region(), 256);
    wr.signaled = false;
    list.push_back(wr);
  }
  list.push_back(WorkRequest::Read(99, env.client_mem.get(), 4096, 8,
                                   env.server_region(), 256));
  const uint64_t lists_before = env.client->counters().post_lists.load();
  RFRPC_ASSERT_OK(env.client->Post(list));
  auto c = WaitOne(env.client_cq.get());
  RFRPC_ASSERT_OK(c.status());
  ASSERT_TRUE(c->ok()) << c->ToStatus();
  EXPECT_EQ(c->wr_id, 99u);
  EXPECT_EQ(LoadAcquire64(env.server_mem->data() + 256), 1063u);
  EXPECT_EQ(LoadAcquire64(env.client_mem->data() + 4096), 1063u);
  EXPECT_EQ(env.client->counters().post_lists.load(), lists_before + 1);

  // All signaled: completions come back in posting order.
  for (WorkRequest& wr : list) wr.signaled = true;
  RFRPC_ASSERT_OK(env.client->Post(list));
  for (size_t i = 0; i < list.size(); ++i) {
    c = WaitOne(env.client_cq.get());
    RFRPC_ASSERT_OK(c.status());
    EXPECT_EQ(c->wr_id, list[i].wr_id);
  }
}

TEST_P(TransportConformanceTest, OnlySignaledRequestsComplete) {
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), {}, &env));
  std::vector<uint64_t> got;
  for (uint64_t i = 0; i < 100; ++i) {
    WorkRequest wr = WorkRequest::Write(i, env.client_mem.get(), 0, 64,
                                        env.server_region(), (i % 16) * 64);
    wr.signaled = i % 10 == 9;
    RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  }
  while (got.size() < 10) {
    Completion cs[16];
    auto n = env.client_cq->Wait(absl::MakeSpan(cs), kWait);
    RFRPC_ASSERT_OK(n.status());
    for (int i = 0; i < *n; ++i) {
      ASSERT_TRUE(cs[i].ok()) << cs[i].ToStatus();
      got.push_back(cs[i].wr_id);
    }
  }
  EXPECT_EQ(got, (std::vector<uint64_t>{9, 19, 29, 39, 49, 59, 69, 79, 89, 99}));
  Completion extra;
  EXPECT_EQ(env.client_cq->Wait(&extra, absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(env.client->counters().writes.load(), 100u);
  EXPECT_EQ(env.client->counters().signaled.load(), 10u);
}

// Connection::SetInlineCompletions: a provider that runs requests as they
// are posted (shm) hands every completion of the connection to the sink, in
// post order (success, error and flush alike), and none to the queue, whose
// waiters it still wakes; with no room for a list's signaled requests the
// post fails and runs nothing. Any other provider refuses and completes
// through the queue as before.
TEST_P(TransportConformanceTest, InlineCompletionsTakeEveryCompletionInOrder) {
  InlineCompletions sink(8);  // Outlives the connection's posts.
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), {}, &env));
  const bool runs_at_post = GetParam().provider == "shm";
  ASSERT_EQ(env.client->SetInlineCompletions(&sink), runs_at_post);
  Completion cs[16];
  if (!runs_at_post) {
    auto c = PostAndWait(env.client.get(), env.client_cq.get(),
                         WorkRequest::Write(5, env.client_mem.get(), 0, 8,
                                            env.server_region(), 0));
    RFRPC_ASSERT_OK(c.status());
    EXPECT_EQ(c->wr_id, 5u);
    EXPECT_TRUE(sink.empty());
    return;
  }

  // A list: signaled WRITE, unsignaled WRITE, signaled READ of both.
  StoreRelease64(env.client_mem->data(), 111);
  StoreRelease64(env.client_mem->data() + 8, 222);
  std::vector<WorkRequest> list = {
      WorkRequest::Write(1, env.client_mem.get(), 0, 8, env.server_region(), 0),
      WorkRequest::Write(2, env.client_mem.get(), 8, 8, env.server_region(), 8),
      WorkRequest::Read(3, env.client_mem.get(), 4096, 16, env.server_region(),
                        0)};
  list[1].signaled = false;
  RFRPC_ASSERT_OK(env.client->Post(list));
  ASSERT_EQ(sink.Take(absl::MakeSpan(cs)), 2);
  EXPECT_EQ(cs[0].wr_id, 1u);
  EXPECT_EQ(cs[1].wr_id, 3u);
  EXPECT_TRUE(cs[0].ok() && cs[1].ok());
  EXPECT_EQ(cs[1].opcode, Opcode::kRead);
  EXPECT_EQ(cs[1].byte_len, 16u);
  EXPECT_EQ(LoadAcquire64(env.client_mem->data() + 4096), 111u);
  EXPECT_EQ(LoadAcquire64(env.client_mem->data() + 4104), 222u);
  EXPECT_EQ(env.client_cq->Poll(absl::MakeSpan(cs)), 0)
      << "a completion went to the queue as well";

  // A waiter on the queue is woken by a post that completes something.
  env.client_cq->ArmWake();
  std::thread poster([&] {
    absl::SleepFor(absl::Milliseconds(20));
    WorkRequest wr = WorkRequest::Write(4, env.client_mem.get(), 0, 8,
                                        env.server_region(), 16);
    EXPECT_TRUE(env.client->Post({&wr, 1}).ok());
  });
  const absl::Time start = absl::Now();
  EXPECT_TRUE(env.client_cq->WaitWoken(kWait).ok());
  poster.join();
  EXPECT_LT(absl::Now() - start, kWait / 2);
  ASSERT_EQ(sink.Take(absl::MakeSpan(cs)), 1);
  EXPECT_EQ(cs[0].wr_id, 4u);

  // Room: 8 signaled WRITEs fill the sink; the 9th fails and runs nothing.
  for (uint64_t i = 0; i < 8; ++i) {
    WorkRequest wr = WorkRequest::Write(10 + i, env.client_mem.get(), 0, 8,
                                        env.server_region(), 64 + 8 * i);
    RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  }
  std::vector<WorkRequest> two = {
      WorkRequest::Write(18, env.client_mem.get(), 0, 8, env.server_region(),
                         1024),
      WorkRequest::Write(19, env.client_mem.get(), 0, 8, env.server_region(),
                         1032)};
  EXPECT_EQ(env.client->Post({&two[0], 1}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(env.client->Post(two).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(LoadAcquire64(env.server_mem->data() + 1024), 0u);
  EXPECT_EQ(LoadAcquire64(env.server_mem->data() + 1032), 0u);
  EXPECT_TRUE(env.client->ok());
  ASSERT_EQ(sink.Take(absl::MakeSpan(cs)), 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(cs[i].wr_id, 10u + i);
  RFRPC_ASSERT_OK(env.client->Post(two));
  ASSERT_EQ(sink.Take(absl::MakeSpan(cs)), 2);
  EXPECT_EQ(LoadAcquire64(env.server_mem->data() + 1032), 111u);

  // An error completes (unsignaled too) into the sink and fails the
  // connection; later signaled posts are flushed into it.
  RemoteRegion bad = env.server_region();
  bad.rkey ^= 0x00a5a500u;
  WorkRequest wr = WorkRequest::Read(20, env.client_mem.get(), 4096, 8, bad, 0);
  wr.signaled = false;
  RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  ASSERT_EQ(sink.Take(absl::MakeSpan(cs)), 1);
  EXPECT_EQ(cs[0].wr_id, 20u);
  EXPECT_EQ(cs[0].status, WcStatus::kRemoteAccessError);
  EXPECT_FALSE(env.client->ok());
  wr = WorkRequest::Write(21, env.client_mem.get(), 0, 8, env.server_region(),
                          0);
  EXPECT_EQ(env.client->Post({&wr, 1}).code(), absl::StatusCode::kUnavailable);
  ASSERT_EQ(sink.Take(absl::MakeSpan(cs)), 1);
  EXPECT_EQ(cs[0].wr_id, 21u);
  EXPECT_EQ(cs[0].status, WcStatus::kFlushed);
  EXPECT_EQ(env.client_cq->Poll(absl::MakeSpan(cs)), 0);
  EXPECT_EQ(sink.dropped(), 0u);
}

// Contract 2: a WRITE's trailing 8 bytes become visible after the rest. The
// client writes slots of varying length ending in a sequence number; the
// server polls the trailer with acquire and checks every payload byte, then
// acknowledges with an inline WRITE so the slot can be reused.
TEST_P(TransportConformanceTest, WriteTrailerImpliesPayload) {
  // Long enough to catch a broken implementation on x86: with TSO the only
  // reordering left is memcpy's own store order (glibc stores the first
  // vector of a large copy last), so a plain memcpy of the whole WRITE tears
  // only in a window of a few instructions. Bounded by time for sanitizers.
  constexpr size_t kSlot = 32 * 1024;
  constexpr uint64_t kSlots = 4;
  constexpr uint64_t kIters = 40000;
  const absl::Time stop_at = absl::Now() + absl::Seconds(2);
  const std::vector<size_t> lengths = {16, 300, 1024, 4096, 9000, kSlot};
  EnvOptions o;
  o.client_bytes = kSlots * kSlot + 4096;  // Source slots, then the ack word.
  o.server_bytes = kSlots * kSlot;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  const uint64_t ack_off = kSlots * kSlot;
  char* ack = env.client_mem->data() + ack_off;
  auto length_of = [&](uint64_t seq) { return lengths[seq % lengths.size()]; };

  std::atomic<long> torn{0};
  std::atomic<bool> target_ok{true};
  std::atomic<uint64_t> last{kIters};  // Lowered when time runs out.
  std::thread target([&] {
    for (uint64_t seq = 1; seq <= last.load(std::memory_order_acquire);
         ++seq) {
      char* slot = env.server_mem->data() + (seq % kSlots) * kSlot;
      const bool seen = SpinUntil(
          [&] {
            return LoadAcquire64(slot + kSlot - 8) == seq ||
                   seq > last.load(std::memory_order_acquire);
          },
          absl::Seconds(20));
      if (seq > last.load(std::memory_order_acquire)) break;
      if (!seen) {
        target_ok = false;
        return;
      }
      const size_t len = length_of(seq);
      if (FirstMismatch(slot + kSlot - len, len - 8, seq) != -1) ++torn;
      WorkRequest wr = WorkRequest::Write(seq, nullptr, 0, 8,
                                          env.client_region(), ack_off);
      wr.inline_write = true;
      wr.inline_data = &seq;
      wr.signaled = seq % 16 == 0;
      if (!env.server->Post({&wr, 1}).ok()) {
        target_ok = false;
        return;
      }
      Completion drain[16];
      env.server_cq->Poll(absl::MakeSpan(drain));
    }
  });
  bool writer_ok = true;
  uint64_t written = 0;
  for (uint64_t seq = 1; seq <= kIters && writer_ok; ++seq) {
    const uint64_t slot = seq % kSlots;
    if ((seq & 255) == 0 && absl::Now() > stop_at) break;
    written = seq;
    if (seq > kSlots) {
      writer_ok = SpinUntil([&] { return LoadAcquire64(ack) >= seq - kSlots; },
                            absl::Seconds(20));
      if (!writer_ok) break;
    }
    const size_t len = length_of(seq);
    char* src = env.client_mem->data() + slot * kSlot + kSlot - len;
    FillPattern(src, len - 8, seq);
    std::memcpy(src + len - 8, &seq, 8);
    WorkRequest wr = WorkRequest::Write(seq, env.client_mem.get(),
                                        slot * kSlot + kSlot - len, len,
                                        env.server_region(),
                                        slot * kSlot + kSlot - len);
    wr.signaled = seq % 16 == 0;
    writer_ok = env.client->Post({&wr, 1}).ok();
    Completion drain[16];
    const int n = env.client_cq->Poll(absl::MakeSpan(drain));
    for (int i = 0; i < n; ++i) writer_ok = writer_ok && drain[i].ok();
  }
  last.store(written, std::memory_order_release);
  target.join();
  EXPECT_TRUE(writer_ok);
  EXPECT_TRUE(target_ok);
  EXPECT_EQ(torn.load(), 0) << "payload bytes older than the trailer seen in "
                            << written << " WRITEs";
}

// Contract 3: a READ observes its first 8 bytes before the rest. The server
// (owner) writes a slot's payload, then its header with release; the client
// READs the slot and, whenever the header says seq N, the payload must be
// N's.
TEST_P(TransportConformanceTest, ReadHeaderImpliesPayload) {
  constexpr size_t kSlot = 8 * 1024;
  constexpr uint64_t kSlots = 4;
  constexpr uint64_t kIters = 20000;
  const absl::Time stop_at = absl::Now() + absl::Seconds(2);
  EnvOptions o;
  o.client_bytes = kSlot + 4096;  // READ landing area, then the ack source.
  o.server_bytes = kSlots * kSlot + 4096;  // Slots, then the ack word.
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  const uint64_t ack_off = kSlots * kSlot;
  char* ack = env.server_mem->data() + ack_off;

  std::atomic<bool> owner_ok{true};
  std::atomic<uint64_t> last{kIters};  // Lowered when time runs out.
  std::thread owner([&] {
    for (uint64_t seq = 1; seq <= last.load(std::memory_order_acquire);
         ++seq) {
      char* slot = env.server_mem->data() + (seq % kSlots) * kSlot;
      if (seq > kSlots &&
          !SpinUntil(
              [&] {
                return LoadAcquire64(ack) >= seq - kSlots ||
                       seq > last.load(std::memory_order_acquire);
              },
              absl::Seconds(20))) {
        owner_ok = false;
        return;
      }
      if (seq > last.load(std::memory_order_acquire)) return;
      FillPattern(slot + 8, kSlot - 8, seq);
      StoreRelease64(slot, seq);
    }
  });
  long torn = 0;
  long stale = 0;
  bool reader_ok = true;
  char* landing = env.client_mem->data();
  uint64_t done = 0;
  for (uint64_t seq = 1; seq <= kIters && reader_ok; ++seq) {
    if ((seq & 255) == 0 && absl::Now() > stop_at) break;
    done = seq;
    const uint64_t slot = seq % kSlots;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    for (;;) {
      auto c = PostAndWait(env.client.get(), env.client_cq.get(),
                           WorkRequest::Read(seq, env.client_mem.get(), 0,
                                             kSlot, env.server_region(),
                                             slot * kSlot));
      if (!c.ok() || !c->ok()) {
        reader_ok = false;
        break;
      }
      uint64_t header;
      std::memcpy(&header, landing, 8);
      if (header == seq) {
        if (FirstMismatch(landing + 8, kSlot - 8, seq) != -1) ++torn;
        break;
      }
      ++stale;
      if (absl::Now() > deadline) {
        reader_ok = false;
        break;
      }
      std::this_thread::yield();
    }
    if (!reader_ok) break;
    uint64_t* ack_src =
        reinterpret_cast<uint64_t*>(env.client_mem->data() + kSlot);
    *ack_src = seq;
    WorkRequest wr = WorkRequest::Write(seq, env.client_mem.get(), kSlot, 8,
                                        env.server_region(), ack_off);
    wr.signaled = false;
    if (seq % 16 == 0) {
      auto c = PostAndWait(env.client.get(), env.client_cq.get(), wr);
      reader_ok = c.ok() && c->ok();
    } else {
      reader_ok = env.client->Post({&wr, 1}).ok();
    }
  }
  last.store(done, std::memory_order_release);
  owner.join();
  EXPECT_TRUE(reader_ok);
  EXPECT_TRUE(owner_ok);
  EXPECT_EQ(torn, 0) << "READ returned header N with a payload not N's in "
                     << done << " READs";
  RecordProperty("stale_reads", static_cast<int>(stale));
}

TEST_P(TransportConformanceTest, SharedCompletionQueueAcrossConnections) {
  constexpr int kConns = 16;
  constexpr int kThreads = 4;
  constexpr uint64_t kPerConn = 200;
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  Provider* provider = p->get();
  auto l = provider->Listen(GetParam().listen_address);
  RFRPC_ASSERT_OK(l.status());
  auto shared_cq = provider->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(shared_cq.status());
  auto server_cq = provider->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(server_cq.status());
  auto src = provider->AllocateMemory(4096);
  RFRPC_ASSERT_OK(src.status());
  auto dst = provider->AllocateMemory(kConns * 4096);
  RFRPC_ASSERT_OK(dst.status());
  std::vector<Pair> pairs;
  for (int i = 0; i < kConns; ++i) {
    ConnectionSetup cs;
    cs.cq = shared_cq->get();
    ConnectionSetup ss;
    ss.cq = server_cq->get();
    ss.exposed.push_back(ExposedRegion{dst->get(), uint64_t(i) * 4096, 4096});
    auto pair = ConnectPair(provider, l->get(), cs, ss);
    RFRPC_ASSERT_OK(pair.status());
    pairs.push_back(std::move(*pair));
  }
  std::atomic<bool> post_ok{true};
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&, t] {
      for (uint64_t k = 0; k < kPerConn; ++k) {
        for (int i = t; i < kConns; i += kThreads) {
          Connection* c = pairs[i].client.get();
          WorkRequest wr = WorkRequest::Write(
              (uint64_t(i) << 32) | k, src->get(), 0, 64,
              c->peer().regions[0], (k % 64) * 64);
          if (!c->Post({&wr, 1}).ok()) post_ok = false;
        }
      }
    });
  }
  std::vector<uint64_t> per_conn(kConns, 0);
  uint64_t total = 0;
  bool order_ok = true;
  while (total < kConns * kPerConn) {
    Completion cs[32];
    auto n = (*shared_cq)->Wait(absl::MakeSpan(cs), kWait);
    ASSERT_TRUE(n.ok()) << n.status() << " after " << total;
    for (int j = 0; j < *n; ++j) {
      ASSERT_TRUE(cs[j].ok()) << cs[j].ToStatus();
      const int i = static_cast<int>(cs[j].wr_id >> 32);
      ASSERT_LT(i, kConns);
      EXPECT_EQ(cs[j].connection, pairs[i].client.get());
      EXPECT_EQ(cs[j].connection_id, pairs[i].client->id());
      // Per connection, completions keep posting order.
      if ((cs[j].wr_id & 0xffffffff) != per_conn[i]) order_ok = false;
      ++per_conn[i];
      ++total;
    }
  }
  for (std::thread& t : posters) t.join();
  EXPECT_TRUE(post_ok);
  EXPECT_TRUE(order_ok);
  for (int i = 0; i < kConns; ++i) EXPECT_EQ(per_conn[i], kPerConn);
  EXPECT_GE((*shared_cq)->stats().completions, kConns * kPerConn);
}

void CheckBlockedWaitIsWoken(const ConformanceParam& param, PollMode mode) {
  EnvOptions o;
  o.cq.poll_mode = mode;
  o.cq.max_retry = 50;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(param, o, &env));
  absl::Notification waiting;
  absl::Status wait_status;
  absl::Time woke;
  std::thread waiter([&] {
    waiting.Notify();
    Completion c;
    wait_status = env.client_cq->Wait(&c, absl::Seconds(10));
    woke = absl::Now();
  });
  waiting.WaitForNotification();
  absl::SleepFor(absl::Milliseconds(200));  // Let it spin out and block.
  const absl::Time posted = absl::Now();
  WorkRequest wr = WorkRequest::Write(7, env.client_mem.get(), 0, 8,
                                      env.server_region(), 0);
  RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  waiter.join();
  RFRPC_ASSERT_OK(wait_status);
  EXPECT_LT(woke - posted, absl::Seconds(1));
  const CompletionQueue::Stats st = env.client_cq->stats();
  if (mode != PollMode::kBusy) {
    EXPECT_GE(st.blocks, 1u);
    EXPECT_GE(st.wakeups, 1u);
  } else {
    EXPECT_EQ(st.blocks, 0u);
    EXPECT_GT(st.empty_polls, 0u);
  }
  EXPECT_EQ(st.completions, 1u);
}

TEST_P(TransportConformanceTest, AdaptiveWaitBlocksAndIsWoken) {
  CheckBlockedWaitIsWoken(GetParam(), PollMode::kAdaptive);
}
TEST_P(TransportConformanceTest, EventWaitBlocksAndIsWoken) {
  CheckBlockedWaitIsWoken(GetParam(), PollMode::kEvent);
}
TEST_P(TransportConformanceTest, BusyWaitSeesCompletion) {
  CheckBlockedWaitIsWoken(GetParam(), PollMode::kBusy);
}

TEST_P(TransportConformanceTest, WaitTimesOutAndInterruptWakes) {
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  auto cq = (*p)->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(cq.status());
  Completion c;
  absl::Time t0 = absl::Now();
  EXPECT_EQ((*cq)->Wait(&c, absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(absl::Now() - t0, absl::Milliseconds(45));

  absl::Status s;
  std::thread waiter([&] { s = (*cq)->Wait(&c, absl::Seconds(30)); });
  absl::SleepFor(absl::Milliseconds(100));
  t0 = absl::Now();
  (*cq)->Interrupt();
  waiter.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(2));
}

// Remote wake-ups (WorkRequest::notify, CompletionQueue::ArmWake /
// WaitArmed). The server side's queue is created with remote_wake; the
// client WRITEs a word into server memory with notify.

WorkRequest NotifyWrite(const Env& env, uint64_t offset) {
  WorkRequest wr = WorkRequest::Write(/*wr_id=*/7, env.client_mem.get(),
                                      offset, 8, env.server_region(), offset);
  wr.signaled = false;
  wr.notify = true;
  return wr;
}

// The peer's side of the wake-up races below: round i stores i into the
// waiter's word 0, sometimes right away and sometimes after the waiter went
// to sleep, sends a notify, and waits until the waiter saw it.
void NotifyRounds(const Env& env, uint64_t rounds,
                  const std::atomic<uint64_t>& seen,
                  const std::atomic<bool>& failed) {
  absl::BitGen gen;
  for (uint64_t i = 1; i <= rounds && !failed.load(); ++i) {
    std::memcpy(env.client_mem->data(), &i, 8);
    if (absl::Bernoulli(gen, 0.3)) {
      absl::SleepFor(absl::Microseconds(absl::Uniform(gen, 0, 300)));
    }
    WorkRequest wr = NotifyWrite(env, 0);
    RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
    ASSERT_TRUE(SpinUntil([&] { return seen.load() >= i || failed.load(); },
                          absl::Seconds(10)))
        << "round " << i;
  }
}

TEST_P(TransportConformanceTest, NotifyWakesAnArmedWaiter) {
  EnvOptions o;
  o.cq.remote_wake = true;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  const uint64_t v = 0x1234567890abcdefull;
  std::memcpy(env.client_mem->data(), &v, 8);

  env.server_cq->ArmWake();
  absl::StatusOr<int> got = absl::UnknownError("not run");
  absl::Time woke;
  std::thread waiter([&] {
    Completion c[4];
    got = env.server_cq->WaitArmed(absl::MakeSpan(c), absl::Seconds(20));
    woke = absl::Now();
  });
  absl::SleepFor(absl::Milliseconds(100));  // Let it block.
  const absl::Time sent = absl::Now();
  WorkRequest wr = NotifyWrite(env, 0);
  RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  waiter.join();
  RFRPC_ASSERT_OK(got.status());
  EXPECT_EQ(*got, 0) << "a notify is a wake-up, not a completion";
  EXPECT_LT(woke - sent, absl::Seconds(2));
  // What the notifying WRITE stored is visible to the woken side.
  EXPECT_EQ(LoadAcquire64(env.server_mem->data()), v);
  EXPECT_GE(env.client->counters().notifies.load(), 1u);
  EXPECT_GE(env.server_cq->stats().notifies, 1u);
}

TEST_P(TransportConformanceTest, NotifyBeforeWaitArmedIsKept) {
  EnvOptions o;
  o.cq.remote_wake = true;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  env.server_cq->ArmWake();
  WorkRequest wr = NotifyWrite(env, 0);
  RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
  // On verbs the wake-up arrives a little after Post returns.
  absl::SleepFor(absl::Milliseconds(50));
  Completion c;
  const absl::Time t0 = absl::Now();
  absl::StatusOr<int> got =
      env.server_cq->WaitArmed(absl::MakeSpan(&c, 1), absl::Seconds(10));
  RFRPC_ASSERT_OK(got.status());
  EXPECT_EQ(*got, 0);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(2));
}

TEST_P(TransportConformanceTest, WaitArmedTimesOutAndSeesCompletions) {
  EnvOptions o;
  o.cq.remote_wake = true;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  Completion c[4];
  env.server_cq->ArmWake();
  const absl::Time t0 = absl::Now();
  EXPECT_EQ(env.server_cq->WaitArmed(absl::MakeSpan(c), absl::Milliseconds(50))
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(absl::Now() - t0, absl::Milliseconds(45));
  // A WRITE without notify does not wake it.
  WorkRequest plain = NotifyWrite(env, 0);
  plain.notify = false;
  RFRPC_ASSERT_OK(env.client->Post({&plain, 1}));
  env.server_cq->ArmWake();
  EXPECT_EQ(env.server_cq->WaitArmed(absl::MakeSpan(c), absl::Milliseconds(200))
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);
  // The waiter's own signaled work completes into it and wakes it.
  WorkRequest mine = WorkRequest::Write(/*wr_id=*/9, env.server_mem.get(), 0,
                                        8, env.client_region(), 0);
  mine.signaled = true;
  env.server_cq->ArmWake();
  RFRPC_ASSERT_OK(env.server->Post({&mine, 1}));
  absl::StatusOr<int> got =
      env.server_cq->WaitArmed(absl::MakeSpan(c), absl::Seconds(10));
  RFRPC_ASSERT_OK(got.status());
  ASSERT_EQ(*got, 1);
  EXPECT_EQ(c[0].wr_id, 9u);
  EXPECT_TRUE(c[0].ok());
  // Interrupt wakes an armed waiter too.
  env.server_cq->ArmWake();
  std::thread t([&] {
    absl::SleepFor(absl::Milliseconds(50));
    env.server_cq->Interrupt();
  });
  EXPECT_EQ(env.server_cq->WaitArmed(absl::MakeSpan(c), absl::Seconds(20))
                .status()
                .code(),
            absl::StatusCode::kDeadlineExceeded);
  t.join();
}

TEST_P(TransportConformanceTest, NotifyOnAReadIsRefused) {
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), {}, &env));
  WorkRequest wr = WorkRequest::Read(1, env.client_mem.get(), 0, 8,
                                     env.server_region(), 0);
  wr.notify = true;
  EXPECT_EQ(env.client->Post({&wr, 1}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(env.client->ok());
}

// The protocol the rpc layer builds on: the waiter arms, checks a word in
// its memory, and sleeps only if the word is unchanged; the peer stores the
// word, then sends a notify. No wake-up may be lost: every round ends well
// before its 5 s bound. Each round the peer acknowledges only what the
// waiter saw, so the two race on every round.
TEST_P(TransportConformanceTest, ArmCheckSleepLosesNoWakeUp) {
  EnvOptions o;
  o.cq.remote_wake = true;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  constexpr int kRounds = 300;
  std::atomic<uint64_t> seen{0};
  std::atomic<bool> failed{false};
  std::thread waiter([&] {
    Completion c[4];
    for (uint64_t want = 1; want <= kRounds && !failed.load(); ++want) {
      const absl::Time deadline = absl::Now() + absl::Seconds(5);
      for (;;) {
        env.server_cq->ArmWake();
        if (LoadAcquire64(env.server_mem->data()) >= want) {
          env.server_cq->Disarm();
          break;
        }
        absl::StatusOr<int> r = env.server_cq->WaitArmed(
            absl::MakeSpan(c), deadline - absl::Now());
        if (!r.ok()) {
          ADD_FAILURE() << "round " << want << ": " << r.status();
          failed = true;
          break;
        }
      }
      seen.store(want);
    }
  });
  NotifyRounds(env, kRounds, seen, failed);
  waiter.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(seen.load(), static_cast<uint64_t>(kRounds));
}

// WaitWoken: the same protocol as above, but the sleeping thread takes no
// completions and another thread polls the queue all along (as a sync RPC
// caller sleeps until its push while other callers drive the connection).
// No wake-up may be lost, and the completions stay for the poller: the
// waiter's own signaled WRITEs all reach it.
TEST_P(TransportConformanceTest,
       WaitWokenLosesNoWakeUpWhileAnotherThreadPolls) {
  EnvOptions o;
  o.cq.remote_wake = true;
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
  constexpr int kRounds = 200;
  std::mutex poll_mu;  // Poll and ArmWake by one thread at a time.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> polled{0};
  std::thread poller([&] {
    Completion c[8];
    while (!stop.load()) {
      int n;
      {
        std::lock_guard<std::mutex> lock(poll_mu);
        n = env.server_cq->Poll(absl::MakeSpan(c));
      }
      for (int i = 0; i < n; ++i) {
        EXPECT_TRUE(c[i].ok()) << c[i].ToStatus();
        polled.fetch_add(1);
      }
      std::this_thread::yield();
    }
  });
  std::atomic<uint64_t> seen{0};
  std::atomic<bool> failed{false};
  std::thread waiter([&] {
    for (uint64_t want = 1; want <= kRounds && !failed.load(); ++want) {
      const absl::Time deadline = absl::Now() + absl::Seconds(5);
      for (;;) {
        {
          std::lock_guard<std::mutex> lock(poll_mu);
          env.server_cq->ArmWake();
        }
        if (LoadAcquire64(env.server_mem->data()) >= want) {
          env.server_cq->Disarm();
          break;
        }
        if (absl::Now() >= deadline) {
          ADD_FAILURE() << "round " << want << ": no wake-up within 5 s";
          failed = true;
          break;
        }
        (void)env.server_cq->WaitWoken(deadline - absl::Now());
      }
      seen.store(want);
    }
  });
  NotifyRounds(env, kRounds, seen, failed);
  waiter.join();
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(seen.load(), static_cast<uint64_t>(kRounds));
  // The queue's own completions wake a WaitWoken and stay for Poll.
  constexpr uint64_t kMine = 5;
  const uint64_t before = polled.load();
  for (uint64_t k = 0; k < kMine; ++k) {
    {
      std::lock_guard<std::mutex> lock(poll_mu);
      env.server_cq->ArmWake();
    }
    WorkRequest mine = WorkRequest::Write(
        /*wr_id=*/100 + k, env.server_mem.get(), 0, 8, env.client_region(), 0);
    mine.signaled = true;
    RFRPC_ASSERT_OK(env.server->Post({&mine, 1}));
    const absl::Status woken = env.server_cq->WaitWoken(absl::Seconds(10));
    EXPECT_TRUE(woken.ok()) << woken;
  }
  EXPECT_TRUE(SpinUntil([&] { return polled.load() >= before + kMine; },
                        absl::Seconds(10)));
  stop = true;
  poller.join();
  // Nothing woke it: the timeout.
  env.server_cq->ArmWake();
  EXPECT_EQ(env.server_cq->WaitWoken(absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  // Interrupt() from another thread ends it long before its timeout, and
  // one that came before the wait ends the next wait at once.
  env.server_cq->ArmWake();
  std::thread interrupter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    env.server_cq->Interrupt();
  });
  absl::Time t0 = absl::Now();
  const absl::Status interrupted = env.server_cq->WaitWoken(absl::Seconds(20));
  EXPECT_TRUE(interrupted.ok()) << interrupted;
  EXPECT_LT(absl::Now() - t0, absl::Seconds(10));
  interrupter.join();
  env.server_cq->Interrupt();
  env.server_cq->ArmWake();
  t0 = absl::Now();
  EXPECT_TRUE(env.server_cq->WaitWoken(absl::Seconds(20)).ok());
  EXPECT_LT(absl::Now() - t0, absl::Seconds(10));
}

// Isolation: wrong key, out of bounds, missing right. Each violation
// completes with kRemoteAccessError (signaled or not), touches nothing, and
// fails the connection (RC semantics), after which Post is UNAVAILABLE and
// signaled requests are flushed.
TEST_P(TransportConformanceTest, RemoteAccessViolationsTouchNothing) {
  struct Case {
    const char* name;
    bool remote_write, remote_read;
    Opcode op;
    // Turns the valid descriptor into the bad one; sets the offset.
    void (*mangle)(RemoteRegion*, uint64_t*);
  };
  const Case cases[] = {
      {"bad rkey", true, true, Opcode::kWrite,
       [](RemoteRegion* r, uint64_t*) { r->rkey ^= 0x00a5a500u; }},
      {"bad rkey read", true, true, Opcode::kRead,
       [](RemoteRegion* r, uint64_t*) { r->rkey ^= 0x00a5a500u; }},
      {"past the end", true, true, Opcode::kWrite,
       [](RemoteRegion* r, uint64_t* off) { *off = r->length - 4; }},
      {"before the start", true, true, Opcode::kWrite,
       [](RemoteRegion* r, uint64_t*) { r->addr -= 16; }},
      {"read past the end", true, true, Opcode::kRead,
       [](RemoteRegion* r, uint64_t* off) { *off = r->length - 4; }},
      {"no write right", false, true, Opcode::kWrite,
       [](RemoteRegion*, uint64_t*) {}},
      {"no read right", true, false, Opcode::kRead,
       [](RemoteRegion*, uint64_t*) {}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    EnvOptions o;
    o.server_bytes = 3 * 4096;
    o.server_exposed.offset = 4096;
    o.server_exposed.length = 4096;
    o.server_exposed.remote_write = k.remote_write;
    o.server_exposed.remote_read = k.remote_read;
    Env env;
    RFRPC_ASSERT_OK(MakeEnv(GetParam(), o, &env));
    std::memset(env.server_mem->data(), '\x5a', 3 * 4096);
    std::memset(env.client_mem->data(), '\x3c', 4096);
    std::memset(env.client_mem->data() + 4096, '\x77', 4096);
    RemoteRegion r = env.server_region();
    uint64_t off = 0;
    k.mangle(&r, &off);
    WorkRequest wr = k.op == Opcode::kWrite
                         ? WorkRequest::Write(41, env.client_mem.get(), 0, 8,
                                              r, off)
                         : WorkRequest::Read(41, env.client_mem.get(), 4096, 8,
                                             r, off);
    wr.signaled = false;  // Errors complete anyway.
    RFRPC_ASSERT_OK(env.client->Post({&wr, 1}));
    auto c = WaitOne(env.client_cq.get());
    RFRPC_ASSERT_OK(c.status());
    EXPECT_EQ(c->wr_id, 41u);
    EXPECT_EQ(c->status, WcStatus::kRemoteAccessError)
        << WcStatusName(c->status);
    EXPECT_EQ(c->ToStatus().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_TRUE(AllBytes(env.server_mem->data(), 3 * 4096, '\x5a'))
        << "target memory changed";
    EXPECT_TRUE(AllBytes(env.client_mem->data() + 4096, 4096, '\x77'))
        << "READ landing area changed";

    // The connection is now failed.
    EXPECT_TRUE(SpinUntil([&] { return !env.client->ok(); }, absl::Seconds(2)));
    EXPECT_EQ(env.client->status().code(), absl::StatusCode::kUnavailable);
    WorkRequest good = WorkRequest::Write(42, env.client_mem.get(), 0, 8,
                                          env.server_region(), 0);
    EXPECT_EQ(env.client->Post({&good, 1}).code(),
              absl::StatusCode::kUnavailable);
    c = WaitOne(env.client_cq.get());
    RFRPC_ASSERT_OK(c.status());
    EXPECT_EQ(c->wr_id, 42u);
    EXPECT_EQ(c->status, WcStatus::kFlushed);
    EXPECT_TRUE(AllBytes(env.server_mem->data(), 3 * 4096, '\x5a'));
  }
}

TEST_P(TransportConformanceTest, FailIsSeenByBothSides) {
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), {}, &env));
  env.client->Fail(absl::InternalError("protocol violation in test"));
  EXPECT_EQ(env.client->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(env.client->status().message().find("protocol violation"),
            std::string::npos)
      << env.client->status();
  env.client->Fail(absl::InternalError("second reason is ignored"));
  EXPECT_EQ(env.client->status().message().find("second"), std::string::npos);
  const absl::Time t0 = absl::Now();
  EXPECT_TRUE(SpinUntil([&] { return !env.server->ok(); },
                        GetParam().liveness_bound * 2));
  EXPECT_EQ(env.server->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(absl::Now() - t0, GetParam().liveness_bound);
  WorkRequest wr = WorkRequest::Write(1, env.server_mem.get(), 0, 8,
                                      env.client_region(), 0);
  EXPECT_EQ(env.server->Post({&wr, 1}).code(), absl::StatusCode::kUnavailable);
  auto c = WaitOne(env.server_cq.get());
  RFRPC_ASSERT_OK(c.status());
  EXPECT_EQ(c->status, WcStatus::kFlushed);
}

std::string RunfilesPath(const std::string& rel) {
  if (!rel.empty() && rel[0] == '/') return rel;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir == nullptr) return rel;
  return absl::StrCat(srcdir, "/", ws != nullptr ? ws : "rfrpc", "/", rel);
}

// Two processes: a child connects and exposes memory; SIGKILL it; this side
// must see UNAVAILABLE within the provider's liveness bound (and always
// within 2 s), then Post fails and flushes.
TEST_P(TransportConformanceTest, PeerProcessKilledIsDetected) {
  if (GetParam().peer_binary.empty()) GTEST_SKIP() << "no peer binary";
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  auto l = (*p)->Listen(GetParam().listen_address);
  RFRPC_ASSERT_OK(l.status());
  auto cq = (*p)->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(cq.status());
  auto mem = (*p)->AllocateMemory(4096);
  RFRPC_ASSERT_OK(mem.status());

  const std::string bin = RunfilesPath(GetParam().peer_binary);
  const std::string a1 = "--provider=" + GetParam().provider;
  const std::string a2 = "--address=" + (*l)->address();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char* argv[] = {const_cast<char*>(bin.c_str()),
                    const_cast<char*>(a1.c_str()),
                    const_cast<char*>(a2.c_str()), nullptr};
    ::execv(bin.c_str(), argv);
    ::_exit(127);
  }
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reaper{child};

  auto inc = (*l)->Next(absl::Seconds(20));
  RFRPC_ASSERT_OK(inc.status());
  EXPECT_EQ((*inc)->peer().user_data, "conformance peer");
  ConnectionSetup ss;
  ss.cq = cq->get();
  ss.exposed.push_back(ExposedRegion{mem->get()});
  auto conn = (*inc)->Accept(ss);
  RFRPC_ASSERT_OK(conn.status());
  Connection* c = conn->get();
  ASSERT_EQ(c->peer().regions.size(), 1u);
  // The peer's memory works while it lives.
  auto done = PostAndWait(c, cq->get(),
                          WorkRequest::Write(1, mem->get(), 0, 64,
                                             c->peer().regions[0], 0));
  RFRPC_ASSERT_OK(done.status());
  EXPECT_TRUE(done->ok()) << done->ToStatus();
  EXPECT_TRUE(c->ok());

  ASSERT_EQ(::kill(child, SIGKILL), 0);
  const absl::Time killed = absl::Now();
  const bool noticed = SpinUntil([&] { return !c->ok(); }, absl::Seconds(5));
  const absl::Duration took = absl::Now() - killed;
  ASSERT_TRUE(noticed) << "peer death not detected within 5 s";
  EXPECT_EQ(c->status().code(), absl::StatusCode::kUnavailable) << c->status();
  EXPECT_LT(took, std::min(GetParam().liveness_bound, absl::Seconds(2)));
  RecordProperty("detection_us",
                 static_cast<int>(absl::ToInt64Microseconds(took)));
  std::cerr << "peer death detected after " << took << ": " << c->status()
            << "\n";

  WorkRequest wr = WorkRequest::Write(2, mem->get(), 0, 8,
                                      c->peer().regions[0], 0);
  EXPECT_EQ(c->Post({&wr, 1}).code(), absl::StatusCode::kUnavailable);
  done = WaitOne(cq->get());
  RFRPC_ASSERT_OK(done.status());
  EXPECT_EQ(done->wr_id, 2u);
  EXPECT_EQ(done->status, WcStatus::kFlushed);
}

// Expects the listener to answer `bytes` with a HelloReply carrying `code`.
void ExpectRawReply(const std::string& address, const std::string& bytes,
                    absl::StatusCode code) {
  ScopedFd fd = RawConnect(address);
  ASSERT_TRUE(fd.valid()) << "cannot reach " << address;
  RFRPC_ASSERT_OK(WriteFully(fd.get(), bytes.data(), bytes.size(),
                             absl::Now() + absl::Seconds(2)));
  HelloReply reply;
  RFRPC_ASSERT_OK(RecvFrame(fd.get(), &reply, absl::Seconds(10)));
  EXPECT_EQ(reply.status_code(), static_cast<int>(code))
      << reply.error_message();
  EXPECT_FALSE(reply.error_message().empty());
}

std::string Frame(uint16_t version, const std::string& body) {
  FrameHeader h{kFrameMagic, version, 0, static_cast<uint32_t>(body.size())};
  std::string out(reinterpret_cast<const char*>(&h), sizeof(h));
  return out + body;
}

TEST_P(TransportConformanceTest, BadHandshakesAreAnsweredAndListenerSurvives) {
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  auto l = (*p)->Listen(GetParam().listen_address);
  RFRPC_ASSERT_OK(l.status());
  const std::string addr = (*l)->address();

  // Listener::Next() answers bad handshakes; a provider may do so only while
  // someone calls it (verbs), as a server's accept loop always does. Pump it
  // from a thread while the raw peers wait for their answers.
  std::atomic<bool> pumping{true};
  std::thread pump([&] {
    while (pumping.load()) {
      auto in = (*l)->Next(absl::Milliseconds(20));
      EXPECT_FALSE(in.ok()) << "a bad handshake surfaced as a connection";
    }
  });
  {
    SCOPED_TRACE("not rfrpc at all");
    ExpectRawReply(addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                   absl::StatusCode::kInvalidArgument);
  }
  {
    SCOPED_TRACE("future handshake version");
    ExpectRawReply(addr, Frame(kHandshakeVersion + 1, ""),
                   absl::StatusCode::kFailedPrecondition);
  }
  {
    SCOPED_TRACE("garbled body");
    ExpectRawReply(addr, Frame(kHandshakeVersion, std::string(7, '\xff')),
                   absl::StatusCode::kInvalidArgument);
  }
  {
    SCOPED_TRACE("wrong provider");
    Hello hello;
    hello.set_provider("carrier-pigeon");
    std::string body;
    ASSERT_TRUE(hello.SerializeToString(&body));
    ExpectRawReply(addr, Frame(kHandshakeVersion, body),
                   absl::StatusCode::kFailedPrecondition);
  }
  pumping = false;
  pump.join();
  {
    SCOPED_TRACE("connect and hang up");
    ScopedFd fd = RawConnect(addr);
    ASSERT_TRUE(fd.valid());
  }

  auto cq = (*p)->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(cq.status());
  auto mem = (*p)->AllocateMemory(4096);
  RFRPC_ASSERT_OK(mem.status());
  ConnectionSetup cs;
  cs.cq = cq->get();
  cs.exposed.push_back(ExposedRegion{mem->get()});
  ConnectionSetup ss = cs;
  {
    SCOPED_TRACE("wrong auth token");
    cs.auth_token = "guess";
    ss.auth_token = "secret";
    auto pair = ConnectPair(p->get(), l->get(), cs, ss);
    EXPECT_EQ(pair.status().code(), absl::StatusCode::kUnauthenticated)
        << pair.status();
  }
  {
    SCOPED_TRACE("listener rejects");
    absl::StatusOr<std::unique_ptr<Connection>> client;
    std::thread t([&] { client = (*p)->Connect(addr, cs); });
    auto inc = (*l)->Next(kWait);
    RFRPC_ASSERT_OK(inc.status());
    (*inc)->Reject(absl::PermissionDeniedError("not today"));
    t.join();
    EXPECT_EQ(client.status().code(), absl::StatusCode::kPermissionDenied);
    EXPECT_NE(client.status().message().find("not today"), std::string::npos)
        << client.status();
  }
  {
    SCOPED_TRACE("good peer after all that");
    cs.auth_token = "secret";
    auto pair = ConnectPair(p->get(), l->get(), cs, ss);
    RFRPC_ASSERT_OK(pair.status());
    auto c = PostAndWait(pair->client.get(), cq->get(),
                         WorkRequest::Write(5, mem->get(), 0, 8,
                                            pair->client->peer().regions[0],
                                            8));
    RFRPC_ASSERT_OK(c.status());
    EXPECT_TRUE(c->ok()) << c->ToStatus();
  }
}

// Every provider's listener checks the connector's token with the same
// helper (transport/auth_token.h): missing and wrong tokens are refused on
// both sides with UNAUTHENTICATED and the same text, before the listener
// sets anything up; a listener without a token accepts any; only the
// listener checks.
TEST_P(TransportConformanceTest, AuthTokenIsCheckedByTheListenerAlike) {
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  auto l = (*p)->Listen(GetParam().listen_address);
  RFRPC_ASSERT_OK(l.status());
  auto cq = (*p)->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(cq.status());
  auto mem = (*p)->AllocateMemory(4096);
  RFRPC_ASSERT_OK(mem.status());

  struct Outcome {
    absl::Status client;
    absl::Status server;
    std::string peer_name;  // As the listener saw the connector.
    std::unique_ptr<Connection> client_conn, server_conn;
  };
  auto attempt = [&](const std::string& presented, const std::string& required) {
    ConnectionSetup cs;
    cs.cq = cq->get();
    cs.exposed.push_back(ExposedRegion{mem->get()});
    cs.auth_token = presented;
    ConnectionSetup ss = cs;
    ss.auth_token = required;
    Outcome o;
    absl::StatusOr<std::unique_ptr<Connection>> client =
        absl::UnknownError("not run");
    std::thread t([&] { client = (*p)->Connect((*l)->address(), cs); });
    auto inc = (*l)->Next(kWait);
    if (inc.ok()) {
      o.peer_name = (*inc)->peer().peer_name;
      auto server = (*inc)->Accept(ss);
      o.server = server.status();
      if (server.ok()) o.server_conn = std::move(*server);
    } else {
      o.server = inc.status();
    }
    t.join();
    o.client = client.status();
    if (client.ok()) o.client_conn = std::move(*client);
    return o;
  };
  auto expect_refused = [](const Outcome& o, const absl::Status& expected) {
    EXPECT_EQ(o.server.code(), absl::StatusCode::kUnauthenticated) << o.server;
    EXPECT_EQ(o.server.message(), expected.message());
    EXPECT_EQ(o.client.code(), absl::StatusCode::kUnauthenticated) << o.client;
    EXPECT_NE(o.client.message().find(expected.message()), std::string::npos)
        << o.client;
  };

  {
    SCOPED_TRACE("no token presented");
    Outcome o = attempt("", "s3cret");
    const absl::Status want = CheckAuthToken("s3cret", "", o.peer_name);
    EXPECT_EQ(want.message(), absl::StrCat("no auth token from ", o.peer_name,
                                           " (the listener requires one)"));
    expect_refused(o, want);
  }
  for (const char* wrong : {"s3creT", "s3cre", "s3cret!", "x"}) {
    SCOPED_TRACE(absl::StrCat("wrong token \"", wrong, "\""));
    Outcome o = attempt(wrong, "s3cret");
    const absl::Status want = CheckAuthToken("s3cret", wrong, o.peer_name);
    EXPECT_EQ(want.message(), absl::StrCat("wrong auth token from ", o.peer_name));
    expect_refused(o, want);
  }
  {
    SCOPED_TRACE("a listener without a token accepts a connector with one");
    Outcome o = attempt("anything", "");
    RFRPC_ASSERT_OK(o.client);
    RFRPC_ASSERT_OK(o.server);
  }
  {
    SCOPED_TRACE("the right token, after the refusals");
    Outcome o = attempt("s3cret", "s3cret");
    RFRPC_ASSERT_OK(o.client);
    RFRPC_ASSERT_OK(o.server);
    auto c = PostAndWait(o.client_conn.get(), cq->get(),
                         WorkRequest::Write(6, mem->get(), 0, 8,
                                            o.client_conn->peer().regions[0], 0));
    RFRPC_ASSERT_OK(c.status());
    EXPECT_TRUE(c->ok()) << c->ToStatus();
  }
}

TEST_P(TransportConformanceTest, ConnectFailuresAreSpecific) {
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  auto l = (*p)->Listen(GetParam().listen_address);
  RFRPC_ASSERT_OK(l.status());
  auto cq = (*p)->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(cq.status());
  ConnectionSetup cs;
  cs.cq = cq->get();
  cs.handshake_timeout = absl::Milliseconds(300);

  // A listener that never answers: the handshake times out.
  std::string silent_addr;
  ScopedFd silent = SilentListener((*l)->address(), &silent_addr);
  ASSERT_TRUE(silent.valid());
  const absl::Time t0 = absl::Now();
  EXPECT_EQ((*p)->Connect(silent_addr, cs).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - t0, absl::Seconds(3));

  // Nobody listening there at all.
  std::string gone_addr = (*l)->address();
  l->reset();
  EXPECT_EQ((*p)->Connect(gone_addr, cs).status().code(),
            absl::StatusCode::kUnavailable);

  // No completion queue.
  cs.cq = nullptr;
  EXPECT_EQ((*p)->Connect(silent_addr, cs).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(TransportConformanceTest, ListenerShutdownWakesNext) {
  auto p = Provider::Open(GetParam().provider, GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  auto l = (*p)->Listen(GetParam().listen_address);
  RFRPC_ASSERT_OK(l.status());
  EXPECT_EQ((*l)->Next(absl::Milliseconds(20)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  absl::Status s;
  std::thread t([&] { s = (*l)->Next(absl::Seconds(30)).status(); });
  absl::SleepFor(absl::Milliseconds(50));
  const absl::Time t0 = absl::Now();
  (*l)->Shutdown();
  t.join();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(absl::Now() - t0, absl::Seconds(2));
}

// Users may drop objects in any order (the provider first, say); the
// connection keeps working until it is destroyed, and nothing leaks.
TEST_P(TransportConformanceTest, ObjectsMayBeDestroyedInAnyOrder) {
  Env env;
  RFRPC_ASSERT_OK(MakeEnv(GetParam(), {}, &env));
  env.listener.reset();
  env.provider.reset();
  auto c = PostAndWait(env.client.get(), env.client_cq.get(),
                       WorkRequest::Write(1, env.client_mem.get(), 0, 8,
                                          env.server_region(), 0));
  RFRPC_ASSERT_OK(c.status());
  EXPECT_TRUE(c->ok()) << c->ToStatus();
  env.server.reset();
  EXPECT_TRUE(SpinUntil([&] { return !env.client->ok(); }, absl::Seconds(2)));
  EXPECT_EQ(env.client->status().code(), absl::StatusCode::kUnavailable);
  env.client.reset();
}

TEST_P(TransportConformanceTest, AutoOpensAWorkingProvider) {
  auto p = Provider::Open("auto", GetParam().options);
  RFRPC_ASSERT_OK(p.status());
  const std::string name = (*p)->name();
  EXPECT_TRUE(name == "verbs" || name == "shm") << name;
  auto mem = (*p)->AllocateMemory(4096);
  RFRPC_ASSERT_OK(mem.status());
  auto cq = (*p)->CreateCompletionQueue({});
  RFRPC_ASSERT_OK(cq.status());
  auto l = (*p)->Listen(GetParam().listen_address);
  RFRPC_ASSERT_OK(l.status());
  ConnectionSetup s;
  s.cq = cq->get();
  s.exposed.push_back(ExposedRegion{mem->get()});
  auto pair = ConnectPair(p->get(), l->get(), s, s);
  RFRPC_ASSERT_OK(pair.status());
  auto c = PostAndWait(pair->client.get(), cq->get(),
                       WorkRequest::Write(1, mem->get(), 0, 8,
                                          pair->client->peer().regions[0], 64));
  RFRPC_ASSERT_OK(c.status());
  EXPECT_TRUE(c->ok()) << c->ToStatus();
}

}  // namespace
}  // namespace testing
}  // namespace transport
}  // namespace rfrpc
