// Copyright 2026 The rfrpc Authors.

#include "tests/kinds_service.h"

#include <stdexcept>
#include <utility>

#include "absl/time/clock.h"
#include "tests/test_service.h"

namespace rfrpc {
namespace testing {

KindsService::KindsService(int finishers) {
  for (int i = 0; i < finishers; ++i) {
    finishers_.emplace_back([this] { FinisherLoop(); });
  }
}

KindsService::~KindsService() {
  std::deque<Job> left;
  std::vector<Held> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    left.swap(jobs_);
    held.swap(held_);
    cv_.notify_all();
  }
  for (std::thread& t : finishers_) t.join();
  for (Job& j : left) j.done(absl::UnavailableError("service going away"));
  for (Held& h : held) h.done(absl::UnavailableError("service going away"));
}

absl::Status KindsService::Answer(ServerContext* ctx, const TestRequest& req,
                                  TestResponse* resp) {
  if (req.delay_ns() > 0) {
    const int64_t until = absl::GetCurrentTimeNanos() + req.delay_ns();
    while (absl::GetCurrentTimeNanos() < until) {
    }
  }
  if (req.sleep_ms() > 0) absl::SleepFor(absl::Milliseconds(req.sleep_ms()));
  if (req.fail_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(req.fail_code()),
                        "asked to fail");
  }
  resp->set_id(req.id());
  resp->set_worker(static_cast<uint32_t>(ctx->worker()));
  resp->set_deadline_left_us(
      ctx->deadline() == absl::InfiniteFuture()
          ? -1
          : absl::ToInt64Microseconds(ctx->deadline() - ctx->arrival()));
  if (req.response_size() > 0) {
    resp->set_payload(ExpectedPayload(req.id(), req.response_size()));
  } else {
    resp->set_payload(req.payload());
  }
  return absl::OkStatus();
}

namespace {

// A sync or offloaded handler that waits for its call to be cancelled.
absl::Status WaitForCancel(ServerContext* ctx, std::atomic<int>* seen) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!ctx->IsCancelled() && absl::Now() < give_up) {
    absl::SleepFor(absl::Microseconds(100));
  }
  if (!ctx->IsCancelled()) return absl::DeadlineExceededError("never cancelled");
  seen->fetch_add(1);
  return absl::CancelledError("the handler saw its call cancelled");
}

}  // namespace

absl::Status KindsService::Fast(ServerContext* ctx, const TestRequest* request,
                                TestResponse* response) {
  fast_runs_.fetch_add(1);
  if (request->async_mode() == kUntilCancel) {
    return WaitForCancel(ctx, &cancels_seen_);
  }
  return Answer(ctx, *request, response);
}

absl::Status KindsService::Slow(ServerContext* ctx, const TestRequest* request,
                                TestResponse* response) {
  slow_runs_.fetch_add(1);
  if (request->async_mode() == kUntilCancel) {
    return WaitForCancel(ctx, &cancels_seen_);
  }
  return Answer(ctx, *request, response);
}

void KindsService::Later(ServerContext* ctx, const TestRequest* request,
                         TestResponse* response, ServerDone done) {
  switch (request->async_mode()) {
    case kInline:
      done(Answer(ctx, *request, response));
      return;
    case kTwice:
      done(Answer(ctx, *request, response));
      done(absl::InternalError("the second done must be ignored"));
      return;
    case kDrop:
      return;
    case kThrow:
      throw std::runtime_error("asked to throw");
    case kHold: {
      std::lock_guard<std::mutex> lock(mu_);
      held_.push_back(Held{ctx, request, response, std::move(done)});
      cv_.notify_all();
      return;
    }
    default: {  // kThread, kUntilCancel.
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) {
        done(absl::UnavailableError("service going away"));
        return;
      }
      jobs_.push_back(Job{ctx, request, response, std::move(done)});
      cv_.notify_all();
      return;
    }
  }
}

void KindsService::FinisherLoop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    if (job.request->async_mode() == kUntilCancel) {
      const absl::Time give_up = absl::Now() + absl::Seconds(10);
      while (!job.ctx->IsCancelled() && absl::Now() < give_up) {
        absl::SleepFor(absl::Microseconds(100));
      }
      if (job.ctx->IsCancelled()) cancels_seen_.fetch_add(1);
      job.done(absl::CancelledError("the handler saw its call cancelled"));
      continue;
    }
    if (job.request->finish_after_us() > 0) {
      absl::SleepFor(absl::Microseconds(job.request->finish_after_us()));
    }
    job.done(Answer(job.ctx, *job.request, job.response));
  }
}

std::vector<KindsService::Held> KindsService::TakeHeld() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Held> out;
  out.swap(held_);
  return out;
}

int KindsService::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(held_.size());
}

bool KindsService::WaitHeld(int n) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::seconds(10),
                      [&] { return static_cast<int>(held_.size()) >= n; });
}

}  // namespace testing
}  // namespace rfrpc
