// Copyright 2026 The rfrpc Authors.

#include "flags/flagfile_check.h"

#include <fnmatch.h>

#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gflags/gflags.h"

namespace rfrpc {
namespace tools {
namespace {

// Whether `name` is a flag here; "nofoo" counts for a boolean foo.
bool Defined(const std::string& name) {
  gflags::CommandLineFlagInfo info;
  if (gflags::GetCommandLineFlagInfo(name.c_str(), &info)) return true;
  return absl::StartsWith(name, "no") &&
         gflags::GetCommandLineFlagInfo(name.substr(2).c_str(), &info) &&
         info.type == "bool";
}

absl::Status CheckFile(const std::string& path, absl::string_view program,
                       int depth) {
  if (depth > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("--flagfile: ", path, ": nested too deep"));
  }
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--flagfile: cannot read ", path));
  }
  const std::string prog(program);
  bool applies = true;  // Until a program-name line says otherwise.
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l[0] == '#') continue;
    if (l[0] != '-') {
      // Program-name globs, space-separated: the flags below apply to a
      // program whose base name matches one of them.
      applies = false;
      for (absl::string_view glob :
           absl::StrSplit(l, ' ', absl::SkipWhitespace())) {
        if (fnmatch(std::string(glob).c_str(), prog.c_str(), 0) == 0) {
          applies = true;
        }
      }
      continue;
    }
    if (!applies) continue;
    absl::string_view flag = l.substr(l[1] == '-' ? 2 : 1);
    const size_t eq = flag.find('=');
    const std::string name(flag.substr(0, eq));
    if (name == "flagfile" && eq != absl::string_view::npos) {
      for (absl::string_view f :
           absl::StrSplit(flag.substr(eq + 1), ',', absl::SkipEmpty())) {
        if (absl::Status s = CheckFile(std::string(f), program, depth + 1);
            !s.ok()) {
          return s;
        }
      }
      continue;
    }
    if (!Defined(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--flagfile: ", path, ":", n, ": unknown flag --", name,
                       " (not a flag of ", prog, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckFlagfile(const std::string& path, absl::string_view program) {
  return CheckFile(path, program, 0);
}

absl::Status CheckFlagfiles(absl::string_view argv0) {
  std::string files;
  if (!gflags::GetCommandLineOption("flagfile", &files) || files.empty()) {
    return absl::OkStatus();
  }
  const size_t slash = argv0.rfind('/');
  const absl::string_view program =
      slash == absl::string_view::npos ? argv0 : argv0.substr(slash + 1);
  for (absl::string_view f : absl::StrSplit(files, ',', absl::SkipEmpty())) {
    if (absl::Status s = CheckFlagfile(std::string(f), program); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace tools
}  // namespace rfrpc
