// Copyright 2026 The rfrpc Authors.
//
// The ChannelOptions a benchmark's channels start from. A benchmark that
// opens channels links //benchmarks:client_options (and with it the
// --rfrpc_* client flags); one that does not, such as transport_bench,
// links only the harness and lists none of them.

#ifndef RFRPC_BENCHMARKS_CLIENT_OPTIONS_H_
#define RFRPC_BENCHMARKS_CLIENT_OPTIONS_H_

#include "rpc/options.h"

namespace rfrpc {
namespace bench {

// --provider (benchmarks/harness.h), then every --rfrpc_<knob> flag given on
// the command line (flags/channel_flags.h), so each ChannelOptions knob can
// be tried in every benchmark; bench::Exit on a bad value. What a benchmark
// sweeps or measures (its --modes, batch sizes, ...) it sets on top, per
// point.
ChannelOptions ClientOptions();

}  // namespace bench
}  // namespace rfrpc

#endif  // RFRPC_BENCHMARKS_CLIENT_OPTIONS_H_
