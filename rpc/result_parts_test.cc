// Copyright 2026 The rfrpc Authors.
//
// ResultPartWriter over a plain buffer: parts close on the entry and byte
// limits, a result that does not fit is moved into the next part whose head
// word is cleared, the room reserved for the remaining entries, and results
// copied in later (async) give the same bytes as results written in place.

#include "rpc/result_parts.h"

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rpc/batch_format.h"
#include "rpc/slot_codec.h"
#include "rpc/wire_format.h"

namespace rfrpc {
namespace internal {
namespace {

using Part = ResultPartWriter::Part;

// Writes `results` through a writer (each result's bytes copied to
// NextPayload), publishing every part as the server does; returns the parts.
std::vector<Part> WriteAll(char* buf, size_t bytes,
                           const std::vector<std::string>& results,
                           uint32_t max_entries, size_t limit) {
  ResultPartWriter w(buf, bytes, static_cast<uint32_t>(results.size()),
                     max_entries, limit);
  std::vector<Part> parts;
  for (const std::string& r : results) {
    size_t cap;
    char* out = w.NextPayload(&cap);
    EXPECT_LE(r.size(), cap);
    std::memcpy(out, r.data(), r.size());
    Part closed;
    if (w.Commit(static_cast<uint32_t>(r.size()), 0, &closed)) {
      wire::PublishResponse(buf + closed.offset, closed.size, 7, 0, 0,
                            wire::kResponseFlagBatch, closed.entries);
      parts.push_back(closed);
    }
  }
  EXPECT_TRUE(w.done());
  Part last;
  if (w.Finish(&last)) {
    wire::PublishResponse(buf + last.offset, last.size, 7, 0, 0,
                          wire::kResponseFlagBatch, last.entries);
    parts.push_back(last);
  }
  return parts;
}

// Reads the results back as a client would: part after part.
std::vector<std::string> ReadAll(const char* buf, size_t bytes, size_t n) {
  std::vector<std::string> out;
  size_t off = 0;
  while (out.size() < n) {
    wire::ResponseView v;
    EXPECT_EQ(wire::InspectResponse(buf + off, bytes - off, bytes, 7,
                                    /*require_tail=*/true, &v),
              wire::FetchState::kReady)
        << "part at " << off;
    wire::ResultReader r(absl::string_view(buf + off + wire::kHeaderBytes, v.size));
    uint16_t code;
    absl::string_view payload;
    uint32_t k = 0;
    while (r.Next(&code, &payload)) {
      out.emplace_back(payload);
      ++k;
    }
    EXPECT_EQ(k, v.entries);
    if (k == 0) break;
    off += wire::FramedBytes(v.size);
  }
  return out;
}

TEST(ResultPartWriterTest, PartsCloseAtTheEntryLimit) {
  alignas(8) char buf[4096] = {};
  const std::vector<std::string> results = {"a", "bb", "ccc", "dddd", "eeeee"};
  std::vector<Part> parts = WriteAll(buf, sizeof(buf), results, 2, 2048);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].entries, 2);
  EXPECT_EQ(parts[1].entries, 2);
  EXPECT_EQ(parts[2].entries, 1);
  EXPECT_EQ(parts[1].offset, wire::FramedBytes(parts[0].size));
  EXPECT_EQ(ReadAll(buf, sizeof(buf), results.size()), results);
}

TEST(ResultPartWriterTest, PartsCloseAtTheByteLimitAndTheResultMoves) {
  alignas(8) char buf[4096] = {};
  const std::vector<std::string> results = {std::string(40, 'x'),
                                            std::string(40, 'y'),
                                            std::string(40, 'z')};
  // 48 + 48 > 64: each result after the first starts a part.
  std::vector<Part> parts = WriteAll(buf, sizeof(buf), results, 128, 64);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(ReadAll(buf, sizeof(buf), results.size()), results);
}

TEST(ResultPartWriterTest, TheNextPartsHeadIsClearedBeforeAPartCloses) {
  alignas(8) char buf[1024];
  std::memset(buf, 0xff, sizeof(buf));
  ResultPartWriter w(buf, sizeof(buf), 2, 1, 2048);
  size_t cap;
  std::memcpy(w.NextPayload(&cap), "first", 5);
  Part closed;
  ASSERT_FALSE(w.Commit(5, 0, &closed));
  char* out = w.NextPayload(&cap);
  std::memset(out, 0xee, 16);  // Result bytes where the next head will go.
  ASSERT_TRUE(w.Commit(16, 0, &closed));
  EXPECT_EQ(closed.entries, 1);
  const size_t next = wire::FramedBytes(closed.size);
  uint64_t head;
  std::memcpy(&head, buf + next, 8);
  EXPECT_EQ(head, 0u);  // Not result bytes that could pass for a header.
}

TEST(ResultPartWriterTest, RoomIsKeptForEveryRemainingEntry) {
  constexpr size_t kBytes = 512;
  alignas(8) char buf[kBytes] = {};
  ASSERT_TRUE(ResultPartWriter::Fits(10, kBytes));
  EXPECT_FALSE(ResultPartWriter::Fits(30, kBytes));
  ResultPartWriter w(buf, kBytes, 10, 128, 2048);
  size_t cap;
  w.NextPayload(&cap);
  // Nine more results of at least a header each, in parts of their own,
  // plus a possible move of this one.
  EXPECT_LE(cap + 16 + 8 + 8 + 9 * (24 + 8) + 24 + 8, kBytes);
  EXPECT_EQ(cap % 8, 0u);
  // The largest result that fits, then nine empty ones: all readable.
  std::vector<std::string> results = {std::string(cap, 'q')};
  for (int i = 0; i < 9; ++i) results.push_back("");
  std::vector<Part> parts = WriteAll(buf, kBytes, results, 1, 2048);
  EXPECT_EQ(parts.size(), 10u);
  EXPECT_EQ(ReadAll(buf, kBytes, results.size()), results);
}

// A run takes RunSpace's room, the room NextPayload gives one result, and
// stops after two results (as a handler's RunBatch does when one does not
// fit): the eight results after it still get their worst case, each empty
// in a part of its own, all readable within the buffer.
TEST(ResultPartWriterTest, ARunThatStopsEarlyLeavesRoomForTheRest) {
  constexpr size_t kBytes = 512;
  constexpr uint32_t kResults = 10;
  alignas(8) char buf[kBytes] = {};
  ResultPartWriter w(buf, kBytes, kResults, 1000, 4096);
  uint32_t count = kResults;
  size_t room;
  char* out = w.RunSpace(&count, &room);
  EXPECT_EQ(count, kResults);
  size_t cap;
  EXPECT_EQ(w.NextPayload(&cap), out + wire::kEntryHeaderBytes);
  EXPECT_EQ(room & ~size_t{7}, cap + wire::kEntryHeaderBytes);
  // Two results that fill the room.
  const size_t a = (room / 2 - wire::kEntryHeaderBytes) & ~size_t{7};
  const size_t b = room - wire::EntryBytes(a) - wire::kEntryHeaderBytes;
  std::vector<std::string> results = {std::string(a, 'a'), std::string(b, 'b')};
  size_t used = 0;
  for (const std::string& r : results) {
    ASSERT_LE(used + wire::EntryBytes(r.size()), room);
    std::memcpy(out + used + wire::kEntryHeaderBytes, r.data(), r.size());
    wire::PutResultEntry(out + used, static_cast<uint32_t>(r.size()), 0);
    used += wire::EntryBytes(r.size());
  }
  w.CommitRun(2, used);
  // Eight empty results, the worst case: each in a part of its own (the
  // part before it closed early, as a server closes one before a result
  // that comes later).
  std::vector<Part> parts;
  for (uint32_t i = 2; i < kResults; ++i) {
    w.NextPayload(&cap);
    Part closed;
    Part early;
    if (w.Close(&early)) parts.push_back(early);
    if (w.Commit(0, 0, &closed)) parts.push_back(closed);
    results.push_back("");
  }
  Part last;
  ASSERT_TRUE(w.Finish(&last));
  parts.push_back(last);
  for (const Part& p : parts) {
    ASSERT_LE(p.offset + wire::FramedBytes(p.size), kBytes);
    wire::PublishResponse(buf + p.offset, p.size, 7, 0, 0,
                          wire::kResponseFlagBatch, p.entries);
  }
  EXPECT_EQ(ReadAll(buf, kBytes, results.size()), results);
}

TEST(ResultPartWriterTest, ErrorsCarryTheirCode) {
  alignas(8) char buf[1024] = {};
  ResultPartWriter w(buf, sizeof(buf), 2, 128, 2048);
  size_t cap;
  std::memcpy(w.NextPayload(&cap), "nope", 4);
  Part p;
  w.Commit(4, 5, &p);
  std::memcpy(w.NextPayload(&cap), "ok", 2);
  w.Commit(2, 0, &p);
  ASSERT_TRUE(w.Finish(&p));
  wire::PublishResponse(buf, p.size, 7, 0, 0, wire::kResponseFlagBatch, p.entries);
  wire::ResultReader r(absl::string_view(buf + wire::kHeaderBytes, p.size));
  uint16_t code;
  absl::string_view payload;
  ASSERT_TRUE(r.Next(&code, &payload));
  EXPECT_EQ(code, 5);
  EXPECT_EQ(payload, "nope");
  ASSERT_TRUE(r.Next(&code, &payload));
  EXPECT_EQ(code, 0);
  EXPECT_EQ(payload, "ok");
}

}  // namespace
}  // namespace internal
}  // namespace rfrpc
