// Copyright 2026 The rfrpc Authors.
//
// rfrpc's Prometheus metrics (docs/observability.md lists them): RpcMetrics
// folds the counters that every Server and Channel of the process keeps
// (rpc/stats.h) into prometheus-cpp families of a registry the caller owns,
// or the process's default one. The fold runs when the registry is scraped,
// off the call path: calls only ever touch rfrpc's own per-worker and
// per-thread counters, never a prometheus object.
//
//   RFRPC_ASSIGN_OR_RETURN(auto metrics, metrics::RpcMetrics::Create());
//   metrics->NameMethods<rfrpc::kv::Jakiro>();  // Client series' names.
//   // Serve it (//rpc:metrics_endpoint), or register it with your Exposer:
//   exposer.RegisterCollectable(metrics->collectable());
//
// Register collectable(), not the registry itself: it folds first, then
// collects the registry (with anything else the caller put there). A caller
// who registers the bare registry sees the figures of the last Fold().
//
// Series are labelled with the server's address (`server`), the method
// ("/package.Service/Method"; client series without a known name show the
// id, "0x1234abcd"; server calls of unknown ids "unknown"), and the status
// code name (`code`, e.g. "NOT_FOUND"). Counters include destroyed servers
// and channels (rpc/stats.h), so they never go back.
//
// Only this library depends on prometheus-cpp (its core); //rpc does not.
//
// Thread safety: RpcMetrics is thread-safe; Fold (and a scrape through
// collectable()) runs under the object's lock, so folds added with AddFold
// run one at a time. The CounterFold, GaugeFold and HistogramFold helpers
// are not thread-safe: use them from a fold.

#ifndef RFRPC_RPC_METRICS_H_
#define RFRPC_RPC_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/labels.h"
#include "prometheus/registry.h"
#include "rpc/call_stats.h"

namespace rfrpc {
namespace metrics {

// The process's default registry (created on first use, never destroyed).
std::shared_ptr<prometheus::Registry> DefaultRegistry();

// Builds a family in `registry` (not null, not kept). INVALID_ARGUMENT for a
// bad name, ALREADY_EXISTS if the name is taken by a family of another type
// (prometheus-cpp throws; this does not).
absl::StatusOr<prometheus::Family<prometheus::Counter>*> AddCounterFamily(
    prometheus::Registry* registry, const std::string& name,
    const std::string& help);
absl::StatusOr<prometheus::Family<prometheus::Gauge>*> AddGaugeFamily(
    prometheus::Registry* registry, const std::string& name,
    const std::string& help);
absl::StatusOr<prometheus::Family<prometheus::Histogram>*> AddHistogramFamily(
    prometheus::Registry* registry, const std::string& name,
    const std::string& help);

// A counter family set from cumulative totals: prometheus counters only
// grow, so each series remembers the total it showed and is incremented by
// the difference. `family` is not owned; it must outlive this.
class CounterFold {
 public:
  explicit CounterFold(prometheus::Family<prometheus::Counter>* family)
      : family_(family) {}

  // Brings series `labels` up to `total` (a smaller total changes nothing).
  void Set(const prometheus::Labels& labels, double total);
  // As Set, but creates no series for a total of 0 (e.g. per status code).
  void SetIfAny(const prometheus::Labels& labels, double total);

 private:
  prometheus::Family<prometheus::Counter>* const family_;
  std::map<prometheus::Labels, std::pair<prometheus::Counter*, double>> series_;
};

// A gauge family whose series are those set since the last Sweep: a series
// not set again (its server or channel is gone) is removed at Sweep.
class GaugeFold {
 public:
  explicit GaugeFold(prometheus::Family<prometheus::Gauge>* family)
      : family_(family) {}

  void Set(const prometheus::Labels& labels, double value);
  void Sweep();

 private:
  prometheus::Family<prometheus::Gauge>* const family_;
  std::map<prometheus::Labels, std::pair<prometheus::Gauge*, bool>> series_;
};

// A histogram family set from cumulative bucket counts: each series takes
// the bucket bounds of its first update and is advanced by the differences.
// Values (bounds and sums) are multiplied by `scale`, e.g. 1e-9 for ns shown
// in seconds.
class HistogramFold {
 public:
  HistogramFold(prometheus::Family<prometheus::Histogram>* family, double scale)
      : family_(family), scale_(scale) {}

  // A power-of-two HistogramStats. REQUIRES: the same layout every time.
  void Set(const prometheus::Labels& labels, const HistogramStats& h);
  // Any buckets: counts[i] values at most bounds[i] (and above bounds[i-1]),
  // counts.back() the rest (+Inf); `sum` their sum. REQUIRES:
  // counts.size() == bounds.size() + 1, the same bounds every time.
  void SetBuckets(const prometheus::Labels& labels,
                  const std::vector<double>& bounds,
                  const std::vector<uint64_t>& counts, uint64_t sum);

 private:
  struct Series {
    prometheus::Histogram* histogram;
    std::vector<uint64_t> shown;
    uint64_t shown_sum = 0;
  };
  prometheus::Family<prometheus::Histogram>* const family_;
  const double scale_;
  std::map<prometheus::Labels, Series> series_;
};

class RpcMetrics {
 public:
  // Exports into `registry` (kept; null: DefaultRegistry()).
  // ALREADY_EXISTS if another RpcMetrics exports into that registry, or one
  // of rfrpc's metric names is taken there by a family of another type.
  static absl::StatusOr<std::unique_ptr<RpcMetrics>> Create(
      std::shared_ptr<prometheus::Registry> registry = nullptr);
  ~RpcMetrics();
  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // Names client series of method `id` (a channel knows ids only). Servers
  // of this process name their methods themselves.
  void NameMethod(uint32_t id, absl::string_view full_name);
  // Names every method of a generated service (its kMethods).
  template <typename ServiceT>
  void NameMethods() {
    for (const auto& m : ServiceT::kMethods) NameMethod(m.id, m.full_name);
  }

  // Adds a fold of the caller's own (e.g. Jakiro's partitions): `fold`
  // runs at every Fold, after rfrpc's, under this object's lock, and updates
  // families it built in registry(). Kept until this object is destroyed;
  // whatever it reads must outlive that (or the endpoint serving it).
  void AddFold(std::function<void()> fold);

  // Reads every server's and channel's counters and updates the families.
  void Fold();

  // Folds, then collects the registry: what an Exposer should serve. Holds
  // what it needs, so it stays valid after this object is gone (it then
  // collects the registry alone).
  std::shared_ptr<prometheus::Collectable> collectable() const;
  const std::shared_ptr<prometheus::Registry>& registry() const;

  // Folds and returns the registry in Prometheus's text format.
  std::string Text();
  // Writes Text() to `path` atomically (a temporary file, renamed), e.g. for
  // node_exporter's textfile collector at the end of a batch job.
  // UNAVAILABLE if it cannot.
  absl::Status WriteFile(const std::string& path);

  struct State;  // Internal.

 private:
  explicit RpcMetrics(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace metrics
}  // namespace rfrpc

#endif  // RFRPC_RPC_METRICS_H_
