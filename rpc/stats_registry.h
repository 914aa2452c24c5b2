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
#include <vector>

#include "rpc/call_stats.h"
#include "rpc/channel_stats.h"
#include "rpc/options.h"
#include "rpc/server_stats.h"

namespace rfrpc {
namespace internal {

// What the registry reads of a live server or channel. The server's and the
// channel's implementations provide it (with the same methods their public
// classes have), so this library depends on neither.
class ServerStatsSource {
 public:
  virtual ~ServerStatsSource() = default;
  virtual ServerStats stats() const = 0;
  virtual std::vector<MethodStats> method_stats() const = 0;
};

class ChannelStatsSource {
 public:
  virtual ~ChannelStatsSource() = default;
  virtual ChannelStats stats() const = 0;
  virtual std::vector<MethodStats> method_stats() const = 0;
  virtual int batch_size() const = 0;
  virtual int connections() const = 0;
  virtual RpcMode connection_mode(int i) const = 0;
};

// `server` (not owned) must stay valid until RetireServer(server).
void RegisterServer(const ServerStatsSource* server, std::string address);
// Takes the server's final counts and forgets it; a no-op if not registered.
void RetireServer(const ServerStatsSource* server);

// As above, for a channel to the server at `address`.
void RegisterChannel(const ChannelStatsSource* channel, std::string address);
void RetireChannel(const ChannelStatsSource* channel);

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_STATS_REGISTRY_H_
