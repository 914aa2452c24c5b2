// Copyright 2026 The rfrpc Authors.
//
// On a machine without an RDMA device (every build host here: the kernel has
// no RDMA support), opening the verbs provider must fail cleanly with
// UNAVAILABLE and "auto" must fall back or say why. Skipped where a device
// exists (e.g. inside the Soft-RoCE VM).

#include <infiniband/verbs.h>

#include <memory>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_provider.h"

namespace rfrpc {
namespace transport {
namespace {

using ::testing::HasSubstr;

bool HaveRdmaDevice() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list != nullptr) ibv_free_device_list(list);
  return list != nullptr && n > 0;
}

class VerbsUnavailableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (HaveRdmaDevice()) GTEST_SKIP() << "an RDMA device exists here";
  }
};

TEST_F(VerbsUnavailableTest, OpenVerbsReturnsUnavailable) {
  absl::StatusOr<std::unique_ptr<Provider>> p = Provider::Open("verbs", {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnavailable) << p.status();
  EXPECT_THAT(p.status().message(), HasSubstr("no RDMA device found ("));
}

TEST_F(VerbsUnavailableTest, OpenVerbsDirectlyWithOptionsReturnsUnavailable) {
  ProviderOptions options;
  options.device = "rxe0";
  options.gid_index = 1;
  absl::StatusOr<std::unique_ptr<Provider>> p =
      verbs::OpenVerbsProvider(options);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kUnavailable) << p.status();
  EXPECT_THAT(p.status().message(), HasSubstr("no RDMA device found"));
}

TEST_F(VerbsUnavailableTest, AutoFallsBackOrSaysWhy) {
  absl::StatusOr<std::unique_ptr<Provider>> p = Provider::Open("auto", {});
  if (p.ok()) {
    // A fallback provider (shm) is linked in.
    EXPECT_EQ((*p)->name(), "shm");
  } else {
    // Only verbs is linked into this test: no fallback, and a clear error.
    EXPECT_EQ(p.status().code(), absl::StatusCode::kUnavailable)
        << p.status();
    EXPECT_THAT(p.status().message(), HasSubstr("no provider"));
  }
}

TEST(VerbsRegistryTest, UnknownProviderIsInvalidArgumentNamingVerbs) {
  absl::StatusOr<std::unique_ptr<Provider>> p = Provider::Open("nope", {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("verbs"));
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc
