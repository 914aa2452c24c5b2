// Copyright 2026 The rfrpc Authors.
//
// MetricsEndpoint: serves a Prometheus collectable (normally
// RpcMetrics::collectable(), rpc/metrics.h) at http://HOST:PORT/metrics
// with prometheus-cpp's Exposer (an embedded civetweb server with two
// threads of its own). A separate target from //rpc:metrics, so only
// binaries that serve HTTP link prometheus-cpp's pull library.
//
//   RFRPC_ASSIGN_OR_RETURN(auto metrics, metrics::RpcMetrics::Create());
//   RFRPC_ASSIGN_OR_RETURN(
//       auto endpoint,
//       metrics::MetricsEndpoint::Start("0.0.0.0", 9464, metrics->collectable()));
//   LOG(INFO) << "metrics at " << endpoint->url();
//
// Destroy the endpoint before whatever the collectable's folds read (it
// stops the HTTP threads; a scrape in progress finishes first).
//
// Thread safety: port() and url() are thread-safe; scrapes run on the
// endpoint's threads.

#ifndef RFRPC_RPC_METRICS_ENDPOINT_H_
#define RFRPC_RPC_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/collectable.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace rfrpc {
namespace metrics {

class MetricsEndpoint {
 public:
  // Listens on `host`:`port` (port 0 picks a free one; see port()) and serves
  // `collectable` (not null; kept) at /metrics. INVALID_ARGUMENT for a port
  // outside [0, 65535] or a bad host (CheckHost), UNAVAILABLE if it cannot
  // listen.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      absl::string_view host, int port,
      std::shared_ptr<prometheus::Collectable> collectable);
  // OK if `host` is an IPv4 address or a bracketed IPv6 one ("[::1]"),
  // what the endpoint can listen on; INVALID_ARGUMENT otherwise.
  static absl::Status CheckHost(absl::string_view host);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // The port it listens on.
  int port() const { return port_; }
  // "http://HOST:PORT/metrics" (127.0.0.1 for a wildcard host).
  std::string url() const;

 private:
  MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer,
                  std::shared_ptr<prometheus::Collectable> collectable,
                  std::string host, int port);

  std::unique_ptr<prometheus::Exposer> exposer_;
  const std::shared_ptr<prometheus::Collectable> collectable_;
  const std::string host_;
  const int port_;
};

}  // namespace metrics
}  // namespace rfrpc

#endif  // RFRPC_RPC_METRICS_ENDPOINT_H_
