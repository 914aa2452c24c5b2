// Copyright 2026 The rfrpc Authors.
//
// What a server handler sees of its call (ServerContext), and how an async
// handler finishes its call (ServerDone). Included by rpc/service.h; see
// docs/define_a_service.md for the three kinds of handler (sync, async,
// blocking-offloaded).
//
//   void Get(rfrpc::ServerContext* ctx, const GetRequest* request,
//            GetResponse* response, rfrpc::ServerDone done) override {
//     backend_.LookupAsync(request->key(), [ctx, response, done](Value v) {
//       if (ctx->IsCancelled()) return done(absl::CancelledError("gone"));
//       response->set_value(v);
//       done(absl::OkStatus());
//     });
//   }
//
// Thread safety: a ServerContext's accessors may be called from any thread
// while its call runs (IsCancelled() is meant to be polled by long work);
// ServerDone is thread-safe (see its comment).

#ifndef RFRPC_RPC_SERVER_CONTEXT_H_
#define RFRPC_RPC_SERVER_CONTEXT_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace rfrpc {

namespace internal {
class ServerCall;
}  // namespace internal

// Per-call information for a handler. A sync handler's context is valid
// during the handler call; an async (or offloaded) handler's until its
// ServerDone is called.
class ServerContext {
 public:
  ServerContext() = default;
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  // "/package.Service/Method".
  absl::string_view method() const { return method_; }
  // Who called, e.g. "pid 4242" or "10.11.0.2:51234".
  absl::string_view peer() const { return peer_; }
  // Index of the worker thread that took the request, in [0, workers). An
  // offloaded (blocking) handler runs on a pool thread, an async one may
  // finish anywhere: this is still the worker that took the request.
  int worker() const { return worker_; }
  // When the call arrived at this worker (for a call in a request batch:
  // when the worker took the batch, the same for all its calls).
  absl::Time arrival() const { return absl::FromUnixNanos(arrival_ns_); }

  // The caller's deadline: arrival() plus the budget the client had left
  // when it sent the request (ClientContext::set_timeout or set_deadline, or
  // ChannelOptions::default_timeout). Budgets travel relative, so client and
  // server clocks need not agree; the deadline is late by the time the
  // request spent on the way. absl::InfiniteFuture() if the client sent none.
  absl::Time deadline() const {
    return deadline_ns_ == INT64_MAX ? absl::InfiniteFuture()
                                     : absl::FromUnixNanos(deadline_ns_);
  }

  // True once nobody waits for this call's result any more: its deadline
  // passed, the client cancelled it (ClientContext::TryCancel), its
  // connection was lost or the server is shutting down. Long work may poll
  // it and stop early; whatever the handler then finishes with is dropped
  // without complaint. Cheap: an atomic load (a sync handler: a load of the
  // slot's cancel word) and, with a deadline, a clock read. Thread-safe.
  bool IsCancelled() const;

  // Internal: set by the server before each call. `arrival_ns` and
  // `deadline_ns` are Unix ns (deadline INT64_MAX: none). `cancel_word`, if
  // not null, is the slot's cancel word (wire::CancelWord), read by
  // IsCancelled; `seq` is the request's seq.
  void Reset(absl::string_view method, absl::string_view peer, int worker,
             int64_t arrival_ns, int64_t deadline_ns = INT64_MAX,
             const void* cancel_word = nullptr, uint32_t seq = 0) {
    method_ = method;
    peer_ = peer;
    worker_ = worker;
    arrival_ns_ = arrival_ns;
    deadline_ns_ = deadline_ns;
    cancel_word_ = cancel_word;
    seq_ = seq;
    cancelled_.store(false, std::memory_order_relaxed);
  }
  // Internal: the method and deadline of a batch's next call; Reset set the
  // fields the batch's calls share (peer, arrival, cancel word, seq).
  void SetCall(absl::string_view method, int64_t deadline_ns) {
    method_ = method;
    deadline_ns_ = deadline_ns;
  }
  // The same with the arrival as an absl::Time (handler tests use it).
  void Reset(absl::string_view method, absl::string_view peer, int worker,
             absl::Time arrival, int64_t deadline_ns = INT64_MAX,
             const void* cancel_word = nullptr, uint32_t seq = 0) {
    Reset(method, peer, worker, absl::ToUnixNanos(arrival), deadline_ns,
          cancel_word, seq);
  }
  // Internal: the server no longer wants the result (see IsCancelled).
  void MarkCancelled() { cancelled_.store(true, std::memory_order_release); }
  int64_t deadline_ns() const { return deadline_ns_; }

 private:
  absl::string_view method_;
  absl::string_view peer_;
  int worker_ = 0;
  int64_t arrival_ns_ = 0;  // Unix ns; converted only when asked for.
  int64_t deadline_ns_ = INT64_MAX;
  const void* cancel_word_ = nullptr;
  uint32_t seq_ = 0;
  std::atomic<bool> cancelled_{false};
};

// Finishes an async call. An async handler receives one and calls it exactly
// once, from any thread, when the response is complete:
//
//   done(absl::OkStatus());        // the response goes back to the caller
//   done(absl::NotFoundError(..))  // the status does (the response does not)
//
// After that the handler must not touch the call's context, request or
// response. Copies refer to the same call, so a ServerDone can be captured by
// a std::function callback (e.g. Channel::CallAsync's). Misuse is reported,
// never fatal: a second call logs an error and is ignored (the first status
// stands); if every copy is destroyed without being called, the call
// finishes with INTERNAL. A call the client cancelled or that outlived its
// deadline (ServerContext::IsCancelled) may still be finished: the result is
// dropped. Thread-safe; copying costs an atomic increment.
class ServerDone {
 public:
  ServerDone() = default;  // Empty: calling it logs an error.
  ServerDone(const ServerDone& other);
  ServerDone(ServerDone&& other) noexcept : call_(other.call_) {
    other.call_ = nullptr;
  }
  ServerDone& operator=(const ServerDone& other);
  ServerDone& operator=(ServerDone&& other) noexcept;
  ~ServerDone();

  // Finishes the call with `status`.
  void operator()(absl::Status status) const;

  // Internal: takes over one handle reference of `call` (see ServerCall).
  static ServerDone Adopt(internal::ServerCall* call) {
    ServerDone d;
    d.call_ = call;
    return d;
  }

 private:
  internal::ServerCall* call_ = nullptr;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVER_CONTEXT_H_
