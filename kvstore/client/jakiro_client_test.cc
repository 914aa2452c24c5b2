// Copyright 2026 The rfrpc Authors.
//
// JakiroClient against in-process Jakiro servers on shm: routing to the
// owning worker, consistent hashing over two servers, errors end to end.

#include "kvstore/client/jakiro_client.h"

#include <atomic>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "kvstore/server/jakiro_service.h"
#include "kvstore/server/message_limits.h"
#include "kvstore/store/key_hash.h"
#include "rpc/server.h"
#include "rpc/tuner/profile.h"
#include "rpc/tuner/test_profiles.h"
#include "transport/transport.h"

namespace rfrpc {
namespace kvstore {
namespace {

// One Jakiro server with its own store.
struct TestServer {
  explicit TestServer(int workers, size_t max_value_bytes = 4096,
                      std::string address = "", int max_connections = 0) {
    JakiroServiceOptions o;
    o.workers = workers;
    o.memory_bytes_per_partition = size_t{4} << 20;
    o.max_value_bytes = max_value_bytes;
    absl::StatusOr<std::unique_ptr<JakiroService>> s = JakiroService::Create(o);
    EXPECT_TRUE(s.ok()) << s.status();
    service = std::move(*s);
    ServerOptions so;
    so.workers = workers;
    so.address = std::move(address);
    so.idle_spin_rounds = 100;
    if (max_connections > 0) so.max_connections = max_connections;
    server = std::make_unique<Server>(so);
    EXPECT_TRUE(server->RegisterService(service.get()).ok());
    absl::Status st = server->Start();
    EXPECT_TRUE(st.ok()) << st;
  }
  std::unique_ptr<JakiroService> service;
  std::unique_ptr<Server> server;
};

std::unique_ptr<JakiroClient> ConnectTo(const std::vector<TestServer*>& servers,
                                        RpcMode mode = RpcMode::kHybrid,
                                        bool progress_thread = true) {
  JakiroClientOptions o;
  for (TestServer* s : servers) o.servers.push_back(s->server->address());
  o.channel.mode = mode;
  o.channel.progress_thread = progress_thread;
  o.max_value_bytes = 4096;
  absl::StatusOr<std::unique_ptr<JakiroClient>> c = JakiroClient::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

// A limit below what the largest value needs is raised; the caller is told
// to say so only when the user had set it.
TEST(MessageLimitsTest, RaiseToFitRaisesAndTellsOnlyForValuesTheUserSet) {
  uint32_t bytes = 4096;  // The default, too small.
  EXPECT_FALSE(RaiseToFit(&bytes, 4096, 33040));
  EXPECT_EQ(bytes, 33040u);
  bytes = 300;  // Set by the user, too small.
  EXPECT_TRUE(RaiseToFit(&bytes, 4096, 33040));
  EXPECT_EQ(bytes, 33040u);
  bytes = 65536;  // Large enough: kept.
  EXPECT_FALSE(RaiseToFit(&bytes, 4096, 33040));
  EXPECT_EQ(bytes, 65536u);
}

// Both limits are raised; only the one the user set is named.
TEST(MessageLimitsTest, RaiseMessageLimitsNamesTheLimitsTheUserSet) {
  ChannelOptions o;
  o.max_request_bytes = 300;  // Set by the user; the response limit is not.
  const std::vector<std::string> raised =
      RaiseMessageLimits(&o, ChannelOptions().max_response_bytes + 1, "p.");
  EXPECT_EQ(raised, std::vector<std::string>{"p.max_request_bytes=300"});
  EXPECT_EQ(o.max_request_bytes, ChannelOptions().max_response_bytes + 1);
  EXPECT_EQ(o.max_response_bytes, ChannelOptions().max_response_bytes + 1);
}

TEST(JakiroClientTest, RoutesEveryKeyToItsOwningWorker) {
  TestServer server(3);
  for (RpcMode mode : {RpcMode::kRemoteFetch, RpcMode::kServerReply,
                       RpcMode::kHybrid}) {
    std::unique_ptr<JakiroClient> client = ConnectTo({&server}, mode);
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(client->workers(0), 3);
    // A misrouted call would fail with FAILED_PRECONDITION.
    for (int i = 0; i < 300; ++i) {
      const std::string key = absl::StrCat("user", i);
      ASSERT_TRUE(client->Put(key, absl::StrCat(RpcModeName(mode), i)).ok());
    }
    for (int i = 0; i < 300; ++i) {
      std::string v;
      absl::Status s = client->Get(absl::StrCat("user", i), &v);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(v, absl::StrCat(RpcModeName(mode), i));
    }
    EXPECT_EQ(client->TotalStats().calls_failed, 0u);
  }
  server.server->Shutdown();
  for (int w = 0; w < 3; ++w) {
    EXPECT_GT(server.service->partition_stats(w).items, 60u) << w;
  }
  EXPECT_EQ(server.service->TotalStats().items, 300u);
}

// Puts `key` until the call gets through a server restart: calls in the
// gap fail UNAVAILABLE (or time out, CANCELLED when their connection is
// torn down), never FAILED_PRECONDITION, which a misrouted key gets.
absl::Status ThroughRestart(const std::function<absl::Status()>& op) {
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  for (;;) {
    absl::Status s = op();
    if (s.ok() || s.code() == absl::StatusCode::kFailedPrecondition ||
        absl::Now() > give_up) {
      return s;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

// A client of `address` whose calls give up after 1 s (not 5): a call sent
// to a server that is gone fails soon.
std::unique_ptr<JakiroClient> ConnectWithShortTimeout(const std::string& address) {
  JakiroClientOptions o;
  o.servers = {address};
  o.max_value_bytes = 4096;
  o.channel.default_timeout = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<JakiroClient>> c = JakiroClient::Connect(o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(*c) : nullptr;
}

absl::Status PutThroughRestart(JakiroClient* client, const std::string& key,
                               const std::string& value) {
  return ThroughRestart([&] { return client->Put(key, value); });
}

// A client that made one call to a one-worker server, and that server
// restarted at the same address with `workers` workers (and at most
// `max_connections`; 0: the default). `client` is null if it could not
// connect (ConnectWithShortTimeout said why).
struct Restarted {
  std::unique_ptr<JakiroClient> client;
  std::unique_ptr<TestServer> server;
};
Restarted ConnectThenRestart(int workers, int max_connections = 0) {
  Restarted r;
  auto first = std::make_unique<TestServer>(1);
  const std::string address = first->server->address();
  r.client = ConnectWithShortTimeout(address);
  if (r.client == nullptr) return r;
  EXPECT_TRUE(r.client->Put("before", "1").ok());
  first.reset();
  r.server = std::make_unique<TestServer>(workers, 4096, address,
                                          max_connections);
  return r;
}

// A server restarted at the same address with another --workers: the
// client follows it (connects to the new workers, routes by the new count)
// instead of sending the keys of the moved partitions to workers that do
// not own them. Before, every such key failed FAILED_PRECONDITION until
// the client was restarted.
TEST(JakiroClientTest, FollowsAServerRestartedWithAnotherWorkerCount) {
  auto server = std::make_unique<TestServer>(1);
  const std::string address = server->server->address();
  std::unique_ptr<JakiroClient> c = ConnectWithShortTimeout(address);
  ASSERT_NE(c, nullptr);
  JakiroClient& client = *c;
  ASSERT_EQ(client.workers(0), 1);
  ASSERT_TRUE(client.Put("before", "1").ok());

  for (int workers : {3, 2, 1}) {
    SCOPED_TRACE(absl::StrCat("restarted with ", workers, " workers"));
    server.reset();
    server = std::make_unique<TestServer>(workers, 4096, address);
    ASSERT_EQ(server->server->address(), address);
    // The first call, sync, for a key of the new count's last worker: it is
    // routed by the old count (its connection reconnects only as it goes),
    // reaches worker 0, and is retried, not failed.
    std::string first_key;
    for (int i = 0;; ++i) {
      first_key = absl::StrCat("first", i);
      if (static_cast<int>(PartitionOfHash(KeyHash(first_key), workers)) ==
          workers - 1) {
        break;
      }
    }
    absl::Status first = PutThroughRestart(&client, first_key, "f");
    ASSERT_TRUE(first.ok()) << first;
    absl::Status deleted =
        ThroughRestart([&] { return client.Delete(first_key); });
    ASSERT_TRUE(deleted.ok()) << deleted;
    EXPECT_EQ(client.workers(0), workers);
    EXPECT_EQ(client.channel(0).server_workers(), workers);
    EXPECT_GE(client.channel(0).connections(), workers);
    int per_worker[3] = {0, 0, 0};
    // Each connection's first call after the restart may still fail
    // UNAVAILABLE (sent before its connection saw the old server go); none
    // fails FAILED_PRECONDITION.
    for (int i = 0; i < 200; ++i) {
      const std::string key = absl::StrCat("user", i);
      absl::Status s = PutThroughRestart(&client, key, absl::StrCat("v", i));
      ASSERT_TRUE(s.ok()) << key << ": " << s;
      ++per_worker[client.WorkerOf(key)];
    }
    for (int w = 0; w < workers; ++w) EXPECT_GT(per_worker[w], 0) << w;
    // Sync and async reads of every key, each answered by its owner. The
    // async calls' state is shared with their callbacks, which may outlive
    // a failed assertion here.
    struct Reads {
      std::atomic<int> ok{0}, failed{0};
      std::vector<std::string> values = std::vector<std::string>(200);
    };
    auto reads = std::make_shared<Reads>();
    for (int i = 0; i < 200; ++i) {
      const std::string key = absl::StrCat("user", i);
      std::string v;
      absl::Status s = ThroughRestart([&] { return client.Get(key, &v); });
      ASSERT_TRUE(s.ok()) << key << ": " << s;
      EXPECT_EQ(v, absl::StrCat("v", i));
      client.GetAsync(key, &reads->values[i], [reads](absl::Status st) {
        (st.ok() ? reads->ok : reads->failed).fetch_add(1);
      });
    }
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    while (reads->ok.load() + reads->failed.load() < 200 &&
           absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_EQ(reads->ok.load(), 200);
    for (int i = 0; i < 200; ++i) EXPECT_EQ(reads->values[i], absl::StrCat("v", i));
    // The partitions are the workers' own: read once they have stopped.
    server->server->Shutdown();
    EXPECT_EQ(server->service->TotalStats().items, 200u);
    for (int w = 0; w < workers; ++w) {
      EXPECT_EQ(server->service->partition_stats(w).items,
                static_cast<uint64_t>(per_worker[w]))
          << w;
    }
  }
}

// A server restarted with more workers, but the connection to a new worker
// is refused (the server is at max_connections): the client first routes
// by the workers it reached, and keeps trying the others. Once the server
// has room, the keys of the new worker's partition reach it. Before, the
// channel tried only at its next reconnect, which never came: every such
// key failed FAILED_PRECONDITION (worker 0 owns none of them).
TEST(JakiroClientTest, ConnectsToANewWorkerItCouldNotReachAtFirst) {
  Restarted r = ConnectThenRestart(2, /*max_connections=*/2);
  ASSERT_NE(r.client, nullptr);
  std::unique_ptr<JakiroClient>& c = r.client;
  std::unique_ptr<TestServer>& server = r.server;
  const std::string address = server->server->address();
  // Another client takes one of the two connections first.
  ChannelOptions blocker_options;
  blocker_options.connections = 1;
  absl::StatusOr<std::unique_ptr<Channel>> blocker =
      Channel::Create(address, blocker_options);
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  std::string key0, key1;  // Keys of partition 0 and 1 of 2.
  for (int i = 0; key0.empty() || key1.empty(); ++i) {
    const std::string k = absl::StrCat("k", i);
    (PartitionOfHash(KeyHash(k), 2) == 0 ? key0 : key1) = k;
  }
  // The client reconnects to worker 0 (the last connection the server
  // takes) and finds 2 workers; worker 1 refuses it.
  absl::Status s = PutThroughRestart(c.get(), key0, "0");
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(c->channel(0).connections(), 1);
  EXPECT_EQ(c->workers(0), 1);
  // Room again: within a few reconnect intervals the client reaches
  // worker 1, and key1 goes there.
  blocker->reset();
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  do {
    s = c->Put(key1, "1");
    if (s.ok()) break;
    absl::SleepFor(absl::Milliseconds(20));
  } while (absl::Now() < give_up);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(c->workers(0), 2);
  std::string v;
  ASSERT_TRUE(c->Get(key1, &v).ok());
  EXPECT_EQ(v, "1");
  server->server->Shutdown();
  EXPECT_EQ(server->service->partition_stats(1).items, 1u);
}

// Several threads calling across a restart to more workers: while one
// reconnects and connects to the new workers, the others wait for it or
// see the new count; none is answered FAILED_PRECONDITION.
TEST(JakiroClientTest, ConcurrentCallersFollowARestartToMoreWorkers) {
  Restarted r = ConnectThenRestart(3);
  ASSERT_NE(r.client, nullptr);
  std::unique_ptr<JakiroClient>& c = r.client;
  std::unique_ptr<TestServer>& server = r.server;
  constexpr int kThreads = 4, kKeys = 100;
  std::atomic<int> ok{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kKeys; ++i) {
        const std::string key = absl::StrCat("t", t, "k", i);
        absl::Status s = PutThroughRestart(c.get(), key, "v");
        if (s.ok()) {
          ok.fetch_add(1);
        } else if (errors[t].empty()) {
          errors[t] = absl::StrCat(key, ": ", s.ToString());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << t;
  EXPECT_EQ(ok.load(), kThreads * kKeys);
  EXPECT_EQ(c->workers(0), 3);
  server->server->Shutdown();
  EXPECT_EQ(server->service->TotalStats().items,
            static_cast<uint64_t>(kThreads * kKeys));
}

// An async call routed by the old worker count, sent after the restart:
// its callback sees the retried call's result, not FAILED_PRECONDITION.
TEST(JakiroClientTest, AnAsyncCallMisroutedByARestartIsRetried) {
  Restarted r = ConnectThenRestart(2);
  ASSERT_NE(r.client, nullptr);
  std::unique_ptr<JakiroClient>& c = r.client;
  std::unique_ptr<TestServer>& server = r.server;
  JakiroClient& client = *c;
  // A key of worker 1 of 2, put asynchronously until the channel is back.
  std::string key;
  for (int i = 0;; ++i) {
    key = absl::StrCat("async", i);
    if (PartitionOfHash(KeyHash(key), 2) == 1) break;
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  absl::Status last;
  do {
    std::atomic<bool> done{false};
    client.PutAsync(key, "a", [&](absl::Status st) {
      last = st;
      done.store(true);
    });
    while (!done.load()) absl::SleepFor(absl::Microseconds(100));
    if (last.ok()) break;
    ASSERT_NE(last.code(), absl::StatusCode::kFailedPrecondition) << last;
    absl::SleepFor(absl::Milliseconds(10));
  } while (absl::Now() < give_up);
  ASSERT_TRUE(last.ok()) << last;
  server->server->Shutdown();
  EXPECT_EQ(server->service->partition_stats(1).items, 1u);
}

TEST(JakiroClientTest, StatusesEndToEnd) {
  TestServer server(2, /*max_value_bytes=*/1000);
  std::unique_ptr<JakiroClient> client = ConnectTo({&server});
  ASSERT_NE(client, nullptr);
  std::string v;
  EXPECT_EQ(client->Get("absent", &v).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->Delete("absent").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->Put("", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Put(std::string(251, 'k'), "v").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->Put("k", std::string(1001, 'v')).code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(client->Put("k", std::string(1000, 'v')).ok());
  ASSERT_TRUE(client->Get("k", &v).ok());
  EXPECT_EQ(v, std::string(1000, 'v'));
  ASSERT_TRUE(client->Delete("k").ok());
  EXPECT_EQ(client->Get("k", &v).code(), absl::StatusCode::kNotFound);
}

TEST(JakiroClientTest, LargeValuesTakeTheLargeResultPath) {
  TestServer server(1, /*max_value_bytes=*/4096);
  std::unique_ptr<JakiroClient> client = ConnectTo({&server}, RpcMode::kRemoteFetch);
  ASSERT_NE(client, nullptr);
  std::string big(4096, 'x');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(client->Put("big", big).ok());
  std::string v;
  ASSERT_TRUE(client->Get("big", &v).ok());
  EXPECT_EQ(v, big);
}

TEST(JakiroClientTest, GetAsync) {
  TestServer server(2);
  std::unique_ptr<JakiroClient> client = ConnectTo({&server});
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(client->Put(absl::StrCat("k", i), absl::StrCat("v", i)).ok());
  }
  std::vector<std::string> values(16);
  std::vector<std::promise<absl::Status>> done(16);
  for (int i = 0; i < 16; ++i) {
    client->GetAsync(absl::StrCat("k", i), &values[i],
                     [&done, i](absl::Status s) { done[i].set_value(s); });
  }
  for (int i = 0; i < 16; ++i) {
    EXPECT_TRUE(done[i].get_future().get().ok());
    EXPECT_EQ(values[i], absl::StrCat("v", i));
  }
}

// Synchronous calls reuse per-thread messages; a callback that a
// synchronous call runs while it waits may make synchronous calls too, and
// neither may see the other's key or value.
TEST(JakiroClientTest, SyncCallsInsideACallbackRunBySyncCall) {
  TestServer server(1);
  std::unique_ptr<JakiroClient> client =
      ConnectTo({&server}, RpcMode::kRemoteFetch, /*progress_thread=*/false);
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Put("a", "value of a").ok());
  ASSERT_TRUE(client->Put("b", std::string(300, 'b')).ok());
  ASSERT_TRUE(client->Put("c", "c").ok());
  bool in_outer = false;
  int nested_runs = 0;
  for (int round = 0; round < 200 && nested_runs < 5; ++round) {
    std::string async_value, nested_value, outer_value;
    bool done = false;
    client->GetAsync("a", &async_value, [&](absl::Status s) {
      EXPECT_TRUE(s.ok()) << s;
      if (in_outer) ++nested_runs;
      EXPECT_TRUE(client->Get("b", &nested_value).ok());
      EXPECT_TRUE(client->Put("d", absl::StrCat("round ", round)).ok());
      done = true;
    });
    in_outer = true;
    ASSERT_TRUE(client->Get("c", &outer_value).ok());
    in_outer = false;
    while (!done) client->Poll();
    EXPECT_EQ(outer_value, "c");
    EXPECT_EQ(async_value, "value of a");
    EXPECT_EQ(nested_value, std::string(300, 'b'));
    std::string d;
    ASSERT_TRUE(client->Get("d", &d).ok());
    EXPECT_EQ(d, absl::StrCat("round ", round));
  }
  EXPECT_GT(nested_runs, 0) << "no callback ran inside a synchronous call";
}

TEST(JakiroClientTest, ConsistentHashingSpreadsKeysOverTwoServers) {
  TestServer a(2);
  TestServer b(1);
  std::unique_ptr<JakiroClient> client = ConnectTo({&a, &b});
  ASSERT_NE(client, nullptr);
  constexpr int kKeys = 4000;
  int on_a = 0;
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = absl::StrCat("user", i);
    ASSERT_TRUE(client->Put(key, "v").ok());
    on_a += client->ServerOf(key) == 0;
  }
  for (int i = 0; i < kKeys; ++i) {
    std::string v;
    ASSERT_TRUE(client->Get(absl::StrCat("user", i), &v).ok());
  }
  // 160 virtual nodes each: within 15% of an even split.
  EXPECT_GT(on_a, kKeys * 35 / 100);
  EXPECT_LT(on_a, kKeys * 65 / 100);
  a.server->Shutdown();
  b.server->Shutdown();
  EXPECT_EQ(a.service->TotalStats().items, static_cast<uint64_t>(on_a));
  EXPECT_EQ(b.service->TotalStats().items,
            static_cast<uint64_t>(kKeys - on_a));
}

TEST(JakiroClientTest, RingMovesOnlyTheKeysOfARemovedServer) {
  TestServer a(1), b(1), c(1);
  std::unique_ptr<JakiroClient> three = ConnectTo({&a, &b, &c});
  std::unique_ptr<JakiroClient> two = ConnectTo({&a, &c});
  ASSERT_NE(three, nullptr);
  ASSERT_NE(two, nullptr);
  int moved = 0, on_b = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string key = absl::StrCat("user", i);
    const int s3 = three->ServerOf(key);  // 0=a, 1=b, 2=c
    const int s2 = two->ServerOf(key);    // 0=a, 1=c
    if (s3 == 1) {
      ++on_b;
      continue;
    }
    moved += (s3 == 0) != (s2 == 0);
  }
  EXPECT_EQ(moved, 0);
  EXPECT_GT(on_b, 600);
  EXPECT_LT(on_b, 1400);
}

// With a calibrated profile (here a synthetic one: calls/s flat in F, best
// at R = 3), every channel is tuned online: R and F move from the channel's
// 5 / 256 to the profile's optimum for Jakiro's small results (R = 3, the
// smallest candidate F = 128), and every value still comes back right.
TEST(JakiroClientTest, AProfileTunesEveryChannelOnline) {
  tuner::SyntheticSpec spec;
  spec.ops = [](int r, uint32_t, uint32_t) {
    return 1e6 * (1.0 - 0.05 * std::abs(r - 3));
  };
  absl::StatusOr<tuner::Profile> profile =
      tuner::Profile::FromProto(tuner::MakeSyntheticProto(spec), "shm");
  ASSERT_TRUE(profile.ok()) << profile.status();
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/jakiro_profile.txt");
  ASSERT_TRUE(profile->Save(path).ok());

  TestServer a(1), b(1);
  JakiroClientOptions o;
  o.servers = {a.server->address(), b.server->address()};
  o.max_value_bytes = 4096;
  o.profile = path;
  o.tuner_interval = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<JakiroClient>> c = JakiroClient::Connect(o);
  ASSERT_TRUE(c.ok()) << c.status();
  JakiroClient* client = c->get();
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(client->Put(absl::StrCat("k", i), std::string(32, 'a' + i % 26)).ok());
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  auto tuned = [&] {
    for (int s = 0; s < 2; ++s) {
      if (client->tuner(s) == nullptr ||
          client->tuner(s)->stats().reselections == 0) {
        return false;
      }
    }
    return true;
  };
  int gets = 0;
  while (!tuned() && absl::Now() < give_up) {
    std::string v;
    const int i = gets++ % 100;
    ASSERT_TRUE(client->Get(absl::StrCat("k", i), &v).ok());
    ASSERT_EQ(v, std::string(32, 'a' + i % 26));
  }
  ASSERT_TRUE(tuned()) << gets << " gets";
  for (int s = 0; s < 2; ++s) {
    const tuner::OnlineTunerStats ts = client->tuner(s)->stats();
    EXPECT_EQ(ts.retries, 3) << s;
    EXPECT_EQ(ts.fetch_size, 128u) << s;
    // Applied to the channel, not only chosen.
    EXPECT_EQ(client->channel(s).retries(), 3) << s;
    EXPECT_EQ(client->channel(s).fetch_size(), 128u) << s;
  }
  EXPECT_EQ(client->TotalStats().calls_failed, 0u);

  // A profile that is not there, or made on another provider, is an error
  // at connect that names the file.
  o.profile = "/nonexistent/profile.txt";
  c = JakiroClient::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/profile.txt"),
            std::string::npos)
      << c.status();
  spec.provider = "verbs";
  ASSERT_TRUE(tuner::Profile::FromProto(tuner::MakeSyntheticProto(spec), "")
                  ->Save(path)
                  .ok());
  o.profile = path;
  c = JakiroClient::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition)
      << c.status();

  // With provider "auto" the profile is checked against the provider it
  // picks on this host, not skipped.
  absl::StatusOr<std::string> picked = transport::Provider::ResolveName("auto");
  ASSERT_TRUE(picked.ok()) << picked.status();
  spec.provider = *picked == "shm" ? "verbs" : "shm";
  ASSERT_TRUE(tuner::Profile::FromProto(tuner::MakeSyntheticProto(spec), "")
                  ->Save(path)
                  .ok());
  o.channel.provider = "auto";
  c = JakiroClient::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition)
      << c.status();
}

TEST(JakiroClientTest, BadOptions) {
  JakiroClientOptions o;
  EXPECT_EQ(JakiroClient::Connect(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.servers = {"/x", "/x"};
  EXPECT_EQ(JakiroClient::Connect(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.servers = {"/nonexistent/jakiro.sock"};
  absl::StatusOr<std::unique_ptr<JakiroClient>> c = JakiroClient::Connect(o);
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/jakiro.sock"),
            std::string::npos)
      << c.status();
}

}  // namespace
}  // namespace kvstore
}  // namespace rfrpc
