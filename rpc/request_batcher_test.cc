// Copyright 2026 The rfrpc Authors.
//
// The request batcher's decisions with plain numbers for times: no
// connection, no transport, no clock but the tests' own.

#include "rpc/request_batcher.h"

#include <vector>

#include "gtest/gtest.h"

namespace rfrpc {
namespace internal {
namespace {

BatchingOptions Fixed(int n) {
  BatchingOptions o;
  o.mode = BatchMode::kFixed;
  o.size = n;
  return o;
}

// A clock the decision must not read.
int64_t NoClock() {
  ADD_FAILURE() << "the clock was read";
  return 0;
}

// A batcher with no batch in flight: the oldest-publish scan must not run.
int64_t NoScan(int64_t now) {
  ADD_FAILURE() << "the slots were scanned";
  return now;
}

TEST(RequestBatcherTest, InitialSizeIsFixedNOrAutosClampedStart) {
  EXPECT_EQ(RequestBatcher::InitialSize(Fixed(16)), 16);
  EXPECT_EQ(RequestBatcher::InitialSize(Fixed(0)), 1);
  BatchingOptions a = Fixed(500);
  a.mode = BatchMode::kAuto;
  EXPECT_EQ(RequestBatcher::InitialSize(a), AutoBatchSizer::kMaxSize);
  // What a fresh batcher uses is what the channel reports before any
  // decision.
  EXPECT_EQ(RequestBatcher(a).SizeNow(), RequestBatcher::InitialSize(a));
  EXPECT_EQ(RequestBatcher(Fixed(0)).SizeNow(), 1);
}

TEST(RequestBatcherTest, AsyncBatchGoesAtNAndSyncAsksTheIdleFlush) {
  RequestBatcher b(Fixed(4));
  for (int n = 1; n < 4; ++n) {
    const RequestBatcher::Added a = b.AfterAdd(n, n, /*sync=*/false, false);
    EXPECT_EQ(a.flush, FlushReason::kNone) << n;
    EXPECT_FALSE(a.check_idle) << n;  // The poller flushes async batches.
    EXPECT_FALSE(a.send_group) << n;  // Not adaptive.
  }
  EXPECT_EQ(b.AfterAdd(4, 4, false, false).flush, FlushReason::kEntries);
  const RequestBatcher::Added sync = b.AfterAdd(2, 2, /*sync=*/true, false);
  EXPECT_EQ(sync.flush, FlushReason::kNone);
  EXPECT_TRUE(sync.check_idle);
  // A held batch goes when the previous publish completes, not at N.
  const RequestBatcher::Added held = b.AfterAdd(4, 4, true, /*held=*/true);
  EXPECT_EQ(held.flush, FlushReason::kNone);
  EXPECT_FALSE(held.check_idle);
}

TEST(RequestBatcherTest, AdaptiveSendsGroupsAheadAndHoldsAPublishInFlight) {
  BatchingOptions o = Fixed(16);
  o.mode = BatchMode::kAdaptive;
  o.group = 3;
  RequestBatcher b(o);
  EXPECT_FALSE(b.AfterAdd(2, 2, false, false).send_group);
  EXPECT_TRUE(b.AfterAdd(3, 3, false, false).send_group);
  EXPECT_TRUE(b.AfterAdd(7, 3, false, /*held=*/true).send_group);
  EXPECT_FALSE(b.AfterAdd(4, 1, false, false).send_group);

  EXPECT_TRUE(b.PublishesNow(FlushReason::kEntries));
  b.Sent();
  b.PublishPosted(/*now=*/1000);
  EXPECT_TRUE(b.publish_in_flight());
  EXPECT_EQ(b.in_flight(), 1);
  // The elastic threshold: the next publish waits for this one...
  EXPECT_FALSE(b.PublishesNow(FlushReason::kEntries));
  EXPECT_FALSE(b.PublishesNow(FlushReason::kTimeout));
  EXPECT_FALSE(b.PublishesNow(FlushReason::kIdle));
  // ...unless the batch is out of room.
  EXPECT_TRUE(b.PublishesNow(FlushReason::kBytes));
  EXPECT_FALSE(b.PublishLost(1000 + 50, 100));
  EXPECT_TRUE(b.PublishLost(1000 + 101, 100));
  b.PublishCompleted();
  EXPECT_TRUE(b.PublishesNow(FlushReason::kEntries));
  EXPECT_FALSE(b.PublishLost(1000 + 101, 100));
  EXPECT_EQ(b.in_flight(), 1);  // Still in flight until its slot frees.
  b.Retired();
  EXPECT_EQ(b.in_flight(), 0);
}

TEST(RequestBatcherTest, FixedAndAutoNeverHoldAPublish) {
  for (BatchMode mode : {BatchMode::kFixed, BatchMode::kAuto}) {
    BatchingOptions o = Fixed(8);
    o.mode = mode;
    RequestBatcher b(o);
    b.Sent();
    b.PublishPosted(10);  // Whatever the connection says.
    EXPECT_TRUE(b.PublishesNow(FlushReason::kEntries));
    EXPECT_TRUE(b.PublishesNow(FlushReason::kIdle));
  }
}

TEST(RequestBatcherTest, BytesFlushFirstPastLOrTheSlot) {
  BatchingOptions o = Fixed(64);
  o.bytes = 100;
  RequestBatcher b(o);
  const size_t cap = 1000;
  // An empty batch takes any entry that fits the slot, even past L.
  EXPECT_EQ(b.BeforeAdd(0, 0, 200, cap), FlushReason::kNone);
  EXPECT_EQ(b.BeforeAdd(1, 60, 40, cap), FlushReason::kNone);
  EXPECT_EQ(b.BeforeAdd(1, 60, 41, cap), FlushReason::kBytes);
  // The slot: entries plus one budget code per entry, padded
  // (batch_format.h).
  o.bytes = 1 << 20;
  RequestBatcher big(o);
  const size_t codes = wire::BudgetCodesBytes(3);
  EXPECT_TRUE(RequestBatcher::Fits(2, 900, cap - 900 - codes, cap));
  EXPECT_FALSE(RequestBatcher::Fits(2, 900, cap - 900 - codes + 1, cap));
  EXPECT_EQ(big.BeforeAdd(2, 900, cap - 900 - codes, cap), FlushReason::kNone);
  EXPECT_EQ(big.BeforeAdd(2, 900, cap - 900 - codes + 1, cap),
            FlushReason::kBytes);
}

TEST(RequestBatcherTest, ACallOpeningABatchMayGoPlainOutsideAdaptive) {
  RequestBatcher f(Fixed(16));
  const auto room = [] { return true; };
  const auto no_room = [] { return false; };
  EXPECT_TRUE(f.MayGoAlone(/*batch_open=*/false, room));
  EXPECT_FALSE(f.MayGoAlone(true, room));
  EXPECT_FALSE(f.MayGoAlone(false, no_room));
  // Room is not asked of a call that joins an open batch.
  EXPECT_FALSE(f.MayGoAlone(true, [] {
    ADD_FAILURE() << "room asked of a call joining an open batch";
    return true;
  }));
  BatchingOptions o = Fixed(16);
  o.mode = BatchMode::kAdaptive;
  EXPECT_FALSE(RequestBatcher(o).MayGoAlone(false, room));

  EXPECT_TRUE(f.SendsPlain(1, /*live=*/true));
  EXPECT_FALSE(f.SendsPlain(1, /*live=*/false));
  EXPECT_FALSE(f.SendsPlain(2, true));
  EXPECT_FALSE(RequestBatcher(o).SendsPlain(1, true));
}

TEST(RequestBatcherTest, SyncBatchIsIdleAtOnceWithoutSyncCombine) {
  RequestBatcher b(Fixed(16));
  b.Sent();  // A batch in flight does not hold a sync caller.
  int64_t now = 0;
  EXPECT_TRUE(b.Idle(1, /*sync=*/true, /*adders=*/0, 0, &now, NoClock, NoScan));
  EXPECT_EQ(now, 0);
  BatchingOptions off = Fixed(16);
  off.idle_in_flight = 0;  // The paper's N, L, T only.
  EXPECT_FALSE(RequestBatcher(off).Idle(1, true, /*adders=*/0, 0, &now, NoClock,
                                        NoScan));
}

TEST(RequestBatcherTest, AsyncBatchWaitsForBatchesInFlightWorthWaitingFor) {
  BatchingOptions o = Fixed(16);
  o.idle_in_flight = 1;
  RequestBatcher b(o);
  int64_t now = 0;
  // Nothing in flight, nobody adding: nothing is coming.
  EXPECT_TRUE(b.Idle(3, false, /*adders=*/0, 1, &now, NoClock, NoScan));
  b.Sent();
  b.Turnaround(4000);  // Typical turnaround 4 us: worth up to 8 us.
  int scans = 0;
  auto oldest = [&](int64_t) {
    ++scans;
    return int64_t{1000};
  };
  now = 0;
  EXPECT_FALSE(b.Idle(
      3, false, /*adders=*/0, 900, &now, [] { return int64_t{8999}; }, oldest));
  EXPECT_EQ(now, 8999);  // Read, as a wait applied.
  now = 9001;
  EXPECT_TRUE(b.Idle(3, false, /*adders=*/0, 900, &now, NoClock, oldest));
  EXPECT_EQ(scans, 2);
  // A batch with a sync call waits too with sync_combine.
  o.sync_combine = true;
  RequestBatcher c(o);
  c.Sent();
  c.Turnaround(4000);
  now = 2000;
  EXPECT_FALSE(
      c.Idle(1, /*sync=*/true, /*adders=*/0, 1900, &now, NoClock, oldest));
  // ...and stops waiting once the batch in flight is late.
  now = 1000 + 8001;
  EXPECT_TRUE(
      c.Idle(1, /*sync=*/true, /*adders=*/0, 1900, &now, NoClock, oldest));
}

// An async call goes alone only while fewer than idle_in_flight batches are
// out and nobody is adding; a late batch in flight does not send it (it
// opens a batch, which the idle flush sends).
TEST(RequestBatcherTest, AnAsyncCallGoesAloneOnlyWithNothingInFlight) {
  BatchingOptions o = Fixed(16);
  o.idle_in_flight = 1;
  RequestBatcher b(o);
  EXPECT_TRUE(b.AsyncGoesAlone(/*adders=*/0));
  EXPECT_FALSE(b.AsyncGoesAlone(/*adders=*/1));
  b.Sent();
  b.Turnaround(4000);
  EXPECT_FALSE(b.AsyncGoesAlone(0));  // However long it has been out.
  b.Retired();
  EXPECT_TRUE(b.AsyncGoesAlone(0));
  o.idle_in_flight = 2;
  RequestBatcher two(o);
  two.Sent();
  EXPECT_TRUE(two.AsyncGoesAlone(0));
  two.Sent();
  EXPECT_FALSE(two.AsyncGoesAlone(0));
  o.idle_in_flight = 0;  // The idle flush off: every call opens a batch.
  EXPECT_FALSE(RequestBatcher(o).AsyncGoesAlone(0));
}

TEST(RequestBatcherTest, AddersHoldTheBatchOnlyBriefly) {
  RequestBatcher b(Fixed(16));
  int64_t now = 10'000;
  EXPECT_FALSE(
      b.Idle(2, false, /*adders=*/1, now - 100, &now, NoClock, NoScan));
  EXPECT_TRUE(b.Idle(2, false, /*adders=*/1, now - FlushPolicy::kAdderWaitNs,
                     &now, NoClock, NoScan));
  EXPECT_TRUE(b.Idle(2, false, /*adders=*/0, now - 100, &now, NoClock, NoScan));
  // A batch being opened now (first_ns 0) is no age at all, whatever the
  // clock says: it waits for the adders.
  now = 1'000'000;
  EXPECT_FALSE(
      b.Idle(1, false, /*adders=*/1, /*first_ns=*/0, &now, NoClock, NoScan));
}

TEST(RequestBatcherTest, TimeoutComesFromTheOptions) {
  BatchingOptions o = Fixed(16);
  o.timeout = absl::Microseconds(20);
  RequestBatcher b(o);
  EXPECT_EQ(b.OnTick(1, 1000, 1000 + 19'999), FlushReason::kNone);
  EXPECT_EQ(b.OnTick(1, 1000, 1000 + 20'000), FlushReason::kTimeout);
  EXPECT_EQ(b.OnTick(0, 1000, 1000 + 20'000), FlushReason::kNone);
}

BatchingOptions AutoFrom(int n) {
  BatchingOptions o = Fixed(n);
  o.mode = BatchMode::kAuto;
  o.sizer.latency_limit = absl::Microseconds(10);
  o.sizer.window = 10;
  o.sizer.min_window = absl::ZeroDuration();
  o.sizer.max_window = absl::ZeroDuration();
  o.sizer.shrink_windows = 1;
  o.sizer.holdoff_windows = 0;
  o.sizer.peak_guard = false;
  return o;
}

TEST(RequestBatcherTest, AShrinkBelowTheOpenBatchSendsIt) {
  RequestBatcher b(AutoFrom(32));
  ASSERT_EQ(b.SizeNow(), 32);
  // A window of calls all at 4x the bound: N shrinks (at most by half).
  const std::vector<int64_t> slow(10, 40'000);
  const RequestBatcher::Recorded r = b.Record(slow, 1'000'000,
                                              /*open_entries=*/20);
  EXPECT_EQ(r.adjustments, 1);
  EXPECT_EQ(b.SizeNow(), 16);
  EXPECT_TRUE(r.open_batch_full);  // 20 calls waiting, N = 16.
  // The next shrink, to 8, with an open batch of 5: not full yet.
  const RequestBatcher::Recorded r2 = b.Record(slow, 2'000'000, 5);
  EXPECT_EQ(b.SizeNow(), 8);
  EXPECT_FALSE(r2.open_batch_full);
  // No batch open (or a held one, which the connection passes as 0).
  EXPECT_FALSE(b.Record(slow, 3'000'000, 0).open_batch_full);
  // The entries a result part holds: all of a batch filled under the old N.
  EXPECT_EQ(b.PartEntries(20), 20);
  EXPECT_EQ(b.PartEntries(2), b.SizeNow());
}

TEST(RequestBatcherTest, AFastWindowGrowsNAndIsNoFlush) {
  RequestBatcher b(AutoFrom(4));
  const std::vector<int64_t> fast(10, 1'000);
  // An open batch already past the new N: only a shrink sends it.
  const RequestBatcher::Recorded r = b.Record(fast, 1'000'000, 100);
  EXPECT_EQ(r.adjustments, 1);
  EXPECT_GT(b.SizeNow(), 4);
  EXPECT_FALSE(r.open_batch_full);
}

TEST(RequestBatcherTest, OnlyAutoTimesAndOnlyBatchedCallsThatSucceeded) {
  RequestBatcher a(AutoFrom(8));
  EXPECT_TRUE(a.Times(/*ok=*/true, /*alone=*/false));
  EXPECT_FALSE(a.Times(false, false));
  EXPECT_FALSE(a.Times(true, /*alone=*/true));
  RequestBatcher f(Fixed(8));
  EXPECT_FALSE(f.Times(true, false));
  // Fixed N ignores latencies.
  const std::vector<int64_t> slow(100, 1'000'000);
  EXPECT_EQ(f.Record(slow, 1, 8).adjustments, 0);
  EXPECT_EQ(f.sizer().windows(), 0u);
  EXPECT_EQ(f.SizeNow(), 8);
  EXPECT_EQ(f.PartEntries(20), 8);
}

TEST(RequestBatcherTest, SyncLatencyRunsFromStartToNow) {
  RequestBatcher b(AutoFrom(32));
  // Nine calls under the bound and one far above it: k = 0.1 > alpha
  // (0.05), a shrink. Had the start been ignored (latency = now), all ten
  // would be above.
  for (int i = 0; i < 9; ++i) b.RecordSync(1'000'000, 1'002'000, 0);
  b.RecordSync(1'000'000, 1'050'000, 0);
  EXPECT_EQ(b.sizer().windows(), 1u);
  EXPECT_DOUBLE_EQ(b.sizer().last_k(), 0.1);
}

int64_t fake_now = 0;
int clock_reads = 0;
int64_t FakeClock() {
  ++clock_reads;
  fake_now += 800;
  return fake_now;
}

TEST(CallbackLatenciesTest, ReadsTheClockEveryEighthCallbackAndAtTheEnd) {
  fake_now = -700;  // Reads give 100, 900, 1700.
  clock_reads = 0;
  CallbackLatencies lat(FakeClock);
  EXPECT_TRUE(lat.empty());
  for (int i = 0; i < 10; ++i) lat.Before(/*start_ns=*/0);
  EXPECT_EQ(clock_reads, 2);  // Before callbacks 0 and 8.
  int64_t end = 0;
  const absl::Span<const int64_t> got = lat.Finish(&end);
  EXPECT_EQ(clock_reads, 3);
  EXPECT_EQ(end, 1700);
  // Callbacks 0-7 ran from 100 to 900, 8-9 from 900 to 1700.
  EXPECT_EQ(std::vector<int64_t>(got.begin(), got.end()),
            (std::vector<int64_t>{100, 200, 300, 400, 500, 600, 700, 800, 900,
                                  1300}));
}

TEST(CallbackLatenciesTest, ALastGroupOfOneNeedsNoMoreReads) {
  fake_now = 0;
  clock_reads = 0;
  CallbackLatencies lat(FakeClock);
  lat.Before(300);  // Its callback starts at 800.
  int64_t end = 0;
  const absl::Span<const int64_t> got = lat.Finish(&end);
  EXPECT_EQ(clock_reads, 1);
  EXPECT_EQ(end, 800);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], 500);
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
