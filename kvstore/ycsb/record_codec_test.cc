// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/record_codec.h"

#include <string>

#include "gtest/gtest.h"

namespace rfrpc {
namespace ycsb {
namespace {

TEST(RecordCodecTest, RoundTripsAndIsByteExact) {
  const Record record = {{"field0", "abc"}, {"f", std::string("\0x", 2)}};
  std::string bytes;
  EncodeRecord(record, &bytes);
  EXPECT_EQ(bytes, std::string("\x06\0\0\0field0\x03\0\0\0abc"
                               "\x01\0\0\0f\x02\0\0\0\0x",
                               4 + 6 + 4 + 3 + 4 + 1 + 4 + 2));
  absl::StatusOr<Record> decoded = DecodeRecord(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, record);
}

TEST(RecordCodecTest, EmptyRecord) {
  std::string bytes;
  EncodeRecord({}, &bytes);
  EXPECT_TRUE(bytes.empty());
  absl::StatusOr<Record> decoded = DecodeRecord(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->empty());
}

TEST(RecordCodecTest, TruncatedIsDataLoss) {
  std::string bytes;
  EncodeRecord({{"field0", "value"}}, &bytes);
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    EXPECT_EQ(DecodeRecord(bytes.substr(0, cut)).status().code(),
              absl::StatusCode::kDataLoss)
        << cut;
  }
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
