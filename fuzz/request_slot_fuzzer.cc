// Copyright 2026 The rfrpc Authors.
//
// Fuzzes what the server does with the bytes of a request slot, as pure
// functions (fast; server_fuzzer drives the real server worker):
// InspectRequest over a slot of fixed size, then for a ready single request
// the handler's protobuf decode (UnaryHandler::Run of a small service), and
// for a ready batch CountBatchEntries and a BatchReader walk that runs each
// entry the same way.
//
// Input: byte 0 picks the slot size (64, 256, 1024 or 4096 bytes); byte 1
// holds fix-ups that help the fuzzer reach deep states:
//   bit 0  write valid bit and the expected seq into the head word
//   bit 1  size field = bytes of payload given (clamped to 30 bits)
//   bit 2  write the tail the server expects after that size
//   bit 3  map method ids (single and batch entries) onto the service's ids
// The rest is copied into the slot from offset 0 (header included).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fuzz/fuzz_service.h"
#include "fuzz/fuzz_util.h"
#include "rpc/batch_format.h"
#include "rpc/service.h"
#include "rpc/slot_codec.h"
#include "rpc/wire_format.h"

namespace {

using namespace rfrpc;  // NOLINT: a harness, not library code.

constexpr uint32_t kExpectedSeq = 7;
constexpr size_t kSlotSizes[] = {64, 256, 1024, 4096};
constexpr size_t kResponseCap = 2048;

struct Env {
  fuzz::FuzzService service;
  absl::flat_hash_map<uint32_t, const MethodEntry*> methods;
  ServerContext ctx;
  Env() {
    for (const MethodEntry& m : service.methods()) methods[m.id] = &m;
  }
};

Env& env() {
  static Env* e = new Env;
  return *e;
}

// What the worker's RunHandler does with one request.
void RunOne(uint32_t method_id, absl::string_view request) {
  auto it = env().methods.find(method_id);
  if (it == env().methods.end()) return;  // UNIMPLEMENTED.
  env().ctx.Reset(it->second->full_name, "fuzz", 0, absl::Now());
  // Exactly the capacity, in its own allocation, so ASan sees any overrun.
  std::vector<char> out(kResponseCap);
  size_t len = 0;
  absl::Status s = it->second->handler->Run(&env().ctx, request, out.data(),
                                            out.size(), &len);
  // On success the response fits. (RESOURCE_EXHAUSTED may also be the
  // handler's own status, with any len: the server tells them apart.)
  if (s.ok() && len > out.size()) abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rfrpc::fuzz::QuietProtobufLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t slot_bytes = kSlotSizes[data[0] & 3];
  const uint8_t fix = data[1];
  data += 2;
  size -= 2;
  // The slot lives in its own exact-size heap block: a read past it is an
  // ASan report.
  std::vector<char> slot_buf(slot_bytes, 0);
  char* slot = slot_buf.data();
  std::memcpy(slot, data, std::min(size, slot_bytes));
  wire::RequestHeader h;
  std::memcpy(&h, slot, sizeof(h));
  if (fix & 1) {
    h.size_status |= wire::kValidBit;
    h.seq = kExpectedSeq;
  }
  if (fix & 2) {
    const size_t given = size > wire::kHeaderBytes ? size - wire::kHeaderBytes : 0;
    h.size_status = (h.size_status & wire::kValidBit) |
                    static_cast<uint32_t>(given & wire::kSizeMask);
  }
  if (fix & 8) h.method_id = fuzz::PickMethodId(h.method_id);
  std::memcpy(slot, &h, sizeof(h));
  const uint32_t claimed = h.size_status & wire::kSizeMask;
  if ((fix & 4) && wire::TailOffset(claimed) + wire::kTailBytes <= slot_bytes) {
    const uint64_t tail = wire::TailWord(kExpectedSeq, claimed);
    std::memcpy(slot + wire::TailOffset(claimed), &tail, sizeof(tail));
  }
  if ((fix & 8) && (h.flags & wire::kRequestFlagBatch) &&
      claimed <= wire::SlotPayloadCapacity(slot_bytes)) {
    // Rewrite entry method ids in place, walking as BatchReader would.
    size_t off = wire::kHeaderBytes;
    const size_t end = wire::kHeaderBytes + claimed;
    while (off + wire::kEntryHeaderBytes <= end) {
      wire::BatchEntryHeader e;
      std::memcpy(&e, slot + off, sizeof(e));
      e.method_id = fuzz::PickMethodId(e.method_id);
      std::memcpy(slot + off, &e, sizeof(e));
      if (e.size > end - off - wire::kEntryHeaderBytes) break;
      off += wire::EntryBytes(e.size);
    }
  }

  wire::RequestView req;
  std::string why;
  const wire::SlotState state =
      wire::InspectRequest(slot, slot_bytes, kExpectedSeq, &req, &why);
  if (state == wire::SlotState::kCorrupt && why.empty()) abort();
  if (state != wire::SlotState::kReady) return 0;
  // The view must lie inside the slot, before the tail.
  if (req.payload.data() != slot + wire::kHeaderBytes ||
      wire::FramedBytes(req.payload.size()) > slot_bytes) {
    abort();
  }
  if (req.flags == wire::kRequestFlagBatch) {
    uint32_t n = 0;
    absl::Status bad = wire::CountBatchEntries(req.payload, &n);
    if (!bad.ok()) {
      if (bad.code() != absl::StatusCode::kInvalidArgument) abort();
      return 0;
    }
    wire::BatchReader reader(req.payload);
    uint32_t method_id, seen = 0;
    absl::string_view entry;
    while (reader.Next(&method_id, &entry)) {
      if (entry.data() < req.payload.data() ||
          entry.data() + entry.size() > req.payload.data() + req.payload.size()) {
        abort();
      }
      RunOne(method_id, entry);
      ++seen;
    }
    if (!reader.error().ok() || seen != n) abort();
  } else if (req.flags == 0) {
    RunOne(req.method_id, req.payload);
  }
  return 0;
}
