// Copyright 2026 The rfrpc Authors.

#include "base/status_macros.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace rfrpc {
namespace {

absl::Status FailIf(bool fail, int* calls) {
  ++*calls;
  if (fail) return absl::InvalidArgumentError("asked to fail");
  return absl::OkStatus();
}

absl::Status TwoSteps(bool fail_first, int* calls) {
  RFRPC_RETURN_IF_ERROR(FailIf(fail_first, calls));
  RFRPC_RETURN_IF_ERROR(FailIf(false, calls));
  return absl::OkStatus();
}

TEST(ReturnIfErrorTest, PassesErrorThroughAndStops) {
  int calls = 0;
  absl::Status s = TwoSteps(/*fail_first=*/true, &calls);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "asked to fail");
  EXPECT_EQ(calls, 1);
}

TEST(ReturnIfErrorTest, ContinuesOnOk) {
  int calls = 0;
  EXPECT_TRUE(TwoSteps(/*fail_first=*/false, &calls).ok());
  EXPECT_EQ(calls, 2);
}

absl::StatusOr<std::unique_ptr<int>> MakeInt(int v) {
  if (v < 0) return absl::OutOfRangeError("negative");
  return std::make_unique<int>(v);
}

absl::StatusOr<int> Doubled(int v, int* evaluations) {
  ++*evaluations;
  RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<int> p, MakeInt(v));  // move-only
  return *p * 2;
}

TEST(AssignOrReturnTest, AssignsValue) {
  int evaluations = 0;
  absl::StatusOr<int> r = Doubled(21, &evaluations);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(evaluations, 1);
}

TEST(AssignOrReturnTest, ReturnsErrorAsOtherStatusOrType) {
  int evaluations = 0;
  absl::StatusOr<int> r = Doubled(-1, &evaluations);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(r.status().message(), "negative");
}

absl::Status AssignToExisting(std::string* out) {
  std::string value = "unset";
  RFRPC_ASSIGN_OR_RETURN(value, absl::StatusOr<std::string>("set"));
  // Two uses in one scope must not collide.
  RFRPC_ASSIGN_OR_RETURN(auto suffix, absl::StatusOr<std::string>("!"));
  *out = value + suffix;
  return absl::OkStatus();
}

TEST(AssignOrReturnTest, AssignsToExistingLvalueAndNests) {
  std::string out;
  ASSERT_TRUE(AssignToExisting(&out).ok());
  EXPECT_EQ(out, "set!");
}

int evaluated_once_counter = 0;
absl::StatusOr<int> CountedValue() {
  ++evaluated_once_counter;
  return 7;
}

absl::Status UseCounted(int* out) {
  RFRPC_ASSIGN_OR_RETURN(*out, CountedValue());
  return absl::OkStatus();
}

TEST(AssignOrReturnTest, EvaluatesExpressionOnce) {
  evaluated_once_counter = 0;
  int out = 0;
  ASSERT_TRUE(UseCounted(&out).ok());
  EXPECT_EQ(out, 7);
  EXPECT_EQ(evaluated_once_counter, 1);
}

}  // namespace
}  // namespace rfrpc
