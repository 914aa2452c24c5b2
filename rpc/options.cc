// Copyright 2026 The rfrpc Authors.

#include "rpc/options.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "rpc/wire_format.h"

namespace rfrpc {

absl::string_view RpcModeName(RpcMode mode) {
  switch (mode) {
    case RpcMode::kRemoteFetch:
      return "rf";
    case RpcMode::kServerReply:
      return "server_reply";
    case RpcMode::kHybrid:
      return "hybrid";
  }
  return "unknown";
}

absl::StatusOr<RpcMode> ParseRpcMode(absl::string_view name) {
  if (name == "rf" || name == "remote_fetch") return RpcMode::kRemoteFetch;
  if (name == "server_reply" || name == "sr") return RpcMode::kServerReply;
  if (name == "hybrid") return RpcMode::kHybrid;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown rpc mode \"", name, "\" (expected rf, server_reply or hybrid)"));
}

absl::string_view BatchModeName(BatchMode mode) {
  switch (mode) {
    case BatchMode::kOff:
      return "off";
    case BatchMode::kFixed:
      return "fixed";
    case BatchMode::kAuto:
      return "auto";
    case BatchMode::kAdaptive:
      return "adaptive";
  }
  return "unknown";
}

absl::StatusOr<BatchMode> ParseBatchMode(absl::string_view name) {
  if (name == "off" || name == "none") return BatchMode::kOff;
  if (name == "fixed") return BatchMode::kFixed;
  if (name == "auto") return BatchMode::kAuto;
  if (name == "adaptive") return BatchMode::kAdaptive;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown batch mode \"", name, "\" (expected off, fixed, auto or adaptive)"));
}

absl::Status SetFetchPolicy(absl::string_view name, ChannelOptions* options) {
  if (name == "adaptive" || name == "paper") {
    options->fetch.adaptive_delay = name == "adaptive";
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown fetch policy \"", name, "\" (expected adaptive or paper)"));
}

absl::string_view FetchPolicyName(const ChannelOptions& options) {
  return options.fetch.adaptive_delay ? "adaptive" : "paper";
}

absl::Status SetSizerRule(absl::string_view name, ChannelOptions* options) {
  const SizerOptions defaults;
  SizerOptions& sizer = options->batching.sizer;
  if (name == "proportional") {
    sizer.proportional_steps = defaults.proportional_steps;
    sizer.holdoff_windows = defaults.holdoff_windows;
    sizer.shrink_windows = defaults.shrink_windows;
    sizer.min_window = defaults.min_window;
    sizer.max_window = defaults.max_window;
    sizer.peak_guard = defaults.peak_guard;
    sizer.grow_to = defaults.grow_to;
    return absl::OkStatus();
  }
  if (name == "paper") {
    sizer.proportional_steps = false;
    sizer.holdoff_windows = 0;
    sizer.shrink_windows = 1;
    sizer.min_window = absl::ZeroDuration();
    sizer.max_window = absl::ZeroDuration();
    sizer.peak_guard = false;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sizer rule \"", name, "\" (expected proportional or paper)"));
}

absl::string_view SizerRuleName(const ChannelOptions& options) {
  return options.batching.sizer.proportional_steps ? "proportional" : "paper";
}

namespace {

// Collects the first bad field of a ChannelOptions.
class Checker {
 public:
  explicit Checker(std::string* field) : field_(field) {}

  template <typename T>
  void AtLeast(const char* name, T value, T min) {
    if (ok() && !(value >= min)) Bad(name, absl::StrCat(value, " is below ", min));
  }
  template <typename T>
  void AtMost(const char* name, T value, T max) {
    if (ok() && !(value <= max)) Bad(name, absl::StrCat(value, " is above ", max));
  }
  template <typename T>
  void InRange(const char* name, T value, T min, T max) {
    if (ok() && !(value >= min && value <= max)) {
      Bad(name, absl::StrCat(value, " is outside [", min, ", ", max, "]"));
    }
  }
  void Positive(const char* name, absl::Duration d) {
    if (ok() && d <= absl::ZeroDuration()) {
      Bad(name, absl::StrCat(absl::FormatDuration(d), " is not positive"));
    }
  }
  void NotNegative(const char* name, absl::Duration d) {
    if (ok() && d < absl::ZeroDuration()) {
      Bad(name, absl::StrCat(absl::FormatDuration(d), " is negative"));
    }
  }
  void Bad(const char* name, absl::string_view why) {
    if (!ok()) return;
    status_ = absl::InvalidArgumentError(absl::StrCat(name, " ", why));
    if (field_ != nullptr) *field_ = name;
  }
  bool ok() const { return status_.ok(); }
  absl::Status status() const { return status_; }

 private:
  std::string* const field_;
  absl::Status status_;
};

// Both sides' provider options (the transport checks the rest when it
// opens the device).
void CheckProviderOptions(const transport::ProviderOptions& p, Checker* c) {
  c->InRange("provider_options.port", p.port, 0, 255);
  c->InRange("provider_options.gid_index", p.gid_index, -1, 65535);
}

}  // namespace

absl::Status ValidateChannelOptions(const ChannelOptions& o,
                                    std::string* field) {
  Checker c(field);
  const FetchOptions& f = o.fetch;
  c.AtLeast("fetch.retries", f.retries, 1);
  c.AtMost("fetch.retries", f.retries, 1 << 20);
  if (c.ok() && f.size < wire::kHeaderBytes) {
    c.Bad("fetch.size",
          absl::StrCat(f.size, " is below the ", wire::kHeaderBytes,
                       "-byte response header"));
  }
  c.InRange<uint32_t>("fetch.size", f.size, 0, uint32_t{1} << 24);
  c.AtLeast("fetch.switch_after", f.switch_after, 1);
  c.AtMost("fetch.switch_after", f.switch_after, 1 << 20);
  if (c.ok() &&
      !(f.switch_back_ratio > 0 && std::isfinite(f.switch_back_ratio))) {
    c.Bad("fetch.switch_back_ratio",
          absl::StrCat(f.switch_back_ratio, " is not a positive number"));
  }
  if (c.ok() && o.mode != RpcMode::kRemoteFetch &&
      o.mode != RpcMode::kServerReply && o.mode != RpcMode::kHybrid) {
    c.Bad("mode", absl::StrCat(static_cast<int>(o.mode),
                               " is not rf, server_reply or hybrid"));
  }
  c.AtLeast("connections", o.connections, 0);
  c.InRange("slots_per_connection", o.slots_per_connection, 1, 4096);
  // Framed into 32-bit slot sizes: far past what a server grants (1 GiB).
  c.InRange<uint32_t>("max_request_bytes", o.max_request_bytes, 1, 1u << 30);
  c.InRange<uint32_t>("max_response_bytes", o.max_response_bytes, 1, 1u << 30);
  c.Positive("rering_after", o.rering_after);
  c.Positive("default_timeout", o.default_timeout);
  c.Positive("connect_timeout", o.connect_timeout);
  c.InRange<uint32_t>("max_inline", o.max_inline, 0, 1024);
  c.InRange("signal_every", o.signal_every, 1, 64);
  c.NotNegative("fetch.max_delay", f.max_delay);
  if (c.ok() && !(f.delay_miss_target > 0 && f.delay_miss_target <= 0.5)) {
    c.Bad("fetch.delay_miss_target",
          absl::StrCat(f.delay_miss_target, " is outside (0, 0.5]"));
  }
  const BatchingOptions& b = o.batching;
  if (c.ok() && b.mode != BatchMode::kOff && b.mode != BatchMode::kFixed &&
      b.mode != BatchMode::kAuto && b.mode != BatchMode::kAdaptive) {
    c.Bad("batching.mode",
          absl::StrCat(static_cast<int>(b.mode),
                       " is not off, fixed, auto or adaptive"));
  }
  c.AtLeast("batching.size", b.size, 1);
  c.AtMost("batching.size", b.size, 1024);
  c.AtLeast<uint32_t>("batching.bytes", b.bytes, 64);
  c.AtMost<uint32_t>("batching.bytes", b.bytes, uint32_t{1} << 24);
  c.AtMost<uint32_t>("batching.result_bytes", b.result_bytes,
                     uint32_t{1} << 30);
  c.NotNegative("batching.timeout", b.timeout);
  c.AtLeast("batching.idle_in_flight", b.idle_in_flight, 0);
  c.AtMost("batching.idle_in_flight", b.idle_in_flight, 1 << 20);
  if (c.ok() && b.mode != BatchMode::kOff &&
      b.timeout == absl::InfiniteDuration() && b.idle_in_flight == 0) {
    // Only N or L would send a batch: a caller short of N waits for ever.
    c.Bad("batching.timeout",
          "inf with the idle flush off (batching.idle_in_flight 0): a batch "
          "that never fills would never be sent");
  }
  c.AtLeast("batching.max_outstanding", b.max_outstanding, 1);
  c.AtMost("batching.max_outstanding", b.max_outstanding, 1 << 20);
  const SizerOptions& z = b.sizer;
  c.Positive("batching.sizer.latency_limit", z.latency_limit);
  if (c.ok() && !(z.alpha > 0 && z.alpha < 1)) {
    c.Bad("batching.sizer.alpha", absl::StrCat(z.alpha, " is outside (0, 1)"));
  }
  c.AtLeast("batching.sizer.window", z.window, 1);
  c.AtMost("batching.sizer.window", z.window, 1 << 24);
  c.NotNegative("batching.sizer.min_window", z.min_window);
  c.NotNegative("batching.sizer.max_window", z.max_window);
  if (c.ok() && z.max_window > absl::ZeroDuration() &&
      z.min_window > z.max_window) {
    // A window never ends before its minimum: the maximum would mean nothing.
    c.Bad("batching.sizer.max_window",
          absl::StrCat(absl::FormatDuration(z.max_window),
                       " is below batching.sizer.min_window (",
                       absl::FormatDuration(z.min_window), ")"));
  }
  c.AtLeast("batching.sizer.holdoff_windows", z.holdoff_windows, 0);
  c.AtLeast("batching.sizer.shrink_windows", z.shrink_windows, 1);
  if (!(z.grow_to > 0 && z.grow_to <= 1)) {
    c.Bad("batching.sizer.grow_to",
          absl::StrCat(z.grow_to, " is outside (0, 1]"));
  }
  c.AtLeast("batching.group", b.group, 1);
  CheckProviderOptions(o.provider_options, &c);
  return c.status();
}

absl::Status ValidateServerOptions(const ServerOptions& o, std::string* field) {
  Checker c(field);
  c.InRange("workers", o.workers, 1, 1024);
  c.InRange("pin_first_cpu", o.pin_first_cpu, -1, 1 << 20);
  c.InRange("max_slots_per_connection", o.max_slots_per_connection, 1, 4096);
  c.InRange<uint32_t>("max_request_bytes", o.max_request_bytes, 1, 1u << 30);
  c.InRange<uint32_t>("max_response_bytes", o.max_response_bytes, 1, 1u << 30);
  c.InRange("max_connections", o.max_connections, 1, 1 << 24);
  c.AtLeast("idle_spin_rounds", o.idle_spin_rounds, 0);
  c.NotNegative("idle_park_after", o.idle_park_after);
  c.NotNegative("hot_window", o.hot_window);
  c.NotNegative("stall_warning", o.stall_warning);
  // Added to clock readings; past a second a slot is no longer "hot".
  if (c.ok() && o.hot_window > absl::Seconds(1)) {
    c.Bad("hot_window",
          absl::StrCat(absl::FormatDuration(o.hot_window), " is above 1s"));
  }
  c.InRange<uint32_t>("max_inline", o.max_inline, 0, 1024);
  c.InRange("blocking_threads", o.blocking_threads, 1, 1 << 16);
  // A result part holds at least one entry's header and a cache line.
  c.AtLeast<uint32_t>("result_batch_bytes", o.result_batch_bytes, 64);
  CheckProviderOptions(o.provider_options, &c);
  return c.status();
}

}  // namespace rfrpc
