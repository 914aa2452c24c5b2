// Copyright 2026 The rfrpc Authors.
//
// The options a benchmark's channels and servers start from: what the
// user gave as --rfrpc_* flags. A benchmark that runs RPCs links
// //benchmarks:rpc_options (and with it the client's and the server's
// --rfrpc_* flags); one that does not, such as transport_bench, links only
// the harness and lists none of them.

#ifndef RFRPC_BENCHMARKS_RPC_OPTIONS_H_
#define RFRPC_BENCHMARKS_RPC_OPTIONS_H_

#include "rpc/options.h"

namespace rfrpc {
namespace bench {

// --provider (benchmarks/harness.h), then every --rfrpc_<knob> flag given on
// the command line (flags/channel_flags.h), so each ChannelOptions knob can
// be tried in every benchmark; bench::Exit on a bad value. What a benchmark
// sweeps or measures (its --modes, batch sizes, ...) it sets on top, per
// point.
ChannelOptions ClientOptions();

// `options` (what the benchmark chose for its server) with every
// --rfrpc_* server flag given on the command line applied on top
// (flags/server_flags.h), so any ServerOptions knob with a flag can be
// tried in every benchmark; bench::Exit on a bad value.
ServerOptions WithServerFlags(ServerOptions options);

}  // namespace bench
}  // namespace rfrpc

#endif  // RFRPC_BENCHMARKS_RPC_OPTIONS_H_
