// Copyright 2026 The rfrpc Authors.
//
// End-to-end batching: fixed, auto and adaptive batches over a real server,
// async calls and sync calls from many threads, results split across
// parts, and pipelining limits. Every reply is checked against its request.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
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

struct Param {
  BatchMode batch;
  RpcMode mode;
};

class BatchE2eTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    ServerOptions opts;
    opts.provider = Provider();
    opts.address = ListenAddress();
    opts.workers = 1;
    opts.idle_spin_rounds = 200;
    opts.result_batch_bytes = 512;  // Small, so results span several parts.
    server_ = std::make_unique<Server>(opts);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  std::unique_ptr<Channel> Connect(ChannelOptions opts = {}) {
    opts.provider = Provider();
    opts.batching.mode = GetParam().batch;
    opts.mode = GetParam().mode;
    // T: short unless the test sets its own.
    if (opts.batching.timeout == ChannelOptions().batching.timeout) {
      opts.batching.timeout = absl::Microseconds(200);
    }
    // Correctness, not latency: under qemu TCG on a busy host thousands of
    // queued async calls can take longer than the 5 s default.
    opts.default_timeout = absl::Seconds(120);
    absl::StatusOr<std::unique_ptr<Channel>> c =
        Channel::Create(server_->address(), opts);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Issues `n` async Echo calls back to back (so they can share a batch),
  // waits for all of them and asserts that each succeeded.
  static void CallAllAsync(Channel* ch, const TestRequest* reqs,
                           TestResponse* resps, int n) {
    static const uint32_t kEcho = MethodId(kEchoMethod);
    std::vector<absl::Status> statuses(n);
    std::atomic<int> done{0};
    for (int i = 0; i < n; ++i) {
      ch->CallAsync(kEcho, reqs[i], &resps[i], nullptr, [&, i](absl::Status s) {
        statuses[i] = s;
        ++done;
      });
    }
    ASSERT_TRUE(WaitForCount(done, n, absl::Seconds(60)));
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(statuses[i].ok()) << i << ": " << statuses[i];
    }
  }

  TestService service_;
  std::unique_ptr<Server> server_;
};

TEST_P(BatchE2eTest, AsyncCallsAreBatchedAndEveryReplyMatches) {
  ChannelOptions opts;
  opts.batching.size = 16;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  constexpr int kCalls = 2000;
  static const uint32_t kEcho = MethodId(kEchoMethod);
  std::vector<TestResponse> resps(kCalls);
  std::vector<absl::Status> statuses(kCalls);
  std::vector<std::string> want(kCalls);
  std::atomic<int> done{0};
  absl::BitGen gen;
  for (int i = 0; i < kCalls; ++i) {
    TestRequest req;
    req.set_id(i);
    if (i % 7 == 0) {
      req.set_response_size(absl::Uniform(gen, 100, 1500));  // Splits parts.
      want[i] = ExpectedPayload(i, req.response_size());
    } else {
      req.set_payload(ExpectedPayload(i, absl::Uniform(gen, 0, 100)));
      want[i] = req.payload();
    }
    if (i % 97 == 0) req.set_fail_code(static_cast<int>(absl::StatusCode::kAborted));
    ch->CallAsync(kEcho, req, &resps[i], nullptr, [&, i](absl::Status s) {
      statuses[i] = s;
      ++done;
    });
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(60)));
  int bad = 0;
  for (int i = 0; i < kCalls; ++i) {
    if (i % 97 == 0) {
      EXPECT_EQ(statuses[i].code(), absl::StatusCode::kAborted) << i;
      continue;
    }
    if (!statuses[i].ok() || resps[i].id() != static_cast<uint64_t>(i) ||
        resps[i].payload() != want[i]) {
      if (bad++ < 5) ADD_FAILURE() << "call " << i << ": " << statuses[i];
    }
  }
  EXPECT_EQ(bad, 0);
  ChannelStats st = ch->stats();
  EXPECT_GT(st.batches, 0u);
  EXPECT_EQ(st.batched_calls, static_cast<uint64_t>(kCalls));
  // The N of the moment: fixed mode's own (it read 0: only the auto sizer
  // wrote it).
  if (GetParam().batch == BatchMode::kFixed) {
    EXPECT_EQ(st.batch_size, 16);
  }
  EXPECT_EQ(st.batch_size, ch->batch_size());
  // Calls went in batches, not one by one (one call a batch is 1.0). Where
  // the client is several times slower at making a call (TSan/ASan, qemu
  // TCG in the Soft-RoCE VM), the idle flush sends what the batch holds
  // meanwhile, and auto starts from N = 1: a CI run under TSan on a loaded
  // host averaged 1.45-1.65 calls a batch (server-reply, hybrid), one in
  // the VM 1.38 (auto, hybrid). Natively on shm it is above 2.
  const double min_calls_per_batch =
      Provider() == "shm" && !kSanitizerBuild ? 2.0 : 1.1;
  EXPECT_GT(st.CallsPerBatch(), min_calls_per_batch)
      << st.batches << " batches";
  // Some results took more than one part. Batches of one go as plain
  // requests, whose results are not parts, so only real batches count.
  ASSERT_GT(st.batches, st.batches_plain);
  EXPECT_GT(st.result_parts, st.batches - st.batches_plain)
      << st.batches << " batches, " << st.batches_plain << " plain";
  // Batches of one go as plain requests, which the server does not count
  // as batches.
  EXPECT_EQ(server_->stats().batches, st.batches - st.batches_plain);
}

// A batch's results share one response slot. 400 async calls, 16 a batch,
// 8 KiB slots: a batch keeps room for each entry's result at the largest
// its method has returned on the connection (a whole slot before the first
// comes back), and at least kBatchErrorBytes for an error's message (the
// server cuts longer ones there), so no result fails RESOURCE_EXHAUSTED
// after its handler ran, as most of these did when a batch took 16 calls
// whatever their results:
// - from a cold connection, every result 3 000 bytes;
// - once each method has returned once: Echo's 3 000-byte results, and
//   EchoAgain's 8-byte ones interleaved with EchoAgain calls that fail
//   with a 4 000-byte message (which took the room of the results after
//   it while error messages were cut only where the slot ended).
TEST_P(BatchE2eTest, ResultsNeverOutgrowTheirBatchsResponseSlot) {
  static const uint32_t kEcho = MethodId(kEchoMethod);
  static const uint32_t kEchoAgain = MethodId(kEchoAgainMethod);
  for (bool mixed : {false, true}) {
    SCOPED_TRACE(mixed ? "mixed, after one result of each" : "cold, all large");
    ChannelOptions opts;
    opts.batching.size = 16;
    opts.max_response_bytes = 8192;
    // Batches fill to N or to their room (T, 200 us, sends the last): not
    // sent on idle, which would keep them too short to run out of room.
    opts.batching.idle_in_flight = 0;
    std::unique_ptr<Channel> ch = Connect(opts);
    ASSERT_NE(ch, nullptr);
    // Call i: Echo of 3 000 bytes, or (mixed, i % 3 != 0) EchoAgain of 8
    // bytes, failing with a long message when i % 3 == 1.
    auto request = [mixed](int i) {
      TestRequest req;
      req.set_id(i);
      if (!mixed || i % 3 == 0) {
        req.set_response_size(3000);
      } else {
        req.set_response_size(8);
        if (i % 3 == 1) req.set_throw_message(std::string(4000, 'x'));
      }
      return req;
    };
    auto method = [mixed](int i) {
      return !mixed || i % 3 == 0 ? kEcho : kEchoAgain;
    };
    if (mixed) {
      for (int i : {0, 2}) {
        TestRequest req = request(i);
        TestResponse resp;
        std::atomic<int> one{0};
        absl::Status st;
        ch->CallAsync(method(i), req, &resp, nullptr, [&](absl::Status s) {
          st = s;
          ++one;
        });
        ASSERT_TRUE(WaitForCount(one, 1, absl::Seconds(60)));
        ASSERT_TRUE(st.ok()) << st;
      }
    }
    constexpr int kCalls = 400;
    std::vector<TestResponse> resps(kCalls);
    std::vector<absl::Status> statuses(kCalls);
    std::atomic<int> done{0};
    for (int i = 0; i < kCalls; ++i) {
      ch->CallAsync(method(i), request(i), &resps[i], nullptr,
                    [&, i](absl::Status s) {
                      statuses[i] = s;
                      ++done;
                    });
    }
    ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(60)));
    int bad = 0;
    for (int i = 0; i < kCalls; ++i) {
      const TestRequest req = request(i);
      const bool failing = !req.throw_message().empty();
      const bool ok =
          failing
              ? statuses[i].code() == absl::StatusCode::kInternal &&
                    absl::StrContains(statuses[i].message(), "threw")
              : statuses[i].ok() && resps[i].payload() ==
                                        ExpectedPayload(i, req.response_size());
      if (!ok && bad++ < 5)
        ADD_FAILURE() << "call " << i << ": " << statuses[i];
    }
    EXPECT_EQ(bad, 0);
    // Still batched: two 3 000-byte results fit a slot.
    const ChannelStats st = ch->stats();
    EXPECT_GT(st.CallsPerBatch(), 1.0) << st.batches << " batches";
  }
}

TEST_P(BatchE2eTest, SyncCallsFromManyThreads) {
  ChannelOptions opts;
  opts.batching.size = 4;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        TestRequest req;
        const uint64_t id = uint64_t{static_cast<uint32_t>(t)} << 32 | i;
        req.set_id(id);
        req.set_payload(ExpectedPayload(id, i % 50));
        TestResponse resp;
        absl::Status s = CallEcho(ch.get(), nullptr, req, &resp);
        if (!s.ok() || resp.id() != id || resp.payload() != req.payload()) {
          if (failures++ < 5) ADD_FAILURE() << s;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ch->stats().batched_calls, 1200u);
}

TEST_P(BatchE2eTest, PipeliningIsBoundedByMaxOutstanding) {
  ChannelOptions opts;
  opts.batching.size = 8;
  opts.batching.max_outstanding = 16;
  opts.slots_per_connection = 8;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  static const uint32_t kEcho = MethodId(kEchoMethod);
  constexpr int kCalls = 400;
  std::vector<TestResponse> resps(kCalls);
  std::atomic<int> ok{0}, done{0};
  for (int i = 0; i < kCalls; ++i) {
    TestRequest req;
    req.set_id(i);
    // The first 16 calls hold the server 5 ms each (a batch of 8: 40 ms),
    // and the loop goes on once both their batches are out, so it meets the
    // bound however slowly it runs. CI saw calls_queued 0 under ASan when
    // every call took 2 us and the loop was descheduled, and again under
    // TSan with 1 ms holds and no wait.
    req.set_delay_ns(i < 16 ? 5000000 : 2000);
    ch->CallAsync(kEcho, req, &resps[i], nullptr, [&, i](absl::Status s) {
      if (s.ok() && resps[i].id() == static_cast<uint64_t>(i)) ok++;
      ++done;
    });
    if (i == 15) {
      const absl::Time give_up = absl::Now() + absl::Seconds(10);
      while (ch->stats().outstanding_peak < 16 && absl::Now() < give_up) {
        absl::SleepFor(absl::Microseconds(100));
      }
    }
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(60)));
  EXPECT_EQ(ok.load(), kCalls);
  const ChannelStats st = ch->stats();
  // Never more than 16 requests outstanding (8 slots of 8 would allow 64),
  // and more than one batch's worth was: the bound, not the batch size or
  // the slots, is what held the pipeline.
  EXPECT_LE(st.outstanding_peak, 16);
  EXPECT_GT(st.outstanding_peak, 8);
  // The 400 calls came faster than that: the rest waited in the queue.
  EXPECT_GT(st.calls_queued, 0u);
  EXPECT_GE(st.batches, static_cast<uint64_t>(kCalls / 16));
}

// A batched call stops counting against max_outstanding when its result
// part arrives, not when its whole batch is done: a call started from the
// callback of a finished call is not queued behind a slow call of the same
// batch. (It used to be: calls_queued 1.)
TEST_P(BatchE2eTest, FinishedCallsOfABatchFreeTheirOutstandingPlace) {
  ChannelOptions opts;
  opts.batching.size = 4;
  opts.batching.max_outstanding = 4;
  opts.batching.timeout = absl::Milliseconds(50);  // The 4 share one batch.
  opts.batching.idle_in_flight =
      0;  // Flushed by N, not as the first goes idle.
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(ch->batch_size(), 4);
  static const uint32_t kEcho = MethodId(kEchoMethod);
  // A, B, C fill a result part each (limit 512 bytes); S then sleeps.
  TestRequest reqs[4];
  for (int i = 0; i < 3; ++i) {
    reqs[i].set_id(i);
    reqs[i].set_response_size(480);
  }
  reqs[3].set_id(3);
  reqs[3].set_sleep_ms(300);
  TestResponse resps[4];
  TestRequest x_req;
  x_req.set_id(10);
  TestResponse x_resp;
  std::atomic<int> done{0};
  std::atomic<bool> all_ok{true};
  for (int i = 0; i < 4; ++i) {
    ch->CallAsync(kEcho, reqs[i], &resps[i], nullptr, [&, i](absl::Status s) {
      if (!s.ok()) all_ok = false;
      if (i == 0) {
        // A's result is here while S still sleeps: X goes out now.
        ch->CallAsync(kEcho, x_req, &x_resp, nullptr, [&](absl::Status xs) {
          if (!xs.ok()) all_ok = false;
          ++done;
        });
      }
      ++done;
    });
  }
  ASSERT_TRUE(WaitForCount(done, 5, absl::Seconds(60)));
  EXPECT_TRUE(all_ok.load());
  EXPECT_EQ(x_resp.id(), 10u);
  EXPECT_EQ(ch->stats().calls_queued, 0u);
}

// Auto: the sizer takes an async call's latency when its callback starts,
// as the caller sees it. Four calls finish together, but their callbacks run
// one after another, 3 ms each: to their callers the last three took over
// the 1 ms limit, so the window (4 calls) has k = 3/4 or more and the size
// shrinks. Timed when the calls finished, the window would look fast.
TEST_P(BatchE2eTest, AutoSizerCountsTimeUntilTheCallbackRuns) {
  if (GetParam().batch != BatchMode::kAuto) GTEST_SKIP() << "auto only";
  ChannelOptions opts;
  opts.batching.size = 4;  // Starting size.
  opts.batching.timeout = absl::Milliseconds(50);
  opts.batching.sizer.latency_limit = absl::Milliseconds(1);
  opts.batching.sizer.window = 4;
  opts.batching.sizer.min_window = absl::ZeroDuration();  // Windows of 4 calls,
  opts.batching.sizer.max_window = absl::ZeroDuration();  // however long.
  opts.batching.sizer.shrink_windows = 1;  // Act on that one window.
  opts.batching.idle_in_flight = 0;        // The four calls make one batch.
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  EXPECT_EQ(ch->batch_size(), 4);
  static const uint32_t kEcho = MethodId(kEchoMethod);
  TestRequest reqs[4];
  TestResponse resps[4];
  std::atomic<int> done{0};
  for (int i = 0; i < 4; ++i) {
    reqs[i].set_id(i);
    ch->CallAsync(kEcho, reqs[i], &resps[i], nullptr, [&](absl::Status s) {
      EXPECT_TRUE(s.ok()) << s;
      absl::SleepFor(absl::Milliseconds(3));
      ++done;
    });
  }
  ASSERT_TRUE(WaitForCount(done, 4, absl::Seconds(60)));
  // The sizer is fed once the callbacks have run.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (ch->stats().sizer_adjustments == 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const ChannelStats st = ch->stats();
  EXPECT_GE(st.sizer_k, 0.75);
  EXPECT_EQ(st.sizer_adjustments, 1u);
  EXPECT_LT(ch->batch_size(), 4);
  EXPECT_EQ(st.batch_size, ch->batch_size());
}

// A result that moves to a new part must not be readable as that part's
// header. Entry A fills part 0, so E's result moves into part 1; S then keeps
// part 1 unpublished for 300 ms while the client READs part 1's head. E's
// serialized response (payload field 1, id 0) begins 0a 08 00 80 01 00 00 00:
// as a head word that is "valid, size 0x080a, seq 1", the seq of a slot's
// first batch.
TEST_P(BatchE2eTest, MovedResultIsNotTakenForTheNextPartHeader) {
  ChannelOptions opts;
  opts.batching.size = 3;
  // The three calls must make one batch even where issuing them takes a
  // while (qemu TCG; tsan on a loaded host took over 50 ms once): flushed
  // by N, not by T or as the first goes idle.
  opts.batching.timeout = absl::Milliseconds(500);
  opts.batching.idle_in_flight = 0;
  opts.first_seq = 1;
  // One batch from the first call: results declared small (else the first
  // call goes alone until its result shows the method's size).
  opts.batching.result_bytes = 64;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  TestRequest reqs[3];
  reqs[0].set_id(7);
  reqs[0].set_response_size(500);  // Past result_batch_bytes (512) with E.
  reqs[1].set_payload(std::string("\x00\x80\x01\x00\x00\x00\x00\x00", 8));
  reqs[2].set_id(9);
  reqs[2].set_sleep_ms(300);
  TestResponse resps[3];
  ASSERT_NO_FATAL_FAILURE(CallAllAsync(ch.get(), reqs, resps, 3));
  EXPECT_EQ(resps[0].payload(), ExpectedPayload(7, 500));
  EXPECT_EQ(resps[1].payload(), reqs[1].payload());
  EXPECT_EQ(resps[1].id(), 0u);
  EXPECT_EQ(resps[2].id(), 9u);
  if (GetParam().batch == BatchMode::kFixed) {
    EXPECT_EQ(ch->stats().batches, 1u);
    EXPECT_GE(ch->stats().result_parts, 2u);
  }
}

// Until a part's push lands, the client's reply slot holds at that part's
// offset whatever an earlier batch's results left there. A first batch (seq
// s) echoes bytes that, where the second batch's part 1 will begin, read as
// the head "valid, size 0x1910f551, seq s + 1"; in the second batch C keeps
// part 1 unpushed for 300 ms while the client waits at that offset. The head
// is stale, not corrupt: the client checks the server's published copy (not
// published yet), waits and takes the real part. It used to fail the
// connection with "corrupt server-reply header", as CI's Soft-RoCE run did on
// payload bytes that matched by chance. In remote fetching the same bytes
// lie in the server's response buffer, where the server clears the next
// part's head word before publishing a part.
TEST_P(BatchE2eTest, StaleReplySlotBytesAreNotTakenForTheNextPart) {
  constexpr uint32_t kFirstSeq = 0x5a5a0001;
  ChannelOptions opts;
  opts.batching.size = 3;
  opts.batching.timeout =
      absl::Milliseconds(50);        // Batch 2 flushed by N, not T.
  opts.batching.idle_in_flight = 0;  // Nor idle.
  opts.slots_per_connection = 1;  // Both batches use the same reply slot.
  opts.first_seq = kFirstSeq;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  // Second batch: A alone fills part 0 (the part limit is 512 bytes), so B
  // opens part 1 at p1 = header + A's entry + tail.
  TestResponse a_resp;
  a_resp.set_id(7);
  a_resp.set_payload(ExpectedPayload(7, 480));
  const size_t a_len = a_resp.ByteSizeLong();
  const size_t p1 = 16 + 8 + ((a_len + 7) & ~size_t{7}) + 8;
  // First batch: D's echoed payload puts the fake head at p1 of the reply
  // slot (D's result starts after the response header, and in adaptive mode
  // after a result entry header: a batch of one is sent as a plain request
  // in the other modes; id and worker are 0, so the payload field comes
  // first).
  std::string fake(600, 'd');
  TestResponse d_probe;
  d_probe.set_payload(fake);
  const size_t d_field = d_probe.ByteSizeLong() - fake.size();
  const size_t d_entry = GetParam().batch == BatchMode::kAdaptive ? 8 : 0;
  const size_t at = p1 - 16 - d_entry - d_field;
  const uint32_t head[2] = {0x80000000u | 0x1910f551u, kFirstSeq + 1};
  std::memcpy(&fake[at], head, sizeof(head));
  TestRequest d;
  d.set_payload(fake);
  TestResponse d_resp;
  ASSERT_TRUE(CallEcho(ch.get(), nullptr, d, &d_resp).ok());
  ASSERT_EQ(d_resp.payload(), fake);

  TestRequest reqs[3];
  reqs[0].set_id(7);
  reqs[0].set_response_size(480);
  reqs[1].set_id(8);
  reqs[1].set_payload(std::string(40, 'b'));
  reqs[2].set_id(9);
  reqs[2].set_sleep_ms(300);
  TestResponse resps[3];
  ASSERT_NO_FATAL_FAILURE(CallAllAsync(ch.get(), reqs, resps, 3));
  EXPECT_EQ(resps[0].payload(), a_resp.payload());
  EXPECT_EQ(resps[1].payload(), reqs[1].payload());
  EXPECT_EQ(resps[2].id(), 9u);
  if (GetParam().batch == BatchMode::kFixed) {
    EXPECT_EQ(ch->stats().batches, 2u);
    EXPECT_EQ(ch->stats().batches_plain, 1u);  // D, alone.
    EXPECT_GE(ch->stats().result_parts, 2u);   // A's and B+C's.
  }
}

// A call whose deadline passes while its batch is served fails alone, on
// time, and its batchmates still get their own replies. The short deadline
// is the second call's, so the slot's earliest deadline must follow the
// calls added after the first; the second round reuses the slot.
TEST_P(BatchE2eTest, ShortDeadlineInABatchExpiresAloneAndOnTime) {
  ChannelOptions opts;
  opts.batching.size = 3;
  opts.batching.timeout = absl::Seconds(5);  // Flush by N only.
  opts.batching.idle_in_flight = 0;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  static const uint32_t kEcho = MethodId(kEchoMethod);
  for (int round = 0; round < 2; ++round) {
    TestRequest reqs[3];
    for (int i = 0; i < 3; ++i) reqs[i].set_id(round * 10 + i);
    reqs[0].set_sleep_ms(400);  // Holds the whole batch (one worker).
    TestResponse resps[3];
    ClientContext short_ctx;
    short_ctx.set_timeout(absl::Milliseconds(50));
    absl::Status statuses[3];
    std::atomic<int> done{0};
    std::atomic<bool> slow_done{false};
    std::atomic<bool> short_before_slow{false};
    for (int i = 0; i < 3; ++i) {
      ch->CallAsync(kEcho, reqs[i], &resps[i], i == 1 ? &short_ctx : nullptr,
                    [&, i](absl::Status st) {
                      statuses[i] = st;
                      if (i == 0) slow_done = true;
                      if (i == 1) short_before_slow = !slow_done.load();
                      ++done;
                    });
    }
    ASSERT_TRUE(WaitForCount(done, 3, absl::Seconds(60)));
    EXPECT_EQ(statuses[1].code(), absl::StatusCode::kDeadlineExceeded)
        << "round " << round << ": " << statuses[1];
    EXPECT_TRUE(short_before_slow.load()) << "round " << round;
    for (int i : {0, 2}) {
      ASSERT_TRUE(statuses[i].ok()) << "round " << round << " call " << i
                                    << ": " << statuses[i];
      EXPECT_EQ(resps[i].id(), static_cast<uint64_t>(round * 10 + i));
    }
  }
}

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(BatchModeName(info.param.batch)) + "_" +
         std::string(RpcModeName(info.param.mode));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, BatchE2eTest,
    ::testing::Values(Param{BatchMode::kFixed, RpcMode::kRemoteFetch},
                      Param{BatchMode::kFixed, RpcMode::kServerReply},
                      Param{BatchMode::kFixed, RpcMode::kHybrid},
                      Param{BatchMode::kAuto, RpcMode::kHybrid},
                      Param{BatchMode::kAdaptive, RpcMode::kRemoteFetch},
                      Param{BatchMode::kAdaptive, RpcMode::kServerReply}),
    Name);

// ---- Mechanisms, one test each: every test here fails if its mechanism is
// removed (the comment before each says how). ----

// A hand-written MethodHandler, as a user without the generated code writes
// one: Run only, no RunBatch. It echoes a TestRequest's id and payload, fails
// with the request's fail_code if it has one, and counts its Runs.
class HandWrittenEcho final : public MethodHandler {
 public:
  absl::Status Run(ServerContext*, absl::string_view request, char* out,
                   size_t cap, size_t* len) override {
    runs.fetch_add(1, std::memory_order_relaxed);
    TestRequest req;
    if (!req.ParseFromArray(request.data(), static_cast<int>(request.size()))) {
      return absl::InvalidArgumentError("not a TestRequest");
    }
    if (req.fail_code() != 0) {
      return absl::Status(static_cast<absl::StatusCode>(req.fail_code()),
                          "hand-written failure");
    }
    TestResponse resp;
    resp.set_id(req.id());
    resp.set_payload(req.payload());
    *len = resp.ByteSizeLong();
    if (*len > cap) return absl::ResourceExhaustedError("too large");
    resp.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out));
    return absl::OkStatus();
  }

  std::atomic<int> runs{0};
};

class HandWrittenService final : public Service {
 public:
  static constexpr const char* kEcho = "/rfrpc.testing.HandWritten/Echo";

  HandWrittenService() : Service("rfrpc.testing.HandWritten") {
    auto h = std::make_unique<HandWrittenEcho>();
    echo = h.get();
    AddMethod("Echo", std::move(h));
  }

  HandWrittenEcho* echo;
};

class BatchMechanismTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions opts;
    opts.provider = Provider();
    opts.address = ListenAddress();
    opts.workers = 1;
    opts.idle_spin_rounds = 200;
    opts.result_batch_bytes = 512;
    server_ = std::make_unique<Server>(opts);
    ASSERT_TRUE(server_->RegisterService(&service_).ok());
    ASSERT_TRUE(server_->RegisterService(&hand_written_).ok());
    absl::Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s;
  }

  // These tests script exact batches from a connection's first call: they
  // declare small results, so the first calls batch at once instead of
  // going alone until a result shows its size (batching.result_bytes;
  // ResultsNeverOutgrowTheirBatchsResponseSlot tests the default).
  std::unique_ptr<Channel> Connect(ChannelOptions opts) {
    opts.provider = Provider();
    opts.default_timeout = absl::Seconds(120);
    if (opts.batching.result_bytes == 0) opts.batching.result_bytes = 64;
    absl::StatusOr<std::unique_ptr<Channel>> c =
        Channel::Create(server_->address(), opts);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // Polls `ch` (a channel without a progress thread) until `done` reaches
  // `n`; false after 60 s.
  static bool PollUntil(Channel* ch, const std::atomic<int>& done, int n) {
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (done.load(std::memory_order_acquire) < n) {
      if (absl::Now() > give_up) return false;
      if (!ch->Poll()) absl::SleepFor(absl::Microseconds(20));
    }
    return true;
  }

  // Polls `ch` (a channel without a progress thread) until it has sent
  // `batches` batches in all, for at most `wait`.
  static void PollUntilBatches(Channel* ch, uint64_t batches,
                               absl::Duration wait) {
    const absl::Time give_up = absl::Now() + wait;
    while (ch->stats().batches < batches && absl::Now() < give_up) {
      if (!ch->Poll()) absl::SleepFor(absl::Microseconds(20));
    }
  }

  // Starts one async Echo of id `id` (payload: ExpectedPayload(id, bytes))
  // whose callback checks the reply, counts `done` and records failures.
  void EchoAsync(Channel* ch, uint64_t id, size_t bytes, uint32_t sleep_ms,
                 std::atomic<int>* done) {
    static const uint32_t kEcho = MethodId(kEchoMethod);
    auto req = std::make_shared<TestRequest>();
    req->set_id(id);
    req->set_payload(ExpectedPayload(id, bytes));
    req->set_sleep_ms(sleep_ms);
    auto resp = std::make_shared<TestResponse>();
    ch->CallAsync(kEcho, *req, resp.get(), nullptr,
                  [this, req, resp, done](absl::Status s) {
                    if (!s.ok() || resp->id() != req->id() ||
                        resp->payload() != req->payload()) {
                      bad_.fetch_add(1);
                    }
                    done->fetch_add(1, std::memory_order_release);
                  });
  }

  // Fixed batches of exactly n calls over remote fetch (no idle flush, T
  // an hour).
  static ChannelOptions ExactBatches(int n) {
    ChannelOptions opts;
    opts.batching.mode = BatchMode::kFixed;
    opts.batching.size = n;
    opts.mode = RpcMode::kRemoteFetch;
    opts.batching.timeout = absl::Hours(1);
    opts.batching.idle_in_flight = 0;
    return opts;
  }
  // The same with the idle flush on (the default) and no progress thread:
  // this thread's Poll drives the channel and runs its callbacks.
  static ChannelOptions PolledBatches(int n) {
    ChannelOptions opts = ExactBatches(n);
    opts.batching.idle_in_flight = ChannelOptions().batching.idle_in_flight;
    opts.progress_thread = false;
    return opts;
  }

  // `rounds` rounds of n async echoes of `bytes` each, every round awaited;
  // returns the channel's stats from before round `measure_from`.
  ChannelStats EchoRounds(Channel* ch, int rounds, int n, size_t bytes,
                          int measure_from) {
    std::atomic<int> done{0};
    int calls = 0;
    ChannelStats before;
    for (int round = 0; round < rounds; ++round) {
      if (round == measure_from) before = ch->stats();
      for (int i = 0; i < n; ++i) EchoAsync(ch, ++calls, bytes, 0, &done);
      EXPECT_TRUE(WaitForCount(done, calls, absl::Seconds(20)))
          << "round " << round;
    }
    return before;
  }

  TestService service_;
  HandWrittenService hand_written_;
  std::unique_ptr<Server> server_;
  std::atomic<int> bad_{0};
};

// Adaptive batching, scripted with no progress thread (nothing polls the
// CQ but the test): batch 1 (2 calls, N = 2) is published and its publish
// WRITE stays "in flight" until the test polls. Batch 2 reaches N at its
// second call, but its publish is held (elastic threshold), and its calls
// keep flowing in, each group of batch_group = 1 WRITten at once
// (synchronization-ahead). The test then polls: the completion of publish 1
// releases publish 2, with 6 entries and aux = N = 2.
ChannelOptions AdaptiveScript() {
  ChannelOptions opts;
  opts.batching.mode = BatchMode::kAdaptive;
  opts.mode = RpcMode::kRemoteFetch;  // No mode-flag WRITEs to count.
  opts.batching.size = 2;
  opts.batching.group = 1;
  opts.batching.timeout = absl::Hours(1);
  opts.progress_thread = false;
  return opts;
}

// Without synchronization-ahead no group is WRITten before its publish
// (groups_sent_ahead 0, 4 WRITEs), and without the held publish batch 2
// goes out at its second call (publishes_delayed 0, 4 batches, and the
// server sees batch 2 while the test waits).
TEST_F(BatchMechanismTest, AdaptiveWritesGroupsAheadAndHoldsAPublishInFlight) {
  std::unique_ptr<Channel> ch = Connect(AdaptiveScript());
  ASSERT_NE(ch, nullptr);
  std::atomic<int> done{0};
  EchoAsync(ch.get(), 1, 8, 0, &done);
  EchoAsync(ch.get(), 2, 8, 0, &done);
  ChannelStats st = ch->stats();
  EXPECT_EQ(st.batches, 1u);
  EXPECT_EQ(st.groups_sent_ahead, 2u);
  EXPECT_EQ(st.publishes_delayed, 0u);
  for (int i = 3; i <= 8; ++i) EchoAsync(ch.get(), i, 8, 0, &done);
  st = ch->stats();
  EXPECT_EQ(st.batches, 1u);            // Batch 2 is held...
  EXPECT_EQ(st.publishes_delayed, 1u);  // ...once, at its N...
  EXPECT_EQ(st.groups_sent_ahead, 8u);  // ...its entries WRITten ahead.
  // One group WRITE per entry, three WRITEs (rest + tail, header bytes
  // [8, 16), head word) for batch 1, and its doorbell (two WRITEs:
  // docs/rpc.md "Work discovery").
  // (A ring counts its re-rings too: a slow host may re-ring a batch the
  // server has not answered within ChannelOptions::rering_after.)
  EXPECT_EQ(st.rings - st.rerings, 1u);
  EXPECT_EQ(st.rdma_writes, 11u + 2 * st.rings);
  // The server serves batch 1 and sees no batch 2 while publish 1 is
  // unpolled (header not WRITten: its valid bit is not set).
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (server_->stats().batches < 1 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(server_->stats().batches, 1u);
  ASSERT_TRUE(PollUntil(ch.get(), done, 8));
  EXPECT_EQ(bad_.load(), 0);
  st = ch->stats();
  EXPECT_EQ(st.batches, 2u);
  EXPECT_EQ(st.batched_calls, 8u);
  EXPECT_EQ(st.rings - st.rerings, 2u);
  EXPECT_EQ(st.rdma_writes, 14u + 2 * st.rings);
  EXPECT_EQ(st.flushes_full, 2u);
  EXPECT_EQ(server_->stats().batches, 2u);
}

// The server cuts result parts at the batch size the client sent in the
// request header's aux (here 2, for a batch of 6 entries), not at its own
// default (128): 1 part for batch 1, 3 for batch 2. Results are tiny, so
// the 512-byte part limit plays no role. A server that ignored aux would
// send 2 parts in all.
TEST_F(BatchMechanismTest, ServerCutsResultPartsAtTheClientsBatchSize) {
  std::unique_ptr<Channel> ch = Connect(AdaptiveScript());
  ASSERT_NE(ch, nullptr);
  std::atomic<int> done{0};
  for (int i = 1; i <= 8; ++i) EchoAsync(ch.get(), i, 8, 0, &done);
  ASSERT_TRUE(PollUntil(ch.get(), done, 8));
  EXPECT_EQ(bad_.load(), 0);
  const ChannelStats st = ch->stats();
  ASSERT_EQ(st.batches, 2u);
  ASSERT_EQ(st.batched_calls, 8u);
  EXPECT_EQ(st.result_parts, 4u);
}

// Each flush trigger, counted in one end-to-end run (fixed batching, N = 4,
// L = 256 bytes; no progress thread, so the test decides when anyone
// polls). N, L and T on a channel with the idle flush off (the paper's
// rule), where nothing else sends a batch; the idle flush on another. Each
// step would be counted under another trigger (or not finish) if its own
// were removed.
TEST_F(BatchMechanismTest, EveryFlushTriggerIsCounted) {
  ChannelOptions opts;
  opts.batching.mode = BatchMode::kFixed;
  opts.mode = RpcMode::kRemoteFetch;
  opts.batching.size = 4;
  opts.batching.bytes = 256;
  opts.batching.timeout = absl::Milliseconds(20);
  opts.batching.idle_in_flight = 0;
  opts.progress_thread = false;
  std::unique_ptr<Channel> paper = Connect(opts);
  ASSERT_NE(paper, nullptr);
  std::atomic<int> done{0};
  auto delta = [&](const ChannelStats& a, const ChannelStats& b) {
    return std::vector<uint64_t>{b.flushes_full - a.flushes_full,
                                 b.flushes_bytes - a.flushes_bytes,
                                 b.flushes_timeout - a.flushes_timeout,
                                 b.flushes_idle - a.flushes_idle};
  };
  using V = std::vector<uint64_t>;  // {N, L, T, idle}.

  // N: four async calls fill the batch; nobody polls while they are added.
  ChannelStats before = paper->stats();
  for (int i = 0; i < 4; ++i) EchoAsync(paper.get(), 100 + i, 8, 0, &done);
  EXPECT_EQ(delta(before, paper->stats()), (V{1, 0, 0, 0}));
  ASSERT_TRUE(PollUntil(paper.get(), done, 4));

  // L: the second 200-byte request would take the payload past 256 bytes,
  // so the first goes; the second, alone in its batch, waits for T (20 ms).
  before = paper->stats();
  EchoAsync(paper.get(), 200, 200, 0, &done);
  EchoAsync(paper.get(), 201, 200, 0, &done);
  EXPECT_EQ(delta(before, paper->stats()), (V{0, 1, 0, 0}));
  ASSERT_TRUE(PollUntil(paper.get(), done, 6));
  EXPECT_EQ(delta(before, paper->stats()), (V{0, 1, 1, 0}));
  // Each went alone, so each as a plain request (not served as a batch).
  EXPECT_EQ(paper->stats().batches_plain - before.batches_plain, 2u);

  // The idle flush on (batch_idle_in_flight = 1, the default), T an hour.
  opts.batching.idle_in_flight = 1;
  opts.batching.timeout = absl::Hours(1);
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);

  // Idle, Nagle's rule: an async call that finds nothing open and nothing
  // in flight goes at once, alone, before anyone polls.
  before = ch->stats();
  EchoAsync(ch.get(), 250, 8, 0, &done);
  EXPECT_EQ(delta(before, ch->stats()), (V{0, 0, 0, 1}));
  EXPECT_EQ(ch->stats().batches_plain - before.batches_plain, 1u);
  ASSERT_TRUE(PollUntil(ch.get(), done, 7));

  // Idle, behind a late batch: X keeps the server 300 ms; Y, held behind
  // it in a batch of its own, goes as soon as X has been out two typical
  // turnarounds (microseconds, learned above), not when X returns (nor at
  // T, an hour).
  before = ch->stats();
  EchoAsync(ch.get(), 300, 8, 300, &done);
  EXPECT_EQ(delta(before, ch->stats()), (V{0, 0, 0, 1}));
  EchoAsync(ch.get(), 301, 8, 0, &done);
  PollUntilBatches(ch.get(), before.batches + 2, absl::Milliseconds(100));
  EXPECT_EQ(ch->stats().batches - before.batches, 2u);
  EXPECT_EQ(done.load(), 7);  // X is still being served.
  EXPECT_EQ(delta(before, ch->stats()), (V{0, 0, 0, 2}));
  ASSERT_TRUE(PollUntil(ch.get(), done, 9));

  // Idle: a sync call goes as its caller starts to wait.
  before = ch->stats();
  TestRequest req;
  req.set_id(400);
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch.get(), nullptr, req, &resp).ok());
  EXPECT_EQ(resp.id(), 400u);
  EXPECT_EQ(delta(before, ch->stats()), (V{0, 0, 0, 1}));
  EXPECT_EQ(bad_.load(), 0);
}

// Nagle's rule sends an async call alone only while nothing in flight is
// worth waiting for, and a call sent alone is timed as a batch is: its
// turnaround is what tells later calls to wait. A pipeline of 32 calls
// (each callback issues the next) therefore still fills batches. Untimed,
// the connection never learned a turnaround, every call that found no batch
// open went alone, and this pipeline ran at 1.00 calls a batch.
TEST_F(BatchMechanismTest, ADeepAsyncPipelineStillBatchesUnderNaglesRule) {
  std::unique_ptr<Channel> ch = Connect(PolledBatches(16));
  ASSERT_NE(ch, nullptr);
  constexpr int kDepth = 32;
  constexpr int kCalls = 4000;
  std::atomic<int> done{0};
  int issued = 0;  // Callbacks run on this thread, in Poll.
  std::function<void()> issue = [&] {
    const uint64_t id = static_cast<uint64_t>(issued++);
    auto req = std::make_shared<TestRequest>();
    req->set_id(id);
    auto resp = std::make_shared<TestResponse>();
    ch->CallAsync(MethodId(kEchoMethod), *req, resp.get(), nullptr,
                  [&, req, resp](absl::Status st) {
                    if (!st.ok() || resp->id() != req->id()) bad_.fetch_add(1);
                    done.fetch_add(1, std::memory_order_release);
                    if (issued < kCalls) issue();
                  });
  };
  for (int i = 0; i < kDepth; ++i) issue();
  ASSERT_TRUE(PollUntil(ch.get(), done, kCalls));
  EXPECT_EQ(bad_.load(), 0);
  const ChannelStats st = ch->stats();
  const uint64_t in_batches = st.batched_calls - st.batches_plain;
  EXPECT_GE(in_batches, static_cast<uint64_t>(kCalls / 2))
      << st.batches << " batches, " << st.batches_plain << " of one";
  EXPECT_GT(st.CallsPerBatch(), 4.0);
}

// Nagle's rule sends an async call alone only while no batch is in flight,
// however late that batch is. Here X keeps the server 200 ms; 20 ms on
// (thousands of turnarounds), a burst of 8 async calls follows with nobody
// polling. They share one batch, which the idle flush sends at the next
// poll because X is late. When a late batch let calls go alone, each call of
// the burst found X late and went alone: 8 plain requests. (A CI run on a
// loaded host, where turnarounds learned idle looked short, sent 2 000
// async calls in 1 496 batches that way.)
TEST_F(BatchMechanismTest, ABurstBehindALateBatchSharesABatch) {
  std::unique_ptr<Channel> ch = Connect(PolledBatches(16));
  ASSERT_NE(ch, nullptr);
  std::atomic<int> done{0};
  // A few calls, each alone and awaited, teach the turnaround.
  for (int i = 0; i < 4; ++i) {
    EchoAsync(ch.get(), 700 + i, 8, 0, &done);
    ASSERT_TRUE(PollUntil(ch.get(), done, i + 1));
  }
  const ChannelStats before = ch->stats();
  EchoAsync(ch.get(), 710, 8, 200, &done);  // X: goes alone.
  EXPECT_EQ(ch->stats().batches_plain - before.batches_plain, 1u);
  absl::SleepFor(absl::Milliseconds(20));
  for (int i = 0; i < 8; ++i) EchoAsync(ch.get(), 720 + i, 8, 0, &done);
  ChannelStats st = ch->stats();
  EXPECT_EQ(st.batches_plain - before.batches_plain, 1u)
      << "the burst went alone";
  EXPECT_EQ(st.batches - before.batches, 1u);  // X; the burst is open.
  PollUntilBatches(ch.get(), before.batches + 2, absl::Milliseconds(100));
  st = ch->stats();
  EXPECT_EQ(st.batches - before.batches, 2u);  // X, then the burst's batch.
  EXPECT_EQ(done.load(), 4);                   // X is still being served.
  ASSERT_TRUE(PollUntil(ch.get(), done, 13));
  st = ch->stats();
  EXPECT_EQ(st.batched_calls - before.batched_calls, 9u);
  EXPECT_EQ(st.batches_plain - before.batches_plain, 1u);
  EXPECT_EQ(bad_.load(), 0);
}

// The auto sizer takes the latencies of calls that waited in a batch. An
// async call sent alone (Nagle's rule: each call here finds nothing in
// flight) tells nothing about N: timed, these fast calls would have grown N
// after every window of 4.
TEST_F(BatchMechanismTest, AutoSizerSkipsAsyncCallsSentAlone) {
  ChannelOptions opts;
  opts.batching.mode = BatchMode::kAuto;
  opts.mode = RpcMode::kRemoteFetch;
  opts.batching.size = 4;  // Starting size.
  opts.batching.timeout = absl::Hours(1);
  opts.batching.sizer.latency_limit = absl::Seconds(10);
  opts.batching.sizer.window = 4;
  opts.batching.sizer.min_window = absl::ZeroDuration();
  opts.batching.sizer.max_window = absl::ZeroDuration();
  opts.progress_thread = false;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  std::atomic<int> done{0};
  for (int i = 0; i < 20; ++i) {
    EchoAsync(ch.get(), 600 + i, 8, 0, &done);
    ASSERT_TRUE(PollUntil(ch.get(), done, i + 1));
  }
  EXPECT_EQ(bad_.load(), 0);
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.batches_plain, 20u);
  EXPECT_EQ(st.sizer_adjustments, 0u);
  EXPECT_EQ(ch->batch_size(), 4);
}

// batch_idle_in_flight = 0 is the paper's N, L, T: a lone sync call waits
// for T. (The idle flush is what the sync tests below rely on.)
TEST_F(BatchMechanismTest, IdleFlushOffWaitsForT) {
  ChannelOptions opts;
  opts.batching.mode = BatchMode::kFixed;
  opts.batching.timeout = absl::Milliseconds(20);
  opts.batching.idle_in_flight = 0;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  TestRequest req;
  req.set_id(1);
  TestResponse resp;
  ASSERT_TRUE(CallEcho(ch.get(), nullptr, req, &resp).ok());
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.flushes_timeout, 1u);
  EXPECT_EQ(st.flushes_idle, 0u);
}

// N = 1 sends each call as it is added, whatever T (an hour here) and with
// the idle flush off: fixed N = 1, and auto starting at 1. Without it each
// call would run into its 30 s deadline.
TEST_F(BatchMechanismTest, BatchSizeOneFlushesAtOnce) {
  for (BatchMode mode : {BatchMode::kFixed, BatchMode::kAuto}) {
    ChannelOptions opts;
    opts.batching.mode = mode;
    opts.batching.size = 1;
    opts.batching.timeout = absl::Hours(1);
    opts.batching.idle_in_flight = 0;
    opts.batching.sizer.latency_limit =
        absl::Seconds(1000);               // Auto: N only grows...
    opts.batching.sizer.window = 1 << 20;  // ...and not in this test.
    opts.batching.sizer.max_window = absl::ZeroDuration();
    std::unique_ptr<Channel> ch = Connect(opts);
    ASSERT_NE(ch, nullptr);
    for (int i = 0; i < 20; ++i) {
      TestRequest req;
      req.set_id(i);
      TestResponse resp;
      ClientContext ctx;
      ctx.set_timeout(absl::Seconds(30));
      ASSERT_TRUE(CallEcho(ch.get(), &ctx, req, &resp).ok())
          << BatchModeName(mode) << " call " << i;
      EXPECT_EQ(resp.id(), static_cast<uint64_t>(i));
    }
    EXPECT_EQ(ch->stats().flushes_full, 20u) << BatchModeName(mode);
    EXPECT_EQ(ch->batch_size(), 1) << BatchModeName(mode);
  }
}

// A batch of one goes as the plain request it would have been (no framing
// to share), and the server takes its mode from its method's bucket, not
// the batch bucket. In hybrid mode a slow method then switches its own
// bucket to server-reply and the server WRITEs its results back. When the
// client kept the batch bucket for such a request, it switched that bucket
// instead: the server, reading the method's bit, never pushed, and every
// result was found by a probe READ 1 ms later (calls_server_reply 0, a
// Jakiro YCSB at 4 outstanding 70x slower batched than not).
TEST_F(BatchMechanismTest, ABatchOfOneSentPlainFollowsItsMethodsMode) {
  for (BatchMode mode : {BatchMode::kFixed, BatchMode::kAuto}) {
    const ServerStats before = server_->stats();
    ChannelOptions opts;
    opts.mode = RpcMode::kHybrid;
    opts.batching.mode = mode;
    opts.batching.size = 16;
    opts.batching.timeout = absl::Hours(1);  // Only the idle flush sends.
    opts.progress_thread = false;
    std::unique_ptr<Channel> ch = Connect(opts);
    ASSERT_NE(ch, nullptr);
    // One async call at a time, polled by the test: each opens a batch that
    // the idle flush (the poll) sends as a batch of one.
    std::atomic<int> done{0};
    constexpr int kCalls = 12;
    for (int i = 0; i < kCalls; ++i) {
      EchoAsync(ch.get(), i, 8, /*sleep_ms=*/5, &done);
      ASSERT_TRUE(PollUntil(ch.get(), done, i + 1))
          << BatchModeName(mode) << " call " << i;
    }
    EXPECT_EQ(bad_.load(), 0);
    const ChannelStats st = ch->stats();
    // Every batch was a batch of one, sent plain (5 ms handlers are slow
    // on any fabric: far past R fetches).
    EXPECT_EQ(st.batches_plain, static_cast<uint64_t>(kCalls))
        << BatchModeName(mode);
    // The method switched once, after its first K = 2 slow calls; from
    // then on the server WRITEs the results back (a probe may win the
    // race with a WRITE now and then).
    EXPECT_EQ(st.switches_to_server_reply, 1u) << BatchModeName(mode);
    EXPECT_GE(server_->stats().calls_server_reply -
                  before.calls_server_reply,
              static_cast<uint64_t>(kCalls) - 4)
        << BatchModeName(mode);
  }
}

// Leader/follower combining (batch_sync_combine): while one sync caller's
// batch is in flight, and not late, three more sync callers join the open
// batch; it goes as the first returns. A first call (the server sleeps 1 s
// in it) teaches the connection that its batches take that long, so the
// leader's (1 s too) is not late while the followers join. Without
// combining each follower goes at once, while the leader is still out (the
// default: a blocked caller waits for nobody).
class SyncCombineTest : public BatchMechanismTest,
                        public ::testing::WithParamInterface<bool> {};

TEST_P(SyncCombineTest, SyncCallersJoinTheOpenBatchOnlyWhenCombining) {
  const bool combine = GetParam();
  ChannelOptions opts;
  opts.batching.mode = BatchMode::kFixed;
  opts.batching.size = 16;
  opts.batching.timeout = absl::Hours(1);
  opts.batching.idle_in_flight = 1;
  opts.batching.sync_combine = combine;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  std::atomic<int> bad{0};
  auto call = [&](uint64_t id, uint32_t sleep_ms) {
    TestRequest req;
    req.set_id(id);
    req.set_payload(ExpectedPayload(id, 16));
    req.set_sleep_ms(sleep_ms);
    TestResponse resp;
    ClientContext ctx;
    ctx.set_timeout(absl::Seconds(60));
    absl::Status s = CallEcho(ch.get(), &ctx, req, &resp);
    if (!s.ok() || resp.id() != id || resp.payload() != req.payload()) {
      bad.fetch_add(1);
      ADD_FAILURE() << "call " << id << ": " << s;
    }
  };
  call(1, 1000);  // Turnaround: 1 s.
  std::thread leader(call, 2, 1000);
  // The leader's batch is in flight.
  absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (ch->stats().batches < 2 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  std::vector<std::thread> followers;
  for (uint64_t id = 3; id <= 5; ++id) followers.emplace_back(call, id, 0);
  // The three followers have added their calls (four outstanding with the
  // leader's), well within the leader's second: what has been sent?
  give_up = absl::Now() + absl::Seconds(30);
  while (ch->stats().outstanding_peak < 4 && absl::Now() < give_up) {
    absl::SleepFor(absl::Microseconds(100));
  }
  absl::SleepFor(absl::Milliseconds(50));
  const uint64_t sent_while_leader_out = ch->stats().batched_calls;
  for (auto& t : followers) t.join();
  leader.join();
  EXPECT_EQ(bad.load(), 0);
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.batched_calls, 5u);
  EXPECT_EQ(st.flushes_timeout, 0u);
  if (combine) {
    EXPECT_EQ(sent_while_leader_out, 2u);  // The first call and the leader.
    EXPECT_EQ(st.batches, 3u);
    EXPECT_EQ(st.batches_plain, 2u);  // The first two, alone.
    EXPECT_EQ(st.flushes_idle, 3u);
  } else {
    EXPECT_EQ(sent_while_leader_out, 5u);
  }
}

INSTANTIATE_TEST_SUITE_P(Combine, SyncCombineTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "combine" : "no_combine";
                         });

// The auto sizer decides within a bounded time for a slow caller: 120
// ms of async calls, each awaited and waiting in its batch for T (1 ms; the
// idle flush is off, else each would go alone by Nagle's rule and not be
// timed), do not fill one 1000-call window, but a 50 ms window ends anyway,
// and with every call far under l_limit N grows. Without the max window
// time there would be no decision in the run.
TEST_F(BatchMechanismTest, AutoSizerDecidesForASlowCaller) {
  ChannelOptions opts;
  opts.batching.mode = BatchMode::kAuto;
  opts.batching.size = 4;
  opts.batching.sizer.latency_limit = absl::Seconds(1);
  opts.batching.sizer.window = 1000;
  opts.batching.sizer.min_window = absl::Milliseconds(10);
  opts.batching.sizer.max_window = absl::Milliseconds(50);
  opts.batching.idle_in_flight = 0;
  opts.batching.timeout = absl::Milliseconds(1);
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  std::atomic<int> done{0};
  int calls = 0;
  // Timed from the first call's end, not the loop's start: on a loaded
  // host (TSan in CI) the first call alone can take most of 120 ms, and
  // the sizer sees only calls that finished.
  absl::Time first_done = absl::InfiniteFuture();
  while (absl::Now() - first_done < absl::Milliseconds(120) || calls < 10) {
    EchoAsync(ch.get(), calls, 8, 0, &done);
    ++calls;
    ASSERT_TRUE(WaitForCount(done, calls, absl::Seconds(30)));
    if (calls == 1) first_done = absl::Now();
  }
  ASSERT_LT(calls, 1000);
  EXPECT_EQ(bad_.load(), 0);
  // The sizer is fed once the callbacks have run.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (ch->stats().sizer_adjustments == 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_GE(ch->stats().sizer_adjustments, 1u);
  EXPECT_GT(ch->batch_size(), 4);
}

// The sizer shrinks N below what the open batch already holds while the
// caller adds no more: that batch is full and goes at once (a flush by
// entries), not after T (an hour here; the idle flush is off). Batch 1
// (N = 8 calls, the first sleeping 50 ms in the handler) is in flight
// while calls 9-13 fill batch 2; batch 1's results are all over
// l_limit (1 ns), and the sizer (one-call windows, shrinking at once)
// halves N at each callback (8, 4, 2, 1): at N <= 5 batch 2 is full.
TEST_F(BatchMechanismTest, AShrinkBelowTheOpenBatchSendsIt) {
  ChannelOptions opts;
  opts.batching.mode = BatchMode::kAuto;
  opts.batching.size = 8;
  opts.batching.sizer.latency_limit = absl::Nanoseconds(1);
  opts.batching.sizer.window = 1;
  opts.batching.sizer.min_window = absl::ZeroDuration();
  opts.batching.sizer.max_window = absl::ZeroDuration();
  opts.batching.sizer.holdoff_windows = 0;
  opts.batching.sizer.shrink_windows = 1;
  opts.batching.sizer.peak_guard = false;
  opts.batching.idle_in_flight = 0;
  opts.batching.timeout = absl::Hours(1);
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  std::atomic<int> done{0};
  for (int i = 1; i <= 8; ++i) EchoAsync(ch.get(), i, 8, i == 1 ? 50 : 0, &done);
  for (int i = 9; i <= 13; ++i) EchoAsync(ch.get(), i, 8, 0, &done);
  ASSERT_TRUE(WaitForCount(done, 13, absl::Seconds(20)))
      << "batch 2 was not sent when N shrank (" << done.load() << " done, N "
      << ch->batch_size() << ")";
  EXPECT_EQ(bad_.load(), 0);
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.flushes_full, 2u);
  EXPECT_EQ(st.flushes_timeout, 0u);
  EXPECT_LE(ch->batch_size(), 5);
}

// A batch's result part is larger than F (8 echoes of 100 bytes against
// F = 64): the first batch READs F and then the rest; later batches READ
// the whole part at once, the size of the last part seen. Without that,
// every part costs two READs (and two doorbells).
TEST_F(BatchMechanismTest, BatchResultPartsAreReadWholeOnceTheirSizeIsKnown) {
  ChannelOptions opts = ExactBatches(8);
  opts.fetch.size = 64;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  const ChannelStats before = EchoRounds(ch.get(), 30, 8, 100, 10);
  EXPECT_EQ(bad_.load(), 0);
  const ChannelStats after = ch->stats();
  ASSERT_EQ(after.batches - before.batches, 20u);
  const uint64_t rest_reads = (after.rdma_reads - before.rdma_reads) -
                              (after.fetches - before.fetches);
  EXPECT_LE(rest_reads, 2u) << "over 20 batches, " << after.result_parts -
                                                         before.result_parts
                            << " result parts";
}

// What a batched call posts (issue 17's "<= 0.2 doorbells per call at
// N = 16"), on shm and over verbs in the VM suite: per batch of 16, one
// post list for the request (its WRITE, bell word and summary byte) and
// one READ for its result part, read whole. READs that found the result
// not yet there (retries) depend on timing and are taken out; what is
// left is what the design posts.
TEST_F(BatchMechanismTest, ABatchOfSixteenPostsOneListAndOneReadPerPart) {
  std::unique_ptr<Channel> ch = Connect(ExactBatches(16));
  ASSERT_NE(ch, nullptr);
  // Measured once the part size is known.
  const ChannelStats before = EchoRounds(ch.get(), 25, 16, 8, 5);
  EXPECT_EQ(bad_.load(), 0);
  const ChannelStats after = ch->stats();
  const uint64_t n = after.calls - before.calls;
  ASSERT_EQ(n, 20u * 16);
  const uint64_t parts = after.result_parts - before.result_parts;
  const uint64_t retries = (after.fetches - before.fetches) - parts;
  const uint64_t doorbells = after.work.doorbells - before.work.doorbells;
  ASSERT_GE(doorbells, retries);
  // Re-rings (a request unanswered for rering_after rings again) are
  // timing too, one post list each.
  const uint64_t rerings = after.rerings - before.rerings;
  ASSERT_GE(doorbells, retries + rerings);
  const double per_call =
      static_cast<double>(doorbells - retries - rerings) / n;
  const std::string counts = absl::StrCat(
      "doorbells ", doorbells, ", WQEs ", after.work.wqes - before.work.wqes,
      ", header READ retries ", retries, ", result parts ", parts,
      ", READs ", after.rdma_reads - before.rdma_reads, ", WRITEs ",
      after.rdma_writes - before.rdma_writes, ", rings ",
      after.rings - before.rings, ", re-rings ", after.rerings - before.rerings,
      ", batches ", after.batches - before.batches);
  std::printf("%s\n", counts.c_str());
  EXPECT_LE(per_call, 0.2) << counts;
  // One request list per batch and one READ per part, no rest READs.
  EXPECT_LE(doorbells - retries - rerings,
            (after.batches - before.batches) + parts) << counts;
  EXPECT_EQ(after.rdma_reads - before.rdma_reads,
            after.fetches - before.fetches);
}

// The calls of a batch that call one sync method are served by one call of
// its handler (MethodHandler::RunBatch: docs/rpc.md, "Serving a batch"):
// one run per batch of 16 echoes, and each call counted in the method's
// stats. Without RunBatch the worker runs each entry alone: no runs.
TEST_F(BatchMechanismTest, ABatchOfOneMethodIsServedByOneHandlerCall) {
  std::unique_ptr<Channel> ch = Connect(ExactBatches(16));
  ASSERT_NE(ch, nullptr);
  auto echo_stats = [this]() {
    for (const MethodStats& m : server_->method_stats()) {
      if (m.method == kEchoMethod) return m;
    }
    return MethodStats();
  };
  const ServerStats before = server_->stats();
  const uint64_t calls_before = echo_stats().calls;
  EchoRounds(ch.get(), 4, 16, 8, 0);
  EXPECT_EQ(bad_.load(), 0);
  const ServerStats after = server_->stats();
  EXPECT_EQ(after.batches - before.batches, 4u);
  EXPECT_EQ(after.batch_runs - before.batch_runs, 4u);
  // A batch's method stats are added after its results are published.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  MethodStats m = echo_stats();
  while (m.calls < calls_before + 64 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
    m = echo_stats();
  }
  EXPECT_EQ(m.calls - calls_before, 64u);
  EXPECT_EQ(m.latency_ns.count(), m.calls);
  EXPECT_EQ(m.result_bytes.count(), m.calls);
  EXPECT_EQ(m.failed(), 0u);
}

// A handler without RunBatch (hand-written, not generated) is served entry
// by entry through Run: one batch of 16 gives 16 Runs and no run, and each
// call gets its own outcome, the failing one included. If the worker called
// the default RunBatch as if it had served the entries, batch_runs would
// count; if it skipped the fallback, the replies would not come.
TEST_F(BatchMechanismTest, AHandlerWithoutRunBatchServesEachEntryThroughRun) {
  std::unique_ptr<Channel> ch = Connect(ExactBatches(16));
  ASSERT_NE(ch, nullptr);
  static const uint32_t kMethod = MethodId(HandWrittenService::kEcho);
  constexpr int kCalls = 16;
  constexpr int kFailing = 6;
  std::vector<TestRequest> reqs(kCalls);
  std::vector<TestResponse> resps(kCalls);
  std::vector<absl::Status> got(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    reqs[i].set_id(i + 1);
    reqs[i].set_payload(ExpectedPayload(i + 1, 16));
  }
  reqs[kFailing].set_fail_code(static_cast<int>(absl::StatusCode::kAborted));
  const ServerStats before = server_->stats();
  const int runs_before = hand_written_.echo->runs.load();
  std::atomic<int> done{0};
  for (int i = 0; i < kCalls; ++i) {
    ch->CallAsync(kMethod, reqs[i], &resps[i], nullptr,
                  [&got, &done, i](absl::Status s) {
                    got[i] = std::move(s);
                    done.fetch_add(1, std::memory_order_release);
                  });
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(20)));
  for (int i = 0; i < kCalls; ++i) {
    if (i == kFailing) {
      EXPECT_EQ(got[i].code(), absl::StatusCode::kAborted) << got[i];
      EXPECT_EQ(got[i].message(), "hand-written failure");
      continue;
    }
    ASSERT_TRUE(got[i].ok()) << "call " << i << ": " << got[i];
    EXPECT_EQ(resps[i].id(), reqs[i].id()) << "call " << i;
    EXPECT_EQ(resps[i].payload(), reqs[i].payload()) << "call " << i;
  }
  const ServerStats after = server_->stats();
  EXPECT_EQ(after.batches - before.batches, 1u);
  EXPECT_EQ(after.batch_runs - before.batch_runs, 0u);
  EXPECT_EQ(hand_written_.echo->runs.load() - runs_before, kCalls);
}

// One batch of 16 whose entries take every way out of a run: a handler
// error, a throw, an unknown method (ends the run), a result larger than
// the server's 512-byte result part (placed alone, in a part of its own),
// one larger than the response slot, a request too large for the kept
// messages (run alone through Run), a request that does not parse. Every
// call gets its own outcome, and a plain batch after it is again one run.
TEST_F(BatchMechanismTest, EveryEntryOfAMixedBatchGetsItsOwnOutcome) {
  ChannelOptions opts = ExactBatches(16);
  opts.batching.bytes = 64 * 1024;
  opts.max_request_bytes = 64 * 1024;
  // Room in one response slot for the follow-up round's 16 results at the
  // 5 000 bytes entry 14 returns (a batch keeps room for the largest result
  // its method returned: with the default 64 KiB, N = 16 would never fill).
  opts.max_response_bytes = 96 * 1024;
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  static const uint32_t kEcho = MethodId(kEchoMethod);
  static const uint32_t kUnknown = MethodId("/rfrpc.testing.Test/NoSuchMethod");
  constexpr int kCalls = 16;
  std::vector<TestRequest> reqs(kCalls);
  std::vector<TestResponse> resps(kCalls);
  std::vector<absl::Status> got(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    reqs[i].set_id(i + 1);
    reqs[i].set_payload(ExpectedPayload(i + 1, 8));
  }
  reqs[3].set_fail_code(static_cast<int>(absl::StatusCode::kNotFound));
  reqs[5].set_throw_message("boom");
  reqs[9].set_response_size(1000);
  reqs[11].set_response_size(100 * 1024);
  reqs[13].set_payload(ExpectedPayload(14, 5000));
  NotATestRequest unparsable;  // Invalid UTF-8 in TestRequest.text.
  unparsable.set_text("\xff\xfe");
  const ServerStats before = server_->stats();
  std::atomic<int> done{0};
  for (int i = 0; i < kCalls; ++i) {
    const google::protobuf::MessageLite& req =
        i == 15 ? static_cast<const google::protobuf::MessageLite&>(unparsable)
                : reqs[i];
    ch->CallAsync(i == 7 ? kUnknown : kEcho, req, &resps[i], nullptr,
                  [&got, &done, i](absl::Status s) {
                    got[i] = std::move(s);
                    done.fetch_add(1, std::memory_order_release);
                  });
  }
  ASSERT_TRUE(WaitForCount(done, kCalls, absl::Seconds(20)));
  for (int i = 0; i < kCalls; ++i) {
    SCOPED_TRACE(absl::StrCat("call ", i + 1));
    switch (i) {
      case 3:
        EXPECT_EQ(got[i].code(), absl::StatusCode::kNotFound) << got[i];
        break;
      case 5:
        EXPECT_EQ(got[i].code(), absl::StatusCode::kInternal) << got[i];
        EXPECT_NE(got[i].message().find("threw: boom"), absl::string_view::npos)
            << got[i];
        break;
      case 7:
        EXPECT_EQ(got[i].code(), absl::StatusCode::kUnimplemented) << got[i];
        break;
      case 11:
        EXPECT_EQ(got[i].code(), absl::StatusCode::kResourceExhausted)
            << got[i];
        break;
      case 15:
        EXPECT_EQ(got[i].code(), absl::StatusCode::kInvalidArgument) << got[i];
        break;
      default:
        ASSERT_TRUE(got[i].ok()) << got[i];
        EXPECT_EQ(resps[i].id(), static_cast<uint64_t>(i + 1));
        EXPECT_EQ(resps[i].payload(),
                  i == 9 ? ExpectedPayload(i + 1, 1000) : reqs[i].payload());
    }
  }
  const ServerStats mid = server_->stats();
  EXPECT_EQ(mid.batches - before.batches, 1u);
  EXPECT_GT(mid.batch_runs - before.batch_runs, 1u);
  EchoRounds(ch.get(), 1, 16, 8, 0);
  EXPECT_EQ(bad_.load(), 0);
  EXPECT_EQ(server_->stats().batch_runs - mid.batch_runs, 1u);
}

// Sync callers, 1 and 4 threads on one channel, fixed N = 16 and auto at
// l_limit = 20 us, every reply checked. T is an hour and each call has a
// 10 s deadline: a call that waited for T would fail, so every batch went
// by the idle flush (or N). Timing is batch_bench's sync mode.
struct SyncParam {
  BatchMode batch;
  int threads;
};

class SyncCallerTest : public BatchMechanismTest,
                       public ::testing::WithParamInterface<SyncParam> {};

TEST_P(SyncCallerTest, EveryCallReturnsItsOwnReplyWithoutWaitingForT) {
  ChannelOptions opts;
  opts.batching.mode = GetParam().batch;
  opts.batching.size = 16;
  opts.batching.sizer.latency_limit = absl::Microseconds(20);
  opts.batching.timeout = absl::Hours(1);
  std::unique_ptr<Channel> ch = Connect(opts);
  ASSERT_NE(ch, nullptr);
  const int threads = GetParam().threads;
  constexpr int kCalls = 500;
  std::atomic<int> bad{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const uint64_t id = uint64_t{static_cast<uint32_t>(t)} << 32 | i;
        TestRequest req;
        req.set_id(id);
        req.set_payload(ExpectedPayload(id, i % 64));
        TestResponse resp;
        ClientContext ctx;
        ctx.set_timeout(absl::Seconds(10));
        absl::Status s = CallEcho(ch.get(), &ctx, req, &resp);
        if (!s.ok() || resp.id() != id || resp.payload() != req.payload()) {
          bad.fetch_add(1);
          ADD_FAILURE() << "call " << id << ": " << s;
          return;  // One is enough (a call that waits for T takes 10 s).
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  EXPECT_EQ(bad.load(), 0);
  const ChannelStats st = ch->stats();
  EXPECT_EQ(st.batched_calls, static_cast<uint64_t>(threads * kCalls));
  EXPECT_EQ(st.flushes_timeout, 0u);
  EXPECT_GT(st.flushes_idle, 0u);
  if (threads == 1) {
    // One caller: every batch is its call alone, sent as it waits.
    EXPECT_EQ(st.batches, static_cast<uint64_t>(kCalls));
    EXPECT_EQ(st.flushes_idle, static_cast<uint64_t>(kCalls));
  }
}

// The adaptive publish WRITEs the head word [0, 8) alone, after the rest of
// the header. Here every WRITE of 16 bytes or more is torn (all but its last
// 8 bytes land 300 us before them, which transport.h's ordering contract
// allows) and a 20 ms hot window keeps the worker polling the slots, doorbell
// or not. A single 16-byte header WRITE would show that worker the new head
// word with the previous batch's method_id (its entries' length), and batches
// of varying length would be rejected as malformed (INVALID_ARGUMENT) or cut
// short (the call times out). With the head word written alone and last,
// every call succeeds.
TEST_F(BatchMechanismTest, AdaptivePublishLandsTheHeadWordLast) {
  server_.reset();
  ServerOptions so;
  so.provider = Provider();
  so.address = ListenAddress();
  so.workers = 1;
  so.hot_window = absl::Milliseconds(20);
  server_ = std::make_unique<Server>(so);
  ASSERT_TRUE(server_->RegisterService(&service_).ok());
  ASSERT_TRUE(server_->Start().ok());

  FaultKnobs* knobs = FaultKnobs::Named("torn");
  knobs->Reset();
  ChannelOptions opts;
  opts.provider = absl::StrCat("faulty@torn:", Provider());
  opts.batching.mode = BatchMode::kAdaptive;
  opts.mode = RpcMode::kRemoteFetch;
  opts.batching.size = 2;
  opts.batching.group = 1;
  opts.batching.timeout = absl::Microseconds(200);
  opts.default_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<Channel>> ch =
      Channel::Create(server_->address(), opts);
  ASSERT_TRUE(ch.ok()) << ch.status();
  knobs->set_write_tail_delay(absl::Microseconds(300));
  constexpr int kThreads = 2;
  constexpr int kCalls = 40;
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const uint64_t id = uint64_t{static_cast<uint32_t>(t)} << 32 | i;
        TestRequest req;
        req.set_id(id);
        // Lengths vary, so consecutive batches' entries lengths differ.
        req.set_payload(ExpectedPayload(id, (i * 13 + t * 7) % 41));
        TestResponse resp;
        absl::Status s = CallEcho(ch->get(), nullptr, req, &resp);
        if (!s.ok() || resp.id() != id || resp.payload() != req.payload()) {
          if (bad.fetch_add(1) < 3) ADD_FAILURE() << "call " << id << ": " << s;
        }
      }
    });
  }
  for (auto& c : callers) c.join();
  knobs->Reset();
  EXPECT_EQ(bad.load(), 0);
  const ChannelStats st = (*ch)->stats();
  EXPECT_EQ(st.batched_calls, static_cast<uint64_t>(kThreads * kCalls));
  EXPECT_GT(st.batches, 10u);
  EXPECT_EQ(server_->stats().bad_requests, 0u);
  // The worker did take slots without a doorbell.
  EXPECT_GT(server_->stats().hot_serves, 0u);
}

// The client never posts more work requests than its send queue holds. The
// faulty provider keeps verbs' send-queue rule (an entry is held until a
// completion at or after it has been polled) and delays completions
// 3-6 ms, as a NIC slow to see acknowledgements (long enough that a client
// slowed by a sanitizer still fills the queue first: at 0.2-1 ms a TSan
// build filled it in only ~3 runs of 4, and the waits this test asserts
// never came in the others). In server-reply mode
// results arrive without any completion, so 2000 async calls under
// adaptive batching (a group WRITE per call) would run past
// max_outstanding and the connection would fail with "send queue full";
// with the accounting, calls wait for completions (send_queue_waits) and
// all succeed.
TEST_F(BatchMechanismTest, TheSendQueueIsNeverOverfilled) {
  FaultKnobs* knobs = FaultKnobs::Named("sq");
  knobs->Reset();
  knobs->set_emulate_send_queue(true);
  knobs->set_completion_delay(absl::Milliseconds(3), absl::Milliseconds(6));
  ChannelOptions opts;
  opts.provider = absl::StrCat("faulty@sq:", Provider());
  opts.batching.mode = BatchMode::kAdaptive;
  opts.mode = RpcMode::kServerReply;
  opts.batching.size = 8;
  opts.batching.group = 1;
  opts.default_timeout = absl::Seconds(120);
  absl::StatusOr<std::unique_ptr<Channel>> ch =
      Channel::Create(server_->address(), opts);
  ASSERT_TRUE(ch.ok()) << ch.status();
  constexpr int kCalls = 2000;
  std::atomic<int> done{0};
  for (int i = 0; i < kCalls; ++i) EchoAsync(ch->get(), i, 8 + i % 24, 0, &done);
  EXPECT_TRUE(WaitForCount(done, kCalls, absl::Seconds(120)));
  EXPECT_EQ(bad_.load(), 0);
  EXPECT_EQ(knobs->counters().send_queue_full, 0u);
  EXPECT_GT((*ch)->stats().send_queue_waits, 0u);
  knobs->Reset();
}

INSTANTIATE_TEST_SUITE_P(
    SyncCallers, SyncCallerTest,
    ::testing::Values(SyncParam{BatchMode::kFixed, 1},
                      SyncParam{BatchMode::kFixed, 4},
                      SyncParam{BatchMode::kAuto, 1},
                      SyncParam{BatchMode::kAuto, 4}),
    [](const ::testing::TestParamInfo<SyncParam>& info) {
      return std::string(BatchModeName(info.param.batch)) + "_" +
             std::to_string(info.param.threads) + "threads";
    });

}  // namespace
}  // namespace testing
}  // namespace rfrpc
