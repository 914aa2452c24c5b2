// Copyright 2026 The rfrpc Authors.
//
// End-to-end RF-RPC scenarios: a server and channels in one process (and
// peer processes for the kill tests), every reply checked against its
// request. Runs on the shm provider by default; the Soft-RoCE VM suite runs
// it on verbs with RFRPC_TEST_PROVIDER=verbs RFRPC_TEST_ADDRESS=<ip>:0.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "rpc/wire_format.h"
#include "tests/test_service.h"

namespace rfrpc {
namespace testing {
namespace {

class RpcE2eTest : public ::testing::Test {
 protected:
  void StartServer(int workers, ServerOptions opts = {}) {
    opts.provider = Provider();
    opts.address = ListenAddress();
    opts.workers = workers;
    opts.idle_spin_rounds = 200;
    server_ = std::make_unique<Server>(opts);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  std::unique_ptr<Channel> Connect(RpcMode mode, ChannelOptions opts = {}) {
    opts.provider = Provider();
    opts.mode = mode;
    // Correctness, not latency (qemu TCG on a busy host is slow). Tests that
    // check deadlines set their own.
    opts.default_timeout = absl::Seconds(120);
    absl::StatusOr<std::unique_ptr<Channel>> c =
        Channel::Create(server_->address(), opts);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  TestService service_;
  std::unique_ptr<Server> server_;
};

void ExpectEcho(Channel* ch, uint64_t id, size_t size, RpcMode* used = nullptr) {
  TestRequest req;
  req.set_id(id);
  req.set_payload(ExpectedPayload(id + 7, size));
  TestResponse resp;
  ClientContext ctx;
  absl::Status s = CallEcho(ch, &ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(resp.id(), id);
  EXPECT_EQ(resp.payload(), req.payload());
  if (used != nullptr) *used = ctx.mode_used();
}

TEST_F(RpcE2eTest, EchoInEveryMode) {
  StartServer(1);
  for (RpcMode mode : {RpcMode::kRemoteFetch, RpcMode::kServerReply,
                       RpcMode::kHybrid}) {
    SCOPED_TRACE(RpcModeName(mode));
    std::unique_ptr<Channel> ch = Connect(mode);
    ASSERT_NE(ch, nullptr);
    for (uint64_t i = 1; i <= 200; ++i) {
      RpcMode used;
      ExpectEcho(ch.get(), i, i % 64, &used);
      if (mode == RpcMode::kServerReply) {
        EXPECT_EQ(used, RpcMode::kServerReply);
      }
      if (mode == RpcMode::kRemoteFetch) {
        EXPECT_EQ(used, RpcMode::kRemoteFetch);
      }
    }
    ChannelStats st = ch->stats();
    EXPECT_EQ(st.calls, 200u);
    EXPECT_EQ(st.calls_failed, 0u);
    if (mode == RpcMode::kRemoteFetch) {
      EXPECT_EQ(st.calls_remote_fetch, 200u);
      EXPECT_GE(st.rdma_reads, 200u);
    }
    if (mode == RpcMode::kServerReply) {
      EXPECT_EQ(st.calls_server_reply, 200u);
    }
  }
  EXPECT_GE(server_->stats().calls_server_reply, 200u);
}

// What a call posts (docs/rpc.md): WRITEs within max_inline go inline, a
// post list is signaled once signal_every WRITEs went unsignaled (READs
// always are), and a call's
// request goes in one post list with its doorbell, each READ in one of its
// own. The counts are the transport's own (ChannelStats::wqes and friends).
// The runtime R and F: SetFetchParams checks what Channel::Create checks,
// with the same message, and a bad value changes nothing.
TEST_F(RpcE2eTest, SetFetchParamsChecksWhatCreateChecks) {
  StartServer(1);
  auto ch = Connect(RpcMode::kRemoteFetch);
  ASSERT_NE(ch, nullptr);
  const struct {
    int retries;
    uint32_t fetch_size;
  } bad[] = {{0, 256}, {(1 << 20) + 1, 256}, {5, 8}, {5, (1u << 24) + 1}};
  for (const auto& b : bad) {
    ChannelOptions o;
    o.fetch.retries = b.retries;
    o.fetch.size = b.fetch_size;
    const absl::Status want = ValidateChannelOptions(o);
    ASSERT_FALSE(want.ok());
    const absl::Status got = ch->SetFetchParams(b.retries, b.fetch_size);
    EXPECT_EQ(got.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(got.message(), absl::StrCat("SetFetchParams: ", want.message()));
    EXPECT_EQ(ch->retries(), ChannelOptions().fetch.retries);
    EXPECT_EQ(ch->fetch_size(), ChannelOptions().fetch.size);
  }
  ASSERT_TRUE(ch->SetFetchParams(3, 512).ok());
  EXPECT_EQ(ch->retries(), 3);
  EXPECT_EQ(ch->fetch_size(), 512u);
  ExpectEcho(ch.get(), 1, 2000);
}

TEST_F(RpcE2eTest, WhatACallPostsFollowsInlineAndSignalOptions) {
  StartServer(1);
  struct Case {
    uint32_t max_inline;
    int signal_every;
    bool post_lists;
  };
  for (const Case& c : {Case{128, 16, true}, Case{0, 16, true},
                        Case{128, 1, true}, Case{128, 16, false}}) {
    SCOPED_TRACE(absl::StrCat("max_inline ", c.max_inline, " signal_every ",
                              c.signal_every, " post_lists ", c.post_lists));
    ChannelOptions opts;
    opts.max_inline = c.max_inline;
    opts.signal_every = c.signal_every;
    opts.post_lists = c.post_lists;
    std::unique_ptr<Channel> ch = Connect(RpcMode::kRemoteFetch, opts);
    ASSERT_NE(ch, nullptr);
    for (uint64_t i = 0; i < 20; ++i) ExpectEcho(ch.get(), i, 8);
    const ChannelStats a = ch->stats();
    constexpr int kCalls = 400;
    for (uint64_t i = 0; i < kCalls; ++i) ExpectEcho(ch.get(), i, 8);
    const ChannelStats b = ch->stats();
    const uint64_t writes = b.rdma_writes - a.rdma_writes;
    const uint64_t reads = b.rdma_reads - a.rdma_reads;
    const uint64_t wqes = b.work.wqes - a.work.wqes;
    const uint64_t doorbells = b.work.doorbells - a.work.doorbells;
    const uint64_t inlined = b.work.inline_writes - a.work.inline_writes;
    const uint64_t signaled = b.work.signaled - a.work.signaled;
    // The rpc layer's counts and the transport's agree.
    EXPECT_EQ(wqes, writes + reads);
    EXPECT_GE(writes, static_cast<uint64_t>(kCalls));
    EXPECT_GE(reads, static_cast<uint64_t>(kCalls));
    // A request and its doorbell ring in one post list, every READ in one
    // of its own. A ring on its own (a re-ring of a request unanswered for
    // 1 ms, or a hot post found late) adds one.
    if (c.post_lists) {
      EXPECT_LE(doorbells, kCalls + reads + (b.rings - a.rings));
    } else {
      EXPECT_EQ(doorbells, wqes);  // One doorbell each.
    }
    // Every WRITE here is small (a request of ~40 bytes, a doorbell word).
    EXPECT_EQ(inlined, c.max_inline == 0 ? 0u : writes);
    if (c.signal_every == 1) {
      // Every post list is signaled, at its last request.
      EXPECT_EQ(signaled, doorbells);
    } else {
      // READs, plus one WRITE in 16 to 18: a post list of up to 3 WRITEs
      // that reaches 16 unsignaled is signaled once and the count restarts
      // (it also runs on across the warm-up, hence the 1).
      EXPECT_GE(signaled, reads + writes / 18 - 1);
      EXPECT_LE(signaled, reads + writes / 16 + 1);
    }
  }
}

// Header READs of several slots due in the same progress round share one
// post list (one doorbell). 16 async calls at a time on 16 slots, each
// held 200 us by the one worker, fetched the paper's way (at once, then
// backing off, busy_wait: no longer pauses for long waits): several slots
// wait at once, and their READs fall due together.
TEST_F(RpcE2eTest, ReadsDueTogetherShareADoorbell) {
  StartServer(1);
  ChannelOptions opts;
  opts.fetch.adaptive_delay = false;
  opts.busy_wait = true;
  opts.slots_per_connection = 16;
  std::unique_ptr<Channel> ch = Connect(RpcMode::kRemoteFetch, opts);
  ASSERT_NE(ch, nullptr);
  static const uint32_t kEcho = MethodId(kEchoMethod);
  constexpr int kCalls = 64;
  const ChannelStats a = ch->stats();
  std::vector<TestResponse> resps(kCalls);
  std::atomic<int> ok{0}, done{0};
  for (int i = 0; i < kCalls; ++i) {
    TestRequest req;
    req.set_id(i);
    req.set_delay_ns(200000);
    ch->CallAsync(kEcho, req, &resps[i], nullptr, [&, i](absl::Status s) {
      if (s.ok() && resps[i].id() == static_cast<uint64_t>(i)) ++ok;
      ++done;
    });
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(60)));
  EXPECT_EQ(ok.load(), kCalls);
  const ChannelStats b = ch->stats();
  const uint64_t reads = b.rdma_reads - a.rdma_reads;
  const uint64_t doorbells = b.work.doorbells - a.work.doorbells;
  // Each request goes in a list of its own (with its ring, if any); a
  // re-ring (a request unanswered for 1 ms: the last of 16 queued at a
  // worker under qemu) makes one more: the READs' lists are at most the
  // rest.
  const uint64_t other_lists = kCalls + (b.rerings - a.rerings);
  ASSERT_GE(doorbells, other_lists);
  const uint64_t read_lists = doorbells - other_lists;
  std::printf("%llu READs in at most %llu post lists\n",
              static_cast<unsigned long long>(reads),
              static_cast<unsigned long long>(read_lists));
  // Every call was fetched (on shm ~100 READs a call; under qemu 1.6-3,
  // in far fewer lists: 104 READs in at most 12).
  EXPECT_GE(reads, static_cast<uint64_t>(kCalls));
  // One READ a list would make read_lists == reads (more with rings).
  EXPECT_LT(read_lists * 5, reads * 4);
}

// An idle client costs nothing: once its async calls are done, the
// channel's progress thread sleeps instead of polling its completion queue
// (ChannelStats::cq_polls stands still), and so does a channel used for
// sync calls between them.
TEST_F(RpcE2eTest, AnIdleChannelDoesNotPoll) {
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kRemoteFetch);
  ASSERT_NE(ch, nullptr);
  static const uint32_t kEcho = MethodId(kEchoMethod);
  constexpr int kCalls = 100;
  std::vector<TestResponse> resps(kCalls);
  std::atomic<int> done{0};
  for (int i = 0; i < kCalls; ++i) {
    TestRequest req;
    req.set_id(i);
    ch->CallAsync(kEcho, req, &resps[i], nullptr,
                  [&](absl::Status s) { ++done; });
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(60)));
  for (uint64_t i = 0; i < 10; ++i) ExpectEcho(ch.get(), i, 8);
  const uint64_t busy = ch->stats().work.cq_polls;
  EXPECT_GT(busy, 0u);  // Counted at all.
  absl::SleepFor(absl::Milliseconds(50));  // The progress thread goes idle.
  const uint64_t before = ch->stats().work.cq_polls;
  absl::SleepFor(absl::Milliseconds(300));
  const uint64_t after = ch->stats().work.cq_polls;
  EXPECT_EQ(after, before) << "an idle channel polled " << (after - before)
                           << " times in 300 ms";
}

// A caller waiting for a long call does not spin for all of it: after
// 1 ms it sleeps a share of the wait between polls (ChannelOptions::
// busy_wait false, the default). Its thread's CPU time over a 100 ms call
// stays a small part of the wait (load on the host only lowers it).
TEST_F(RpcE2eTest, ALongCallDoesNotCostItsCallerACore) {
  StartServer(1);
  for (RpcMode mode : {RpcMode::kRemoteFetch, RpcMode::kServerReply}) {
    SCOPED_TRACE(RpcModeName(mode));
    std::unique_ptr<Channel> ch = Connect(mode);
    ASSERT_NE(ch, nullptr);
    ExpectEcho(ch.get(), 1, 8);
    // Twice: the second call's method is known to be long, so in
    // server-reply its push wakes the caller (ASleepingCallerIsWokenByItsPush).
    for (int round = 0; round < 2; ++round) {
      TestRequest req;
      req.set_id(2);
      req.set_sleep_ms(100);  // The handler sleeps: the server's core is free.
      TestResponse resp;
      timespec cpu0, cpu1;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
      const absl::Time start = absl::Now();
      ClientContext ctx;
      ASSERT_TRUE(CallEcho(ch.get(), &ctx, req, &resp).ok());
      const absl::Duration wall = absl::Now() - start;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
      const absl::Duration cpu =
          absl::DurationFromTimespec(cpu1) - absl::DurationFromTimespec(cpu0);
      std::printf(
          "%s: a 100 ms call (%s) took %s, its caller's thread %s of CPU\n",
          std::string(RpcModeName(mode)).c_str(),
          round == 0 ? "first" : "second", absl::FormatDuration(wall).c_str(),
          absl::FormatDuration(cpu).c_str());
      EXPECT_EQ(resp.id(), 2u);
      EXPECT_GE(wall, absl::Milliseconds(100));
      // Under qemu TCG (verbs in the Soft-RoCE VM) every poll costs ~100x
      // more: each of the ~100 wake-ups of a 100 ms wait took ~0.2 ms there
      // (rf 17-23 ms in all, server-reply 10-11 ms). Spinning, it is ~100 ms.
      const double share = Provider() == "shm" ? 0.25 : 0.5;
      EXPECT_LT(cpu, wall * share)
          << "caller used " << cpu << " of CPU in " << wall;
      // Bounded cost: about a sixteenth of the wait, plus timer slack and
      // scheduling (generous: a shared 2-core host).
      EXPECT_LT(wall, absl::Milliseconds(100) * 1.5) << wall;
    }
  }
}

// A sync caller of a long call in server-reply sleeps on its connection's
// completion queue, and the server's push wakes it (wire::
// kRequestFlagNotify): the call returns when its result lands, not at the
// end of a timed sleep (up to 2 ms later). Only calls of a method whose
// last call was long ask for it: a fast call's push wakes nobody.
TEST_F(RpcE2eTest, ASleepingCallerIsWokenByItsPush) {
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kServerReply);
  ASSERT_NE(ch, nullptr);
  auto call = [&](uint64_t id, int sleep_ms) -> absl::Duration {
    TestRequest req;
    req.set_id(id);
    req.set_sleep_ms(sleep_ms);
    TestResponse resp;
    ClientContext ctx;
    const absl::Time start = absl::Now();
    const absl::Status s = CallEcho(ch.get(), &ctx, req, &resp);
    const absl::Duration wall = absl::Now() - start;
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(resp.id(), id);
    return wall;
  };
  // The server counts a push as it posts it, after the result landed.
  auto push_notifies = [&](uint64_t at_least) {
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (server_->stats().push_notifies < at_least && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    return server_->stats().push_notifies;
  };
  // The first long call teaches the channel that the method is long.
  call(1, 20);
  EXPECT_EQ(push_notifies(0), 0u);
  constexpr int kLong = 4;
  const ChannelStats a = ch->stats();
  std::vector<double> late_us;
  for (int i = 0; i < kLong; ++i) {
    late_us.push_back(absl::ToDoubleMicroseconds(call(2 + i, 20)) - 20000.0);
  }
  const ChannelStats b = ch->stats();
  EXPECT_EQ(push_notifies(kLong), static_cast<uint64_t>(kLong));
  // Each long call slept on the queue at least once (after 1 ms of waiting).
  EXPECT_GE(b.push_sleeps - a.push_sleeps, static_cast<uint64_t>(kLong));
  std::sort(late_us.begin(), late_us.end());
  std::printf(
      "%s: %d calls of 20 ms woken by their push: returned %.0f-%.0f us "
      "after the handler's 20 ms, %llu sleeps\n",
      Provider().c_str(), kLong, late_us.front(), late_us.back(),
      static_cast<unsigned long long>(b.push_sleeps - a.push_sleeps));
  // A fast call after them still asks (the method's last call was long);
  // the next ones do not.
  call(10, 0);
  const uint64_t after_first_fast = push_notifies(kLong + 1);
  EXPECT_EQ(after_first_fast, static_cast<uint64_t>(kLong + 1));
  for (int i = 0; i < 20; ++i) call(11 + i, 0);
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(server_->stats().push_notifies, after_first_fast);
}

// The same for async calls: the progress thread, with nothing else to
// drive, sleeps on the connection's queue until the push lands, and a new
// async call wakes it at once.
TEST_F(RpcE2eTest, AnAsyncLongCallsPushWakesTheProgressThread) {
  static const uint32_t kEcho = MethodId(kEchoMethod);
  // Fast calls go to a method of their own, never long: their pushes carry
  // no notify, so only WakeDriver's interrupt can end the driver's sleep.
  static const uint32_t kFast = MethodId(kEchoAgainMethod);
  ASSERT_NE(wire::ModeBucket(kEcho), wire::ModeBucket(kFast));
  // Echo runs on the handler pool, so the worker serves the fast calls
  // while a long one sleeps.
  ASSERT_TRUE(service_.SetBlocking("Echo").ok());
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kServerReply);
  ASSERT_NE(ch, nullptr);
  auto async_call = [&](uint64_t id, int sleep_ms, uint32_t method) {
    TestRequest req;
    req.set_id(id);
    req.set_sleep_ms(sleep_ms);
    TestResponse resp;
    // std::promise, not absl::Notification: TSan sees through the former
    // (the system's Abseil is not built with TSan).
    std::promise<absl::Status> done;
    std::future<absl::Status> result = done.get_future();
    const absl::Time start = absl::Now();
    ch->CallAsync(method, req, &resp, nullptr,
                  [&](absl::Status st) { done.set_value(st); });
    const absl::Status status = result.get();
    const absl::Duration wall = absl::Now() - start;
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_EQ(resp.id(), id);
    return wall;
  };
  async_call(1, 20, kEcho);  // The method is long from here on.
  const uint64_t before = server_->stats().push_notifies;
  const ChannelStats a = ch->stats();
  constexpr int kLong = 3;
  std::vector<double> late_us;
  for (int i = 0; i < kLong; ++i) {
    late_us.push_back(absl::ToDoubleMicroseconds(async_call(2 + i, 20, kEcho)) -
                      20000.0);
  }
  const ChannelStats b = ch->stats();
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (server_->stats().push_notifies < before + kLong &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(server_->stats().push_notifies - before,
            static_cast<uint64_t>(kLong));
  EXPECT_GE(b.push_sleeps - a.push_sleeps, static_cast<uint64_t>(kLong));
  std::sort(late_us.begin(), late_us.end());
  std::printf(
      "%s: %d async calls of 20 ms: callbacks ran %.0f-%.0f us after the "
      "handler's 20 ms, %llu push sleeps\n",
      Provider().c_str(), kLong, late_us.front(), late_us.back(),
      static_cast<unsigned long long>(b.push_sleeps - a.push_sleeps));
  // A long call in flight while fast ones start: they are not held up by
  // the progress thread's sleep on the queue (up to 10 ms each without
  // WakeDriver's interrupt). The yardstick is fast calls started the same
  // way (30 ms apart, so the driver and the server's worker have gone to
  // sleep in between) with no long call in flight, in the same round: on a
  // loaded host (CI runs this beside the other tests on 2 cores) a woken
  // thread that yields to a CPU hog waits a time slice, milliseconds, with
  // or without a long call, and the two sets see the same host.
  auto spaced_fast = [&](uint64_t first_id, int n) {
    std::vector<double> us;
    for (int i = 0; i < n; ++i) {
      // The driver is back asleep by now (8 times a sixteenth of 30 ms:
      // 10 ms at most).
      absl::SleepFor(absl::Milliseconds(30));
      us.push_back(absl::ToDoubleMicroseconds(async_call(first_id + i, 0, kFast)));
    }
    std::sort(us.begin(), us.end());
    return us;
  };
  // A round: 9 spaced fast calls alone, then one long call and 9 spaced
  // fast calls while it runs. "Held up": over 3 times the alone median
  // (at least 1 ms). The round passes when the calls during the long one
  // have their median under that and at most one more held up than alone.
  // Without the interrupt a fast call waits out the rest of the driver's
  // sleep (up to 10 ms). Measured with the interrupt removed: idle host,
  // 12 rounds of 12 failed, 6-7 of 9 held up (median 2.4-2.8 ms) against
  // 0 alone; beside 3 busy processes, 8 of 8 failed. With it, beside 3
  // busy processes, the first round failed in 2 runs of 6 and the second
  // passed (2-3 of 9 held up alone there too).
  constexpr int kFastCalls = 9;
  auto round = [&](int r) -> bool {
    const std::vector<double> alone = spaced_fast(1000 + 100 * r, kFastCalls);
    const double held_up_us = std::max(1000.0, 3 * alone[kFastCalls / 2]);
    auto held = [&](const std::vector<double>& us) {
      return static_cast<int>(
          us.end() - std::upper_bound(us.begin(), us.end(), held_up_us));
    };
    TestRequest slow;
    slow.set_id(50 + r);
    slow.set_sleep_ms(400);
    TestResponse slow_resp;
    std::promise<absl::Status> slow_done;
    std::future<absl::Status> slow_result = slow_done.get_future();
    ch->CallAsync(kEcho, slow, &slow_resp, nullptr,
                  [&](absl::Status st) { slow_done.set_value(st); });
    const std::vector<double> during =
        spaced_fast(2000 + 100 * r, kFastCalls);
    const int held_alone = held(alone);
    const int held_during = held(during);
    std::printf(
        "%s: round %d: spaced fast calls alone %.0f-%.0f us (median %.0f), "
        "during a long one %.0f-%.0f us (median %.0f); over %.0f us: %d "
        "alone, %d during\n",
        Provider().c_str(), r, alone.front(), alone.back(),
        alone[kFastCalls / 2], during.front(), during.back(),
        during[kFastCalls / 2], held_up_us, held_alone, held_during);
    const absl::Status slow_status = slow_result.get();
    EXPECT_TRUE(slow_status.ok()) << slow_status;
    EXPECT_EQ(slow_resp.id(), static_cast<uint64_t>(50 + r));
    return during[kFastCalls / 2] <= held_up_us &&
           held_during <= held_alone + 1;
  };
  // Not asserted under qemu TCG (verbs in the Soft-RoCE VM), whose timings
  // swing by milliseconds, nor under ASan/TSan: in a CI run under TSan every
  // fast call during a long one took 1.8-2.1 ms, 3-3.5 times its 0.6 ms
  // alone (woken, but slowly; unwoken ones spread over the 10 ms sleep).
  // There one round still runs the calls. The interrupt's effect on a
  // sleeping queue is also the conformance suite's
  // (WaitWokenLosesNoWakeUpWhileAnotherThreadPolls).
  const bool timed = Provider() == "shm" && !kSanitizerBuild;
  bool passed = false;
  for (int r = 0; r < (timed ? 4 : 1) && !passed; ++r) passed = round(r);
  if (timed) {
    EXPECT_TRUE(passed) << "fast calls were held up by the driver's sleep in "
                           "4 rounds";
  }
}

// The server's pushes (server-reply) go inline when the framed result fits
// ServerOptions::max_inline (128), and ServerStats::work counts them.
TEST_F(RpcE2eTest, SmallPushedResultsGoInline) {
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kServerReply);
  ASSERT_NE(ch, nullptr);
  for (uint32_t response_size : {8u, 1000u}) {
    SCOPED_TRACE(response_size);
    const ServerStats a = server_->stats();
    constexpr int kCalls = 100;
    for (int i = 0; i < kCalls; ++i) {
      TestRequest req;
      req.set_id(i);
      req.set_response_size(response_size);
      TestResponse resp;
      ClientContext ctx;
      ASSERT_TRUE(CallEcho(ch.get(), &ctx, req, &resp).ok());
      ASSERT_EQ(resp.payload(), ExpectedPayload(i, response_size));
    }
    // The worker counts a push right after posting it: wait for the last.
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (server_->stats().rdma_writes - a.rdma_writes < kCalls &&
           absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    absl::SleepFor(absl::Milliseconds(10));
    const ServerStats b = server_->stats();
    const uint64_t pushes = b.rdma_writes - a.rdma_writes;
    EXPECT_EQ(pushes, static_cast<uint64_t>(kCalls));
    EXPECT_EQ(b.work.wqes - a.work.wqes, pushes);
    EXPECT_EQ(b.work.signaled - a.work.signaled, pushes);
    EXPECT_EQ(b.work.inline_writes - a.work.inline_writes,
              response_size <= 64 ? pushes : 0u);
    EXPECT_GT(b.work.cq_polls, a.work.cq_polls);  // Workers poll their queue.
  }
}

TEST_F(RpcE2eTest, InlineAndSignalOptionsAreChecked) {
  StartServer(1);
  for (int bad : {0, 65}) {
    ChannelOptions opts;
    opts.provider = Provider();
    opts.signal_every = bad;
    absl::StatusOr<std::unique_ptr<Channel>> c =
        Channel::Create(server_->address(), opts);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find("signal_every"), std::string::npos)
        << c.status();
  }
  ChannelOptions opts;
  opts.provider = Provider();
  opts.max_inline = 4096;
  absl::StatusOr<std::unique_ptr<Channel>> c =
      Channel::Create(server_->address(), opts);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("max_inline"), std::string::npos)
      << c.status();
}

// fetch_delay_miss_target only moves where the first-fetch delay settles:
// out of (0, 0.5] it is refused, and at its largest every call still gets
// its own result.
TEST_F(RpcE2eTest, FetchDelayMissTargetIsCheckedAndCallsStayCorrect) {
  StartServer(1);
  for (double bad : {0.0, -0.1, 0.51}) {
    ChannelOptions opts;
    opts.provider = Provider();
    opts.fetch.delay_miss_target = bad;
    EXPECT_EQ(Channel::Create(server_->address(), opts).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
  ChannelOptions opts;
  opts.fetch.delay_miss_target = 0.5;
  std::unique_ptr<Channel> ch = Connect(RpcMode::kRemoteFetch, opts);
  ASSERT_NE(ch, nullptr);
  for (uint64_t i = 1; i <= 300; ++i) ExpectEcho(ch.get(), i, i % 100);
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.calls_remote_fetch, 300u);
  EXPECT_EQ(st.calls_failed, 0u);
}

// Seqs start where the client says (random by default; a server expecting 1
// would never take these calls) and wrap past 0, which is never used.
TEST_F(RpcE2eTest, SeqsStartAtFirstSeqAndWrapPastZero) {
  StartServer(1);
  for (RpcMode mode : {RpcMode::kRemoteFetch, RpcMode::kServerReply}) {
    SCOPED_TRACE(RpcModeName(mode));
    ChannelOptions opts;
    opts.first_seq = 0xfffffffeu;
    opts.slots_per_connection = 1;
    std::unique_ptr<Channel> ch = Connect(mode, opts);
    ASSERT_NE(ch, nullptr);
    for (uint64_t i = 1; i <= 6; ++i) ExpectEcho(ch.get(), i, 8, nullptr);
    EXPECT_EQ(ch->stats().calls_failed, 0u);
  }
}

TEST_F(RpcE2eTest, ResultsLargerThanFetchSizeTakeASecondRead) {
  StartServer(1);
  ChannelOptions opts;
  opts.fetch.size = 64;
  std::unique_ptr<Channel> ch = Connect(RpcMode::kRemoteFetch, opts);
  ASSERT_NE(ch, nullptr);
  TestRequest req;
  req.set_id(5);
  req.set_response_size(3000);
  TestResponse resp;
  ClientContext ctx;
  ASSERT_TRUE(CallEcho(ch.get(), &ctx, req, &resp).ok());
  EXPECT_EQ(resp.payload(), ExpectedPayload(5, 3000));
  EXPECT_EQ(ctx.rdma_reads(), ctx.fetches() + 1);
}

TEST_F(RpcE2eTest, LargeResultsArePushedAndOversizeIsAnError) {
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kRemoteFetch);
  ASSERT_NE(ch, nullptr);
  TestRequest req;
  req.set_id(9);
  req.set_response_size(20000);  // > 8 KiB: the large-entry path.
  TestResponse resp;
  ClientContext ctx;
  absl::Status s = CallEcho(ch.get(), &ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(resp.payload(), ExpectedPayload(9, 20000));
  EXPECT_EQ(ctx.mode_used(), RpcMode::kServerReply);

  req.set_response_size(200000);  // > the 64 KiB response slot.
  s = CallEcho(ch.get(), nullptr, req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("max_response_bytes"), std::string::npos) << s;
  // The connection still works.
  ExpectEcho(ch.get(), 10, 10);
}

TEST_F(RpcE2eTest, OversizeRequestIsRejectedLocally) {
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kHybrid);
  ASSERT_NE(ch, nullptr);
  TestRequest req;
  req.set_payload(std::string(10000, 'x'));  // > 4 KiB request slots.
  TestResponse resp;
  absl::Status s = CallEcho(ch.get(), nullptr, req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  ExpectEcho(ch.get(), 1, 1);
}

TEST_F(RpcE2eTest, HandlerErrorsAndUnknownMethodsReachTheCaller) {
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kHybrid);
  ASSERT_NE(ch, nullptr);
  TestRequest req;
  req.set_fail_code(static_cast<int>(absl::StatusCode::kNotFound));
  TestResponse resp;
  absl::Status s = CallEcho(ch.get(), nullptr, req, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "asked to fail");

  s = ch->Call(MethodId("/rfrpc.testing.Test/NoSuchMethod"), req, &resp,
               nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;

  // Bytes that do not parse as a TestRequest: the caller gets
  // INVALID_ARGUMENT naming the type, the server carries on.
  NotATestRequest bad;
  bad.set_text(std::string("\xff\xfe\xfd", 3));
  s = ch->Call(MethodId(kEchoMethod), bad, &resp, nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("rfrpc.testing.TestRequest"), std::string::npos)
      << s;
  EXPECT_EQ(server_->stats().calls_failed, 3u);
  ExpectEcho(ch.get(), 3, 3);
}

TEST_F(RpcE2eTest, ManyClientsManyWorkersEveryReplyChecked) {
  StartServer(2);
  constexpr int kClients = 4;
  constexpr int kCalls = 1500;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      ChannelOptions opts;
      opts.connections = 0;  // One per server worker.
      const RpcMode mode = t % 3 == 0   ? RpcMode::kRemoteFetch
                           : t % 3 == 1 ? RpcMode::kServerReply
                                        : RpcMode::kHybrid;
      std::unique_ptr<Channel> ch = Connect(mode, opts);
      if (ch == nullptr) {
        failures++;
        return;
      }
      absl::BitGen gen;
      for (int i = 0; i < kCalls; ++i) {
        TestRequest req;
        const uint64_t id = (uint64_t{static_cast<uint32_t>(t)} << 32) | i;
        req.set_id(id);
        req.set_payload(ExpectedPayload(id, absl::Uniform(gen, 0, 600)));
        if (i % 10 == 0) req.set_response_size(absl::Uniform(gen, 200, 12000));
        ClientContext ctx;
        ctx.set_shard(i);
        TestResponse resp;
        absl::Status s = CallEcho(ch.get(), &ctx, req, &resp);
        const std::string want = req.response_size() > 0
                                     ? ExpectedPayload(id, req.response_size())
                                     : req.payload();
        if (!s.ok() || resp.id() != id || resp.payload() != want ||
            resp.worker() != static_cast<uint32_t>(i % 2)) {
          if (failures++ < 5) {
            ADD_FAILURE() << "client " << t << " call " << i << ": " << s
                          << " id " << resp.id() << " worker " << resp.worker();
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server_->stats().calls, uint64_t{kClients} * kCalls);
}

TEST_F(RpcE2eTest, AsyncCallbacksAndFutures) {
  StartServer(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kHybrid);
  ASSERT_NE(ch, nullptr);
  constexpr int kCalls = 64;  // More than the 8 slots: some wait for one.
  std::vector<TestResponse> resps(kCalls);
  std::vector<absl::Status> statuses(kCalls);
  std::atomic<int> done{0};
  static const uint32_t kEcho = MethodId(kEchoMethod);
  for (int i = 0; i < kCalls; ++i) {
    TestRequest req;
    req.set_id(i);
    req.set_payload(ExpectedPayload(i, i));
    ch->CallAsync(kEcho, req, &resps[i], nullptr, [&, i](absl::Status s) {
      statuses[i] = s;
      ++done;
    });
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(20)));
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << i << ": " << statuses[i];
    EXPECT_EQ(resps[i].id(), static_cast<uint64_t>(i));
    EXPECT_EQ(resps[i].payload(), ExpectedPayload(i, i));
  }
  TestRequest req;
  req.set_id(77);
  TestResponse resp;
  std::future<absl::Status> f = ch->CallFuture(kEcho, req, &resp, nullptr);
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(resp.id(), 77u);
}

TEST_F(RpcE2eTest, WithoutAProgressThreadTheCallerPollsAsyncCalls) {
  StartServer(1);
  ChannelOptions opts;
  opts.progress_thread = false;
  for (RpcMode mode : {RpcMode::kRemoteFetch, RpcMode::kServerReply}) {
    SCOPED_TRACE(RpcModeName(mode));
    std::unique_ptr<Channel> ch = Connect(mode, opts);
    ASSERT_NE(ch, nullptr);
    constexpr int kCalls = 40;  // More than the 8 slots: some are queued.
    std::vector<TestResponse> resps(kCalls);
    std::vector<absl::Status> statuses(kCalls);
    std::thread::id caller = std::this_thread::get_id();
    int done = 0;  // Callbacks run on this thread, inside Poll.
    static const uint32_t kEcho = MethodId(kEchoMethod);
    for (int i = 0; i < kCalls; ++i) {
      TestRequest req;
      req.set_id(i);
      req.set_payload(ExpectedPayload(i, 32));
      ch->CallAsync(kEcho, req, &resps[i], nullptr, [&, i](absl::Status s) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        statuses[i] = s;
        ++done;
      });
    }
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (done < kCalls && absl::Now() < give_up) ch->Poll();
    ASSERT_EQ(done, kCalls);
    for (int i = 0; i < kCalls; ++i) {
      EXPECT_TRUE(statuses[i].ok()) << i << ": " << statuses[i];
      EXPECT_EQ(resps[i].id(), static_cast<uint64_t>(i));
      EXPECT_EQ(resps[i].payload(), ExpectedPayload(i, 32));
    }
    EXPECT_FALSE(ch->Poll());  // Nothing left to advance.
    ExpectEcho(ch.get(), 99, 16);  // Sync calls need no poller.
  }
}

TEST_F(RpcE2eTest, DeadlineExpiresAndTheSlotIsReusedAfterwards) {
  StartServer(1);
  ChannelOptions opts;
  opts.slots_per_connection = 1;
  std::unique_ptr<Channel> ch = Connect(RpcMode::kHybrid, opts);
  ASSERT_NE(ch, nullptr);
  TestRequest slow;
  slow.set_id(1);
  // 1.5 s of handler against a 20 ms deadline: far apart, so a loaded host
  // cannot make the result land before the deadline is noticed.
  slow.set_delay_ns(1500 * 1000 * 1000);
  TestResponse resp;
  ClientContext ctx;
  ctx.set_timeout(absl::Milliseconds(20));
  const absl::Time start = absl::Now();
  absl::Status s = CallEcho(ch.get(), &ctx, slow, &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  // The only slot is abandoned until the late result lands; then it serves.
  ClientContext ctx2;
  ctx2.set_timeout(absl::Seconds(5));
  TestRequest next;
  next.set_id(2);
  next.set_payload("after");
  s = CallEcho(ch.get(), &ctx2, next, &resp);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(resp.id(), 2u);
  EXPECT_EQ(resp.payload(), "after");
}

TEST_F(RpcE2eTest, HybridSwitchesToServerReplyAndBack) {
  // A server that never parks when idle (it yields instead): woken from a
  // park, quick replies would take tens of microseconds and hybrid would
  // rightly stay in server-reply.
  ServerOptions server_opts;
  server_opts.idle_park_after = absl::InfiniteDuration();
  StartServer(1, server_opts);
  // R = 20: on shm a READ takes ~100 ns, and this test is about the switch,
  // not about how a loaded host schedules the server.
  ChannelOptions opts;
  opts.fetch.retries = 20;
  // Remote fetching may wait up to 1 ms for a result before a call counts as
  // slow, so "fast again" means sub-millisecond replies, which hold even
  // when other tests share the two cores; 20 ms handlers are slow anyway.
  opts.fetch.max_delay = absl::Milliseconds(1);
  std::unique_ptr<Channel> ch = Connect(RpcMode::kHybrid, opts);
  ASSERT_NE(ch, nullptr);
  // Slow handler: results take far longer than R fetches. The first K (2)
  // calls are fetched; then the connection is in server-reply.
  int server_replied = 0;
  for (int i = 0; i < 10; ++i) {
    TestRequest req;
    req.set_id(i);
    req.set_delay_ns(20 * 1000 * 1000);  // 20 ms: slow on any fabric, even TCG.
    TestResponse resp;
    ClientContext ctx;
    ASSERT_TRUE(CallEcho(ch.get(), &ctx, req, &resp).ok());
    EXPECT_EQ(resp.id(), static_cast<uint64_t>(i));
    if (ctx.mode_used() == RpcMode::kServerReply) ++server_replied;
  }
  EXPECT_EQ(ch->connection_mode(0), RpcMode::kServerReply);
  EXPECT_EQ(ch->stats().switches_to_server_reply, 1u);
  // The server WRITEs back every result after the switch. The client takes
  // most from its reply slot, but a hybrid client also probes the server's
  // buffer now and then (to notice results that are fast again), and on a
  // slow fabric (qemu TCG) a probe can win the race with the WRITE.
  // (>= 7 of those 8: the counter of the last one may trail its WRITE.)
  EXPECT_GE(server_->stats().calls_server_reply, 7u);
  EXPECT_GE(server_replied, 1);
  // Fast again: it returns to remote fetching. (Whether it stays there
  // depends on how the host schedules the server; most calls are fetched.)
  int fetched = 0;
  for (int i = 0; i < 50; ++i) {
    RpcMode used;
    ExpectEcho(ch.get(), 100 + i, 8, &used);
    if (used == RpcMode::kRemoteFetch) ++fetched;
  }
  if (kSanitizerBuild) {
    // Under ASan/TSan the instrumented handler and client are several times
    // slower; whether replies then fit the remote-fetch budget is a timing
    // verdict, not a memory or race question. The calls above still ran the
    // switch code under the sanitizer.
    GTEST_SKIP() << "switch back depends on handler vs READ speed";
  }
  if (Provider() != "shm") {
    // How soon it switches back follows READ round trips against reply
    // times: under qemu TCG (verbs in the Soft-RoCE VM, READs of ~50 us,
    // replies of milliseconds on a busy host) it took 47 and 50 calls, and
    // a descheduled server may send it to server-reply again right after.
    // There, keep making fast calls until it has switched back (bounded);
    // whether it then stays is a timing verdict that holds on shm only.
    for (int i = 0; i < 2000 && ch->stats().switches_to_remote_fetch == 0; ++i) {
      ExpectEcho(ch.get(), 200 + i, 8);
    }
    EXPECT_GE(ch->stats().switches_to_remote_fetch, 1u);
    return;
  }
  const ChannelStats st = ch->stats();
  EXPECT_GE(st.switches_to_remote_fetch, 1u);
  // On shm most of the 50 calls are fetched.
  const int want_fetched = 25;
  EXPECT_GE(fetched, want_fetched) << "switches to SR " << st.switches_to_server_reply
                         << ", to RF " << st.switches_to_remote_fetch
                         << ", rtt " << st.fetch_rtt_ns << " ns, delay "
                         << st.fetch_delay_ns << " ns";
}

// The mode is per method (the paper keeps it per <client, RPC id>): a slow
// method switches to server-reply while a fast method on the same
// connection keeps remote fetching. (With one mode per connection, every
// fast call after the switch would be pushed.)
//
// A fast call can look slow on its own (more than R fetches while the host
// deschedules the worker), and K = 2 such calls switch the fast method too,
// rightly. So a fast call is judged only while the channel has made exactly
// one switch since every method was last fetched, and the slow method has
// been pushed: that one switch was the slow method's, and the fast call
// must have been fetched. A channel whose
// fast method switched before enough calls were judged is replaced by a
// fresh one (up to 8 tries).
TEST_F(RpcE2eTest, ASlowMethodSwitchesAloneToServerReply) {
  static const uint32_t kFast = MethodId(kEchoMethod);
  static const uint32_t kSlow = MethodId(kEchoAgainMethod);
  ASSERT_NE(wire::ModeBucket(kFast), wire::ModeBucket(kSlow))
      << "pick another name: the two methods share a mode bucket";
  ServerOptions server_opts;
  server_opts.idle_park_after = absl::InfiniteDuration();
  StartServer(1, server_opts);
  // R = 100: a fast call takes a few dozen READs on a quiet host (7 to 63
  // seen right after a slow one); a 50 ms call takes hundreds even backing
  // off.
  ChannelOptions opts;
  opts.fetch.retries = 100;
  opts.fetch.max_delay = absl::Milliseconds(1);
  int judged = 0;  // Fast calls judged.
  std::string trace;  // Per round: attempt, modes/fetches, switches.
  for (int attempt = 0; attempt < 8 && judged < 5; ++attempt) {
    std::unique_ptr<Channel> ch = Connect(RpcMode::kHybrid, opts);
    ASSERT_NE(ch, nullptr);
    // Warm-up: the client learns when fast results are ready (the adaptive
    // first-fetch delay). Until then it READs R times at once, which on a
    // loaded 2-core host can keep the worker off the core long enough to
    // make fast calls look slow (R + 2 READs each, seen with 6 tests).
    // Judging starts with every method fetched (a fast method that
    // switched during the warm-up is back), from the switch counts then.
    for (int w = 0; w < 200 || (w < 5000 && ch->connection_mode(0) !=
                                                RpcMode::kRemoteFetch);
         ++w) {
      ExpectEcho(ch.get(), 1000 + w, 8);
    }
    if (ch->connection_mode(0) != RpcMode::kRemoteFetch) continue;
    const ChannelStats base = ch->stats();
    const uint64_t pushed_before = server_->stats().calls_server_reply;
    int slow_pushed = 0, slow_calls = 0;
    int fast_unjudged = 0;  // Fast calls that may rightly have been pushed.
    bool fast_switched = false;
    for (int i = 0; i < 10 && !fast_switched; ++i) {
      TestRequest req;
      req.set_id(i);
      req.set_delay_ns(50 * 1000 * 1000);  // 50 ms: slow on any fabric.
      TestResponse resp;
      ClientContext slow_ctx;
      absl::Status s = ch->Call(kSlow, req, &resp, &slow_ctx);
      ASSERT_TRUE(s.ok()) << s;
      ++slow_calls;
      EXPECT_EQ(resp.id(), static_cast<uint64_t>(i));
      if (slow_ctx.mode_used() == RpcMode::kServerReply) ++slow_pushed;

      // A few fast calls after each slow one: the first may be slowed by
      // the worker's return from a 50 ms handler, the next ones reset the
      // fast method's count of consecutive slow calls.
      for (int f = 0; f < 4 && !fast_switched; ++f) {
        req.set_id(100 + 4 * i + f);
        req.set_delay_ns(0);
        ClientContext fast_ctx;
        s = ch->Call(kFast, req, &resp, &fast_ctx);
        ASSERT_TRUE(s.ok()) << s;
        EXPECT_EQ(resp.id(), static_cast<uint64_t>(100 + 4 * i + f));
        const ChannelStats st = ch->stats();
        absl::StrAppend(&trace, " a", attempt, "r", i, "f", f, ":slow ",
                        RpcModeName(slow_ctx.mode_used()), "/",
                        slow_ctx.fetches(), " fast ",
                        RpcModeName(fast_ctx.mode_used()), "/",
                        fast_ctx.fetches(), " sw ",
                        st.switches_to_server_reply, "/",
                        st.switches_to_remote_fetch);
        if (st.switches_to_server_reply != base.switches_to_server_reply + 1 ||
            st.switches_to_remote_fetch != base.switches_to_remote_fetch) {
          // Before the slow method's switch, or after the fast one's too.
          fast_switched = slow_pushed > 0;
          ++fast_unjudged;
          continue;
        }
        if (slow_pushed == 0) {
          ++fast_unjudged;
          continue;
        }
        ++judged;
        EXPECT_EQ(fast_ctx.mode_used(), RpcMode::kRemoteFetch)
            << "attempt " << attempt << " round " << i << " call " << f
            << ": a fast call was pushed while only the slow method had "
            << "switched";
      }
    }
    // The server pushed no judged fast call: at most one push per slow
    // call and per fast call not judged (one may have switched the fast
    // method too, before or after the slow one's switch; CI saw a fast
    // switch before the slow method's first push). Pushing by one mode per
    // connection, it would push every judged fast call too.
    const uint64_t pushed = server_->stats().calls_server_reply - pushed_before;
    EXPECT_LE(pushed, static_cast<uint64_t>(slow_calls + fast_unjudged))
        << "attempt " << attempt << trace;
    // And it did push: slow calls came back by server-reply.
    if (slow_pushed >= 3) {
      EXPECT_GE(pushed, 1u) << "attempt " << attempt;
    }
  }
  EXPECT_GE(judged, 5) << "the fast method kept switching too on this host:"
                        << trace;
}

TEST_F(RpcE2eTest, DuplicateMethodIdsAreRefused) {
  ServerOptions opts;
  opts.provider = Provider();
  Server server(opts);
  TestService a, b;
  ASSERT_TRUE(server.RegisterService(&a).ok());
  EXPECT_EQ(server.RegisterService(&b).code(), absl::StatusCode::kAlreadyExists);
}

// Bad options fail Channel::Create with ValidateChannelOptions' message
// before anything is opened (no server needed: the address is never used).
TEST(ChannelCreateTest, BadOptionsFailBeforeConnecting) {
  ChannelOptions o;
  o.fetch.size = 8;
  absl::StatusOr<std::unique_ptr<Channel>> c =
      Channel::Create("/nonexistent/rfrpc.sock", o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), ValidateChannelOptions(o).message());
  o = ChannelOptions();
  o.batching.mode = BatchMode::kFixed;
  o.batching.bytes = 10;  // Not checked at connect before: only by flags.
  c = Channel::Create("/nonexistent/rfrpc.sock", o);
  EXPECT_EQ(c.status().message(), "batching.bytes 10 is below 64");
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc
