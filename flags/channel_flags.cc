// Copyright 2026 The rfrpc Authors.

#include "flags/channel_flags.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "flags/common_flags.h"
#include "gflags/gflags.h"
#include "rpc/option_knobs.h"

namespace {
const rfrpc::ChannelOptions kDefaults;

int64_t Us(absl::Duration d) { return absl::ToInt64Microseconds(d); }
int64_t Ms(absl::Duration d) { return absl::ToInt64Milliseconds(d); }
}  // namespace

// One flag per knob of rpc/option_knobs.h, in its order; those both sides
// take are in common_flags.cc. channel_flags_test checks that every knob has
// its flag and that every default is the library's.
DEFINE_string(rfrpc_mode, std::string(rfrpc::RpcModeName(kDefaults.mode)),
              "How results come back: rf (remote fetching), server_reply, or "
              "hybrid (rf, switching to server_reply when results are slow).");
DEFINE_int32(rfrpc_retries, kDefaults.fetch.retries,
             "R: fetches of one call before it counts as slow.");
DEFINE_uint32(rfrpc_fetch_size, kDefaults.fetch.size,
              "F: bytes fetched by the first RDMA READ of a result.");
DEFINE_int32(rfrpc_switch_after, kDefaults.fetch.switch_after,
             "K: consecutive slow calls that switch hybrid to server_reply "
             "(and fast ones that switch it back).");
DEFINE_double(rfrpc_switch_back_ratio, kDefaults.fetch.switch_back_ratio,
              "hybrid: in server_reply, a call counts as fast when the "
              "server's reported processing time is below this times what "
              "remote fetching waits before a call is slow.");
DEFINE_string(rfrpc_fetch_policy,
              std::string(rfrpc::FetchPolicyName(kDefaults)),
              "When results are fetched: adaptive (the first READ waits for "
              "the learned result time, up to --rfrpc_max_fetch_delay_us or "
              "R fetch times) or paper (READ at once and repeatedly, up to "
              "R times, as in the RF-RPC paper).");
DEFINE_int64(rfrpc_max_fetch_delay_us, Us(kDefaults.fetch.max_delay),
             "fetch_policy=adaptive: upper bound of the first fetch's delay "
             "(with R * the measured fetch time).");
DEFINE_double(rfrpc_fetch_miss_target, kDefaults.fetch.delay_miss_target,
              "fetch_policy=adaptive: share of calls whose first fetch comes "
              "one fetch too early; the delay settles at the (1 - this) "
              "percentile of result times. In (0, 0.5].");
DEFINE_int32(rfrpc_connections, kDefaults.connections,
             "Connections a channel opens; 0: one per server worker.");
DEFINE_int32(rfrpc_slots, kDefaults.slots_per_connection,
             "Calls in flight per connection (one slot each).");
DEFINE_uint32(rfrpc_max_request_bytes, kDefaults.max_request_bytes,
              "Largest serialized request.");
DEFINE_uint32(rfrpc_max_response_bytes, kDefaults.max_response_bytes,
              "Largest serialized response.");
DEFINE_int64(rfrpc_rering_after_us, Us(kDefaults.rering_after),
             "A request unanswered this long rings the server's doorbell "
             "again (then after twice that, up to 64 ms).");
DEFINE_int64(rfrpc_timeout_ms, Ms(kDefaults.default_timeout),
             "Deadline of a call whose context sets none.");
DEFINE_int64(rfrpc_connect_timeout_ms, Ms(kDefaults.connect_timeout),
             "Connection set-up limit.");
DEFINE_int32(rfrpc_signal_every, kDefaults.signal_every,
             "A post list is signaled (makes a completion) once this many "
             "WRITEs went unsignaled; 1: every one. In [1, 64].");
DEFINE_bool(rfrpc_post_lists, kDefaults.post_lists,
            "Post work requests that go together (a request and its "
            "doorbell, a round's READs, a batch's WRITEs) as one post list, "
            "one doorbell; false posts each on its own.");
DEFINE_string(rfrpc_batch,
              std::string(rfrpc::BatchModeName(kDefaults.batching.mode)),
              "Request batching: off, fixed, auto or adaptive.");
DEFINE_int32(rfrpc_batch_size, kDefaults.batching.size,
             "N: requests per batch (fixed), start size (auto), publish "
             "threshold (adaptive).");
DEFINE_uint32(rfrpc_batch_bytes, kDefaults.batching.bytes,
              "L: a batch is flushed before its payload would exceed this.");
DEFINE_uint32(rfrpc_batch_result_bytes, kDefaults.batching.result_bytes,
              "Result bytes a batch keeps room for per call of a method the "
              "connection has not seen return yet; later calls keep room for "
              "its largest result. 0: a whole response slot (its first call "
              "goes alone).");
DEFINE_int64(rfrpc_batch_timeout_us, Us(kDefaults.batching.timeout),
             "T: a batch is flushed this long after its first request.");
DEFINE_int32(rfrpc_batch_idle_in_flight, kDefaults.batching.idle_in_flight,
             "Idle flush: send an open batch nobody is adding to as soon as a "
             "caller would wait for it, while fewer than this many batches "
             "are in flight; 0: N, L and T only.");
DEFINE_bool(rfrpc_batch_sync_combine, kDefaults.batching.sync_combine,
            "Idle flush: batches with a sync call wait for company too "
            "(callers adding, batches in flight): sync threads combine.");
DEFINE_int32(rfrpc_batch_group, kDefaults.batching.group,
             "batch=adaptive: entries transmitted per group (RB2's beta).");
DEFINE_int32(rfrpc_max_outstanding, kDefaults.batching.max_outstanding,
             "Requests in flight per connection.");
DEFINE_int64(rfrpc_latency_limit_us, Us(kDefaults.batching.sizer.latency_limit),
             "batch=auto: the latency bound l_limit.");
DEFINE_double(rfrpc_latency_alpha, kDefaults.batching.sizer.alpha,
              "batch=auto: fraction of calls allowed above the bound.");
DEFINE_string(rfrpc_sizer_rule, std::string(rfrpc::SizerRuleName(kDefaults)),
              "batch=auto: how the sizer changes N after a window: "
              "proportional (to the size the latency quantiles point at, "
              "halving/doubling at most, one window's hold-off, shrinking "
              "after 2 windows over, undoing a grow that lowered "
              "calls/s) or paper (-1/+1 after every window of "
              "--rfrpc_sizer_window calls). The --rfrpc_sizer_* flags below "
              "refine the rule chosen.");
DEFINE_int32(rfrpc_sizer_window, kDefaults.batching.sizer.window,
             "batch=auto: calls per sizer window.");
DEFINE_int64(rfrpc_sizer_min_window_ms, Ms(kDefaults.batching.sizer.min_window),
             "batch=auto: a window also lasts at least this long.");
DEFINE_int64(rfrpc_sizer_max_window_ms, Ms(kDefaults.batching.sizer.max_window),
             "batch=auto: a window this old ends at its next call, however "
             "few calls it holds; 0: windows end on their call count only.");
DEFINE_int32(rfrpc_sizer_holdoff_windows,
             kDefaults.batching.sizer.holdoff_windows,
             "batch=auto: windows measured but not acted on after a change.");
DEFINE_int32(rfrpc_sizer_shrink_windows,
             kDefaults.batching.sizer.shrink_windows,
             "batch=auto: consecutive windows over the bound before N "
             "shrinks.");
DEFINE_bool(rfrpc_sizer_peak_guard, kDefaults.batching.sizer.peak_guard,
            "batch=auto: undo a grow of N that lowered calls/s by over 3% "
            "(or twice their measured noise between windows, up to 50%), "
            "and hold N there for 64 windows.");
DEFINE_double(rfrpc_sizer_grow_to, kDefaults.batching.sizer.grow_to,
              "batch=auto: while between a tenth of alpha and alpha of "
              "calls are above the latency limit, N still grows if the "
              "window's (1 - alpha) quantile is at most this fraction of "
              "the limit. In (0, 1].");
DEFINE_bool(rfrpc_busy_wait, kDefaults.busy_wait,
            "Waiting threads spin and yield for as long as a call takes; "
            "false: after 1 ms they sleep a sixteenth of the wait so far "
            "between polls.");
DEFINE_bool(rfrpc_progress_thread, kDefaults.progress_thread,
            "A progress thread advances async calls and runs their "
            "callbacks; false: only threads that call Poll() or make sync "
            "calls advance them.");

namespace rfrpc {
namespace tools {

absl::Status ApplyChannelFlags(ChannelOptions* o) {
  return ApplyKnobFlags(ChannelKnobs(), "ChannelOptions",
                        &ValidateChannelOptions, &FindChannelKnobOfField, o);
}

std::string DescribeChannelOptions(const ChannelOptions& o) {
  std::string out = absl::StrCat("provider=", o.provider);
  for (const ChannelKnob& k : ChannelKnobs()) {
    std::string value = k.get(o);
    if (k.name == "auth_token") value = value.empty() ? "off" : "on";
    if (value.empty()) value = "\"\"";
    absl::StrAppend(&out, " ", k.name, "=", value);
  }
  return out;
}

}  // namespace tools
}  // namespace rfrpc
