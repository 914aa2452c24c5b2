// Copyright 2026 The rfrpc Authors.

#include "codegen/protoc_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace rfrpc {
namespace codegen {

constexpr char kProtoc[] = "/usr/bin/protoc";
constexpr char kPlugin[] = "codegen/protoc-gen-rfrpc";

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tmpl = absl::StrCat(base != nullptr ? base : "/tmp",
                                  "/rfrpc_codegen_XXXXXX");
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

ProtocResult RunRfrpcPlugin(const std::vector<std::string>& protos,
                            const std::string& parameter,
                            const std::string& out_dir) {
  std::vector<std::string> args = {
      kProtoc,
      "-I.",
      "-I/usr/include",
      absl::StrCat("--plugin=protoc-gen-rfrpc=", kPlugin),
      absl::StrCat("--rfrpc_out=", parameter, parameter.empty() ? "" : ":",
                   out_dir),
  };
  args.insert(args.end(), protos.begin(), protos.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  ProtocResult result;
  const std::string stderr_path = absl::StrCat(out_dir, "/protoc.stderr");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO,
                                   stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  const int err =
      posix_spawn(&pid, kProtoc, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    result.stderr_text = absl::StrCat("posix_spawn failed: ", err);
    return result;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  absl::StatusOr<std::string> text = ReadFile(stderr_path);
  if (text.ok()) result.stderr_text = *std::move(text);
  unlink(stderr_path.c_str());
  return result;
}

}  // namespace codegen
}  // namespace rfrpc
