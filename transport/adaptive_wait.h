// Copyright 2026 The rfrpc Authors.
//
// CompletionQueue::Wait's policy, written once for every provider: RDMAbox's
// adaptive polling (Algorithm 3). Poll; in kBusy keep polling; in kAdaptive
// after max_retry empty rounds (at once in kEvent) arm the queue's wake-up,
// poll once more (a completion may have landed before the arm), and block;
// woken, poll busily again (the "hook"). An Interrupt() ends the wait with
// DEADLINE_EXCEEDED.
//
// A provider's queue supplies the mechanism:
//
//   int Poll(absl::Span<Completion> out);   // the queue's own Poll
//   bool TakeInterrupt();                   // an Interrupt() pending? clears it
//   void ArmEvent();                        // a completion from now on wakes
//   void DisarmEvent();                     // after arming, nothing to sleep for
//   void BlockUntil(absl::Time deadline);   // sleeps while armed and nothing came
//
// Thread safety: that of the queue's Wait (its poller's thread).

#ifndef RFRPC_TRANSPORT_ADAPTIVE_WAIT_H_
#define RFRPC_TRANSPORT_ADAPTIVE_WAIT_H_

#include <algorithm>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/cpu_relax.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {

template <typename Queue>
absl::StatusOr<int> AdaptiveWait(Queue* q, const CompletionQueueOptions& o,
                                 absl::Span<Completion> out,
                                 absl::Duration timeout) {
  if (out.empty()) {
    return absl::InvalidArgumentError("Wait() needs room for a completion");
  }
  // Deadline checks cost a clock read; spinning does one every this many
  // rounds.
  constexpr int kSpinsPerClockCheck = 64;
  const absl::Time deadline = absl::Now() + timeout;
  int retry = 0;
  int spins = 0;
  for (;;) {
    int n = q->Poll(out);
    if (n > 0) return n;
    if (q->TakeInterrupt()) {
      return absl::DeadlineExceededError("completion queue wait interrupted");
    }
    const bool block = o.poll_mode == PollMode::kEvent ||
                       (o.poll_mode == PollMode::kAdaptive &&
                        ++retry >= o.max_retry);
    if (!block) {
      CpuRelax();
      if (++spins % kSpinsPerClockCheck == 0 && absl::Now() >= deadline) break;
      continue;
    }
    if (absl::Now() >= deadline) break;
    q->ArmEvent();
    n = q->Poll(out);
    if (n > 0) {
      q->DisarmEvent();
      return n;
    }
    q->BlockUntil(deadline);
    retry = 0;  // Woken: poll busily again.
  }
  // One last look so a completion that raced with the deadline is not lost.
  const int n = q->Poll(out);
  if (n > 0) return n;
  return absl::DeadlineExceededError(
      absl::StrCat("no completion within ", absl::FormatDuration(timeout)));
}

}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_ADAPTIVE_WAIT_H_
