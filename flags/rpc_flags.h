// Copyright 2026 The rfrpc Authors.
//
// The standard --rfrpc_* command-line flags of rfrpc binaries, and the
// functions that map them onto ChannelOptions / ServerOptions.
//
// rpc/ and transport/ define no flags (STYLE.md: library code takes Options
// structs); a binary that wants the standard knobs links //flags:rpc_flags,
// parses its command line and calls the Apply functions:
//
//   gflags::ParseCommandLineFlags(&argc, &argv, true);
//   rfrpc::ServerOptions options;
//   absl::Status s = rfrpc::tools::ApplyServerFlags(&options);
//   if (!s.ok()) { LOG(ERROR) << s; return 2; }
//
// Every flag's default is the corresponding Options field's default, so a
// binary that passes no flag gets exactly the library defaults.
//
// Client (ChannelOptions): --rfrpc_mode=rf|server_reply|hybrid,
//   --rfrpc_retries (R), --rfrpc_fetch_size (F), --rfrpc_switch_after (K),
//   --rfrpc_batch=off|fixed|auto|adaptive, --rfrpc_batch_size,
//   --rfrpc_batch_bytes, --rfrpc_batch_timeout_us,
//   --rfrpc_batch_idle_in_flight, --rfrpc_batch_sync_combine,
//   --rfrpc_max_outstanding,
//   --rfrpc_latency_limit_us, --rfrpc_latency_alpha, --rfrpc_slots,
//   --rfrpc_timeout_ms, --rfrpc_fetch_policy=adaptive|paper,
//   --rfrpc_max_fetch_delay_us, --rfrpc_sizer_rule=proportional|paper,
//   --rfrpc_sizer_window, --rfrpc_sizer_peak_guard, --rfrpc_max_inline,
//   --rfrpc_signal_every, --rfrpc_busy_wait.
// Server (ServerOptions): --rfrpc_pin_first_cpu, --rfrpc_large_result_bytes,
//   --rfrpc_result_batch_bytes, --rfrpc_max_connections,
//   --rfrpc_max_slots_per_connection, --rfrpc_idle_spin_rounds,
//   --rfrpc_idle_park_after_us, --rfrpc_hot_window_us,
//   --rfrpc_blocking_threads, --rfrpc_max_inline.
// Both: --rfrpc_auth_token, --rfrpc_method_stats, and the provider's
//   --rfrpc_device, --rfrpc_ib_port, --rfrpc_gid_index, --rfrpc_socket_dir.
//
// Thread-safety: call after flag parsing, before starting threads that read
// or change flags.

#ifndef RFRPC_FLAGS_RPC_FLAGS_H_
#define RFRPC_FLAGS_RPC_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "rpc/options.h"

namespace rfrpc {
namespace tools {

// Overwrites the client-side fields of `*options` (not null, not kept) with
// the flags' values. INVALID_ARGUMENT naming the flag for a bad value; then
// `*options` may be partly updated.
absl::Status ApplyChannelFlags(ChannelOptions* options);

// As ApplyChannelFlags, for the server-side fields.
absl::Status ApplyServerFlags(ServerOptions* options);

// One line per option group, for a binary's start-up log.
std::string DescribeChannelOptions(const ChannelOptions& options);
std::string DescribeServerOptions(const ServerOptions& options);

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_RPC_FLAGS_H_
