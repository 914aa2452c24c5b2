// Copyright 2026 The rfrpc Authors.
//
// HandlerPool: the threads that run offloaded handlers (MethodKind::
// kBlocking) so that a handler that blocks does not stall the worker that
// polls its connections (internal to rpc/).
//
// A worker parses the request into a call object and Submit()s it; a pool
// thread runs the handler and finishes the call, which goes back to the
// worker's mailbox. A call cancelled or past its deadline by the time a
// thread takes it is finished at once without running the handler (its
// answer went out already).
//
// Ownership: the pool holds one handle reference of each submitted call
// (ServerCall::PrepareHandle) until it finishes it. Thread safety: Submit
// and Stop are thread-safe.

#ifndef RFRPC_RPC_HANDLER_POOL_H_
#define RFRPC_RPC_HANDLER_POOL_H_

#include <condition_variable>
#include <deque>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "rpc/server_call.h"

namespace rfrpc {

class MethodHandler;

namespace internal {

class HandlerPool {
 public:
  // Starts `threads` (>= 1) threads.
  explicit HandlerPool(int threads);
  ~HandlerPool();  // Stop().
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  // Runs handler->Invoke(call, done) on a pool thread. `handler` (not owned)
  // must outlive the pool; `call` is prepared with PrepareHandle(false) and
  // its handle reference passes to the pool. After Stop, the call is
  // finished with UNAVAILABLE at once.
  void Submit(MethodHandler* handler, ServerCall* call);

  // Waits for the handlers running now; calls still queued finish with
  // UNAVAILABLE without running. Idempotent.
  void Stop();

  // Calls queued, not yet taken by a thread.
  size_t queued() const;

  // The pool's threads (fixed from construction to Stop).
  std::vector<std::thread::id> thread_ids() const;

 private:
  void Loop();

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<MethodHandler*, ServerCall*>> queue_
      ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_HANDLER_POOL_H_
