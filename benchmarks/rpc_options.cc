// Copyright 2026 The rfrpc Authors.

#include "benchmarks/rpc_options.h"

#include "benchmarks/harness.h"
#include "flags/channel_flags.h"
#include "flags/server_flags.h"

namespace rfrpc {
namespace bench {

ChannelOptions ClientOptions() {
  ChannelOptions o;
  o.provider = FLAGS_provider;
  OkOrExit(tools::ApplyChannelFlags(&o), "flags");
  return o;
}

ServerOptions WithServerFlags(ServerOptions options) {
  OkOrExit(tools::ApplyServerFlags(&options), "flags");
  return options;
}

}  // namespace bench
}  // namespace rfrpc
