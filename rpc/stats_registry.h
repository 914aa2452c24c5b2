// Copyright 2026 The rfrpc Authors.
//
// The process-wide list behind SnapshotServers() / SnapshotChannels()
// (rpc/stats.h), internal to rpc/: Server::Start and Channel::Create
// register; the destructors retire, which folds the final counts into the
// address's totals.
//
// Thread safety: thread-safe. Snapshots hold the list's lock while they read
// each source (its stats() and method_stats()), so a source must not call
// Register or Retire while holding a lock those take.

#ifndef RFRPC_RPC_STATS_REGISTRY_H_
#define RFRPC_RPC_STATS_REGISTRY_H_

#include <string>

namespace rfrpc {

class Channel;
class Server;

namespace internal {

// `server` (not owned) must stay valid until RetireServer(server).
void RegisterServer(const Server* server, std::string address);
// Takes the server's final counts and forgets it; a no-op if not registered.
void RetireServer(const Server* server);

// As above, for a channel to the server at `address`.
void RegisterChannel(const Channel* channel, std::string address);
void RetireChannel(const Channel* channel);

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_STATS_REGISTRY_H_
