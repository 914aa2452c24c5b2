// Copyright 2026 The rfrpc Authors.
//
// The call object of an async or offloaded (blocking) handler: the context,
// request and response that live until the handler's ServerDone is called,
// and the hand-off of the finished call to the worker that publishes it
// (internal to rpc/; generated code reaches it through rpc/service.h).
//
// Life of a call:
//   1. The worker takes a request, gets a ServerCall from the method's
//      handler (MethodHandler::NewCall parses the request into it) and sets
//      its context and routing.
//   2. It hands a ServerDone to the user's code: an async handler runs on the
//      worker (state kInHandler); an offloaded one on the handler pool
//      (kDetached from the start).
//   3. done(status) claims the call (exactly one finisher), stores the
//      status, and either leaves it for the worker if the handler is still
//      running on the worker (kFinishedInline: the worker publishes it as
//      it would a sync result, no hand-off) or posts it to the worker's
//      CallSink (kFinished), from any thread.
//   4. The worker publishes the result (or drops it if the call was
//      cancelled, expired or lost its connection meanwhile) and releases
//      its reference.
//
// References: `counts_` packs (handles << 32) | refs, refs counting every
// holder (the worker, each ServerDone copy, the sink while the call is
// posted). The last release recycles the object (a per-thread free list per
// message type). Thread-safe as described per method.

#ifndef RFRPC_RPC_SERVER_CALL_H_
#define RFRPC_RPC_SERVER_CALL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"
#include "rpc/server_context.h"

namespace rfrpc {
namespace internal {

class ServerCall;

// Where finished calls go: the worker that took them.
class CallSink {
 public:
  virtual ~CallSink() = default;
  // Takes over one reference to the finished `call`. Thread-safe.
  virtual void Post(ServerCall* call) = 0;
  // A ServerDone was called twice or dropped uncalled. Thread-safe.
  virtual void CountMisuse() = 0;
};

class ServerCall {
 public:
  enum State : uint8_t {
    kInHandler = 0,         // The handler runs on the worker.
    kDetached = 1,          // The worker went on; a finisher posts it.
    kClaimedInHandler = 2,  // A finisher is storing its status.
    kClaimedDetached = 3,
    kFinishedInline = 4,    // Finished before the worker went on.
    kFinished = 5,          // Finished and posted to the sink.
  };

  ServerCall() = default;
  ServerCall(const ServerCall&) = delete;
  ServerCall& operator=(const ServerCall&) = delete;

  ServerContext* context() { return &ctx_; }

  // Serializes the response into `buf` per MethodHandler::Run
  // (RESOURCE_EXHAUSTED with *len = bytes needed if it does not fit).
  virtual absl::Status SerializeResponse(char* buf, size_t cap,
                                         size_t* len) = 0;
  // Serializes the response into `*out` (cleared first).
  virtual void SerializeResponseTo(std::string* out) = 0;

  // Worker: before handing the call to user code, one handle (given out
  // with ServerDone::Adopt) besides the worker's own reference; the handler
  // runs on the worker (`inline_handler`) or elsewhere.
  void PrepareHandle(bool inline_handler) {
    counts_.store((uint64_t{1} << 32) | 2, std::memory_order_relaxed);
    state_.store(inline_handler ? kInHandler : kDetached,
                 std::memory_order_relaxed);
  }
  // Worker: the call whose handler runs on this thread now (null: none).
  // A finisher on this thread inside that handler needs one atomic update
  // less (the worker cannot be detaching it meanwhile).
  static void SetInlineCall(ServerCall* call);

  // Worker, after the handler returned on it: true if the call goes on
  // (someone will post it when finished), false if it finished inline
  // (status() is set; the worker publishes it now).
  bool Detach();
  // The status done() was called with. REQUIRES: finished (Detach returned
  // false, or the call came out of the sink).
  const absl::Status& status() const { return status_; }
  // The finished state's value as the worker sees it: true once claimed.
  bool finished() const {
    return state_.load(std::memory_order_acquire) >= kClaimedInHandler;
  }

  // Finishes the call (ServerDone). The first call wins; later ones are
  // reported to the sink and ignored. Thread-safe.
  void Finish(absl::Status status);
  // Finishes with `status` if nobody has, silently (a handler that threw).
  void FinishIfPending(absl::Status status);

  // Reference counting (see the header comment). Thread-safe.
  void Ref() { counts_.fetch_add(1, std::memory_order_relaxed); }
  void Unref();
  void AddHandle() {
    counts_.fetch_add((uint64_t{1} << 32) | 1, std::memory_order_relaxed);
  }
  void DropHandle();
  // Worker: releases its reference; cheaper than Unref when it is the last.
  void Release();

  // Set by the worker that took the call (worker thread only).
  std::shared_ptr<CallSink> sink;
  uint64_t connection_id = 0;
  uint32_t bell = 0;
  uint32_t slot = 0;
  uint32_t seq = 0;
  uint32_t entry = 0;  // Index in its request batch (0 for a single call).
  uint32_t method_id = 0;
  int64_t start_ns = 0;  // When the worker took it (Unix ns).
  // What context()->peer() points at, held once the call outlives its
  // handler (the connection may close before it finishes).
  std::shared_ptr<const std::string> peer;

 protected:
  virtual ~ServerCall() = default;
  // The last reference is gone: delete or keep for reuse.
  virtual void Recycle() = 0;
  // Back to a fresh call's state (one reference, no status); the routing
  // fields are overwritten by the worker anyway.
  void ResetForReuse() {
    status_ = absl::OkStatus();
    state_.store(kInHandler, std::memory_order_relaxed);
    counts_.store(1, std::memory_order_relaxed);
  }

 private:
  // Claims the call for one finisher; false if already claimed.
  bool Claim(uint8_t* claimed_state);
  // Every handle is gone and the call is not finished: INTERNAL (logged).
  void FinishDropped();
  void Complete(uint8_t claimed_state, absl::Status status);

  ServerContext ctx_;
  absl::Status status_;
  std::atomic<uint8_t> state_{kInHandler};
  std::atomic<uint64_t> counts_{1};
};

// The call of one method: its messages, reused through a per-thread free
// list (parsing clears the request; the response is cleared on reuse).
// Messages above kKeepBytes are not kept, so a thread holds no big buffers.
template <typename Req, typename Resp>
class TypedServerCall final : public ServerCall {
 public:
  // A call with one reference (the caller's). Worker thread.
  static TypedServerCall* New() {
    if (FreeListGone() || Free().calls.empty()) return new TypedServerCall;
    TypedServerCall* c = Free().calls.back();
    Free().calls.pop_back();
    c->ResetForReuse();
    c->response.Clear();
    return c;
  }

  absl::Status SerializeResponse(char* buf, size_t cap, size_t* len) override {
    const size_t size = response.ByteSizeLong();
    *len = size;
    big_ = big_ || size > kKeepBytes;
    if (size > cap) {
      return absl::ResourceExhaustedError("response exceeds its room");
    }
    response.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(buf));
    return absl::OkStatus();
  }
  void SerializeResponseTo(std::string* out) override {
    out->clear();
    response.AppendToString(out);
    big_ = big_ || out->size() > kKeepBytes;
  }
  // Marks the call's messages as too big to keep (a large request).
  void set_big() { big_ = true; }

  Req request;
  Resp response;

 private:
  static constexpr size_t kKeepBytes = 4096;
  static constexpr size_t kKeepCalls = 64;

  struct FreeList {
    std::vector<TypedServerCall*> calls;
    ~FreeList() {
      FreeListGone() = true;
      for (TypedServerCall* c : calls) delete c;
    }
  };
  static FreeList& Free() {
    thread_local FreeList list;
    return list;
  }
  // Trivially destructible, so it can be read after the list is gone (a
  // call released from another thread_local's destructor is deleted).
  static bool& FreeListGone() {
    thread_local bool gone = false;
    return gone;
  }

  void Recycle() override {
    if (big_ || FreeListGone() || Free().calls.size() >= kKeepCalls) {
      delete this;
      return;
    }
    Free().calls.push_back(this);
  }

  bool big_ = false;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVER_CALL_H_
