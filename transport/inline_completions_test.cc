// Copyright 2026 The rfrpc Authors.
//
// InlineCompletions (transport.h): the FIFO a connection fills with its
// completions at post time (Connection::SetInlineCompletions).

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace {

Completion C(uint64_t id) {
  Completion c;
  c.wr_id = id;
  return c;
}

std::vector<uint64_t> TakeAll(InlineCompletions* q) {
  std::vector<uint64_t> ids;
  Completion out[3];  // Fewer than it holds: Take is called repeatedly.
  for (int n; (n = q->Take(absl::MakeSpan(out))) > 0;) {
    for (int i = 0; i < n; ++i) ids.push_back(out[i].wr_id);
  }
  return ids;
}

TEST(InlineCompletionsTest, KeepsPostOrderAndRoundsItsRoomUp) {
  InlineCompletions q(10);
  EXPECT_EQ(q.capacity(), 16u);
  for (uint64_t id = 0; id < 16; ++id) q.Push(C(id));
  EXPECT_FALSE(q.HasRoom(1));
  std::vector<uint64_t> want;
  for (uint64_t id = 0; id < 16; ++id) want.push_back(id);
  EXPECT_EQ(TakeAll(&q), want);
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.HasRoom(16));
  EXPECT_EQ(q.dropped(), 0u);
}

// The room is what is waiting, not where the last entry went: entries
// pushed while older ones wait wrap around the end in order.
TEST(InlineCompletionsTest, RoomIsWhatWaitsAndOrderSurvivesTheWrap) {
  InlineCompletions q(8);
  for (uint64_t id = 0; id < 8; ++id) q.Push(C(id));
  Completion out[5];
  ASSERT_EQ(q.Take(absl::MakeSpan(out)), 5);  // 5, 6, 7 wait at the end.
  EXPECT_TRUE(q.HasRoom(5));
  EXPECT_FALSE(q.HasRoom(6));
  for (uint64_t id = 8; id < 13; ++id) q.Push(C(id));
  EXPECT_EQ(TakeAll(&q), (std::vector<uint64_t>{5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(q.dropped(), 0u);
}

TEST(InlineCompletionsTest, AnEntryWithNoRoomIsCountedNotStored) {
  InlineCompletions q(2);
  q.Push(C(1));
  q.Push(C(2));
  q.Push(C(3));
  EXPECT_EQ(q.dropped(), 1u);
  EXPECT_EQ(TakeAll(&q), (std::vector<uint64_t>{1, 2}));
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc
