// Copyright 2026 The rfrpc Authors.
//
// The "basic" YCSB driver: like Java YCSB's BasicDB, but it really stores
// records, in a process-local MemoryStore, so load + run with dataintegrity
// can be checked without a server. Used by tests and for dry runs of the
// client itself.
//
// MemoryStore is thread-safe (one reader/writer mutex, rfrpc::SharedMutex; keys are ordered per
// table so Scan works). BasicDb instances, one per client thread, share a
// store. The registered factory "basic" uses the process-wide store named by
// the property `basic.store` (Default: "default"), so separate runs in one
// process (load, then run) see the same data.
//
// Example:
//
//   auto store = std::make_shared<MemoryStore>();
//   BasicDb db(store);
//   db.Insert("usertable", "user1", {{"field0", "v"}});

#ifndef RFRPC_KVSTORE_YCSB_BASIC_DB_H_
#define RFRPC_KVSTORE_YCSB_BASIC_DB_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "kvstore/ycsb/db.h"
#include "base/mutex.h"

namespace rfrpc {
namespace ycsb {

class MemoryStore {
 public:
  absl::Status Read(absl::string_view table, absl::string_view key,
                    const std::vector<std::string>* fields, Record* result)
      const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Scan(absl::string_view table, absl::string_view start_key,
                    int64_t count, const std::vector<std::string>* fields,
                    std::vector<Record>* result) const ABSL_LOCKS_EXCLUDED(mu_);
  // NotFound if the record does not exist.
  absl::Status Update(absl::string_view table, absl::string_view key,
                      const Record& values) ABSL_LOCKS_EXCLUDED(mu_);
  // Replaces any existing record.
  absl::Status Insert(absl::string_view table, absl::string_view key,
                      const Record& values) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Delete(absl::string_view table, absl::string_view key)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Number of records in `table`.
  int64_t Size(absl::string_view table) const ABSL_LOCKS_EXCLUDED(mu_);

  // The process-wide store called `name`, created on first use. Thread-safe.
  static std::shared_ptr<MemoryStore> Named(absl::string_view name);

 private:
  using Table = std::map<std::string, Record, std::less<>>;

  mutable SharedMutex mu_;
  std::map<std::string, Table, std::less<>> tables_ ABSL_GUARDED_BY(mu_);
};

class BasicDb final : public DB {
 public:
  // `store` must not be null; shared with other instances.
  explicit BasicDb(std::shared_ptr<MemoryStore> store);

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

 private:
  std::shared_ptr<MemoryStore> store_;
};

// Copies the wanted fields of `record` into `*out` (all if `fields` is null).
void SelectFields(const Record& record, const std::vector<std::string>* fields,
                  Record* out);

// Sets each field of `values` in `*record`, replacing same-named fields.
void MergeFields(const Record& values, Record* record);

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_BASIC_DB_H_
