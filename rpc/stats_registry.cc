// Copyright 2026 The rfrpc Authors.
//
// The process-wide list of servers and channels (rpc/stats_registry.h) and
// the snapshots of rpc/stats.h.

#include "rpc/stats_registry.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"
#include "rpc/stats.h"

namespace rfrpc {
namespace {

using internal::ChannelStatsSource;
using internal::ServerStatsSource;

// Adds the counters of `from` to `*to`; leaves the gauges.
void AddCounters(const ServerStats& from, ServerStats* to) {
  to->connections_accepted += from.connections_accepted;
  to->connections_rejected += from.connections_rejected;
  to->connections_closed += from.connections_closed;
  to->calls += from.calls;
  to->calls_server_reply += from.calls_server_reply;
  to->calls_failed += from.calls_failed;
  to->bad_requests += from.bad_requests;
  to->rdma_writes += from.rdma_writes;
  to->batches += from.batches;
  to->batch_runs += from.batch_runs;
  to->worker_stalls += from.worker_stalls;
  to->worker_stalls_preempted += from.worker_stalls_preempted;
  to->rings += from.rings;
  to->parks += from.parks;
  to->park_notifies += from.park_notifies;
  to->hot_serves += from.hot_serves;
  to->push_notifies += from.push_notifies;
  to->liveness_walks += from.liveness_walks;
  to->work.Add(from.work);
}

void AddCounters(const ChannelStats& from, ChannelStats* to) {
  to->AddCounters(from);
}

// Merges `from` into `*to`, matching methods by `key`.
template <typename Key>
void MergeMethods(const std::vector<MethodStats>& from,
                  std::vector<MethodStats>* to, Key key) {
  for (const MethodStats& m : from) {
    auto it = std::find_if(to->begin(), to->end(), [&](const MethodStats& t) {
      return key(t) == key(m);
    });
    if (it == to->end()) {
      to->push_back(m);
    } else {
      it->Merge(m);
    }
  }
}

const auto kByName = [](const MethodStats& m) -> const std::string& {
  return m.method;
};
const auto kById = [](const MethodStats& m) { return m.method_id; };

struct ServerEntry {
  std::vector<const ServerStatsSource*> live;
  ServerStats retired;
  std::vector<MethodStats> retired_methods;
};

struct ChannelEntry {
  std::vector<const ChannelStatsSource*> live;
  ChannelStats retired;
  std::vector<MethodStats> retired_methods;
};

class Registry {
 public:
  static Registry& Get() {
    static Registry* r = new Registry;  // Never destroyed: used at exit.
    return *r;
  }

  void AddServer(const ServerStatsSource* s, std::string address) {
    MutexLock lock(&mu_);
    server_address_[s] = address;
    servers_[address].live.push_back(s);
  }

  void RetireServer(const ServerStatsSource* s) {
    MutexLock lock(&mu_);
    auto a = server_address_.find(s);
    if (a == server_address_.end()) return;
    ServerEntry& e = servers_[a->second];
    AddCounters(s->stats(), &e.retired);
    MergeMethods(s->method_stats(), &e.retired_methods, kByName);
    e.live.erase(std::find(e.live.begin(), e.live.end(), s));
    server_address_.erase(a);
  }

  void AddChannel(const ChannelStatsSource* c, std::string address) {
    MutexLock lock(&mu_);
    channel_address_[c] = address;
    channels_[address].live.push_back(c);
  }

  void RetireChannel(const ChannelStatsSource* c) {
    MutexLock lock(&mu_);
    auto a = channel_address_.find(c);
    if (a == channel_address_.end()) return;
    ChannelEntry& e = channels_[a->second];
    AddCounters(c->stats(), &e.retired);
    MergeMethods(c->method_stats(), &e.retired_methods, kById);
    e.live.erase(std::find(e.live.begin(), e.live.end(), c));
    channel_address_.erase(a);
  }

  std::vector<ServerSnapshot> Servers() {
    MutexLock lock(&mu_);
    std::vector<ServerSnapshot> out;
    for (const auto& [address, e] : servers_) {
      ServerSnapshot snap;
      snap.address = address;
      snap.live = static_cast<int>(e.live.size());
      snap.stats = e.retired;
      snap.methods = e.retired_methods;
      for (const ServerStatsSource* s : e.live) {
        const ServerStats st = s->stats();
        AddCounters(st, &snap.stats);
        snap.stats.connections += st.connections;
        snap.stats.connection_slots += st.connection_slots;
        MergeMethods(s->method_stats(), &snap.methods, kByName);
      }
      std::sort(snap.methods.begin(), snap.methods.end(),
                [](const MethodStats& a, const MethodStats& b) {
                  return a.method < b.method;
                });
      out.push_back(std::move(snap));
    }
    return out;
  }

  std::vector<ChannelSnapshot> Channels() {
    MutexLock lock(&mu_);
    std::vector<ChannelSnapshot> out;
    for (const auto& [address, e] : channels_) {
      ChannelSnapshot snap;
      snap.address = address;
      snap.live = static_cast<int>(e.live.size());
      snap.stats = e.retired;
      snap.methods = e.retired_methods;
      double batch_size = 0;
      for (const ChannelStatsSource* c : e.live) {
        const ChannelStats st = c->stats();
        AddCounters(st, &snap.stats);
        snap.stats.fetch_rtt_ns += st.fetch_rtt_ns / snap.live;
        snap.stats.fetch_delay_ns += st.fetch_delay_ns / snap.live;
        snap.stats.sizer_k += st.sizer_k / snap.live;
        snap.stats.slots_in_use += st.slots_in_use;
        batch_size += static_cast<double>(c->batch_size()) / snap.live;
        MergeMethods(c->method_stats(), &snap.methods, kById);
        for (int i = 0; i < c->connections(); ++i) {
          if (c->connection_mode(i) == RpcMode::kServerReply) {
            ++snap.connections_server_reply;
          } else {
            ++snap.connections_remote_fetch;
          }
        }
      }
      snap.stats.batch_size = static_cast<int>(batch_size + 0.5);
      std::sort(snap.methods.begin(), snap.methods.end(),
                [](const MethodStats& a, const MethodStats& b) {
                  return a.method_id < b.method_id;
                });
      out.push_back(std::move(snap));
    }
    return out;
  }

 private:
  Mutex mu_;
  // By address, so snapshots come out sorted.
  std::map<std::string, ServerEntry> servers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, ChannelEntry> channels_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<const ServerStatsSource*, std::string> server_address_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<const ChannelStatsSource*, std::string> channel_address_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace

namespace internal {

void RegisterServer(const ServerStatsSource* server, std::string address) {
  Registry::Get().AddServer(server, std::move(address));
}
void RetireServer(const ServerStatsSource* server) { Registry::Get().RetireServer(server); }
void RegisterChannel(const ChannelStatsSource* channel, std::string address) {
  Registry::Get().AddChannel(channel, std::move(address));
}
void RetireChannel(const ChannelStatsSource* channel) {
  Registry::Get().RetireChannel(channel);
}

}  // namespace internal

std::vector<ServerSnapshot> SnapshotServers() { return Registry::Get().Servers(); }
std::vector<ChannelSnapshot> SnapshotChannels() {
  return Registry::Get().Channels();
}

}  // namespace rfrpc
