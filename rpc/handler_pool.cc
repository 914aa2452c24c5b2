// Copyright 2026 The rfrpc Authors.

#include "rpc/handler_pool.h"

#include <algorithm>

#include "rpc/service.h"

namespace rfrpc {
namespace internal {

HandlerPool::HandlerPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

HandlerPool::~HandlerPool() { Stop(); }

void HandlerPool::Submit(MethodHandler* handler, ServerCall* call) {
  {
    MutexLock lock(&mu_);
    if (!stop_) {
      queue_.emplace_back(handler, call);
      cv_.notify_one();
      return;
    }
  }
  ServerDone::Adopt(call)(absl::UnavailableError("server shutting down"));
}

size_t HandlerPool::queued() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

void HandlerPool::Loop() {
  for (;;) {
    std::pair<MethodHandler*, ServerCall*> item;
    {
      MutexLock lock(&mu_);
      mu_.Await(&cv_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stop_ || !queue_.empty();
      });
      if (queue_.empty()) return;  // Stopping.
      item = queue_.front();
      queue_.pop_front();
    }
    ServerCall* call = item.second;
    ServerDone done = ServerDone::Adopt(call);
    if (call->context()->IsCancelled()) {
      // Answered already (cancelled, expired, connection gone): the result
      // would be dropped, so the handler does not run.
      done(absl::CancelledError("call cancelled before its handler ran"));
      continue;
    }
    item.first->Invoke(call, std::move(done));
  }
}

std::vector<std::thread::id> HandlerPool::thread_ids() const {
  std::vector<std::thread::id> ids;
  for (const std::thread& t : threads_) ids.push_back(t.get_id());
  return ids;
}

void HandlerPool::Stop() {
  std::deque<std::pair<MethodHandler*, ServerCall*>> left;
  {
    MutexLock lock(&mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
    // Threads finish what they run; what is queued does not run.
    left.swap(queue_);
    cv_.notify_all();
  }
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  for (auto& item : left) {
    ServerDone::Adopt(item.second)(
        absl::UnavailableError("server shutting down"));
  }
}

}  // namespace internal
}  // namespace rfrpc
