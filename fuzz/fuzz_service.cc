// Copyright 2026 The rfrpc Authors.

#include "fuzz/fuzz_service.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace rfrpc {
namespace fuzz {

namespace {

// One thread that runs what it is given, in order; lives for the process.
class Finisher {
 public:
  static Finisher& Get() {
    static Finisher* f = new Finisher;
    return *f;
  }
  void Run(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(fn));
    cv_.notify_one();
  }

 private:
  Finisher() {
    std::thread([this] {
      for (;;) {
        std::function<void()> fn;
        {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return !queue_.empty(); });
          fn = std::move(queue_.front());
          queue_.pop_front();
        }
        fn();
      }
    }).detach();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};

}  // namespace

FuzzService::FuzzService() : Service("rfrpc.fuzz.Fuzz") {
  AddMethod("Echo",
            std::make_unique<internal::UnaryHandler<
                FuzzService, testing::TestRequest, testing::TestResponse>>(
                this, &FuzzService::Echo));
  AddMethod("Other",
            std::make_unique<internal::UnaryHandler<
                FuzzService, testing::NotATestRequest, testing::TestResponse>>(
                this, &FuzzService::Other));
  AddMethod("Later",
            std::make_unique<internal::AsyncUnaryHandler<
                FuzzService, testing::TestRequest, testing::TestResponse>>(
                this, &FuzzService::Later),
            MethodKind::kAsync);
}

void FuzzService::Later(ServerContext* ctx, const testing::TestRequest* req,
                        testing::TestResponse* resp, ServerDone done) {
  if (req->id() % 2 == 0) {
    done(Echo(ctx, req, resp));
    return;
  }
  Finisher::Get().Run([this, ctx, req, resp, done] {
    done(Echo(ctx, req, resp));
  });
}

absl::Status FuzzService::Echo(ServerContext* ctx,
                               const testing::TestRequest* req,
                               testing::TestResponse* resp) {
  if (req->fail_code() != 0) {
    // Any int, as a peer could send: the server must cope with codes outside
    // absl's enum.
    return absl::Status(static_cast<absl::StatusCode>(req->fail_code()),
                        "asked to fail");
  }
  resp->set_id(req->id());
  resp->set_worker(static_cast<uint32_t>(ctx->worker()));
  if (req->response_size() > 0) {
    const uint32_t n = req->response_size() < kMaxResponse
                           ? req->response_size()
                           : kMaxResponse;
    resp->set_payload(std::string(n, static_cast<char>('a' + req->id() % 26)));
  } else {
    resp->set_payload(req->payload());
  }
  return absl::OkStatus();
}

absl::Status FuzzService::Other(ServerContext* ctx,
                                const testing::NotATestRequest* req,
                                testing::TestResponse* resp) {
  resp->set_payload(req->text());
  return absl::OkStatus();
}

uint32_t PickMethodId(uint32_t selector) {
  switch (selector % 4) {
    case 0:
      return MethodId(kEchoMethod);
    case 1:
      return MethodId(kOtherMethod);
    case 2:
      return 0x12345678u;  // No such method: UNIMPLEMENTED.
    default:
      return MethodId(kLaterMethod);
  }
}

}  // namespace fuzz
}  // namespace rfrpc
