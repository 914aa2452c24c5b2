// Copyright 2026 The rfrpc Authors.

#include "benchmarks/harness.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "benchmarks/bench_util.h"
#include "flags/provider_flag.h"
#include "flags/flagfile_check.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "transport/transport.h"


namespace rfrpc {
namespace bench {
namespace {

// 16777216 rather than 1.67772e+07.
std::string Num(double v) {
  if (std::fabs(v) < 1e15 && v == std::trunc(v)) {
    return absl::StrCat(static_cast<int64_t>(v));
  }
  return absl::StrCat(v);
}

std::string& ProgramName() {
  static auto* name = new std::string("benchmark");
  return *name;
}

// A started server's listen socket file, removed by Exit (which runs no
// destructors, so the listener's own unlink never happens). The inode tells
// it from a later file at the same path (the server shut down, another
// process listens there now).
struct SocketFile {
  std::string path;
  dev_t dev;
  ino_t ino;
};
std::mutex socket_files_mu;
std::vector<SocketFile>& SocketFiles() {
  static auto* files = new std::vector<SocketFile>;
  return *files;
}

// Remembers `address` if it names a Unix socket file (shm without '@');
// a verbs ip:port or an abstract name is no file.
void RememberSocketFile(const std::string& address) {
  struct stat st;
  if (address.empty() || address[0] == '@' ||
      ::lstat(address.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return;
  }
  std::lock_guard<std::mutex> lock(socket_files_mu);
  SocketFiles().push_back({address, st.st_dev, st.st_ino});
}

void RemoveSocketFiles() {
  std::lock_guard<std::mutex> lock(socket_files_mu);
  for (const SocketFile& f : SocketFiles()) {
    struct stat st;
    if (::lstat(f.path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_dev == f.dev && st.st_ino == f.ino) {
      ::unlink(f.path.c_str());
    }
  }
}

}  // namespace

void Init(int* argc, char*** argv) {
  const absl::string_view path = (*argv)[0];
  const size_t slash = path.rfind('/');
  ProgramName() = std::string(
      slash == absl::string_view::npos ? path : path.substr(slash + 1));
  gflags::SetUsageMessage(absl::StrCat(
      ProgramName(),
      " [--flag=value ...]: an rfrpc benchmark (benchmarks/README.md says "
      "what it measures). --helpshort lists its own flags; --helpmatch=flags/ "
      "the --rfrpc_* channel and server flags."));
  if (absl::Status s = tools::CheckFlagfiles(*argc, *argv); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    std::exit(2);
  }
  gflags::ParseCommandLineFlags(argc, argv, true);
  google::InitGoogleLogging((*argv)[0]);
  // Figures name the provider they ran on: "auto" is the one it opens.
  absl::StatusOr<std::string> provider =
      transport::Provider::ResolveName(FLAGS_provider);
  if (!provider.ok()) Exit("--provider=" + FLAGS_provider, provider.status());
  FLAGS_provider = *provider;
}

void RejectFlagsItSets(std::initializer_list<OwnFlag> flags) {
  for (const OwnFlag& f : flags) {
    gflags::CommandLineFlagInfo info;
    if (gflags::GetCommandLineFlagInfo(f.flag, &info) && !info.is_default) {
      Exit("flags", absl::InvalidArgumentError(absl::StrCat(
                        "--", f.flag, ": ", ProgramName(),
                        " sets this itself for each point; ", f.instead)));
    }
  }
}

void Exit(absl::string_view what, const absl::Status& status) {
  RemoveSocketFiles();
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %.*s: %s\n", ProgramName().c_str(),
               static_cast<int>(what.size()), what.data(),
               status.ToString().c_str());
  std::fflush(stderr);
  // No destructors: other threads may still be running.
  std::_Exit(2);
}

void FlagCheck::Fail(absl::string_view flag, double value,
                     absl::string_view want) {
  if (!status_.ok()) return;
  status_ = absl::InvalidArgumentError(
      absl::StrCat(flag, "=", Num(value), ": must be ", want));
}

FlagCheck& FlagCheck::AtLeast(absl::string_view flag, double value,
                              double min) {
  if (!(value >= min)) {
    Fail(flag, value, absl::StrCat(">= ", Num(min)));
  } else if (std::isinf(value)) {
    Fail(flag, value, "finite");
  }
  return *this;
}

FlagCheck& FlagCheck::Positive(absl::string_view flag, double value) {
  if (!(value > 0)) {
    Fail(flag, value, "> 0");
  } else if (std::isinf(value)) {
    Fail(flag, value, "finite");
  }
  return *this;
}

FlagCheck& FlagCheck::Seconds(absl::string_view flag, double value) {
  if (!(value > 0 && value <= kMaxSeconds)) {
    Fail(flag, value, absl::StrCat("in (0, ", Num(kMaxSeconds), "] seconds"));
  }
  return *this;
}

FlagCheck& FlagCheck::SecondsOrZero(absl::string_view flag, double value) {
  if (!(value >= 0 && value <= kMaxSeconds)) {
    Fail(flag, value, absl::StrCat("in [0, ", Num(kMaxSeconds), "] seconds"));
  }
  return *this;
}

FlagCheck& FlagCheck::InRange(absl::string_view flag, double value,
                              double min, double max) {
  if (!(value >= min && value <= max)) {
    Fail(flag, value, absl::StrCat("in [", Num(min), ", ", Num(max), "]"));
  }
  return *this;
}

FlagCheck& FlagCheck::EachInRange(absl::string_view flag,
                                  absl::string_view value, int min, int max) {
  for (absl::string_view p : absl::StrSplit(value, ',', absl::SkipEmpty())) {
    int v;
    if (!absl::SimpleAtoi(p, &v)) {
      if (status_.ok()) {
        status_ = absl::InvalidArgumentError(absl::StrCat(
            flag, "=", value, ": \"", p, "\" ",
            IsIntegerText(p) ? absl::StrCat("is out of range: must be in [",
                                            min, ", ", max, "]")
                             : "is not an integer"));
      }
      return *this;
    }
    InRange(flag, v, min, max);
  }
  return *this;
}

FlagCheck& FlagCheck::NotEmpty(absl::string_view flag,
                               absl::string_view value) {
  if (status_.ok() &&
      absl::StripAsciiWhitespace(absl::StrReplaceAll(value, {{",", ""}}))
          .empty()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(flag, " is empty: nothing to run"));
  }
  return *this;
}

FlagCheck& FlagCheck::ServerField(absl::string_view flag, int value,
                                  int ServerOptions::*field) {
  ServerOptions options;
  options.*field = value;
  std::string name;
  const absl::Status valid = ValidateServerOptions(options, &name);
  if (!valid.ok() && status_.ok()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(flag, "=", value, ": the server's ", valid.message()));
  }
  return *this;
}

FlagCheck& FlagCheck::ServerConnections(absl::string_view flags,
                                        int64_t connections,
                                        const ServerOptions& server) {
  if (status_.ok() && connections > server.max_connections) {
    status_ = absl::InvalidArgumentError(absl::StrCat(
        flags, ": ", connections, " connections, above the server's "
        "max_connections ", server.max_connections,
        " (--rfrpc_max_connections)"));
  }
  return *this;
}

std::unique_ptr<Server> StartServer(const ServerOptions& options,
                                    std::initializer_list<Service*> services) {
  auto server = std::make_unique<Server>(options);
  for (Service* service : services) {
    OkOrExit(server->RegisterService(service), "server");
  }
  OkOrExit(server->Start(), "server");
  RememberSocketFile(server->address());
  return server;
}

}  // namespace bench
}  // namespace rfrpc
