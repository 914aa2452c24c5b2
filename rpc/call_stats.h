// Copyright 2026 The rfrpc Authors.
//
// Per-method call figures (MethodStats) and the power-of-two histogram they
// use: what Server::method_stats() and Channel::method_stats() return. The
// counters behind them are kept per server worker or per calling thread
// (rpc/method_counters.h); these are snapshots, summed when read. Also the
// transport work counts of ChannelStats and ServerStats (TransportWork).
//
//   for (const MethodStats& m : server.method_stats()) {
//     LOG(INFO) << m.method << ": " << m.calls << " calls, p99 handler time "
//               << m.latency_ns.Quantile(0.99) << " ns";
//   }
//
// Thread safety: plain values.

#ifndef RFRPC_RPC_CALL_STATS_H_
#define RFRPC_RPC_CALL_STATS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rfrpc {

// Work the transport did for a channel's or a server's connections
// (ChannelStats::work, ServerStats::work; docs/rpc.md "What a call posts").
struct TransportWork {
  // Work requests posted (READs and WRITEs, doorbell rings included), post
  // lists (one doorbell each), WRITEs that went inline, and signaled
  // requests (the rest make no completion). A channel's are its
  // transport's own counts (under fault injection, a wrapping connection,
  // they stay 0); a server's are its pushed results.
  uint64_t wqes = 0;
  uint64_t doorbells = 0;
  uint64_t inline_writes = 0;
  uint64_t signaled = 0;
  // The completion queues (a channel's connections', a server's workers'):
  // poll rounds, of them empty, and times a poller armed the queue and
  // slept. A client polls only while it has calls to drive: an idle
  // channel's counts stand still.
  uint64_t cq_polls = 0;
  uint64_t cq_empty_polls = 0;
  uint64_t cq_blocks = 0;

  void Add(const TransportWork& o) {
    wqes += o.wqes;
    doorbells += o.doorbells;
    inline_writes += o.inline_writes;
    signaled += o.signaled;
    cq_polls += o.cq_polls;
    cq_empty_polls += o.cq_empty_polls;
    cq_blocks += o.cq_blocks;
  }
};

// A distribution in power-of-two buckets: counts[i] holds the values v with
// 2^(first_log2 + i - 1) < v <= 2^(first_log2 + i) (counts[0]: every
// v <= 2^first_log2); the last bucket holds the rest (+Inf).
struct HistogramStats {
  int first_log2 = 0;
  std::vector<uint64_t> counts;
  // Sum of the recorded values (their unit: ns or bytes).
  uint64_t sum = 0;

  uint64_t count() const;
  // 2^(first_log2 + i); +infinity for the last bucket.
  double UpperBound(size_t i) const;
  // The value a fraction q in [0, 1] of the samples lie at or below,
  // interpolated linearly within its bucket (as PromQL's histogram_quantile).
  // 0 when empty; the last finite bound when it falls in the +Inf bucket.
  double Quantile(double q) const;
  // Adds `other`'s counts. REQUIRES: the same first_log2 and bucket count,
  // or this one empty (it then takes other's layout).
  void Merge(const HistogramStats& other);
};

// absl::StatusCode values are 0..16.
inline constexpr int kStatusCodes = 17;

// One method's calls, as a server or a channel saw them.
struct MethodStats {
  uint32_t method_id = 0;
  // "/package.Service/Method". Server: "" for calls of an id no registered
  // service has (they fail UNIMPLEMENTED). Channel: "" (a channel knows ids
  // only; //rpc:metrics names them, see RpcMetrics::NameMethods).
  std::string method;
  // Calls that finished, OK or not.
  uint64_t calls = 0;
  // Finished calls by status code (failures[0], OK, stays 0).
  std::array<uint64_t, kStatusCodes> failures{};
  // Server: handler time, ns, from the call's arrival (for the calls of a
  // request batch: from the end of the previous one) to the result's end.
  // A run of a batch's calls of one method that its handler serves at once
  // counts each of them at the run's average (one clock read per run).
  // Channel: the call's latency, ns: from the call to the progress round that
  // found its result (or its failure), sync or async.
  HistogramStats latency_ns;
  // Server: payload bytes of OK results. Channel: not kept (empty).
  HistogramStats result_bytes;

  uint64_t failed() const;
  // Adds `other`'s counts (same method).
  void Merge(const MethodStats& other);
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_CALL_STATS_H_
