// Copyright 2026 The rfrpc Authors.
//
// Runs protoc-gen-rfrpc on representative protos and compares its output with
// the checked-in files under codegen/testdata/golden/. After an intended
// change to the generated code, regenerate them (see codegen/README.md):
//
//   RFRPC_UPDATE_GOLDEN=1 bazel run //codegen:golden_file_test

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "codegen/protoc_runner.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace codegen {
namespace {

struct GoldenCase {
  const char* proto;   // Relative to the workspace root.
  const char* golden;  // Basename in codegen/testdata/golden/.
};

constexpr GoldenCase kCases[] = {
    {"proto/echo.proto", "echo"},
    {"codegen/testdata/nested_package.proto", "nested_package"},
    {"codegen/testdata/no_package.proto", "no_package"},
    {"codegen/testdata/names.proto", "names"},
    {"codegen/testdata/imports.proto", "imports"},
    {"codegen/testdata/handlers.proto", "handlers"},
};

std::string StripProto(absl::string_view proto) {
  proto.remove_suffix(absl::string_view(".proto").size());
  return std::string(proto);
}

// With RFRPC_UPDATE_GOLDEN set under `bazel run`, writes `contents` to the
// workspace's golden file instead of comparing. Returns whether it did.
bool MaybeUpdateGolden(const std::string& golden_path,
                       const std::string& contents) {
  const char* update = std::getenv("RFRPC_UPDATE_GOLDEN");
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (update == nullptr || workspace == nullptr) return false;
  const std::string path = absl::StrCat(workspace, "/", golden_path);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  EXPECT_TRUE(out.good()) << "cannot write " << path;
  std::cerr << "updated " << path << "\n";
  return true;
}

class GoldenFileTest : public testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenFileTest, GeneratedFilesMatchGolden) {
  const GoldenCase& c = GetParam();
  const std::string out_dir = MakeTempDir();
  ASSERT_FALSE(out_dir.empty());
  ProtocResult result = RunRfrpcPlugin({c.proto}, "", out_dir);
  ASSERT_EQ(result.exit_code, 0) << result.stderr_text;

  for (const char* ext : {".rfrpc.h", ".rfrpc.cc"}) {
    const std::string generated_path =
        absl::StrCat(out_dir, "/", StripProto(c.proto), ext);
    absl::StatusOr<std::string> generated = ReadFile(generated_path);
    ASSERT_TRUE(generated.ok()) << generated.status();
    const std::string golden_path =
        absl::StrCat("codegen/testdata/golden/", c.golden, ext, ".golden");
    if (MaybeUpdateGolden(golden_path, *generated)) continue;
    absl::StatusOr<std::string> golden = ReadFile(golden_path);
    ASSERT_TRUE(golden.ok()) << golden.status();
    EXPECT_EQ(*generated, *golden)
        << generated_path << " differs from " << golden_path
        << "; if the change is intended, regenerate with\n"
           "  RFRPC_UPDATE_GOLDEN=1 bazel run //codegen:golden_file_test";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Protos, GoldenFileTest, testing::ValuesIn(kCases),
    [](const testing::TestParamInfo<GoldenCase>& info) {
      return std::string(info.param.golden);
    });

}  // namespace
}  // namespace codegen
}  // namespace rfrpc
