// Copyright 2026 The rfrpc Authors.
//
// JakiroClient: the client of one or more Jakiro servers (proto/kvstore.proto)
// over rfrpc.
//
// Routing, in two steps:
//   1. Server: consistent hashing over a ring with `virtual_nodes` points per
//      server (XXH64 of "<address>#<i>"); a key goes to the first point at or
//      after XXH64(key, kRingSeed). The ring hash uses its own seed so the
//      server choice does not correlate with the partition and bucket bits of
//      KeyHash. Adding or removing a server moves only about 1/n of the keys.
//   2. Worker: each server's Channel opens one connection per server worker
//      (ChannelOptions::connections = 0) and each call is sent to the
//      connection of the owning partition, KeyHash(key) % workers, through
//      ClientContext::set_shard (the server's EREW check then always passes).
//
// Ownership: the client owns its channels. Thread safety: a JakiroClient is
// thread-safe (its channels are; the ring is immutable after Connect).
// Synchronous Get and Put reuse one request and one response message per
// thread (thread_local; a nested call, from a callback run while a
// synchronous call waits, uses its own), so a warm Get allocates nothing
// for its key or its value.
//
//   JakiroClientOptions opts;
//   opts.servers = {"/tmp/jakiro.sock"};
//   opts.channel.mode = rfrpc::RpcMode::kRemoteFetch;
//   RFRPC_ASSIGN_OR_RETURN(auto client, JakiroClient::Connect(opts));
//   RFRPC_RETURN_IF_ERROR(client->Put("user:42", "alice"));
//   std::string v;
//   RFRPC_RETURN_IF_ERROR(client->Get("user:42", &v));

#ifndef RFRPC_KVSTORE_CLIENT_JAKIRO_CLIENT_H_
#define RFRPC_KVSTORE_CLIENT_JAKIRO_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/kvstore.rfrpc.h"
#include "rpc/channel.h"
#include "rpc/options.h"
#include "rpc/tuner/online.h"

namespace rfrpc {
namespace kvstore {

// The first-fetch miss target of Jakiro's channels (ChannelOptions::
// fetch_delay_miss_target; rfrpc's default is 1/20). A Get's result time
// spreads more than an echo's: a cold key misses the cache at its bucket and
// again at its item, a hot one does not. rfrpc's default settles the
// first-fetch delay near the 95th percentile of result times, so every Get
// would wait about as long as the coldest twentieth. Jakiro lets its first
// fetch come early for this share of calls instead, which costs that share
// about one READ more per call (benchmarks/RESULTS.md has the measurements).
inline constexpr double kJakiroFetchMissTarget = 0.2;

struct JakiroClientOptions {
  JakiroClientOptions() {
    channel.fetch.delay_miss_target = kJakiroFetchMissTarget;
  }

  // Server addresses (shm socket paths or verbs host:port). Must not be empty
  // or hold duplicates. Default: none.
  std::vector<std::string> servers;
  // Options of every channel. `connections` is ignored (always one per
  // server worker); max_request_bytes / max_response_bytes are raised to fit
  // max_value_bytes. Default: ChannelOptions defaults, except
  // fetch_delay_miss_target = kJakiroFetchMissTarget.
  ChannelOptions channel;
  // Ring points per server. Default: 160.
  int virtual_nodes = 160;
  // Largest value this client puts or expects to get; must not exceed the
  // servers' --kv_max_value_bytes. Default: 32 KiB.
  size_t max_value_bytes = size_t{32} << 10;
  // A calibrated R/F profile (`rfrpc_tune calibrate --out=FILE`, docs/
  // tuner.md) made on the channel's provider: every server's channel then
  // gets an OnlineTuner that re-selects R and F from the results it sees,
  // every tuner_interval. "": R and F stay as `channel` sets them.
  // Default: "".
  std::string profile;
  absl::Duration tuner_interval = absl::Seconds(1);
};

class JakiroClient {
 public:
  // The seed of the ring hash (see the header comment).
  static constexpr uint64_t kRingSeed = 0x4a616b69726f3031;  // "Jakiro01"

  // Connects to every server. INVALID_ARGUMENT for bad options; the first
  // server's connection error otherwise (naming the server).
  static absl::StatusOr<std::unique_ptr<JakiroClient>> Connect(
      const JakiroClientOptions& options);

  JakiroClient(const JakiroClient&) = delete;
  JakiroClient& operator=(const JakiroClient&) = delete;
  ~JakiroClient();

  // The value of `key` into `*value` (not null, not kept; its old buffer
  // may be reused by a later call). NOT_FOUND if absent; the statuses of
  // proto/kvstore.proto and of Channel::Call.
  absl::Status Get(absl::string_view key, std::string* value);
  // Inserts or replaces `key`.
  absl::Status Put(absl::string_view key, absl::string_view value);
  // Removes `key`; NOT_FOUND if absent.
  absl::Status Delete(absl::string_view key);

  // Asynchronous Get: `done` runs once with the status, on a channel thread,
  // a thread making a sync call or one in Poll(); `*value` (not null) must
  // live until then.
  // Lets one thread keep several calls in flight (what request batching
  // needs).
  void GetAsync(absl::string_view key, std::string* value,
                std::function<void(absl::Status)> done);
  // Asynchronous Put: `key` and `value` are copied into the request before
  // it returns; `done` runs once with the status, as for GetAsync.
  void PutAsync(absl::string_view key, absl::string_view value,
                std::function<void(absl::Status)> done);

  // Advances outstanding async calls on the calling thread and runs the
  // callbacks of those that finished (Channel::Poll on every server's
  // channel). Returns true if anything happened. Required for async calls
  // to finish when options().channel.progress_thread is false.
  bool Poll();

  // Index into options().servers of the server owning `key`.
  int ServerOf(absl::string_view key) const;
  // The partition (worker) of `key` on its server.
  int WorkerOf(absl::string_view key) const;

  int num_servers() const { return static_cast<int>(servers_.size()); }
  // Worker count of server i, as its channel last learned it (a server
  // that comes back with another --workers is followed: calls route by the
  // new count from then on, and a call the change misrouted is retried).
  int workers(int server) const {
    return servers_[server].channel->server_workers();
  }
  // Counters of server i's channel.
  ChannelStats stats(int server) const;
  // Server i's channel (R and F in force, worker count, ...).
  const Channel& channel(int server) const { return *servers_[server].channel; }
  // All channels' counters summed (fetch_rtt_ns and fetch_delay_ns:
  // averaged over the servers).
  ChannelStats TotalStats() const;
  // The online tuner of server i's channel (options().profile set), or
  // null.
  const tuner::OnlineTuner* tuner(int server) const {
    return tuners_.empty() ? nullptr : tuners_[server].get();
  }
  const JakiroClientOptions& options() const { return options_; }

 private:
  struct ServerConn {
    std::unique_ptr<Channel> channel;
    std::unique_ptr<rfrpc::kv::Jakiro::Stub> stub;
  };

  explicit JakiroClient(const JakiroClientOptions& options);

  // The server of `key` and a context routed to the owning worker, by the
  // worker count its channel knows now (into `*workers`).
  ServerConn& Route(absl::string_view key, ClientContext* ctx, int* workers);
  // Whether a call routed for `workers` workers that ended with `st` went to
  // a worker that does not own its key because the server's worker count
  // changed since (FAILED_PRECONDITION and the channel knows another count
  // now): it is safe to send again, since the server rejected it unserved.
  // False once the client is being destroyed: a callback then sends
  // nothing more through channels on their way out.
  bool Misrouted(const ServerConn& s, int workers,
                 const absl::Status& st) const;

  // Makes `call(stub, ctx)` with ctx routed by `key`, again while the
  // result is Misrouted; returns the last status.
  template <typename Call>
  absl::Status CallRouted(absl::string_view key, Call call);

  // An async call's messages, context and final callback
  // (jakiro_client.cc), and the send that routes it, again after a
  // misroute, through the stub's `method`.
  template <typename Request, typename Response>
  struct AsyncCall;
  template <typename Request, typename Response>
  using AsyncMethod = void (rfrpc::kv::Jakiro::Stub::*)(
      ClientContext*, const Request&, Response*,
      std::function<void(absl::Status)>);
  template <typename Request, typename Response>
  void SendRouted(std::shared_ptr<AsyncCall<Request, Response>> call,
                  AsyncMethod<Request, Response> method);

  const JakiroClientOptions options_;
  // Set by the destructor (see Misrouted).
  std::atomic<bool> closing_{false};
  std::vector<ServerConn> servers_;
  // One per server when options_.profile is set. Declared after servers_:
  // destroyed (stopping their timers) before the channels they tune.
  std::vector<std::unique_ptr<tuner::OnlineTuner>> tuners_;
  // (ring point, server index), sorted by point.
  std::vector<std::pair<uint64_t, int>> ring_;
};

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_CLIENT_JAKIRO_CLIENT_H_
