// Copyright 2026 The rfrpc Authors.
//
// The adaptive first-fetch delay of remote fetching (docs/rpc.md, "Fetch
// timing"): how long after posting a request a connection issues the
// call's first READ. On shared memory a READ takes ~100 ns, far less than a
// server needs to see a request and answer it, so READing at once would
// miss almost always; each connection learns when results come instead.
//
// Decided when a call's result is found, multiplicatively both ways:
//   - a hit (found by the first fetch) shrinks the delay by `shrink`;
//   - a near miss (found by the retry right after the first fetch: a
//     slightly longer delay would have hit) grows it by kGrowNear, plus
//     kStepNs so it can leave 0;
//   - a far miss (found only after several fetches) grows it by kGrowFar
//     only. That is mostly a descheduled server or client, which no delay
//     under the cap would have caught: such outliers move the delay only
//     when they are more than a share p of calls with p * kGrowFar =
//     (1 - p) * shrink (~46% at the default target, ~11% at 1/129): a
//     server that really got slower, not a busy host, drives it to its cap
//     and with it every call's latency.
// It settles where near misses are a fraction t of calls with
// (1 - t) * shrink = t * kGrowNear: ShrinkFor(t). Being multiplicative it
// recovers from a burst in a few thousand calls at any scale.
//
// Pure logic; thread-compatible (the connection calls it under its lock).

#ifndef RFRPC_RPC_FETCH_DELAY_H_
#define RFRPC_RPC_FETCH_DELAY_H_

#include <algorithm>

namespace rfrpc {
namespace internal {

class FetchDelay {
 public:
  static constexpr double kGrowNear = 1.0 / 16;
  static constexpr double kGrowFar = 1.0 / 256;
  static constexpr double kStepNs = 10.0;

  // The shrink per hit that makes near misses a fraction `miss_target`
  // (ChannelOptions::fetch.delay_miss_target, in (0, 1)) of calls; the
  // default 1/20 gives 1/304, the former default 1/129 gives 1/2048.
  static constexpr double ShrinkFor(double miss_target) {
    return kGrowNear * miss_target / (1.0 - miss_target);
  }

  double ns() const { return ns_; }

  // The call's first fetch found its result.
  void OnHit(double shrink) { ns_ *= 1.0 - shrink; }

  // The result was found by fetch number `fetches` (2: the retry right
  // after the first; more: a far miss). Never above `cap_ns`.
  void OnMiss(int fetches, double cap_ns) {
    const double grow = fetches <= 2 ? kGrowNear : kGrowFar;
    ns_ = std::min(ns_ * (1.0 + grow) + kStepNs, cap_ns);
  }

  // Starts again at `ns`, clamped to [0, cap_ns]: where results showed up
  // while they came by server-reply, on switching back to remote fetching.
  void Restart(double ns, double cap_ns) {
    ns_ = std::clamp(ns, 0.0, std::max(cap_ns, 0.0));
  }

 private:
  double ns_ = 0;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_FETCH_DELAY_H_
