// Copyright 2026 The rfrpc Authors.
//
// Batch codec round trips and corrupt inputs; flush policy with a fake
// clock; the auto sizer with scripted latencies.

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/batch_format.h"
#include "rpc/batch_policy.h"

namespace rfrpc {
namespace {

using wire::BatchReader;
using wire::EntryBytes;
using wire::PutBatchEntry;
using wire::PutResultEntry;
using wire::ResultReader;

std::string Batch(const std::vector<std::pair<uint32_t, std::string>>& entries) {
  std::string out;
  for (const auto& [method, payload] : entries) {
    std::string e(EntryBytes(payload.size()), '\xee');
    std::memcpy(&e[8], payload.data(), payload.size());
    EXPECT_EQ(PutBatchEntry(&e[0], payload.size(), method), e.size());
    out += e;
  }
  return out;
}

TEST(BatchFormatTest, RoundTrip) {
  const std::string b = Batch({{1, "a"}, {2, ""}, {3, std::string(17, 'z')}});
  EXPECT_EQ(b.size(), EntryBytes(1) + EntryBytes(0) + EntryBytes(17));
  BatchReader r(b);
  uint32_t m;
  absl::string_view p;
  ASSERT_TRUE(r.Next(&m, &p));
  EXPECT_EQ(m, 1u);
  EXPECT_EQ(p, "a");
  ASSERT_TRUE(r.Next(&m, &p));
  EXPECT_EQ(m, 2u);
  EXPECT_EQ(p, "");
  ASSERT_TRUE(r.Next(&m, &p));
  EXPECT_EQ(m, 3u);
  EXPECT_EQ(p, std::string(17, 'z'));
  EXPECT_FALSE(r.Next(&m, &p));
  EXPECT_TRUE(r.error().ok());
  uint32_t n = 0;
  ASSERT_TRUE(wire::CountBatchEntries(b, &n).ok());
  EXPECT_EQ(n, 3u);
}

TEST(BatchFormatTest, PaddingIsZeroed) {
  std::string e(EntryBytes(3), '\xee');
  PutBatchEntry(&e[0], 3, 9);
  EXPECT_EQ(e.substr(11), std::string(5, '\0'));
}

TEST(BatchFormatTest, EntrySizeOverrunIsAnError) {
  std::string b = Batch({{1, "abcd"}});
  uint32_t huge = 1000;
  std::memcpy(&b[0], &huge, 4);
  uint32_t n = 0;
  absl::Status s = wire::CountBatchEntries(b, &n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overruns"), std::string::npos) << s;
}

TEST(BatchFormatTest, TruncatedHeaderIsAnError) {
  std::string b = Batch({{1, "abcd"}}) + std::string(5, '\0');
  uint32_t n = 0;
  EXPECT_EQ(wire::CountBatchEntries(b, &n).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BatchFormatTest, EmptyBatchIsAnError) {
  uint32_t n = 0;
  absl::Status s = wire::CountBatchEntries("", &n);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no entries"), std::string::npos);
}

TEST(BatchFormatTest, MaxSizeFieldDoesNotWrap) {
  std::string b(16, '\0');
  uint32_t huge = 0xffffffffu;
  std::memcpy(&b[0], &huge, 4);
  uint32_t n = 0;
  EXPECT_EQ(wire::CountBatchEntries(b, &n).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BatchFormatTest, ResultEntriesRoundTrip) {
  std::string part(EntryBytes(2) + EntryBytes(5), '\0');
  std::memcpy(&part[8], "ok", 2);
  size_t off = PutResultEntry(&part[0], 2, 0);
  std::memcpy(&part[off + 8], "nope!", 5);
  PutResultEntry(&part[off], 5, 5);
  ResultReader r(part);
  uint16_t code;
  absl::string_view p;
  ASSERT_TRUE(r.Next(&code, &p));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(p, "ok");
  ASSERT_TRUE(r.Next(&code, &p));
  EXPECT_EQ(code, 5);
  EXPECT_EQ(p, "nope!");
  EXPECT_FALSE(r.Next(&code, &p));
  EXPECT_TRUE(r.error().ok());
}

TEST(FlushPolicyTest, EachTriggerFires) {
  FlushPolicy p(/*max_entries=*/4, /*max_bytes=*/100, absl::Microseconds(50));
  // N.
  EXPECT_EQ(p.AfterAdd(3, 4), FlushReason::kNone);
  EXPECT_EQ(p.AfterAdd(4, 4), FlushReason::kEntries);
  // L: adding 40 bytes to 70 would exceed 100.
  EXPECT_EQ(p.BeforeAdd(2, 60, 40), FlushReason::kNone);
  EXPECT_EQ(p.BeforeAdd(2, 70, 40), FlushReason::kBytes);
  // A lone oversize entry is not held back.
  EXPECT_EQ(p.BeforeAdd(0, 0, 500), FlushReason::kNone);
  // T, on a fake clock.
  const int64_t t0 = 1000000;
  EXPECT_EQ(p.OnTick(1, t0, t0 + 49999), FlushReason::kNone);
  EXPECT_EQ(p.OnTick(1, t0, t0 + 50000), FlushReason::kTimeout);
  EXPECT_EQ(p.OnTick(0, t0, t0 + 900000), FlushReason::kNone);
}

AutoBatchSizer::Options SizerOptions() {
  AutoBatchSizer::Options o;
  o.latency_limit = absl::Microseconds(100);
  o.alpha = 0.05;
  o.window = 100;
  o.initial_size = 8;
  return o;
}

// Feeds one window in which `above` of 100 calls exceed the limit.
bool Window(AutoBatchSizer* s, int above) {
  bool changed = false;
  for (int i = 0; i < 100; ++i) {
    changed |= s->Record(i < above ? absl::Microseconds(150)
                                   : absl::Microseconds(20));
  }
  return changed;
}

TEST(AutoBatchSizerTest, ConvergesUpWhenLatencyIsLow) {
  AutoBatchSizer s(SizerOptions());
  for (int w = 0; w < 10; ++w) EXPECT_TRUE(Window(&s, 0));
  EXPECT_EQ(s.size(), 18);
  EXPECT_EQ(s.adjustments(), 10u);
  EXPECT_EQ(s.last_k(), 0.0);
}

TEST(AutoBatchSizerTest, BacksOffWhenKAboveAlpha) {
  AutoBatchSizer s(SizerOptions());
  EXPECT_TRUE(Window(&s, 6));  // k = 0.06 > 0.05.
  EXPECT_EQ(s.size(), 7);
  EXPECT_DOUBLE_EQ(s.last_k(), 0.06);
}

TEST(AutoBatchSizerTest, HoldsInBetween) {
  AutoBatchSizer s(SizerOptions());
  // 0.1 * alpha = 0.005 <= k <= alpha: k = 0.01 .. 0.05 hold.
  for (int above : {1, 3, 5}) {
    EXPECT_FALSE(Window(&s, above));
    EXPECT_EQ(s.size(), 8);
  }
  EXPECT_EQ(s.adjustments(), 0u);
  EXPECT_EQ(s.windows(), 3u);
}

TEST(AutoBatchSizerTest, StaysWithinBounds) {
  AutoBatchSizer::Options o = SizerOptions();
  o.initial_size = 1;
  AutoBatchSizer low(o);
  for (int w = 0; w < 5; ++w) Window(&low, 100);
  EXPECT_EQ(low.size(), 1);
  o.initial_size = 128;
  AutoBatchSizer high(o);
  for (int w = 0; w < 5; ++w) Window(&high, 0);
  EXPECT_EQ(high.size(), 128);
}

TEST(AutoBatchSizerTest, DecidesOnlyAtWindowEnds) {
  AutoBatchSizer s(SizerOptions());
  for (int i = 0; i < 99; ++i) EXPECT_FALSE(s.Record(absl::Microseconds(1)));
  EXPECT_TRUE(s.Record(absl::Microseconds(1)));
  EXPECT_EQ(s.size(), 9);
}

}  // namespace
}  // namespace rfrpc
