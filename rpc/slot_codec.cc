// Copyright 2026 The rfrpc Authors.

#include "rpc/slot_codec.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "transport/transport.h"

namespace rfrpc {
namespace wire {

using transport::LoadAcquire64;
using transport::StoreRelease64;

size_t FinishRequest(char* slot, uint32_t size, uint32_t seq,
                     uint32_t method_id, uint16_t aux, uint16_t flags) {
  RequestHeader h;
  h.size_status = kValidBit | (size & kSizeMask);
  h.seq = seq;
  h.aux = aux;
  h.flags = flags;
  h.method_id = method_id;
  std::memcpy(slot, &h, sizeof(h));
  // Zero the alignment padding so no stale bytes travel.
  const size_t pad = Align8(size) - size;
  if (pad > 0) std::memset(slot + kHeaderBytes + size, 0, pad);
  const uint64_t tail = TailWord(seq, size);
  std::memcpy(slot + TailOffset(size), &tail, sizeof(tail));
  return FramedBytes(size);
}

SlotState InspectRequest(const char* slot, size_t slot_bytes,
                         uint32_t expected_seq, RequestView* out,
                         std::string* why) {
  const uint64_t head = LoadAcquire64(slot);
  const uint32_t size_status = HeadSizeStatus(head);
  if ((size_status & kValidBit) == 0 || HeadSeq(head) != expected_seq) {
    return SlotState::kEmpty;
  }
  const uint32_t size = size_status & kSizeMask;
  if (size > SlotPayloadCapacity(slot_bytes)) {
    *why = absl::StrFormat(
        "request of %d bytes exceeds the %d-byte request slot", size,
        SlotPayloadCapacity(slot_bytes));
    return SlotState::kCorrupt;
  }
  if (LoadAcquire64(slot + TailOffset(size)) != TailWord(expected_seq, size)) {
    return SlotState::kIncomplete;
  }
  RequestHeader h;
  std::memcpy(&h, slot, sizeof(h));
  out->seq = expected_seq;
  out->method_id = h.method_id;
  out->aux = h.aux;
  out->flags = h.flags;
  out->payload = absl::string_view(slot + kHeaderBytes, size);
  return SlotState::kReady;
}

size_t PublishResponse(char* buf, uint32_t size, uint32_t seq,
                       uint16_t server_time, uint16_t status_code,
                       uint16_t flags, uint16_t entries) {
  const size_t pad = Align8(size) - size;
  if (pad > 0) std::memset(buf + kHeaderBytes + size, 0, pad);
  const uint64_t tail = TailWord(seq, size);
  std::memcpy(buf + TailOffset(size), &tail, sizeof(tail));
  ResponseHeader h;
  h.size_status = kValidBit | (size & kSizeMask);
  h.seq = seq;
  h.server_time = server_time;
  h.status_code = status_code;
  h.flags = flags;
  h.reserved = entries;
  std::memcpy(buf + 8, reinterpret_cast<const char*>(&h) + 8, 8);
  StoreRelease64(buf, HeadWord(h.size_status, seq));
  return FramedBytes(size);
}

FetchState InspectResponse(const char* buf, size_t available, size_t capacity,
                           uint32_t expected_seq, bool require_tail,
                           ResponseView* out) {
  if (available < kHeaderBytes) return FetchState::kNotReady;
  const uint64_t head = LoadAcquire64(buf);
  const uint32_t size_status = HeadSizeStatus(head);
  if ((size_status & kValidBit) == 0 || HeadSeq(head) != expected_seq) {
    return FetchState::kNotReady;
  }
  const uint32_t size = size_status & kSizeMask;
  if (size > capacity) return FetchState::kCorrupt;
  if (require_tail) {
    if (available < FramedBytes(size)) return FetchState::kCorrupt;
    if (LoadAcquire64(buf + TailOffset(size)) != TailWord(expected_seq, size)) {
      return FetchState::kNotReady;
    }
  }
  // The rest of the header only after the tail: a reply-slot WRITE that is
  // still landing (Soft-RoCE copies it byte by byte, head word first) shows
  // the new head before the fields behind it, and a copy taken before the
  // tail's acquire may hold an earlier part's server_time, status, flags and
  // entries. (InspectRequest reads the request header in the same order.)
  ResponseHeader h;
  std::memcpy(&h, buf, sizeof(h));
  out->size = size;
  out->server_time = h.server_time;
  out->status_code = h.status_code;
  out->flags = h.flags;
  out->entries = h.reserved;
  return FetchState::kReady;
}

}  // namespace wire
}  // namespace rfrpc
