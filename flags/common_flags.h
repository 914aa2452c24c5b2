// Copyright 2026 The rfrpc Authors.
//
// The --rfrpc_* flags both sides take (//flags:channel_flags and
// //flags:server_flags link them): --rfrpc_auth_token, --rfrpc_method_stats,
// --rfrpc_max_inline, and the provider's --rfrpc_device, --rfrpc_ib_port,
// --rfrpc_gid_index, --rfrpc_socket_dir. Internal to //flags.

#ifndef RFRPC_FLAGS_COMMON_FLAGS_H_
#define RFRPC_FLAGS_COMMON_FLAGS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "gflags/gflags.h"
#include "transport/transport.h"

DECLARE_string(rfrpc_auth_token);
DECLARE_bool(rfrpc_method_stats);
DECLARE_uint32(rfrpc_max_inline);

namespace rfrpc {
namespace tools {

// INVALID_ARGUMENT "--<flag>: <why>".
absl::Status BadFlag(absl::string_view flag, absl::string_view why);

// The flag was given on the command line (or set by the program).
bool FlagGiven(const char* flag);

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_COMMON_FLAGS_H_
