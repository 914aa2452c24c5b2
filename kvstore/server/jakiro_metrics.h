// Copyright 2026 The rfrpc Authors.
//
// Jakiro's store figures as Prometheus metrics, next to rfrpc's own
// (rpc/metrics.h): per partition (label `partition`, the worker index) the
// live items and bytes, the arena and index sizes, hits, misses, puts,
// deletes, evictions by reason, compactions. Read from
// JakiroService::PublishedStats on every scrape; the handlers pay a dozen
// relaxed stores per call for it. docs/observability.md lists the names.
//
//   RFRPC_ASSIGN_OR_RETURN(auto metrics, metrics::RpcMetrics::Create());
//   RFRPC_RETURN_IF_ERROR(ExportJakiroMetrics(service.get(), metrics.get()));
//
// Thread safety: call before serving the metrics; the fold it adds runs
// under RpcMetrics's lock.

#ifndef RFRPC_KVSTORE_SERVER_JAKIRO_METRICS_H_
#define RFRPC_KVSTORE_SERVER_JAKIRO_METRICS_H_

#include "absl/status/status.h"
#include "kvstore/server/jakiro_service.h"
#include "rpc/metrics.h"

namespace rfrpc {
namespace kvstore {

// Builds the rfrpc_jakiro_* families in metrics->registry() and a fold that
// updates them. Neither pointer may be null; `service` is kept by the fold
// and must outlive `*metrics` (and any endpoint serving it). Errors: as
// metrics::AddCounterFamily (a name taken by another type).
absl::Status ExportJakiroMetrics(const JakiroService* service,
                                 metrics::RpcMetrics* metrics);

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_SERVER_JAKIRO_METRICS_H_
