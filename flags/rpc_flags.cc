// Copyright 2026 The rfrpc Authors.

#include "flags/rpc_flags.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gflags/gflags.h"
#include "base/status_macros.h"

namespace {
const rfrpc::ChannelOptions kChannelDefaults;
const rfrpc::ServerOptions kServerDefaults;
}  // namespace

// Client side.
DEFINE_string(rfrpc_mode,
              std::string(rfrpc::RpcModeName(kChannelDefaults.mode)),
              "How results come back: rf (remote fetching), server_reply, or "
              "hybrid (rf, switching to server_reply when results are slow).");
DEFINE_int32(rfrpc_retries, kChannelDefaults.retries,
             "R: fetches of one call before it counts as slow.");
DEFINE_uint32(rfrpc_fetch_size, kChannelDefaults.fetch_size,
              "F: bytes fetched by the first RDMA READ of a result.");
DEFINE_int32(rfrpc_switch_after, kChannelDefaults.switch_after,
             "K: consecutive slow calls that switch hybrid to server_reply.");
DEFINE_string(rfrpc_batch,
              std::string(rfrpc::BatchModeName(kChannelDefaults.batch)),
              "Request batching: off, fixed, auto or adaptive.");
DEFINE_int32(rfrpc_batch_size, kChannelDefaults.batch_size,
             "N: requests per batch (fixed), start size (auto), publish "
             "threshold (adaptive).");
DEFINE_uint32(rfrpc_batch_bytes, kChannelDefaults.batch_bytes,
              "L: a batch is flushed before its payload would exceed this.");
DEFINE_int64(rfrpc_batch_timeout_us,
             absl::ToInt64Microseconds(kChannelDefaults.batch_timeout),
             "T: a batch is flushed this long after its first request.");
DEFINE_int32(rfrpc_batch_idle_in_flight, kChannelDefaults.batch_idle_in_flight,
             "Idle flush: send an open batch nobody is adding to as soon as a "
             "caller would wait for it, while fewer than this many batches "
             "are in flight; 0: N, L and T only.");
DEFINE_bool(rfrpc_batch_sync_combine, kChannelDefaults.batch_sync_combine,
            "Idle flush: batches with a sync call wait for company too "
            "(callers adding, batches in flight): sync threads combine.");
DEFINE_int32(rfrpc_max_outstanding, kChannelDefaults.max_outstanding,
             "Requests in flight per connection.");
DEFINE_int64(rfrpc_latency_limit_us,
             absl::ToInt64Microseconds(kChannelDefaults.latency_limit),
             "Auto batch sizer: the latency bound l_limit.");
DEFINE_double(rfrpc_latency_alpha, kChannelDefaults.latency_alpha,
              "Auto batch sizer: fraction of calls allowed above the bound.");
DEFINE_int32(rfrpc_slots, kChannelDefaults.slots_per_connection,
             "Calls in flight per connection (one slot each).");
DEFINE_int64(rfrpc_timeout_ms,
             absl::ToInt64Milliseconds(kChannelDefaults.default_timeout),
             "Deadline of a call.");
DEFINE_string(rfrpc_fetch_policy,
              std::string(rfrpc::FetchPolicyName(kChannelDefaults)),
              "When results are fetched: adaptive (the first READ waits for "
              "the learned result time, up to --rfrpc_max_fetch_delay_us or "
              "R fetch times) or paper (READ at once and repeatedly, up to "
              "R times, as in the RF-RPC paper).");
DEFINE_int64(rfrpc_max_fetch_delay_us,
             absl::ToInt64Microseconds(kChannelDefaults.max_fetch_delay),
             "fetch_policy=adaptive: upper bound of the first fetch's delay "
             "(with R * the measured fetch time).");
DEFINE_double(rfrpc_fetch_miss_target, kChannelDefaults.fetch_delay_miss_target,
              "fetch_policy=adaptive: share of calls whose first fetch comes "
              "one fetch too early; the delay settles at the (1 - this) "
              "percentile of result times. In (0, 0.5].");
DEFINE_string(rfrpc_sizer_rule,
              std::string(rfrpc::SizerRuleName(kChannelDefaults)),
              "batch=auto: how the sizer changes N after a window: "
              "proportional (to the size the latency quantiles point at, "
              "halving/doubling at most, one window's hold-off, shrinking "
              "after 2 windows over, undoing a grow that did not raise "
              "calls/s) or paper (-1/+1 after every window of "
              "--rfrpc_sizer_window calls).");
DEFINE_int32(rfrpc_sizer_window, kChannelDefaults.sizer_window,
             "batch=auto: calls per sizer window.");
DEFINE_uint32(rfrpc_max_inline, kChannelDefaults.max_inline,
              "WRITEs of up to this many bytes go inline (requests, "
              "doorbells; on a server, pushed results); 0: none. The queue "
              "pair may grant less.");
DEFINE_bool(rfrpc_sizer_peak_guard, kChannelDefaults.sizer_peak_guard,
            "batch=auto, sizer_rule=proportional: undo a grow of N that did "
            "not raise calls/s by 3%, and hold N there for 64 windows.");
DEFINE_bool(rfrpc_busy_wait, kChannelDefaults.busy_wait,
            "Waiting threads spin and yield for as long as a call takes; "
            "false: after 1 ms they sleep a sixteenth of the wait so far "
            "between polls.");
DEFINE_int32(rfrpc_signal_every, kChannelDefaults.signal_every,
             "A post list is signaled (makes a completion) once this many "
             "WRITEs went unsignaled; 1: every one. In [1, 64].");

// Server side.
DEFINE_int32(rfrpc_pin_first_cpu, kServerDefaults.pin_first_cpu,
             "Pin server worker i to CPU (first + i) % ncpus; -1: unpinned.");
DEFINE_uint32(rfrpc_large_result_bytes, kServerDefaults.large_result_bytes,
              "Results larger than this go by server-reply in any mode.");
DEFINE_uint32(rfrpc_result_batch_bytes, kServerDefaults.result_batch_bytes,
              "Payload bytes per result part of a batch.");
DEFINE_int32(rfrpc_max_connections, kServerDefaults.max_connections,
             "Connections accepted at most.");
DEFINE_int32(rfrpc_max_slots_per_connection,
             kServerDefaults.max_slots_per_connection,
             "Slots a client may ask for per connection.");
DEFINE_int32(rfrpc_idle_spin_rounds, kServerDefaults.idle_spin_rounds,
             "Idle worker: empty polling rounds spent spinning.");
DEFINE_int64(rfrpc_idle_park_after_us,
             absl::ToInt64Microseconds(kServerDefaults.idle_park_after),
             "Idle worker: after spinning, yield until this long has passed "
             "without work, then park (sleep until a client's notify); -1 "
             "never parks.");
DEFINE_int64(rfrpc_hot_window_us,
             absl::ToInt64Microseconds(kServerDefaults.hot_window),
             "A slot served twice within this window is polled for it after "
             "each request (its client skips the doorbell); 0 turns it off.");
DEFINE_int32(rfrpc_blocking_threads, kServerDefaults.blocking_threads,
             "Threads of the handler pool that runs blocking methods "
             "(option (rfrpc.handler) = HANDLER_BLOCKING) off the workers.");

// Both.
DEFINE_bool(rfrpc_method_stats, kServerDefaults.method_stats,
            "Keep per-method call counts and latency histograms (what "
            "--rfrpc_metrics_port serves per method).");
DEFINE_string(rfrpc_auth_token, "",
              "Shared secret presented (client) or required (server) in the "
              "handshake; empty: none.");
DEFINE_string(rfrpc_device, "auto",
              "verbs: RDMA device name; auto picks the first device with an "
              "active port and a usable GID (on failure the error lists "
              "every device, port and GID).");
DEFINE_int32(rfrpc_ib_port, kChannelDefaults.provider_options.port,
             "verbs: device port; 0 picks the first active one.");
DEFINE_int32(rfrpc_gid_index, kChannelDefaults.provider_options.gid_index,
             "verbs: GID index; -1 picks a RoCE v2 GID of --address's family "
             "(its own IP when the port has it).");
DEFINE_string(rfrpc_socket_dir, kChannelDefaults.provider_options.socket_dir,
              "shm: folder for bootstrap sockets of addresses without '/'.");

namespace rfrpc {
namespace tools {
namespace {

absl::Status Bad(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

// A flag's value must be >= `min`.
absl::Status AtLeast(absl::string_view flag, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return Bad(flag, absl::StrCat("must be >= ", min));
}

// A flag's value must be in [min, max].
absl::Status InRange(absl::string_view flag, int64_t value, int64_t min,
                     int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return Bad(flag, absl::StrCat("must be in [", min, ", ", max, "]"));
}

// The flag that sets ChannelOptions field `field`.
std::string FlagOfField(absl::string_view field) {
  std::string flag = absl::StrCat("rfrpc_", ChannelOptionKnob(field));
  gflags::CommandLineFlagInfo info;
  if (gflags::GetCommandLineFlagInfo(flag.c_str(), &info)) return flag;
  return absl::StrCat("(ChannelOptions) ", field);  // No flag sets it.
}

absl::Status ApplyProviderFlags(transport::ProviderOptions* p) {
  RFRPC_RETURN_IF_ERROR(AtLeast("rfrpc_ib_port", FLAGS_rfrpc_ib_port, 0));
  RFRPC_RETURN_IF_ERROR(AtLeast("rfrpc_gid_index", FLAGS_rfrpc_gid_index, -1));
  p->device = FLAGS_rfrpc_device;
  p->port = FLAGS_rfrpc_ib_port;
  p->gid_index = FLAGS_rfrpc_gid_index;
  p->socket_dir = FLAGS_rfrpc_socket_dir;
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyChannelFlags(ChannelOptions* o) {
  absl::StatusOr<RpcMode> mode = ParseRpcMode(FLAGS_rfrpc_mode);
  if (!mode.ok()) return Bad("rfrpc_mode", mode.status().message());
  absl::StatusOr<BatchMode> batch = ParseBatchMode(FLAGS_rfrpc_batch);
  if (!batch.ok()) return Bad("rfrpc_batch", batch.status().message());
  // Flags whose conversions (microseconds, milliseconds) could hide a bad
  // value; the rest is ValidateChannelOptions' below.
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_batch_timeout_us", FLAGS_rfrpc_batch_timeout_us, 0));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_latency_limit_us", FLAGS_rfrpc_latency_limit_us, 1));
  RFRPC_RETURN_IF_ERROR(AtLeast("rfrpc_timeout_ms", FLAGS_rfrpc_timeout_ms, 1));
  ChannelOptions named;  // Where the named choices are checked.
  absl::Status st = SetFetchPolicy(FLAGS_rfrpc_fetch_policy, &named);
  if (!st.ok()) return Bad("rfrpc_fetch_policy", st.message());
  st = SetSizerRule(FLAGS_rfrpc_sizer_rule, &named);
  if (!st.ok()) return Bad("rfrpc_sizer_rule", st.message());
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_max_fetch_delay_us", FLAGS_rfrpc_max_fetch_delay_us, 0));
  ChannelOptions next = *o;
  RFRPC_RETURN_IF_ERROR(ApplyProviderFlags(&next.provider_options));
  next.mode = *mode;
  (void)SetFetchPolicy(FLAGS_rfrpc_fetch_policy, &next);  // Checked above.
  (void)SetSizerRule(FLAGS_rfrpc_sizer_rule, &next);
  next.max_fetch_delay = absl::Microseconds(FLAGS_rfrpc_max_fetch_delay_us);
  next.fetch_delay_miss_target = FLAGS_rfrpc_fetch_miss_target;
  next.sizer_window = FLAGS_rfrpc_sizer_window;
  if (next.sizer_proportional_steps) {
    next.sizer_peak_guard = FLAGS_rfrpc_sizer_peak_guard;
  }
  next.max_inline = FLAGS_rfrpc_max_inline;
  next.signal_every = FLAGS_rfrpc_signal_every;
  next.busy_wait = FLAGS_rfrpc_busy_wait;
  next.retries = FLAGS_rfrpc_retries;
  next.fetch_size = FLAGS_rfrpc_fetch_size;
  next.switch_after = FLAGS_rfrpc_switch_after;
  next.batch = *batch;
  next.batch_size = FLAGS_rfrpc_batch_size;
  next.batch_bytes = FLAGS_rfrpc_batch_bytes;
  next.batch_timeout = absl::Microseconds(FLAGS_rfrpc_batch_timeout_us);
  next.batch_idle_in_flight = FLAGS_rfrpc_batch_idle_in_flight;
  next.batch_sync_combine = FLAGS_rfrpc_batch_sync_combine;
  next.max_outstanding = FLAGS_rfrpc_max_outstanding;
  next.latency_limit = absl::Microseconds(FLAGS_rfrpc_latency_limit_us);
  next.latency_alpha = FLAGS_rfrpc_latency_alpha;
  next.slots_per_connection = FLAGS_rfrpc_slots;
  next.default_timeout = absl::Milliseconds(FLAGS_rfrpc_timeout_ms);
  next.auth_token = FLAGS_rfrpc_auth_token;
  next.method_stats = FLAGS_rfrpc_method_stats;
  std::string field;
  const absl::Status valid = ValidateChannelOptions(next, &field);
  if (!valid.ok()) return Bad(FlagOfField(field), valid.message());
  *o = std::move(next);
  return absl::OkStatus();
}

absl::Status ApplyServerFlags(ServerOptions* o) {
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_pin_first_cpu", FLAGS_rfrpc_pin_first_cpu, -1));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_max_connections", FLAGS_rfrpc_max_connections, 1));
  RFRPC_RETURN_IF_ERROR(AtLeast("rfrpc_max_slots_per_connection",
                                FLAGS_rfrpc_max_slots_per_connection, 1));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_idle_spin_rounds", FLAGS_rfrpc_idle_spin_rounds, 0));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_idle_park_after_us", FLAGS_rfrpc_idle_park_after_us, -1));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_hot_window_us", FLAGS_rfrpc_hot_window_us, 0));
  RFRPC_RETURN_IF_ERROR(
      AtLeast("rfrpc_blocking_threads", FLAGS_rfrpc_blocking_threads, 1));
  RFRPC_RETURN_IF_ERROR(InRange("rfrpc_max_inline", FLAGS_rfrpc_max_inline, 0, 1024));
  RFRPC_RETURN_IF_ERROR(ApplyProviderFlags(&o->provider_options));
  o->max_inline = FLAGS_rfrpc_max_inline;
  o->pin_first_cpu = FLAGS_rfrpc_pin_first_cpu;
  o->large_result_bytes = FLAGS_rfrpc_large_result_bytes;
  o->result_batch_bytes = FLAGS_rfrpc_result_batch_bytes;
  o->max_connections = FLAGS_rfrpc_max_connections;
  o->max_slots_per_connection = FLAGS_rfrpc_max_slots_per_connection;
  o->idle_spin_rounds = FLAGS_rfrpc_idle_spin_rounds;
  o->idle_park_after = FLAGS_rfrpc_idle_park_after_us < 0
                           ? absl::InfiniteDuration()
                           : absl::Microseconds(FLAGS_rfrpc_idle_park_after_us);
  o->hot_window = absl::Microseconds(FLAGS_rfrpc_hot_window_us);
  o->blocking_threads = FLAGS_rfrpc_blocking_threads;
  o->auth_token = FLAGS_rfrpc_auth_token;
  o->method_stats = FLAGS_rfrpc_method_stats;
  return absl::OkStatus();
}

std::string DescribeChannelOptions(const ChannelOptions& o) {
  return absl::StrFormat(
      "provider=%s mode=%s R=%d F=%u K=%d connections=%d slots=%d "
      "max_request=%u max_response=%u timeout=%s batch=%s N=%d L=%u T=%s "
      "idle_in_flight=%d max_outstanding=%d latency_limit=%s alpha=%g "
      "sizer=%s fetch_policy=%s max_inline=%u signal_every=%d auth=%s",
      o.provider, RpcModeName(o.mode), o.retries, o.fetch_size, o.switch_after,
      o.connections, o.slots_per_connection, o.max_request_bytes,
      o.max_response_bytes, absl::FormatDuration(o.default_timeout),
      BatchModeName(o.batch), o.batch_size, o.batch_bytes,
      absl::FormatDuration(o.batch_timeout), o.batch_idle_in_flight,
      o.max_outstanding,
      absl::FormatDuration(o.latency_limit), o.latency_alpha,
      SizerRuleName(o), FetchPolicyName(o), o.max_inline,
      o.signal_every, o.auth_token.empty() ? "off" : "on");
}

std::string DescribeServerOptions(const ServerOptions& o) {
  return absl::StrFormat(
      "provider=%s address=%s workers=%d pin_first_cpu=%d max_slots=%d "
      "max_request=%u max_response=%u large_result=%u result_batch=%u "
      "max_connections=%d idle_spin=%d park_after=%s hot_window=%s "
      "blocking_threads=%d max_inline=%u auth=%s",
      o.provider, o.address.empty() ? "(auto)" : o.address, o.workers,
      o.pin_first_cpu, o.max_slots_per_connection, o.max_request_bytes,
      o.max_response_bytes, o.large_result_bytes, o.result_batch_bytes,
      o.max_connections, o.idle_spin_rounds,
      absl::FormatDuration(o.idle_park_after),
      absl::FormatDuration(o.hot_window), o.blocking_threads, o.max_inline,
      o.auth_token.empty() ? "off" : "on");
}

}  // namespace tools
}  // namespace rfrpc
