// Copyright 2026 The rfrpc Authors.
//
// The fault-injecting provider does what each knob says, and nothing when
// no knob is set.

#include "transport/testing/fault_injection.h"

#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace testing {
namespace {

struct Pair {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<CompletionQueue> client_cq, server_cq;
  std::unique_ptr<MemoryRegion> client_mem, server_mem;
  std::unique_ptr<Connection> client, server;
  RemoteRegion target() const { return client->peer().regions[0]; }
};

void MakePair(const std::string& name, Pair* p) {
  auto provider = Provider::Open(name, {});
  ASSERT_TRUE(provider.ok()) << provider.status();
  p->provider = std::move(*provider);
  EXPECT_EQ(p->provider->name(), "faulty:shm");
  p->listener = *p->provider->Listen("");
  p->client_cq = *p->provider->CreateCompletionQueue({});
  p->server_cq = *p->provider->CreateCompletionQueue({});
  p->client_mem = *p->provider->AllocateMemory(4096);
  p->server_mem = *p->provider->AllocateMemory(4096);
  ConnectionSetup cs;
  cs.cq = p->client_cq.get();
  absl::StatusOr<std::unique_ptr<Connection>> client;
  std::thread t([&] { client = p->provider->Connect(p->listener->address(), cs); });
  auto in = p->listener->Next(absl::Seconds(10));
  ASSERT_TRUE(in.ok()) << in.status();
  ConnectionSetup ss;
  ss.cq = p->server_cq.get();
  ss.exposed.push_back(ExposedRegion{p->server_mem.get(), 0, 0, true, true});
  auto server = (*in)->Accept(ss);
  t.join();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE(client.ok()) << client.status();
  p->client = std::move(*client);
  p->server = std::move(*server);
}

class FaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    knobs_ = FaultKnobs::Named("unit");
    knobs_->Reset();
    MakePair("faulty@unit:shm", &p_);
  }
  absl::Status Write(uint64_t wr_id, uint32_t len, uint64_t off = 0) {
    WorkRequest wr = WorkRequest::Write(wr_id, p_.client_mem.get(), 0, len,
                                        p_.target(), off);
    return p_.client->Post({&wr, 1});
  }
  absl::StatusOr<Completion> WaitOne(absl::Duration t = absl::Seconds(5)) {
    Completion c;
    absl::Status s = p_.client_cq->Wait(&c, t);
    if (!s.ok()) return s;
    return c;
  }

  FaultKnobs* knobs_ = nullptr;
  Pair p_;
};

TEST_F(FaultInjectionTest, PassesThroughWithNoKnobs) {
  std::memset(p_.client_mem->data(), 'a', 64);
  ASSERT_TRUE(Write(1, 64).ok());
  auto c = WaitOne();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->wr_id, 1u);
  EXPECT_TRUE(c->ok());
  EXPECT_EQ(c->connection, p_.client.get()) << "the wrapper, not the inner";
  EXPECT_EQ(std::string(p_.server_mem->data(), 64), std::string(64, 'a'));
  const FaultKnobs::Counters k = knobs_->counters();
  EXPECT_EQ(k.posts, 1u);
  EXPECT_EQ(k.completions, 1u);
  EXPECT_EQ(k.connections_made, 2u);
  EXPECT_EQ(knobs_->live_connections(), 2u);
  EXPECT_EQ(knobs_->LivePeers().size(), 2u);
}

TEST_F(FaultInjectionTest, UnknownNamesAreInvalidArgument) {
  EXPECT_EQ(Provider::Open("faulty", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Provider::Open("faulty@x:nosuch", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FaultInjectionTest, DropsCompletions) {
  knobs_->DropNextCompletions(1);
  ASSERT_TRUE(Write(1, 8).ok());
  EXPECT_EQ(WaitOne(absl::Milliseconds(50)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(Write(2, 8).ok());
  auto c = WaitOne();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->wr_id, 2u);
  EXPECT_EQ(knobs_->counters().completions_dropped, 1u);
}

TEST_F(FaultInjectionTest, DelaysCompletionsInOrder) {
  knobs_->set_completion_delay(absl::Milliseconds(30), absl::Milliseconds(40));
  const absl::Time start = absl::Now();
  ASSERT_TRUE(Write(1, 8).ok());
  ASSERT_TRUE(Write(2, 8).ok());
  EXPECT_EQ(p_.client_cq->Poll(absl::Span<Completion>()), 0);
  auto c1 = WaitOne();
  auto c2 = WaitOne();
  ASSERT_TRUE(c1.ok() && c2.ok());
  EXPECT_EQ(c1->wr_id, 1u);
  EXPECT_EQ(c2->wr_id, 2u);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(30));
  EXPECT_EQ(knobs_->counters().completions_delayed, 2u);
}

TEST_F(FaultInjectionTest, FailsPostsWithoutExecuting) {
  knobs_->FailNextPosts(1);
  std::memset(p_.client_mem->data(), 'b', 8);
  EXPECT_EQ(Write(1, 8).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(p_.server_mem->data()[0], 0) << "a failed post executed";
  knobs_->set_post_error(absl::StatusCode::kInternal);
  knobs_->FailNextPosts(1);
  EXPECT_EQ(Write(2, 8).code(), absl::StatusCode::kInternal);
  ASSERT_TRUE(Write(3, 8).ok());
  EXPECT_EQ(p_.server_mem->data()[0], 'b');
  EXPECT_EQ(knobs_->counters().posts_failed, 2u);
}

TEST_F(FaultInjectionTest, FailsTheConnectionAndThePeerLearns) {
  knobs_->FailConnectionAtPost(2);
  ASSERT_TRUE(Write(1, 8).ok());
  ASSERT_TRUE(WaitOne().ok());
  EXPECT_EQ(Write(2, 8).code(), absl::StatusCode::kUnavailable);
  auto c = WaitOne();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status, WcStatus::kFlushed);
  EXPECT_EQ(p_.client->status().code(), absl::StatusCode::kUnavailable);
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (p_.server->ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(p_.server->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(knobs_->counters().connections_failed, 1u);
}

TEST_F(FaultInjectionTest, FailAllConnections) {
  knobs_->FailAllConnections();
  EXPECT_FALSE(p_.client->ok());
  EXPECT_FALSE(p_.server->ok());
}

TEST_F(FaultInjectionTest, CorruptsAWriteButNotTheSource) {
  std::memset(p_.client_mem->data(), 'c', 64);
  knobs_->CorruptNextWrite(3, 0x01);
  ASSERT_TRUE(Write(1, 64).ok());
  ASSERT_TRUE(WaitOne().ok());
  std::string want(64, 'c');
  want[3] ^= 0x01;
  EXPECT_EQ(std::string(p_.server_mem->data(), 64), want);
  EXPECT_EQ(std::string(p_.client_mem->data(), 64), std::string(64, 'c'));
  // Inline WRITEs too.
  knobs_->CorruptNextWrite(0, 0x02);
  WorkRequest wr = WorkRequest::Write(2, nullptr, 0, 8, p_.target(), 100);
  wr.inline_write = true;
  const char bytes[8] = {'1', '2', '3', '4', '5', '6', '7', '8'};
  wr.inline_data = bytes;
  ASSERT_TRUE(p_.client->Post({&wr, 1}).ok());
  ASSERT_TRUE(WaitOne().ok());
  EXPECT_EQ(std::string(p_.server_mem->data() + 100, 8), "32345678");
  EXPECT_EQ(knobs_->counters().writes_corrupted, 2u);
}

TEST_F(FaultInjectionTest, CorruptsAReadResult) {
  std::memset(p_.server_mem->data(), 'd', 64);
  knobs_->CorruptNextRead(2, 0x80);
  WorkRequest wr = WorkRequest::Read(1, p_.client_mem.get(), 1024, 16,
                                     p_.target(), 0);
  ASSERT_TRUE(p_.client->Post({&wr, 1}).ok());
  auto c = WaitOne();
  ASSERT_TRUE(c.ok());
  std::string want(16, 'd');
  want[2] ^= static_cast<char>(0x80);
  EXPECT_EQ(std::string(p_.client_mem->data() + 1024, 16), want);
  EXPECT_EQ(std::string(p_.server_mem->data(), 16), std::string(16, 'd'));
  EXPECT_EQ(knobs_->counters().reads_corrupted, 1u);
}

TEST_F(FaultInjectionTest, InterruptWakesAWaitThatHoldsDelayedCompletions) {
  knobs_->set_completion_delay(absl::Seconds(5), absl::Seconds(5));
  ASSERT_TRUE(Write(1, 8).ok());
  std::thread t([&] {
    absl::SleepFor(absl::Milliseconds(50));
    p_.client_cq->Interrupt();
  });
  const absl::Time start = absl::Now();
  EXPECT_EQ(WaitOne(absl::Seconds(10)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  t.join();
}

}  // namespace
}  // namespace testing
}  // namespace transport
}  // namespace rfrpc
