// Copyright 2026 The rfrpc Authors.
//
// Test helper: runs /usr/bin/protoc with protoc-gen-rfrpc from a test's
// runfiles, so tests exercise the real binary and plugin protocol.
//
//   ProtocResult r = RunRfrpcPlugin({"codegen/testdata/names.proto"}, "",
//                                   out_dir);
//   EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
//
// Paths are relative to the runfiles root, which Bazel makes the working
// directory of tests and of `bazel run`. Thread-compatible.

#ifndef RFRPC_CODEGEN_PROTOC_RUNNER_H_
#define RFRPC_CODEGEN_PROTOC_RUNNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rfrpc {
namespace codegen {

struct ProtocResult {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs `protoc -I. -I/usr/include --plugin=protoc-gen-rfrpc=...
// --rfrpc_out=<parameter>:<out_dir> <protos...>` (no "<parameter>:" when
// `parameter` is empty). `out_dir` must exist.
ProtocResult RunRfrpcPlugin(const std::vector<std::string>& protos,
                            const std::string& parameter,
                            const std::string& out_dir);

// A fresh directory under TEST_TMPDIR (or /tmp).
std::string MakeTempDir();

// The whole file, or NOT_FOUND.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace codegen
}  // namespace rfrpc

#endif  // RFRPC_CODEGEN_PROTOC_RUNNER_H_
