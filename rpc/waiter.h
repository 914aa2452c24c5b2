// Copyright 2026 The rfrpc Authors.
//
// How a thread waits for its calls (a sync caller, a channel's progress
// thread; docs/rpc.md "Threads and waiting"): spin briefly after anything
// happened, then yield (so a server or another poller on the same core can
// run), and once the wait for a call has lasted kLongWaitNs, sleep a share
// of it between polls: a call that takes T > 1 ms finishes at most about
// T / 16 (plus the kernel's timer slack) later, and its waiting thread wakes
// ~100 times (T = 100 ms) instead of spinning. The wait is for a call, not
// for the next event: fetch READs that come back empty are events, but the
// caller still waits, so the spin they restart is capped per wait
// (kMaxSpinRounds). Without the cap a caller whose READs complete every few
// microseconds spins until the kernel preempts it, ~1 ms, while a server
// worker it woke on the same core waits to run.
//
// The clock, pause, yield and sleep are injected (Ops), so waiter_test
// counts what a wait does. Thread-compatible: one waiting thread.

#ifndef RFRPC_RPC_WAITER_H_
#define RFRPC_RPC_WAITER_H_

#include <sched.h>

#include <algorithm>
#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "base/cpu_relax.h"
#include "rpc/fetch_timing.h"

namespace rfrpc {
namespace internal {

// The calls a Waiter makes; the defaults are the real ones.
struct WaiterOps {
  void (*relax)() = [] { CpuRelax(); };
  void (*yield)() = [] { sched_yield(); };
  void (*sleep_ns)(int64_t) = [](int64_t ns) {
    absl::SleepFor(absl::Nanoseconds(ns));
  };
  int64_t (*now_ns)() = [] { return UnixNanos(); };
};

class Waiter {
 public:
  // What a long wait does instead of a timed sleep, when the caller knows
  // something will wake it (ClientConnection::SleepForPush): sleep at most
  // `ns`, return early when woken.
  class Sleeper {
   public:
    virtual void Sleep(int64_t ns) = 0;

   protected:
    ~Sleeper() = default;
  };

  // Spin rounds with a pause before a waiting thread starts yielding.
  static constexpr int kSpinRounds = 256;
  // At most this many spin rounds from Restart to Restart, however many
  // events restart the spin.
  static constexpr int kMaxSpinRounds = 4 * kSpinRounds;

  using Ops = WaiterOps;

  // `busy`: ChannelOptions::busy_wait (spin and yield, never sleep).
  explicit Waiter(bool busy, const Ops& ops = Ops()) : busy_(busy), ops_(ops) {}

  // Something happened (a READ completed, a request went out): the next
  // wait spins first again, within the cap, unless the wait is long enough
  // to sleep (then the events are the call's sparse fetches: no spinning
  // between them; on a slow host, e.g. under qemu, 256 polls after each
  // would be milliseconds of CPU).
  void Reset() {
    if (!sleeping_) idle_ = 0;
  }
  // A call finished: the wait for the next one starts now.
  void Restart() {
    idle_ = 0;
    spun_ = 0;
    wait_start_ns_ = 0;
    sleeping_ = false;
  }

  // The wait is long enough to sleep (the next Wait sleeps).
  bool sleeping() const { return sleeping_; }

  // `sleeper`: if not null, the long wait's sleeps go to it.
  void Wait(Sleeper* sleeper = nullptr) {
    if (spun_ < kMaxSpinRounds && ++idle_ < kSpinRounds) {
      ++spun_;
      ops_.relax();
      return;
    }
    if (busy_) {
      ops_.yield();
      return;
    }
    const int64_t now = ops_.now_ns();
    if (wait_start_ns_ == 0) wait_start_ns_ = now;
    const int64_t waited = now - wait_start_ns_;
    if (waited < kLongWaitNs) {
      ops_.yield();
      return;
    }
    sleeping_ = true;
    const int64_t pause =
        std::min(waited / kLongWaitShare, kMaxLongWaitPauseNs);
    if (sleeper != nullptr) {
      sleeper->Sleep(pause);
    } else {
      ops_.sleep_ns(pause);
    }
  }

 private:
  const bool busy_;
  const Ops ops_;
  int idle_ = 0;
  int spun_ = 0;               // Spin rounds since Restart.
  int64_t wait_start_ns_ = 0;  // 0: not yet past the spin.
  bool sleeping_ = false;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_WAITER_H_
