// Copyright 2026 The rfrpc Authors.
//
// gflags reports an unknown flag on the command line but ignores one in a
// --flagfile: a typo in a tuned flag file (rfrpc_tune select writes one)
// silently does nothing. A line without a leading '-' names the programs
// the flags below it apply to, so a typo'd or dash-less line silently
// drops every later flag. And a flag file that names itself, directly or
// through others, sends gflags into a recursion that ends in a segmentation
// fault. CheckFlagfiles makes these errors, before gflags reads the files
// (the second when no line of the file names this program).
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
// after "--" are not flags) sets a flag this program does not define, has
// program-name lines none of which names this program, or if a file cannot
// be read, is a directory, or includes itself. Blank lines and comments
// ('#') are skipped. A program-name line (no leading '-') holds
// space-separated globs; consecutive ones are one list, and the list names
// this program if a glob equals or fnmatch(FNM_PATHNAME)-matches argv[0] or
// its base name, as gflags matches. A file whose lists all name other
// programs is an error (none of its flags would be read: most often a typo
// in its first line, or a flag without its dashes); a file of sections for
// several programs, this one among them, is fine. Nested --flagfile lines
// are followed. Flags are looked up as registered (at static
// initialization), so this runs before gflags parses anything.
absl::Status CheckFlagfiles(int argc, char** argv);

// One file, for the program run as `argv0` (a path or a base name).
absl::Status CheckFlagfile(const std::string& path, absl::string_view argv0);

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_FLAGFILE_CHECK_H_
