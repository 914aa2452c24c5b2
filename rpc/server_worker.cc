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
#include "rpc/slot_codec.h"

namespace rfrpc {
namespace internal {
namespace {

// Check connections' liveness every this many rounds.
constexpr uint64_t kLivenessRounds = 4096;

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
  absl::MutexLock lock(&inbox_mu_);
  inbox_.clear();
}

void ServerWorker::Adopt(std::unique_ptr<ServerConnection> c) {
  connections_.fetch_add(1);
  absl::MutexLock lock(&inbox_mu_);
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
  for (int i = 0; i < n; ++i) {
    const transport::Completion& wc = comps[i];
    for (size_t k = 0; k < conns_.size(); ++k) {
      ServerConnection* c = conns_[k].get();
      if (c->conn->id() != wc.connection_id) continue;
      if (!wc.ok()) {
        Close(k, wc.ToStatus());
      } else {
        const uint64_t slot = wc.wr_id;
        if (slot < c->push_in_flight.size()) c->push_in_flight[slot] = 0;
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
      absl::MutexLock lock(&inbox_mu_);
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
    TakeCompletions();
    if (++rounds % kLivenessRounds == 0 || (!served && empty_rounds > 0 &&
                                            empty_rounds % 1024 == 0)) {
      for (size_t k = 0; k < conns_.size();) {
        absl::Status s = conns_[k]->conn->status();
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
  const int64_t start_ns = absl::GetCurrentTimeNanos();
  char* resp = c->region->data() + l.ResponseSlotOffset(s);
  char* payload = resp + wire::kHeaderBytes;
  const size_t cap = l.ResponsePayloadCapacity();
  size_t len = 0;
  absl::Status status;
  if (state == wire::SlotState::kCorrupt) {
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    status = absl::InvalidArgumentError(why);
  } else if (req.flags != 0) {
    counters_->bad_requests.fetch_add(1, std::memory_order_relaxed);
    status = absl::InvalidArgumentError(
        absl::StrFormat("request flags 0x%x not supported", req.flags));
  } else {
    auto it = methods_->find(req.method_id);
    if (it == methods_->end()) {
      status = absl::UnimplementedError(
          absl::StrFormat("no method with id 0x%08x on this server", req.method_id));
    } else {
      const MethodEntry* m = it->second;
      ctx_.Reset(m->full_name, c->peer, index_, absl::FromUnixNanos(start_ns));
      try {
        status = m->handler->Run(&ctx_, req.payload, payload, cap, &len);
      } catch (const std::exception& e) {
        status = absl::InternalError(
            absl::StrCat("handler of ", m->full_name, " threw: ", e.what()));
      } catch (...) {
        status = absl::InternalError(
            absl::StrCat("handler of ", m->full_name, " threw"));
      }
      if (status.code() == absl::StatusCode::kResourceExhausted && len > cap) {
        status = absl::ResourceExhaustedError(absl::StrCat(
            "response of ", len, " bytes exceeds the connection's ", cap,
            "-byte response slot (raise ChannelOptions::max_response_bytes)"));
      }
    }
  }
  uint16_t code = 0;
  if (!status.ok()) {
    code = static_cast<uint16_t>(status.code());
    len = std::min(status.message().size(), cap);
    std::memcpy(payload, status.message().data(), len);
    counters_->calls_failed.fetch_add(1, std::memory_order_relaxed);
  }
  const bool large = len > options_.large_result_bytes;
  const int64_t elapsed = absl::GetCurrentTimeNanos() - start_ns;
  c->expected_seq[s] = wire::NextSeq(seq);
  const size_t framed = wire::PublishResponse(
      resp, static_cast<uint32_t>(len), seq, wire::EncodeServerTime(elapsed),
      code, large ? wire::kResponseFlagPushed : 0);
  counters_->calls.fetch_add(1, std::memory_order_relaxed);
  // The other half of the client's Dekker pair in ClientConnection::SetMode:
  // publish, full fence, then read the mode flag. Either the client's fetch
  // after its flag WRITE sees the result, or we see the flag and WRITE back.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint64_t mode = transport::LoadAcquire64(c->region->data());
  if (large || mode == wire::kModeServerReply) Push(c, s, framed);
}

void ServerWorker::Push(ServerConnection* c, uint32_t s, size_t framed) {
  const wire::ConnectionLayout& l = c->layout;
  transport::WorkRequest wr = transport::WorkRequest::Write(
      /*wr_id=*/s, c->region.get(), l.ResponseSlotOffset(s),
      static_cast<uint32_t>(framed), c->client_reply, l.ReplySlotOffset(s));
  // Signaled, so the response buffer is not reused while the NIC still reads
  // it (Loop skips the slot until the completion).
  wr.signaled = true;
  c->push_in_flight[s] = 1;
  absl::Status st = c->conn->Post(absl::MakeConstSpan(&wr, 1));
  if (!st.ok()) {
    c->push_in_flight[s] = 0;
    c->conn->Fail(st);  // Liveness check closes it.
    return;
  }
  counters_->rdma_writes.fetch_add(1, std::memory_order_relaxed);
  counters_->calls_server_reply.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace internal
}  // namespace rfrpc
