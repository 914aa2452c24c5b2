// Copyright 2026 The rfrpc Authors.
//
// The process-wide view of every Server and Channel, which //rpc:metrics
// exports to Prometheus (and a program may print or log itself).
//
// SnapshotServers() / SnapshotChannels() list every Server that was started
// and every Channel created in this process, grouped by server address. A
// destroyed server's or channel's counters stay in its address's totals, so
// totals never go back (Prometheus counters must not), and a short-lived
// client still shows every call it made. Gauges (connections, slots in use,
// fetch delay, batch size) come from live ones only. The process keeps
// one such entry (about 1 KiB plus its methods) per distinct address ever
// seen.
//
//   for (const ChannelSnapshot& c : SnapshotChannels()) {
//     LOG(INFO) << c.address << ": " << c.stats.calls << " calls, "
//               << c.stats.calls_server_reply << " by server-reply";
//   }
//
// Thread safety: thread-safe. The snapshot functions take a process-wide
// lock and then each source's own; do not call them from code that runs
// under a connection lock (ChannelOptions::on_result).

#ifndef RFRPC_RPC_STATS_H_
#define RFRPC_RPC_STATS_H_

#include <string>
#include <vector>

#include "rpc/call_stats.h"
#include "rpc/channel_stats.h"
#include "rpc/server_stats.h"

namespace rfrpc {

// One server address: the Server(s) that listened there.
struct ServerSnapshot {
  std::string address;
  // Servers listening there now (0: only destroyed ones).
  int live = 0;
  // Counters summed over every server that listened there; connections and
  // connection_slots over the live ones only.
  ServerStats stats;
  std::vector<MethodStats> methods;  // Sorted by method name.
};

// One server address as this process's channels to it saw it.
struct ChannelSnapshot {
  std::string address;
  // Channels to it that exist now.
  int live = 0;
  // Counters summed over every channel to the address; the gauges
  // averaged (fetch_rtt_ns, fetch_delay_ns, batch_size, sizer_k) or summed
  // (slots_in_use) over the live ones.
  ChannelStats stats;
  std::vector<MethodStats> methods;  // Sorted by method id.
  // Live channels' connections by the mode they use now.
  int connections_remote_fetch = 0;
  int connections_server_reply = 0;
};

// Every server started in this process, by address, sorted by address.
std::vector<ServerSnapshot> SnapshotServers();
// Every channel created in this process, by server address, sorted.
std::vector<ChannelSnapshot> SnapshotChannels();

}  // namespace rfrpc

#endif  // RFRPC_RPC_STATS_H_
