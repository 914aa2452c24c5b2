// Copyright 2026 The rfrpc Authors.

#include "benchmarks/client_options.h"

#include "benchmarks/harness.h"
#include "flags/channel_flags.h"

namespace rfrpc {
namespace bench {

ChannelOptions ClientOptions() {
  ChannelOptions o;
  o.provider = FLAGS_provider;
  OkOrExit(tools::ApplyChannelFlags(&o), "flags");
  return o;
}

}  // namespace bench
}  // namespace rfrpc
