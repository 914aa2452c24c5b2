// Copyright 2026 The rfrpc Authors.
//
// The shm provider's CompletionQueue: a bounded queue that connections
// posting from several threads fill (multi-producer) and one thread at a time
// drains (single consumer), with RDMAbox-style adaptive polling in Wait().
//
// Producers reserve capacity before they execute work (Reserve), so a
// completion is never dropped after the operation it reports has happened:
// when the queue cannot take a post list's signaled completions, Post()
// returns RESOURCE_EXHAUSTED and executes nothing. Error and flush
// completions of unsignaled requests are pushed when there is room and
// counted in dropped() otherwise (newest dropped first) (a verbs CQ overrun is fatal; here the data
// path keeps going).
//
// Wake-ups: a Wait() that decides to block sets `sleeping_`, re-checks the
// queue, then sleeps on an eventfd; a producer publishes its entries, then
// writes the eventfd if `sleeping_` is set. Both sides use sequentially
// consistent accesses, so either the waiter sees the entries or the producer
// sees the waiter (no lost wake-up).
//
// Thread safety: Reserve/Push from any thread; Poll/Wait from one thread at a
// time; Interrupt and stats from any thread.

#ifndef RFRPC_TRANSPORT_SHM_SHM_COMPLETION_QUEUE_H_
#define RFRPC_TRANSPORT_SHM_SHM_COMPLETION_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include <mutex>  // NOLINT: see shm_internal.h on std::mutex.
#include "absl/types/span.h"
#include "transport/bootstrap.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace shm {

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
  Stats stats() const override;

  // Producer side (any thread). Reserve(n) claims room for n completions; it
  // fails when the queue (entries plus reservations) would exceed depth.
  bool Reserve(uint32_t n);
  // Releases `reserved` reservations taken with Reserve() and appends `cs`;
  // entries beyond the caller's reservations go in only if there is room
  // not promised to other producers, and are counted in dropped() if not.
  void Push(absl::Span<const Completion> cs, uint32_t reserved);
  void Unreserve(uint32_t n);

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  int depth() const { return options_.depth; }

 private:
  ShmCompletionQueue(const CompletionQueueOptions& options, ScopedFd event_fd);

  // One poll round: takes up to min(out.size(), max_poll_wc) entries.
  int PollRound(absl::Span<Completion> out);
  // Arms the eventfd and sleeps until an entry, an interrupt or `deadline`.
  void Block(absl::Time deadline);

  const CompletionQueueOptions options_;
  const ScopedFd event_fd_;

  std::mutex mu_;
  std::vector<Completion> ring_ ABSL_GUARDED_BY(mu_);
  uint32_t head_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t count_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t reserved_ ABSL_GUARDED_BY(mu_) = 0;

  // Mirrors count_ so empty polls and the wake-up check need no lock.
  std::atomic<uint32_t> size_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> interrupted_{false};
  std::atomic<uint64_t> dropped_{0};

  // Written by the polling thread only; read by stats() from any thread.
  std::atomic<uint64_t> polls_{0};
  std::atomic<uint64_t> empty_polls_{0};
  std::atomic<uint64_t> completions_{0};
  std::atomic<uint64_t> blocks_{0};
  std::atomic<uint64_t> wakeups_{0};
};

// A spin-wait hint (x86 PAUSE); a compiler barrier elsewhere.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  asm volatile("" ::: "memory");
#endif
}

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_SHM_SHM_COMPLETION_QUEUE_H_
