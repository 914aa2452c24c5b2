// Copyright 2026 The rfrpc Authors.

#include "kvstore/store/huge_page_buffer.h"

#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

namespace rfrpc {
namespace kvstore {
namespace {

TEST(HugePageBufferTest, ZeroBytesIsInvalidArgument) {
  EXPECT_EQ(HugePageBuffer::Allocate(0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HugePageBufferTest, SmallBufferIsZeroedAndWritable) {
  absl::StatusOr<HugePageBuffer> b = HugePageBuffer::Allocate(100);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_NE(b->data(), nullptr);
  EXPECT_EQ(b->size(), 100u);
  EXPECT_FALSE(b->huge_pages_advised());  // Below one huge page.
  for (size_t i = 0; i < b->size(); ++i) ASSERT_EQ(b->data()[i], 0);
  b->data()[99] = 'x';
  EXPECT_EQ(b->data()[99], 'x');
}

TEST(HugePageBufferTest, LargeBufferIsHugePageAligned) {
  const size_t bytes = 3 * HugePageBuffer::kHugePageBytes + 12345;
  absl::StatusOr<HugePageBuffer> b = HugePageBuffer::Allocate(bytes);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) %
                HugePageBuffer::kHugePageBytes,
            0u);
  EXPECT_EQ(b->size(), bytes);
  // Zeroed at both ends, and every byte asked for is writable.
  EXPECT_EQ(b->data()[0], 0);
  EXPECT_EQ(b->data()[bytes - 1], 0);
  b->data()[0] = 1;
  b->data()[bytes - 1] = 2;
  EXPECT_EQ(b->data()[0], 1);
  EXPECT_EQ(b->data()[bytes - 1], 2);
}

TEST(HugePageBufferTest, MoveTransfersOwnership) {
  absl::StatusOr<HugePageBuffer> a =
      HugePageBuffer::Allocate(HugePageBuffer::kHugePageBytes);
  ASSERT_TRUE(a.ok()) << a.status();
  char* const data = a->data();
  data[7] = 'y';
  HugePageBuffer b = std::move(*a);
  EXPECT_EQ(a->data(), nullptr);
  EXPECT_EQ(a->size(), 0u);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b.data()[7], 'y');
  HugePageBuffer c;
  c = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.size(), HugePageBuffer::kHugePageBytes);
}

}  // namespace
}  // namespace kvstore
}  // namespace rfrpc
