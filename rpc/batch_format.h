// Copyright 2026 The rfrpc Authors.
//
// Request and result batches (paper §4.1, Fig. 6), carried inside the slot
// formats of rpc/wire_format.h. Documented in docs/wire_formats.md.
//
// A request batch is a request slot whose header has kRequestFlagBatch set;
// `aux` carries the batch size the client wants (the auto sizer's choice,
// which the server also uses as its result-part entry limit) and
// `method_id` is 0. The payload is a sequence of entries, each 8-aligned:
//
//   0  uint32 size        payload bytes of this entry
//   4  uint32 method_id
//   8  payload, padded to a multiple of 8
//
// The server takes the batch when the head word shows the expected seq (the
// head status bit) and the tail shows it too (the tail status bit), exactly
// as for a single request.
//
// With kRequestFlagDeadline the entries are followed by one budget code
// (wire::EncodeBudget, uint16) per entry, in entry order, padded with zeros
// to a multiple of 8, and the header's `method_id` holds the entries' byte
// length (the offset of the codes in the payload):
//
//   [0, method_id)               entries, as above
//   [method_id, size)            uint16 budget code per entry, then padding
//
// The codes are the callers' remaining budgets when the batch was sent.
//
// Results come back as one or more result parts laid back to back in the
// slot's response buffer (and, when pushed, at the same offsets in the
// client's reply slot). Each part is a full response frame (header, payload,
// tail) with kResponseFlagBatch set, `server_time` = processing time of the
// part and `reserved` = entries in the part. Part payload entries:
//
//   0  uint32 size        payload bytes
//   4  uint16 status_code absl::StatusCode; non-zero: payload = message
//   6  uint16 reserved
//   8  payload, padded to a multiple of 8
//
// Results are in request order; the client knows it has them all by
// counting entries. A part holds at most `aux` entries and at most the
// server's result_batch_bytes of payload unless a single entry is larger; a
// part above large_result_bytes is pushed (kResponseFlagPushed), like a
// large single result.

#ifndef RFRPC_RPC_BATCH_FORMAT_H_
#define RFRPC_RPC_BATCH_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rpc/wire_format.h"

namespace rfrpc {
namespace wire {

struct BatchEntryHeader {
  uint32_t size;
  uint32_t method_id;
};
static_assert(sizeof(BatchEntryHeader) == 8, "batch entry header is 8 bytes");

struct ResultEntryHeader {
  uint32_t size;
  uint16_t status_code;
  uint16_t reserved;
};
static_assert(sizeof(ResultEntryHeader) == 8, "result entry header is 8 bytes");

inline constexpr size_t kEntryHeaderBytes = 8;

// A failed call's result entry in a batch carries at most this many bytes
// of its status message: a batch's results share one response slot, and
// the client keeps at least this much room there for every entry
// (ClientConnection::ResultRoom), so an error never takes the room of the
// results after it.
inline constexpr size_t kBatchErrorBytes = 128;

// The RESOURCE_EXHAUSTED message of a batched result of `bytes` bytes that
// found only `left` bytes of its batch's response slot:
// "response of B bytes exceeds the C bytes left in ...". The client reads B
// back (ResultTooLargeBytes) to keep room for results that large.
std::string ResultTooLargeMessage(size_t bytes, size_t left);

// B of a ResultTooLargeMessage, also one cut at kBatchErrorBytes or
// anywhere after its number ("response of B" and any start of the words
// after it); 0 for any other message (a handler's own RESOURCE_EXHAUSTED).
uint64_t ResultTooLargeBytes(absl::string_view message);

// Bytes an entry of `payload` bytes takes in a batch.
constexpr size_t EntryBytes(size_t payload) {
  return kEntryHeaderBytes + Align8(payload);
}

namespace batch_internal {

// Zeroes the padding after the `size` payload bytes at `payload`, keeping
// the payload: the low (first, little-endian) size % 8 bytes of the last
// word are kept, which the entry's Align8 footprint holds whole. A masked
// 8-byte store, not a memset call of 1-7 bytes: it runs once per call.
inline void ZeroPadding(char* payload, uint32_t size) {
  if ((size & 7) == 0) return;
  char* last = payload + (size & ~uint32_t{7});
  uint64_t w;
  std::memcpy(&w, last, 8);
  w &= (uint64_t{1} << (8 * (size & 7))) - 1;
  std::memcpy(last, &w, 8);
}

}  // namespace batch_internal

// Writes an entry header at `p` (the payload follows it) and zeroes the
// padding after `size` payload bytes. Returns EntryBytes(size). Inline, as
// are the readers below: they run once per call on both sides.
inline size_t PutBatchEntry(char* p, uint32_t size, uint32_t method_id) {
  const BatchEntryHeader h{size, method_id};
  std::memcpy(p, &h, sizeof(h));
  batch_internal::ZeroPadding(p + kEntryHeaderBytes, size);
  return EntryBytes(size);
}

inline size_t PutResultEntry(char* p, uint32_t size, uint16_t status_code) {
  const ResultEntryHeader h{size, status_code, 0};
  std::memcpy(p, &h, sizeof(h));
  batch_internal::ZeroPadding(p + kEntryHeaderBytes, size);
  return EntryBytes(size);
}

namespace batch_internal {

// The errors of an entry that does not fit what is left (out of line).
absl::Status TruncatedEntryHeader(size_t left);
absl::Status EntryOverrunsBatch(uint32_t size, size_t left);

// Splits one entry off `rest`. Returns false at the end or on error. Every
// size is checked against what remains before anything is read.
template <typename Header>
inline bool SplitEntry(absl::string_view* rest, Header* h,
                       absl::string_view* payload, absl::Status* error) {
  if (rest->empty()) return false;
  if (rest->size() < kEntryHeaderBytes) {
    *error = TruncatedEntryHeader(rest->size());
    return false;
  }
  std::memcpy(h, rest->data(), sizeof(*h));
  const size_t avail = rest->size() - kEntryHeaderBytes;
  if (h->size > avail) {
    *error = EntryOverrunsBatch(h->size, avail);
    return false;
  }
  *payload = absl::string_view(rest->data() + kEntryHeaderBytes, h->size);
  const size_t step = EntryBytes(h->size);
  rest->remove_prefix(step < rest->size() ? step : rest->size());
  return true;
}

}  // namespace batch_internal

// Walks the entries of a request batch payload. Every size is checked
// against what remains before anything is read.
class BatchReader {
 public:
  explicit BatchReader(absl::string_view payload) : rest_(payload) {}
  // Returns true and fills the entry, false at the end. A malformed batch
  // (an entry header or size running past the payload) sets error().
  bool Next(uint32_t* method_id, absl::string_view* payload);
  const absl::Status& error() const { return error_; }

 private:
  absl::string_view rest_;
  absl::Status error_;
};

// The same for the payload of a result part.
class ResultReader {
 public:
  explicit ResultReader(absl::string_view payload) : rest_(payload) {}
  bool Next(uint16_t* status_code, absl::string_view* payload);
  const absl::Status& error() const { return error_; }

 private:
  absl::string_view rest_;
  absl::Status error_;
};

inline bool BatchReader::Next(uint32_t* method_id, absl::string_view* payload) {
  if (!error_.ok()) return false;
  BatchEntryHeader h;
  if (!batch_internal::SplitEntry(&rest_, &h, payload, &error_)) return false;
  *method_id = h.method_id;
  return true;
}

inline bool ResultReader::Next(uint16_t* status_code,
                               absl::string_view* payload) {
  if (!error_.ok()) return false;
  ResultEntryHeader h;
  if (!batch_internal::SplitEntry(&rest_, &h, payload, &error_)) return false;
  *status_code = h.status_code;
  return true;
}

// Counts the entries of a request batch; INVALID_ARGUMENT if malformed or
// empty.
absl::Status CountBatchEntries(absl::string_view payload, uint32_t* count);

// Bytes the budget codes of `entries` entries take after them.
constexpr size_t BudgetCodesBytes(size_t entries) { return Align8(2 * entries); }

// Writes the codes of a batch's entries at `p` (8-aligned, room for
// BudgetCodesBytes(codes.size())), zero padding included. Returns the bytes
// written.
inline size_t PutBudgetCodes(char* p, const uint16_t* codes, size_t n) {
  std::memcpy(p, codes, 2 * n);
  const size_t bytes = BudgetCodesBytes(n);
  if (bytes > 2 * n) std::memset(p + 2 * n, 0, bytes - 2 * n);
  return bytes;
}

// A request batch's payload split into its entries and (with
// kRequestFlagDeadline) the budget code of each. `flags` and `method_id` are
// the request header's.
struct BatchPayload {
  absl::string_view entries;
  const char* budgets = nullptr;  // Null: no budgets were sent.
  uint32_t count = 0;             // Entries.
  // Entry i's budget code (kNoBudget without budgets). REQUIRES: i < count.
  uint16_t budget(uint32_t i) const {
    if (budgets == nullptr) return kNoBudget;
    uint16_t code;
    std::memcpy(&code, budgets + 2 * size_t{i}, sizeof(code));
    return code;
  }
};

// Splits and counts a request batch. INVALID_ARGUMENT if the entries are
// malformed or none, or if the budget codes are not where the header says or
// fewer than the entries.
absl::Status ParseBatchPayload(absl::string_view payload, uint16_t flags,
                               uint32_t method_id, BatchPayload* out);

}  // namespace wire
}  // namespace rfrpc

#endif  // RFRPC_RPC_BATCH_FORMAT_H_
