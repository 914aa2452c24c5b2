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

}  // namespace rfrpc
