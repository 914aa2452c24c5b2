// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/online.h"

#include <algorithm>
#include <utility>

#include "glog/logging.h"
#include "base/mutex.h"

namespace rfrpc {
namespace tuner {

// Counts per candidate-F bucket: bucket i holds results in
// (edge[i-1], edge[i]]; the last bucket holds results above H.
class OnlineTuner::Sampler {
 public:
  explicit Sampler(const std::vector<uint32_t>& edges)
      : edges_(edges), counts_(edges.size() + 1) {}

  void Record(uint32_t bytes, absl::Duration server_time) {
    const size_t i = static_cast<size_t>(
        std::lower_bound(edges_.begin(), edges_.end(), bytes) - edges_.begin());
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    time_ns_.fetch_add(
        static_cast<uint64_t>(std::max<int64_t>(0, absl::ToInt64Nanoseconds(server_time))),
        std::memory_order_relaxed);
  }

  // Moves the counts into `h` and returns the summed server time.
  uint64_t Drain(SizeHistogram* h) {
    for (size_t i = 0; i < counts_.size(); ++i) {
      const uint64_t n = counts_[i].exchange(0, std::memory_order_relaxed);
      const uint32_t size = i < edges_.size() ? edges_[i] : edges_.back() + 1;
      h->Add(size, n);
    }
    return time_ns_.exchange(0, std::memory_order_relaxed);
  }

 private:
  const std::vector<uint32_t> edges_;
  std::vector<std::atomic<uint64_t>> counts_;
  std::atomic<uint64_t> time_ns_{0};
};

absl::StatusOr<std::unique_ptr<OnlineTuner>> OnlineTuner::Create(
    Profile profile, OnlineTunerOptions options) {
  if (options.interval <= absl::ZeroDuration() || options.min_gain < 0) {
    return absl::InvalidArgumentError(
        "OnlineTuner: interval must be > 0 and min_gain >= 0");
  }
  std::unique_ptr<OnlineTuner> t(
      new OnlineTuner(std::move(profile), std::move(options)));
  if (t->options_.start_timer) {
    t->timer_ = std::thread([p = t.get()] { p->TimerLoop(); });
  }
  return t;
}

OnlineTuner::OnlineTuner(Profile profile, OnlineTunerOptions options)
    : profile_(std::move(profile)),
      options_(std::move(options)),
      sampler_(std::make_shared<Sampler>(profile_.candidate_fetch_sizes())) {
  stats_.retries = options_.initial_retries;
  stats_.fetch_size = options_.initial_fetch_size;
}

OnlineTuner::~OnlineTuner() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (timer_.joinable()) timer_.join();
}

std::function<void(uint32_t, absl::Duration)> OnlineTuner::Observer() const {
  return [s = sampler_](uint32_t bytes, absl::Duration t) { s->Record(bytes, t); };
}

void OnlineTuner::Record(uint32_t result_bytes, absl::Duration server_time) {
  sampler_->Record(result_bytes, server_time);
}

void OnlineTuner::Attach(Channel* channel) {
  MutexLock lock(&mu_);
  channel_ = channel;
  stats_.retries = channel->retries();
  stats_.fetch_size = channel->fetch_size();
}

void OnlineTuner::Detach() {
  MutexLock lock(&mu_);
  channel_ = nullptr;
}

bool OnlineTuner::Tick() {
  MutexLock lock(&mu_);
  ++stats_.ticks;
  const uint64_t before = pending_.total();
  pending_time_ns_ += static_cast<double>(sampler_->Drain(&pending_));
  stats_.samples += pending_.total() - before;
  if (pending_.total() < options_.min_samples) return false;
  SizeHistogram sizes = std::move(pending_);
  pending_ = SizeHistogram();
  const double p_ns = pending_time_ns_ / sizes.total();
  pending_time_ns_ = 0;
  stats_.last_server_time_ns = p_ns;
  absl::StatusOr<Selection> best = Select(profile_, sizes, p_ns);
  if (!best.ok()) return false;
  const Candidate cur =
      Score(profile_, sizes, stats_.retries, stats_.fetch_size, p_ns);
  stats_.last_gain = cur.score > 0 ? best->score / cur.score - 1 : 0;
  if (best->retries == stats_.retries && best->fetch_size == stats_.fetch_size) {
    return false;
  }
  if (stats_.last_gain <= options_.min_gain) return false;
  if (channel_ != nullptr) {
    absl::Status s = channel_->SetFetchParams(best->retries, best->fetch_size);
    if (!s.ok()) {
      LOG(WARNING) << "R/F tuner: SetFetchParams(" << best->retries << ", "
                   << best->fetch_size << ") failed: " << s;
      return false;
    }
  }
  stats_.retries = best->retries;
  stats_.fetch_size = best->fetch_size;
  ++stats_.reselections;
  return true;
}

OnlineTunerStats OnlineTuner::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void OnlineTuner::TimerLoop() {
  MutexLock lock(&mu_);
  while (!stop_) {
    const absl::Time next = absl::Now() + options_.interval;
    while (!stop_ && absl::Now() < next) {
      mu_.AwaitWithTimeout(&stop_cv_, next - absl::Now(),
                           [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return stop_; });
    }
    if (stop_) break;
    mu_.Unlock();
    Tick();
    mu_.Lock();
  }
}

}  // namespace tuner
}  // namespace rfrpc
