// Copyright 2026 The rfrpc Authors.
//
// KindsService: the Kinds service of tests/kinds_service.proto, one method
// per handler kind, for scenario tests and benchmarks of async and offloaded
// handlers. Every method echoes (id, payload or ExpectedPayload of
// response_size bytes, the worker, the deadline it saw) after TestService's
// delay_ns / sleep_ms / fail_code; Later finishes as async_mode says:
//
//   kInline       done() before the handler returns (the worker's fast path)
//   kThread       on a finisher thread, after finish_after_us
//   kHold         kept until the test takes it (TakeHeld) and finishes it
//   kTwice        done() twice (the second is misuse: logged, ignored)
//   kDrop         never calls done (the server finishes it with INTERNAL)
//   kUntilCancel  a finisher thread waits for ServerContext::IsCancelled()
//                 (up to 10 s), counts it, and finishes with CANCELLED
//   kThrow        throws before calling done
//
// Fast and Slow with kUntilCancel poll IsCancelled() themselves (a sync
// handler reads its slot's cancel word; an offloaded one sees what the
// worker saw) and return CANCELLED.
//
// Thread safety: thread-safe; the finisher threads stop in the destructor
// (after finishing what they hold with UNAVAILABLE), so destroy the service
// after the server's Shutdown.

#ifndef RFRPC_TESTS_KINDS_SERVICE_H_
#define RFRPC_TESTS_KINDS_SERVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "rpc/service.h"
#include "tests/kinds_service.rfrpc.h"

namespace rfrpc {
namespace testing {

enum AsyncMode : uint32_t {
  kInline = 0,
  kThread = 1,
  kHold = 2,
  kTwice = 3,
  kDrop = 4,
  kUntilCancel = 5,
  kThrow = 6,
};

class KindsService final : public Kinds::Service {
 public:
  // A call kept by kHold: everything its handler got.
  struct Held {
    ServerContext* ctx;
    const TestRequest* request;
    TestResponse* response;
    ServerDone done;
  };

  // `finishers` threads serve kThread and kUntilCancel.
  explicit KindsService(int finishers = 2);
  ~KindsService() override;

  absl::Status Fast(ServerContext* ctx, const TestRequest* request,
                    TestResponse* response) override;
  void Later(ServerContext* ctx, const TestRequest* request,
             TestResponse* response, ServerDone done) override;
  absl::Status Slow(ServerContext* ctx, const TestRequest* request,
                    TestResponse* response) override;

  // Fills `response` as every method does (the echo, the deadline seen).
  static absl::Status Answer(ServerContext* ctx, const TestRequest& request,
                             TestResponse* response);

  // The calls kHold kept so far (taken out).
  std::vector<Held> TakeHeld();
  int held() const;
  // Waits until `n` calls are held (or 10 s pass); returns whether they are.
  bool WaitHeld(int n) const;
  // kUntilCancel calls (any method) whose handler saw IsCancelled().
  int cancels_seen() const { return cancels_seen_.load(); }
  // Calls whose Slow handler ran.
  int slow_runs() const { return slow_runs_.load(); }
  // Calls whose Fast handler started.
  int fast_runs() const { return fast_runs_.load(); }

 private:
  struct Job {
    ServerContext* ctx;
    const TestRequest* request;
    TestResponse* response;
    ServerDone done;
  };
  void FinisherLoop();

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Held> held_;
  bool stop_ = false;
  std::atomic<int> cancels_seen_{0};
  std::atomic<int> slow_runs_{0};
  std::atomic<int> fast_runs_{0};
  std::vector<std::thread> finishers_;
};

}  // namespace testing
}  // namespace rfrpc

#endif  // RFRPC_TESTS_KINDS_SERVICE_H_
