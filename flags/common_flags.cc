// Copyright 2026 The rfrpc Authors.

#include "flags/common_flags.h"

#include "absl/strings/str_cat.h"
#include "rpc/options.h"

namespace {
const rfrpc::ChannelOptions kChannelDefaults;
const rfrpc::ServerOptions kServerDefaults;
}  // namespace

DEFINE_bool(rfrpc_method_stats, kServerDefaults.method_stats,
            "Keep per-method call counts and latency histograms (what "
            "--rfrpc_metrics_port serves per method).");
DEFINE_string(rfrpc_auth_token, "",
              "Shared secret presented (client) or required (server) in the "
              "handshake; empty: none.");
DEFINE_uint32(rfrpc_max_inline, kChannelDefaults.max_inline,
              "WRITEs of up to this many bytes go inline (requests, "
              "doorbells; on a server, pushed results); 0: none. The queue "
              "pair may grant less.");
DEFINE_string(rfrpc_device, kChannelDefaults.provider_options.device,
              "verbs: RDMA device name; empty or auto picks the first device "
              "with an active port and a usable GID (on failure the error "
              "lists every device, port and GID).");
DEFINE_int32(rfrpc_ib_port, kChannelDefaults.provider_options.port,
             "verbs: device port; 0 picks the first active one.");
DEFINE_int32(rfrpc_gid_index, kChannelDefaults.provider_options.gid_index,
             "verbs: GID index; -1 picks a RoCE v2 GID of --address's family "
             "(its own IP when the port has it).");
DEFINE_string(rfrpc_socket_dir, kChannelDefaults.provider_options.socket_dir,
              "shm: folder for bootstrap sockets of addresses without '/'.");

namespace rfrpc {
namespace tools {

absl::Status BadFlag(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

bool FlagGiven(const char* flag) {
  gflags::CommandLineFlagInfo info;
  return gflags::GetCommandLineFlagInfo(flag, &info) && !info.is_default;
}

}  // namespace tools
}  // namespace rfrpc
