// Copyright 2026 The rfrpc Authors.

#include "flags/flagfile_check.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

TEST(FlagfileCheckTest, ProgramNameListsMustNameThisProgram) {
  // A list of programs that names this one (a glob, one word of several,
  // one line of several in a row, the full argv[0]): its flags are checked.
  for (const char* names :
       {"prog*", "other_prog prog", "other_prog\nprog", "/bin/prog", "/bin/*"}) {
    const std::string f =
        Write("progs.flags", absl::StrCat("--flagfile_check_test_n=1\n", names,
                                          "\n--flagfile_check_test_n=2\n"));
    EXPECT_TRUE(CheckFlagfile(f, "/bin/prog").ok()) << names;
    const std::string g =
        Write("progs_bad.flags", absl::StrCat(names, "\n--bogus_for_prog=1\n"));
    EXPECT_THAT(std::string(CheckFlagfile(g, "/bin/prog").message()),
                HasSubstr("unknown flag --bogus_for_prog"))
        << names;
  }
  // gflags matches with FNM_PATHNAME: '*' does not match a '/'.
  const std::string slash = Write("slash.flags", "*/prog\n--x\n");
  EXPECT_THAT(std::string(CheckFlagfile(slash, "/bin/prog").message()),
              HasSubstr("no such line in"));
  // A file whose lists name no other program than this one's: gflags skips
  // every flag after them, so a typo'd (or dash-less) line silently drops
  // them all.
  const std::string typo =
      Write("typo.flags",
            "# tuned\nflagfile_check_test_n=3\n--flagfile_check_test_b\n");
  absl::Status s = CheckFlagfile(typo, "/bin/prog");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            absl::StrCat("--flagfile: ", typo,
                         ":2: 'flagfile_check_test_n=3' is not a flag (a line "
                         "without a leading '-' names the programs the "
                         "following flags apply to, and no such line in ",
                         typo, " names prog, so none of its flags would be "
                         "read)"));
  for (const char* text : {"other_prog\n--bogus_for_other=1\n",
                           "--flagfile_check_test_n=1\nprogg\n",
                           "pro\n--flagfile_check_test_n=1\n"}) {
    const std::string f = Write("other.flags", text);
    EXPECT_THAT(std::string(CheckFlagfile(f, "prog").message()),
                HasSubstr("no such line in"))
        << text;
  }
  // Sections for several programs, this one among them, are read as gflags
  // reads them: another program's flags are skipped.
  const std::string shared = Write(
      "shared.flags",
      "other_prog\n--bogus_for_other=1\nprog*\n--flagfile_check_test_n=1\n");
  EXPECT_TRUE(CheckFlagfile(shared, "prog").ok());
  EXPECT_THAT(std::string(CheckFlagfile(shared, "other_prog").message()),
              HasSubstr("unknown flag --bogus_for_other"));
}

TEST(FlagfileCheckTest, NestedFilesAreRead) {
  const std::string inner = Write("inner.flags", "--also_bogus\n");
  const std::string outer = Write("outer.flags", "--flagfile=" + inner + "\n");
  const absl::Status s = CheckFlagfile(outer, "prog");
  EXPECT_THAT(std::string(s.message()), HasSubstr("unknown flag --also_bogus"));
  EXPECT_FALSE(CheckFlagfile("/nonexistent/x.flags", "prog").ok());
  // A program-name list in a nested file is checked against this program.
  const std::string named = Write("named.flags", "other\n--x\n");
  const std::string outer2 = Write("outer2.flags", "--flagfile=" + named + "\n");
  EXPECT_THAT(std::string(CheckFlagfile(outer2, "prog").message()),
              HasSubstr("named.flags:1: 'other' is not a flag"));
}

// gflags itself recurses until the stack overflows (a segmentation fault)
// on such files; the check must refuse them before it reads them.
TEST(FlagfileCheckTest, AFileThatIncludesItselfIsAnError) {
  const std::string self = Write("self.flags", "");
  Write("self.flags", "--flagfile=" + self + "\n");
  absl::Status s = CheckFlagfile(self, "prog");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("includes itself"));
  // Through another file, and under another spelling of the same path.
  const std::string a = Write("a.flags", "");
  const std::string b = Write("b.flags", "--flagfile=" + a + "\n");
  Write("a.flags", "--flagfile_check_test_n=1\n--flagfile=" +
                       b.substr(0, b.rfind('/')) + "/./b.flags\n");
  s = CheckFlagfile(a, "prog");
  EXPECT_THAT(std::string(s.message()), HasSubstr("includes itself"));
  // The same file twice side by side is no cycle.
  const std::string leaf = Write("leaf.flags", "--flagfile_check_test_n=2\n");
  const std::string twice =
      Write("twice.flags", "--flagfile=" + leaf + "," + leaf + "\n");
  EXPECT_TRUE(CheckFlagfile(twice, "prog").ok());
}

TEST(FlagfileCheckTest, ADirectoryIsAnError) {
  const std::string dir =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
  const absl::Status s = CheckFlagfile(dir, "prog");
  EXPECT_THAT(std::string(s.message()), HasSubstr("is a directory"));
}

// The files come from the command line, in each form gflags takes, before
// gflags has parsed it.
TEST(FlagfileCheckTest, FlagfilesAreFoundOnTheCommandLine) {
  const std::string bad = Write("cmd_bad.flags", "--totally_bogus=1\n");
  const std::string good =
      Write("cmd_good.flags", "--flagfile_check_test_n=1\n");
  auto check = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return CheckFlagfiles(static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_TRUE(check({"/bin/prog", "--flagfile=" + good}).ok());
  EXPECT_FALSE(check({"/bin/prog", "--flagfile=" + bad}).ok());
  EXPECT_FALSE(check({"/bin/prog", "-flagfile=" + bad}).ok());
  EXPECT_FALSE(check({"/bin/prog", "--flagfile", bad}).ok());
  EXPECT_FALSE(check({"/bin/prog", "--flagfile=" + good + "," + bad}).ok());
  // After "--" nothing is a flag.
  EXPECT_TRUE(check({"/bin/prog", "--", "--flagfile=" + bad}).ok());
  // Other flags and positional arguments are left alone.
  EXPECT_TRUE(check({"/bin/prog", "--flagfile_check_test_n=3", "x"}).ok());
  // The program name comes from argv[0]: a file only for "other" is
  // refused by prog, and its flags are checked for other.
  const std::string other =
      Write("cmd_other.flags", "other\n--totally_bogus=1\n");
  EXPECT_THAT(std::string(check({"/bin/prog", "--flagfile=" + other}).message()),
              HasSubstr("no such line in"));
  EXPECT_THAT(
      std::string(check({"/bin/other", "--flagfile=" + other}).message()),
      HasSubstr("unknown flag --totally_bogus"));
}

}  // namespace
}  // namespace tools
}  // namespace rfrpc
