// Copyright 2026 The rfrpc Authors.
//
// The connection auth token check, shared by every provider so that a
// listener judges the token a connecting peer presents in its Hello
// (handshake.proto, field auth_token) the same way on shm and on verbs:
//
//   - The listener's ConnectionSetup::auth_token is the token it requires;
//     empty requires none, and whatever a peer presents is then ignored.
//   - Otherwise the peer's token must equal it byte for byte. A peer that
//     presents none and a peer that presents a wrong one are refused with
//     UNAUTHENTICATED and the messages below, before the listener allocates
//     anything for the connection.
//   - Only the listener checks. The connecting side sends its token first and
//     in clear, so a listener echoing it back would prove nothing; listeners
//     therefore do not send theirs (docs/reliability.md, "The shared-secret
//     token", says what the token does and does not protect).
//
// The comparison takes time that depends only on the length of the presented
// token, not on where it first differs from the required one, nor on the
// required token's length.
//
//   absl::Status s = CheckAuthToken(setup.auth_token, hello.auth_token(),
//                                   info.peer_name);
//   if (!s.ok()) { Reject(s); return s; }
//
// Thread-safe (pure functions).

#ifndef RFRPC_TRANSPORT_AUTH_TOKEN_H_
#define RFRPC_TRANSPORT_AUTH_TOKEN_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rfrpc {
namespace transport {

// OK if `required` is empty or `presented` equals it. Otherwise
// UNAUTHENTICATED: "no auth token from <peer_name> (the listener requires
// one)" if `presented` is empty, else "wrong auth token from <peer_name>".
absl::Status CheckAuthToken(absl::string_view required,
                            absl::string_view presented,
                            absl::string_view peer_name);

// True if `presented` == `expected`. Runs in time that depends only on
// presented.size(). REQUIRES: !expected.empty().
bool ConstantTimeEquals(absl::string_view expected,
                        absl::string_view presented);

}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_AUTH_TOKEN_H_
