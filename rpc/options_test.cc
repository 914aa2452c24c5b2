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
      {"fetch.retries", [](ChannelOptions* o) { o->fetch.retries = 0; },
       "fetch.retries 0 is below 1"},
      {"fetch.size", [](ChannelOptions* o) { o->fetch.size = 8; },
       "fetch.size 8 is below the 16-byte response header"},
      {"slots_per_connection",
       [](ChannelOptions* o) { o->slots_per_connection = 0; },
       "slots_per_connection 0 is outside [1, 4096]"},
      {"signal_every", [](ChannelOptions* o) { o->signal_every = 65; },
       "signal_every 65 is outside [1, 64]"},
      {"fetch.delay_miss_target",
       [](ChannelOptions* o) { o->fetch.delay_miss_target = 0.7; },
       "fetch.delay_miss_target 0.7 is outside (0, 0.5]"},
      {"batching.sizer.alpha",
       [](ChannelOptions* o) { o->batching.sizer.alpha = 1; },
       "batching.sizer.alpha 1 is outside (0, 1)"},
      {"batching.bytes", [](ChannelOptions* o) { o->batching.bytes = 63; },
       "batching.bytes 63 is below 64"},
      {"default_timeout",
       [](ChannelOptions* o) { o->default_timeout = absl::ZeroDuration(); },
       "default_timeout 0 is not positive"},
      {"batching.size", [](ChannelOptions* o) { o->batching.size = 1025; },
       "batching.size 1025 is above 1024"},
      {"fetch.retries",
       [](ChannelOptions* o) { o->fetch.retries = (1 << 20) + 1; },
       "fetch.retries 1048577 is above 1048576"},
      {"batching.timeout",
       [](ChannelOptions* o) { o->batching.timeout = absl::Microseconds(-1); },
       "batching.timeout -1us is negative"},
      {"batching.sizer.max_window",
       [](ChannelOptions* o) {
         o->batching.sizer.min_window = absl::Milliseconds(100);
         o->batching.sizer.max_window = absl::Milliseconds(10);
       },
       "batching.sizer.max_window 10ms is below batching.sizer.min_window "
       "(100ms)"},
      {"batching.sizer.grow_to",
       [](ChannelOptions* o) { o->batching.sizer.grow_to = 0; },
       "batching.sizer.grow_to 0 is outside (0, 1]"},
      {"batching.timeout",
       [](ChannelOptions* o) {
         o->batching.mode = BatchMode::kFixed;
         o->batching.timeout = absl::InfiniteDuration();
         o->batching.idle_in_flight = 0;
       },
       "batching.timeout inf with the idle flush off "
       "(batching.idle_in_flight 0): a batch that never fills would never be "
       "sent"},
      {"max_request_bytes",
       [](ChannelOptions* o) { o->max_request_bytes = UINT32_MAX; },
       "max_request_bytes 4294967295 is outside [1, 1073741824]"},
      {"mode", [](ChannelOptions* o) { o->mode = static_cast<RpcMode>(77); },
       "mode 77 is not rf, server_reply or hybrid"},
      {"batching.mode",
       [](ChannelOptions* o) { o->batching.mode = static_cast<BatchMode>(77); },
       "batching.mode 77 is not off, fixed, auto or adaptive"},
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
  o.fetch.retries = 0;
  o.signal_every = 0;
  std::string field;
  EXPECT_FALSE(ValidateChannelOptions(o, &field).ok());
  EXPECT_EQ(field, "fetch.retries");
}

TEST(ValidateServerOptionsTest, AResultPartHoldsAtLeastALine) {
  ServerOptions o;
  o.result_batch_bytes = 63;
  std::string field;
  const absl::Status s = ValidateServerOptions(o, &field);
  EXPECT_EQ(s.message(), "result_batch_bytes 63 is below 64");
  EXPECT_EQ(field, "result_batch_bytes");
  o.result_batch_bytes = 64;
  EXPECT_TRUE(ValidateServerOptions(o, &field).ok());
  // An infinite hot window overflowed the worker's clock sums.
  o.hot_window = absl::InfiniteDuration();
  EXPECT_EQ(ValidateServerOptions(o, &field).message(),
            "hot_window inf is above 1s");
  o.hot_window = absl::Microseconds(20);
  o.pin_first_cpu = INT32_MAX;
  EXPECT_EQ(field, "hot_window");
  EXPECT_FALSE(ValidateServerOptions(o, &field).ok());
  EXPECT_EQ(field, "pin_first_cpu");
}

}  // namespace
}  // namespace rfrpc
