// Copyright 2026 The rfrpc Authors.

#include "benchmarks/harness.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gflags/gflags.h"
#include "glog/logging.h"

namespace rfrpc {
namespace bench {
namespace {

std::string& ProgramName() {
  static auto* name = new std::string("benchmark");
  return *name;
}

}  // namespace

void Init(int* argc, char*** argv) {
  gflags::ParseCommandLineFlags(argc, argv, true);
  google::InitGoogleLogging((*argv)[0]);
  const absl::string_view path = (*argv)[0];
  const size_t slash = path.rfind('/');
  ProgramName() = std::string(
      slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

void Exit(absl::string_view what, const absl::Status& status) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: %.*s: %s\n", ProgramName().c_str(),
               static_cast<int>(what.size()), what.data(),
               status.ToString().c_str());
  std::fflush(stderr);
  // No destructors: other threads may still be running.
  std::_Exit(2);
}

std::unique_ptr<Server> StartServer(const ServerOptions& options,
                                    std::initializer_list<Service*> services) {
  auto server = std::make_unique<Server>(options);
  for (Service* service : services) {
    OkOrExit(server->RegisterService(service), "server");
  }
  OkOrExit(server->Start(), "server");
  return server;
}

}  // namespace bench
}  // namespace rfrpc
