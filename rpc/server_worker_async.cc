// Copyright 2026 The rfrpc Authors.
//
// Server datapath of async and offloaded handlers (MethodKind::kAsync,
// kBlocking): starting their calls, taking the ones finished on other
// threads from the worker's mailbox, publishing them (single results and
// batches in request order), and answering the calls whose client
// cancelled them or whose deadline passed. See server_worker.h.

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "glog/logging.h"
#include "rpc/server_worker.h"

namespace rfrpc {
namespace internal {

void WorkerMailbox::Post(ServerCall* call) {
  {
    MutexLock lock(&mu_);
    if (!closed_) {
      calls_.push_back(call);
      nonempty_.store(true, std::memory_order_seq_cst);
      // The worker's store of parked_ and its check of nonempty_ after
      // arming pair with this store and load.
      if (parked_.load(std::memory_order_seq_cst)) cq_->Interrupt();
      return;
    }
  }
  call->Release();  // Its worker is gone.
}

void WorkerMailbox::Take(std::vector<ServerCall*>* out) {
  MutexLock lock(&mu_);
  out->insert(out->end(), calls_.begin(), calls_.end());
  calls_.clear();
  nonempty_.store(false, std::memory_order_relaxed);
}

void WorkerMailbox::Close(std::vector<ServerCall*>* out) {
  MutexLock lock(&mu_);
  closed_ = true;
  out->insert(out->end(), calls_.begin(), calls_.end());
  calls_.clear();
  nonempty_.store(false, std::memory_order_relaxed);
}

ServerCall* ServerWorker::NewCall(ServerConnection* c, uint32_t s, uint32_t seq,
                                  uint32_t entry, const MethodEntry* m,
                                  absl::string_view request, int64_t start_ns,
                                  int64_t deadline_ns, absl::Status* error) {
  ServerCall* call = m->handler->NewCall(request, error);
  if (call == nullptr) return nullptr;
  if (call->sink != mailbox_) call->sink = mailbox_;
  call->connection_id = c->conn->id();
  call->bell = c->bell;
  call->slot = s;
  call->seq = seq;
  call->entry = entry;
  call->method_id = m->id;
  call->start_ns = start_ns;
  if (c->shared_peer == nullptr) {
    c->shared_peer = std::make_shared<const std::string>(c->peer);
  }
  // The call holds the peer's name only if it outlives its handler (Launch).
  call->peer.reset();
  call->context()->Reset(m->full_name, *c->shared_peer, index_,
                         start_ns, deadline_ns);
  return call;
}

bool ServerWorker::Launch(ServerConnection* c, ServerCall* call,
                          const MethodEntry* m) {
  if (m->kind == MethodKind::kBlocking && pool_ != nullptr) {
    counters_->calls_offloaded.fetch_add(1, std::memory_order_relaxed);
    call->peer = c->shared_peer;
    call->PrepareHandle(/*inline_handler=*/false);
    pool_->Submit(m->handler.get(), call);
    return false;
  }
  call->PrepareHandle(/*inline_handler=*/true);
  FlushPushesBeforeHandler();
  ServerCall::SetInlineCall(call);
  m->handler->Invoke(call, ServerDone::Adopt(call));
  ServerCall::SetInlineCall(nullptr);
  if (method_counters_ != nullptr) {
    // The handler ran on this worker: a batch's next call is timed from
    // here, and a handler that blocked before returning stalled the worker
    // as a sync one does.
    HandlerTime(call->start_ns, m->full_name, "async handler");
  }
  if (call->Detach()) {
    counters_->calls_async.fetch_add(1, std::memory_order_relaxed);
    // Before this worker can close the connection: the name its context
    // shows stays alive with the call.
    call->peer = c->shared_peer;
    return false;  // Goes on: its answer comes later.
  }
  return true;  // Finished before the handler returned.
}

absl::Status ServerWorker::CallResult(ServerCall* call, char* buf, size_t cap,
                                      size_t* len) {
  *len = 0;
  absl::Status st = call->status();
  if (st.ok()) {
    st = call->SerializeResponse(buf, cap, len);
    if (!st.ok()) {
      st = absl::ResourceExhaustedError(absl::StrCat(
          "response of ", *len, " bytes exceeds the ", cap,
          " bytes left in the connection's response slot (raise "
          "ChannelOptions::max_response_bytes)"));
      *len = 0;
    }
  }
  CountCall(call, st, *len);
  return st;
}

void ServerWorker::CountCall(const ServerCall* call, const absl::Status& status,
                             size_t result_bytes) {
  if (method_counters_ == nullptr) return;
  method_counters_->For(call->method_id)
      ->Served(static_cast<int>(status.code()), UnixNanos() - call->start_ns,
               result_bytes);
}

void ServerWorker::PublishCall(ServerConnection* c, uint32_t s, uint32_t seq,
                               int64_t start_ns, uint16_t hot,
                               ServerCall* call) {
  const wire::ConnectionLayout& l = c->layout;
  char* payload =
      c->region->data() + l.ResponseSlotOffset(s) + wire::kHeaderBytes;
  size_t len;
  const absl::Status st =
      CallResult(call, payload, l.ResponsePayloadCapacity(), &len);
  PublishSingle(c, s, seq, start_ns, hot, st, len);
}

void ServerWorker::StartCall(ServerConnection* c, uint32_t s, uint32_t seq,
                             absl::string_view request, const MethodEntry* m,
                             int64_t start_ns, int64_t deadline_ns,
                             uint16_t hot) {
  c->expected_seq[s] = wire::NextSeq(seq);
  absl::Status error;
  ServerCall* call =
      NewCall(c, s, seq, 0, m, request, start_ns, deadline_ns, &error);
  if (call == nullptr) {
    PublishSingle(c, s, seq, start_ns, hot, error, 0);
    return;
  }
  if (Launch(c, call, m)) {
    // Finished before its handler returned: published like a sync result.
    PublishCall(c, s, seq, start_ns, hot, call);
    call->Release();
    return;
  }
  auto p = std::make_unique<PendingSlot>();
  p->slot = s;
  p->seq = seq;
  p->start_ns = start_ns;
  p->hot = hot;
  p->call = call;
  p->deadline_ns = deadline_ns;
  AddPending(c, std::move(p));
}

void ServerWorker::AddPending(ServerConnection* c,
                              std::unique_ptr<PendingSlot> p) {
  if (c->pending.empty()) c->pending.resize(c->layout.slots);
  int64_t earliest = p->deadline_ns;
  for (const PendingSlot::Entry& e : p->entries) {
    if (e.call != nullptr) earliest = std::min(earliest, e.deadline_ns);
  }
  next_expiry_ns_ = std::min(next_expiry_ns_, earliest);
  const uint32_t s = p->slot;
  c->pending[s] = std::move(p);
  ++c->pending_count;
  ++pending_slots_;
  // A cancel may have come with the request (before the worker took it).
  CheckCancel(c, s);
}

void ServerWorker::RemovePending(ServerConnection* c, uint32_t s) {
  c->pending[s].reset();
  --c->pending_count;
  if (--pending_slots_ == 0) next_expiry_ns_ = INT64_MAX;
}

void ServerWorker::AdvanceBatch(ServerConnection* c, uint32_t s) {
  PendingSlot* p = c->pending[s].get();
  ResultPartWriter& w = p->writer;
  while (!w.done()) {
    PendingSlot::Entry& e = p->entries[w.committed() - p->base];
    if (!e.ready) {
      // Waiting for a late result: what is placed goes out now.
      ResultPartWriter::Part part;
      if (w.Close(&part)) PublishPart(c, s, p->seq, p->hot, part, &p->part_start);
      return;
    }
    size_t cap;
    char* out = w.NextPayload(&cap);
    absl::Status st;
    size_t len = 0;
    if (e.code != 0) {
      st = absl::Status(static_cast<absl::StatusCode>(e.code), e.result);
    } else if (e.result.size() > cap) {
      st = absl::ResourceExhaustedError(absl::StrCat(
          "response of ", e.result.size(), " bytes exceeds the ", cap,
          " bytes left in the connection's response slot (raise "
          "ChannelOptions::max_response_bytes)"));
    } else {
      std::memcpy(out, e.result.data(), e.result.size());
      len = e.result.size();
    }
    std::string().swap(e.result);
    CommitResult(c, s, p->seq, p->hot, &w, &p->part_start, st, len);
  }
  ResultPartWriter::Part last;
  if (w.Finish(&last)) PublishPart(c, s, p->seq, p->hot, last, &p->part_start);
  RemovePending(c, s);
}

void ServerWorker::TakeFinished() {
  mailbox_->Take(&finished_);
  for (ServerCall* call : finished_) {
    ServerConnection* c =
        call->bell < by_bell_.size() ? by_bell_[call->bell] : nullptr;
    PendingSlot* p = nullptr;
    if (c != nullptr && c->conn->id() == call->connection_id &&
        c->pending_count > 0 && call->slot < c->pending.size()) {
      p = c->pending[call->slot].get();
    }
    if (p != nullptr && p->seq == call->seq && !p->batch && p->call == call) {
      PublishCall(c, p->slot, p->seq, p->start_ns, p->hot, call);
      p->call->Release();  // The worker's reference.
      RemovePending(c, call->slot);
    } else if (p != nullptr && p->seq == call->seq && p->batch &&
               call->entry >= p->base &&
               call->entry - p->base < p->entries.size() &&
               p->entries[call->entry - p->base].call == call) {
      PendingSlot::Entry& e = p->entries[call->entry - p->base];
      if (call->entry == p->writer.committed()) {
        // Next in order: straight into place.
        size_t cap;
        char* out = p->writer.NextPayload(&cap);
        size_t len;
        const absl::Status st = CallResult(call, out, cap, &len);
        CommitResult(c, call->slot, p->seq, p->hot, &p->writer,
                     &p->part_start, st, len);
      } else if (call->status().ok()) {
        call->SerializeResponseTo(&e.result);
        CountCall(call, call->status(), e.result.size());
      } else {
        e.code = static_cast<uint16_t>(call->status().code());
        e.result.assign(call->status().message().data(),
                        call->status().message().size());
        CountCall(call, call->status(), 0);
      }
      e.ready = true;
      e.call = nullptr;
      call->Release();  // The entry's reference.
      AdvanceBatch(c, call->slot);
    } else {
      // Answered already (cancelled, expired) or its connection is gone:
      // nobody waits for it.
      counters_->results_dropped.fetch_add(1, std::memory_order_relaxed);
    }
    call->Release();  // The mailbox's reference.
  }
  finished_.clear();
}

void ServerWorker::CheckCancel(ServerConnection* c, uint32_t s) {
  const PendingSlot* p = c->pending[s].get();
  const uint64_t word = transport::LoadAcquire64(
      c->region->data() + c->layout.CancelOffset(s));
  if (word != wire::CancelWord(p->seq)) return;
  EndPending(c, s,
             absl::CancelledError("cancelled by the client "
                                  "(ClientContext::TryCancel)"),
             /*all=*/true, 0);
}

void ServerWorker::EndPending(ServerConnection* c, uint32_t s,
                              const absl::Status& status, bool all,
                              int64_t now) {
  PendingSlot* p = c->pending[s].get();
  std::atomic<uint64_t>& counter =
      status.code() == absl::StatusCode::kCancelled ? counters_->calls_cancelled
                                                    : counters_->calls_expired;
  if (!p->batch) {
    if (!all && p->deadline_ns >= now) return;
    counter.fetch_add(1, std::memory_order_relaxed);
    p->call->context()->MarkCancelled();
    p->call->Release();
    PublishSingle(c, s, p->seq, p->start_ns, p->hot, status, 0);
    RemovePending(c, s);
    return;
  }
  bool any = false;
  for (PendingSlot::Entry& e : p->entries) {
    if (e.call == nullptr || (!all && e.deadline_ns >= now)) continue;
    counter.fetch_add(1, std::memory_order_relaxed);
    e.call->context()->MarkCancelled();
    e.call->Release();
    e.call = nullptr;
    e.ready = true;
    e.code = static_cast<uint16_t>(status.code());
    e.result.assign(status.message().data(), status.message().size());
    any = true;
  }
  if (any) AdvanceBatch(c, s);
}

void ServerWorker::ExpirePending(int64_t now) {
  const absl::Status expired = absl::DeadlineExceededError(
      "the call's deadline passed while its handler ran");
  int64_t next = INT64_MAX;
  for (size_t i = 0; i < conns_.size(); ++i) {
    ServerConnection* c = conns_[i].get();
    for (uint32_t s = 0; c->pending_count > 0 && s < c->pending.size(); ++s) {
      if (c->pending[s] == nullptr) continue;
      EndPending(c, s, expired, /*all=*/false, now);
      const PendingSlot* p = c->pending[s].get();
      if (p == nullptr) continue;  // Answered.
      next = std::min(next, p->deadline_ns);
      for (const PendingSlot::Entry& e : p->entries) {
        if (e.call != nullptr) next = std::min(next, e.deadline_ns);
      }
    }
  }
  next_expiry_ns_ = pending_slots_ == 0 ? INT64_MAX : next;
}

void ServerWorker::DropPending(ServerConnection* c) {
  for (uint32_t s = 0; s < c->pending.size(); ++s) {
    PendingSlot* p = c->pending[s].get();
    if (p == nullptr) continue;
    if (p->call != nullptr) {
      p->call->context()->MarkCancelled();
      p->call->Release();
    }
    for (PendingSlot::Entry& e : p->entries) {
      if (e.call == nullptr) continue;
      e.call->context()->MarkCancelled();
      e.call->Release();
    }
    RemovePending(c, s);
  }
}

}  // namespace internal
}  // namespace rfrpc
