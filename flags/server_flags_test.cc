// Copyright 2026 The rfrpc Authors.

#include "flags/server_flags.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "rpc/option_knobs.h"
#include "rpc/options.h"

namespace rfrpc {
namespace tools {
namespace {

TEST(ServerFlagsTest, DefaultsAreTheLibraryDefaults) {
  gflags::FlagSaver saver;
  ServerOptions s;
  ASSERT_TRUE(ApplyServerFlags(&s).ok());
  const ServerOptions d;
  EXPECT_EQ(s.pin_first_cpu, d.pin_first_cpu);
  EXPECT_EQ(s.idle_spin_rounds, d.idle_spin_rounds);
  EXPECT_EQ(s.idle_park_after, d.idle_park_after);
  EXPECT_EQ(s.hot_window, d.hot_window);
  EXPECT_EQ(s.large_result_bytes, d.large_result_bytes);
  EXPECT_EQ(s.result_batch_bytes, d.result_batch_bytes);
  EXPECT_EQ(s.max_connections, d.max_connections);
  EXPECT_EQ(s.max_slots_per_connection, d.max_slots_per_connection);
  EXPECT_EQ(s.max_request_bytes, d.max_request_bytes);
  EXPECT_EQ(s.max_response_bytes, d.max_response_bytes);
  EXPECT_EQ(s.method_stats, d.method_stats);
  EXPECT_EQ(s.blocking_threads, d.blocking_threads);
  EXPECT_EQ(s.stall_warning, d.stall_warning);
  EXPECT_EQ(s.max_inline, d.max_inline);
  EXPECT_EQ(s.raise_fd_limit, d.raise_fd_limit);
  EXPECT_EQ(s.auth_token, d.auth_token);
  EXPECT_EQ(s.provider_options.device, d.provider_options.device);
  EXPECT_EQ(s.provider_options.gid_index, d.provider_options.gid_index);
}

// With no flag given, the options keep what the binary set.
TEST(ServerFlagsTest, FlagsNotGivenLeaveTheOptionsAlone) {
  gflags::FlagSaver saver;
  ServerOptions s;
  s.idle_spin_rounds = 100;
  s.hot_window = absl::ZeroDuration();
  s.max_request_bytes = 1 << 20;
  ASSERT_TRUE(ApplyServerFlags(&s).ok());
  EXPECT_EQ(s.idle_spin_rounds, 100);
  EXPECT_EQ(s.hot_window, absl::ZeroDuration());
  EXPECT_EQ(s.max_request_bytes, 1u << 20);
  gflags::SetCommandLineOption("rfrpc_idle_spin_rounds", "7");
  ASSERT_TRUE(ApplyServerFlags(&s).ok());
  EXPECT_EQ(s.idle_spin_rounds, 7);
  EXPECT_EQ(s.hot_window, absl::ZeroDuration());
}

TEST(ServerFlagsTest, MapsFlagsOntoOptions) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("rfrpc_pin_first_cpu", "1");
  gflags::SetCommandLineOption("rfrpc_method_stats", "false");
  gflags::SetCommandLineOption("rfrpc_blocking_threads", "7");
  gflags::SetCommandLineOption("rfrpc_max_inline", "64");
  gflags::SetCommandLineOption("rfrpc_auth_token", "s3cret");
  gflags::SetCommandLineOption("rfrpc_server_max_request_bytes", "1000");
  gflags::SetCommandLineOption("rfrpc_server_max_response_bytes", "2000");
  gflags::SetCommandLineOption("rfrpc_raise_fd_limit", "false");
  gflags::SetCommandLineOption("rfrpc_idle_park_after_us", "-1");
  gflags::SetCommandLineOption("rfrpc_max_connections", "10");
  gflags::SetCommandLineOption("rfrpc_stall_warning_ms", "0");
  gflags::SetCommandLineOption("rfrpc_gid_index", "3");
  ServerOptions s;
  ASSERT_TRUE(ApplyServerFlags(&s).ok());
  EXPECT_EQ(s.pin_first_cpu, 1);
  EXPECT_FALSE(s.method_stats);
  EXPECT_EQ(s.blocking_threads, 7);
  EXPECT_EQ(s.max_inline, 64u);
  EXPECT_EQ(s.auth_token, "s3cret");
  EXPECT_EQ(s.max_request_bytes, 1000u);
  EXPECT_EQ(s.max_response_bytes, 2000u);
  EXPECT_FALSE(s.raise_fd_limit);
  EXPECT_EQ(s.idle_park_after, absl::InfiniteDuration());
  EXPECT_EQ(s.max_connections, 10);
  EXPECT_EQ(s.stall_warning, absl::ZeroDuration());
  EXPECT_EQ(s.provider_options.gid_index, 3);
}

TEST(ServerFlagsTest, RejectsBadValuesNamingTheFlagAndChangesNothing) {
  const struct {
    const char* flag;
    const char* value;
    const char* message;
  } kCases[] = {
      // ValidateServerOptions' message, as Server::Start gives it.
      {"rfrpc_idle_spin_rounds", "-3",
       "--rfrpc_idle_spin_rounds: idle_spin_rounds -3 is below 0"},
      {"rfrpc_blocking_threads", "0",
       "--rfrpc_blocking_threads: blocking_threads 0 is outside [1, 65536]"},
      {"rfrpc_max_inline", "4096",
       "--rfrpc_max_inline: max_inline 4096 is outside [0, 1024]"},
      {"rfrpc_server_max_request_bytes", "0",
       "--rfrpc_server_max_request_bytes: max_request_bytes 0 is outside [1, "
       "1073741824]"},
      {"rfrpc_gid_index", "-2",
       "--rfrpc_gid_index: provider_options.gid_index -2 is outside [-1, "
       "65535]"},
      {"rfrpc_ib_port", "256",
       "--rfrpc_ib_port: provider_options.port 256 is outside [0, 255]"},
      {"rfrpc_hot_window_us", "-5",
       "--rfrpc_hot_window_us: hot_window -5us is negative"},
      {"rfrpc_stall_warning_ms", "-1",
       "--rfrpc_stall_warning_ms: stall_warning -1ms is negative"},
      {"rfrpc_idle_park_after_us", "-2",
       "--rfrpc_idle_park_after_us: idle_park_after -2us is negative"},
      {"rfrpc_max_slots_per_connection", "0",
       "--rfrpc_max_slots_per_connection: max_slots_per_connection 0 is "
       "outside [1, 4096]"},
  };
  for (const auto& c : kCases) {
    gflags::FlagSaver saver;
    ASSERT_FALSE(gflags::SetCommandLineOption(c.flag, c.value).empty())
        << c.flag;
    gflags::SetCommandLineOption("rfrpc_pin_first_cpu", "1");
    ServerOptions s;
    const absl::Status st = ApplyServerFlags(&s);
    EXPECT_EQ(st.message(), c.message);
    EXPECT_EQ(s.pin_first_cpu, ServerOptions().pin_first_cpu) << c.flag;
  }
}

// Every knob of ServerOptions has its flag, defaulting to the library's
// value.
TEST(ServerFlagsTest, EveryKnobHasAFlagWhoseDefaultIsTheLibrarys) {
  const ServerOptions d;
  for (const ServerKnob& k : ServerKnobs()) {
    const std::string flag = absl::StrCat("rfrpc_", k.name);
    gflags::CommandLineFlagInfo info;
    ASSERT_TRUE(gflags::GetCommandLineFlagInfo(flag.c_str(), &info)) << flag;
    // Through the knob, so "1" and "true" compare alike.
    ServerOptions from_flag;
    ASSERT_TRUE(k.set(info.default_value, &from_flag).ok()) << flag;
    EXPECT_EQ(k.get(from_flag), k.get(d)) << flag;
  }
}

// Server::Start makes the same check as the flags (ValidateServerOptions):
// a bad value set in code gets the same message.
TEST(ServerFlagsTest, TheLibraryGivesTheFlagsMessage) {
  ServerOptions so;
  so.idle_spin_rounds = -3;
  EXPECT_EQ(ValidateServerOptions(so).message(),
            "idle_spin_rounds -3 is below 0");
  so = ServerOptions();
  so.provider_options.port = 256;
  EXPECT_EQ(ValidateServerOptions(so).message(),
            "provider_options.port 256 is outside [0, 255]");
  EXPECT_TRUE(ValidateServerOptions(ServerOptions()).ok());
}

// A server binary lists only the server's flags (and the common ones).
TEST(ServerFlagsTest, ClientFlagsAreNotLinked) {
  gflags::CommandLineFlagInfo info;
  EXPECT_FALSE(gflags::GetCommandLineFlagInfo("rfrpc_retries", &info));
  EXPECT_FALSE(gflags::GetCommandLineFlagInfo("rfrpc_batch", &info));
  EXPECT_TRUE(gflags::GetCommandLineFlagInfo("rfrpc_method_stats", &info));
}

}  // namespace
}  // namespace tools
}  // namespace rfrpc
