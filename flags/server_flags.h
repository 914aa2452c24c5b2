// Copyright 2026 The rfrpc Authors.
//
// The server's --rfrpc_* flags and the function that applies them to
// ServerOptions. A server binary links //flags:server_flags (and not
// //flags:channel_flags, whose client knobs it would ignore):
//
//   gflags::ParseCommandLineFlags(&argc, &argv, true);
//   rfrpc::ServerOptions options;
//   absl::Status s = rfrpc::tools::ApplyServerFlags(&options);
//   if (!s.ok()) { LOG(ERROR) << s; return 2; }
//
// Flags: --rfrpc_pin_first_cpu, --rfrpc_large_result_bytes,
//   --rfrpc_result_batch_bytes, --rfrpc_max_connections,
//   --rfrpc_max_slots_per_connection, --rfrpc_server_max_request_bytes,
//   --rfrpc_server_max_response_bytes, --rfrpc_idle_spin_rounds,
//   --rfrpc_idle_park_after_us, --rfrpc_hot_window_us,
//   --rfrpc_blocking_threads, --rfrpc_stall_warning_ms,
//   --rfrpc_raise_fd_limit, and those both sides
//   take (flags/common_flags.h). The provider, address and worker count are
//   each binary's own (--provider, --address, --workers).
//
// One flag per ServerOptions knob (rpc/option_knobs.h: ServerKnobs()),
// parsed by the knob and checked by ValidateServerOptions, the check
// Server::Start makes: a bad value gets the same message either way. Every
// flag's default is the ServerOptions field's default.
//
// Thread-safety: call after flag parsing, before starting threads that read
// or change flags.

#ifndef RFRPC_FLAGS_SERVER_FLAGS_H_
#define RFRPC_FLAGS_SERVER_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "rpc/options.h"

namespace rfrpc {
namespace tools {

// Sets each field of `*options` (not null, not kept) whose flag was given on
// the command line (or by gflags::SetCommandLineOption); fields whose flag
// was not given keep their value, so a binary's own defaults stand unless
// the user overrides them. INVALID_ARGUMENT naming the flag for a bad value;
// then `*options` is unchanged.
absl::Status ApplyServerFlags(ServerOptions* options);

// One line, for a server's start-up log.
std::string DescribeServerOptions(const ServerOptions& options);

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_SERVER_FLAGS_H_
