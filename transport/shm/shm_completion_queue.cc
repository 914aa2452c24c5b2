// Copyright 2026 The rfrpc Authors.

#include "transport/shm/shm_completion_queue.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rfrpc {
namespace transport {
namespace shm {
namespace {

// Single-writer counter bump: cheaper than a locked RMW, still a data-race
// free atomic access for readers on other threads.
inline void Bump(std::atomic<uint64_t>& c, uint64_t by = 1) {
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// Deadline checks cost a clock read; do one every this many spins.
constexpr int kSpinsPerClockCheck = 64;

}  // namespace

absl::StatusOr<std::unique_ptr<ShmCompletionQueue>> ShmCompletionQueue::Create(
    const CompletionQueueOptions& options) {
  if (options.depth < 1 || options.max_poll_wc < 1 || options.max_retry < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "completion queue options: depth ", options.depth, ", max_poll_wc ",
        options.max_poll_wc, ", max_retry ", options.max_retry,
        " (need depth >= 1, max_poll_wc >= 1, max_retry >= 0)"));
  }
  ScopedFd efd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!efd.valid()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("eventfd: ", strerror(errno)));
  }
  return std::unique_ptr<ShmCompletionQueue>(
      new ShmCompletionQueue(options, std::move(efd)));
}

ShmCompletionQueue::ShmCompletionQueue(const CompletionQueueOptions& options,
                                       ScopedFd event_fd)
    : options_(options), event_fd_(std::move(event_fd)) {
  std::lock_guard<std::mutex> lock(mu_);
  ring_.resize(static_cast<size_t>(options.depth));
}

bool ShmCompletionQueue::Reserve(uint32_t n) {
  if (n == 0) return true;
  std::lock_guard<std::mutex> lock(mu_);
  if (static_cast<uint64_t>(count_) + reserved_ + n > ring_.size()) {
    return false;
  }
  reserved_ += n;
  return true;
}

void ShmCompletionQueue::Unreserve(uint32_t n) {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  reserved_ -= std::min(n, reserved_);
}

void ShmCompletionQueue::Push(absl::Span<const Completion> cs,
                              uint32_t reserved) {
  if (cs.empty() && reserved == 0) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint32_t cap = static_cast<uint32_t>(ring_.size());
    // Release our reservations first; other producers' stay counted, so
    // entries beyond our reservations never take room promised to them.
    reserved_ -= std::min(reserved, reserved_);
    for (const Completion& c : cs) {
      if (count_ + reserved_ >= cap) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      ring_[(head_ + count_) % cap] = c;
      ++count_;
    }
    size_.store(count_, std::memory_order_seq_cst);
  }
  if (sleeping_.load(std::memory_order_seq_cst)) {
    const uint64_t one = 1;
    // EAGAIN (counter saturated) still leaves the fd readable.
    [[maybe_unused]] ssize_t r = ::write(event_fd_.get(), &one, sizeof(one));
  }
}

int ShmCompletionQueue::PollRound(absl::Span<Completion> out) {
  Bump(polls_);
  if (out.empty()) return 0;
  if (size_.load(std::memory_order_acquire) == 0) {
    Bump(empty_polls_);
    return 0;
  }
  const size_t want =
      std::min(out.size(), static_cast<size_t>(options_.max_poll_wc));
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t cap = static_cast<uint32_t>(ring_.size());
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(want, count_));
  for (uint32_t i = 0; i < n; ++i) {
    out[i] = ring_[head_];
    head_ = (head_ + 1) % cap;
  }
  count_ -= n;
  size_.store(count_, std::memory_order_seq_cst);
  if (n == 0) Bump(empty_polls_);
  Bump(completions_, n);
  return static_cast<int>(n);
}

int ShmCompletionQueue::Poll(absl::Span<Completion> out) {
  int total = 0;
  // Keep taking full rounds while they come back full (RDMAbox: poll until
  // max_poll_wc is reached or the queue is empty).
  for (;;) {
    const int n = PollRound(out.subspan(static_cast<size_t>(total)));
    total += n;
    if (n < options_.max_poll_wc || static_cast<size_t>(total) == out.size()) {
      return total;
    }
  }
}

void ShmCompletionQueue::Block(absl::Time deadline) {
  Bump(blocks_);
  sleeping_.store(true, std::memory_order_seq_cst);
  // Re-check after arming: a producer that pushed before it could see
  // `sleeping_` must be visible here.
  if (size_.load(std::memory_order_seq_cst) == 0 &&
      !interrupted_.load(std::memory_order_seq_cst)) {
    const absl::Duration left = deadline - absl::Now();
    if (left > absl::ZeroDuration()) {
      pollfd p{event_fd_.get(), POLLIN, 0};
      const timespec ts = absl::ToTimespec(left);
      ::ppoll(&p, 1, &ts, nullptr);
    }
  }
  sleeping_.store(false, std::memory_order_seq_cst);
  uint64_t drained;
  [[maybe_unused]] ssize_t r = ::read(event_fd_.get(), &drained, sizeof(drained));
  if (size_.load(std::memory_order_acquire) > 0) Bump(wakeups_);
}

absl::StatusOr<int> ShmCompletionQueue::Wait(absl::Span<Completion> out,
                                             absl::Duration timeout) {
  if (out.empty()) {
    return absl::InvalidArgumentError("Wait() needs room for a completion");
  }
  const absl::Time deadline = absl::Now() + timeout;
  int retry = 0;
  int spins = 0;
  for (;;) {
    const int n = Poll(out);
    if (n > 0) return n;
    if (interrupted_.exchange(false, std::memory_order_acq_rel)) {
      return absl::DeadlineExceededError("completion queue wait interrupted");
    }
    const bool block =
        options_.poll_mode == PollMode::kEvent ||
        (options_.poll_mode == PollMode::kAdaptive &&
         ++retry >= options_.max_retry);
    if (block) {
      if (absl::Now() >= deadline) break;
      Block(deadline);
      retry = 0;
      continue;
    }
    CpuRelax();
    if (++spins % kSpinsPerClockCheck == 0 && absl::Now() >= deadline) break;
  }
  // One last look so a completion that raced with the deadline is not lost.
  const int n = Poll(out);
  if (n > 0) return n;
  return absl::DeadlineExceededError(absl::StrCat(
      "no completion within ", absl::FormatDuration(timeout)));
}

void ShmCompletionQueue::Interrupt() {
  interrupted_.store(true, std::memory_order_seq_cst);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t r = ::write(event_fd_.get(), &one, sizeof(one));
}

CompletionQueue::Stats ShmCompletionQueue::stats() const {
  Stats s;
  s.polls = polls_.load(std::memory_order_relaxed);
  s.empty_polls = empty_polls_.load(std::memory_order_relaxed);
  s.completions = completions_.load(std::memory_order_relaxed);
  s.blocks = blocks_.load(std::memory_order_relaxed);
  s.wakeups = wakeups_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc
