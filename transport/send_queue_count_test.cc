// Copyright 2026 The rfrpc Authors.

#include "transport/send_queue_count.h"

#include "gtest/gtest.h"

namespace rfrpc {
namespace transport {
namespace {

TEST(SendQueueCountTest, ACompletionRetiresEverythingPostedBeforeIt) {
  SendQueueCount sq;
  EXPECT_FALSE(sq.awaiting_completion());
  for (int i = 0; i < 15; ++i) sq.Posted(100 + i, /*signaled=*/false);
  EXPECT_EQ(sq.in_use(), 15u);
  EXPECT_FALSE(sq.awaiting_completion());  // Nothing could retire them.
  sq.Posted(7, /*signaled=*/true);
  sq.Posted(200, /*signaled=*/false);
  EXPECT_TRUE(sq.awaiting_completion());
  EXPECT_EQ(sq.in_use(), 17u);
  sq.Completed(7);
  EXPECT_EQ(sq.in_use(), 1u);  // The unsignaled one after it stays.
  EXPECT_FALSE(sq.awaiting_completion());
}

TEST(SendQueueCountTest, AMissingCompletionIsPassedOverByALaterOne) {
  SendQueueCount sq;
  sq.Posted(1, true);
  sq.Posted(2, false);
  sq.Posted(3, true);
  sq.Posted(4, false);
  sq.Completed(3);  // 1's completion never came.
  EXPECT_EQ(sq.in_use(), 1u);
  EXPECT_FALSE(sq.awaiting_completion());
  sq.Completed(1);  // Unknown by now: nothing changes.
  EXPECT_EQ(sq.in_use(), 1u);
}

TEST(SendQueueCountTest, ARepeatedWrIdRetiresTheOldestFirst) {
  SendQueueCount sq;
  sq.Posted(5, true);
  sq.Posted(9, false);
  sq.Posted(5, true);
  sq.Completed(5);
  EXPECT_EQ(sq.in_use(), 2u);
  sq.Completed(5);
  EXPECT_EQ(sq.in_use(), 0u);
}

TEST(SendQueueCountTest, MarksKeepTheirOrderWhenTheRingWrapsAndGrows) {
  SendQueueCount sq;
  for (uint64_t id = 0; id < 10; ++id) sq.Posted(id, true);
  sq.Completed(5);  // Retires 0..5; the ring's oldest is now in the middle.
  EXPECT_EQ(sq.in_use(), 4u);
  // 20 more: the ring wraps past its end, then has to grow, while 6..9 are
  // still outstanding.
  for (uint64_t id = 10; id < 30; ++id) sq.Posted(id, true);
  EXPECT_EQ(sq.in_use(), 24u);
  // Each completion retires exactly the marks up to its own, in post order.
  for (uint64_t id = 6; id < 30; ++id) {
    sq.Completed(id);
    EXPECT_EQ(sq.in_use(), 29 - id) << "after the completion of " << id;
  }
  EXPECT_FALSE(sq.awaiting_completion());
  sq.Completed(7);  // Long retired: nothing changes.
  EXPECT_EQ(sq.in_use(), 0u);
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc
