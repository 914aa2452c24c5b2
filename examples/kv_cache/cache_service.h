// Copyright 2026 The rfrpc Authors.
//
// CacheService: a cache in front of Jakiro (kvstore/), served by rfrpc. Its
// Get and Put are async handlers (the option (rfrpc.handler) in cache.proto):
// a miss calls Jakiro through JakiroClient's async API and the call is
// finished from Jakiro's callback, on the client channel's thread, so the
// worker that took the request keeps serving other callers meanwhile (a
// sync handler would hold it for Jakiro's whole round trip). Hits are
// answered inline (done() before the handler returns: the worker publishes
// them like a sync result).
//
// The cache keeps at most `capacity` entries, evicting the least recently
// used; Put writes through (Jakiro first, then the cache).
//
// Ownership: the service does not own the JakiroClient, which must outlive
// it and every call it has in flight. Thread safety: thread-safe (one mutex
// around the map and its recency list; never held across a call out).
//
//   JakiroClientOptions jo;
//   jo.servers = {jakiro_address};
//   RFRPC_ASSIGN_OR_RETURN(auto jakiro, kvstore::JakiroClient::Connect(jo));
//   examples::CacheService cache(jakiro.get(), /*capacity=*/10000);
//   Server server(ServerOptions{});
//   RFRPC_RETURN_IF_ERROR(server.RegisterService(&cache));
//   RFRPC_RETURN_IF_ERROR(server.Start());

#ifndef RFRPC_EXAMPLES_KV_CACHE_CACHE_SERVICE_H_
#define RFRPC_EXAMPLES_KV_CACHE_CACHE_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "examples/kv_cache/cache.rfrpc.h"
#include "kvstore/client/jakiro_client.h"

namespace rfrpc {
namespace examples {

class CacheService final : public cache::Cache::Service {
 public:
  // `jakiro` is not owned. `capacity` >= 1 entries.
  CacheService(kvstore::JakiroClient* jakiro, size_t capacity);

  void Get(ServerContext* ctx, const cache::GetRequest* request,
           cache::GetResponse* response, ServerDone done) override;
  void Put(ServerContext* ctx, const cache::PutRequest* request,
           cache::PutResponse* response, ServerDone done) override;
  absl::Status Stats(ServerContext* ctx, const cache::StatsRequest* request,
                     cache::StatsResponse* response) override;

 private:
  // The cached value of `key` into `*value`; false on a miss.
  bool Lookup(const std::string& key, std::string* value);
  void Insert(const std::string& key, const std::string& value);

  kvstore::JakiroClient* const jakiro_;
  const size_t capacity_;

  std::mutex mu_;
  // Most recent first; the map points into it.
  std::list<std::pair<std::string, std::string>> lru_;
  std::unordered_map<std::string,
                     std::list<std::pair<std::string, std::string>>::iterator>
      index_;
  uint64_t hits_ = 0, misses_ = 0, backend_calls_ = 0;
};

}  // namespace examples
}  // namespace rfrpc

#endif  // RFRPC_EXAMPLES_KV_CACHE_CACHE_SERVICE_H_
