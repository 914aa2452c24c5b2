// Copyright 2026 The rfrpc Authors.
//
// The "memcached" YCSB driver, on libmemcached. A record is one memcached
// item whose value is the record_codec.h encoding of its fields; the table
// name is not part of the key (as in Java YCSB's memcached binding), so keys
// stay exactly the size the workload builds.
//
//   Read    get, then the wanted fields
//   Insert  set (replaces an existing record)
//   Update  gets + merge + cas, retried on a concurrent change
//   Delete  delete
//   Scan    NOT_IMPLEMENTED (memcached has no key order)
//
// Properties (with -p or in a workload file):
//   memcached.hosts       "host:port[,host:port...]". Default: 127.0.0.1:11211
//   memcached.binary      true: binary protocol. Default: false
//   memcached.timeout_ms  connect/poll timeout. Default: 1000
//   memcached.expiration  item expiration in seconds, 0 = never. Default: 0
//
// Thread-safety: one MemcachedDb per client thread (it owns its connections).

#ifndef RFRPC_KVSTORE_YCSB_MEMCACHED_DB_H_
#define RFRPC_KVSTORE_YCSB_MEMCACHED_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/properties.h"

struct memcached_st;

namespace rfrpc {
namespace ycsb {

struct MemcachedOptions {
  // Comma-separated host:port list. Default: "127.0.0.1:11211".
  std::string hosts = "127.0.0.1:11211";
  // Default: false (ASCII protocol).
  bool binary_protocol = false;
  // Default: 1000.
  int64_t timeout_ms = 1000;
  // Default: 0 (never expire).
  int64_t expiration_s = 0;
  // Update attempts when the item changes between gets and cas. Default: 10.
  int cas_attempts = 10;

  // Reads the memcached.* properties; InvalidArgument naming the property's
  // origin for a malformed value.
  static absl::StatusOr<MemcachedOptions> FromProperties(const Properties& p);
};

class MemcachedDb final : public DB {
 public:
  explicit MemcachedDb(MemcachedOptions options);
  ~MemcachedDb() override;
  MemcachedDb(const MemcachedDb&) = delete;
  MemcachedDb& operator=(const MemcachedDb&) = delete;

  // Creates the client and checks that every server answers (Unavailable
  // otherwise); InvalidArgument for an unparsable host list.
  absl::Status Init() override;
  absl::Status Cleanup() override;

  absl::Status Read(absl::string_view table, absl::string_view key,
                    const std::vector<std::string>* fields,
                    Record* result) override;
  absl::Status Scan(absl::string_view table, absl::string_view start_key,
                    int64_t count, const std::vector<std::string>* fields,
                    std::vector<Record>* result) override;
  absl::Status Update(absl::string_view table, absl::string_view key,
                      const Record& values) override;
  absl::Status Insert(absl::string_view table, absl::string_view key,
                      const Record& values) override;
  absl::Status Delete(absl::string_view table, absl::string_view key) override;
  bool SupportsScan() const override { return false; }

 private:
  // The current value and CAS token of `key`.
  absl::Status Gets(absl::string_view key, std::string* value, uint64_t* cas);

  const MemcachedOptions options_;
  memcached_st* memc_ = nullptr;  // Owned.
};

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_MEMCACHED_DB_H_
