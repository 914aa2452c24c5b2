// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/record_codec.h"

#include <string>
#include <vector>

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

TEST(RecordCodecTest, DecodeIntoSelectsFieldsAndReusesTheRecord) {
  const Record record = {{"field0", "a"}, {"field1", std::string(40, 'b')},
                         {"field2", "c"}};
  std::string bytes;
  EncodeRecord(record, &bytes);
  // Leftovers in `out` are replaced, not appended to.
  Record out = {{"old", "x"}, {"older", "y"}, {"oldest", "z"}, {"more", "w"}};
  ASSERT_TRUE(DecodeRecordInto(bytes, nullptr, &out).ok());
  EXPECT_EQ(out, record);
  const std::vector<std::string> wanted = {"field2", "field0", "nothere"};
  ASSERT_TRUE(DecodeRecordInto(bytes, &wanted, &out).ok());
  EXPECT_EQ(out, (Record{{"field0", "a"}, {"field2", "c"}}));
  // The same decode again keeps the string buffers it already has.
  ASSERT_TRUE(DecodeRecordInto(bytes, nullptr, &out).ok());
  const char* const value1 = out[1].value.data();
  ASSERT_TRUE(DecodeRecordInto(bytes, nullptr, &out).ok());
  EXPECT_EQ(out[1].value.data(), value1);
  EXPECT_EQ(out, record);
}

TEST(RecordCodecTest, DecodeIntoTruncatedIsDataLossAndEmpty) {
  std::string bytes;
  EncodeRecord({{"field0", "value"}}, &bytes);
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    Record out = {{"x", "y"}};
    EXPECT_EQ(DecodeRecordInto(bytes.substr(0, cut), nullptr, &out).code(),
              absl::StatusCode::kDataLoss)
        << cut;
    EXPECT_TRUE(out.empty()) << cut;
  }
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
