// Copyright 2026 The rfrpc Authors.
//
// Pure batching decisions, tested with a fake clock: when a client flushes
// its open request batch (paper §4.1, plus the idle flush below), and the
// automatic batch sizer that keeps at most alpha of calls above a latency
// bound (paper §4.2). Thread-compatible.

#ifndef RFRPC_RPC_BATCH_POLICY_H_
#define RFRPC_RPC_BATCH_POLICY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "rpc/options.h"

namespace rfrpc {

enum class FlushReason { kNone, kEntries, kBytes, kTimeout, kIdle };

// Flush when the batch holds N requests, or its payload would exceed L, or T
// has passed since its first request (the paper's three triggers), or when
// it is idle (WhenIdle): a caller is about to wait for it, nobody is adding
// a call to it, and no batch in flight is worth waiting for. T is then only
// an upper bound: a batch waits for company only while company is on its
// way.
class FlushPolicy {
 public:
  // idle_in_flight <= 0 turns the idle flush off; sync_combine: batches
  // with a sync call wait for company too (see WhenIdle).
  FlushPolicy(int max_entries, size_t max_bytes, absl::Duration timeout,
              int idle_in_flight = 0, bool sync_combine = false)
      : max_entries_(max_entries),
        max_bytes_(max_bytes),
        timeout_ns_(absl::ToInt64Nanoseconds(timeout)),
        idle_in_flight_(idle_in_flight),
        sync_combine_(sync_combine) {}

  // Before adding an entry of `entry_bytes` to a batch of `entries` entries
  // and `bytes` payload bytes: kBytes if the batch must go first because
  // the entry would push it past L. A lone entry larger than L still goes
  // (alone).
  FlushReason BeforeAdd(int entries, size_t bytes, size_t entry_bytes) const {
    return entries > 0 && bytes + entry_bytes > max_bytes_ ? FlushReason::kBytes
                                                           : FlushReason::kNone;
  }
  // After adding: kEntries once the batch holds N (or `size_now` when the
  // auto sizer has set a smaller or larger N).
  FlushReason AfterAdd(int entries, int size_now) const {
    return entries >= size_now ? FlushReason::kEntries : FlushReason::kNone;
  }
  // Periodically: kTimeout once T passed since the first entry.
  FlushReason OnTick(int entries, int64_t first_ns, int64_t now_ns) const {
    return entries > 0 && now_ns - first_ns >= timeout_ns_ ? FlushReason::kTimeout
                                                          : FlushReason::kNone;
  }

  // What WhenIdle looks at.
  struct IdleState {
    int entries = 0;  // In the open batch.
    // Callers that asked to add a call and do not hold the connection yet.
    int adding = 0;
    int64_t open_age_ns = 0;  // Since the open batch's first entry.
    // Batches published whose results are not all in, and the age of the
    // oldest of them (since its publish).
    int in_flight = 0;
    int64_t oldest_in_flight_age_ns = 0;
    // The connection's typical batch turnaround (publish to first result
    // part; 0 if not known yet).
    int64_t turnaround_ns = 0;
    // A sync caller is blocked on the open batch.
    bool sync = false;
  };

  // When a caller is about to wait while the batch is open (a sync caller
  // whose call just went into it; any round of the poller that drives the
  // connection): kIdle if the batch holds entries and no company worth
  // waiting for is on its way:
  //
  // * Callers in the middle of adding a call, while the batch is younger
  //   than kAdderWaitNs: an adder descheduled on its way in (milliseconds on
  //   a busy host) must not hold everyone else's batch until T. The last
  //   of a group of adders sends the batch (flat combining).
  // * Batches in flight, while there are idle_in_flight of them or more and
  //   the oldest has been out less than kHoldTurnarounds typical
  //   turnarounds: their callers come back and join the open batch
  //   (pipelined async load fills its batches this way, and sync callers of
  //   many threads combine as Nagle's algorithm combines small segments
  //   while one is unacknowledged). A batch that late is stuck behind a slow
  //   handler or a descheduled server, and the open batch is better off
  //   waiting at the server beside it (a worker serves every published slot
  //   of a connection in one scan) than behind it for another round trip.
  //
  // A batch with a sync call in it waits for either only with sync_combine:
  // its caller is blocked and pays every wait, which pays back only where
  // the other callers run in parallel and the server or fabric is the
  // bottleneck; where they are time-sliced nobody joins meanwhile.
  static constexpr int64_t kAdderWaitNs = 5000;
  static constexpr int kHoldTurnarounds = 2;
  FlushReason WhenIdle(const IdleState& s) const {
    if (s.entries <= 0 || idle_in_flight_ <= 0) return FlushReason::kNone;
    if (s.sync && !sync_combine_) return FlushReason::kIdle;
    if (s.adding > 0 && s.open_age_ns < kAdderWaitNs) return FlushReason::kNone;
    if (s.in_flight >= idle_in_flight_ &&
        s.oldest_in_flight_age_ns < kHoldTurnarounds * s.turnaround_ns) {
      return FlushReason::kNone;
    }
    return FlushReason::kIdle;
  }

  int max_entries() const { return max_entries_; }
  size_t max_bytes() const { return max_bytes_; }
  int64_t timeout_ns() const { return timeout_ns_; }
  int idle_in_flight() const { return idle_in_flight_; }
  bool sync_combine() const { return sync_combine_; }

 private:
  int max_entries_;
  size_t max_bytes_;
  int64_t timeout_ns_;
  int idle_in_flight_;
  bool sync_combine_;
};

// The automatic batch sizer: paper §4.2, with refinements.
//
// The caller records each call's latency as its caller saw it (for async
// calls, up to the start of the callback). Calls are taken in windows of at
// least `window` calls (and min_window_duration, below). At the end of a
// window, with k = the fraction of its calls slower than l_limit
// (`latency_limit`):
//
//   k > alpha:        shrink N.
//   k < 0.1 * alpha:  grow N.
//   otherwise:        keep N (proportional steps: unless the window's p95
//                     is far below the bound, see below).
//
// The paper steps by one either way. With `proportional_steps` (default) a
// step goes toward where the window's latency says the bound lies, since
// latency grows about linearly with N (paper Fig. 14):
//
//   shrink: N * l_limit / Q(1 - alpha), within [N / 2, N - 1]: an overshoot
//           is undone in one decision instead of one step per window, each
//           spent above the bound. Q(1 - alpha) > l_limit whenever k > alpha.
//   grow:   P = N * l_limit / Q(1 - alpha / 10), within [N + 1, 2 N]: fast
//           from a small start while latency is far below the bound, +1
//           close to it. Q(1 - alpha / 10) <= l_limit whenever k < alpha / 10.
//           After the first shrink, only half way: N + (P - N) / 2. Near the
//           bound the projection overshoots (where throughput stops growing
//           with N, latency grows faster than N), and going all the way back
//           after each shrink made N swing between half and the maximum;
//           half way approaches the bound from below.
//   grow, with 0.1 * alpha <= k <= alpha (where the paper keeps N): only
//           if Q(1 - alpha) <= g * l_limit, to N * g * l_limit /
//           Q(1 - alpha) (again within [N + 1, 2 N], half way after a
//           shrink), with g = Options::grow_to (ChannelOptions' default
//           0.7). On a busy host some calls are late whatever N is (the
//           client was descheduled); if they alone put k in the band, the
//           paper's rule never grows again, e.g. after a long stall has
//           shrunk N to 2.
//
// Q(q) is the window's q-quantile (the ceil((1 - q) * calls)-th slowest
// call of the window). Latencies above l_limit are kept exactly (the
// slowest ceil(alpha * longest window) of them; a shrink's Q(1 - alpha) is
// among them); those at or below it are counted in 1024 buckets of equal,
// power-of-two width spanning [0, max(2 l_limit, 1024 ns)) at most, and a
// quantile there is its bucket's lower end: at most one bucket (l_limit /
// 512, or 1 ns) below the true value.
// Recording costs a compare and an increment for most calls (2 ns here),
// instead of a heap operation for about a fifth of them (17 ns a call).
//
// A window lasts at least `window` calls and, when min_window_duration > 0,
// at least that long (timestamps passed to Record), up to 64 * window calls;
// and when max_window_duration > 0, a window that has lasted that long ends
// at its next call however few calls it holds (at least min_window_duration
// still), so a caller too slow to fill `window` calls (a lone sync caller,
// a few hundred calls a second) still gets decisions, one per
// max_window_duration, instead of none in a run.
// k is a fraction of calls, which means something only over a span longer
// than what disturbs it: a client or server descheduled for a scheduler
// slice (milliseconds) makes every call in flight late at once. In a window
// of 1000 calls (~0.2 ms at 5 M calls/s) such a stall is most of the
// window, k jumps above alpha and N is halved; over 10 ms it is the few
// percent of calls it really is.
//
// A shrink waits for `shrink_windows` consecutive windows (default 2) with
// k > alpha, and then steps by the mildest of their Q(1 - alpha): an
// isolated window of late calls is most often a stall of the host (every
// call in flight finishes late at once), which N did not cause and a
// smaller N does not cure; halving N for each cost more throughput than
// the stalls. Sustained overload still shrinks N one window later.
//
// After each change, `holdoff_windows` windows (default 1) are measured
// (last_k) but not acted on: their first calls went out under the old size,
// so they would show the old size's latency and, acted on, push N further
// the same way (the paper's rule, holdoff_windows = 0, does that).
//
// Growth must not cost (`peak_guard`, needs timestamps): latency alone
// lets N grow past the throughput peak (on shm, batches of 117-128 where
// the best fixed N was 24-64: each call waited longer for no more calls
// per second). So after a grow from N0, the first acted-on window's calls
// per second are compared with those of the window that decided the grow;
// if they fell by more than kMaxGrowthLoss, N goes back to N0 and growth
// stops at N0 for kReprobeWindows windows, after which it may probe again
// (the load may have changed). A grow whose rate stayed within the noise
// is kept: an earlier rule that undid every grow short of a 3% gain undid
// about half of them on a busy host, whose 10 ms windows differ by 10-15%,
// and left auto below the best fixed N (benchmarks/RESULTS.md). The noise
// is measured, not assumed: a loss counts only past kNoiseLosses times the
// rate's usual move from window to window at one size (rate_noise()), and
// not before kMinNoiseSamples pairs of windows have measured it. With
// a fixed 3%, one window of a busy host's 20-30% dips after a grow from a
// size that a stall had just shrunk N to undid it and held N there for
// kReprobeWindows windows: batch_bench at l_limit 50-200 us ran whole
// seconds at N = 4-8, p95 4-6 us, 57-73% of the best fixed N's calls/s
// (benchmarks/RESULTS.md, 2026-12-07). Shrinks are never held back.
// Grows that each stayed within the noise can still add up to a loss, and
// at max_size, where latency asks for more, no grow is left to judge the
// size. So there the guard also probes down: after kProbeAfterWindows
// acted-on windows at max_size asking to grow, N steps to N - N / 4. The
// first acted-on window there is compared with the calls per second of
// the last few of those windows: if it fell at all (a smaller batch must
// keep the rate, or there is no reason to move) or k rose above alpha, N
// goes back; otherwise N stays, and growth stops there for
// kReprobeWindows windows, so latency alone does not undo it at once.
// Either way the next probe waits kReprobeWindows windows. Probes only
// from max_size, one step, at most one per kReprobeWindows windows: tried
// from every size that held still, kept whenever the rate did not fall,
// probes walked N down step by step on a noisy host (to N = 1-8 within a
// second in batch_bench at l_limit 200 us, benchmarks/RESULTS.md).
//
// With proportional_steps = false, holdoff_windows = 0, shrink_windows = 1,
// peak_guard = false, min_window_duration = 0 and max_window_duration = 0
// (the Options defaults but the first, the third and peak_guard) this is
// the paper's rule exactly. N stays
// within [min_size, max_size].
//
// Usage (one per connection, under the connection's lock):
//   AutoBatchSizer::Options o;
//   o.latency_limit = absl::Microseconds(50);
//   AutoBatchSizer sizer(o);
//   ...
//   if (sizer.Record(latency, now_ns)) SendNextBatchesWith(sizer.size());
//
// Thread-compatible.
class AutoBatchSizer {
 public:
  struct Options {
    absl::Duration latency_limit = absl::Microseconds(100);  // l_limit.
    double alpha = 0.05;
    int window = 1000;  // Calls per window (values < 1 count as 1).
    int min_size = 1;
    int max_size = 128;
    int initial_size = 1;
    bool proportional_steps = true;
    int holdoff_windows = 1;
    // Shortest window in time; zero: windows are `window` calls.
    absl::Duration min_window_duration = absl::ZeroDuration();
    // Consecutive windows with k > alpha before N shrinks (values < 1 count
    // as 1; the paper: 1).
    int shrink_windows = 2;
    // Longest window in time: a window this old ends at its next call,
    // whatever its call count (never before min_window_duration). Zero:
    // windows end on calls only (the paper).
    absl::Duration max_window_duration = absl::ZeroDuration();
    // Undo a grow that lowered calls per second (see above). Off
    // when timestamps are not passed (now_ns 0).
    bool peak_guard = false;
    // In the band: grow while Q(1 - alpha) <= grow_to * l_limit.
    double grow_to = 0.5;
  };

  // A grow that lowers a window's calls per second by more than this
  // fraction, or by more than kNoiseLosses times the rate's noise
  // (rate_noise()) if that is larger, up to kMaxNoiseLoss, is undone.
  static constexpr double kMaxGrowthLoss = 0.03;
  static constexpr double kNoiseLosses = 2.0;
  static constexpr double kMaxNoiseLoss = 0.5;
  // Weight of the newest pair of windows in rate_noise(), and the pairs
  // measured before a grow may be undone at all (with no measure of the
  // noise, no loss can be told from it).
  static constexpr double kNoiseWeight = 0.125;
  static constexpr int kMinNoiseSamples = 2;
  // Windows for which growth stops at the size a grow was undone to (or a
  // down probe kept), and from one down probe to the next.
  static constexpr int kReprobeWindows = 64;
  // Steady acted-on windows at one size before the peak guard probes down.
  static constexpr int kProbeAfterWindows = 16;
  // A probe is judged against the steady windows' calls per second: their
  // mean over the first 1 / kSteadyRateWeight windows, then a moving
  // average with this weight on the newest.
  static constexpr double kSteadyRateWeight = 0.25;

  // A window ends after at most this many times `window` calls, however
  // short it was in time.
  static constexpr int kMaxWindowFactor = 64;

  // The largest N a channel's sizer reaches.
  static constexpr int kMaxSize = 128;

  explicit AutoBatchSizer(const Options& options);

  // A channel's sizer: `sizer` (ChannelOptions::batching.sizer) starting at
  // N = `initial_size`, N in [1, kMaxSize].
  static Options OptionsFor(const SizerOptions& sizer, int initial_size);

  // Records one call's latency, finished at `now_ns` (any clock in
  // nanoseconds, the same for every call: ClientConnection passes
  // UnixNanos). now_ns is read only when min_window_duration > 0 or
  // max_window_duration > 0; then a clock stepped back stretches a window
  // to its call cap, one stepped forward ends it early, and a caller that
  // leaves now_ns at 0 gets windows of 64 * window calls (min) or of window
  // calls (max only). At the end of a window may change the size. Returns
  // true if the size changed.
  bool Record(absl::Duration latency, int64_t now_ns = 0) {
    return RecordNanos(absl::ToInt64Nanoseconds(latency), now_ns);
  }
  // The same with the latency in nanoseconds.
  bool RecordNanos(int64_t latency_ns, int64_t now_ns) {
    return RecordSpan(absl::MakeConstSpan(&latency_ns, 1), now_ns) > 0;
  }
  // Records calls that all finished at `now_ns`, deciding exactly as
  // RecordNanos would one call at a time, with one window check per
  // stretch of calls instead of per call. Returns how many times the size
  // changed.
  int RecordSpan(absl::Span<const int64_t> latencies_ns, int64_t now_ns);

  int size() const { return size_; }
  // The fraction of calls above l_limit in the last complete window
  // (hold-off windows included).
  double last_k() const { return last_k_; }
  uint64_t adjustments() const { return adjustments_; }
  uint64_t windows() const { return windows_; }  // Complete windows.
  // Grows undone by the peak guard.
  uint64_t grows_undone() const { return grows_undone_; }
  // Down probes made by the peak guard, and those undone (calls per second
  // fell at the smaller size).
  uint64_t probes() const { return probes_; }
  uint64_t probes_undone() const { return probes_undone_; }
  // The size growth stops at (peak guard), or 0 if none.
  int growth_cap() const { return cap_windows_left_ > 0 ? growth_cap_ : 0; }
  // How much calls per second move from one window to the next at one
  // size: a moving average (kNoiseWeight) of |r1 - r0| / max(r0, r1) over
  // pairs of windows at the same size (the first may be a hold-off window).
  double rate_noise() const { return rate_noise_; }

 private:
  int Decide(int calls);
  // A latency above l_limit, into the window's slowest.
  void KeepSlowest(int64_t ns);
  // The call count at which a window `age` old ends (0: at its next call).
  int CallsDue(int64_t age) const;
  // Calls the window takes before it may end (at least 1).
  size_t CallsUntilDue(int64_t now_ns) const;
  // Ends the window and decides if its call count and age say so.
  bool EndWindowIfDue(int64_t now_ns);
  // The latency of the window's `rank`-th slowest call (rank >= 1).
  int64_t Slowest(int rank);
  // The loss of calls per second a grow may cost before it is undone.
  double GrowthLossAllowed() const {
    return std::max(kMaxGrowthLoss,
                    std::min(kMaxNoiseLoss, kNoiseLosses * rate_noise_));
  }

  static constexpr int kLowBuckets = 1024;

  const Options options_;
  const int window_;
  const int64_t limit_ns_;
  const int64_t min_window_ns_;
  const int64_t max_window_ns_;  // 0: none.
  const int max_window_;  // Calls in the longest window.
  // Slowest latencies kept per window: ceil(alpha * the longest window).
  const int keep_;
  int size_;
  int in_window_ = 0;
  int64_t window_start_ns_ = 0;
  int above_ = 0;
  int above_window_ = 0;  // above_ of the window being decided on.
  int holdoff_left_ = 0;
  // Consecutive acted-on windows with k > alpha since the last change, and
  // the smallest Q(1 - alpha) among them.
  int over_streak_ = 0;
  int64_t streak_q_ = 0;
  bool shrunk_ = false;  // A shrink happened: growth goes half way.
  // Peak guard: the size grown from (0: no grow being judged) and the
  // calls per second of the window that decided it; growth stops at
  // growth_cap_ for cap_windows_left_ more windows.
  int grown_from_ = 0;
  double rate_before_ = 0;
  // rate_noise(), the pairs of windows it is from, the last window's calls
  // per second, and windows ended since the size last changed.
  double rate_noise_ = 0;
  int noise_samples_ = 0;
  double last_rate_ = 0;
  int ends_since_change_ = 0;
  int growth_cap_ = 0;
  int cap_windows_left_ = 0;
  uint64_t grows_undone_ = 0;
  // Down probe: acted-on windows in a row at max_size asking to grow, and
  // their calls per second (averaged, see kSteadyRateWeight); the size
  // probed from (0: no probe being judged) and that rate before it;
  // windows before the next probe may start.
  int steady_windows_ = 0;
  double steady_rate_ = 0;
  int probed_from_ = 0;
  double rate_before_probe_ = 0;
  int probe_wait_ = 0;
  uint64_t probes_ = 0;
  uint64_t probes_undone_ = 0;
  // The window's slowest latencies above l_limit: a min-heap of at most
  // keep_ while the window runs; partly reordered (nth_element) by Slowest
  // at its end.
  std::vector<int64_t> slowest_;
  // Latencies at or below l_limit: counts per bucket of 2^low_shift_ ns.
  int low_shift_ = 0;
  std::vector<uint32_t> low_;
  double last_k_ = 0;
  uint64_t adjustments_ = 0;
  uint64_t windows_ = 0;
};

// Latencies of calls whose callbacks ran one after another, up to the start
// of each callback, with the clock read only before every `every`-th
// callback: `stamps[m]` is the clock just before callback m * every, `end`
// the clock after the last callback (when the last group is one callback,
// its stamp serves). Callbacks between two readings get start times
// interpolated linearly. `starts` holds each call's start on entry and its
// latency on return; stamps.size() must be ceil(starts.size() / every).
void LatenciesToCallbackStart(absl::Span<const int64_t> stamps, int64_t end,
                              size_t every, absl::Span<int64_t> starts);

}  // namespace rfrpc

#endif  // RFRPC_RPC_BATCH_POLICY_H_
