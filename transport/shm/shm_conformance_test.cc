// Copyright 2026 The rfrpc Authors.
//
// Runs the provider conformance suite on shm, plus shm-specific behaviour
// the suite cannot require of every provider.

#include <sys/socket.h>

#include <memory>
#include <thread>

#include "gtest/gtest.h"
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
  p.liveness_bound = absl::Milliseconds(100);
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

TEST(ShmProviderTest, PostListLongerThanMaxOutstandingIsRefused) {
  Shm shm;
  shm.Connect({}, 2);
  const RemoteRegion r = shm.client->peer().regions[0];
  std::vector<WorkRequest> list(3, WorkRequest::Write(1, shm.mem.get(), 0, 8,
                                                      r, 0));
  EXPECT_EQ(shm.client->Post(list).code(),
            absl::StatusCode::kResourceExhausted);
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

TEST(ShmProviderTest, ListenerAddressForms) {
  auto p = *Provider::Open("shm", {});
  auto abstract = p->Listen("@rfrpc-shm-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(abstract.ok()) << abstract.status();
  EXPECT_EQ((*abstract)->address()[0], '@');
  auto fresh = p->Listen("");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(p->Listen((*abstract)->address()).status().code(),
            absl::StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace testing
}  // namespace transport
}  // namespace rfrpc
