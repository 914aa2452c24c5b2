// Copyright 2026 The rfrpc Authors.
//
// The shm provider's CompletionQueue: a bounded, lock-free queue that
// connections posting from several threads fill (multi-producer) and one
// thread at a time drains (single consumer), with RDMAbox-style adaptive
// polling in Wait().
//
// The ring is a Vyukov bounded queue: each cell carries a sequence number
// that says whose turn it is. A producer claims tickets (consecutive cells)
// with one compare-and-swap on the tail, fills them and publishes each cell
// with one store; the consumer reads the cell at its head and hands the cell
// back to the producer one lap ahead with one store. No mutex anywhere, so an
// uncontended signaled request costs one CAS and one store on the producer
// side and plain loads/stores on the consumer side.
//
// Producers claim before they execute work (Claim), so a completion is never
// dropped after the operation it reports has happened: when the queue cannot
// take a post list's signaled completions, Post() returns RESOURCE_EXHAUSTED
// and executes nothing. A claimed ticket the producer ends up not needing
// (a post-time error stopped the list) is published as a hole the consumer
// skips. Error and flush completions of unsignaled requests are pushed when
// there is room (PushExtra) and counted in dropped() otherwise (a verbs CQ
// overrun is fatal; here the data path keeps going). Capacity is exactly
// `depth`: claimed plus queued entries never exceed it.
//
// Wake-ups: a futex word, 1 while a waiter is armed. A Wait() that decides
// to block stores 1, re-checks the head cell, then futex-waits while the
// word is 1; a producer publishes its cells, then (Notify) swaps the word to
// 0 and futex-wakes if it was 1. Both sides use sequentially consistent
// accesses, so either the waiter sees the entry or the producer sees the
// waiter (no lost wake-up), and a wake that comes before the waiter sleeps
// leaves the word 0, so the futex wait returns at once. A producer
// preempted between Claim and Publish delays the entries behind its ticket
// (the consumer takes cells in ticket order); it publishes within a few
// instructions of running again and then wakes a sleeping waiter itself.
//
// With CompletionQueueOptions::remote_wake the word lives in a shared memfd
// segment that the queue's connections hand to their peers, who map it and
// wake the queue the same way after a notify WRITE
// (WorkRequest::notify); ArmWake/WaitArmed let the consumer check its own
// memory between arming and sleeping. Without it the word is an ordinary
// member and the queue holds no file descriptor.
//
// Thread safety: Claim/Publish/PublishHole/PushExtra/Notify from any thread;
// Poll/Wait from one thread at a time (successive pollers must be ordered by
// the caller, e.g. by a mutex); Interrupt and stats from any thread.

#ifndef RFRPC_TRANSPORT_SHM_SHM_COMPLETION_QUEUE_H_
#define RFRPC_TRANSPORT_SHM_SHM_COMPLETION_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/cpu_relax.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "transport/adaptive_wait.h"
#include "transport/bootstrap.h"
#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace shm {

// Size of a wake segment (remote_wake). The queues of a process that can be
// woken by peers take their wake words (a uint32 each, one a cache line)
// from shared segments of this size, kWakeSegmentBytes / 64 words each, so
// that a peer maps one segment for up to 1 024 of a process's queues (a
// client holds one queue per connection) instead of one per queue. Peers
// map exactly this much and are told the word's offset.
inline constexpr size_t kWakeSegmentBytes = 64 * 1024;
inline constexpr size_t kWakeWordStride = 64;

// A wake word taken from the process's shared wake segments; given back
// (zeroed) when destroyed.
class WakeWordLease {
 public:
  static absl::StatusOr<std::unique_ptr<WakeWordLease>> Take();
  ~WakeWordLease();
  WakeWordLease(const WakeWordLease&) = delete;
  WakeWordLease& operator=(const WakeWordLease&) = delete;

  const Segment& segment() const { return *segment_; }
  size_t offset() const { return size_t{index_} * kWakeWordStride; }
  std::atomic<uint32_t>* word() const {
    return reinterpret_cast<std::atomic<uint32_t>*>(segment_->mapping.data() +
                                                    offset());
  }

 private:
  WakeWordLease(std::shared_ptr<Segment> segment, uint32_t segment_index,
                uint32_t index)
      : segment_(std::move(segment)),
        segment_index_(segment_index),
        index_(index) {}

  const std::shared_ptr<Segment> segment_;
  const uint32_t segment_index_;  // In the process's list of segments.
  const uint32_t index_;          // Of the word in the segment.
};

class ShmCompletionQueue final : public CompletionQueue {
 public:
  // INVALID_ARGUMENT for depth < 1, max_poll_wc < 1 or max_retry < 0.
  static absl::StatusOr<std::unique_ptr<ShmCompletionQueue>> Create(
      const CompletionQueueOptions& options);

  int Poll(absl::Span<Completion> out) override;
  absl::StatusOr<int> Wait(absl::Span<Completion> out,
                           absl::Duration timeout) override;
  // Sticky: an Interrupt() with no Wait() in progress makes the next Wait()
  // return DEADLINE_EXCEEDED at once unless completions are queued.
  void Interrupt() override;
  void ArmWake() override;
  void Disarm() override;
  absl::StatusOr<int> WaitArmed(absl::Span<Completion> out,
                                absl::Duration timeout) override;
  absl::Status WaitWoken(absl::Duration timeout) override;
  Stats stats() const override;
  int HotLines(const void** out, int max) const override;

  // The segment holding the wake word and the word's offset in it, or null
  // without CompletionQueueOptions::remote_wake.
  const Segment* wake_segment() const {
    return wake_lease_ != nullptr ? &wake_lease_->segment() : nullptr;
  }
  size_t wake_offset() const {
    return wake_lease_ != nullptr ? wake_lease_->offset() : 0;
  }

  // Producer side (any thread). Claim(n) takes n consecutive tickets (n
  // cells) for completions the caller will publish; it fails, taking none,
  // when the queue (entries plus other claims) has no room for n. `first`
  // must not be null. REQUIRES: n >= 1.
  bool Claim(uint32_t n, uint64_t* first);
  // Fills ticket `t` (from Claim) with `c`, or with a hole the consumer
  // skips. Each claimed ticket must be published exactly once.
  void Publish(uint64_t t, const Completion& c) { Fill(t, &c); }
  void PublishHole(uint64_t t) { Fill(t, nullptr); }
  // Claims and publishes one entry if there is room, else counts it in
  // dropped(). For error completions nobody reserved room for.
  void PushExtra(const Completion& c);
  // Wakes a blocked (or armed) Wait(), if any. Call after publishing.
  void Notify() {
    if (wake_->load(std::memory_order_seq_cst) != 0) WakeUp();
  }
  // The word Notify() looks at: WakeWord(wake_word()) does what Notify()
  // does, for a producer that keeps the pointer.
  std::atomic<uint32_t>* wake_word() const { return wake_; }

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  int depth() const { return options_.depth; }

 private:
  // One line each: a publish or a poll touches one line, not two.
  struct alignas(64) Cell {
    // == ticket: free for the producer of `ticket`; == ticket + 1: holds
    // that ticket's entry. The consumer sets ticket + depth when it is done.
    std::atomic<uint64_t> seq{0};
    bool hole = false;
    Completion c;
  };

  ShmCompletionQueue(const CompletionQueueOptions& options,
                     std::unique_ptr<WakeWordLease> wake_lease);

  Cell& cell(uint64_t t) const {
    return cells_[mask_ != 0 ? (t & mask_) : (t % cap_)];
  }
  void Fill(uint64_t t, const Completion* c);
  void WakeUp();
  // True if the head cell holds an entry (or a hole) the consumer can take.
  bool HeadReady(std::memory_order order);
  // One poll round: takes up to min(out.size(), max_poll_wc) entries.
  int PollRound(absl::Span<Completion> out);
  // AdaptiveWait's hooks (transport/adaptive_wait.h).
  template <typename Q>
  friend absl::StatusOr<int> transport::AdaptiveWait(
      Q* q, const CompletionQueueOptions& o, absl::Span<Completion> out,
      absl::Duration timeout);
  bool TakeInterrupt() {
    return interrupted_.exchange(false, std::memory_order_acq_rel);
  }
  void ArmEvent();
  void DisarmEvent();
  // Sleeps while armed and nothing arrived, until an entry, an interrupt or
  // `deadline`; disarms.
  void BlockUntil(absl::Time deadline);

  const CompletionQueueOptions options_;
  const std::unique_ptr<Cell[]> cells_owner_;
  const std::unique_ptr<WakeWordLease> wake_lease_;

  // Two cache lines, so that producers and the consumer do not falsely
  // share, each holding all its side touches in a call (a client cycling
  // through thousands of connections finds every queue cold, and paid a
  // line for each of the object's constants, claim counter, wake word and
  // consumer state).
  //
  // The producers' line: the claim counter and what a publish reads (the
  // ring's shape and the wake words), with the rarely written flags: the
  // local wake word (the consumer arms it), interrupted_ and dropped_ (a
  // producer that found no room). cells_ repeats cells_owner_.get() here so
  // that a publish reads nothing outside this line.
  alignas(64) std::atomic<uint64_t> tail_{0};
  Cell* const cells_;
  const uint64_t cap_;
  const uint64_t mask_;  // cap_ - 1 if cap_ is a power of two, else 0.
  // The wake word: wake_lease_'s (remote_wake) or local_wake_.
  std::atomic<uint32_t>* const wake_;
  std::atomic<uint32_t> local_wake_{0};
  std::atomic<bool> interrupted_{false};
  std::atomic<uint64_t> dropped_{0};

  // The consumer's line (one poller at a time); the counters are read by
  // stats() from any thread.
  alignas(64) uint64_t head_ = 0;
  const int max_poll_wc_;  // options_.max_poll_wc.
  std::atomic<uint64_t> polls_{0};
  std::atomic<uint64_t> empty_polls_{0};
  std::atomic<uint64_t> completions_{0};
  std::atomic<uint64_t> blocks_{0};
  std::atomic<uint64_t> wakeups_{0};
  std::atomic<uint64_t> notifies_{0};
};

// The futex operations of wake words (shared, not FUTEX_PRIVATE: the word
// may sit in a segment several processes map). FutexWait returns when woken,
// on a spurious wake-up, at `timeout`, or at once if *word != expected.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected,
               absl::Duration timeout);
void FutexWake(std::atomic<uint32_t>* word);

// Wakes the owner of a wake word (this process's or a peer's): if it is
// armed, swaps it to 0 and futex-wakes. The caller has published whatever
// the owner should find (a full fence after its stores).
inline void WakeWord(std::atomic<uint32_t>* word) {
  if (word->load(std::memory_order_seq_cst) != 0 &&
      word->exchange(0, std::memory_order_seq_cst) != 0) {
    FutexWake(word);
  }
}

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_SHM_SHM_COMPLETION_QUEUE_H_
