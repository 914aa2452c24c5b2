// Copyright 2026 The rfrpc Authors.
//
// The RF-RPC message layer's memory formats: request slots, response
// buffers, and the per-connection layout both sides record at connect time
// (paper §3.1, Fig. 3; Table 2's client_send/server_recv/server_send/
// client_recv). Documented in docs/wire_formats.md. All fields little-endian.
//
// Per connection the server allocates one region, exposed to that client
// only:
//
//   [0, 64)                          ControlBlock (the mode flag)
//   request slot i   at RequestSlotOffset(i)   request_slot_bytes each
//   response buf i   at ResponseSlotOffset(i)  response_slot_bytes each
//   cancel word i    at CancelOffset(i)        8 bytes each (CancelWord)
//
// and the client allocates a reply region (slots * response_slot_bytes),
// exposed to the server, that server-reply WRITEs land in.
//
// A request slot, written by the client with ONE RDMA WRITE:
//
//   0   uint32 size_status   bit 31 = valid, bits 0..30 = payload bytes
//   4   uint32 seq           per-slot sequence number (1, 2, ...; never 0)
//   8   uint16 aux           batches: entries the client wants per batch;
//                            single calls with kRequestFlagDeadline: the
//                            budget code (EncodeBudget)
//   10  uint16 flags         kRequestFlag*
//   12  uint32 method_id     rfrpc::MethodId of "/pkg.Service/Method"
//   16  payload              serialized request (or a request batch)
//   16 + Align8(size)        uint64 tail = TailWord(seq, size)
//
// The server sees a request when the first word shows valid + the expected
// seq, and knows the WRITE is complete when the tail shows the same seq (the
// transport's ordering contract: a WRITE's last 8 bytes land last). A stale
// slot (an older seq) or a replay is never taken for a new call.
//
// A response buffer, written by the server into its LOCAL memory, payload
// first and the first word last with release semantics:
//
//   0   uint32 size_status   bit 31 = ready, bits 0..30 = payload bytes
//   4   uint32 seq           seq of the request it answers
//   8   uint16 server_time   processing time, units of 100 ns, saturating
//   10  uint16 status_code   absl::StatusCode; non-zero: payload = message
//   12  uint16 flags         kResponseFlag*
//   14  uint16 reserved
//   16  payload
//   16 + Align8(size)        uint64 tail = TailWord(seq, size)
//
// The client READs the first F bytes; by the transport's READ contract the
// first 8 bytes are observed before the rest, so ready + matching seq there
// guarantee the header and payload behind them. In server-reply the server
// WRITEs the same bytes [0, 16 + Align8(size) + 8) into the client's reply
// slot; the client waits for the first word and then the tail.

#ifndef RFRPC_RPC_WIRE_FORMAT_H_
#define RFRPC_RPC_WIRE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rfrpc {
namespace wire {

inline constexpr uint32_t kValidBit = 0x80000000u;
inline constexpr uint32_t kSizeMask = 0x7fffffffu;
inline constexpr uint64_t kTailMagic = 0x52465450u;  // "PTFR"

struct RequestHeader {
  uint32_t size_status;
  uint32_t seq;
  uint16_t aux;
  uint16_t flags;
  uint32_t method_id;
};
static_assert(sizeof(RequestHeader) == 16, "request header is 16 bytes");

struct ResponseHeader {
  uint32_t size_status;
  uint32_t seq;
  uint16_t server_time;
  uint16_t status_code;
  uint16_t flags;
  uint16_t reserved;
};
static_assert(sizeof(ResponseHeader) == 16, "response header is 16 bytes");

// Request flags.
inline constexpr uint16_t kRequestFlagBatch = 1u << 0;  // Payload is a batch.
// The request carries the caller's remaining time budget: a single call in
// `aux` (a budget code, below); a batch as an array of budget codes after its
// entries, one per entry, with `method_id` = the entries' byte length
// (rpc/batch_format.h).
inline constexpr uint16_t kRequestFlagDeadline = 1u << 1;
// A single call's caller may be asleep when the result is ready (a long
// call): the server pushes the result (server-reply, whatever the mode word
// says) and wakes the client's completion queue with it (a notify WRITE:
// verbs, a WRITE with immediate). Ignored on a batch.
inline constexpr uint16_t kRequestFlagNotify = 1u << 2;
inline constexpr uint16_t kRequestFlagsKnown =
    kRequestFlagBatch | kRequestFlagDeadline | kRequestFlagNotify;

// Budget codes: a time budget in microseconds in 16 bits, relative (client and
// server clocks need not agree), rounded down, with a relative error below
// 1/2048. Codes below 2048 are microseconds exactly; code (e << 11) | m, e in
// [1, 31], is (2048 + m) << (e - 1) microseconds. kNoBudget (0xffff) means no
// deadline; budgets from 4095 << 30 us (about 50.8 days) on are sent as none.
inline constexpr uint16_t kNoBudget = 0xffff;

constexpr uint16_t EncodeBudgetUs(uint64_t us) {
  if (us < 2048) return static_cast<uint16_t>(us);
  const int lg = 63 - __builtin_clzll(us);  // >= 11
  const int e = lg - 10;                    // >= 1
  if (e > 31) return kNoBudget;
  const uint64_t m = (us >> (e - 1)) - 2048;  // [0, 2048)
  const uint64_t code = (uint64_t(e) << 11) | m;
  return code >= kNoBudget ? kNoBudget : static_cast<uint16_t>(code);
}
// The budget left from `now_ns` to `deadline_ns` (Unix ns; INT64_MAX: none).
// A deadline already passed is budget 0.
constexpr uint16_t EncodeBudget(int64_t deadline_ns, int64_t now_ns) {
  if (deadline_ns == INT64_MAX) return kNoBudget;
  if (deadline_ns <= now_ns) return 0;
  return EncodeBudgetUs(static_cast<uint64_t>(deadline_ns - now_ns) / 1000);
}
// Microseconds of a code; INT64_MAX for kNoBudget.
constexpr int64_t DecodeBudgetUs(uint16_t code) {
  if (code == kNoBudget) return INT64_MAX;
  if (code < 2048) return code;
  const int e = code >> 11;
  return int64_t{2048 + (code & 0x7ff)} << (e - 1);
}
// The deadline (Unix ns) a code gives a request taken at `start_ns`:
// INT64_MAX for none, saturating.
constexpr int64_t DeadlineFromBudget(uint16_t code, int64_t start_ns) {
  const int64_t us = DecodeBudgetUs(code);
  int64_t ns = 0, deadline = 0;
  // Overflow checks instead of a division: this runs for every request and
  // every batch entry.
  if (us == INT64_MAX || __builtin_mul_overflow(us, int64_t{1000}, &ns) ||
      __builtin_add_overflow(start_ns, ns, &deadline)) {
    return INT64_MAX;
  }
  return deadline;
}

// Response flags.
// The result did not go to the response buffer: the server is writing it
// into the client's reply slot (large results, or server-reply mode seen by
// a fetch). The client waits on its reply slot.
inline constexpr uint16_t kResponseFlagPushed = 1u << 0;
inline constexpr uint16_t kResponseFlagBatch = 1u << 1;
// The worker keeps polling this slot for RpcWelcome.hot_window_ns after it
// served the request: the client's next request on the slot, if posted
// within half that window of this one, needs no doorbell.
inline constexpr uint16_t kResponseFlagHot = 1u << 2;

static_assert(EncodeBudgetUs(2047) == 2047 && EncodeBudgetUs(2048) == 2048 &&
                  DecodeBudgetUs(EncodeBudgetUs(4097)) == 4096 &&
                  DecodeBudgetUs(0xfffe) == int64_t{4094} << 30 &&
                  EncodeBudgetUs(uint64_t{4095} << 30) == kNoBudget,
              "budget codes are pinned (docs/wire_formats.md section 4)");

// The per-slot cancel word (ConnectionLayout::CancelOffset): the client
// WRITEs the seq of a request it no longer wants; the server answers that
// request with CANCELLED if its result is still being computed (an async or
// offloaded handler) and tells the handler (ServerContext::IsCancelled).
// Any other value, or the seq of a request already answered, is ignored.
constexpr uint64_t CancelWord(uint32_t seq) { return seq; }

// The mode flag block at offset 0 of the server's per-connection region.
// Written only by the client (a local copy and an RDMA WRITE of this word);
// read by the server after it publishes each result.
//
// The mode is kept per method (the paper keeps it per <client, RPC id>):
// bit b of the word set means "server reply" for the requests of mode bucket
// b, clear means remote fetching. A plain request's bucket is
// ModeBucket(method_id); every batch is in bucket kBatchModeBucket.
struct ControlBlock {
  uint64_t mode;  // Bit per mode bucket: 1 = server reply.
  uint64_t reserved[7];
};
static_assert(sizeof(ControlBlock) == 64, "control block is one cache line");

inline constexpr uint64_t kModeRemoteFetch = 0;     // Every bucket.
inline constexpr uint64_t kModeServerReply = ~uint64_t{0};  // Every bucket.
inline constexpr uint32_t kModeBuckets = 64;
inline constexpr uint32_t kBatchModeBucket = kModeBuckets - 1;
// Methods share the other 63 buckets by id (ids are hashes of the names:
// two methods share a mode only if their ids agree modulo 63).
constexpr uint32_t ModeBucket(uint32_t method_id) {
  return method_id % (kModeBuckets - 1);
}
constexpr uint64_t ModeBit(uint32_t bucket) { return uint64_t{1} << bucket; }
// The mode bucket of the request in a request slot (its header read as is:
// call it while the request is there, before its result is published).
inline uint32_t RequestModeBucket(const char* slot) {
  RequestHeader h;
  std::memcpy(&h, slot, sizeof(h));
  return (h.flags & kRequestFlagBatch) ? kBatchModeBucket
                                       : ModeBucket(h.method_id);
}

// True if the single call in a request slot asks for a notifying push
// (kRequestFlagNotify; read like RequestModeBucket).
inline bool RequestWantsNotify(const char* slot) {
  RequestHeader h;
  std::memcpy(&h, slot, sizeof(h));
  return (h.flags & (kRequestFlagBatch | kRequestFlagNotify)) ==
         kRequestFlagNotify;
}

inline constexpr size_t kHeaderBytes = 16;
inline constexpr size_t kTailBytes = 8;

constexpr size_t Align8(size_t n) { return (n + 7) & ~size_t{7}; }
constexpr size_t Align64(size_t n) { return (n + 63) & ~size_t{63}; }

// Bytes a message of `payload` bytes occupies: header + payload + tail.
constexpr size_t FramedBytes(size_t payload) {
  return kHeaderBytes + Align8(payload) + kTailBytes;
}
// The largest payload a slot of `slot_bytes` holds.
constexpr size_t SlotPayloadCapacity(size_t slot_bytes) {
  return slot_bytes < kHeaderBytes + kTailBytes
             ? 0
             : ((slot_bytes - kHeaderBytes - kTailBytes) & ~size_t{7});
}
constexpr size_t TailOffset(size_t payload) {
  return kHeaderBytes + Align8(payload);
}
// The tail of a message of `size` payload bytes with `seq`. It carries the
// size too, so a head whose size bytes are stale (a READ that raced the
// store of the head word) cannot find a matching tail even when the stale
// size rounds to the same 8-byte boundary. Bit 31 is always clear: a tail is
// never taken for a valid head.
constexpr uint64_t TailWord(uint32_t seq, uint32_t size) {
  return (uint64_t{seq} << 32) | ((size & kSizeMask) ^ kTailMagic);
}
// The first 8 bytes of a header as one word (little-endian): size_status in
// the low half, seq in the high half.
constexpr uint64_t HeadWord(uint32_t size_status, uint32_t seq) {
  return (uint64_t{seq} << 32) | size_status;
}
constexpr uint32_t HeadSizeStatus(uint64_t head) {
  return static_cast<uint32_t>(head);
}
constexpr uint32_t HeadSeq(uint64_t head) {
  return static_cast<uint32_t>(head >> 32);
}
constexpr uint32_t NextSeq(uint32_t seq) { return seq + 1 == 0 ? 1 : seq + 1; }

// Server processing time in the header's 16-bit unit (100 ns), saturating.
constexpr uint16_t EncodeServerTime(int64_t ns) {
  return ns <= 0 ? 0 : (ns / 100 >= 0xffff ? 0xffff : static_cast<uint16_t>(ns / 100));
}
constexpr int64_t DecodeServerTimeNs(uint16_t t) { return int64_t{t} * 100; }

// Where things are in the server's per-connection region.
struct ConnectionLayout {
  uint32_t slots = 0;
  uint32_t request_slot_bytes = 0;   // Multiple of 64.
  uint32_t response_slot_bytes = 0;  // Multiple of 64.

  size_t RequestSlotOffset(uint32_t i) const {
    return sizeof(ControlBlock) + size_t{i} * request_slot_bytes;
  }
  size_t ResponseSlotOffset(uint32_t i) const {
    return sizeof(ControlBlock) + size_t{slots} * request_slot_bytes +
           size_t{i} * response_slot_bytes;
  }
  // The cancel word of slot i (8 bytes), after the response buffers.
  size_t CancelOffset(uint32_t i) const {
    return sizeof(ControlBlock) +
           size_t{slots} * (request_slot_bytes + response_slot_bytes) +
           size_t{i} * 8;
  }
  size_t ServerRegionBytes() const {
    return CancelOffset(0) + Align64(size_t{slots} * 8);
  }
  // The client's reply region: one response_slot_bytes slot per slot.
  size_t ReplySlotOffset(uint32_t i) const {
    return size_t{i} * response_slot_bytes;
  }
  size_t ReplyRegionBytes() const { return size_t{slots} * response_slot_bytes; }
  size_t RequestPayloadCapacity() const {
    return SlotPayloadCapacity(request_slot_bytes);
  }
  size_t ResponsePayloadCapacity() const {
    return SlotPayloadCapacity(response_slot_bytes);
  }
};

// The rpc handshake's version (RpcHello / RpcWelcome); a mismatch is
// FAILED_PRECONDITION on both sides. 2: doorbells and hot slots. 3: deadline
// budgets (kRequestFlagDeadline) and cancel words. 4: the mode word is per
// method. 5: notifying pushes (kRequestFlagNotify).
inline constexpr uint32_t kRpcVersion = 5;

// A worker's doorbell area: how a client tells the worker which of its slots
// to look at, so that the worker's work discovery costs what arrived, not
// what is connected (docs/wire_formats.md section 7). One region per worker,
// allocated by the server; connection i of the worker (its "bell") owns the
// word at WordOffset(i) and shares the summary byte of its group of 8,
// SummaryOffset(i): a group's 8 bell words fill one cache line, which is all
// the worker reads for a ring. Each is exposed to the connection as a region of its
// own (verbs: registered over exactly those bytes).
//
//   [0, SummaryBytes())          summary: byte g != 0 means "some bell of
//                                group g (bells 8g .. 8g + 7) rang"; clients
//                                store 1, the worker swaps whole words to 0
//   WordOffset(i), 8 bytes       bell word of connection i:
//                                (ring count << 32) | slot mask
//
// A client rings by WRITing its bell word and then its summary byte (one
// post list, after the request WRITE: ordered by the transport's rule 1).
// Bit (s % 32) of the mask asks the worker to look at slot s; a mask of 0
// means every slot. The ring count makes every ring a new value.
struct BellsLayout {
  static constexpr uint32_t kGroup = 8;
  uint32_t capacity = 0;  // Bells; a multiple of 64.

  size_t SummaryBytes() const { return Align64(capacity / kGroup); }
  static size_t SummaryOffset(uint32_t bell) { return bell / kGroup; }
  size_t WordOffset(uint32_t bell) const {
    return SummaryBytes() + size_t{bell} * 8;
  }
  size_t Bytes() const { return WordOffset(capacity); }
};
static_assert(BellsLayout::kGroup * 8 == 64,
              "a group's bell words fill one cache line");

constexpr uint64_t BellWord(uint32_t ring_count, uint32_t slot_mask) {
  return (uint64_t{ring_count} << 32) | slot_mask;
}
constexpr uint32_t BellMask(uint64_t word) {
  return static_cast<uint32_t>(word);
}
constexpr uint32_t SlotBit(uint32_t slot) { return 1u << (slot % 32); }

}  // namespace wire
}  // namespace rfrpc

#endif  // RFRPC_RPC_WIRE_FORMAT_H_
