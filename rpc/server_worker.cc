// Copyright 2026 The rfrpc Authors.
//
// Server datapath: server_recv (poll request slots), the handler call, and
// server_send (publish locally; WRITE back only in server-reply or for large
// results).

#include "rpc/server_worker.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "rpc/batch_format.h"
#include "rpc/clock.h"
#include "rpc/slot_codec.h"
#include "rpc/mutex.h"

namespace rfrpc {
namespace internal {
namespace {

// Check connections' liveness every this many rounds.
constexpr uint64_t kLivenessRounds = 4096;
// A server-reply WRITE whose completion has not arrived after this long is
// lost: its slot would never be served again, so the connection is closed
// (the client sees UNAVAILABLE and reconnects).
constexpr int64_t kLostCompletionNs = int64_t{2} * 1000 * 1000 * 1000;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

ServerWorker::ServerWorker(int index, const ServerOptions& options,
                           const MethodTable* methods, ServerCounters* counters,
                           std::unique_ptr<transport::CompletionQueue> cq)
    : index_(index),
      options_(options),
      methods_(methods),
      counters_(counters),
      cq_(std::move(cq)) {}

ServerWorker::~ServerWorker() { Stop(); }

void ServerWorker::Start() {
  thread_ = std::thread([this] { Loop(); });
  if (options_.pin_first_cpu >= 0) {
    const int ncpu = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((options_.pin_first_cpu + index_) % ncpu, &set);
    pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set);
  }
}

void ServerWorker::Stop() {
  stop_.store(true, std::memory_order_release);
  if (thread_.joinable()) thread_.join();
  MutexLock lock(&inbox_mu_);
  inbox_.clear();
}

void ServerWorker::Adopt(std::unique_ptr<ServerConnection> c) {
  connections_.fetch_add(1);
  MutexLock lock(&inbox_mu_);
  inbox_.push_back(std::move(c));
  inbox_nonempty_.store(true, std::memory_order_release);
}

void ServerWorker::Close(size_t i, const absl::Status& why) {
  ServerConnection* c = conns_[i].get();
  VLOG(1) << "worker " << index_ << ": closing connection from " << c->peer
          << ": " << why;
  c->conn->Fail(why);
  conns_[i] = std::move(conns_.back());
  conns_.pop_back();
  connections_.fetch_sub(1);
  counters_->connections_closed.fetch_add(1, std::memory_order_relaxed);
}

void ServerWorker::Idle(int* empty_rounds) {
  const int n = ++*empty_rounds;
  if (n < options_.idle_spin_rounds) {
    CpuRelax();
  } else if (n < options_.idle_spin_rounds + options_.idle_yield_rounds) {
    sched_yield();
  } else {
    absl::SleepFor(options_.idle_sleep);
  }
}

void ServerWorker::TakeCompletions() {
  transport::Completion comps[16];
  const int n = cq_->Poll(absl::MakeSpan(comps));
  pushes_in_flight_ -= std::min<uint64_t>(pushes_in_flight_, n);
  for (int i = 0; i < n; ++i) {
    const transport::Completion& wc = comps[i];
    for (size_t k = 0; k < conns_.size(); ++k) {
      ServerConnection* c = conns_[k].get();
      if (c->conn->id() != wc.connection_id) continue;
      if (!wc.ok()) {
        Close(k, wc.ToStatus());
      } else {
        const uint64_t slot = wc.wr_id;
        if (slot < c->push_in_flight.size() && c->push_in_flight[slot] > 0) {
          --c->push_in_flight[slot];
        }
      }
      break;
    }
  }
}

void ServerWorker::Loop() {
  int empty_rounds = 0;
  uint64_t rounds = 0;
  while (!stop_.load(std::memory_order_acquire)) {
    if (inbox_nonempty_.load(std::memory_order_acquire)) {
      MutexLock lock(&inbox_mu_);
      for (auto& c : inbox_) conns_.push_back(std::move(c));
      inbox_.clear();
      inbox_nonempty_.store(false, std::memory_order_release);
    }
    bool served = false;
    for (size_t k = 0; k < conns_.size(); ++k) {
      ServerConnection* c = conns_[k].get();
      const wire::ConnectionLayout& l = c->layout;
      for (uint32_t s = 0; s < l.slots; ++s) {
        if (c->push_in_flight[s]) continue;
        const char* slot = c->region->data() + l.RequestSlotOffset(s);
        // Cheap check first: the head word only.
        const uint64_t head = transport::LoadAcquire64(slot);
        if (wire::HeadSeq(head) != c->expected_seq[s]) continue;
        Serve(c, s);
        served = true;
      }
    }
    // Only pushes are signaled here: with none in flight the queue is empty.
    if (pushes_in_flight_ > 0) TakeCompletions();
    if (++rounds % kLivenessRounds == 0 || (!served && empty_rounds > 0 &&
                                            empty_rounds % 1024 == 0)) {
      const int64_t now = UnixNanos();
      for (size_t k = 0; k < conns_.size();) {
        absl::Status s = conns_[k]->conn->status();
        const ServerConnection& sc = *conns_[k];
        for (size_t i = 0; s.ok() && i < sc.push_in_flight.size(); ++i) {
          if (sc.push_in_flight[i] > 0 &&
              now - sc.push_posted_ns[i] > kLostCompletionNs) {
            s = absl::UnavailableError(absl::StrCat(
                "no completion for a server-reply WRITE on slot ", i,
                " within 2 s"));
          }
        }
        if (!s.ok()) {
          Close(k, s);
        } else {
          ++k;
        }
      }
    }
    if (served) {
      empty_rounds = 0;
    } else {
      Idle(&empty_rounds);
    }
  }
  // Stopping: fail every connection so clients learn at once.
  while (!conns_.empty()) Close(conns_.size() - 1, absl::UnavailableError("server shutting down"));
}

void ServerWorker::Serve(ServerConnection* c, uint32_t s) {
  const wire::ConnectionLayout& l = c->layout;
  char* slot = c->region->data() + l.RequestSlotOffset(s);
  const uint32_t seq = c->expected_seq[s];
  wire::RequestView req;
  std::string why;
  const wire::SlotState state =
      wire::InspectRequest(slot, l.request_slot_bytes, seq, &req, &why);
  if (state == wire::SlotState::kEmpty || state == wire::SlotState::kIncomplete) {
    return;  // Not (fully) there yet; the next round looks again.
  }
  const int64_t start_ns = UnixNanos();
  char* resp = c->region->data() + l.ResponseSlotOffset(s);
  char* payload = resp + wire::kHeaderBytes;
  const size_t cap = l.ResponsePayloadCapacity();
  size_t len = 0;
  absl::Status status;
  if (state == wire::SlotState::kCorrupt) {
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    status = absl::InvalidArgumentError(why);
  } else if (req.flags == wire::kRequestFlagBatch) {
    ServeBatch(c, s, req, start_ns);
    return;
  } else if (req.flags != 0) {
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    status = absl::InvalidArgumentError(
        absl::StrFormat("request flags 0x%x not supported", req.flags));
  } else {
    status = RunHandler(c, req.method_id, req.payload, start_ns, payload, cap,
                        &len);
  }
  uint16_t code = 0;
  if (!status.ok()) {
    code = static_cast<uint16_t>(status.code());
    len = std::min(status.message().size(), cap);
    std::memcpy(payload, status.message().data(), len);
    counters_->calls_failed.fetch_add(1, std::memory_order_relaxed);
  }
  const bool large = len > options_.large_result_bytes;
  const int64_t elapsed = UnixNanos() - start_ns;
  c->expected_seq[s] = wire::NextSeq(seq);
  const size_t framed = wire::PublishResponse(
      resp, static_cast<uint32_t>(len), seq, wire::EncodeServerTime(elapsed),
      code, large ? wire::kResponseFlagPushed : 0);
  counters_->calls.fetch_add(1, std::memory_order_relaxed);
  FinishPublish(c, s, 0, framed, large);
}

absl::Status ServerWorker::RunHandler(ServerConnection* c, uint32_t method_id,
                                      absl::string_view request,
                                      int64_t start_ns, char* out, size_t cap,
                                      size_t* len) {
  // Batches mostly repeat one method: look it up only when it changes.
  const MethodEntry* m = last_method_;
  if (m == nullptr || m->id != method_id) {
    auto it = methods_->find(method_id);
    if (it == methods_->end()) {
      return absl::UnimplementedError(absl::StrFormat(
          "no method with id 0x%08x on this server", method_id));
    }
    m = it->second;
    last_method_ = m;
  }
  ctx_.Reset(m->full_name, c->peer, index_, absl::FromUnixNanos(start_ns));
  absl::Status status;
  try {
    status = m->handler->Run(&ctx_, request, out, cap, len);
  } catch (const std::exception& e) {
    status = absl::InternalError(
        absl::StrCat("handler of ", m->full_name, " threw: ", e.what()));
  } catch (...) {
    status =
        absl::InternalError(absl::StrCat("handler of ", m->full_name, " threw"));
  }
  if (!status.ok() && status.code() == absl::StatusCode::kResourceExhausted &&
      *len > cap) {
    status = absl::ResourceExhaustedError(absl::StrCat(
        "response of ", *len, " bytes exceeds the ", cap,
        " bytes left in the connection's response slot (raise "
        "ChannelOptions::max_response_bytes)"));
  }
  return status;
}

void ServerWorker::ServeBatch(ServerConnection* c, uint32_t s,
                              const wire::RequestView& req, int64_t start_ns) {
  const wire::ConnectionLayout& l = c->layout;
  const uint32_t seq = req.seq;
  char* resp = c->region->data() + l.ResponseSlotOffset(s);
  const size_t buf_bytes = l.response_slot_bytes;
  c->expected_seq[s] = wire::NextSeq(seq);
  counters_->batches.fetch_add(1, std::memory_order_relaxed);

  uint32_t n = 0;
  absl::Status bad = wire::CountBatchEntries(req.payload, &n);
  // Room for every entry's result header in a part of its own, the worst
  // case, must exist before anything runs.
  constexpr size_t kPartOverhead = wire::kHeaderBytes + wire::kTailBytes;
  if (bad.ok() && size_t{n} * (kPartOverhead + wire::kEntryHeaderBytes) > buf_bytes) {
    bad = absl::ResourceExhaustedError(absl::StrCat(
        "batch of ", n, " requests cannot fit its results in a ", buf_bytes,
        "-byte response slot"));
  }
  if (!bad.ok()) {
    // A batch-level error answers the whole batch as one plain response.
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    const size_t len = std::min(bad.message().size(), l.ResponsePayloadCapacity());
    std::memcpy(resp + wire::kHeaderBytes, bad.message().data(), len);
    const size_t framed = wire::PublishResponse(
        resp, static_cast<uint32_t>(len), seq, 0,
        static_cast<uint16_t>(bad.code()), 0);
    counters_->calls.fetch_add(1, std::memory_order_relaxed);
    FinishPublish(c, s, 0, framed, false);
    return;
  }
  const uint32_t max_entries = req.aux == 0 ? 128u : req.aux;
  const size_t part_bytes_limit = std::max<size_t>(options_.result_batch_bytes, 64);

  size_t part = 0;        // Offset of the current part in the buffer.
  size_t part_size = 0;   // Its payload bytes so far.
  uint32_t part_entries = 0;
  int64_t part_start = start_ns;
  uint32_t done = 0;
  auto publish = [&]() {
    // Counted per part (one shared atomic add), before the client can see it.
    counters_->calls.fetch_add(part_entries, std::memory_order_relaxed);
    const bool large = part_size > options_.large_result_bytes;
    const int64_t elapsed = UnixNanos() - part_start;
    const size_t framed = wire::PublishResponse(
        resp + part, static_cast<uint32_t>(part_size), seq,
        wire::EncodeServerTime(elapsed), 0,
        static_cast<uint16_t>(wire::kResponseFlagBatch |
                              (large ? wire::kResponseFlagPushed : 0)),
        static_cast<uint16_t>(part_entries));
    FinishPublish(c, s, part, framed, large);
    part += framed;
    part_size = 0;
    part_entries = 0;
  };

  wire::BatchReader reader(req.payload);
  uint32_t method_id;
  absl::string_view entry;
  while (reader.Next(&method_id, &entry)) {
    const uint32_t remaining_after = n - done - 1;
    // Where this entry's result goes if it stays in the current part, and
    // what must stay free for the rest (each in a part of its own, plus a
    // possible move of this one into a new part).
    char* out = resp + part + wire::kHeaderBytes + part_size;
    const size_t used = part + wire::kHeaderBytes + part_size +
                        wire::kEntryHeaderBytes + wire::kTailBytes;
    const size_t reserve = size_t{remaining_after} *
                               (kPartOverhead + wire::kEntryHeaderBytes) +
                           kPartOverhead + 8;
    size_t cap = buf_bytes > used + reserve ? buf_bytes - used - reserve : 0;
    cap &= ~size_t{7};
    size_t len = 0;
    // Every entry arrived with the batch: one clock read serves them all.
    absl::Status st = RunHandler(c, method_id, entry, start_ns,
                                 out + wire::kEntryHeaderBytes, cap, &len);
    if (!st.ok()) {
      counters_->calls_failed.fetch_add(1, std::memory_order_relaxed);
      len = std::min(st.message().size(), cap);
      std::memcpy(out + wire::kEntryHeaderBytes, st.message().data(), len);
    }
    const size_t eb = wire::EntryBytes(len);
    if (part_entries > 0 &&
        (part_entries >= max_entries || part_size + eb > part_bytes_limit)) {
      // Close the current part and move this result into a new one: the
      // move is kPartOverhead bytes forward, which `reserve` kept free.
      // The handler wrote the result where the next part's header goes, so
      // move it first and clear that head word before publishing: a client
      // READs the next part's head as soon as this part is visible, and raw
      // result bytes there could pass for a header with the expected seq.
      const size_t next_part = part + wire::FramedBytes(part_size);
      char* moved = resp + next_part + wire::kHeaderBytes;
      std::memmove(moved + wire::kEntryHeaderBytes,
                   out + wire::kEntryHeaderBytes, len);
      transport::StoreRelease64(resp + next_part, 0);
      publish();  // Writes [part, next_part) only.
      part_start = UnixNanos();  // The next part's time starts here.
      out = moved;
    }
    wire::PutResultEntry(out, static_cast<uint32_t>(len),
                         st.ok() ? 0 : static_cast<uint16_t>(st.code()));
    part_size += eb;
    ++part_entries;
    ++done;
  }
  if (part_entries > 0) publish();
}

void ServerWorker::FinishPublish(ServerConnection* c, uint32_t s,
                                 size_t offset, size_t framed, bool large) {
  // The other half of the client's Dekker pair in ClientConnection::SetMode:
  // publish, full fence, then read the mode flag. Either the client's fetch
  // after its flag WRITE sees the result, or we see the flag and WRITE back.
  transport::FullFence();
  const uint64_t mode = transport::LoadAcquire64(c->region->data());
  if (large || mode == wire::kModeServerReply) Push(c, s, offset, framed);
}

void ServerWorker::Push(ServerConnection* c, uint32_t s, size_t offset,
                        size_t framed) {
  const wire::ConnectionLayout& l = c->layout;
  transport::WorkRequest wr = transport::WorkRequest::Write(
      /*wr_id=*/s, c->region.get(), l.ResponseSlotOffset(s) + offset,
      static_cast<uint32_t>(framed), c->client_reply,
      l.ReplySlotOffset(s) + offset);
  // Signaled, so the response buffer is not reused while the NIC still reads
  // it (Loop skips the slot until the completion).
  wr.signaled = true;
  ++c->push_in_flight[s];
  ++pushes_in_flight_;
  c->push_posted_ns[s] = UnixNanos();
  absl::Status st = c->conn->Post(absl::MakeConstSpan(&wr, 1));
  if (!st.ok()) {
    --c->push_in_flight[s];
    // pushes_in_flight_ stays: a provider may still queue a flushed
    // completion for it (shm does). Over-counting only means polling.
    c->conn->Fail(st);  // Liveness check closes it.
    return;
  }
  counters_->rdma_writes.fetch_add(1, std::memory_order_relaxed);
  counters_->calls_server_reply.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace internal
}  // namespace rfrpc
