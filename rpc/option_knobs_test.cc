// Copyright 2026 The rfrpc Authors.

#include "rpc/option_knobs.h"

#include <iterator>
#include <set>
#include <string>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace {

// Every knob's value, as get() prints it, for comparing two options.
std::string Dump(const ChannelOptions& o) {
  std::string out;
  for (const ChannelKnob& k : ChannelKnobs()) {
    out += std::string(k.name) + "=" + k.get(o) + "\n";
  }
  return out;
}

TEST(OptionKnobsTest, NamesAndFieldsAreUnique) {
  std::set<absl::string_view> names, fields;
  for (const ChannelKnob& k : ChannelKnobs()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_TRUE(fields.insert(k.field).second) << k.field;
    EXPECT_EQ(FindChannelKnob(k.name), &k);
    EXPECT_EQ(FindChannelKnobOfField(k.field), &k);
  }
  EXPECT_EQ(FindChannelKnob("provider"), nullptr);
  EXPECT_EQ(FindChannelKnobOfField("first_seq"), nullptr);
}

// set(get(o)) is the identity, for the defaults and for a struct where
// every knob was moved off its default.
TEST(OptionKnobsTest, GetThenSetRoundTrips) {
  const ChannelOptions defaults;
  ChannelOptions o;
  for (const ChannelKnob& k : ChannelKnobs()) {
    ASSERT_TRUE(k.set(k.get(defaults), &o).ok()) << k.name;
  }
  EXPECT_EQ(Dump(o), Dump(defaults));

  ChannelOptions changed;
  const struct {
    const char* name;
    const char* value;
  } kChanges[] = {
      {"mode", "server_reply"},
      {"retries", "9"},
      {"fetch_size", "512"},
      {"switch_after", "4"},
      {"switch_back_ratio", "0.25"},
      {"fetch_policy", "paper"},
      {"max_fetch_delay_us", "7"},
      {"fetch_miss_target", "0.3"},
      {"connections", "0"},
      {"slots", "32"},
      {"max_request_bytes", "100"},
      {"max_response_bytes", "200"},
      {"rering_after_us", "250"},
      {"timeout_ms", "70"},
      {"connect_timeout_ms", "80"},
      {"auth_token", "s3cret"},
      {"max_inline", "0"},
      {"signal_every", "3"},
      {"post_lists", "false"},
      {"batch", "adaptive"},
      {"batch_size", "12"},
      {"batch_bytes", "4096"},
      {"batch_result_bytes", "128"},
      {"batch_timeout_us", "33"},
      {"batch_idle_in_flight", "0"},
      {"batch_sync_combine", "true"},
      {"batch_group", "2"},
      {"max_outstanding", "17"},
      {"latency_limit_us", "44"},
      {"latency_alpha", "0.125"},
      {"sizer_rule", "paper"},
      {"sizer_window", "100"},
      {"sizer_min_window_ms", "3"},
      {"sizer_max_window_ms", "6"},
      {"sizer_holdoff_windows", "5"},
      {"sizer_shrink_windows", "4"},
      {"sizer_peak_guard", "false"},
      {"sizer_grow_to", "0.6"},
      {"busy_wait", "true"},
      {"progress_thread", "false"},
      {"method_stats", "false"},
      {"device", "rxe0"},
      {"ib_port", "2"},
      {"gid_index", "3"},
      {"socket_dir", "/tmp/x"},
  };
  std::set<std::string> covered;
  for (const auto& c : kChanges) {
    ASSERT_TRUE(SetChannelKnob(c.name, c.value, &changed).ok()) << c.name;
    EXPECT_EQ(FindChannelKnob(c.name)->get(changed), c.value) << c.name;
    EXPECT_NE(FindChannelKnob(c.name)->get(changed),
              FindChannelKnob(c.name)->get(defaults))
        << c.name << " must move off its default";
    covered.insert(c.name);
  }
  for (const ChannelKnob& k : ChannelKnobs()) {
    EXPECT_EQ(covered.count(std::string(k.name)), 1u)
        << k.name << " has no case here";
  }
  ChannelOptions copy;
  for (const ChannelKnob& k : ChannelKnobs()) {
    ASSERT_TRUE(k.set(k.get(changed), &copy).ok()) << k.name;
  }
  EXPECT_EQ(Dump(copy), Dump(changed));
  // The fields behind the named choices and units.
  EXPECT_EQ(changed.batching.timeout, absl::Microseconds(33));
  EXPECT_EQ(changed.default_timeout, absl::Milliseconds(70));
  EXPECT_EQ(changed.batching.sizer.min_window, absl::Milliseconds(3));
  EXPECT_FALSE(changed.fetch.adaptive_delay);
  EXPECT_FALSE(changed.batching.sizer.proportional_steps);
  EXPECT_EQ(changed.provider_options.port, 2);
}

// A choice that sets several fields comes first, so the fields' own knobs
// refine it.
TEST(OptionKnobsTest, SizerRuleComesBeforeTheSizerFields) {
  size_t rule = 0, holdoff = 0;
  for (size_t i = 0; i < ChannelKnobs().size(); ++i) {
    if (ChannelKnobs()[i].name == "sizer_rule") rule = i;
    if (ChannelKnobs()[i].name == "sizer_holdoff_windows") holdoff = i;
  }
  EXPECT_LT(rule, holdoff);
}

TEST(OptionKnobsTest, BadSyntaxIsAnErrorAndChangesNothing) {
  const struct {
    const char* name;
    const char* value;
    const char* message;
  } kCases[] = {
      {"retries", "five",
       "expected an integer in [-2147483648, 2147483647], "
       "got \"five\""},
      {"fetch_size", "-1",
       "expected an integer in [0, 4294967295], got \"-1\""},
      {"retries", "99999999999",
       "expected an integer in [-2147483648, "
       "2147483647], got \"99999999999\""},
      {"latency_alpha", "half", "expected a number, got \"half\""},
      {"busy_wait", "yes please", "expected true or false, got \"yes please\""},
      {"mode", "telepathy",
       "expected rf, server_reply or hybrid, got "
       "\"telepathy\""},
      {"batch", "lots", "expected off, fixed, auto or adaptive, got \"lots\""},
      {"fetch_policy", "eager", "expected adaptive or paper, got \"eager\""},
      {"sizer_rule", "pid", "expected proportional or paper, got \"pid\""},
      {"batch_timeout_us", "1.5",
       "expected an integer in "
       "[-9223372036854775, 9223372036854775], "
       "got \"1.5\""},
      {"ib_port", "port 1",
       "expected an integer in [-2147483648, 2147483647], "
       "got \"port 1\""},
  };
  const ChannelOptions defaults;
  for (const auto& c : kCases) {
    ChannelOptions o;
    const absl::Status s = SetChannelKnob(c.name, c.value, &o);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_EQ(s.message(), c.message) << c.name;
    EXPECT_EQ(Dump(o), Dump(defaults)) << c.name;
  }
  ChannelOptions o;
  EXPECT_EQ(SetChannelKnob("telepathy", "1", &o).message(),
            "no ChannelOptions knob is named \"telepathy\"");
}

// Syntax only: the library's bounds are ValidateChannelOptions' to check.
TEST(OptionKnobsTest, BoundsAreLeftToValidate) {
  ChannelOptions o;
  ASSERT_TRUE(SetChannelKnob("retries", "0", &o).ok());
  std::string field;
  EXPECT_FALSE(ValidateChannelOptions(o, &field).ok());
  EXPECT_EQ(field, "fetch.retries");
  EXPECT_EQ(FindChannelKnobOfField(field)->name, "retries");
  // The provider's fields too, as a server's are.
  o = ChannelOptions();
  ASSERT_TRUE(SetChannelKnob("ib_port", "300", &o).ok());
  EXPECT_EQ(ValidateChannelOptions(o, &field).message(),
            "provider_options.port 300 is outside [0, 255]");
  EXPECT_EQ(FindChannelKnobOfField(field)->name, "ib_port");
  ServerOptions so;
  ASSERT_TRUE(SetServerKnob("ib_port", "300", &so).ok());
  EXPECT_EQ(ValidateServerOptions(so, &field).message(),
            "provider_options.port 300 is outside [0, 255]");
  EXPECT_EQ(FindServerKnobOfField(field)->name, "ib_port");
}

TEST(OptionKnobsTest, ServerKnobsRoundTripAndAreUnique) {
  ServerOptions o;
  const struct {
    const char* name;
    const char* value;
  } kValues[] = {
      {"pin_first_cpu", "1"},
      {"max_slots_per_connection", "16"},
      {"server_max_request_bytes", "1000"},
      {"server_max_response_bytes", "2000"},
      {"large_result_bytes", "4096"},
      {"result_batch_bytes", "512"},
      {"max_connections", "100"},
      {"idle_spin_rounds", "10"},
      {"idle_park_after_us", "-1"},
      {"hot_window_us", "70"},
      {"raise_fd_limit", "false"},
      {"auth_token", "s3cret"},
      {"max_inline", "64"},
      {"method_stats", "false"},
      {"blocking_threads", "2"},
      {"stall_warning_ms", "25"},
      {"device", "rxe0"},
      {"ib_port", "1"},
      {"gid_index", "1"},
      {"socket_dir", "/tmp/x"},
  };
  ASSERT_EQ(std::size(kValues), ServerKnobs().size());
  for (const auto& v : kValues) {
    ASSERT_TRUE(SetServerKnob(v.name, v.value, &o).ok()) << v.name;
    EXPECT_EQ(FindServerKnob(v.name)->get(o), v.value) << v.name;
  }
  EXPECT_EQ(o.idle_park_after, absl::InfiniteDuration());
  EXPECT_EQ(o.hot_window, absl::Microseconds(70));
  EXPECT_EQ(o.stall_warning, absl::Milliseconds(25));
  EXPECT_EQ(o.max_request_bytes, 1000u);
  EXPECT_TRUE(ValidateServerOptions(o).ok());
  ASSERT_TRUE(SetServerKnob("idle_park_after_us", "250", &o).ok());
  EXPECT_EQ(o.idle_park_after, absl::Microseconds(250));
  EXPECT_EQ(SetServerKnob("retries", "1", &o).message(),
            "no ServerOptions knob is named \"retries\"");
  for (size_t i = 0; i < ServerKnobs().size(); ++i) {
    for (size_t j = i + 1; j < ServerKnobs().size(); ++j) {
      EXPECT_NE(ServerKnobs()[i].name, ServerKnobs()[j].name);
      EXPECT_NE(ServerKnobs()[i].field, ServerKnobs()[j].field);
    }
  }
}

}  // namespace
}  // namespace rfrpc
