// Copyright 2026 The rfrpc Authors.

#include "tests/test_service.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rfrpc {
namespace testing {

std::string ExpectedPayload(uint64_t id, size_t size) {
  std::string s(size, '\0');
  uint64_t x = id * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[i] = static_cast<char>(x);
  }
  return s;
}

TestService::TestService() : Service("rfrpc.testing.Test") {
  AddMethod("Echo",
            std::make_unique<internal::UnaryHandler<TestService, TestRequest,
                                                    TestResponse>>(
                this, &TestService::Echo));
  AddMethod("EchoAgain",
            std::make_unique<internal::UnaryHandler<TestService, TestRequest,
                                                    TestResponse>>(
                this, &TestService::Echo));
}

absl::Status TestService::Echo(ServerContext* ctx, const TestRequest* req,
                               TestResponse* resp) {
  if (req->delay_ns() > 0) {
    const int64_t until = absl::GetCurrentTimeNanos() + req->delay_ns();
    while (absl::GetCurrentTimeNanos() < until) {
    }
  }
  if (req->sleep_ms() > 0) absl::SleepFor(absl::Milliseconds(req->sleep_ms()));
  if (!req->throw_message().empty()) throw std::runtime_error(req->throw_message());
  if (req->abort_process()) std::abort();
  if (req->fail_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(req->fail_code()),
                        "asked to fail");
  }
  resp->set_id(req->id());
  resp->set_worker(static_cast<uint32_t>(ctx->worker()));
  if (req->response_size() > 0) {
    resp->set_payload(ExpectedPayload(req->id(), req->response_size()));
  } else {
    resp->set_payload(req->payload());
  }
  return absl::OkStatus();
}

std::string Provider() {
  const char* p = std::getenv("RFRPC_TEST_PROVIDER");
  return p != nullptr ? p : "shm";
}

std::string ListenAddress() {
  const char* a = std::getenv("RFRPC_TEST_ADDRESS");
  return a != nullptr ? a : "";
}

PeerProcess::PeerProcess(const std::string& role, const std::string& address) {
  int fds[2];
  if (::pipe(fds) != 0) return;
  const char* env = std::getenv("RFRPC_RPC_PEER");
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const std::string bin =
      env != nullptr ? env
                     : absl::StrCat(srcdir != nullptr ? srcdir : ".",
                                    "/rfrpc/tests/rpc_peer");
  const std::string a1 = "--role=" + role;
  const std::string a2 = "--address=" + address;
  const std::string a3 = "--provider=" + Provider();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::execl(bin.c_str(), bin.c_str(), a1.c_str(), a2.c_str(), a3.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  out_ = ::fdopen(fds[0], "r");
}

PeerProcess::~PeerProcess() {
  Kill();
  if (out_ != nullptr) std::fclose(out_);
}

std::string PeerProcess::Line() {
  char buf[512];
  if (out_ == nullptr || std::fgets(buf, sizeof(buf), out_) == nullptr) return "";
  std::string s(buf);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

void PeerProcess::Kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    Reap();
  }
}

int PeerProcess::Reap() {
  int status = 0;
  if (pid_ > 0) ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

bool WaitForCount(const std::atomic<int>& n, int target, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (n.load(std::memory_order_acquire) < target) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Microseconds(200));
  }
  return true;
}

absl::Status CallEcho(Channel* channel, ClientContext* ctx,
                      const TestRequest& req, TestResponse* resp) {
  static const uint32_t id = MethodId(kEchoMethod);
  return channel->Call(id, req, resp, ctx);
}

}  // namespace testing
}  // namespace rfrpc
