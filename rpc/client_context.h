// Copyright 2026 The rfrpc Authors.
//
// ClientContext: what a caller sets for one call (deadline, shard) and what
// it learns after (how the result came back, what it cost), and the handle
// that cancels the call. Included by rpc/channel.h, which the generated stubs
// include.

#ifndef RFRPC_RPC_CLIENT_CONTEXT_H_
#define RFRPC_RPC_CLIENT_CONTEXT_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "rpc/options.h"

namespace rfrpc {
namespace internal {
class ClientContextAccess;  // rpc/client_context_internal.h
}  // namespace internal

// Per-call settings in, per-call facts out. Not copyable (a call in flight
// refers to it).
class ClientContext {
 public:
  ClientContext() = default;
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;

  // The call fails with DEADLINE_EXCEEDED after this long (from the call's
  // start). Overrides ChannelOptions::default_timeout.
  void set_timeout(absl::Duration timeout) {
    timeout_ = timeout;
    deadline_ = absl::InfiniteFuture();
  }
  void set_deadline(absl::Time deadline) {
    deadline_ = deadline;
    timeout_ = absl::InfiniteDuration();
  }
  // Routes the call to connection shard % connections (e.g. the partition
  // that owns a key). Without a shard, calls go round robin.
  void set_shard(uint64_t shard) {
    shard_ = shard;
    has_shard_ = true;
  }

  // Cancels the call made with this context: it finishes with CANCELLED
  // (the callback or future gets it, exactly once; a sync call returns it)
  // unless its result got there first, and the server is told (its handler
  // sees ServerContext::IsCancelled; an async or offloaded one's result is
  // then dropped). The call's slot is reused only once the server has
  // answered, so a late result never reaches another call. A context stays
  // cancelled: a call started with it later fails at once with CANCELLED.
  // Any thread, any time. REQUIRES: the channel of a call in flight with
  // this context is alive.
  void TryCancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  // After the call: how the result came back and what it cost.
  RpcMode mode_used() const { return mode_used_; }
  int fetches() const { return fetches_; }        // READs of the header.
  int rdma_reads() const { return rdma_reads_; }  // All READs.
  // Server processing time it reported.
  absl::Duration server_time() const { return server_time_; }

  // As set (set_timeout, set_deadline, set_shard): the one not set is
  // InfiniteDuration / InfiniteFuture.
  absl::Duration timeout() const { return timeout_; }
  absl::Time deadline() const { return deadline_; }
  bool has_shard() const { return has_shard_; }
  uint64_t shard() const { return shard_; }

 private:
  friend class internal::ClientContextAccess;

  absl::Duration timeout_ = absl::InfiniteDuration();
  absl::Time deadline_ = absl::InfiniteFuture();
  uint64_t shard_ = 0;
  bool has_shard_ = false;
  RpcMode mode_used_ = RpcMode::kRemoteFetch;
  int fetches_ = 0;
  int rdma_reads_ = 0;
  absl::Duration server_time_;
  std::atomic<bool> cancelled_{false};
  std::atomic<std::atomic<uint64_t>*> cancels_{nullptr};
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_CLIENT_CONTEXT_H_
