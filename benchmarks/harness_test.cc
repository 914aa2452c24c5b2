// Copyright 2026 The rfrpc Authors.

#include "benchmarks/harness.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/bench_util.h"
#include "gtest/gtest.h"
#include "rpc/options.h"
#include "rpc/server.h"

namespace rfrpc {
namespace bench {
namespace {

// A socket path short enough for sun_path ($TEST_TMPDIR is often not).
class SocketDir {
 public:
  SocketDir() {
    char tmpl[] = "/tmp/rfrpc-harness-test.XXXXXX";
    if (::mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~SocketDir() {
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  std::string Path(const std::string& name) const {
    return absl::StrCat(dir_, "/", name);
  }

 private:
  std::string dir_;
};

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// Exit after a server started (a bad flag found late, a channel that could
// not be created) runs no destructors: its listen socket used to stay.
TEST(HarnessDeathTest, ExitRemovesTheListenSocketOfAStartedServer) {
  const SocketDir dir;
  const std::string path = dir.Path("s.sock");
  ::unlink(path.c_str());
  EXPECT_EXIT(
      {
        ServerOptions options;
        options.provider = "shm";
        options.address = path;
        std::unique_ptr<Server> server = StartServer(options, {});
        if (!Exists(path)) std::_Exit(3);  // Not a file: nothing tested.
        Exit("channel", absl::InvalidArgumentError("late"));
      },
      ::testing::ExitedWithCode(2), "channel: INVALID_ARGUMENT: late");
  EXPECT_FALSE(Exists(path));
  ::unlink(path.c_str());
}

// A file at a remembered path that is not the server's socket (the server
// shut down; something else is there now) is left alone.
TEST(HarnessDeathTest, ExitLeavesAnotherFileAtTheSamePath) {
  const SocketDir dir;
  const std::string path = dir.Path("s.sock");
  ::unlink(path.c_str());
  EXPECT_EXIT(
      {
        ServerOptions options;
        options.provider = "shm";
        options.address = path;
        std::unique_ptr<Server> server = StartServer(options, {});
        server->Shutdown();
        server.reset();
        if (FILE* f = std::fopen(path.c_str(), "w")) std::fclose(f);
        Exit("flags", absl::InvalidArgumentError("late"));
      },
      ::testing::ExitedWithCode(2), "flags: INVALID_ARGUMENT: late");
  EXPECT_TRUE(Exists(path));
  ::unlink(path.c_str());
}

TEST(FlagCheckDeathTest, ServerFieldNamesTheFlag) {
  EXPECT_EXIT(FlagCheck()
                  .ServerField("--workers", 100000, &ServerOptions::workers)
                  .OrExit(),
              ::testing::ExitedWithCode(2),
              "flags: INVALID_ARGUMENT: --workers=100000: the server's "
              "workers 100000 is outside \\[1, 1024\\]");
  FlagCheck().ServerField("--workers", 4, &ServerOptions::workers).OrExit();
}

// An entry past what an int holds was "not an integer", as if mistyped.
TEST(FlagCheckDeathTest, ListEntriesOutOfRangeSaySo) {
  EXPECT_EXIT(FlagCheck().EachInRange("--sizes", "8,99999999999", 0, 1000000)
                  .OrExit(),
              ::testing::ExitedWithCode(2),
              "flags: INVALID_ARGUMENT: --sizes=8,99999999999: "
              "\"99999999999\" is out of range: must be in \\[0, 1000000\\]");
  EXPECT_EXIT(FlagCheck().EachInRange("--sizes", "8,-99999999999", 0, 1000000)
                  .OrExit(),
              ::testing::ExitedWithCode(2),
              "\"-99999999999\" is out of range: must be in \\[0, 1000000\\]");
  EXPECT_EXIT(
      FlagCheck().EachInRange("--sizes", "8,1e3", 0, 1000000).OrExit(),
      ::testing::ExitedWithCode(2),
      "flags: INVALID_ARGUMENT: --sizes=8,1e3: \"1e3\" is not an integer");
  EXPECT_EXIT(ParseInts("--ms", "1,99999999999"), ::testing::ExitedWithCode(2),
              "--ms: \"99999999999\" is out of range "
              "\\[-2147483648, 2147483647\\] \\(in \"1,99999999999\"\\)");
  EXPECT_EXIT(ParseInts("--ms", "1,x"), ::testing::ExitedWithCode(2),
              "--ms: \"x\" is not an integer \\(in \"1,x\"\\)");
}

TEST(FlagCheckDeathTest, ServerConnectionsAreBoundedByMaxConnections) {
  ServerOptions server;
  server.max_connections = 100;
  FlagCheck()
      .ServerConnections("--threads=4 x --connections=25", 100, server)
      .OrExit();
  EXPECT_EXIT(
      FlagCheck()
          .ServerConnections("--threads=1 x --connections=1000000000",
                             1000000000, server)
          .OrExit(),
      ::testing::ExitedWithCode(2),
      "flags: INVALID_ARGUMENT: --threads=1 x --connections=1000000000: "
      "1000000000 connections, above the server's max_connections 100 "
      "\\(--rfrpc_max_connections\\)");
}

}  // namespace
}  // namespace bench
}  // namespace rfrpc
