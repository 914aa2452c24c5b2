// Copyright 2026 The rfrpc Authors.

#include "rpc/metrics_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <exception>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "civetweb.h"
#include "prometheus/exposer.h"

namespace rfrpc {
namespace metrics {

absl::Status MetricsEndpoint::CheckHost(absl::string_view host) {
  // civetweb takes an address literal, and reads a malformed one its own way
  // (999.1.1.1 listened on 231.1.1.1).
  const bool v6 = host.size() > 2 && host.front() == '[' && host.back() == ']';
  const std::string literal(v6 ? host.substr(1, host.size() - 2) : host);
  unsigned char addr[sizeof(in6_addr)];
  if (inet_pton(v6 ? AF_INET6 : AF_INET, literal.c_str(), addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics host \"", host,
        "\" is not an IPv4 address or a bracketed IPv6 address (e.g. "
        "0.0.0.0, 127.0.0.1, [::1])"));
  }
  return absl::OkStatus();
}

namespace {

// Why an IPv4 `host` (a literal CheckHost accepted) and `port` cannot be
// listened on, as the system says it ("Address already in use", "Cannot
// assign requested address"); empty if a plain socket can bind there.
// civetweb's own failure names no reason ("null context when constructing
// CivetServer. Possible problem binding to port.").
std::string BindError(const std::string& host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return "";
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  const int one = 1;
  // As civetweb binds: a port in TIME_WAIT is not "in use".
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  std::string error;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0) {
    error = std::strerror(errno);
  }
  ::close(fd);
  return error;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    absl::string_view host, int port,
    std::shared_ptr<prometheus::Collectable> collectable) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", port, " is outside [0, 65535]"));
  }
  if (absl::Status s = CheckHost(host); !s.ok()) return s;
  const std::string bind = absl::StrCat(host, ":", port);
  // Debian's civetweb is built without IPv6: it fails with "null context
  // when constructing CivetServer", which names no reason.
  if (host.front() == '[' && mg_check_feature(8) == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", bind,
        ": this build's civetweb has no IPv6 support; use an IPv4 address "
        "(0.0.0.0, 127.0.0.1)"));
  }
  std::unique_ptr<prometheus::Exposer> exposer;
  // civetweb reports a failed listen by throwing.
  try {
    exposer = std::make_unique<prometheus::Exposer>(bind, /*num_threads=*/2);
  } catch (const std::exception& e) {
    const std::string why = BindError(std::string(host), port);
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", bind, ": ",
        why.empty() ? std::string(e.what()) : why));
  }
  const std::vector<int> ports = exposer->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(
        absl::StrCat("metrics endpoint on ", bind, " listens on no port"));
  }
  exposer->RegisterCollectable(collectable);
  return std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(
      std::move(exposer), std::move(collectable), std::string(host), ports[0]));
}

MetricsEndpoint::MetricsEndpoint(
    std::unique_ptr<prometheus::Exposer> exposer,
    std::shared_ptr<prometheus::Collectable> collectable, std::string host,
    int port)
    : exposer_(std::move(exposer)),
      collectable_(std::move(collectable)),
      host_(std::move(host)),
      port_(port) {}

MetricsEndpoint::~MetricsEndpoint() {
  // Stops the HTTP threads before the collectable can go.
  exposer_.reset();
}

std::string MetricsEndpoint::url() const {
  const std::string host =
      host_.empty() || host_ == "0.0.0.0" || host_ == "[::]" ? "127.0.0.1" : host_;
  return absl::StrCat("http://", host, ":", port_, "/metrics");
}

}  // namespace metrics
}  // namespace rfrpc
