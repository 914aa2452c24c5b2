// Copyright 2026 The rfrpc Authors.

#include "rpc/metrics.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "prometheus/check_names.h"
#include "prometheus/text_serializer.h"
#include "base/mutex.h"
#include "rpc/stats.h"

namespace rfrpc {
namespace metrics {

std::shared_ptr<prometheus::Registry> DefaultRegistry() {
  static auto* registry = new std::shared_ptr<prometheus::Registry>(
      std::make_shared<prometheus::Registry>());
  return *registry;
}

namespace {

template <typename Builder, typename T>
absl::StatusOr<prometheus::Family<T>*> AddFamily(Builder builder,
                                                 prometheus::Registry* registry,
                                                 const std::string& name,
                                                 const std::string& help) {
  if (!prometheus::CheckMetricName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", name, "\" is not a Prometheus metric name"));
  }
  // prometheus-cpp reports a name taken by another type by throwing.
  try {
    return &builder.Name(name).Help(help).Register(*registry);
  } catch (const std::exception& e) {
    return absl::AlreadyExistsError(
        absl::StrCat("metric family ", name, ": ", e.what()));
  }
}

}  // namespace

absl::StatusOr<prometheus::Family<prometheus::Counter>*> AddCounterFamily(
    prometheus::Registry* registry, const std::string& name,
    const std::string& help) {
  return AddFamily<prometheus::detail::Builder<prometheus::Counter>,
                   prometheus::Counter>(prometheus::BuildCounter(), registry,
                                        name, help);
}

absl::StatusOr<prometheus::Family<prometheus::Gauge>*> AddGaugeFamily(
    prometheus::Registry* registry, const std::string& name,
    const std::string& help) {
  return AddFamily<prometheus::detail::Builder<prometheus::Gauge>,
                   prometheus::Gauge>(prometheus::BuildGauge(), registry, name,
                                      help);
}

absl::StatusOr<prometheus::Family<prometheus::Histogram>*> AddHistogramFamily(
    prometheus::Registry* registry, const std::string& name,
    const std::string& help) {
  return AddFamily<prometheus::detail::Builder<prometheus::Histogram>,
                   prometheus::Histogram>(prometheus::BuildHistogram(),
                                          registry, name, help);
}

// ---------------------------------------------------------------------------
// Folds

void CounterFold::Set(const prometheus::Labels& labels, double total) {
  auto it = series_.find(labels);
  if (it == series_.end()) {
    it = series_.emplace(labels, std::make_pair(&family_->Add(labels), 0.0)).first;
  }
  auto& [counter, shown] = it->second;
  if (total > shown) {
    counter->Increment(total - shown);
    shown = total;
  }
}

void CounterFold::SetIfAny(const prometheus::Labels& labels, double total) {
  if (total > 0 || series_.count(labels) > 0) Set(labels, total);
}

void GaugeFold::Set(const prometheus::Labels& labels, double value) {
  auto it = series_.find(labels);
  if (it == series_.end()) {
    it = series_.emplace(labels, std::make_pair(&family_->Add(labels), true)).first;
  }
  it->second.first->Set(value);
  it->second.second = true;
}

void GaugeFold::Sweep() {
  for (auto it = series_.begin(); it != series_.end();) {
    if (!it->second.second) {
      family_->Remove(it->second.first);
      it = series_.erase(it);
    } else {
      it->second.second = false;
      ++it;
    }
  }
}

void HistogramFold::Set(const prometheus::Labels& labels,
                        const HistogramStats& h) {
  if (h.counts.size() < 2) return;
  std::vector<double> bounds;
  for (size_t i = 0; i + 1 < h.counts.size(); ++i) bounds.push_back(h.UpperBound(i));
  SetBuckets(labels, bounds, h.counts, h.sum);
}

void HistogramFold::SetBuckets(const prometheus::Labels& labels,
                               const std::vector<double>& bounds,
                               const std::vector<uint64_t>& counts,
                               uint64_t sum) {
  if (counts.size() != bounds.size() + 1) return;
  auto it = series_.find(labels);
  if (it == series_.end()) {
    prometheus::Histogram::BucketBoundaries scaled;
    for (double b : bounds) scaled.push_back(b * scale_);
    Series s;
    s.histogram = &family_->Add(labels, scaled);
    s.shown.assign(counts.size(), 0);
    it = series_.emplace(labels, std::move(s)).first;
  }
  Series& s = it->second;
  if (s.shown.size() != counts.size()) return;
  std::vector<double> increments(counts.size(), 0);
  bool any = false;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > s.shown[i]) {
      increments[i] = static_cast<double>(counts[i] - s.shown[i]);
      s.shown[i] = counts[i];
      any = true;
    }
  }
  double added = 0;
  if (sum > s.shown_sum) {
    added = static_cast<double>(sum - s.shown_sum);
    s.shown_sum = sum;
  }
  if (any || added > 0) s.histogram->ObserveMultiple(increments, added * scale_);
}

// ---------------------------------------------------------------------------
// RpcMetrics

namespace {

// Registries an RpcMetrics exports into: one each, or counters would be
// advanced twice.
Mutex in_use_mu;
std::set<const prometheus::Registry*>& InUse() {
  static auto* s = new std::set<const prometheus::Registry*>;
  return *s;
}

std::string CodeName(int code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

constexpr double kNs = 1e-9;

}  // namespace

struct RpcMetrics::State {
  explicit State(std::shared_ptr<prometheus::Registry> r)
      : registry(std::move(r)) {}

  absl::Status Build();
  void Fold() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void FoldServers(const std::vector<ServerSnapshot>& servers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void FoldChannels(const std::vector<ChannelSnapshot>& channels)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  std::string ClientMethodName(uint32_t id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  const std::shared_ptr<prometheus::Registry> registry;
  Mutex mu;
  bool closed ABSL_GUARDED_BY(mu) = false;
  std::vector<std::function<void()>> folds ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<uint32_t, std::string> names ABSL_GUARDED_BY(mu);

  // Server side.
  std::unique_ptr<CounterFold> s_calls, s_failures, s_accepted, s_rejected,
      s_closed, s_bad, s_batches, s_batch_runs, s_stalls, s_stalls_preempted,
      s_reply_writes, s_rdma, s_rings, s_parks, s_park_notifies, s_hot_serves,
      s_push_notifies, s_liveness_walks, s_work;
  std::unique_ptr<HistogramFold> s_handler, s_result;
  std::unique_ptr<GaugeFold> s_connections, s_slots;
  // Client side.
  std::unique_ptr<CounterFold> c_calls, c_failures, c_timeouts, c_cancels,
      c_results, c_switches, c_rdma, c_fetches, c_server_time, c_batches,
      c_batched, c_flushes, c_parts, c_delayed, c_adjust, c_queued, c_sq_waits,
      c_rings, c_rerings, c_notifies, c_hot_posts, c_push_sleeps, c_work;
  std::unique_ptr<HistogramFold> c_duration, c_fetches_per_call;
  std::unique_ptr<GaugeFold> c_channels, c_connections, c_slots,
      c_fetch_delay, c_fetch_rtt, c_batch_size, c_sizer_k;
};

absl::Status RpcMetrics::State::Build() {
  prometheus::Registry* r = registry.get();
  absl::Status status;
  auto counter = [&](std::unique_ptr<CounterFold>* out, const char* name,
                     const char* help) {
    if (!status.ok()) return;
    auto f = AddCounterFamily(r, name, help);
    if (!f.ok()) {
      status = f.status();
      return;
    }
    *out = std::make_unique<CounterFold>(*f);
  };
  auto gauge = [&](std::unique_ptr<GaugeFold>* out, const char* name,
                   const char* help) {
    if (!status.ok()) return;
    auto f = AddGaugeFamily(r, name, help);
    if (!f.ok()) {
      status = f.status();
      return;
    }
    *out = std::make_unique<GaugeFold>(*f);
  };
  auto histogram = [&](std::unique_ptr<HistogramFold>* out, const char* name,
                       const char* help, double scale) {
    if (!status.ok()) return;
    auto f = AddHistogramFamily(r, name, help);
    if (!f.ok()) {
      status = f.status();
      return;
    }
    *out = std::make_unique<HistogramFold>(*f, scale);
  };

  // Server: per method.
  counter(&s_calls, "rfrpc_server_calls_total",
          "Calls a server ran, by method (\"unknown\": ids no service has).");
  counter(&s_failures, "rfrpc_server_call_failures_total",
          "Calls a server answered with a non-OK status, by method and code.");
  histogram(&s_handler, "rfrpc_server_handler_seconds",
            "Server processing time of a call: handler, parsing and "
            "serialization, by method.",
            kNs);
  histogram(&s_result, "rfrpc_server_result_bytes",
            "Serialized size of OK results, by method.", 1);
  // Server: connections, modes, batches, RDMA.
  counter(&s_accepted, "rfrpc_server_connections_accepted_total",
          "Client connections accepted.");
  counter(&s_rejected, "rfrpc_server_connections_rejected_total",
          "Client connections refused (bad handshake, limits, auth).");
  counter(&s_closed, "rfrpc_server_connections_closed_total",
          "Client connections closed (client gone, protocol error, shutdown).");
  gauge(&s_connections, "rfrpc_server_connections", "Open client connections.");
  gauge(&s_slots, "rfrpc_server_connection_slots",
        "Request slots (calls in flight a client may have) held by open "
        "connections.");
  counter(&s_bad, "rfrpc_server_bad_requests_total",
          "Malformed requests (corrupt slot, unsupported flags, bad batch).");
  counter(&s_batches, "rfrpc_server_batches_total", "Request batches served.");
  counter(&s_batch_runs, "rfrpc_server_batch_runs_total",
          "Runs of a request batch's calls of one method served by one "
          "handler call.");
  counter(&s_stalls, "rfrpc_server_worker_stalls_total",
          "Sync handlers (or batch runs of them) that held their worker "
          "past stall_warning, stalling its other connections.");
  counter(&s_stalls_preempted, "rfrpc_server_worker_stalls_preempted_total",
          "Of the worker stalls: those where the worker waited at least half "
          "the time for a CPU another thread had.");
  counter(&s_reply_writes, "rfrpc_server_reply_writes_total",
          "Results the server wrote back into a client's memory "
          "(server-reply mode, or results above large_result_bytes).");
  counter(&s_rdma, "rfrpc_server_rdma_ops_total",
          "RDMA operations a server posted, by opcode.");
  // Server: work discovery.
  counter(&s_rings, "rfrpc_server_doorbell_rings_total",
          "Doorbell rings a server's workers took.");
  counter(&s_parks, "rfrpc_server_parks_total",
          "Times an idle worker parked (slept until woken).");
  counter(&s_park_notifies, "rfrpc_server_park_notifies_total",
          "Parks a client's notify ended.");
  counter(&s_hot_serves, "rfrpc_server_hot_serves_total",
          "Requests answered with the hot flag (the client's next request "
          "needs no doorbell).");
  counter(&s_push_notifies, "rfrpc_server_push_notifies_total",
          "Results pushed with a notify that wakes their sleeping caller "
          "(long calls).");
  counter(&s_liveness_walks, "rfrpc_server_liveness_walks_total",
          "Walks of every connection's liveness by parked workers (after "
          "some connection failed).");
  counter(&s_work, "rfrpc_server_work_requests_total",
          "Workers' pushed results that went inline (kind=inline), and "
          "their completion-queue polls (cq_polls, cq_empty_polls) and "
          "sleeps (cq_blocks).");

  // Client: per method.
  counter(&c_calls, "rfrpc_client_calls_total",
          "Calls a client finished (OK or not), by method.");
  counter(&c_failures, "rfrpc_client_call_failures_total",
          "Calls that finished with a non-OK status, by method and code.");
  counter(&c_timeouts, "rfrpc_client_call_timeouts_total",
          "Calls that missed their deadline (code DEADLINE_EXCEEDED), by "
          "method.");
  counter(&c_cancels, "rfrpc_client_call_cancellations_total",
          "Calls cancelled (code CANCELLED: channel destroyed), by method.");
  histogram(&c_duration, "rfrpc_client_call_duration_seconds",
            "Call latency a client saw, by method.", kNs);
  gauge(&c_slots, "rfrpc_client_slots_in_use",
        "Connection slots holding a call (or a batch) now.");
  // Client: modes.
  counter(&c_results, "rfrpc_client_results_total",
          "Results that arrived, by how: remote_fetch (the client READ them) "
          "or server_reply (the server WROTE them).");
  counter(&c_switches, "rfrpc_client_mode_switches_total",
          "Hybrid mode switches of a connection, by the mode switched to.");
  gauge(&c_connections, "rfrpc_client_connections",
        "Client connections, by the mode each uses now.");
  histogram(&c_fetches_per_call, "rfrpc_client_fetches_per_call",
            "Header READs a remote-fetched call needed (1 = first fetch hit).",
            1);
  counter(&c_fetches, "rfrpc_client_fetches_total",
          "Header READs (first fetches, retries, server-reply probes).");
  gauge(&c_fetch_delay, "rfrpc_client_fetch_delay_seconds",
        "Learned delay before a call's first fetch (mean over channels).");
  gauge(&c_fetch_rtt, "rfrpc_client_fetch_rtt_seconds",
        "Measured RDMA READ round trip (mean over channels).");
  counter(&c_server_time, "rfrpc_client_server_time_seconds_total",
          "Server processing time the results reported, summed.");
  counter(&c_rdma, "rfrpc_client_rdma_ops_total",
          "RDMA operations a client posted, by opcode.");
  // Client: batching.
  counter(&c_batches, "rfrpc_client_batches_total", "Request batches sent.");
  counter(&c_batched, "rfrpc_client_batched_calls_total",
          "Calls sent in request batches.");
  counter(&c_flushes, "rfrpc_client_batch_flushes_total",
          "Batches flushed, by reason: full (N), bytes (L), timeout (T), "
          "idle (a caller would wait, no company coming).");
  counter(&c_parts, "rfrpc_client_batch_result_parts_total",
          "Result parts of batches received.");
  counter(&c_delayed, "rfrpc_client_batch_publishes_delayed_total",
          "Adaptive batching: publishes held while the previous one flew.");
  counter(&c_adjust, "rfrpc_client_batch_sizer_adjustments_total",
          "Auto batching: changes of the batch size N.");
  counter(&c_queued, "rfrpc_client_calls_queued_total",
          "Async calls that waited for a free slot or max_outstanding.");
  counter(&c_sq_waits, "rfrpc_client_send_queue_waits_total",
          "Calls that waited for completions: the send queue was near full.");
  counter(&c_work, "rfrpc_client_work_requests_total",
          "Work requests by kind: posted (READs and WRITEs), doorbells (post "
          "lists), inline (WRITEs), signaled; and completion-queue polls "
          "(cq_polls, cq_empty_polls).");
  gauge(&c_batch_size, "rfrpc_client_batch_size",
        "Batch size N in force (0: batching off; mean over channels).");
  gauge(&c_sizer_k, "rfrpc_client_batch_sizer_k",
        "Auto batching: share of the last window's calls above the latency "
        "limit (mean over channels).");
  gauge(&c_channels, "rfrpc_client_channels", "Channels that exist now.");
  // Client: work discovery.
  counter(&c_rings, "rfrpc_client_doorbell_rings_total",
          "Doorbell rings a client posted (two WRITEs each).");
  counter(&c_rerings, "rfrpc_client_doorbell_rerings_total",
          "Rings repeated for requests left unanswered.");
  counter(&c_notifies, "rfrpc_client_notifies_total",
          "Rings with a notify to wake a parked worker.");
  counter(&c_hot_posts, "rfrpc_client_hot_posts_total",
          "Requests posted to a hot slot without a doorbell.");
  counter(&c_push_sleeps, "rfrpc_client_push_sleeps_total",
          "Times a sync caller of a long call slept until its result's push "
          "woke it.");
  return status;
}

std::string RpcMetrics::State::ClientMethodName(uint32_t id) const {
  auto it = names.find(id);
  if (it != names.end()) return it->second;
  return absl::StrFormat("0x%08x", id);
}

void RpcMetrics::State::FoldServers(const std::vector<ServerSnapshot>& servers) {
  for (const ServerSnapshot& s : servers) {
    const prometheus::Labels server{{"server", s.address}};
    const ServerStats& st = s.stats;
    for (const MethodStats& m : s.methods) {
      const std::string method = m.method.empty() ? "unknown" : m.method;
      const prometheus::Labels l{{"server", s.address}, {"method", method}};
      s_calls->Set(l, static_cast<double>(m.calls));
      for (int code = 1; code < kStatusCodes; ++code) {
        s_failures->SetIfAny({{"server", s.address},
                              {"method", method},
                              {"code", CodeName(code)}},
                             static_cast<double>(m.failures[code]));
      }
      s_handler->Set(l, m.latency_ns);
      s_result->Set(l, m.result_bytes);
    }
    s_accepted->Set(server, static_cast<double>(st.connections_accepted));
    s_rejected->Set(server, static_cast<double>(st.connections_rejected));
    s_closed->Set(server, static_cast<double>(st.connections_closed));
    s_bad->Set(server, static_cast<double>(st.bad_requests));
    s_batches->Set(server, static_cast<double>(st.batches));
    s_batch_runs->Set(server, static_cast<double>(st.batch_runs));
    s_stalls->Set(server, static_cast<double>(st.worker_stalls));
    s_stalls_preempted->Set(server,
                            static_cast<double>(st.worker_stalls_preempted));
    s_reply_writes->Set(server, static_cast<double>(st.calls_server_reply));
    s_rdma->Set({{"server", s.address}, {"opcode", "write"}},
                static_cast<double>(st.rdma_writes));
    s_rings->Set(server, static_cast<double>(st.rings));
    s_parks->Set(server, static_cast<double>(st.parks));
    s_park_notifies->Set(server, static_cast<double>(st.park_notifies));
    s_hot_serves->Set(server, static_cast<double>(st.hot_serves));
    s_push_notifies->Set(server, static_cast<double>(st.push_notifies));
    s_liveness_walks->Set(server, static_cast<double>(st.liveness_walks));
    auto kind = [&](const char* k) {
      return prometheus::Labels{{"server", s.address}, {"kind", k}};
    };
    s_work->Set(kind("inline"), static_cast<double>(st.work.inline_writes));
    s_work->Set(kind("cq_polls"), static_cast<double>(st.work.cq_polls));
    s_work->Set(kind("cq_empty_polls"),
                static_cast<double>(st.work.cq_empty_polls));
    s_work->Set(kind("cq_blocks"), static_cast<double>(st.work.cq_blocks));
    if (s.live > 0) {
      s_connections->Set(server, static_cast<double>(st.connections));
      s_slots->Set(server, static_cast<double>(st.connection_slots));
    }
  }
  s_connections->Sweep();
  s_slots->Sweep();
}

void RpcMetrics::State::FoldChannels(
    const std::vector<ChannelSnapshot>& channels) {
  for (const ChannelSnapshot& c : channels) {
    const prometheus::Labels server{{"server", c.address}};
    auto with = [&](const char* name, std::string value) {
      return prometheus::Labels{{"server", c.address}, {name, std::move(value)}};
    };
    const ChannelStats& st = c.stats;
    for (const MethodStats& m : c.methods) {
      const std::string method = ClientMethodName(m.method_id);
      const prometheus::Labels l{{"server", c.address}, {"method", method}};
      c_calls->Set(l, static_cast<double>(m.calls));
      for (int code = 1; code < kStatusCodes; ++code) {
        c_failures->SetIfAny({{"server", c.address},
                              {"method", method},
                              {"code", CodeName(code)}},
                             static_cast<double>(m.failures[code]));
      }
      c_timeouts->Set(l, static_cast<double>(
                             m.failures[static_cast<int>(
                                 absl::StatusCode::kDeadlineExceeded)]));
      c_cancels->Set(l, static_cast<double>(m.failures[static_cast<int>(
                            absl::StatusCode::kCancelled)]));
      c_duration->Set(l, m.latency_ns);
    }
    c_results->Set(with("mode", "remote_fetch"),
                   static_cast<double>(st.calls_remote_fetch));
    c_results->Set(with("mode", "server_reply"),
                   static_cast<double>(st.calls_server_reply));
    c_switches->Set(with("to", "server_reply"),
                    static_cast<double>(st.switches_to_server_reply));
    c_switches->Set(with("to", "remote_fetch"),
                    static_cast<double>(st.switches_to_remote_fetch));
    c_rdma->Set(with("opcode", "read"), static_cast<double>(st.rdma_reads));
    c_rdma->Set(with("opcode", "write"), static_cast<double>(st.rdma_writes));
    c_fetches->Set(server, static_cast<double>(st.fetches));
    c_server_time->Set(server, static_cast<double>(st.server_time_ns) * kNs);
    // Calls completed after i + 1 fetches, the last bucket 16 or more.
    static const auto* const kFetchBounds = new std::vector<double>{
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    c_fetches_per_call->SetBuckets(
        server, *kFetchBounds,
        std::vector<uint64_t>(st.fetch_histogram, st.fetch_histogram + 16),
        st.fetched_call_fetches);
    c_batches->Set(server, static_cast<double>(st.batches));
    c_batched->Set(server, static_cast<double>(st.batched_calls));
    c_flushes->Set(with("reason", "full"), static_cast<double>(st.flushes_full));
    c_flushes->Set(with("reason", "bytes"), static_cast<double>(st.flushes_bytes));
    c_flushes->Set(with("reason", "timeout"),
                   static_cast<double>(st.flushes_timeout));
    c_flushes->Set(with("reason", "idle"), static_cast<double>(st.flushes_idle));
    c_parts->Set(server, static_cast<double>(st.result_parts));
    c_delayed->Set(server, static_cast<double>(st.publishes_delayed));
    c_adjust->Set(server, static_cast<double>(st.sizer_adjustments));
    c_queued->Set(server, static_cast<double>(st.calls_queued));
    c_sq_waits->Set(server, static_cast<double>(st.send_queue_waits));
    c_work->Set(with("kind", "posted"), static_cast<double>(st.work.wqes));
    c_work->Set(with("kind", "doorbells"), static_cast<double>(st.work.doorbells));
    c_work->Set(with("kind", "inline"), static_cast<double>(st.work.inline_writes));
    c_work->Set(with("kind", "signaled"), static_cast<double>(st.work.signaled));
    c_work->Set(with("kind", "cq_polls"), static_cast<double>(st.work.cq_polls));
    c_work->Set(with("kind", "cq_empty_polls"),
                static_cast<double>(st.work.cq_empty_polls));
    c_rings->Set(server, static_cast<double>(st.rings));
    c_rerings->Set(server, static_cast<double>(st.rerings));
    c_notifies->Set(server, static_cast<double>(st.notifies));
    c_hot_posts->Set(server, static_cast<double>(st.hot_posts));
    c_push_sleeps->Set(server, static_cast<double>(st.push_sleeps));
    if (c.live > 0) {
      c_channels->Set(server, c.live);
      c_connections->Set(with("mode", "remote_fetch"), c.connections_remote_fetch);
      c_connections->Set(with("mode", "server_reply"), c.connections_server_reply);
      c_slots->Set(server, st.slots_in_use);
      c_fetch_delay->Set(server, st.fetch_delay_ns * kNs);
      c_fetch_rtt->Set(server, st.fetch_rtt_ns * kNs);
      c_batch_size->Set(server, st.batch_size);
      c_sizer_k->Set(server, st.sizer_k);
    }
  }
  for (GaugeFold* g : {c_channels.get(), c_connections.get(), c_slots.get(),
                       c_fetch_delay.get(), c_fetch_rtt.get(),
                       c_batch_size.get(), c_sizer_k.get()}) {
    g->Sweep();
  }
}

void RpcMetrics::State::Fold() {
  if (closed) return;
  const std::vector<ServerSnapshot> servers = SnapshotServers();
  FoldServers(servers);
  // Client series of methods a server here serves get its names.
  for (const ServerSnapshot& s : servers) {
    for (const MethodStats& m : s.methods) {
      if (!m.method.empty()) names.emplace(m.method_id, m.method);
    }
  }
  FoldChannels(SnapshotChannels());
  for (const auto& fold : folds) fold();
}

namespace {

// What an Exposer serves: fold, then collect the registry.
class FoldingCollectable final : public prometheus::Collectable {
 public:
  explicit FoldingCollectable(std::shared_ptr<RpcMetrics::State> state)
      : state_(std::move(state)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::shared_ptr<RpcMetrics::State> state_;
};

}  // namespace

std::vector<prometheus::MetricFamily> FoldingCollectable::Collect() const {
  {
    MutexLock lock(&state_->mu);
    state_->Fold();
  }
  return state_->registry->Collect();
}

absl::StatusOr<std::unique_ptr<RpcMetrics>> RpcMetrics::Create(
    std::shared_ptr<prometheus::Registry> registry) {
  if (registry == nullptr) registry = DefaultRegistry();
  {
    MutexLock lock(&in_use_mu);
    if (!InUse().insert(registry.get()).second) {
      return absl::AlreadyExistsError(
          "another RpcMetrics already exports into this registry");
    }
  }
  auto state = std::make_shared<State>(registry);
  absl::Status s = state->Build();
  if (!s.ok()) {
    MutexLock lock(&in_use_mu);
    InUse().erase(registry.get());
    return s;
  }
  return std::unique_ptr<RpcMetrics>(new RpcMetrics(std::move(state)));
}

RpcMetrics::RpcMetrics(std::shared_ptr<State> state) : state_(std::move(state)) {}

RpcMetrics::~RpcMetrics() {
  {
    // Waits for a fold in progress; later scrapes collect the registry only.
    MutexLock lock(&state_->mu);
    state_->closed = true;
    state_->folds.clear();
  }
  MutexLock lock(&in_use_mu);
  InUse().erase(state_->registry.get());
}

void RpcMetrics::NameMethod(uint32_t id, absl::string_view full_name) {
  MutexLock lock(&state_->mu);
  state_->names[id] = std::string(full_name);
}

void RpcMetrics::AddFold(std::function<void()> fold) {
  MutexLock lock(&state_->mu);
  state_->folds.push_back(std::move(fold));
}

void RpcMetrics::Fold() {
  MutexLock lock(&state_->mu);
  state_->Fold();
}

std::shared_ptr<prometheus::Collectable> RpcMetrics::collectable() const {
  return std::make_shared<FoldingCollectable>(state_);
}

const std::shared_ptr<prometheus::Registry>& RpcMetrics::registry() const {
  return state_->registry;
}

std::string RpcMetrics::Text() {
  return prometheus::TextSerializer().Serialize(collectable()->Collect());
}

absl::Status RpcMetrics::WriteFile(const std::string& path) {
  const std::string text = Text();
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.close();
    if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    return absl::UnavailableError(absl::StrCat("cannot rename ", tmp, " to ",
                                               path, ": ", std::strerror(e)));
  }
  return absl::OkStatus();
}

}  // namespace metrics
}  // namespace rfrpc
