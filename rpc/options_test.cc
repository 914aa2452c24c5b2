// Copyright 2026 The rfrpc Authors.
//
// ValidateChannelOptions: the defaults pass, and each bad value is named by
// its field, in the message and in *field.

#include "rpc/options.h"

#include <string>

#include "gtest/gtest.h"

namespace rfrpc {
namespace {

TEST(ValidateChannelOptionsTest, TheDefaultsPass) {
  EXPECT_TRUE(ValidateChannelOptions(ChannelOptions()).ok());
  ChannelOptions paper;
  ASSERT_TRUE(SetSizerRule("paper", &paper).ok());
  ASSERT_TRUE(SetFetchPolicy("paper", &paper).ok());
  EXPECT_TRUE(ValidateChannelOptions(paper).ok());
}

TEST(ValidateChannelOptionsTest, NamesTheFirstBadField) {
  struct Case {
    const char* field;
    void (*set)(ChannelOptions*);
    const char* message;
  };
  const Case cases[] = {
      {"retries", [](ChannelOptions* o) { o->retries = 0; }, "retries 0 is below 1"},
      {"fetch_size", [](ChannelOptions* o) { o->fetch_size = 8; },
       "fetch_size 8 is below the 16-byte response header"},
      {"slots_per_connection",
       [](ChannelOptions* o) { o->slots_per_connection = 0; },
       "slots_per_connection 0 is outside [1, 4096]"},
      {"signal_every", [](ChannelOptions* o) { o->signal_every = 65; },
       "signal_every 65 is outside [1, 64]"},
      {"fetch_delay_miss_target",
       [](ChannelOptions* o) { o->fetch_delay_miss_target = 0.7; },
       "fetch_delay_miss_target 0.7 is outside (0, 0.5]"},
      {"latency_alpha", [](ChannelOptions* o) { o->latency_alpha = 1; },
       "latency_alpha 1 is outside (0, 1)"},
      {"batch_bytes", [](ChannelOptions* o) { o->batch_bytes = 63; },
       "batch_bytes 63 is below 64"},
      {"default_timeout",
       [](ChannelOptions* o) { o->default_timeout = absl::ZeroDuration(); },
       "default_timeout 0 is not positive"},
      {"batch_size", [](ChannelOptions* o) { o->batch_size = 1025; },
       "batch_size 1025 is above 1024"},
      {"retries", [](ChannelOptions* o) { o->retries = (1 << 20) + 1; },
       "retries 1048577 is above 1048576"},
      {"batch_timeout",
       [](ChannelOptions* o) { o->batch_timeout = absl::Microseconds(-1); },
       "batch_timeout -1us is negative"},
  };
  for (const Case& c : cases) {
    ChannelOptions o;
    c.set(&o);
    std::string field;
    const absl::Status s = ValidateChannelOptions(o, &field);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(s.message(), c.message);
    EXPECT_EQ(field, c.field);
  }
  // Two bad fields: the first is reported.
  ChannelOptions o;
  o.retries = 0;
  o.signal_every = 0;
  std::string field;
  EXPECT_FALSE(ValidateChannelOptions(o, &field).ok());
  EXPECT_EQ(field, "retries");
}

}  // namespace
}  // namespace rfrpc
