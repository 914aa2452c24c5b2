// Copyright 2026 The rfrpc Authors.
//
// The --rfrpc_metrics_* flags of rfrpc binaries (kvstore_server, ycsb,
// benchmarks) and what they start: an RpcMetrics on the default registry
// (rpc/metrics.h) and, with a port, /metrics over HTTP
// (rpc/metrics_endpoint.h). Separate from //flags:rpc_flags so that only
// binaries that export metrics link prometheus-cpp.
//
//   --rfrpc_metrics_port=N   serve http://HOST:N/metrics; 0 (the default)
//                            serves nothing; -1 picks a free port (the
//                            binary prints where).
//   --rfrpc_metrics_host=H   address to listen on. Default: 0.0.0.0.
//   --rfrpc_metrics_file=F   write the metrics to F at exit (text format,
//                            e.g. for node_exporter's textfile collector:
//                            a batch job such as a YCSB run). Default: none.
//
//   gflags::ParseCommandLineFlags(&argc, &argv, true);
//   absl::StatusOr<std::unique_ptr<tools::FlagMetrics>> m =
//       tools::FlagMetrics::Create();
//   if (!m.ok()) { LOG(ERROR) << m.status(); return 2; }
//   if (*m != nullptr) {
//     // Add folds of your own to (*m)->metrics() here, then:
//     absl::Status s = (*m)->Serve();
//     if ((*m)->serving()) printf("metrics on %s\n", (*m)->url().c_str());
//   }
//   ...
//   if (*m != nullptr) s = (*m)->WriteFile();  // At exit.
//
// Thread safety: Create, Serve and WriteFile from one thread (main); the
// rest is thread-safe.

#ifndef RFRPC_FLAGS_METRICS_FLAGS_H_
#define RFRPC_FLAGS_METRICS_FLAGS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rpc/metrics.h"
#include "rpc/metrics_endpoint.h"

namespace rfrpc {
namespace tools {

class FlagMetrics {
 public:
  // Null (and OK) when no --rfrpc_metrics_* flag asks for anything.
  // INVALID_ARGUMENT naming the flag for a bad value; as RpcMetrics::Create
  // otherwise.
  static absl::StatusOr<std::unique_ptr<FlagMetrics>> Create();

  // Starts the endpoint if --rfrpc_metrics_port asks for one. UNAVAILABLE if
  // it cannot listen.
  absl::Status Serve();
  bool serving() const { return endpoint_ != nullptr; }
  // Where it serves ("" when not serving).
  std::string url() const { return endpoint_ ? endpoint_->url() : ""; }

  // Writes --rfrpc_metrics_file, if set (else a no-op).
  absl::Status WriteFile();

  metrics::RpcMetrics* metrics() const { return metrics_.get(); }

 private:
  explicit FlagMetrics(std::unique_ptr<metrics::RpcMetrics> m)
      : metrics_(std::move(m)) {}

  std::unique_ptr<metrics::RpcMetrics> metrics_;
  // Declared after metrics_: stops serving before the folds go.
  std::unique_ptr<metrics::MetricsEndpoint> endpoint_;
};

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_METRICS_FLAGS_H_
