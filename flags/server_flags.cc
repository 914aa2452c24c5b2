// Copyright 2026 The rfrpc Authors.

#include "flags/server_flags.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "flags/common_flags.h"
#include "gflags/gflags.h"
#include "rpc/option_knobs.h"

namespace {
const rfrpc::ServerOptions kDefaults;
}  // namespace

DEFINE_int32(rfrpc_pin_first_cpu, kDefaults.pin_first_cpu,
             "Pin server worker i to CPU (first + i) % ncpus; -1: unpinned.");
DEFINE_uint32(rfrpc_large_result_bytes, kDefaults.large_result_bytes,
              "Results larger than this go by server-reply in any mode.");
DEFINE_uint32(rfrpc_result_batch_bytes, kDefaults.result_batch_bytes,
              "Payload bytes per result part of a batch.");
DEFINE_int32(rfrpc_max_connections, kDefaults.max_connections,
             "Connections accepted at most; beyond it a client gets "
             "RESOURCE_EXHAUSTED at connect.");
DEFINE_int32(rfrpc_max_slots_per_connection, kDefaults.max_slots_per_connection,
             "Slots a client may ask for per connection.");
DEFINE_uint32(rfrpc_server_max_request_bytes, kDefaults.max_request_bytes,
              "Largest request a client may ask to send.");
DEFINE_uint32(rfrpc_server_max_response_bytes, kDefaults.max_response_bytes,
              "Largest response a client may ask to receive.");
DEFINE_int32(rfrpc_idle_spin_rounds, kDefaults.idle_spin_rounds,
             "Idle worker: empty polling rounds spent spinning.");
DEFINE_int64(rfrpc_idle_park_after_us,
             absl::ToInt64Microseconds(kDefaults.idle_park_after),
             "Idle worker: after spinning, yield until this long has passed "
             "without work, then park (sleep until a client's notify); -1 "
             "never parks.");
DEFINE_int64(rfrpc_hot_window_us,
             absl::ToInt64Microseconds(kDefaults.hot_window),
             "A slot served twice within this window is polled for it after "
             "each request (its client skips the doorbell); 0 turns it off.");
DEFINE_int32(rfrpc_blocking_threads, kDefaults.blocking_threads,
             "Threads of the handler pool that runs blocking methods "
             "(option (rfrpc.handler) = HANDLER_BLOCKING) off the workers.");
DEFINE_int64(rfrpc_stall_warning_ms,
             absl::ToInt64Milliseconds(kDefaults.stall_warning),
             "A sync handler that holds its worker this long is counted "
             "(worker_stalls) and its method named in a warning, once per "
             "method and worker; 0 turns it off.");
DEFINE_bool(rfrpc_raise_fd_limit, kDefaults.raise_fd_limit,
            "At start, raise the soft RLIMIT_NOFILE to the hard limit and "
            "log how many connections that allows.");

namespace rfrpc {
namespace tools {

absl::Status ApplyServerFlags(ServerOptions* o) {
  return ApplyKnobFlags(ServerKnobs(), "ServerOptions", &ValidateServerOptions,
                        &FindServerKnobOfField, o);
}

std::string DescribeServerOptions(const ServerOptions& o) {
  std::string out =
      absl::StrCat("provider=", o.provider,
                   " address=", o.address.empty() ? "(auto)" : o.address,
                   " workers=", o.workers);
  for (const ServerKnob& k : ServerKnobs()) {
    std::string value = k.get(o);
    if (k.name == "auth_token") value = value.empty() ? "off" : "on";
    if (value.empty()) value = "\"\"";
    absl::StrAppend(&out, " ", k.name, "=", value);
  }
  return out;
}

}  // namespace tools
}  // namespace rfrpc
