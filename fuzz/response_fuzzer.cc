// Copyright 2026 The rfrpc Authors.
//
// Fuzzes the client's view of a response buffer: InspectResponse on the
// fetched (or WRITTen) bytes and, for batches, the walk over result parts
// with ResultReader, using the same offset arithmetic as
// ClientConnection::HandleHeader / CompletePart / the reply-slot check.
// Every byte of the buffer comes from the (untrusted) server.
//
// Input: byte 0 bits 0-2 pick the response slot size (64 .. 4096 bytes),
// bit 3 = reply slot (require_tail), bit 4 = the slot holds a batch, bit 5 =
// force valid bit + expected seq into each part header the walk reaches;
// byte 1 picks F (fetched bytes, 16 .. slot); byte 2 = calls in the batch.
// The rest fills the buffer from offset 0.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rpc/batch_format.h"
#include "rpc/slot_codec.h"
#include "rpc/wire_format.h"

namespace {

using namespace rfrpc;  // NOLINT: a harness.

constexpr uint32_t kSeq = 0x01020304;
constexpr size_t kSlotSizes[] = {64, 128, 256, 512, 1024, 2048, 4096, 4096};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const size_t slot_bytes = kSlotSizes[data[0] & 7];
  const bool reply = data[0] & 8;
  const bool batch = data[0] & 16;
  const bool force = data[0] & 32;
  const size_t fetch = std::max<size_t>(
      wire::kHeaderBytes, (size_t{data[1]} * 16) % (slot_bytes + 1));
  const uint32_t calls = batch ? 1 + data[2] % 64 : 1;
  data += 3;
  size -= 3;
  std::vector<char> buf_vec(slot_bytes, 0);
  char* buf = buf_vec.data();
  std::memcpy(buf, data, std::min(size, slot_bytes));

  uint32_t part_offset = 0;
  uint32_t results_done = 0;
  for (int parts = 0; parts < 4096; ++parts) {
    char* part = buf + part_offset;
    const uint32_t room = static_cast<uint32_t>(slot_bytes) - part_offset;
    if (force) {
      uint32_t first;
      std::memcpy(&first, part, 4);
      const uint64_t head = wire::HeadWord(first | wire::kValidBit, kSeq);
      std::memcpy(part, &head, 8);
    }
    // A fetch READs min(F, room) bytes; a reply slot is all there.
    const size_t available = reply ? room : std::min<size_t>(fetch, room);
    wire::ResponseView view;
    const wire::FetchState st = wire::InspectResponse(
        part, available, wire::SlotPayloadCapacity(room), kSeq, reply, &view);
    if (st != wire::FetchState::kReady) return 0;
    // The client trusts header + payload to lie in the slot (it READs the
    // rest when view.size > F - 16): check that promise.
    if (wire::kHeaderBytes + size_t{view.size} > room) abort();
    if (reply && wire::FramedBytes(view.size) > room) abort();
    const absl::string_view payload(part + wire::kHeaderBytes, view.size);
    if ((view.flags & wire::kResponseFlagPushed) && !reply) return 0;  // Waits on the reply slot.
    if (!batch || (view.flags & wire::kResponseFlagBatch) == 0) {
      // A single result or a batch-level error: the message is the payload.
      volatile char sink = 0;
      for (char c : payload) sink ^= c;
      return 0;
    }
    wire::ResultReader reader(payload);
    uint16_t code;
    absl::string_view result;
    uint32_t n = 0;
    while (reader.Next(&code, &result)) {
      if (result.data() < payload.data() ||
          result.data() + result.size() > payload.data() + payload.size()) {
        abort();
      }
      if (results_done >= calls) break;
      ++results_done;
      ++n;
    }
    if (!reader.error().ok() || n != view.entries) return 0;  // Fails the connection.
    if (results_done >= calls) return 0;
    part_offset += static_cast<uint32_t>(wire::FramedBytes(view.size));
    if (part_offset + wire::kHeaderBytes > slot_bytes) return 0;
  }
  return 0;
}
