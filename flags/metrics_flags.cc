// Copyright 2026 The rfrpc Authors.

#include "flags/metrics_flags.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gflags/gflags.h"
#include "base/status_macros.h"

DEFINE_int32(rfrpc_metrics_port, 0,
             "Serve Prometheus metrics at http://HOST:PORT/metrics; 0: off; "
             "-1: a free port (printed at start).");
DEFINE_string(rfrpc_metrics_host, "0.0.0.0",
              "Address the metrics endpoint listens on: an IPv4 address or "
              "a bracketed IPv6 one ([::1]).");
DEFINE_string(rfrpc_metrics_file, "",
              "If set, write the metrics (Prometheus text format) to this "
              "file at exit.");

namespace rfrpc {
namespace tools {

absl::StatusOr<std::unique_ptr<FlagMetrics>> FlagMetrics::Create() {
  if (FLAGS_rfrpc_metrics_port < -1 || FLAGS_rfrpc_metrics_port > 65535) {
    return absl::InvalidArgumentError(
        "--rfrpc_metrics_port: must be -1 (any free port), 0 (off) or a port");
  }
  if (FLAGS_rfrpc_metrics_port == 0 && FLAGS_rfrpc_metrics_file.empty()) {
    return nullptr;
  }
  RFRPC_ASSIGN_OR_RETURN(std::unique_ptr<metrics::RpcMetrics> m,
                         metrics::RpcMetrics::Create());
  return std::unique_ptr<FlagMetrics>(new FlagMetrics(std::move(m)));
}

absl::Status FlagMetrics::Serve() {
  if (FLAGS_rfrpc_metrics_port == 0 || endpoint_ != nullptr) {
    return absl::OkStatus();
  }
  RFRPC_ASSIGN_OR_RETURN(
      endpoint_, metrics::MetricsEndpoint::Start(
                     FLAGS_rfrpc_metrics_host,
                     FLAGS_rfrpc_metrics_port < 0 ? 0 : FLAGS_rfrpc_metrics_port,
                     metrics_->collectable()));
  return absl::OkStatus();
}

absl::Status FlagMetrics::WriteFile() {
  if (FLAGS_rfrpc_metrics_file.empty()) return absl::OkStatus();
  return metrics_->WriteFile(FLAGS_rfrpc_metrics_file);
}

}  // namespace tools
}  // namespace rfrpc
