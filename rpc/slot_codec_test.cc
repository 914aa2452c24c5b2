// Copyright 2026 The rfrpc Authors.

#include "rpc/slot_codec.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rfrpc {
namespace wire {
namespace {

constexpr size_t kSlot = 256;

class SlotCodecTest : public ::testing::Test {
 protected:
  // 8-byte aligned buffers, like registered memory.
  alignas(64) char slot_[kSlot] = {};
  alignas(64) char resp_[kSlot] = {};

  size_t WriteRequest(absl::string_view payload, uint32_t seq) {
    std::memcpy(slot_ + kHeaderBytes, payload.data(), payload.size());
    return FinishRequest(slot_, static_cast<uint32_t>(payload.size()), seq,
                         /*method_id=*/0xabcd, /*aux=*/3, /*flags=*/0);
  }
};

TEST_F(SlotCodecTest, RequestRoundTrip) {
  EXPECT_EQ(WriteRequest("hello", 1), FramedBytes(5));
  EXPECT_EQ(FramedBytes(5), 16u + 8u + 8u);
  RequestView v;
  std::string why;
  ASSERT_EQ(InspectRequest(slot_, kSlot, 1, &v, &why), SlotState::kReady);
  EXPECT_EQ(v.payload, "hello");
  EXPECT_EQ(v.method_id, 0xabcdu);
  EXPECT_EQ(v.aux, 3);
  EXPECT_EQ(v.seq, 1u);
}

TEST_F(SlotCodecTest, EmptySlotIsEmpty) {
  RequestView v;
  std::string why;
  EXPECT_EQ(InspectRequest(slot_, kSlot, 1, &v, &why), SlotState::kEmpty);
}

TEST_F(SlotCodecTest, StaleSequenceIsNeverTakenForNewCall) {
  WriteRequest("old", 7);
  RequestView v;
  std::string why;
  // The server already served seq 7 and waits for 8: the old bytes are stale.
  EXPECT_EQ(InspectRequest(slot_, kSlot, 8, &v, &why), SlotState::kEmpty);
  // A replay of an older seq is just as stale.
  WriteRequest("replay", 5);
  EXPECT_EQ(InspectRequest(slot_, kSlot, 8, &v, &why), SlotState::kEmpty);
  WriteRequest("new", 8);
  ASSERT_EQ(InspectRequest(slot_, kSlot, 8, &v, &why), SlotState::kReady);
  EXPECT_EQ(v.payload, "new");
}

TEST_F(SlotCodecTest, MissingTailIsIncomplete) {
  WriteRequest("payload", 2);
  // Tail still shows the previous seq: the WRITE is landing.
  uint64_t old_tail = TailWord(1, 7);
  std::memcpy(slot_ + TailOffset(7), &old_tail, 8);
  RequestView v;
  std::string why;
  EXPECT_EQ(InspectRequest(slot_, kSlot, 2, &v, &why), SlotState::kIncomplete);
}

TEST_F(SlotCodecTest, CorruptSizeIsReportedNotRead) {
  WriteRequest("x", 1);
  RequestHeader h;
  std::memcpy(&h, slot_, sizeof(h));
  h.size_status = kValidBit | 0x7ffffff0u;  // Far past the slot.
  std::memcpy(slot_, &h, sizeof(h));
  RequestView v;
  std::string why;
  EXPECT_EQ(InspectRequest(slot_, kSlot, 1, &v, &why), SlotState::kCorrupt);
  EXPECT_NE(why.find("exceeds the 232-byte request slot"), std::string::npos)
      << why;
}

TEST_F(SlotCodecTest, SizeAtCapacityIsAcceptedOneMoreIsNot) {
  const size_t cap = SlotPayloadCapacity(kSlot);
  EXPECT_EQ(cap, kSlot - kHeaderBytes - kTailBytes);
  std::string max(cap, 'm');
  WriteRequest(max, 1);
  RequestView v;
  std::string why;
  EXPECT_EQ(InspectRequest(slot_, kSlot, 1, &v, &why), SlotState::kReady);
  RequestHeader h;
  std::memcpy(&h, slot_, sizeof(h));
  h.size_status = kValidBit | static_cast<uint32_t>(cap + 1);
  std::memcpy(slot_, &h, sizeof(h));
  EXPECT_EQ(InspectRequest(slot_, kSlot, 1, &v, &why), SlotState::kCorrupt);
}

TEST_F(SlotCodecTest, ResponsePublishAndInspect) {
  std::memcpy(resp_ + kHeaderBytes, "result", 6);
  EXPECT_EQ(PublishResponse(resp_, 6, 9, EncodeServerTime(1500), 0, 0),
            FramedBytes(6));
  ResponseView v;
  ASSERT_EQ(InspectResponse(resp_, kSlot, SlotPayloadCapacity(kSlot), 9,
                            /*require_tail=*/true, &v),
            FetchState::kReady);
  EXPECT_EQ(v.size, 6u);
  EXPECT_EQ(DecodeServerTimeNs(v.server_time), 1500);
  EXPECT_EQ(v.status_code, 0);
  // The client waiting for seq 10 does not take seq 9's result.
  EXPECT_EQ(InspectResponse(resp_, kSlot, SlotPayloadCapacity(kSlot), 10,
                            false, &v),
            FetchState::kNotReady);
}

TEST_F(SlotCodecTest, ShortFetchStillSeesHeader) {
  std::string big(200, 'b');
  std::memcpy(resp_ + kHeaderBytes, big.data(), big.size());
  PublishResponse(resp_, 200, 1, 0, 0, 0);
  ResponseView v;
  // A 64-byte fetch: header valid, the caller READs the rest.
  ASSERT_EQ(InspectResponse(resp_, 64, SlotPayloadCapacity(kSlot), 1, false, &v),
            FetchState::kReady);
  EXPECT_EQ(v.size, 200u);
  // Fewer bytes than a header: not ready.
  EXPECT_EQ(InspectResponse(resp_, 8, SlotPayloadCapacity(kSlot), 1, false, &v),
            FetchState::kNotReady);
}

TEST_F(SlotCodecTest, CorruptResponseSize) {
  PublishResponse(resp_, 4, 1, 0, 0, 0);
  ResponseHeader h;
  std::memcpy(&h, resp_, sizeof(h));
  h.size_status = kValidBit | 100000;
  std::memcpy(resp_, &h, sizeof(h));
  ResponseView v;
  EXPECT_EQ(InspectResponse(resp_, kSlot, SlotPayloadCapacity(kSlot), 1, false, &v),
            FetchState::kCorrupt);
}

// A head whose size bytes are stale but round to the same 8-byte boundary
// (12 vs 10 bytes) finds the tail in the right place; the size in the tail
// word still tells them apart.
TEST_F(SlotCodecTest, StaleSizeInTheHeadDoesNotMatchTheTail) {
  PublishResponse(resp_, 12, 3, 0, 0, 0);
  ResponseHeader h;
  std::memcpy(&h, resp_, sizeof(h));
  h.size_status = kValidBit | 10;
  std::memcpy(resp_, &h, sizeof(h));
  ResponseView v;
  EXPECT_EQ(InspectResponse(resp_, kSlot, SlotPayloadCapacity(kSlot), 3, true, &v),
            FetchState::kNotReady);
  h.size_status = kValidBit | 12;
  std::memcpy(resp_, &h, sizeof(h));
  ASSERT_EQ(InspectResponse(resp_, kSlot, SlotPayloadCapacity(kSlot), 3, true, &v),
            FetchState::kReady);
  EXPECT_EQ(v.size, 12u);
}

TEST_F(SlotCodecTest, ReplySlotNeedsTail) {
  PublishResponse(resp_, 4, 3, 0, 0, 0);
  uint64_t stale = TailWord(2, 4);
  std::memcpy(resp_ + TailOffset(4), &stale, 8);
  ResponseView v;
  EXPECT_EQ(InspectResponse(resp_, kSlot, SlotPayloadCapacity(kSlot), 3, true, &v),
            FetchState::kNotReady);
  EXPECT_EQ(InspectResponse(resp_, kSlot, SlotPayloadCapacity(kSlot), 3, false, &v),
            FetchState::kReady);
}

// A reply-slot WRITE lands front to back (Soft-RoCE copies it byte by byte):
// the new head word first, then the header fields, the payload and the tail.
// Here the rest lands between the client's load of the head and its load of
// the tail: the tail sits on a page that is unreadable until then, and the
// SIGSEGV handler of the first load from it lands the rest of the WRITE. The
// fields reported must be the new ones, not those an earlier part left at
// the same offset (a part of 1 entry taken as one of 3 failed a batch).
struct LandingWrite {
  char* page = nullptr;  // Two pages; the frame straddles their boundary.
  char* frame = nullptr;
  size_t page_bytes = 0;
  ResponseHeader fields;  // Bytes [8, 16) the WRITE brings.
  uint64_t payload = 0;
  uint64_t tail = 0;
  int landed = 0;
};
LandingWrite* landing = nullptr;

void LandRestOfWrite(int sig, siginfo_t* info, void*) {
  char* const second = landing->page + landing->page_bytes;
  char* const addr = static_cast<char*>(info->si_addr);
  if (sig != SIGSEGV || addr < second || addr >= second + landing->page_bytes) {
    signal(sig, SIG_DFL);  // Not ours: crash as usual.
    return;
  }
  mprotect(second, landing->page_bytes, PROT_READ | PROT_WRITE);
  std::memcpy(landing->frame + 8,
              reinterpret_cast<const char*>(&landing->fields) + 8, 8);
  std::memcpy(landing->frame + kHeaderBytes, &landing->payload, 8);
  std::memcpy(landing->frame + TailOffset(8), &landing->tail, 8);
  ++landing->landed;
}

TEST(ReplySlotWriteTest, HeaderFieldsAreReadAfterTheTail) {
  LandingWrite w;
  w.page_bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, 2 * w.page_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  w.page = static_cast<char*>(m);
  // Header at the end of the first page; payload and tail on the second.
  w.frame = w.page + w.page_bytes - kHeaderBytes;
  constexpr uint32_t kSeq = 7;
  // What an earlier part left at this offset: 3 entries, seq 6.
  ResponseHeader old{};
  old.size_status = kValidBit | 24;
  old.seq = kSeq - 1;
  old.server_time = 11;
  old.flags = kResponseFlagBatch;
  old.reserved = 3;
  std::memcpy(w.frame, &old, sizeof(old));
  // The new part: 1 entry of 8 payload bytes, seq 7; its head word landed.
  w.fields = old;
  w.fields.size_status = kValidBit | 8;
  w.fields.seq = kSeq;
  w.fields.server_time = 22;
  w.fields.status_code = 0;
  w.fields.reserved = 1;
  w.payload = 0x1122334455667788u;
  w.tail = TailWord(kSeq, 8);
  const uint64_t head = HeadWord(w.fields.size_status, kSeq);
  std::memcpy(w.frame, &head, sizeof(head));
  ASSERT_EQ(mprotect(w.page + w.page_bytes, w.page_bytes, PROT_NONE), 0);

  landing = &w;
  struct sigaction sa = {}, prev = {};
  sa.sa_sigaction = &LandRestOfWrite;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGSEGV, &sa, &prev), 0);
  ResponseView v;
  const FetchState st = InspectResponse(w.frame, 64, SlotPayloadCapacity(kSlot),
                                        kSeq, /*require_tail=*/true, &v);
  sigaction(SIGSEGV, &prev, nullptr);
  landing = nullptr;

  EXPECT_EQ(w.landed, 1);
  ASSERT_EQ(st, FetchState::kReady);
  EXPECT_EQ(v.size, 8u);
  EXPECT_EQ(v.entries, 1);
  EXPECT_EQ(v.server_time, 22);
  EXPECT_EQ(v.flags, kResponseFlagBatch);
  munmap(m, 2 * w.page_bytes);
}

TEST(ServerTimeTest, EncodesSaturating) {
  EXPECT_EQ(EncodeServerTime(-5), 0);
  EXPECT_EQ(EncodeServerTime(99), 0);
  EXPECT_EQ(EncodeServerTime(12000), 120);
  EXPECT_EQ(EncodeServerTime(int64_t{1} << 40), 0xffff);
}

TEST(SeqTest, NextSeqSkipsZero) {
  EXPECT_EQ(NextSeq(1), 2u);
  EXPECT_EQ(NextSeq(0xffffffffu), 1u);
}

TEST(LayoutTest, OffsetsDoNotOverlap) {
  ConnectionLayout l{4, 128, 256};
  EXPECT_EQ(l.RequestSlotOffset(0), 64u);
  EXPECT_EQ(l.ResponseSlotOffset(0), 64u + 4 * 128);
  // The cancel words follow the response buffers, one cache line for 4.
  EXPECT_EQ(l.ResponseSlotOffset(3) + 256, l.CancelOffset(0));
  EXPECT_EQ(l.CancelOffset(3), l.CancelOffset(0) + 24);
  EXPECT_EQ(l.CancelOffset(0) + 64, l.ServerRegionBytes());
  EXPECT_EQ(l.ReplyRegionBytes(), 4u * 256);
}

TEST(BudgetTest, SmallBudgetsAreExact) {
  for (uint64_t us : {0, 1, 999, 2047}) {
    EXPECT_EQ(DecodeBudgetUs(EncodeBudgetUs(us)), static_cast<int64_t>(us));
  }
}

TEST(BudgetTest, LargeBudgetsRoundDownWithin1In2048) {
  for (uint64_t us = 2048; us < (uint64_t{1} << 41); us = us * 3 + 7) {
    const int64_t back = DecodeBudgetUs(EncodeBudgetUs(us));
    EXPECT_LE(back, static_cast<int64_t>(us)) << us;
    EXPECT_GT(back, static_cast<int64_t>(us - us / 2048 - 1)) << us;
  }
  // Codes are monotonic: a longer budget never encodes below a shorter one.
  uint16_t prev = 0;
  for (uint64_t us = 1; us < (uint64_t{1} << 40); us += us / 3 + 1) {
    const uint16_t code = EncodeBudgetUs(us);
    EXPECT_GE(code, prev) << us;
    prev = code;
  }
}

TEST(BudgetTest, NoDeadlineAndHugeBudgetsAreNone) {
  EXPECT_EQ(EncodeBudget(INT64_MAX, 5), kNoBudget);
  EXPECT_EQ(EncodeBudgetUs(uint64_t{1} << 62), kNoBudget);
  EXPECT_EQ(DecodeBudgetUs(kNoBudget), INT64_MAX);
  EXPECT_EQ(DeadlineFromBudget(kNoBudget, 1000), INT64_MAX);
}

TEST(BudgetTest, PassedDeadlinesAreZeroAndDeadlinesSaturate) {
  EXPECT_EQ(EncodeBudget(100, 200), 0);
  EXPECT_EQ(EncodeBudget(200, 200), 0);
  EXPECT_EQ(EncodeBudget(2'000'000 + 7, 7), 2000);  // 2 ms.
  EXPECT_EQ(DeadlineFromBudget(2000, 1'000'000), 3'000'000);
  // The largest finite code from a start near the end of time: saturates.
  EXPECT_EQ(DeadlineFromBudget(0xfffe, INT64_MAX - 10), INT64_MAX);
}

}  // namespace
}  // namespace wire
}  // namespace rfrpc
