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
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "rpc/channel.h"
#include "rpc/service.h"
#include "tests/test_service.pb.h"

namespace rfrpc {
namespace testing {

inline constexpr char kEchoMethod[] = "/rfrpc.testing.Test/Echo";
// The same handler under a second name: a method of its own (e.g. a mode of
// its own in hybrid).
inline constexpr char kEchoAgainMethod[] = "/rfrpc.testing.Test/EchoAgain";

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

// The provider scenario tests run on: $RFRPC_TEST_PROVIDER, default "shm"
// (the Soft-RoCE VM suite sets "verbs").
std::string Provider();
// Where their servers listen: $RFRPC_TEST_ADDRESS, default "" (verbs in the
// VM: "10.11.0.1:0").
std::string ListenAddress();

// Built with AddressSanitizer or ThreadSanitizer (--config=asan, tsan),
// which make a call several times slower: timing verdicts that hold
// natively do not hold there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

// A child process running tests/rpc_peer (found through $RFRPC_RPC_PEER or
// the test's runfiles) with --role, --address and --provider=Provider(); its
// stdout is readable line by line. Killed (SIGKILL) and reaped on
// destruction.
class PeerProcess {
 public:
  PeerProcess(const std::string& role, const std::string& address);
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  bool started() const { return pid_ > 0; }
  // The next line of the peer's stdout, without the newline ("" at EOF).
  std::string Line();
  void Kill();
  // Waits for the process to end by itself; returns its wait status.
  int Reap();

 private:
  int pid_ = -1;
  FILE* out_ = nullptr;
};

// Calls Echo on `channel`.
absl::Status CallEcho(Channel* channel, ClientContext* ctx,
                      const TestRequest& req, TestResponse* resp);

}  // namespace testing
}  // namespace rfrpc

#endif  // RFRPC_TESTS_TEST_SERVICE_H_
