// Copyright 2026 The rfrpc Authors.
//
// Online R/F re-selection: samples every completed call's result size and
// server processing time (through ChannelOptions::on_result) and, once per
// interval, re-runs the selector on the last interval's samples, applying a
// new (R, F) with Channel::SetFetchParams only if the predicted gain over the
// (R, F) in force exceeds min_gain (hysteresis). At most one change per
// interval.
//
//   RFRPC_ASSIGN_OR_RETURN(Profile profile, Profile::Load(path, "shm"));
//   RFRPC_ASSIGN_OR_RETURN(auto tuner, OnlineTuner::Create(profile, {}));
//   ChannelOptions co;
//   co.on_result = tuner->Observer();
//   RFRPC_ASSIGN_OR_RETURN(auto channel, Channel::Create(address, co));
//   tuner->Attach(channel.get());    // The timer thread now tunes it.
//   ...
//   tuner->Detach();                 // Before the channel goes away.
//
// Ownership: the observer holds the sampler by shared_ptr, so it stays valid
// even if the tuner dies first. The tuner does not own the channel: call
// Detach() (or destroy the tuner) before destroying the channel.
//
// Thread safety: the observer is lock-free (relaxed atomic increments; a
// binary search over ~(H - L) / step bucket edges) and may run on any
// thread. Tick, Attach, Detach and stats are thread-safe (one mutex).

#ifndef RFRPC_RPC_TUNER_ONLINE_H_
#define RFRPC_RPC_TUNER_ONLINE_H_

#include <condition_variable>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "rpc/channel.h"
#include "rpc/tuner/profile.h"
#include "rpc/tuner/selector.h"
#include "base/mutex.h"

namespace rfrpc {
namespace tuner {

struct OnlineTunerOptions {
  // Re-selection period of the timer thread. Default: 1 s.
  absl::Duration interval = absl::Seconds(1);
  // Start a timer thread that calls Tick() every interval; false leaves the
  // ticking to the caller (each Tick() is then one interval). Default: true.
  bool start_timer = true;
  // Change (R, F) only if the predicted calls/s gain over the current
  // (R, F) exceeds this fraction. Default: 0.03.
  double min_gain = 0.03;
  // An interval with fewer samples keeps (R, F) and its samples carry over
  // to the next. Default: 64.
  uint64_t min_samples = 64;
  // (R, F) assumed until Attach() reads the channel's. Default: 5, 256.
  int initial_retries = 5;
  uint32_t initial_fetch_size = 256;
};

struct OnlineTunerStats {
  int retries = 0;             // Current R.
  uint32_t fetch_size = 0;     // Current F.
  uint64_t reselections = 0;   // Times (R, F) was changed.
  uint64_t ticks = 0;
  uint64_t samples = 0;        // Results observed in all.
  double last_gain = 0;        // Predicted gain of the last evaluated tick.
  double last_server_time_ns = 0;
};

class OnlineTuner {
 public:
  // INVALID_ARGUMENT for a non-positive interval or negative min_gain.
  static absl::StatusOr<std::unique_ptr<OnlineTuner>> Create(
      Profile profile, OnlineTunerOptions options);
  ~OnlineTuner();  // Stops the timer thread.
  OnlineTuner(const OnlineTuner&) = delete;
  OnlineTuner& operator=(const OnlineTuner&) = delete;

  // The ChannelOptions::on_result hook.
  std::function<void(uint32_t result_bytes, absl::Duration server_time)>
  Observer() const;
  // Same as calling the observer.
  void Record(uint32_t result_bytes, absl::Duration server_time);

  // Tunes `channel` (not owned; not null) from now on, starting from its
  // current R and F.
  void Attach(Channel* channel);
  // Stops applying to the channel; Tick() still evaluates.
  void Detach();

  // One re-selection step over the samples since the last evaluated step.
  // Returns true if (R, F) changed.
  bool Tick();

  OnlineTunerStats stats() const;

 private:
  class Sampler;
  OnlineTuner(Profile profile, OnlineTunerOptions options);
  void TimerLoop();

  const Profile profile_;
  const OnlineTunerOptions options_;
  const std::shared_ptr<Sampler> sampler_;

  mutable Mutex mu_;
  Channel* channel_ ABSL_GUARDED_BY(mu_) = nullptr;
  OnlineTunerStats stats_ ABSL_GUARDED_BY(mu_);
  SizeHistogram pending_ ABSL_GUARDED_BY(mu_);  // Carried-over samples.
  double pending_time_ns_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::condition_variable stop_cv_;
  std::thread timer_;
};

}  // namespace tuner
}  // namespace rfrpc

#endif  // RFRPC_RPC_TUNER_ONLINE_H_
