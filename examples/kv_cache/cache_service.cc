// Copyright 2026 The rfrpc Authors.

#include "examples/kv_cache/cache_service.h"

#include <algorithm>
#include <utility>

namespace rfrpc {
namespace examples {

CacheService::CacheService(kvstore::JakiroClient* jakiro, size_t capacity)
    : jakiro_(jakiro), capacity_(std::max<size_t>(1, capacity)) {}

bool CacheService::Lookup(const std::string& key, std::string* value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    return false;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  *value = it->second->second;
  ++hits_;
  return true;
}

void CacheService::Insert(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) {
    it->second->second = value;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, value);
  index_[key] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

void CacheService::Get(ServerContext* ctx, const cache::GetRequest* request,
                       cache::GetResponse* response, ServerDone done) {
  if (Lookup(request->key(), response->mutable_value())) {
    response->set_from_cache(true);
    done(absl::OkStatus());  // Inline: published like a sync result.
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++backend_calls_;
  }
  // The response outlives the inner call: it lives until done() runs, and
  // done() runs in the inner call's callback. The value lands right in it.
  jakiro_->GetAsync(request->key(), response->mutable_value(),
                    [this, ctx, request, response, done](absl::Status s) {
                      if (ctx->IsCancelled()) {
                        // The caller gave up (or its deadline passed): the
                        // answer would be dropped anyway.
                        done(absl::CancelledError("caller gone"));
                        return;
                      }
                      if (s.ok()) Insert(request->key(), response->value());
                      response->set_from_cache(false);
                      done(std::move(s));
                    });
}

void CacheService::Put(ServerContext* ctx, const cache::PutRequest* request,
                       cache::PutResponse* response, ServerDone done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++backend_calls_;
  }
  jakiro_->PutAsync(request->key(), request->value(),
                    [this, request, done](absl::Status s) {
                      // Cached only once Jakiro has it: a Get never returns
                      // a value the store might not keep.
                      if (s.ok()) Insert(request->key(), request->value());
                      done(std::move(s));
                    });
}

absl::Status CacheService::Stats(ServerContext* ctx,
                                 const cache::StatsRequest* request,
                                 cache::StatsResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  response->set_hits(hits_);
  response->set_misses(misses_);
  response->set_backend_calls(backend_calls_);
  response->set_entries(lru_.size());
  return absl::OkStatus();
}

}  // namespace examples
}  // namespace rfrpc
