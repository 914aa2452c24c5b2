// Copyright 2026 The rfrpc Authors.

#include "flags/metrics_flags.h"

#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gflags/gflags.h"

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
  if (FLAGS_rfrpc_metrics_port != 0) {
    if (absl::Status s =
            metrics::MetricsEndpoint::CheckHost(FLAGS_rfrpc_metrics_host);
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rfrpc_metrics_host: ", s.message()));
    }
  }
  if (!FLAGS_rfrpc_metrics_file.empty()) {
    // Written at exit: a path that cannot be written must fail the start,
    // not the end of a run.
    const std::string& path = FLAGS_rfrpc_metrics_file;
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    struct stat st;
    if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        ::access(dir.c_str(), W_OK | X_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rfrpc_metrics_file=", path, ": ", dir,
                       " is not a directory this process can write to"));
    }
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--rfrpc_metrics_file=", path, " is a directory"));
    }
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
