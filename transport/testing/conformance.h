// Copyright 2026 The rfrpc Authors.
//
// The provider conformance suite: one parameterized gtest suite that every
// transport provider must pass. It is provider-agnostic: it uses only
// transport.h, transport/bootstrap.h, transport/auth_token.h (to state the
// auth token refusals every provider must give) and the handshake proto,
// and reaches a Listener's address over a raw Unix or TCP socket for the
// bad-handshake cases.
//
// A provider's test instantiates it (the suite has no main; link
// //third_party:gtest_main):
//
//   INSTANTIATE_TEST_SUITE_P(
//       Shm, TransportConformanceTest,
//       ::testing::Values(ConformanceParam{
//           .provider = "shm",
//           .peer_binary = "transport/shm/shm_conformance_peer",
//           .liveness_bound = absl::Milliseconds(100)}),
//       ConformanceParamName);
//
// The peer-process cases fork+exec `peer_binary` (a runfiles-relative path to
// a cc_binary built from conformance_peer_main.cc plus the provider), which
// connects to the test's listener, exposes memory, and waits to be killed.

#ifndef RFRPC_TRANSPORT_TESTING_CONFORMANCE_H_
#define RFRPC_TRANSPORT_TESTING_CONFORMANCE_H_

#include <ostream>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace testing {

struct ConformanceParam {
  // Provider::Open name.
  std::string provider;
  ProviderOptions options;
  // Where listeners listen ("" for shm; "10.11.0.1:0" for verbs in the VM).
  std::string listen_address;
  // Runfiles-relative path of the provider's conformance peer binary; empty
  // skips the two-process cases.
  std::string peer_binary;
  // Longest a side may take to notice that its peer process died. The suite
  // requires at most 2 s of every provider; shm promises 500 ms.
  absl::Duration liveness_bound = absl::Seconds(2);
};

void PrintTo(const ConformanceParam& param, std::ostream* os);

std::string ConformanceParamName(
    const ::testing::TestParamInfo<ConformanceParam>& info);

class TransportConformanceTest
    : public ::testing::TestWithParam<ConformanceParam> {};

}  // namespace testing
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_TESTING_CONFORMANCE_H_
