// Copyright 2026 The rfrpc Authors.

#include "rpc/hybrid_policy.h"

namespace rfrpc {

HybridPolicy::HybridPolicy(const Params& params)
    : params_(params),
      current_(params.mode == RpcMode::kServerReply ? RpcMode::kServerReply
                                                    : RpcMode::kRemoteFetch) {}

bool HybridPolicy::OnCallExceededRetries() {
  ++consecutive_slow_;
  if (params_.mode != RpcMode::kHybrid ||
      current_ != RpcMode::kRemoteFetch ||
      consecutive_slow_ < params_.switch_after) {
    return false;
  }
  current_ = RpcMode::kServerReply;
  consecutive_slow_ = 0;
  consecutive_fast_ = 0;
  ++to_server_reply_;
  return true;
}

void HybridPolicy::OnFetchedCall(bool slow) {
  if (!slow) consecutive_slow_ = 0;
}

bool HybridPolicy::OnServerReplyCall(absl::Duration server_time,
                                     absl::Duration reply_latency,
                                     absl::Duration rf_budget) {
  if (params_.mode != RpcMode::kHybrid ||
      current_ != RpcMode::kServerReply) {
    return false;
  }
  const absl::Duration budget = rf_budget * params_.switch_back_ratio;
  if (server_time < budget && reply_latency < rf_budget) {
    ++consecutive_fast_;
  } else {
    consecutive_fast_ = 0;
  }
  if (consecutive_fast_ < params_.switch_after) return false;
  current_ = RpcMode::kRemoteFetch;
  consecutive_fast_ = 0;
  consecutive_slow_ = 0;
  ++to_remote_fetch_;
  return true;
}

}  // namespace rfrpc
