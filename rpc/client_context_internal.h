// Copyright 2026 The rfrpc Authors.
//
// What the channel and its connections do to a ClientContext that its
// users may not: bind a call's cancellation to the channel, and record how
// the call finished. Internal to rpc/.

#ifndef RFRPC_RPC_CLIENT_CONTEXT_INTERNAL_H_
#define RFRPC_RPC_CLIENT_CONTEXT_INTERNAL_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "rpc/client_context.h"
#include "rpc/options.h"

namespace rfrpc {
namespace internal {

class ClientContextAccess {
 public:
  // Records the channel the call goes through, whose count of cancels
  // TryCancel bumps (so its connections look). Returns ctx.cancelled(),
  // read after the store (the other half of TryCancel's store and load).
  static bool BindCancel(ClientContext& ctx, std::atomic<uint64_t>* cancels) {
    ctx.cancels_.store(cancels, std::memory_order_seq_cst);
    return ctx.cancelled_.load(std::memory_order_seq_cst);
  }

  // How the call finished: what ClientContext::mode_used() and the
  // counters after it report.
  static void SetResult(ClientContext& ctx, RpcMode mode, int fetches,
                        int reads, absl::Duration server_time) {
    ctx.mode_used_ = mode;
    ctx.fetches_ = fetches;
    ctx.rdma_reads_ = reads;
    ctx.server_time_ = server_time;
  }
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_CLIENT_CONTEXT_INTERNAL_H_
