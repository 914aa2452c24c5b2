// Copyright 2026 The rfrpc Authors.
//
// WorkFinder with a plain buffer as the doorbell area and a fake clock.
// Rings are written the way a client's WRITEs land: bell word, then summary
// byte.

#include "rpc/work_finder.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace rfrpc {
namespace internal {
namespace {

constexpr int64_t kWindow = 20000;

class WorkFinderTest : public ::testing::Test {
 protected:
  explicit WorkFinderTest(uint32_t capacity = 256, uint32_t direct_groups = 0,
                          uint32_t max_hot_groups = 0)
      : layout_{capacity},
        mem_((layout_.Bytes() + 7) / 8, 0),
        finder_(reinterpret_cast<char*>(mem_.data()),
                WorkFinder::Options{capacity, kWindow, /*max_hot=*/4,
                                    direct_groups, max_hot_groups}) {}

  // A bell word alone, as if its summary byte's WRITE were still in flight
  // (or as if the worker never read summaries).
  void RingWordOnly(uint32_t bell, uint32_t mask) {
    const uint64_t word = wire::BellWord(++count_[bell], mask);
    std::memcpy(bells() + layout_.WordOffset(bell), &word, 8);
  }

  char* bells() { return reinterpret_cast<char*>(mem_.data()); }

  // What a client's ring stores: its bell word, then its summary byte.
  void Ring(uint32_t bell, uint32_t mask) {
    const uint64_t word = wire::BellWord(++count_[bell], mask);
    std::memcpy(bells() + layout_.WordOffset(bell), &word, 8);
    bells()[wire::BellsLayout::SummaryOffset(bell)] = 1;
  }

  // Adds a bell and takes the one look Collect gives every new connection.
  void Add(uint32_t bell, uint32_t slots) {
    finder_.Add(bell, slots);
    std::vector<WorkFinder::Candidate> first;
    finder_.Collect(INT64_MIN, &first);
  }

  std::set<std::pair<uint32_t, uint32_t>> Collect(int64_t now) {
    std::vector<WorkFinder::Candidate> out;
    finder_.Collect(now, &out);
    std::set<std::pair<uint32_t, uint32_t>> got;
    for (const auto& c : out) got.insert({c.bell, c.slot});
    return got;
  }

  using Set = std::set<std::pair<uint32_t, uint32_t>>;

  wire::BellsLayout layout_;
  std::vector<uint64_t> mem_;
  WorkFinder finder_;
  std::vector<uint32_t> count_ = std::vector<uint32_t>(16384, 0);
};

TEST_F(WorkFinderTest, ARingBeforeTheWorkerTookTheConnectionIsFound) {
  // The client rang before the worker took the connection on, and a
  // Collect took the summary byte while nobody was at the bell.
  Ring(3, wire::SlotBit(1));
  EXPECT_TRUE(Collect(0).empty());
  finder_.Add(3, 2);
  EXPECT_EQ(Collect(1), (Set{{3, 1}}));
  EXPECT_TRUE(Collect(2).empty());
  // A bell whose word did not move is not looked at.
  finder_.Add(4, 2);
  EXPECT_TRUE(Collect(3).empty());
  // Nor one that left again.
  Ring(5, wire::SlotBit(0));
  finder_.Add(5, 2);
  finder_.Remove(5);
  EXPECT_TRUE(Collect(4).empty());
}

TEST_F(WorkFinderTest, NothingRungNothingFound) {
  finder_.Add(0, 8);
  finder_.Add(200, 8);
  EXPECT_TRUE(Collect(1).empty());
  EXPECT_FALSE(finder_.AnyRung());
  EXPECT_EQ(finder_.rings(), 0u);
}

TEST_F(WorkFinderTest, ARingNamesItsSlotsOnce) {
  Add(3, 8);
  Add(70, 8);  // Another group.
  Ring(70, wire::SlotBit(2) | wire::SlotBit(5));
  EXPECT_TRUE(finder_.AnyRung());
  EXPECT_EQ(Collect(0), (Set{{70, 2}, {70, 5}}));
  EXPECT_TRUE(Collect(1).empty()) << "the same ring is not work twice";
  EXPECT_FALSE(finder_.AnyRung()) << "the summary byte was taken";
  EXPECT_TRUE(Collect(2).empty());
  EXPECT_EQ(finder_.rings(), 1u);
}

TEST_F(WorkFinderTest, TheSummaryByteIsClearedOnlyInTheNextRound) {
  // The round that finds a ring goes from the summary straight to the bell
  // words and on to the request; the clear (a round trip for the line the
  // client's byte store owns) waits for the next round.
  Add(3, 8);
  Ring(3, wire::SlotBit(1));
  EXPECT_EQ(Collect(0), (Set{{3, 1}}));
  EXPECT_EQ(bells()[wire::BellsLayout::SummaryOffset(3)], 1);
  EXPECT_TRUE(Collect(1).empty());
  EXPECT_EQ(bells()[wire::BellsLayout::SummaryOffset(3)], 0);
}

TEST_F(WorkFinderTest, ARingBeforeTheDeferredClearIsFound) {
  // Another ring of the group lands after its bell words were read and
  // before the byte was cleared: the clear takes the byte, and the group's
  // words are read again.
  Add(0, 8);
  Add(1, 8);
  Ring(0, wire::SlotBit(0));
  EXPECT_EQ(Collect(0), (Set{{0, 0}}));
  Ring(1, wire::SlotBit(2));
  Ring(0, wire::SlotBit(5));
  EXPECT_EQ(Collect(1), (Set{{0, 5}, {1, 2}}));
  EXPECT_TRUE(Collect(2).empty());
  EXPECT_FALSE(finder_.AnyRung());
  EXPECT_EQ(finder_.rings(), 3u);
}

TEST_F(WorkFinderTest, AMaskOfZeroMeansEverySlot) {
  Add(9, 3);
  Ring(9, 0);
  EXPECT_EQ(Collect(0), (Set{{9, 0}, {9, 1}, {9, 2}}));
}

TEST_F(WorkFinderTest, SlotsAbove31ShareTheirBit) {
  Add(1, 40);
  Ring(1, wire::SlotBit(33));
  EXPECT_EQ(Collect(0), (Set{{1, 1}, {1, 33}}));
}

TEST_F(WorkFinderTest, TwoRingsOfOneGroupBeforeACollectAreBothSeen) {
  Add(0, 8);
  Add(1, 8);
  Ring(0, wire::SlotBit(0));
  Ring(1, wire::SlotBit(4));
  EXPECT_EQ(Collect(0), (Set{{0, 0}, {1, 4}}));
}

TEST_F(WorkFinderTest, AWordRewrittenWithoutItsSummaryByteWaitsForTheByte) {
  // The summary byte is what makes the worker look: a bell word alone (the
  // byte's WRITE still in flight) is found once the byte lands.
  Add(5, 8);
  const uint64_t word = wire::BellWord(1, wire::SlotBit(1));
  std::memcpy(bells() + layout_.WordOffset(5), &word, 8);
  EXPECT_TRUE(Collect(0).empty());
  bells()[wire::BellsLayout::SummaryOffset(5)] = 1;
  EXPECT_EQ(Collect(1), (Set{{5, 1}}));
}

TEST_F(WorkFinderTest, APreviousOwnersRingIsNotNewWork) {
  Add(7, 8);
  Ring(7, wire::SlotBit(0));
  EXPECT_EQ(Collect(0).size(), 1u);
  finder_.Remove(7);
  finder_.Add(7, 8);  // A new connection takes the bell.
  bells()[wire::BellsLayout::SummaryOffset(7)] = 1;  // Stray summary byte.
  EXPECT_TRUE(Collect(2).empty()) << "the old ring was seen already";
  Ring(7, wire::SlotBit(3));
  EXPECT_EQ(Collect(3), (Set{{7, 3}}));
}

TEST_F(WorkFinderTest, ASlotServedTwiceWithinTheWindowTurnsHot) {
  Add(2, 8);
  EXPECT_FALSE(finder_.OnServed(2, 0, 1000)) << "first serve: no history";
  EXPECT_TRUE(finder_.OnServed(2, 0, 5000));
  EXPECT_EQ(finder_.hot(), 1u);
  // Polled every round until its window ends, then once more.
  EXPECT_EQ(Collect(6000), (Set{{2, 0}}));
  EXPECT_EQ(Collect(5000 + kWindow), (Set{{2, 0}}));
  EXPECT_EQ(Collect(5000 + kWindow + 1), (Set{{2, 0}})) << "the final look";
  EXPECT_TRUE(Collect(5000 + kWindow + 2).empty());
  EXPECT_EQ(finder_.hot(), 0u);
}

// A client skips the doorbell only within half the window of its previous
// request, so a slot served half a window apart or more is not polled: its
// client rings anyway.
TEST_F(WorkFinderTest, ServesHalfTheWindowApartOrMoreStayCold) {
  Add(2, 8);
  EXPECT_FALSE(finder_.OnServed(2, 0, 0));
  EXPECT_FALSE(finder_.OnServed(2, 0, kWindow / 2));
  EXPECT_FALSE(finder_.OnServed(2, 0, kWindow));
  EXPECT_FALSE(finder_.OnServed(2, 0, 3 * kWindow));
  EXPECT_EQ(finder_.hot(), 0u);
  EXPECT_TRUE(Collect(3 * kWindow + 1).empty());
}

TEST_F(WorkFinderTest, EachServeExtendsAHotSlotsWindow) {
  Add(2, 8);
  finder_.OnServed(2, 1, 0);
  int64_t t = 0;
  for (int i = 0; i < 10; ++i) {
    t += kWindow / 2 - 1;
    EXPECT_TRUE(finder_.OnServed(2, 1, t));
    EXPECT_EQ(Collect(t + kWindow - 1), (Set{{2, 1}}));
  }
  EXPECT_EQ(finder_.hot(), 1u) << "one entry, however often it is served";
}

TEST_F(WorkFinderTest, TheHotListIsBounded) {
  for (uint32_t b = 0; b < 6; ++b) {
    Add(b, 8);
    finder_.OnServed(b, 0, 0);
  }
  int hot = 0;
  for (uint32_t b = 0; b < 6; ++b) hot += finder_.OnServed(b, 0, 10) ? 1 : 0;
  EXPECT_EQ(hot, 4) << "max_hot = 4: the other clients are told to ring";
  EXPECT_EQ(finder_.hot(), 4u);
  // A slot already hot stays hot while the list is full.
  EXPECT_TRUE(finder_.OnServed(0, 0, 20));
}

TEST_F(WorkFinderTest, KeepPollingLooksForAnotherWindow) {
  Add(4, 8);
  Ring(4, wire::SlotBit(6));
  EXPECT_EQ(Collect(100), (Set{{4, 6}}));
  finder_.KeepPolling(4, 6, 100);  // E.g. its push still in flight.
  EXPECT_EQ(Collect(200), (Set{{4, 6}}));
  EXPECT_EQ(Collect(100 + kWindow + 1), (Set{{4, 6}}));
  EXPECT_TRUE(Collect(100 + kWindow + 2).empty());
}

TEST_F(WorkFinderTest, RemoveDropsHotSlots) {
  Add(1, 8);
  Add(2, 8);
  for (uint32_t b : {1u, 2u}) {
    finder_.OnServed(b, 3, 0);
    finder_.OnServed(b, 3, 10);
  }
  EXPECT_EQ(finder_.hot(), 2u);
  finder_.Remove(1);
  EXPECT_EQ(finder_.hot(), 1u);
  EXPECT_EQ(Collect(20), (Set{{2, 3}}));
}

// A worker whose connections fit in 2 groups (16 bells) reads their bell
// words every round, without the summary.
class WorkFinderDirectTest : public WorkFinderTest {
 protected:
  WorkFinderDirectTest() : WorkFinderTest(256, /*direct_groups=*/2) {}
};

TEST_F(WorkFinderDirectTest, ARingIsFoundWithoutItsSummaryByte) {
  Add(3, 8);
  Add(12, 8);
  EXPECT_TRUE(Collect(0).empty());
  EXPECT_FALSE(finder_.AnyRung());
  RingWordOnly(12, wire::SlotBit(5));
  EXPECT_TRUE(finder_.AnyRung());
  EXPECT_EQ(Collect(1), (Set{{12, 5}}));
  EXPECT_FALSE(finder_.AnyRung());
  EXPECT_TRUE(Collect(2).empty()) << "a ring is named once";
  EXPECT_EQ(finder_.rings(), 1u);
}

TEST_F(WorkFinderDirectTest, SummaryBytesNeitherNameWorkNorKeepAWorkerAwake) {
  // Clients still write their summary byte (they cannot know how the
  // worker looks); in direct mode nothing clears it, so it must not count.
  Add(1, 8);
  Ring(1, wire::SlotBit(2));
  EXPECT_EQ(Collect(0), (Set{{1, 2}}));
  ASSERT_NE(bells()[wire::BellsLayout::SummaryOffset(1)], 0);
  EXPECT_FALSE(finder_.AnyRung());
  EXPECT_TRUE(Collect(1).empty());
}

TEST_F(WorkFinderDirectTest, ABellPastTheDirectGroupsTurnsTheSummaryOn) {
  Add(2, 8);
  Add(16, 8);  // Group 2: three groups in use, past direct_groups.
  RingWordOnly(2, wire::SlotBit(1));
  EXPECT_TRUE(Collect(0).empty()) << "the summary decides again";
  bells()[wire::BellsLayout::SummaryOffset(2)] = 1;
  EXPECT_EQ(Collect(1), (Set{{2, 1}}));
  Ring(16, wire::SlotBit(0));
  EXPECT_EQ(Collect(2), (Set{{16, 0}}));
}

// Past the direct groups, a group the summary named is read directly for a
// window (at most 2 groups here).
class WorkFinderHotGroupTest : public WorkFinderTest {
 protected:
  WorkFinderHotGroupTest()
      : WorkFinderTest(256, /*direct_groups=*/0, /*max_hot_groups=*/2) {}
};

TEST_F(WorkFinderHotGroupTest, ARungGroupIsReadDirectlyForAWindow) {
  for (uint32_t b = 0; b < 16; ++b) Add(b, 8);
  Ring(0, wire::SlotBit(0));
  EXPECT_EQ(Collect(0), (Set{{0, 0}}));
  EXPECT_EQ(finder_.hot_groups(), 1u);
  // The next ring of group 0 is found before its summary byte lands.
  RingWordOnly(1, wire::SlotBit(1));
  EXPECT_EQ(Collect(10), (Set{{1, 1}}));
  // Group 1 was not rung: a word there waits for its byte.
  RingWordOnly(9, wire::SlotBit(2));
  EXPECT_TRUE(Collect(20).empty());
  bells()[wire::BellsLayout::SummaryOffset(9)] = 1;
  EXPECT_EQ(Collect(30), (Set{{9, 2}}));
  EXPECT_EQ(finder_.hot_groups(), 2u);
  // Past group 0's window, which runs from its last look through the
  // summary (the deferred clear's, at 20): one final look, then it waits
  // for the byte again.
  RingWordOnly(2, wire::SlotBit(3));
  EXPECT_EQ(Collect(20 + kWindow + 1), (Set{{2, 3}}));
  RingWordOnly(3, wire::SlotBit(4));
  EXPECT_TRUE(Collect(20 + kWindow + 2).empty());
  bells()[wire::BellsLayout::SummaryOffset(3)] = 1;
  EXPECT_EQ(Collect(20 + kWindow + 3), (Set{{3, 4}}));
}

TEST_F(WorkFinderHotGroupTest, TheHotGroupListIsBounded) {
  for (uint32_t b = 0; b < 32; ++b) Add(b, 8);
  for (uint32_t b : {0u, 8u, 16u}) Ring(b, wire::SlotBit(0));
  EXPECT_EQ(Collect(0).size(), 3u);
  EXPECT_EQ(finder_.hot_groups(), 2u);
}

TEST_F(WorkFinderHotGroupTest, WorkInAHotGroupDefersTheSummaryOneRoundAtMost) {
  for (uint32_t b = 0; b < 16; ++b) Add(b, 8);
  Ring(0, wire::SlotBit(0));
  EXPECT_EQ(Collect(0), (Set{{0, 0}}));
  // A ring in the hot group and one that only the summary names.
  RingWordOnly(1, wire::SlotBit(1));
  Ring(9, wire::SlotBit(2));
  EXPECT_EQ(Collect(1), (Set{{1, 1}})) << "the summary waits a round";
  // Even while the hot group keeps naming work.
  RingWordOnly(2, wire::SlotBit(3));
  EXPECT_EQ(Collect(2), (Set{{2, 3}, {9, 2}}));
}

class WorkFinderScaleTest : public WorkFinderTest {
 protected:
  WorkFinderScaleTest() : WorkFinderTest(16384) {}
};

TEST_F(WorkFinderScaleTest, OneRingAmongThousandsIsFoundAlone) {
  for (uint32_t b = 0; b < 16384; b += 3) Add(b, 8);
  Ring(9999, wire::SlotBit(7));
  EXPECT_EQ(Collect(0), (Set{{9999, 7}}));
  // Every group at once.
  for (uint32_t b = 0; b < 16384; b += 3) Ring(b, wire::SlotBit(b % 8));
  const Set got = Collect(1);
  EXPECT_EQ(got.size(), (16384 + 2) / 3);
  EXPECT_EQ(got.count({16383, 16383 % 8}), 1u);
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
