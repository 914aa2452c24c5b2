// Copyright 2026 The rfrpc Authors.
//
// A hand-written rfrpc service for scenario tests (generated stubs are
// tested in codegen/). Echo returns the payload and id (or a payload of
// response_size bytes derived from the id), spinning delay_ns and sleeping
// sleep_ms first, or fails with fail_code, throws throw_message, or aborts
// the process (abort_process).

#ifndef RFRPC_TESTS_TEST_SERVICE_H_
#define RFRPC_TESTS_TEST_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "rpc/channel.h"
#include "rpc/service.h"
#include "tests/test_service.pb.h"

namespace rfrpc {
namespace testing {

inline constexpr char kEchoMethod[] = "/rfrpc.testing.Test/Echo";

// The payload a response of `size` bytes for request `id` carries.
std::string ExpectedPayload(uint64_t id, size_t size);

class TestService final : public Service {
 public:
  TestService();
  absl::Status Echo(ServerContext* ctx, const TestRequest* req,
                    TestResponse* resp);
};

// Waits until `n` reaches `target` (an acquire load, so what the counting
// threads wrote before their increments is visible) or `timeout` passes.
// Tests use it instead of absl::Notification, which ThreadSanitizer cannot
// see through in Debian's uninstrumented abseil.
bool WaitForCount(const std::atomic<int>& n, int target, absl::Duration timeout);

// Calls Echo on `channel`.
absl::Status CallEcho(Channel* channel, ClientContext* ctx,
                      const TestRequest& req, TestResponse* resp);

}  // namespace testing
}  // namespace rfrpc

#endif  // RFRPC_TESTS_TEST_SERVICE_H_
