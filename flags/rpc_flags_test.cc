// Copyright 2026 The rfrpc Authors.

#include "flags/rpc_flags.h"

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace tools {
namespace {

TEST(RpcFlagsTest, DefaultsAreTheLibraryDefaults) {
  gflags::FlagSaver saver;
  ChannelOptions c;
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  const ChannelOptions dc;
  EXPECT_EQ(c.mode, dc.mode);
  EXPECT_EQ(c.retries, dc.retries);
  EXPECT_EQ(c.fetch_size, dc.fetch_size);
  EXPECT_EQ(c.batch, dc.batch);
  EXPECT_EQ(c.batch_timeout, dc.batch_timeout);
  EXPECT_EQ(c.batch_idle_in_flight, dc.batch_idle_in_flight);
  EXPECT_EQ(c.latency_limit, dc.latency_limit);
  EXPECT_EQ(c.default_timeout, dc.default_timeout);
  EXPECT_EQ(c.adaptive_fetch_delay, dc.adaptive_fetch_delay);
  EXPECT_EQ(c.max_fetch_delay, dc.max_fetch_delay);
  EXPECT_EQ(c.fetch_delay_miss_target, dc.fetch_delay_miss_target);
  EXPECT_EQ(c.sizer_proportional_steps, dc.sizer_proportional_steps);
  EXPECT_EQ(c.sizer_holdoff_windows, dc.sizer_holdoff_windows);
  EXPECT_EQ(c.sizer_shrink_windows, dc.sizer_shrink_windows);
  EXPECT_EQ(c.sizer_min_window, dc.sizer_min_window);
  EXPECT_EQ(c.sizer_max_window, dc.sizer_max_window);
  EXPECT_EQ(c.sizer_window, dc.sizer_window);
  EXPECT_EQ(c.max_inline, dc.max_inline);
  EXPECT_EQ(c.signal_every, dc.signal_every);
  ServerOptions s;
  ASSERT_TRUE(ApplyServerFlags(&s).ok());
  const ServerOptions ds;
  EXPECT_EQ(s.pin_first_cpu, ds.pin_first_cpu);
  EXPECT_EQ(s.idle_park_after, ds.idle_park_after);
  EXPECT_EQ(s.hot_window, ds.hot_window);
  EXPECT_EQ(s.large_result_bytes, ds.large_result_bytes);
  EXPECT_TRUE(s.method_stats);
  EXPECT_EQ(s.blocking_threads, ds.blocking_threads);
  EXPECT_EQ(s.max_inline, ds.max_inline);
}

TEST(RpcFlagsTest, MapsFlagsOntoOptions) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("rfrpc_mode", "server_reply");
  gflags::SetCommandLineOption("rfrpc_retries", "3");
  gflags::SetCommandLineOption("rfrpc_fetch_size", "128");
  gflags::SetCommandLineOption("rfrpc_batch", "adaptive");
  gflags::SetCommandLineOption("rfrpc_batch_size", "32");
  gflags::SetCommandLineOption("rfrpc_batch_timeout_us", "20");
  gflags::SetCommandLineOption("rfrpc_batch_idle_in_flight", "0");
  gflags::SetCommandLineOption("rfrpc_auth_token", "s3cret");
  gflags::SetCommandLineOption("rfrpc_pin_first_cpu", "1");
  gflags::SetCommandLineOption("rfrpc_method_stats", "false");
  gflags::SetCommandLineOption("rfrpc_blocking_threads", "7");
  gflags::SetCommandLineOption("rfrpc_fetch_policy", "paper");
  gflags::SetCommandLineOption("rfrpc_sizer_rule", "paper");
  gflags::SetCommandLineOption("rfrpc_sizer_window", "100");
  gflags::SetCommandLineOption("rfrpc_max_fetch_delay_us", "7");
  gflags::SetCommandLineOption("rfrpc_fetch_miss_target", "0.25");
  gflags::SetCommandLineOption("rfrpc_max_inline", "64");
  gflags::SetCommandLineOption("rfrpc_signal_every", "8");
  ChannelOptions c;
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  EXPECT_EQ(c.mode, RpcMode::kServerReply);
  EXPECT_EQ(c.retries, 3);
  EXPECT_EQ(c.fetch_size, 128u);
  EXPECT_EQ(c.batch, BatchMode::kAdaptive);
  EXPECT_EQ(c.batch_size, 32);
  EXPECT_EQ(c.batch_timeout, absl::Microseconds(20));
  EXPECT_EQ(c.batch_idle_in_flight, 0);
  EXPECT_EQ(c.auth_token, "s3cret");
  EXPECT_FALSE(c.method_stats);
  EXPECT_FALSE(c.adaptive_fetch_delay);
  EXPECT_FALSE(c.sizer_proportional_steps);
  EXPECT_EQ(c.sizer_holdoff_windows, 0);
  EXPECT_EQ(c.sizer_shrink_windows, 1);
  EXPECT_EQ(c.sizer_min_window, absl::ZeroDuration());
  EXPECT_EQ(c.sizer_max_window, absl::ZeroDuration());
  EXPECT_FALSE(c.sizer_peak_guard);  // The paper's rule has none.
  EXPECT_EQ(c.sizer_window, 100);
  EXPECT_EQ(c.max_fetch_delay, absl::Microseconds(7));
  EXPECT_EQ(c.fetch_delay_miss_target, 0.25);
  EXPECT_EQ(c.max_inline, 64u);
  EXPECT_EQ(c.signal_every, 8);
  ServerOptions s;
  ASSERT_TRUE(ApplyServerFlags(&s).ok());
  EXPECT_EQ(s.max_inline, 64u);
  EXPECT_EQ(s.pin_first_cpu, 1);
  EXPECT_EQ(s.blocking_threads, 7);
  EXPECT_EQ(s.auth_token, "s3cret");
  EXPECT_FALSE(s.method_stats);
}

TEST(RpcFlagsTest, ThePeakGuardIsOnWithTheProportionalRuleUnlessTurnedOff) {
  gflags::FlagSaver saver;
  ChannelOptions c;
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  EXPECT_TRUE(c.sizer_peak_guard);
  gflags::SetCommandLineOption("rfrpc_sizer_peak_guard", "false");
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  EXPECT_FALSE(c.sizer_peak_guard);
  EXPECT_TRUE(c.sizer_proportional_steps);
}

// The flags are checked by ValidateChannelOptions, as Channel::Create and
// Jakiro's properties are: the same message, named by the flag. A bad
// value leaves the options as they were.
TEST(RpcFlagsTest, BadValuesGetTheLibrarysMessage) {
  struct Case {
    const char* flag;
    const char* value;
    void (*set)(ChannelOptions*);  // The same value, set directly.
  };
  const Case cases[] = {
      {"rfrpc_fetch_size", "8", [](ChannelOptions* o) { o->fetch_size = 8; }},
      {"rfrpc_slots", "5000",
       [](ChannelOptions* o) { o->slots_per_connection = 5000; }},
      {"rfrpc_batch_bytes", "10", [](ChannelOptions* o) { o->batch_bytes = 10; }},
      {"rfrpc_sizer_window", "0", [](ChannelOptions* o) { o->sizer_window = 0; }},
  };
  for (const Case& c : cases) {
    gflags::FlagSaver saver;
    gflags::SetCommandLineOption(c.flag, c.value);
    ChannelOptions options;
    options.fetch_size = 77;
    const absl::Status s = ApplyChannelFlags(&options);
    ChannelOptions bad;
    c.set(&bad);
    const absl::Status library = ValidateChannelOptions(bad);
    ASSERT_FALSE(library.ok()) << c.flag;
    EXPECT_EQ(s.message(), absl::StrCat("--", c.flag, ": ", library.message()));
    EXPECT_EQ(options.fetch_size, 77u) << "options untouched";
  }
}

TEST(RpcFlagsTest, RejectsBadValuesNamingTheFlag) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("rfrpc_mode", "telepathy");
  ChannelOptions c;
  absl::Status s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--rfrpc_mode"), absl::string_view::npos) << s;
  gflags::SetCommandLineOption("rfrpc_mode", "rf");
  gflags::SetCommandLineOption("rfrpc_latency_alpha", "1.5");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--rfrpc_latency_alpha"), absl::string_view::npos);
  gflags::SetCommandLineOption("rfrpc_latency_alpha", "0.05");
  gflags::SetCommandLineOption("rfrpc_retries", "0");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(), "--rfrpc_retries: retries 0 is below 1");
  gflags::SetCommandLineOption("rfrpc_retries", "5");
  gflags::SetCommandLineOption("rfrpc_fetch_policy", "eager");
  s = ApplyChannelFlags(&c);
  EXPECT_NE(s.message().find("--rfrpc_fetch_policy"), absl::string_view::npos) << s;
  gflags::SetCommandLineOption("rfrpc_fetch_policy", "paper");
  gflags::SetCommandLineOption("rfrpc_sizer_rule", "pid");
  s = ApplyChannelFlags(&c);
  EXPECT_NE(s.message().find("--rfrpc_sizer_rule"), absl::string_view::npos) << s;
  gflags::SetCommandLineOption("rfrpc_sizer_rule", "paper");
  gflags::SetCommandLineOption("rfrpc_signal_every", "65");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(),
            "--rfrpc_signal_every: signal_every 65 is outside [1, 64]");
  gflags::SetCommandLineOption("rfrpc_signal_every", "16");
  gflags::SetCommandLineOption("rfrpc_max_inline", "4096");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(),
            "--rfrpc_max_inline: max_inline 4096 is outside [0, 1024]");
  gflags::SetCommandLineOption("rfrpc_max_inline", "128");
  gflags::SetCommandLineOption("rfrpc_fetch_miss_target", "0.7");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(), "--rfrpc_fetch_miss_target: fetch_delay_miss_target "
                         "0.7 is outside (0, 0.5]");
  gflags::SetCommandLineOption("rfrpc_fetch_miss_target", "0.05");
  ServerOptions so;
  gflags::SetCommandLineOption("rfrpc_idle_spin_rounds", "-3");
  s = ApplyServerFlags(&so);
  EXPECT_EQ(s.message(), "--rfrpc_idle_spin_rounds: must be >= 0");
  gflags::SetCommandLineOption("rfrpc_idle_spin_rounds", "0");
  gflags::SetCommandLineOption("rfrpc_blocking_threads", "0");
  s = ApplyServerFlags(&so);
  EXPECT_EQ(s.message(), "--rfrpc_blocking_threads: must be >= 1");
}

}  // namespace
}  // namespace tools
}  // namespace rfrpc
