// Copyright 2026 The rfrpc Authors.
//
// gflags reports an unknown flag on the command line but ignores one in a
// --flagfile: a typo in a tuned flag file (rfrpc_tune select writes one)
// silently does nothing. CheckFlagfiles makes it the same error.
//
// Usage, right after gflags::ParseCommandLineFlags:
//
//   if (absl::Status s = rfrpc::tools::CheckFlagfiles(argv[0]); !s.ok()) {
//     std::cerr << s.message() << "\n";
//     return 2;
//   }

#ifndef RFRPC_FLAGS_FLAGFILE_CHECK_H_
#define RFRPC_FLAGS_FLAGFILE_CHECK_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rfrpc {
namespace tools {

// INVALID_ARGUMENT naming the file, line and flag if a file of --flagfile
// (a comma-separated list, as gflags reads it) sets a flag this program
// does not define. Lines gflags skips are skipped: blank ones, comments
// ('#'), and flags under a program-name line that does not match `argv0`'s
// base name. Nested --flagfile lines are followed.
absl::Status CheckFlagfiles(absl::string_view argv0);

// One file, for `program` (a base name).
absl::Status CheckFlagfile(const std::string& path, absl::string_view program);

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_FLAGFILE_CHECK_H_
