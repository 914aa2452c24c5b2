// Copyright 2026 The rfrpc Authors.

#include "flags/flagfile_check.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// The file `path` names, whatever the spelling ("f", "./f", a link).
std::string Canonical(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) return path;
  std::string r(real);
  std::free(real);
  return r;
}

// The part of `argv0` after its last '/'.
absl::string_view Basename(absl::string_view argv0) {
  const size_t slash = argv0.rfind('/');
  return slash == absl::string_view::npos ? argv0 : argv0.substr(slash + 1);
}

// Whether the program-name glob `glob` names the program run as `argv0`:
// as gflags decides it, equal to or fnmatch(FNM_PATHNAME)-matching argv0
// or its base name.
bool NamesProgram(const std::string& glob, absl::string_view argv0) {
  const std::string full(argv0);
  const std::string base(Basename(argv0));
  return glob == full || glob == base ||
         fnmatch(glob.c_str(), full.c_str(), FNM_PATHNAME) == 0 ||
         fnmatch(glob.c_str(), base.c_str(), FNM_PATHNAME) == 0;
}

// `chain`: the files that include this one, outermost first.
absl::Status CheckFile(const std::string& path, absl::string_view argv0,
                       std::vector<std::string>* chain) {
  const std::string self = Canonical(path);
  for (const std::string& f : *chain) {
    if (Canonical(f) == self) {
      return absl::InvalidArgumentError(
          absl::StrCat("--flagfile: ", path, " includes itself (",
                       absl::StrJoin(*chain, " -> "), " -> ", path, ")"));
    }
  }
  if (chain->size() >= 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("--flagfile: ", path, ": nested more than 16 files deep"));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--flagfile: ", path, " is a directory"));
  }
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("--flagfile: cannot read ", path));
  }
  // A line without a leading '-' names programs: the flags after it, up to
  // the next such line, apply only to a program it names (gflags: its words
  // are globs, matched against argv[0] and its base name; consecutive such
  // lines are one list). gflags skips the flags of a list that names
  // another program without a word, so a typo in a list (or a flag missing
  // its dashes) silently dropped every flag below it. A file whose lists
  // name other programs only is an error; a file of sections for several
  // programs, one of them this one, is read as gflags reads it.
  bool applies = true;       // Until a program-name line says otherwise.
  bool in_names = false;     // The last line read was a program-name line.
  bool names_us = false;     // Some list of the file names this program.
  int names_line = 0;        // The first line of the file's first list.
  std::string names_text;    // That line, for the message.
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l[0] == '#') continue;
    if (l[0] != '-') {
      if (!in_names) {
        in_names = true;
        applies = false;
      }
      if (names_line == 0) {
        names_line = n;
        names_text = std::string(l);
      }
      for (absl::string_view glob :
           absl::StrSplit(l, ' ', absl::SkipWhitespace())) {
        if (NamesProgram(std::string(glob), argv0)) applies = true;
      }
      names_us = names_us || applies;
      continue;
    }
    in_names = false;
    if (!applies) continue;
    absl::string_view flag = l.substr(l[1] == '-' ? 2 : 1);
    const size_t eq = flag.find('=');
    const std::string name(flag.substr(0, eq));
    if (name == "flagfile" && eq != absl::string_view::npos) {
      for (absl::string_view f :
           absl::StrSplit(flag.substr(eq + 1), ',', absl::SkipEmpty())) {
        chain->push_back(path);
        absl::Status s = CheckFile(std::string(f), argv0, chain);
        chain->pop_back();
        if (!s.ok()) return s;
      }
      continue;
    }
    if (!Defined(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--flagfile: ", path, ":", n, ": unknown flag --", name,
                       " (not a flag of ", Basename(argv0), ")"));
    }
  }
  if (names_line != 0 && !names_us) {
    const std::string base(Basename(argv0));
    return absl::InvalidArgumentError(absl::StrCat(
        "--flagfile: ", path, ":", names_line, ": '", names_text,
        "' is not a flag (a line without a leading '-' names the programs "
        "the following flags apply to, and no such line in ", path,
        " names ", base, ", so none of its flags would be read)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckFlagfile(const std::string& path, absl::string_view argv0) {
  std::vector<std::string> chain;
  return CheckFile(path, argv0, &chain);
}

absl::Status CheckFlagfiles(int argc, char** argv) {
  if (argc < 1) return absl::OkStatus();
  const absl::string_view argv0 = argv[0];
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;  // gflags stops here too.
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) {
      continue;
    }
    absl::string_view files;
    if (absl::ConsumePrefix(&arg, "flagfile=")) {
      files = arg;
    } else if (arg == "flagfile" && i + 1 < argc) {
      files = argv[++i];
    } else {
      continue;
    }
    for (absl::string_view f : absl::StrSplit(files, ',', absl::SkipEmpty())) {
      if (absl::Status s = CheckFlagfile(std::string(f), argv0); !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tools
}  // namespace rfrpc
