// Copyright 2026 The rfrpc Authors.

#include "rpc/server_call.h"

#include <utility>

#include "base/clock.h"
#include "glog/logging.h"

namespace rfrpc {

bool ServerContext::IsCancelled() const {
  if (cancelled_.load(std::memory_order_acquire)) return true;
  if (cancel_word_ != nullptr &&
      __atomic_load_n(static_cast<const uint64_t*>(cancel_word_),
                      __ATOMIC_ACQUIRE) == uint64_t{seq_}) {
    return true;
  }
  if (deadline_ns_ == INT64_MAX) return false;
  return internal::UnixNanos() > deadline_ns_;
}

ServerDone::ServerDone(const ServerDone& other) : call_(other.call_) {
  if (call_ != nullptr) call_->AddHandle();
}

ServerDone& ServerDone::operator=(const ServerDone& other) {
  if (this == &other) return *this;
  if (other.call_ != nullptr) other.call_->AddHandle();
  if (call_ != nullptr) call_->DropHandle();
  call_ = other.call_;
  return *this;
}

ServerDone& ServerDone::operator=(ServerDone&& other) noexcept {
  if (this == &other) return *this;
  if (call_ != nullptr) call_->DropHandle();
  call_ = other.call_;
  other.call_ = nullptr;
  return *this;
}

ServerDone::~ServerDone() {
  if (call_ != nullptr) call_->DropHandle();
}

void ServerDone::operator()(absl::Status status) const {
  if (call_ == nullptr) {
    LOG(ERROR) << "rfrpc: an empty (or moved-from) ServerDone was called with "
               << status << "; ignored";
    return;
  }
  call_->Finish(std::move(status));
}

namespace internal {
namespace {

thread_local ServerCall* inline_call = nullptr;

}  // namespace

void ServerCall::SetInlineCall(ServerCall* call) { inline_call = call; }

bool ServerCall::Claim(uint8_t* claimed_state) {
  uint8_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (s >= kClaimedInHandler) return false;
    const uint8_t want = s == kInHandler ? kClaimedInHandler : kClaimedDetached;
    if (state_.compare_exchange_weak(s, want, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
      *claimed_state = want;
      return true;
    }
  }
}

void ServerCall::Complete(uint8_t claimed, absl::Status status) {
  status_ = std::move(status);
  if (claimed == kClaimedInHandler && inline_call == this) {
    // On the worker, inside this call's handler: Detach cannot run now.
    state_.store(kFinishedInline, std::memory_order_release);
    return;
  }
  if (claimed == kClaimedInHandler) {
    uint8_t expected = kClaimedInHandler;
    // The worker reads status_ after it sees kFinishedInline (acquire).
    if (state_.compare_exchange_strong(expected, kFinishedInline,
                                       std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return;
    }
    // The worker detached meanwhile (kClaimedDetached): post it.
  }
  state_.store(kFinished, std::memory_order_release);
  Ref();  // The sink's.
  sink->Post(this);
}

void ServerCall::Finish(absl::Status status) {
  if (inline_call == this && (counts_.load(std::memory_order_relaxed) >> 32) == 1 &&
      state_.load(std::memory_order_relaxed) == kInHandler) {
    // The common case, without atomic updates: on the worker, inside this
    // call's handler, through its only handle. No other thread holds a
    // handle (so none can finish it) and the worker cannot detach it now.
    status_ = std::move(status);
    state_.store(kFinishedInline, std::memory_order_release);
    return;
  }
  uint8_t claimed;
  if (!Claim(&claimed)) {
    LOG(ERROR) << "rfrpc: ServerDone of " << ctx_.method()
               << " called twice; the second status (" << status
               << ") is ignored";
    if (sink != nullptr) sink->CountMisuse();
    return;
  }
  Complete(claimed, std::move(status));
}

void ServerCall::FinishIfPending(absl::Status status) {
  uint8_t claimed;
  if (Claim(&claimed)) Complete(claimed, std::move(status));
}

bool ServerCall::Detach() {
  uint8_t s = state_.load(std::memory_order_acquire);
  for (;;) {
    uint8_t want;
    if (s == kInHandler) {
      want = kDetached;
    } else if (s == kClaimedInHandler) {
      want = kClaimedDetached;  // Its finisher will post it.
    } else {
      return s != kFinishedInline;
    }
    if (state_.compare_exchange_weak(s, want, std::memory_order_seq_cst,
                                     std::memory_order_acquire)) {
      break;
    }
  }
  // The handler returned keeping no ServerDone (DropHandle leaves a call
  // still in its handler to this check; the two sequentially consistent
  // pairs of update and load make sure one of them sees the other).
  if ((counts_.load(std::memory_order_seq_cst) >> 32) == 0) FinishDropped();
  return true;
}

void ServerCall::FinishDropped() {
  uint8_t claimed;
  if (!Claim(&claimed)) return;
  LOG(ERROR) << "rfrpc: the handler of a " << ctx_.method()
             << " call let go of every ServerDone without calling it; the "
                "call finishes with INTERNAL";
  if (sink != nullptr) sink->CountMisuse();
  Complete(claimed,
           absl::InternalError("the server's handler dropped the call without "
                               "finishing it (ServerDone never called)"));
}

void ServerCall::Unref() {
  if ((counts_.fetch_sub(1, std::memory_order_acq_rel) & 0xffffffffu) == 1) {
    Recycle();
  }
}

void ServerCall::Release() {
  // The worker's reference, often the last one left: no atomic update then.
  if (counts_.load(std::memory_order_acquire) == 1) {
    Recycle();
    return;
  }
  Unref();
}

void ServerCall::DropHandle() {
  if (inline_call == this &&
      counts_.load(std::memory_order_relaxed) == ((uint64_t{1} << 32) | 2) &&
      state_.load(std::memory_order_relaxed) == kFinishedInline) {
    // The only handle, dropped on the worker inside the handler of a call
    // finished inline: the worker's reference is all that is left, and no
    // other thread can touch the counts.
    counts_.store(1, std::memory_order_relaxed);
    return;
  }
  if (finished()) {
    // Nobody needs the handle count once the call is claimed.
    const uint64_t prev =
        counts_.fetch_sub((uint64_t{1} << 32) | 1, std::memory_order_acq_rel);
    if ((prev & 0xffffffffu) == 1) Recycle();
    return;
  }
  const uint64_t prev =
      counts_.fetch_sub(uint64_t{1} << 32, std::memory_order_seq_cst);
  // The last handle went without finishing the call: nobody else can now.
  // While the handler still runs on the worker (it may yet finish the call,
  // e.g. after catching an exception) the worker checks instead, in Detach.
  if ((prev >> 32) == 1 &&
      state_.load(std::memory_order_seq_cst) != kInHandler) {
    FinishDropped();
  }
  Unref();
}

}  // namespace internal
}  // namespace rfrpc
