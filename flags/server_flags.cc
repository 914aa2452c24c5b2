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
DEFINE_bool(rfrpc_raise_fd_limit, kDefaults.raise_fd_limit,
            "At start, raise the soft RLIMIT_NOFILE to the hard limit and "
            "log how many connections that allows.");

namespace rfrpc {
namespace tools {
namespace {

// A flag's value must be >= `min`.
absl::Status AtLeast(absl::string_view flag, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return BadFlag(flag, absl::StrCat("must be >= ", min));
}

// A flag's value must be in [min, max].
absl::Status InRange(absl::string_view flag, int64_t value, int64_t min,
                     int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return BadFlag(flag, absl::StrCat("must be in [", min, ", ", max, "]"));
}

}  // namespace

absl::Status ApplyServerFlags(ServerOptions* o) {
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_pin_first_cpu", FLAGS_rfrpc_pin_first_cpu, -1));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_max_connections", FLAGS_rfrpc_max_connections, 1));
  RFRPC_RETURN_IF_ERROR(AtLeast("rfrpc_max_slots_per_connection",
                                FLAGS_rfrpc_max_slots_per_connection, 1));
  RFRPC_RETURN_IF_ERROR(AtLeast("rfrpc_server_max_request_bytes",
                                FLAGS_rfrpc_server_max_request_bytes, 1));
  RFRPC_RETURN_IF_ERROR(AtLeast("rfrpc_server_max_response_bytes",
                                FLAGS_rfrpc_server_max_response_bytes, 1));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_idle_spin_rounds", FLAGS_rfrpc_idle_spin_rounds, 0));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_idle_park_after_us", FLAGS_rfrpc_idle_park_after_us, -1));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_hot_window_us", FLAGS_rfrpc_hot_window_us, 0));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_blocking_threads", FLAGS_rfrpc_blocking_threads, 1));
  RFRPC_RETURN_IF_ERROR(
      InRange("rfrpc_max_inline", FLAGS_rfrpc_max_inline, 0, 1024));
  ServerOptions next = *o;
  RFRPC_RETURN_IF_ERROR(ApplyProviderFlags(&next.provider_options));
  if (FlagGiven("rfrpc_max_inline")) next.max_inline = FLAGS_rfrpc_max_inline;
  if (FlagGiven("rfrpc_pin_first_cpu")) {
    next.pin_first_cpu = FLAGS_rfrpc_pin_first_cpu;
  }
  if (FlagGiven("rfrpc_large_result_bytes")) {
    next.large_result_bytes = FLAGS_rfrpc_large_result_bytes;
  }
  if (FlagGiven("rfrpc_result_batch_bytes")) {
    next.result_batch_bytes = FLAGS_rfrpc_result_batch_bytes;
  }
  if (FlagGiven("rfrpc_max_connections")) {
    next.max_connections = FLAGS_rfrpc_max_connections;
  }
  if (FlagGiven("rfrpc_max_slots_per_connection")) {
    next.max_slots_per_connection = FLAGS_rfrpc_max_slots_per_connection;
  }
  if (FlagGiven("rfrpc_server_max_request_bytes")) {
    next.max_request_bytes = FLAGS_rfrpc_server_max_request_bytes;
  }
  if (FlagGiven("rfrpc_server_max_response_bytes")) {
    next.max_response_bytes = FLAGS_rfrpc_server_max_response_bytes;
  }
  if (FlagGiven("rfrpc_idle_spin_rounds")) {
    next.idle_spin_rounds = FLAGS_rfrpc_idle_spin_rounds;
  }
  if (FlagGiven("rfrpc_idle_park_after_us")) {
    next.idle_park_after =
        FLAGS_rfrpc_idle_park_after_us < 0
            ? absl::InfiniteDuration()
            : absl::Microseconds(FLAGS_rfrpc_idle_park_after_us);
  }
  if (FlagGiven("rfrpc_hot_window_us")) {
    next.hot_window = absl::Microseconds(FLAGS_rfrpc_hot_window_us);
  }
  if (FlagGiven("rfrpc_blocking_threads")) {
    next.blocking_threads = FLAGS_rfrpc_blocking_threads;
  }
  if (FlagGiven("rfrpc_raise_fd_limit")) {
    next.raise_fd_limit = FLAGS_rfrpc_raise_fd_limit;
  }
  if (FlagGiven("rfrpc_auth_token")) next.auth_token = FLAGS_rfrpc_auth_token;
  if (FlagGiven("rfrpc_method_stats"))
    next.method_stats = FLAGS_rfrpc_method_stats;
  *o = std::move(next);
  return absl::OkStatus();
}

std::string DescribeServerOptions(const ServerOptions& o) {
  return absl::StrFormat(
      "provider=%s address=%s workers=%d pin_first_cpu=%d max_slots=%d "
      "max_request=%u max_response=%u large_result=%u result_batch=%u "
      "max_connections=%d idle_spin=%d park_after=%s hot_window=%s "
      "blocking_threads=%d max_inline=%u raise_fd_limit=%d auth=%s",
      o.provider, o.address.empty() ? "(auto)" : o.address, o.workers,
      o.pin_first_cpu, o.max_slots_per_connection, o.max_request_bytes,
      o.max_response_bytes, o.large_result_bytes, o.result_batch_bytes,
      o.max_connections, o.idle_spin_rounds,
      absl::FormatDuration(o.idle_park_after),
      absl::FormatDuration(o.hot_window), o.blocking_threads, o.max_inline,
      o.raise_fd_limit ? 1 : 0, o.auth_token.empty() ? "off" : "on");
}

}  // namespace tools
}  // namespace rfrpc
