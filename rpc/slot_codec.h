// Copyright 2026 The rfrpc Authors.
//
// Encoding and inspection of request slots and response buffers (the
// formats in rpc/wire_format.h). Pure functions over memory; every byte that
// came from a peer is bounds-checked here before anyone trusts it.
// Thread-compatible.

#ifndef RFRPC_RPC_SLOT_CODEC_H_
#define RFRPC_RPC_SLOT_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "rpc/wire_format.h"

namespace rfrpc {
namespace wire {

// Client: writes header and tail around a payload already placed at
// slot + kHeaderBytes. Returns the bytes to WRITE (FramedBytes(size)).
// REQUIRES: FramedBytes(size) fits the slot; seq != 0.
size_t FinishRequest(char* slot, uint32_t size, uint32_t seq,
                     uint32_t method_id, uint16_t aux, uint16_t flags);

enum class SlotState {
  kEmpty,       // Nothing new: never written, or an older seq (stale).
  kIncomplete,  // Head arrived, tail not yet: the WRITE is still landing.
  kReady,       // A complete request with the expected seq.
  kCorrupt,     // Expected seq but a size the slot cannot hold.
};

struct RequestView {
  uint32_t seq = 0;
  uint32_t method_id = 0;
  uint16_t aux = 0;
  uint16_t flags = 0;
  absl::string_view payload;
};

// Server: inspects the request slot `slot` (slot_bytes long) for the request
// with `expected_seq`. On kReady fills `out`; on kCorrupt sets `*why`.
// Reads the head and tail with acquire semantics.
SlotState InspectRequest(const char* slot, size_t slot_bytes,
                         uint32_t expected_seq, RequestView* out,
                         std::string* why);

// Server: publishes a response whose payload is already at
// buf + kHeaderBytes: writes header fields and tail, then the first word
// with release semantics. Returns FramedBytes(size).
// REQUIRES: FramedBytes(size) fits the buffer.
// `entries`: result entries in a batch part (the header's reserved field).
size_t PublishResponse(char* buf, uint32_t size, uint32_t seq,
                       uint16_t server_time, uint16_t status_code,
                       uint16_t flags, uint16_t entries = 0);

enum class FetchState {
  kNotReady,  // Older seq or not yet published.
  kReady,     // Header valid for expected_seq.
  kCorrupt,   // Expected seq but a size past the buffer's capacity.
};

struct ResponseView {
  uint32_t size = 0;
  uint16_t server_time = 0;
  uint16_t status_code = 0;
  uint16_t flags = 0;
  uint16_t entries = 0;  // Batch parts: result entries in the part.
};

// Client: inspects the header of fetched response bytes (as READ from the
// server, or as WRITTen into the reply slot). `capacity` is the response
// slot's payload capacity. `require_tail`: also require the tail (reply
// slots, where the WRITE may still be landing); a frame past `available` is
// then kCorrupt, and the header's other fields are read only after the tail
// (a WRITE landing front to back shows the head word before them). In a
// reply slot kCorrupt only means suspect: before the WRITE lands, the bytes
// at a batch part's offset are what earlier results left there, and may show
// the expected seq by chance.
FetchState InspectResponse(const char* buf, size_t available, size_t capacity,
                           uint32_t expected_seq, bool require_tail,
                           ResponseView* out);

}  // namespace wire
}  // namespace rfrpc

#endif  // RFRPC_RPC_SLOT_CODEC_H_
