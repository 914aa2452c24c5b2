// Copyright 2026 The rfrpc Authors.

#include "rpc/option_knobs.h"

#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace rfrpc {
namespace {

absl::Status Expected(absl::string_view what, absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat("expected ", what, ", got \"", value, "\""));
}

// Reads a decimal integer in [min, max].
absl::Status ParseInt(absl::string_view value, int64_t min, int64_t max,
                      int64_t* out) {
  int64_t v;
  if (!absl::SimpleAtoi(value, &v) || v < min || v > max) {
    return Expected(absl::StrCat("an integer in [", min, ", ", max, "]"),
                    value);
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status ParseBool(absl::string_view value, bool* out) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "true" || v == "1") {
    *out = true;
  } else if (v == "false" || v == "0") {
    *out = false;
  } else {
    return Expected("true or false", value);
  }
  return absl::OkStatus();
}

template <typename M>
struct MemberOf;
template <typename C, typename T>
struct MemberOf<T C::*> {
  using Class = C;
  using Type = T;
};

// The field at the end of a path of member pointers: one for a top-level
// field (&ServerOptions::workers), more for a nested one
// (&ChannelOptions::fetch, &FetchOptions::size).
template <auto kFirst, auto... kRest>
struct Path {
  using Class = typename MemberOf<decltype(kFirst)>::Class;
  template <typename C>
  static auto& Of(C& o) {
    if constexpr (sizeof...(kRest) == 0) {
      return o.*kFirst;
    } else {
      return Path<kRest...>::Of(o.*kFirst);
    }
  }
  using Type = std::remove_reference_t<decltype(Of(std::declval<Class&>()))>;
};

// A number, boolean or string field, in its own type.
template <auto... kPath>
absl::Status SetValue(absl::string_view value,
                      typename Path<kPath...>::Class* o) {
  using T = typename Path<kPath...>::Type;
  T& field = Path<kPath...>::Of(*o);
  if constexpr (std::is_same_v<T, std::string>) {
    field = std::string(value);
    return absl::OkStatus();
  } else if constexpr (std::is_same_v<T, bool>) {
    return ParseBool(value, &field);
  } else if constexpr (std::is_floating_point_v<T>) {
    double v;
    if (!absl::SimpleAtod(value, &v)) return Expected("a number", value);
    field = v;
    return absl::OkStatus();
  } else {
    static_assert(std::is_integral_v<T> && sizeof(T) <= sizeof(int64_t));
    int64_t v;
    absl::Status s =
        ParseInt(value, std::numeric_limits<T>::min(),
                 static_cast<int64_t>(std::numeric_limits<T>::max()), &v);
    if (!s.ok()) return s;
    field = static_cast<T>(v);
    return absl::OkStatus();
  }
}

template <auto... kPath>
std::string GetValue(const typename Path<kPath...>::Class& o) {
  using T = typename Path<kPath...>::Type;
  const T& field = Path<kPath...>::Of(o);
  if constexpr (std::is_same_v<T, std::string>) {
    return field;
  } else if constexpr (std::is_same_v<T, bool>) {
    return field ? "true" : "false";
  } else if constexpr (std::is_floating_point_v<T>) {
    // The fewest digits that read back as the same double.
    char buf[32];
    for (int digits = 6; digits <= 17; ++digits) {
      snprintf(buf, sizeof(buf), "%.*g", digits, field);
      double back;
      if (absl::SimpleAtod(buf, &back) && back == field) break;
    }
    return buf;
  } else {
    return absl::StrCat(field);
  }
}

// A duration field, as an integer count of kUnitNs nanoseconds.
template <int64_t kUnitNs, auto... kPath>
absl::Status SetDuration(absl::string_view value,
                         typename Path<kPath...>::Class* o) {
  int64_t v;
  absl::Status s =
      ParseInt(value, std::numeric_limits<int64_t>::min() / kUnitNs,
               std::numeric_limits<int64_t>::max() / kUnitNs, &v);
  if (!s.ok()) return s;
  Path<kPath...>::Of(*o) = absl::Nanoseconds(v * kUnitNs);
  return absl::OkStatus();
}

template <int64_t kUnitNs, auto... kPath>
std::string GetDuration(const typename Path<kPath...>::Class& o) {
  return absl::StrCat(absl::ToInt64Nanoseconds(Path<kPath...>::Of(o)) /
                      kUnitNs);
}

constexpr int64_t kUs = 1000;
constexpr int64_t kMs = 1000 * 1000;

absl::Status SetMode(absl::string_view value, ChannelOptions* o) {
  absl::StatusOr<RpcMode> m = ParseRpcMode(value);
  if (!m.ok()) return Expected("rf, server_reply or hybrid", value);
  o->mode = *m;
  return absl::OkStatus();
}

absl::Status SetBatch(absl::string_view value, ChannelOptions* o) {
  absl::StatusOr<BatchMode> m = ParseBatchMode(value);
  if (!m.ok()) return Expected("off, fixed, auto or adaptive", value);
  o->batching.mode = *m;
  return absl::OkStatus();
}

// SetFetchPolicy and SetSizerRule change nothing for an unknown name.
absl::Status SetFetchPolicyKnob(absl::string_view value, ChannelOptions* o) {
  if (!SetFetchPolicy(value, o).ok()) {
    return Expected("adaptive or paper", value);
  }
  return absl::OkStatus();
}

absl::Status SetSizerRuleKnob(absl::string_view value, ChannelOptions* o) {
  if (!SetSizerRule(value, o).ok()) {
    return Expected("proportional or paper", value);
  }
  return absl::OkStatus();
}

#define RFRPC_VALUE_KNOB(name, field)                \
  {                                                  \
    name, #field, &SetValue<&ChannelOptions::field>, \
        &GetValue<&ChannelOptions::field>            \
  }
#define RFRPC_DURATION_KNOB(name, field, unit)                \
  {                                                           \
    name, #field, &SetDuration<unit, &ChannelOptions::field>, \
        &GetDuration<unit, &ChannelOptions::field>            \
  }
// Knobs of nested fields: `field` as ValidateChannelOptions names it, then
// the member path to it (RFRPC_FETCH(size) is &ChannelOptions::fetch,
// &FetchOptions::size).
#define RFRPC_FETCH(f) &ChannelOptions::fetch, &FetchOptions::f
#define RFRPC_BATCHING(f) &ChannelOptions::batching, &BatchingOptions::f
#define RFRPC_SIZER(f) RFRPC_BATCHING(sizer), &SizerOptions::f
#define RFRPC_NESTED_KNOB(name, field, ...) \
  { name, field, &SetValue<__VA_ARGS__>, &GetValue<__VA_ARGS__> }
#define RFRPC_NESTED_DURATION_KNOB(name, field, unit, ...) \
  {                                                        \
    name, field, &SetDuration<unit, __VA_ARGS__>,          \
        &GetDuration<unit, __VA_ARGS__>                    \
  }
#define RFRPC_SERVER_VALUE_KNOB(name, field)        \
  {                                                 \
    name, #field, &SetValue<&ServerOptions::field>, \
        &GetValue<&ServerOptions::field>            \
  }
#define RFRPC_SERVER_DURATION_KNOB(name, field, unit)        \
  {                                                          \
    name, #field, &SetDuration<unit, &ServerOptions::field>, \
        &GetDuration<unit, &ServerOptions::field>            \
  }
// The provider's knobs, the same on both sides (ValidateChannelOptions and
// ValidateServerOptions check their bounds alike).
#define RFRPC_PROVIDER_KNOBS(Options)                                \
  RFRPC_NESTED_KNOB("device", "provider_options.device",             \
                    &Options::provider_options,                      \
                    &transport::ProviderOptions::device),            \
      RFRPC_NESTED_KNOB("ib_port", "provider_options.port",          \
                        &Options::provider_options,                  \
                        &transport::ProviderOptions::port),          \
      RFRPC_NESTED_KNOB("gid_index", "provider_options.gid_index",   \
                        &Options::provider_options,                  \
                        &transport::ProviderOptions::gid_index),     \
      RFRPC_NESTED_KNOB("socket_dir", "provider_options.socket_dir", \
                        &Options::provider_options,                  \
                        &transport::ProviderOptions::socket_dir)

// In the order of ChannelKnobs()'s contract: choices that set several
// fields before those fields' own knobs.
const ChannelKnob kKnobs[] = {
    {"mode", "mode", &SetMode,
     [](const ChannelOptions& o) { return std::string(RpcModeName(o.mode)); }},
    RFRPC_NESTED_KNOB("retries", "fetch.retries", RFRPC_FETCH(retries)),
    RFRPC_NESTED_KNOB("fetch_size", "fetch.size", RFRPC_FETCH(size)),
    RFRPC_NESTED_KNOB("switch_after", "fetch.switch_after",
                      RFRPC_FETCH(switch_after)),
    RFRPC_NESTED_KNOB("switch_back_ratio", "fetch.switch_back_ratio",
                      RFRPC_FETCH(switch_back_ratio)),
    {"fetch_policy", "fetch.adaptive_delay", &SetFetchPolicyKnob,
     [](const ChannelOptions& o) { return std::string(FetchPolicyName(o)); }},
    RFRPC_NESTED_DURATION_KNOB("max_fetch_delay_us", "fetch.max_delay", kUs,
                               RFRPC_FETCH(max_delay)),
    RFRPC_NESTED_KNOB("fetch_miss_target", "fetch.delay_miss_target",
                      RFRPC_FETCH(delay_miss_target)),
    RFRPC_VALUE_KNOB("connections", connections),
    RFRPC_VALUE_KNOB("slots", slots_per_connection),
    RFRPC_VALUE_KNOB("max_request_bytes", max_request_bytes),
    RFRPC_VALUE_KNOB("max_response_bytes", max_response_bytes),
    RFRPC_DURATION_KNOB("rering_after_us", rering_after, kUs),
    RFRPC_DURATION_KNOB("timeout_ms", default_timeout, kMs),
    RFRPC_DURATION_KNOB("connect_timeout_ms", connect_timeout, kMs),
    RFRPC_VALUE_KNOB("auth_token", auth_token),
    RFRPC_VALUE_KNOB("max_inline", max_inline),
    RFRPC_VALUE_KNOB("signal_every", signal_every),
    RFRPC_VALUE_KNOB("post_lists", post_lists),
    {"batch", "batching.mode", &SetBatch,
     [](const ChannelOptions& o) {
       return std::string(BatchModeName(o.batching.mode));
     }},
    RFRPC_NESTED_KNOB("batch_size", "batching.size", RFRPC_BATCHING(size)),
    RFRPC_NESTED_KNOB("batch_bytes", "batching.bytes", RFRPC_BATCHING(bytes)),
    RFRPC_NESTED_KNOB("batch_result_bytes", "batching.result_bytes",
                      RFRPC_BATCHING(result_bytes)),
    RFRPC_NESTED_DURATION_KNOB("batch_timeout_us", "batching.timeout", kUs,
                               RFRPC_BATCHING(timeout)),
    RFRPC_NESTED_KNOB("batch_idle_in_flight", "batching.idle_in_flight",
                      RFRPC_BATCHING(idle_in_flight)),
    RFRPC_NESTED_KNOB("batch_sync_combine", "batching.sync_combine",
                      RFRPC_BATCHING(sync_combine)),
    RFRPC_NESTED_KNOB("batch_group", "batching.group", RFRPC_BATCHING(group)),
    RFRPC_NESTED_KNOB("max_outstanding", "batching.max_outstanding",
                      RFRPC_BATCHING(max_outstanding)),
    RFRPC_NESTED_DURATION_KNOB("latency_limit_us",
                               "batching.sizer.latency_limit", kUs,
                               RFRPC_SIZER(latency_limit)),
    RFRPC_NESTED_KNOB("latency_alpha", "batching.sizer.alpha",
                      RFRPC_SIZER(alpha)),
    {"sizer_rule", "batching.sizer.proportional_steps", &SetSizerRuleKnob,
     [](const ChannelOptions& o) { return std::string(SizerRuleName(o)); }},
    RFRPC_NESTED_KNOB("sizer_window", "batching.sizer.window",
                      RFRPC_SIZER(window)),
    RFRPC_NESTED_DURATION_KNOB("sizer_min_window_ms",
                               "batching.sizer.min_window", kMs,
                               RFRPC_SIZER(min_window)),
    RFRPC_NESTED_DURATION_KNOB("sizer_max_window_ms",
                               "batching.sizer.max_window", kMs,
                               RFRPC_SIZER(max_window)),
    RFRPC_NESTED_KNOB("sizer_holdoff_windows", "batching.sizer.holdoff_windows",
                      RFRPC_SIZER(holdoff_windows)),
    RFRPC_NESTED_KNOB("sizer_shrink_windows", "batching.sizer.shrink_windows",
                      RFRPC_SIZER(shrink_windows)),
    RFRPC_NESTED_KNOB("sizer_peak_guard", "batching.sizer.peak_guard",
                      RFRPC_SIZER(peak_guard)),
    RFRPC_NESTED_KNOB("sizer_grow_to", "batching.sizer.grow_to",
                      RFRPC_SIZER(grow_to)),
    RFRPC_VALUE_KNOB("busy_wait", busy_wait),
    RFRPC_VALUE_KNOB("progress_thread", progress_thread),
    RFRPC_VALUE_KNOB("method_stats", method_stats),
    RFRPC_PROVIDER_KNOBS(ChannelOptions),
};

// idle_park_after: microseconds, -1 for never (InfiniteDuration).
absl::Status SetIdleParkAfter(absl::string_view value, ServerOptions* o) {
  if (value == "-1") {
    o->idle_park_after = absl::InfiniteDuration();
    return absl::OkStatus();
  }
  return SetDuration<kUs, &ServerOptions::idle_park_after>(value, o);
}

std::string GetIdleParkAfter(const ServerOptions& o) {
  if (o.idle_park_after == absl::InfiniteDuration()) return "-1";
  return GetDuration<kUs, &ServerOptions::idle_park_after>(o);
}

// Not knobs: provider, address and workers (each server binary has its
// own), provider_options.address_hint (from the address).
const ServerKnob kServerKnobs[] = {
    RFRPC_SERVER_VALUE_KNOB("pin_first_cpu", pin_first_cpu),
    RFRPC_SERVER_VALUE_KNOB("max_slots_per_connection",
                            max_slots_per_connection),
    RFRPC_SERVER_VALUE_KNOB("server_max_request_bytes", max_request_bytes),
    RFRPC_SERVER_VALUE_KNOB("server_max_response_bytes", max_response_bytes),
    RFRPC_SERVER_VALUE_KNOB("large_result_bytes", large_result_bytes),
    RFRPC_SERVER_VALUE_KNOB("result_batch_bytes", result_batch_bytes),
    RFRPC_SERVER_VALUE_KNOB("max_connections", max_connections),
    RFRPC_SERVER_VALUE_KNOB("idle_spin_rounds", idle_spin_rounds),
    {"idle_park_after_us", "idle_park_after", &SetIdleParkAfter,
     &GetIdleParkAfter},
    RFRPC_SERVER_DURATION_KNOB("hot_window_us", hot_window, kUs),
    RFRPC_SERVER_VALUE_KNOB("raise_fd_limit", raise_fd_limit),
    RFRPC_SERVER_VALUE_KNOB("auth_token", auth_token),
    RFRPC_SERVER_VALUE_KNOB("max_inline", max_inline),
    RFRPC_SERVER_VALUE_KNOB("method_stats", method_stats),
    RFRPC_SERVER_VALUE_KNOB("blocking_threads", blocking_threads),
    RFRPC_SERVER_DURATION_KNOB("stall_warning_ms", stall_warning, kMs),
    RFRPC_PROVIDER_KNOBS(ServerOptions),
};

#undef RFRPC_VALUE_KNOB
#undef RFRPC_DURATION_KNOB
#undef RFRPC_SERVER_VALUE_KNOB
#undef RFRPC_SERVER_DURATION_KNOB
#undef RFRPC_PROVIDER_KNOBS
#undef RFRPC_NESTED_KNOB
#undef RFRPC_NESTED_DURATION_KNOB
#undef RFRPC_FETCH
#undef RFRPC_BATCHING
#undef RFRPC_SIZER

template <typename Knob>
const Knob* FindByName(absl::Span<const Knob> knobs, absl::string_view name) {
  for (const Knob& k : knobs) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

template <typename Knob>
const Knob* FindByField(absl::Span<const Knob> knobs, absl::string_view field) {
  for (const Knob& k : knobs) {
    if (k.field == field) return &k;
  }
  return nullptr;
}

// Sets knob `name` of `options`; `what` names the options type in the error
// for an unknown name.
template <typename Knob, typename Options>
absl::Status SetByName(absl::Span<const Knob> knobs, absl::string_view what,
                       absl::string_view name, absl::string_view value,
                       Options* options) {
  const Knob* k = FindByName(knobs, name);
  if (k == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no ", what, " knob is named \"", name, "\""));
  }
  return k->set(value, options);
}

}  // namespace

absl::Span<const ChannelKnob> ChannelKnobs() { return kKnobs; }

const ChannelKnob* FindChannelKnob(absl::string_view name) {
  return FindByName(ChannelKnobs(), name);
}

const ChannelKnob* FindChannelKnobOfField(absl::string_view field) {
  return FindByField(ChannelKnobs(), field);
}

absl::Status SetChannelKnob(absl::string_view name, absl::string_view value,
                            ChannelOptions* options) {
  return SetByName(ChannelKnobs(), "ChannelOptions", name, value, options);
}

absl::Span<const ServerKnob> ServerKnobs() { return kServerKnobs; }

const ServerKnob* FindServerKnob(absl::string_view name) {
  return FindByName(ServerKnobs(), name);
}

const ServerKnob* FindServerKnobOfField(absl::string_view field) {
  return FindByField(ServerKnobs(), field);
}

absl::Status SetServerKnob(absl::string_view name, absl::string_view value,
                           ServerOptions* options) {
  return SetByName(ServerKnobs(), "ServerOptions", name, value, options);
}

}  // namespace rfrpc
