// Copyright 2026 The rfrpc Authors.

#include "flags/flagfile_check.h"

#include <fstream>
#include <string>

#include "gflags/gflags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

DEFINE_int32(flagfile_check_test_n, 0, "A flag of this test.");
DEFINE_bool(flagfile_check_test_b, false, "A boolean flag of this test.");

namespace rfrpc {
namespace tools {
namespace {

using ::testing::HasSubstr;

std::string Write(const std::string& name, const std::string& text) {
  const std::string path =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") +
      "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(FlagfileCheckTest, KnownFlagsPass) {
  const std::string f =
      Write("ok.flags",
            "# tuned\n\n--flagfile_check_test_n=3\n-flagfile_check_test_b\n"
            "--noflagfile_check_test_b\n");
  EXPECT_TRUE(CheckFlagfile(f, "prog").ok());
}

TEST(FlagfileCheckTest, AnUnknownFlagIsAnErrorNamingFileAndLine) {
  const std::string f =
      Write("bad.flags", "--flagfile_check_test_n=3\n--totally_bogus=1\n");
  const absl::Status s = CheckFlagfile(f, "prog");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("bad.flags:2: unknown flag --totally_bogus"));
  // "no" only negates a boolean.
  const std::string g = Write("nonbool.flags", "--noflagfile_check_test_n\n");
  EXPECT_FALSE(CheckFlagfile(g, "prog").ok());
}

TEST(FlagfileCheckTest, FlagsForOtherProgramsAreSkippedAndNestedFilesRead) {
  const std::string inner = Write("inner.flags", "--also_bogus\n");
  const std::string f = Write(
      "progs.flags",
      "other_prog\n--bogus_for_other=1\nprog*\n--flagfile_check_test_n=1\n");
  EXPECT_TRUE(CheckFlagfile(f, "prog").ok());
  EXPECT_FALSE(CheckFlagfile(f, "other_prog").ok());
  const std::string outer = Write("outer.flags", "--flagfile=" + inner + "\n");
  const absl::Status s = CheckFlagfile(outer, "prog");
  EXPECT_THAT(std::string(s.message()), HasSubstr("unknown flag --also_bogus"));
  EXPECT_FALSE(CheckFlagfile("/nonexistent/x.flags", "prog").ok());
}

}  // namespace
}  // namespace tools
}  // namespace rfrpc
