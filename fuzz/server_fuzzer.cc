// Copyright 2026 The rfrpc Authors.
//
// Whole-server fuzzer: a real rfrpc Server (shm provider, one worker, the
// FuzzService) runs in this process; a raw transport client connects with a
// hand-made RpcHello and, per input, WRITEs a request slot built from the
// fuzz bytes into its slot 0, then READs the response buffer until the server
// has answered, following pushed parts into its reply region. This drives the
// server's real path: InspectRequest, Serve / ServeBatch (part packing and
// moves), RunHandler, PublishResponse and Push.
//
// Input: byte 0: bit 0 batch flag, bit 1 server-reply mode, bit 2 a size
// beyond the slot (kCorrupt), bit 3 map method ids onto the service, bit 4
// raw flags (byte 3) instead of bit 0, bit 5 a batch with deadline budgets
// (the bytes after its whole entries are the codes), bit 6 WRITE the slot's
// cancel word first (aux bit 0: with this request's seq; else garbage);
// bytes 1-2: aux; byte 3: raw flags; the rest: the payload (a request, or
// batch entries).
//
// Invariants checked (abort() = a finding): the server answers every
// complete request within 5 s; a well-formed batch gets exactly one result
// per entry, in parts that each parse; a malformed one gets one plain error.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/time/clock.h"
#include "fuzz/fuzz_service.h"
#include "fuzz/fuzz_util.h"
#include "rpc/batch_format.h"
#include "rpc/rpc_handshake.pb.h"
#include "rpc/server.h"
#include "rpc/slot_codec.h"
#include "rpc/wire_format.h"
#include "transport/transport.h"

namespace {

using namespace rfrpc;  // NOLINT: a harness.
using transport::WorkRequest;

constexpr uint32_t kRequestSlotBytes = 4096;
constexpr uint32_t kResponseSlotBytes = 2048;

[[noreturn]] void Die(const char* what) {
  fprintf(stderr, "server_fuzzer: %s\n", what);
  abort();
}

class Harness {
 public:
  Harness() {
    ServerOptions so;
    so.provider = "shm";
    so.workers = 1;
    so.max_slots_per_connection = 1;
    so.max_request_bytes = 8192;
    so.max_response_bytes = 8192;
    // Small limits so part splitting and pushes happen with small inputs.
    so.large_result_bytes = 512;
    so.result_batch_bytes = 256;
    // Never sleep (each input waits on the worker), but yield when idle
    // instead of spinning: on a busy 2-core machine a spinning worker holds
    // its core until preempted while the harness thread waits for a slice.
    so.idle_spin_rounds = 64;
    so.idle_park_after = absl::InfiniteDuration();
    // No stall warnings: this server lives until the process exits, and a
    // worker logging one then (a handler slowed past 10 ms under TSan on a
    // loaded host) raced glog's static destructors (a TSan report in
    // server_fuzzer_replay_test, 2026-12-07). The harness checks no timing.
    so.stall_warning = absl::ZeroDuration();
    server_ = std::make_unique<Server>(so);
    if (!server_->RegisterService(&service_).ok()) Die("register");
    if (!server_->Start().ok()) Die("start");

    provider_ = *transport::Provider::Open("shm", {});
    cq_ = *provider_->CreateCompletionQueue({});
    local_ = *provider_->AllocateMemory(kRequestSlotBytes + kResponseSlotBytes + 64);
    reply_ = *provider_->AllocateMemory(kResponseSlotBytes);
    rpc::RpcHello hello;
    hello.set_version(wire::kRpcVersion);
    hello.set_worker(-1);
    hello.set_slots(1);
    hello.set_request_slot_bytes(kRequestSlotBytes);
    hello.set_response_slot_bytes(kResponseSlotBytes);
    hello.set_client_name("server_fuzzer");
    // As real clients do: a first seq the inputs cannot know (see Run).
    absl::BitGen gen;
    seq_ = absl::Uniform<uint32_t>(gen, 1, 1u << 31);
    hello.set_first_seq(seq_);
    seq_ -= 1;
    transport::ConnectionSetup setup;
    setup.cq = cq_.get();
    setup.exposed.push_back({reply_.get(), 0, 0, true, true});
    setup.user_data = hello.SerializeAsString();
    absl::StatusOr<std::unique_ptr<transport::Connection>> c =
        provider_->Connect(server_->address(), setup);
    if (!c.ok()) Die("connect");
    conn_ = std::move(*c);
    rpc::RpcWelcome welcome;
    if (!welcome.ParseFromString(conn_->peer().user_data)) Die("welcome");
    layout_.slots = welcome.slots();
    layout_.request_slot_bytes = welcome.request_slot_bytes();
    layout_.response_slot_bytes = welcome.response_slot_bytes();
    if (layout_.slots != 1 || layout_.request_slot_bytes != kRequestSlotBytes ||
        layout_.response_slot_bytes != kResponseSlotBytes) {
      Die("layout");
    }
    server_region_ = conn_->peer().regions.at(0);
    bell_word_ = conn_->peer().regions.at(1);
    bell_summary_ = conn_->peer().regions.at(2);
    local_->data()[kBellOffset + 8] = 1;  // The summary byte's value.
  }

  void Run(const uint8_t* data, size_t size);

 private:
  void PostAndWait(const WorkRequest& wr) {
    if (!conn_->Post(absl::MakeConstSpan(&wr, 1)).ok()) Die("post failed");
    transport::Completion c;
    if (!cq_->Wait(&c, absl::Seconds(5)).ok() || !c.ok()) Die("completion");
  }
  void SetMode(uint64_t mode) {
    if (mode == mode_) return;
    std::memcpy(local_->data() + kRequestSlotBytes + kResponseSlotBytes, &mode, 8);
    PostAndWait(WorkRequest::Write(1, local_.get(),
                                   kRequestSlotBytes + kResponseSlotBytes, 8,
                                   server_region_, 0));
    mode_ = mode;
  }
  // READs the response buffer from `offset` on into local_ at
  // kRequestSlotBytes + offset, as the client does: a READ starting at the
  // part's header. (One READ from offset 0 orders only its first 8 bytes; a
  // later part's head could then be copied after the fields behind it.)
  const char* Fetch(uint32_t offset) {
    PostAndWait(WorkRequest::Read(2, local_.get(), kRequestSlotBytes + offset,
                                  kResponseSlotBytes - offset, server_region_,
                                  layout_.ResponseSlotOffset(0) + offset));
    return local_->data() + kRequestSlotBytes + offset;
  }
  // Rings the worker's doorbell for slot 0, as a client does after its
  // request WRITE (docs/wire_formats.md section 7).
  void Ring() {
    const uint64_t word = wire::BellWord(++rings_, wire::SlotBit(0));
    std::memcpy(local_->data() + kBellOffset, &word, 8);
    WorkRequest wrs[2] = {
        WorkRequest::Write(4, local_.get(), kBellOffset, 8, bell_word_, 0),
        WorkRequest::Write(5, local_.get(), kBellOffset + 8, 1, bell_summary_, 0)};
    wrs[0].signaled = false;
    if (!conn_->Post(absl::MakeConstSpan(wrs, 2)).ok()) Die("ring failed");
    transport::Completion c;
    if (!cq_->Wait(&c, absl::Seconds(5)).ok() || !c.ok()) Die("ring completion");
  }
  // Waits for the part at `offset`; returns its view and payload.
  void WaitPart(uint32_t offset, wire::ResponseView* view, const char** payload);

  fuzz::FuzzService service_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<transport::Provider> provider_;
  std::unique_ptr<transport::CompletionQueue> cq_;
  std::unique_ptr<transport::MemoryRegion> local_, reply_;
  std::unique_ptr<transport::Connection> conn_;
  transport::RemoteRegion server_region_, bell_word_, bell_summary_;
  // Where the doorbell WRITEs' sources sit in local_ (after the mode word).
  static constexpr uint64_t kBellOffset = kRequestSlotBytes + kResponseSlotBytes + 16;
  // The cancel word's source (bit 6).
  static constexpr uint64_t kCancelSrc = kRequestSlotBytes + kResponseSlotBytes + 32;
  uint32_t rings_ = 0;
  wire::ConnectionLayout layout_;
  uint32_t seq_ = 0;
  uint64_t mode_ = wire::kModeRemoteFetch;
};

void Harness::WaitPart(uint32_t offset, wire::ResponseView* view,
                       const char** payload) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  const uint32_t room = kResponseSlotBytes - offset;
  for (;;) {
    const char* buf = Fetch(offset);
    const wire::FetchState st = wire::InspectResponse(
        buf, room, wire::SlotPayloadCapacity(room), seq_, true, view);
    if (st == wire::FetchState::kCorrupt) Die("corrupt response header");
    if (st == wire::FetchState::kReady) {
      if ((view->flags & wire::kResponseFlagPushed) == 0 &&
          mode_ == wire::kModeRemoteFetch) {
        *payload = buf + wire::kHeaderBytes;
        return;
      }
      break;  // Pushed: the reply region gets the same bytes.
    }
    if (absl::Now() > deadline) Die("server did not answer within 5 s");
    std::this_thread::yield();  // Let the worker run if it shares our core.
  }
  for (;;) {
    const char* buf = reply_->data() + offset;
    wire::ResponseView pushed;
    const wire::FetchState st = wire::InspectResponse(
        buf, room, wire::SlotPayloadCapacity(room), seq_, true, &pushed);
    if (st == wire::FetchState::kCorrupt) Die("corrupt pushed header");
    if (st == wire::FetchState::kReady) {
      if (pushed.size != view->size || pushed.entries != view->entries) {
        Die("pushed part differs from the published one");
      }
      *payload = buf + wire::kHeaderBytes;
      return;
    }
    if (absl::Now() > deadline) Die("pushed result did not arrive within 5 s");
    std::this_thread::yield();
  }
}

void Harness::Run(const uint8_t* data, size_t size) {
  if (size < 4) return;
  const uint8_t ctl = data[0];
  const uint16_t aux = static_cast<uint16_t>(data[1] | (data[2] << 8));
  uint16_t flags =
      (ctl & 16) ? data[3] : ((ctl & 1) ? wire::kRequestFlagBatch : 0);
  data += 4;
  size -= 4;
  const size_t cap = layout_.RequestPayloadCapacity();
  if (size > cap) size = cap;
  SetMode((ctl & 2) ? wire::kModeServerReply : wire::kModeRemoteFetch);
  // Every push of the previous input has landed (Run waited for each). Stale
  // pushed bytes are this client's own results, which an input controls: a
  // client can always fool itself with them, so start from a clean region.
  std::memset(reply_->data(), 0, kResponseSlotBytes);

  seq_ = wire::NextSeq(seq_);
  char* slot = local_->data();
  std::memcpy(slot + wire::kHeaderBytes, data, size);
  const uint32_t method = fuzz::PickMethodId(size > 0 ? data[0] : 0);
  // The whole entries at the front of the payload (their byte length).
  size_t entries_bytes = 0;
  if (flags & wire::kRequestFlagBatch) {
    while (entries_bytes + wire::kEntryHeaderBytes <= size) {
      wire::BatchEntryHeader e;
      std::memcpy(&e, slot + wire::kHeaderBytes + entries_bytes, sizeof(e));
      if (ctl & 8) {
        e.method_id = fuzz::PickMethodId(e.method_id);
        std::memcpy(slot + wire::kHeaderBytes + entries_bytes, &e, sizeof(e));
      }
      if (e.size > size - entries_bytes - wire::kEntryHeaderBytes) break;
      entries_bytes += wire::EntryBytes(e.size);
    }
  }
  // Bit 5: a batch with deadline budgets: the bytes after the whole entries
  // are its budget codes, and method_id says where they start.
  uint32_t method_id = (ctl & 8) ? method : 0x12345678u;
  if ((ctl & 32) && (flags & wire::kRequestFlagBatch)) {
    flags |= wire::kRequestFlagDeadline;
    method_id = static_cast<uint32_t>(std::min(entries_bytes, size));
  }
  size_t framed = wire::FinishRequest(slot, static_cast<uint32_t>(size), seq_,
                                      method_id, aux, flags);
  const bool corrupt = ctl & 4;
  if (corrupt) {
    // A size the slot cannot hold; the server must refuse it without
    // reading past the slot.
    const uint32_t bogus = static_cast<uint32_t>(cap + 8 + size);
    wire::RequestHeader h;
    std::memcpy(&h, slot, sizeof(h));
    h.size_status = wire::kValidBit | (bogus & wire::kSizeMask);
    std::memcpy(slot, &h, sizeof(h));
    framed = wire::kHeaderBytes;
  }
  if (ctl & 64) {
    // The slot's cancel word: this request's seq (aux bit 0: an async
    // entry still running is answered CANCELLED) or any other value (must
    // be ignored).
    const uint64_t word =
        (aux & 1) ? wire::CancelWord(seq_) : uint64_t{aux} * 0x9E3779B97F4A7C15ull;
    std::memcpy(local_->data() + kCancelSrc, &word, 8);
    PostAndWait(WorkRequest::Write(6, local_.get(), kCancelSrc, 8,
                                   server_region_, layout_.CancelOffset(0)));
  }
  PostAndWait(WorkRequest::Write(3, local_.get(), 0,
                                 static_cast<uint32_t>(framed), server_region_,
                                 layout_.RequestSlotOffset(0)));
  Ring();

  // What the answer must look like.
  uint32_t expected = 1;
  bool expect_batch = false;
  if (!corrupt && (flags & ~wire::kRequestFlagsKnown) == 0 &&
      (flags & wire::kRequestFlagBatch)) {
    wire::BatchPayload batch;
    expect_batch = wire::ParseBatchPayload(
                       absl::string_view(slot + wire::kHeaderBytes, size),
                       flags, method_id, &batch)
                       .ok();
    expected = batch.count;
  }
  uint32_t offset = 0, got = 0;
  for (;;) {
    wire::ResponseView view;
    const char* payload = nullptr;
    WaitPart(offset, &view, &payload);
    const bool part_is_batch = view.flags & wire::kResponseFlagBatch;
    if (!part_is_batch) {
      if (got != 0) Die("plain response after result parts");
      if (corrupt && view.status_code !=
                         static_cast<uint16_t>(absl::StatusCode::kInvalidArgument)) {
        Die("oversize request not answered with INVALID_ARGUMENT");
      }
      if (expect_batch && view.status_code == 0) Die("batch answered as one OK call");
      return;
    }
    if (!expect_batch) Die("result parts for a request that is no batch");
    wire::ResultReader reader(absl::string_view(payload, view.size));
    uint16_t code;
    absl::string_view result;
    uint32_t n = 0;
    while (reader.Next(&code, &result)) ++n;
    if (!reader.error().ok()) Die("result part does not parse");
    if (n != view.entries || n == 0) Die("part entry count mismatch");
    got += n;
    if (got > expected) Die("more results than requests");
    if (got == expected) return;
    offset += static_cast<uint32_t>(wire::FramedBytes(view.size));
    if (offset + wire::kHeaderBytes > kResponseSlotBytes) {
      Die("result parts run past the response buffer");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rfrpc::fuzz::QuietProtobufLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness* h = new Harness;  // Lives for the process.
  h->Run(data, size);
  return 0;
}
