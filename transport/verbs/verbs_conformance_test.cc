// Copyright 2026 The rfrpc Authors.
//
// The provider conformance suite on verbs. Needs an RDMA device, so it runs
// inside the Soft-RoCE VM (tools/vm_suite.sh):
//
//   RFRPC_VERBS_ADDR=10.11.0.1:0 RFRPC_CONFORMANCE_PEER=<abs path of
//   verbs_conformance_peer> verbs_conformance_test
//
// Without a device every case skips (and fails with RFRPC_REQUIRE_VERBS=1).

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"
#include "transport/testing/conformance.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace testing {
namespace {

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

ConformanceParam VerbsParam() {
  ConformanceParam p;
  p.provider = "verbs";
  p.listen_address = Env("RFRPC_VERBS_ADDR", "10.11.0.1:0");
  p.peer_binary = Env("RFRPC_CONFORMANCE_PEER",
                      "transport/verbs/verbs_conformance_peer");
  p.liveness_bound = absl::Seconds(2);
  return p;
}

class VerbsGate : public ::testing::Environment {
 public:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Provider>> p = Provider::Open("verbs", {});
    if (!p.ok()) {
      if (std::getenv("RFRPC_REQUIRE_VERBS") != nullptr) {
        FAIL() << "RFRPC_REQUIRE_VERBS is set but: " << p.status();
      }
      GTEST_SKIP() << "no RDMA device here (" << p.status()
                   << "); this suite runs in the Soft-RoCE VM";
    }
  }
};

const ::testing::Environment* const kGate =
    ::testing::AddGlobalTestEnvironment(new VerbsGate);

INSTANTIATE_TEST_SUITE_P(Verbs, TransportConformanceTest,
                         ::testing::Values(VerbsParam()), ConformanceParamName);

}  // namespace
}  // namespace testing
}  // namespace transport
}  // namespace rfrpc
