// Copyright 2026 The rfrpc Authors.

#include "rpc/options.h"

#include "absl/strings/str_cat.h"

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
    options->adaptive_fetch_delay = name == "adaptive";
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown fetch policy \"", name, "\" (expected adaptive or paper)"));
}

absl::string_view FetchPolicyName(const ChannelOptions& options) {
  return options.adaptive_fetch_delay ? "adaptive" : "paper";
}

absl::Status SetSizerRule(absl::string_view name, ChannelOptions* options) {
  const ChannelOptions defaults;
  if (name == "proportional") {
    options->sizer_proportional_steps = defaults.sizer_proportional_steps;
    options->sizer_holdoff_windows = defaults.sizer_holdoff_windows;
    options->sizer_shrink_windows = defaults.sizer_shrink_windows;
    options->sizer_min_window = defaults.sizer_min_window;
    options->sizer_max_window = defaults.sizer_max_window;
    options->sizer_peak_guard = defaults.sizer_peak_guard;
    return absl::OkStatus();
  }
  if (name == "paper") {
    options->sizer_proportional_steps = false;
    options->sizer_holdoff_windows = 0;
    options->sizer_shrink_windows = 1;
    options->sizer_min_window = absl::ZeroDuration();
    options->sizer_max_window = absl::ZeroDuration();
    options->sizer_peak_guard = false;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sizer rule \"", name, "\" (expected proportional or paper)"));
}

absl::string_view SizerRuleName(const ChannelOptions& options) {
  return options.sizer_proportional_steps ? "proportional" : "paper";
}

}  // namespace rfrpc
