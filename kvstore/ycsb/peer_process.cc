// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/peer_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

extern char** environ;

namespace rfrpc {
namespace ycsb {
namespace {

bool IsExecutable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

// A port the kernel just considered free on 127.0.0.1.
absl::StatusOr<int> PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::InternalError(error);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

bool Accepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok =
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

void Kill(pid_t pid) {
  kill(pid, SIGTERM);
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (absl::Now() < deadline) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) return;
    absl::SleepFor(absl::Milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

std::string FindExecutable(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    for (absl::string_view d : absl::StrSplit(path, ':')) {
      if (!d.empty()) dirs.emplace_back(d);
    }
  }
  for (const char* d : {"/usr/bin", "/usr/sbin", "/usr/local/bin"}) {
    dirs.emplace_back(d);
  }
  for (const std::string& d : dirs) {
    const std::string candidate = absl::StrCat(d, "/", name);
    if (IsExecutable(candidate)) return candidate;
  }
  return "";
}

absl::StatusOr<std::unique_ptr<PeerProcess>> PeerProcess::Start(
    const std::string& binary, const ArgsFn& args,
    absl::Duration ready_timeout) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/peerXXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  const std::string dir = pattern;
  std::string last_error;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<int> port = PickFreePort();
    if (!port.ok()) return port.status();
    std::vector<std::string> argv_strings = args(*port, dir);
    argv_strings.insert(argv_strings.begin(), binary);
    std::vector<char*> argv;
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    const int rc = posix_spawn(&pid, binary.c_str(), nullptr, nullptr,
                               argv.data(), environ);
    if (rc != 0) {
      return absl::InternalError(
          absl::StrCat("posix_spawn ", binary, ": ", std::strerror(rc)));
    }
    const absl::Time deadline = absl::Now() + ready_timeout;
    bool exited = false;
    while (absl::Now() < deadline) {
      if (Accepts(*port)) {
        return std::unique_ptr<PeerProcess>(new PeerProcess(pid, *port, dir));
      }
      int status;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        exited = true;
        last_error = absl::StrCat(binary, " exited early (status ", status,
                                  ") on port ", *port);
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    if (!exited) {
      Kill(pid);
      last_error = absl::StrCat(binary, " did not accept connections on port ",
                                *port, " within ", absl::FormatDuration(ready_timeout));
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return absl::UnavailableError(last_error);
}

PeerProcess::~PeerProcess() {
  Kill(pid_);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace ycsb
}  // namespace rfrpc
