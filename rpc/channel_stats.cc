// Copyright 2026 The rfrpc Authors.

#include "rpc/channel_stats.h"

#include <algorithm>

namespace rfrpc {

void ChannelStats::AddCounters(const ChannelStats& o) {
  calls += o.calls;
  calls_remote_fetch += o.calls_remote_fetch;
  calls_server_reply += o.calls_server_reply;
  calls_failed += o.calls_failed;
  rdma_writes += o.rdma_writes;
  rdma_reads += o.rdma_reads;
  fetches += o.fetches;
  switches_to_server_reply += o.switches_to_server_reply;
  switches_to_remote_fetch += o.switches_to_remote_fetch;
  for (int i = 0; i < 16; ++i) fetch_histogram[i] += o.fetch_histogram[i];
  fetched_call_fetches += o.fetched_call_fetches;
  server_time_ns += o.server_time_ns;
  batches += o.batches;
  batches_plain += o.batches_plain;
  batched_calls += o.batched_calls;
  flushes_full += o.flushes_full;
  flushes_bytes += o.flushes_bytes;
  flushes_timeout += o.flushes_timeout;
  flushes_idle += o.flushes_idle;
  groups_sent_ahead += o.groups_sent_ahead;
  outstanding_peak = std::max(outstanding_peak, o.outstanding_peak);
  result_parts += o.result_parts;
  publishes_delayed += o.publishes_delayed;
  calls_queued += o.calls_queued;
  send_queue_waits += o.send_queue_waits;
  sizer_adjustments += o.sizer_adjustments;
  rings += o.rings;
  rerings += o.rerings;
  notifies += o.notifies;
  hot_posts += o.hot_posts;
  push_sleeps += o.push_sleeps;
  calls_cancelled += o.calls_cancelled;
  cancel_writes += o.cancel_writes;
  work.Add(o.work);
}

}  // namespace rfrpc
