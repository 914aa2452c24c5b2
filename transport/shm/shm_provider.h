// Copyright 2026 The rfrpc Authors.
//
// The "shm" transport provider: RDMA-verbs semantics between processes on one
// host. Link //transport/shm (alwayslink) and open it by name:
//
//   RFRPC_ASSIGN_OR_RETURN(auto provider, Provider::Open("shm", {}));
//
// What it does, mapped onto transport.h:
//
//   Memory       AllocateMemory() creates one memfd segment per region
//                (page-aligned, zeroed, sealed against shrink/grow) and a
//                random non-zero 32-bit rkey.
//   Connections  Listen() binds a Unix stream socket: a path, a bare name
//                (placed in ProviderOptions::socket_dir, else $TEST_TMPDIR,
//                $TMPDIR or /tmp), "@name" for the abstract namespace, or ""
//                for a fresh unique name. The handshake is Hello/HelloReply
//                (transport/handshake.proto) framed by transport/bootstrap.h;
//                each exposed region's segment fd follows its frame with
//                SCM_RIGHTS (read-only fd when remote_write is false). A peer
//                maps only the segments exposed to that connection.
//   Post()       The initiator's CPU executes WRITEs and READs at once, in
//                order, validating (rkey, range, right) against what the peer
//                exposed to this connection; a violation completes with
//                kRemoteAccessError (signaled or not), touches nothing, and
//                fails the connection like an RC QP entering the error state
//                (the rest of the list completes kFlushed). A post list with
//                more signaled requests than the completion queue can take
//                returns RESOURCE_EXHAUSTED and executes nothing; a list
//                longer than max_outstanding likewise.
//   Liveness     The bootstrap socket stays open. One monitor thread per
//                provider epolls all of them; a peer's close (or death: the
//                kernel closes its sockets) fails the connection within
//                microseconds with UNAVAILABLE "shm peer ... closed the
//                connection". Connection::Fail() shuts the socket down so the
//                peer learns the same way.
//   Listener     Handshakes run off the caller's thread, at most
//                kMaxHalfOpenHandshakes at a time (more are answered
//                RESOURCE_EXHAUSTED), each bounded by
//                kListenerHandshakeTimeout. Next() after Shutdown() returns
//                CANCELLED. Auth tokens are compared in Accept() (the
//                listener's token comes with its ConnectionSetup):
//                mismatch → UNAUTHENTICATED on both sides.
//
// Every object (provider, listener, incoming request, connection, queue,
// region) may be destroyed in any order, except what transport.h requires:
// regions outlive the connections that expose or name them, and a queue
// outlives the connections that post to it.

#ifndef RFRPC_TRANSPORT_SHM_SHM_PROVIDER_H_
#define RFRPC_TRANSPORT_SHM_SHM_PROVIDER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace shm {

inline constexpr int kMaxHalfOpenHandshakes = 64;
inline constexpr absl::Duration kListenerHandshakeTimeout = absl::Seconds(5);

// Same as Provider::Open("shm", options).
absl::StatusOr<std::unique_ptr<Provider>> OpenShmProvider(
    const ProviderOptions& options);

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_SHM_SHM_PROVIDER_H_
