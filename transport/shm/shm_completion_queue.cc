// Copyright 2026 The rfrpc Authors.

#include "transport/shm/shm_completion_queue.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "transport/adaptive_wait.h"

namespace rfrpc {
namespace transport {
namespace shm {
namespace {

// Single-writer counter bump: cheaper than a locked RMW, still a data-race
// free atomic access for readers on other threads.
inline void Bump(std::atomic<uint64_t>& c, uint64_t by = 1) {
  c.store(c.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace

namespace {

// The process's wake segments and their free words. Segments are kept for
// the process's life (64 KiB and one fd per 1 024 queues at the most ever
// open at once).
struct WakePool {
  Mutex mu;
  std::vector<std::shared_ptr<Segment>> segments ABSL_GUARDED_BY(mu);
  // Free words: (segment index, word index).
  std::vector<std::pair<uint32_t, uint32_t>> free ABSL_GUARDED_BY(mu);
};

WakePool& TheWakePool() {
  static WakePool* pool = new WakePool;
  return *pool;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WakeWordLease>> WakeWordLease::Take() {
  WakePool& pool = TheWakePool();
  MutexLock lock(&pool.mu);
  if (pool.free.empty()) {
    RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<Segment> seg,
                           Segment::Create(kWakeSegmentBytes));
    const uint32_t si = static_cast<uint32_t>(pool.segments.size());
    pool.segments.push_back(std::move(seg));
    // Handed out from the segment's start: the last pushed is taken first.
    for (uint32_t w = kWakeSegmentBytes / kWakeWordStride; w > 0; --w) {
      pool.free.emplace_back(si, w - 1);
    }
  }
  const auto [si, w] = pool.free.back();
  pool.free.pop_back();
  return std::unique_ptr<WakeWordLease>(
      new WakeWordLease(pool.segments[si], si, w));
}

WakeWordLease::~WakeWordLease() {
  word()->store(0, std::memory_order_relaxed);
  WakePool& pool = TheWakePool();
  MutexLock lock(&pool.mu);
  pool.free.emplace_back(segment_index_, index_);
}

absl::StatusOr<std::unique_ptr<ShmCompletionQueue>> ShmCompletionQueue::Create(
    const CompletionQueueOptions& options) {
  if (options.depth < 1 || options.max_poll_wc < 1 || options.max_retry < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "completion queue options: depth ", options.depth, ", max_poll_wc ",
        options.max_poll_wc, ", max_retry ", options.max_retry,
        " (need depth >= 1, max_poll_wc >= 1, max_retry >= 0)"));
  }
  std::unique_ptr<WakeWordLease> wake;
  if (options.remote_wake) {
    RFRPC_ASSIGN_OR_RETURN(wake, WakeWordLease::Take());
  }
  return std::unique_ptr<ShmCompletionQueue>(
      new ShmCompletionQueue(options, std::move(wake)));
}

namespace {
uint64_t PowerOfTwoMask(uint64_t n) { return (n & (n - 1)) == 0 ? n - 1 : 0; }
}  // namespace

ShmCompletionQueue::ShmCompletionQueue(
    const CompletionQueueOptions& options,
    std::unique_ptr<WakeWordLease> wake_lease)
    : options_(options),
      cells_owner_(new Cell[static_cast<uint64_t>(options.depth)]),
      wake_lease_(std::move(wake_lease)),
      cells_(cells_owner_.get()),
      cap_(static_cast<uint64_t>(options.depth)),
      mask_(PowerOfTwoMask(cap_)),
      wake_(wake_lease_ != nullptr ? wake_lease_->word() : &local_wake_),
      max_poll_wc_(options.max_poll_wc) {
  for (uint64_t i = 0; i < cap_; ++i) {
    cells_[i].seq.store(i, std::memory_order_relaxed);
  }
}

bool ShmCompletionQueue::Claim(uint32_t n, uint64_t* first) {
  if (n == 0 || n > cap_) return false;
  uint64_t t = tail_.load(std::memory_order_relaxed);
  for (;;) {
    // The consumer frees cells in ticket order, so if the last of the n
    // cells is free for its ticket, all n are.
    const uint64_t last = t + n - 1;
    const uint64_t seq = cell(last).seq.load(std::memory_order_acquire);
    if (seq == last) {
      if (tail_.compare_exchange_weak(t, t + n, std::memory_order_relaxed)) {
        *first = t;
        return true;
      }
      // `t` was reloaded by the failed CAS.
    } else if (seq < last) {
      // The cell still holds (or awaits) the entry of ticket last - depth:
      // the queue has no room for n more.
      return false;
    } else {
      t = tail_.load(std::memory_order_relaxed);  // Another producer won.
    }
  }
}

void ShmCompletionQueue::Fill(uint64_t t, const Completion* c) {
  Cell& x = cell(t);
  // Claim() saw this cell free for `t`; nothing else may write it.
  x.hole = c == nullptr;
  if (c != nullptr) x.c = *c;
  // Sequentially consistent: pairs with BlockUntil's re-check (no lost wake-up).
  x.seq.store(t + 1, std::memory_order_seq_cst);
}

void ShmCompletionQueue::PushExtra(const Completion& c) {
  uint64_t t;
  if (!Claim(1, &t)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Publish(t, c);
}

void ShmCompletionQueue::WakeUp() { WakeWord(wake_); }

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               absl::Duration timeout) {
  if (timeout <= absl::ZeroDuration()) return;
  const timespec ts = absl::ToTimespec(timeout);
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT,
            expected, &ts, nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX,
            nullptr, nullptr, 0);
}

int ShmCompletionQueue::HotLines(const void** out, int max) const {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  const void* lines[] = {&tail_, &head_, &cell(head_), &cell(tail)};
  int n = 0;
  for (const void* p : lines) {
    if (n < max) out[n++] = p;
  }
  return n;
}

bool ShmCompletionQueue::HeadReady(std::memory_order order) {
  return cell(head_).seq.load(order) == head_ + 1;
}

int ShmCompletionQueue::PollRound(absl::Span<Completion> out) {
  Bump(polls_);
  const size_t want =
      std::min(out.size(), static_cast<size_t>(max_poll_wc_));
  size_t n = 0;
  while (n < want) {
    Cell& x = cell(head_);
    if (x.seq.load(std::memory_order_acquire) != head_ + 1) break;
    const bool hole = x.hole;
    if (!hole) out[n++] = x.c;
    // Hand the cell to the producer one lap ahead.
    x.seq.store(head_ + cap_, std::memory_order_release);
    ++head_;
  }
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
    if (n < max_poll_wc_ || static_cast<size_t>(total) == out.size()) {
      return total;
    }
  }
}

void ShmCompletionQueue::ArmEvent() {
  wake_->store(1, std::memory_order_seq_cst);
}

void ShmCompletionQueue::DisarmEvent() {
  wake_->store(0, std::memory_order_seq_cst);
}

void ShmCompletionQueue::BlockUntil(absl::Time deadline) {
  Bump(blocks_);
  // Armed by ArmEvent and re-checked by a poll since: a producer that
  // published before it could see the armed word was seen there; one that
  // publishes later swaps the word to 0 and wakes us.
  while (wake_->load(std::memory_order_seq_cst) != 0 &&
         !HeadReady(std::memory_order_seq_cst) &&
         !interrupted_.load(std::memory_order_seq_cst)) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    FutexWait(wake_, 1, left);
  }
  wake_->store(0, std::memory_order_seq_cst);
  if (HeadReady(std::memory_order_acquire)) Bump(wakeups_);
}

void ShmCompletionQueue::ArmWake() {
  // A sequentially consistent store: a full fence before the caller's
  // check of its own memory (the other half of a notifier's store, fence,
  // load of this word).
  wake_->store(1, std::memory_order_seq_cst);
}

void ShmCompletionQueue::Disarm() {
  wake_->store(0, std::memory_order_seq_cst);
}

absl::StatusOr<int> ShmCompletionQueue::WaitArmed(absl::Span<Completion> out,
                                                  absl::Duration timeout) {
  if (out.empty()) {
    return absl::InvalidArgumentError("WaitArmed() needs room for a completion");
  }
  const absl::Time deadline = absl::Now() + timeout;
  int n = Poll(out);
  bool woken = false;
  if (n == 0) {
    Bump(blocks_);
    for (;;) {
      if (wake_->load(std::memory_order_seq_cst) == 0) {
        woken = true;  // A notifier (or Notify/Interrupt) swapped it.
        break;
      }
      if (HeadReady(std::memory_order_seq_cst) ||
          interrupted_.load(std::memory_order_seq_cst)) {
        break;
      }
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) break;
      FutexWait(wake_, 1, left);
    }
    n = Poll(out);
  }
  wake_->store(0, std::memory_order_seq_cst);
  if (n > 0) {
    Bump(wakeups_);
    return n;
  }
  if (interrupted_.exchange(false, std::memory_order_acq_rel)) {
    return absl::DeadlineExceededError("completion queue wait interrupted");
  }
  if (woken) {
    Bump(notifies_);
    return 0;
  }
  return absl::DeadlineExceededError(absl::StrCat(
      "no completion or notify within ", absl::FormatDuration(timeout)));
}

absl::Status ShmCompletionQueue::WaitWoken(absl::Duration timeout) {
  // Only the wake word is read (not the head cell, which a concurrent
  // poller moves): a producer that publishes after ArmWake, a notifier and
  // Interrupt all swap it to 0.
  const absl::Time deadline = absl::Now() + timeout;
  bool woken = false;
  Bump(blocks_);
  for (;;) {
    if (wake_->load(std::memory_order_seq_cst) == 0 ||
        interrupted_.exchange(false, std::memory_order_acq_rel)) {
      woken = true;
      break;
    }
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    FutexWait(wake_, 1, left);
  }
  wake_->store(0, std::memory_order_seq_cst);
  if (!woken) {
    return absl::DeadlineExceededError(absl::StrCat(
        "no completion or notify within ", absl::FormatDuration(timeout)));
  }
  Bump(wakeups_);
  return absl::OkStatus();
}

absl::StatusOr<int> ShmCompletionQueue::Wait(absl::Span<Completion> out,
                                             absl::Duration timeout) {
  return AdaptiveWait(this, options_, out, timeout);
}

void ShmCompletionQueue::Interrupt() {
  interrupted_.store(true, std::memory_order_seq_cst);
  WakeUp();
}

CompletionQueue::Stats ShmCompletionQueue::stats() const {
  Stats s;
  s.polls = polls_.load(std::memory_order_relaxed);
  s.empty_polls = empty_polls_.load(std::memory_order_relaxed);
  s.completions = completions_.load(std::memory_order_relaxed);
  s.blocks = blocks_.load(std::memory_order_relaxed);
  s.wakeups = wakeups_.load(std::memory_order_relaxed);
  s.notifies = notifies_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc
