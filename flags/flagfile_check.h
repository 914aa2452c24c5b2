// Copyright 2026 The rfrpc Authors.
//
// gflags reports an unknown flag on the command line but ignores one in a
// --flagfile: a typo in a tuned flag file (rfrpc_tune select writes one)
// silently does nothing. And a flag file that names itself, directly or
// through others, sends gflags into a recursion that ends in a segmentation
// fault. CheckFlagfiles makes both an error, before gflags reads the files.
//
// Usage, right before gflags::ParseCommandLineFlags:
//
//   if (absl::Status s = rfrpc::tools::CheckFlagfiles(argc, argv); !s.ok()) {
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

// INVALID_ARGUMENT naming the file, line and flag if a file of a
// --flagfile on the command line (`--flagfile=F`, `-flagfile=F` or
// `--flagfile F`; a comma-separated list, as gflags reads it; arguments
// after "--" are not flags) sets a flag this program does not define, or if
// a file cannot be read, is a directory, or includes itself. Lines gflags
// skips are skipped: blank ones, comments ('#'), and flags under a
// program-name line that does not match `argv[0]`'s base name. Nested
// --flagfile lines are followed. Flags are looked up as registered (at
// static initialization), so this runs before gflags parses anything.
absl::Status CheckFlagfiles(int argc, char** argv);

// One file, for `program` (a base name).
absl::Status CheckFlagfile(const std::string& path, absl::string_view program);

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_FLAGFILE_CHECK_H_
