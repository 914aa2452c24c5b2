// Copyright 2026 The rfrpc Authors.

#include "flags/channel_flags.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "rpc/option_knobs.h"

namespace rfrpc {
namespace tools {
namespace {

std::string Dump(const ChannelOptions& o) {
  std::string out;
  for (const ChannelKnob& k : ChannelKnobs()) {
    absl::StrAppend(&out, k.name, "=", k.get(o), "\n");
  }
  return out;
}

// With no flag given, the options keep what the binary set, library
// default or not.
TEST(ChannelFlagsTest, FlagsNotGivenLeaveTheOptionsAlone) {
  gflags::FlagSaver saver;
  ChannelOptions c;
  c.fetch.delay_miss_target = 0.2;  // As Jakiro's client does.
  c.batching.mode = BatchMode::kAuto;
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  ChannelOptions expected;
  expected.fetch.delay_miss_target = 0.2;
  expected.batching.mode = BatchMode::kAuto;
  EXPECT_EQ(Dump(c), Dump(expected));
}

// Every knob has its flag, and each flag's default is the library's: set
// every flag explicitly to its own default and nothing moves.
TEST(ChannelFlagsTest, EveryKnobHasAFlagWhoseDefaultIsTheLibrarys) {
  gflags::FlagSaver saver;
  for (const ChannelKnob& k : ChannelKnobs()) {
    const std::string flag = absl::StrCat("rfrpc_", k.name);
    gflags::CommandLineFlagInfo info;
    ASSERT_TRUE(gflags::GetCommandLineFlagInfo(flag.c_str(), &info)) << flag;
    ASSERT_FALSE(
        gflags::SetCommandLineOption(flag.c_str(), info.default_value.c_str())
            .empty())
        << flag;
    ASSERT_TRUE(gflags::GetCommandLineFlagInfo(flag.c_str(), &info));
    ASSERT_FALSE(info.is_default) << flag;
  }
  ChannelOptions c;
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  EXPECT_EQ(Dump(c), Dump(ChannelOptions()));
}

// Each flag reaches its field: every knob set to a value off its default.
TEST(ChannelFlagsTest, MapsEveryFlagOntoItsField) {
  gflags::FlagSaver saver;
  const struct {
    const char* knob;
    const char* value;
  } kFlags[] = {
      {"mode", "server_reply"},
      {"retries", "3"},
      {"fetch_size", "128"},
      {"switch_after", "4"},
      {"switch_back_ratio", "0.5"},
      {"fetch_policy", "paper"},
      {"max_fetch_delay_us", "7"},
      {"fetch_miss_target", "0.25"},
      {"connections", "0"},
      {"slots", "16"},
      {"max_request_bytes", "512"},
      {"max_response_bytes", "1024"},
      {"rering_after_us", "300"},
      {"timeout_ms", "90"},
      {"connect_timeout_ms", "900"},
      {"auth_token", "s3cret"},
      {"max_inline", "64"},
      {"signal_every", "8"},
      {"post_lists", "false"},
      {"batch", "adaptive"},
      {"batch_size", "32"},
      {"batch_bytes", "4096"},
      {"batch_result_bytes", "128"},
      {"batch_timeout_us", "20"},
      {"batch_idle_in_flight", "0"},
      {"batch_sync_combine", "true"},
      {"batch_group", "8"},
      {"max_outstanding", "64"},
      {"latency_limit_us", "30"},
      {"latency_alpha", "0.1"},
      {"sizer_rule", "paper"},
      {"sizer_window", "100"},
      {"sizer_min_window_ms", "2"},
      {"sizer_max_window_ms", "20"},
      {"sizer_holdoff_windows", "3"},
      {"sizer_shrink_windows", "5"},
      {"sizer_peak_guard", "false"},
      {"sizer_grow_to", "0.6"},
      {"busy_wait", "true"},
      {"progress_thread", "false"},
      {"method_stats", "false"},
      {"device", "rxe0"},
      {"ib_port", "1"},
      {"gid_index", "2"},
      {"socket_dir", "/tmp/s"},
  };
  ASSERT_EQ(sizeof(kFlags) / sizeof(kFlags[0]), ChannelKnobs().size());
  for (const auto& f : kFlags) {
    ASSERT_FALSE(gflags::SetCommandLineOption(
                     absl::StrCat("rfrpc_", f.knob).c_str(), f.value)
                     .empty())
        << f.knob;
  }
  ChannelOptions c;
  const absl::Status s = ApplyChannelFlags(&c);
  ASSERT_TRUE(s.ok()) << s;
  const ChannelOptions defaults;
  for (const auto& f : kFlags) {
    const ChannelKnob* k = FindChannelKnob(f.knob);
    ASSERT_NE(k, nullptr) << f.knob;
    EXPECT_EQ(k->get(c), f.value) << f.knob;
    EXPECT_NE(k->get(c), k->get(defaults)) << f.knob;
  }
  EXPECT_EQ(c.batching.timeout, absl::Microseconds(20));
  EXPECT_EQ(c.rering_after, absl::Microseconds(300));
  EXPECT_FALSE(c.fetch.adaptive_delay);
  EXPECT_FALSE(c.post_lists);
  EXPECT_EQ(c.provider_options.device, "rxe0");
}

// The sizer rule sets several fields; the fields' own flags refine it.
TEST(ChannelFlagsTest, TheSizerRuleThenItsFields) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("rfrpc_sizer_rule", "paper");
  ChannelOptions c;
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  EXPECT_FALSE(c.batching.sizer.proportional_steps);
  EXPECT_EQ(c.batching.sizer.holdoff_windows, 0);
  EXPECT_EQ(c.batching.sizer.shrink_windows, 1);
  EXPECT_EQ(c.batching.sizer.min_window, absl::ZeroDuration());
  EXPECT_EQ(c.batching.sizer.max_window, absl::ZeroDuration());
  EXPECT_FALSE(c.batching.sizer.peak_guard);  // The paper's rule has none.
  gflags::SetCommandLineOption("rfrpc_sizer_holdoff_windows", "2");
  ASSERT_TRUE(ApplyChannelFlags(&c).ok());
  EXPECT_FALSE(c.batching.sizer.proportional_steps);
  EXPECT_EQ(c.batching.sizer.holdoff_windows, 2);
}

// The flags are checked by ValidateChannelOptions, as Channel::Create and
// Jakiro's properties are: the same message, named by the flag. A bad
// value leaves the options as they were.
TEST(ChannelFlagsTest, BadValuesGetTheLibrarysMessage) {
  struct Case {
    const char* flag;
    const char* value;
    void (*set)(ChannelOptions*);  // The same value, set directly.
  };
  const Case cases[] = {
      {"rfrpc_fetch_size", "8", [](ChannelOptions* o) { o->fetch.size = 8; }},
      {"rfrpc_slots", "5000",
       [](ChannelOptions* o) { o->slots_per_connection = 5000; }},
      {"rfrpc_batch_bytes", "10",
       [](ChannelOptions* o) { o->batching.bytes = 10; }},
      {"rfrpc_sizer_window", "0",
       [](ChannelOptions* o) { o->batching.sizer.window = 0; }},
      {"rfrpc_switch_back_ratio", "-1",
       [](ChannelOptions* o) { o->fetch.switch_back_ratio = -1; }},
      {"rfrpc_connect_timeout_ms", "0",
       [](ChannelOptions* o) { o->connect_timeout = absl::ZeroDuration(); }},
      {"rfrpc_batch_timeout_us", "-5",
       [](ChannelOptions* o) { o->batching.timeout = absl::Microseconds(-5); }},
      {"rfrpc_batch_group", "0",
       [](ChannelOptions* o) { o->batching.group = 0; }},
      {"rfrpc_sizer_shrink_windows", "0",
       [](ChannelOptions* o) { o->batching.sizer.shrink_windows = 0; }},
      {"rfrpc_sizer_grow_to", "1.5",
       [](ChannelOptions* o) { o->batching.sizer.grow_to = 1.5; }},
  };
  for (const Case& c : cases) {
    gflags::FlagSaver saver;
    ASSERT_FALSE(gflags::SetCommandLineOption(c.flag, c.value).empty())
        << c.flag;
    ChannelOptions options;
    options.fetch.size = 77;
    const absl::Status s = ApplyChannelFlags(&options);
    ChannelOptions bad;
    c.set(&bad);
    const absl::Status library = ValidateChannelOptions(bad);
    ASSERT_FALSE(library.ok()) << c.flag;
    EXPECT_EQ(s.message(), absl::StrCat("--", c.flag, ": ", library.message()));
    EXPECT_EQ(options.fetch.size, 77u) << "options untouched";
  }
}

TEST(ChannelFlagsTest, RejectsBadValuesNamingTheFlag) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("rfrpc_mode", "telepathy");
  ChannelOptions c;
  absl::Status s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "--rfrpc_mode: expected rf, server_reply or hybrid, "
            "got \"telepathy\"");
  gflags::SetCommandLineOption("rfrpc_mode", "rf");
  gflags::SetCommandLineOption("rfrpc_latency_alpha", "1.5");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(
      s.message(),
      "--rfrpc_latency_alpha: batching.sizer.alpha 1.5 is outside (0, 1)");
  gflags::SetCommandLineOption("rfrpc_latency_alpha", "0.05");
  gflags::SetCommandLineOption("rfrpc_retries", "0");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(), "--rfrpc_retries: fetch.retries 0 is below 1");
  gflags::SetCommandLineOption("rfrpc_retries", "5");
  gflags::SetCommandLineOption("rfrpc_fetch_policy", "eager");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(),
            "--rfrpc_fetch_policy: expected adaptive or paper, got \"eager\"");
  gflags::SetCommandLineOption("rfrpc_fetch_policy", "paper");
  gflags::SetCommandLineOption("rfrpc_sizer_rule", "pid");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(),
            "--rfrpc_sizer_rule: expected proportional or "
            "paper, got \"pid\"");
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
  EXPECT_EQ(s.message(),
            "--rfrpc_fetch_miss_target: fetch.delay_miss_target "
            "0.7 is outside (0, 0.5]");
  gflags::SetCommandLineOption("rfrpc_fetch_miss_target", "0.05");
  gflags::SetCommandLineOption("rfrpc_ib_port", "-1");
  s = ApplyChannelFlags(&c);
  EXPECT_EQ(s.message(),
            "--rfrpc_ib_port: provider_options.port -1 is outside [0, 255]");
  gflags::SetCommandLineOption("rfrpc_ib_port", "0");
  EXPECT_TRUE(ApplyChannelFlags(&c).ok());
}

// A client binary lists only the client's flags (and the common ones).
TEST(ChannelFlagsTest, ServerFlagsAreNotLinked) {
  gflags::CommandLineFlagInfo info;
  EXPECT_FALSE(gflags::GetCommandLineFlagInfo("rfrpc_idle_spin_rounds", &info));
  EXPECT_FALSE(gflags::GetCommandLineFlagInfo("rfrpc_max_connections", &info));
  EXPECT_TRUE(gflags::GetCommandLineFlagInfo("rfrpc_auth_token", &info));
}

TEST(ChannelFlagsTest, DescribeListsEveryKnobAndHidesTheToken) {
  ChannelOptions c;
  c.auth_token = "s3cret";
  const std::string d = DescribeChannelOptions(c);
  for (const ChannelKnob& k : ChannelKnobs()) {
    EXPECT_NE(d.find(absl::StrCat(" ", k.name, "=")), std::string::npos)
        << k.name;
  }
  EXPECT_EQ(d.find("s3cret"), std::string::npos);
  EXPECT_NE(d.find("auth_token=on"), std::string::npos);
}

}  // namespace
}  // namespace tools
}  // namespace rfrpc
