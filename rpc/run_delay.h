// Copyright 2026 The rfrpc Authors.
//
// RunDelay: how long the calling thread has waited runnable for a CPU, from
// the kernel's scheduler statistics (/proc/thread-self/schedstat: time on a
// CPU, time runnable but waiting, timeslices; all since the thread began).
//
// A server worker whose handler took 16 ms of wall clock may have run it
// for 16 ms (a handler that blocks or computes: move it off the worker) or
// have been descheduled for most of it (another busy thread on its CPU: the
// handler is not at fault). ServerWorker tells the two apart for its stall
// warning: it reads the run delay every few milliseconds while it works (a
// baseline) and again when a handler ran past stall_warning; what the delay
// grew by, less the time between the baseline and the handler's start,
// is at least how long the handler waited for a CPU (WaitedAtLeast).
//
// A read is one pread (~1 us here). Thread-compatible; the reads are of
// the thread that called Open.

#ifndef RFRPC_RPC_RUN_DELAY_H_
#define RFRPC_RPC_RUN_DELAY_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace rfrpc {

class RunDelay {
 public:
  RunDelay() = default;
  ~RunDelay();
  RunDelay(const RunDelay&) = delete;
  RunDelay& operator=(const RunDelay&) = delete;

  // Opens the calling thread's schedstat. False if the kernel has none
  // (no CONFIG_SCHED_INFO, /proc not mounted); Read then fails.
  bool Open();
  bool available() const { return fd_ >= 0; }

  // The calling (Open's) thread's run delay so far, in nanoseconds.
  bool Read(int64_t* run_delay_ns) const;

  // The run delay field of a schedstat line ("<on cpu> <run delay>
  // <timeslices>", nanoseconds). False if the line is not of that form.
  static bool Parse(absl::string_view line, int64_t* run_delay_ns);

  // The least time of a span of `held_ns`, the last part of a window of
  // `window_ns`, that was spent waiting for a CPU, given that the run delay
  // grew by `grew_ns` over the window: all of the growth but what the rest
  // of the window could hold. Never negative.
  static int64_t WaitedAtLeast(int64_t grew_ns, int64_t window_ns,
                               int64_t held_ns);

 private:
  int fd_ = -1;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_RUN_DELAY_H_
