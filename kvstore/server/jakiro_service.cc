// Copyright 2026 The rfrpc Authors.

#include "kvstore/server/jakiro_service.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "kvstore/store/key_hash.h"

namespace rfrpc {
namespace kvstore {

absl::StatusOr<std::unique_ptr<JakiroService>> JakiroService::Create(
    const JakiroServiceOptions& options) {
  if (options.workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("workers must be >= 1, got ", options.workers));
  }
  if (options.max_value_bytes < 1) {
    return absl::InvalidArgumentError("max_value_bytes must be >= 1");
  }
  std::unique_ptr<JakiroService> service(new JakiroService(options));
  PartitionOptions po;
  po.memory_bytes = options.memory_bytes_per_partition;
  po.max_value_bytes = options.max_value_bytes;
  for (int w = 0; w < options.workers; ++w) {
    absl::StatusOr<std::unique_ptr<Partition>> p = Partition::Create(po);
    if (!p.ok()) {
      return absl::Status(p.status().code(),
                          absl::StrCat("partition ", w, ": ",
                                       p.status().message()));
    }
    service->partitions_.push_back(std::move(*p));
    service->published_.push_back(std::make_unique<Published>());
    service->Publish(w);
  }
  return service;
}

JakiroService::JakiroService(const JakiroServiceOptions& options)
    : options_(options) {}

absl::StatusOr<Partition*> JakiroService::OwnerPartition(
    const ServerContext& ctx, const std::string& key) {
  if (key.empty()) return absl::InvalidArgumentError("empty key");
  if (key.size() > Partition::kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " bytes exceeds the maximum of ",
                     Partition::kMaxKeyBytes));
  }
  const int worker = ctx.worker();
  if (worker < 0 || worker >= workers()) {
    return absl::InternalError(absl::StrCat(
        "call on server worker ", worker, " but the service has ", workers(),
        " partitions (ServerOptions::workers must equal "
        "JakiroServiceOptions::workers)"));
  }
  const uint32_t owner = PartitionOfHash(KeyHash(key), workers());
  if (owner != static_cast<uint32_t>(worker)) {
    return absl::FailedPreconditionError(
        absl::StrCat("key belongs to worker ", owner, " of ", workers(),
                     ", not worker ", worker,
                     " (route by KeyHash(key) % workers)"));
  }
  return partitions_[worker].get();
}

absl::Status JakiroService::Get(ServerContext* ctx,
                                const rfrpc::kv::GetRequest* request,
                                rfrpc::kv::GetResponse* response) {
  absl::StatusOr<Partition*> p = OwnerPartition(*ctx, request->key());
  if (!p.ok()) return p.status();
  absl::StatusOr<absl::string_view> v = (*p)->GetView(request->key());
  Publish(ctx->worker());
  if (!v.ok()) return v.status();
  // assign(), not set_value(data, size): that builds a temporary string,
  // while this reuses the buffer of the (reused, see rpc/service.h)
  // response.
  response->mutable_value()->assign(v->data(), v->size());
  return absl::OkStatus();
}

absl::Status JakiroService::Put(ServerContext* ctx,
                                const rfrpc::kv::PutRequest* request,
                                rfrpc::kv::PutResponse* response) {
  absl::StatusOr<Partition*> p = OwnerPartition(*ctx, request->key());
  if (!p.ok()) return p.status();
  if (request->value().size() > options_.max_value_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("value of ", request->value().size(),
                     " bytes exceeds the maximum of ", options_.max_value_bytes));
  }
  absl::Status s = (*p)->Put(request->key(), request->value());
  Publish(ctx->worker());
  return s;
}

absl::Status JakiroService::Delete(ServerContext* ctx,
                                   const rfrpc::kv::DeleteRequest* request,
                                   rfrpc::kv::DeleteResponse* response) {
  absl::StatusOr<Partition*> p = OwnerPartition(*ctx, request->key());
  if (!p.ok()) return p.status();
  absl::Status s = (*p)->Delete(request->key());
  Publish(ctx->worker());
  return s;
}

void JakiroService::Publish(int w) {
  const PartitionStats& s = partitions_[w]->stats();
  Published& p = *published_[w];
  constexpr auto kRelaxed = std::memory_order_relaxed;
  p.items.store(s.items, kRelaxed);
  p.live_bytes.store(s.live_bytes, kRelaxed);
  p.arena_bytes.store(s.arena_bytes, kRelaxed);
  p.index_bytes.store(s.index_bytes, kRelaxed);
  p.hits.store(s.hits, kRelaxed);
  p.misses.store(s.misses, kRelaxed);
  p.puts.store(s.puts, kRelaxed);
  p.deletes.store(s.deletes, kRelaxed);
  p.evictions_bucket_full.store(s.evictions_bucket_full, kRelaxed);
  p.evictions_memory.store(s.evictions_memory, kRelaxed);
  p.compactions.store(s.compactions, kRelaxed);
  p.compacted_bytes.store(s.compacted_bytes, kRelaxed);
  if (!p.warned_evicting &&
      (s.evictions_memory > 0 || s.evictions_bucket_full > 0)) {
    p.warned_evicting = true;
    LOG(WARNING)
        << "partition " << w << " evicts least recently used items "
        << "(" << s.evictions_memory << " for memory, "
        << s.evictions_bucket_full << " from a full index bucket so "
        << "far; " << s.items << " items, " << s.live_bytes << " live bytes in "
        << (options_.memory_bytes_per_partition >> 20)
        << " MiB): later Gets of those keys are NOT_FOUND. "
        << "kvstore_server's --kv_memory_mb (memory_bytes_per_partition) "
        << "raises the memory per partition. "
        << "Logged once per partition.";
  }
}

PartitionStats JakiroService::PublishedStats(int i) const {
  const Published& p = *published_[i];
  PartitionStats s;
  s.items = p.items.load(std::memory_order_relaxed);
  s.live_bytes = p.live_bytes.load(std::memory_order_relaxed);
  s.arena_bytes = p.arena_bytes.load(std::memory_order_relaxed);
  s.index_bytes = p.index_bytes.load(std::memory_order_relaxed);
  s.hits = p.hits.load(std::memory_order_relaxed);
  s.misses = p.misses.load(std::memory_order_relaxed);
  s.puts = p.puts.load(std::memory_order_relaxed);
  s.deletes = p.deletes.load(std::memory_order_relaxed);
  s.evictions_bucket_full = p.evictions_bucket_full.load(std::memory_order_relaxed);
  s.evictions_memory = p.evictions_memory.load(std::memory_order_relaxed);
  s.compactions = p.compactions.load(std::memory_order_relaxed);
  s.compacted_bytes = p.compacted_bytes.load(std::memory_order_relaxed);
  return s;
}

const PartitionStats& JakiroService::partition_stats(int i) const {
  return partitions_[i]->stats();
}

PartitionStats JakiroService::TotalStats() const {
  PartitionStats t;
  for (const auto& p : partitions_) {
    const PartitionStats& s = p->stats();
    t.items += s.items;
    t.live_bytes += s.live_bytes;
    t.arena_bytes += s.arena_bytes;
    t.index_bytes += s.index_bytes;
    t.hits += s.hits;
    t.misses += s.misses;
    t.puts += s.puts;
    t.deletes += s.deletes;
    t.evictions_bucket_full += s.evictions_bucket_full;
    t.evictions_memory += s.evictions_memory;
    t.compactions += s.compactions;
    t.compacted_bytes += s.compacted_bytes;
  }
  return t;
}

}  // namespace kvstore
}  // namespace rfrpc
