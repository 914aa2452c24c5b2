// Copyright 2026 The rfrpc Authors.
//
// The "verbs" transport provider: rdma-core libibverbs, one RC queue pair per
// Connection, bootstrapped over a TCP socket that carries the handshake
// (transport/handshake.proto, framed per transport/bootstrap.h) and then
// stays open as the liveness channel.
//
// Linking //transport/verbs registers the provider as "verbs" (and makes it
// the first choice of "auto"); most code opens it through the registry:
//
//   auto provider = transport::Provider::Open("verbs", {});
//   if (absl::IsUnavailable(provider.status())) { /* no RDMA device */ }
//
// Isolation model (see docs/verbs_provider.md): every Connection has its own
// protection domain. The regions a Connection exposes are registered in that
// PD only, exactly over the exposed byte range and with only the exposed
// remote rights; local memory named by that connection's work requests is
// registered lazily in the same PD with local rights only. A key the peer
// learned from another connection therefore names an MR of a different PD,
// and the target NIC (rxe included) rejects the access with a remote access
// error. The same memory may be registered in several PDs at once.
//
// Addresses are "host:port" (IPv4, IPv6 in brackets, or a name); port 0 picks
// a free port, reported by Listener::address().
//
// Thread safety: as in transport/transport.h.

#ifndef RFRPC_TRANSPORT_VERBS_VERBS_PROVIDER_H_
#define RFRPC_TRANSPORT_VERBS_VERBS_PROVIDER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace verbs {

// Opens the device named by options.device ("" = first), its port
// options.port and GID options.gid_index (-1 = automatic RoCE v2
// IPv4-mapped). UNAVAILABLE "no RDMA device found (...)" when libibverbs
// lists no device (e.g. the kernel has no RDMA driver); never crashes.
absl::StatusOr<std::unique_ptr<Provider>> OpenVerbsProvider(
    const ProviderOptions& options);

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_VERBS_VERBS_PROVIDER_H_
