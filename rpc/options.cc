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

}  // namespace rfrpc
