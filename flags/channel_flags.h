// Copyright 2026 The rfrpc Authors.
//
// The client's --rfrpc_* flags: one per ChannelOptions knob
// (rpc/option_knobs.h), named --rfrpc_<knob>, and the function that applies
// them. rpc/ and transport/ define no flags (STYLE.md: library code takes
// Options structs); a client binary links //flags:channel_flags, a server
// //flags:server_flags, so each lists only the flags it reads:
//
//   gflags::ParseCommandLineFlags(&argc, &argv, true);
//   rfrpc::ChannelOptions options;          // The binary's own defaults...
//   options.fetch.delay_miss_target = 0.2;
//   absl::Status s = rfrpc::tools::ApplyChannelFlags(&options);  // ...then
//   if (!s.ok()) { LOG(ERROR) << s; return 2; }  // what the user set.
//
// Every flag's default is its field's library default, so --help shows
// what an unset knob means.
//
// Thread-safety: call after flag parsing, before starting threads that read
// or change flags.

#ifndef RFRPC_FLAGS_CHANNEL_FLAGS_H_
#define RFRPC_FLAGS_CHANNEL_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "rpc/options.h"

namespace rfrpc {
namespace tools {

// Sets each field of `*options` (not null, not kept) whose --rfrpc_<knob>
// flag was given on the command line (or by gflags::SetCommandLineOption),
// in ChannelKnobs() order, and checks the result with
// ValidateChannelOptions. Fields whose flag was not given keep their value.
// INVALID_ARGUMENT naming the flag for a bad value, with the library's
// message; then `*options` is unchanged.
absl::Status ApplyChannelFlags(ChannelOptions* options);

// Every knob as name=value (the auth token as on/off), for a binary's
// start-up log.
std::string DescribeChannelOptions(const ChannelOptions& options);

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_CHANNEL_FLAGS_H_
