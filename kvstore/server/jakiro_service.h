// Copyright 2026 The rfrpc Authors.
//
// JakiroService: the server side of Jakiro (proto/kvstore.proto), the EREW
// key-value store of the RF-RPC paper (§5.1).
//
// The service owns one Partition (kvstore/store/partition.h) per server
// worker. A handler running on worker w (ServerContext::worker()) touches
// only partitions_[w], and only for keys that worker owns
// (PartitionOfHash(KeyHash(key), workers) == w), so the data path takes no
// locks: the Exclusive-Read-Exclusive-Write design. Clients route each key to
// its owner's connection (kvstore/client/jakiro_client.h); a request for a
// key owned by another worker fails with FAILED_PRECONDITION naming the owner.
//
// Statuses (see proto/kvstore.proto): NOT_FOUND, INVALID_ARGUMENT (empty key,
// key > Partition::kMaxKeyBytes), RESOURCE_EXHAUSTED (value > max_value_bytes,
// or an item larger than a partition segment), FAILED_PRECONDITION
// (misrouted).
//
// Thread safety: handlers may run concurrently on different workers (each on
// its own partition). REQUIRES: the Server runs exactly `options.workers`
// workers; a call from a worker index >= workers is INTERNAL.
// partition_stats() and TotalStats() read partitions that workers mutate:
// call them only while no worker runs (after Server::Shutdown).
// PublishedStats() is thread-safe: each handler copies its partition's
// counters into relaxed atomics after it ran (a dozen stores), for
// kvstore/server/jakiro_metrics.h to read while the server runs.
//
//   JakiroServiceOptions opts;
//   opts.workers = 2;
//   RFRPC_ASSIGN_OR_RETURN(auto service, JakiroService::Create(opts));
//   ServerOptions so;
//   so.workers = opts.workers;
//   Server server(so);
//   RFRPC_RETURN_IF_ERROR(server.RegisterService(service.get()));
//   RFRPC_RETURN_IF_ERROR(server.Start());

#ifndef RFRPC_KVSTORE_SERVER_JAKIRO_SERVICE_H_
#define RFRPC_KVSTORE_SERVER_JAKIRO_SERVICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kvstore/store/partition.h"
#include "proto/kvstore.rfrpc.h"
#include "rpc/service.h"

namespace rfrpc {
namespace kvstore {

struct JakiroServiceOptions {
  // Partitions, one per server worker; must equal ServerOptions::workers.
  // Default: 1.
  int workers = 1;
  // Item memory per partition (PartitionOptions::memory_bytes). Default:
  // 64 MiB.
  size_t memory_bytes_per_partition = size_t{64} << 20;
  // Largest value accepted; larger Puts are RESOURCE_EXHAUSTED. Requests and
  // responses must fit the rpc limits: size ServerOptions::max_request_bytes
  // and max_response_bytes with JakiroMaxMessageBytes() (message_limits.h).
  // Default: 32 KiB.
  size_t max_value_bytes = size_t{32} << 10;
};

class JakiroService final : public rfrpc::kv::Jakiro::Service {
 public:
  // Validates `options` (INVALID_ARGUMENT) and allocates every partition.
  static absl::StatusOr<std::unique_ptr<JakiroService>> Create(
      const JakiroServiceOptions& options);

  absl::Status Get(ServerContext* ctx, const rfrpc::kv::GetRequest* request,
                   rfrpc::kv::GetResponse* response) override;
  absl::Status Put(ServerContext* ctx, const rfrpc::kv::PutRequest* request,
                   rfrpc::kv::PutResponse* response) override;
  absl::Status Delete(ServerContext* ctx,
                      const rfrpc::kv::DeleteRequest* request,
                      rfrpc::kv::DeleteResponse* response) override;

  int workers() const { return static_cast<int>(partitions_.size()); }
  const JakiroServiceOptions& options() const { return options_; }
  // Bytes of one arena segment, alike in every partition: a Put whose item
  // (Partition::ItemFootprint) is larger is RESOURCE_EXHAUSTED.
  size_t segment_bytes() const { return partitions_[0]->segment_bytes(); }

  // Statistics of partition `i` and of all partitions summed.
  // REQUIRES: no worker is running (see the header comment); 0 <= i < workers.
  const PartitionStats& partition_stats(int i) const;
  PartitionStats TotalStats() const;
  // Partition i's counters as of the end of the last call its worker ran.
  // Any thread, any time. REQUIRES: 0 <= i < workers.
  PartitionStats PublishedStats(int i) const;

 private:
  // PartitionStats, readable from other threads; written by one worker.
  struct alignas(64) Published {
    std::atomic<uint64_t> items{0}, live_bytes{0}, arena_bytes{0},
        index_bytes{0}, hits{0}, misses{0}, puts{0}, deletes{0},
        evictions_bucket_full{0}, evictions_memory{0}, compactions{0},
        compacted_bytes{0};
    // The worker logged that its partition evicts (once). Worker w only.
    bool warned_evicting = false;
  };
  // Copies partition w's counters into published_[w], and logs a warning
  // the first time the partition evicts: a Put never fails for lack of
  // memory, so without it a user who loaded more than --kv_memory_mb holds
  // learns only from Gets that miss. Worker w only (or before the server
  // runs).
  void Publish(int w);

  explicit JakiroService(const JakiroServiceOptions& options);

  // The partition of the worker running `ctx` after checking that `key` is
  // valid and owned by that worker; otherwise the call's error status.
  absl::StatusOr<Partition*> OwnerPartition(const ServerContext& ctx,
                                            const std::string& key);

  const JakiroServiceOptions options_;
  // partitions_[w] is used only by server worker w.
  std::vector<std::unique_ptr<Partition>> partitions_;
  std::vector<std::unique_ptr<Published>> published_;
};

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_SERVER_JAKIRO_SERVICE_H_
