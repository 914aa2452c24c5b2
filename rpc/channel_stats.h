// Copyright 2026 The rfrpc Authors.
//
// ChannelStats: a channel's counters (Channel::stats(), and per address in
// rpc/stats.h's snapshots).

#ifndef RFRPC_RPC_CHANNEL_STATS_H_
#define RFRPC_RPC_CHANNEL_STATS_H_

#include <cstdint>

#include "rpc/call_stats.h"

namespace rfrpc {

struct ChannelStats {
  uint64_t calls = 0;
  uint64_t calls_remote_fetch = 0;  // Completed by fetching.
  uint64_t calls_server_reply = 0;  // Completed by a server WRITE.
  uint64_t calls_failed = 0;
  uint64_t rdma_writes = 0;
  uint64_t rdma_reads = 0;
  uint64_t fetches = 0;             // Header READs (first READs and retries).
  uint64_t switches_to_server_reply = 0;
  uint64_t switches_to_remote_fetch = 0;
  // fetch_histogram[i]: calls completed by remote fetching after i+1
  // fetches; the last bucket counts 16 or more.
  uint64_t fetch_histogram[16] = {};
  // Header READs of the calls in fetch_histogram, summed (exact, where the
  // histogram's last bucket is open-ended).
  uint64_t fetched_call_fetches = 0;
  // Sum of server-reported processing time, ns.
  uint64_t server_time_ns = 0;

  // Remote fetching, averaged over connections: the measured READ round
  // trip and the learned delay before a call's first fetch.
  double fetch_rtt_ns = 0;
  double fetch_delay_ns = 0;
  // Now: slots (calls in flight, or batches) in use, over connections.
  int slots_in_use = 0;

  // Batching.
  // Request batches sent; a batch of one call goes as a plain request
  // (nothing to share framing with) and counts here and in batches_plain.
  uint64_t batches = 0;
  uint64_t batches_plain = 0;
  uint64_t batched_calls = 0;         // Calls that went in them.
  uint64_t flushes_full = 0;          // Flushed on N.
  uint64_t flushes_bytes = 0;         // Flushed because L would be exceeded.
  uint64_t flushes_timeout = 0;       // Flushed on T.
  // Flushed idle: a caller was about to wait for the batch and no company
  // worth waiting for was on its way (ChannelOptions::batching.idle_in_flight,
  // docs/rpc.md); a sync call sent alone counts here too.
  uint64_t flushes_idle = 0;
  // Adaptive: groups of entries WRITten into the server's slot before
  // their batch was published (synchronization-ahead transmission).
  uint64_t groups_sent_ahead = 0;
  // The most requests outstanding at once on one connection (batched:
  // added to a batch, result not in yet; bounded by max_outstanding).
  int outstanding_peak = 0;
  uint64_t result_parts = 0;          // Result parts received.
  uint64_t publishes_delayed = 0;     // Adaptive: publishes held back.
  // Async calls that found max_outstanding requests (or every slot) busy
  // and waited in the connection's queue.
  uint64_t calls_queued = 0;
  // Calls that found the connection's send queue near full (work requests
  // not yet completed) and waited for completions before posting.
  uint64_t send_queue_waits = 0;
  int batch_size = 0;                 // Current N (auto: the sizer's).
  double sizer_k = 0;                 // Auto: last window's fraction over.
  uint64_t sizer_adjustments = 0;

  // Work discovery (docs/rpc.md): doorbell rings (each two WRITEs, counted
  // in rdma_writes), of them re-rings of unanswered requests and rings with
  // a notify (the worker may be parked), and requests posted without a ring
  // because the worker was polling their slot (hot).
  uint64_t rings = 0;
  uint64_t rerings = 0;
  uint64_t notifies = 0;
  uint64_t hot_posts = 0;
  // Long calls: times a sync caller slept until its call's push woke its
  // connection's completion queue (PendingCall::notify; docs/rpc.md
  // "Threads and waiting"), instead of a timed sleep.
  uint64_t push_sleeps = 0;

  // Cancellation: calls finished with CANCELLED by ClientContext::TryCancel,
  // and cancel words WRITTen to the server (one per slot whose calls were
  // all cancelled after their request was sent).
  uint64_t calls_cancelled = 0;
  uint64_t cancel_writes = 0;

  // What the transport did for the channel's connections.
  TransportWork work;

  // Adds `other`'s counters (every field that counts events; the largest
  // outstanding_peak) into this. Figures of the moment (batch_size,
  // sizer_k, slots_in_use, fetch_rtt_ns, fetch_delay_ns) are left as they
  // are: the caller decides how to combine those.
  void AddCounters(const ChannelStats& other);

  double CallsPerBatch() const {
    return batches == 0 ? 0.0 : static_cast<double>(batched_calls) / batches;
  }

  double ReadsPerCall() const {
    return calls == 0 ? 0.0 : static_cast<double>(rdma_reads) / calls;
  }
  double RdmaOpsPerCall() const {
    return calls == 0 ? 0.0
                      : static_cast<double>(rdma_reads + rdma_writes) / calls;
  }
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_CHANNEL_STATS_H_
