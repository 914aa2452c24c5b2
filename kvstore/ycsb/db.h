// Copyright 2026 The rfrpc Authors.
//
// The YCSB driver interface (Java YCSB's site.ycsb.DB) and the registry that
// creates drivers by name.
//
// A record is a list of (field, value) pairs. Each client thread creates its
// own DB instance through the driver's factory, calls Init() once, runs its
// operations and calls Cleanup() once. A DB instance is used by one thread
// only, so drivers need no locking of their own state; state shared between
// instances (an in-memory store, a connection pool) must be thread-safe.
//
// Results are absl::Status values; YcsbReturnName() maps them to the names of
// Java YCSB's Status, which the report prints as "Return=NAME":
//
//   OK                   absl::OkStatus()
//   NOT_FOUND            absl::NotFoundError
//   NOT_IMPLEMENTED      absl::UnimplementedError
//   UNEXPECTED_STATE     absl::FailedPreconditionError, DataLossError
//   BAD_REQUEST          absl::InvalidArgumentError, OutOfRangeError
//   FORBIDDEN            absl::PermissionDeniedError, UnauthenticatedError
//   SERVICE_UNAVAILABLE  absl::UnavailableError, DeadlineExceededError
//   ERROR                everything else
//
// Registering a driver from another library (link it with alwayslink = 1):
//
//   namespace {
//   const bool kRegistered = rfrpc::ycsb::RegisterDriver(
//       "jakiro", [](const rfrpc::ycsb::Properties& props)
//           -> absl::StatusOr<std::unique_ptr<rfrpc::ycsb::DB>> {
//         return std::make_unique<JakiroDb>(props);
//       });
//   }  // namespace
//
// Properties named "<driver>.<anything>" belong to that driver: the workload
// parser does not report them as unknown.

#ifndef RFRPC_KVSTORE_YCSB_DB_H_
#define RFRPC_KVSTORE_YCSB_DB_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstore/ycsb/properties.h"

namespace rfrpc {
namespace ycsb {

struct Field {
  std::string name;
  std::string value;

  bool operator==(const Field& o) const {
    return name == o.name && value == o.value;
  }
};

using Record = std::vector<Field>;

class DB {
 public:
  virtual ~DB() = default;

  // Called once on the owning thread before any operation (connect here).
  virtual absl::Status Init() { return absl::OkStatus(); }
  // Called once on the owning thread after the last operation.
  virtual absl::Status Cleanup() { return absl::OkStatus(); }

  // Reads record `key` into `*result` (cleared first). `fields` lists the
  // fields wanted, or is null for all; it is not kept. NotFound if there is
  // no such record. `result` must not be null.
  virtual absl::Status Read(absl::string_view table, absl::string_view key,
                            const std::vector<std::string>* fields,
                            Record* result) = 0;

  // Reads up to `count` records in key order starting at `start_key` into
  // `*result` (cleared first). Drivers without ordered keys return
  // Unimplemented, and false from SupportsScan(). `result` must not be null.
  virtual absl::Status Scan(absl::string_view table,
                            absl::string_view start_key, int64_t count,
                            const std::vector<std::string>* fields,
                            std::vector<Record>* result) = 0;

  // Overwrites the given fields of existing record `key`, keeping the others.
  virtual absl::Status Update(absl::string_view table, absl::string_view key,
                              const Record& values) = 0;

  // Stores record `key` with exactly `values`.
  virtual absl::Status Insert(absl::string_view table, absl::string_view key,
                              const Record& values) = 0;

  // Removes record `key`.
  virtual absl::Status Delete(absl::string_view table,
                              absl::string_view key) = 0;

  // False for a driver whose Scan is always Unimplemented: a run phase of
  // scans only is refused before it starts, one with scans among other
  // operations warned about (CheckDriverCanRun, client.h).
  virtual bool SupportsScan() const { return true; }

  // Pipelined operations, for the run phase with `outstanding` > 1 (see
  // client.h). A driver that can keep several operations in flight from its
  // one thread returns true from SupportsAsync() and overrides the *Async
  // methods. The defaults call the synchronous method and run `done` before
  // returning, so every driver works pipelined, at an effective depth of 1.
  //
  // Each *Async call starts the operation and returns; `done` runs exactly
  // once with what the synchronous method would have returned, on any thread
  // (a driver's completion thread, or inside the call). Every argument
  // (table, key, fields, values, result and the data they refer to) must stay
  // valid until `done` has run; `done` must not call into this DB. Calls to
  // *Async still come from the one owning thread.
  using Done = std::function<void(absl::Status)>;
  virtual bool SupportsAsync() const { return false; }
  virtual void ReadAsync(absl::string_view table, absl::string_view key,
                         const std::vector<std::string>* fields,
                         Record* result, Done done) {
    done(Read(table, key, fields, result));
  }
  virtual void UpdateAsync(absl::string_view table, absl::string_view key,
                           const Record& values, Done done) {
    done(Update(table, key, values));
  }
  virtual void InsertAsync(absl::string_view table, absl::string_view key,
                           const Record& values, Done done) {
    done(Insert(table, key, values));
  }
  // Called by the owning thread while it waits for async operations: a
  // driver whose completions need the caller's help (a poll loop) advances
  // them here and may run their `done` callbacks before returning. Returns
  // true if anything happened. Default: false (nothing to do).
  virtual bool Poll() { return false; }
};

// The Java YCSB Status name for `status` (see the table above).
absl::string_view YcsbReturnName(const absl::Status& status);

// Creates one DB instance from the run's properties. Called once per client
// thread, possibly concurrently; must be thread-safe.
using DriverFactory =
    std::function<absl::StatusOr<std::unique_ptr<DB>>(const Properties&)>;

// Registers `factory` under `name`. Returns true, so it can initialize a
// namespace-scope constant; a second registration of the same name is a
// programmer error (CHECK). Thread-safe.
bool RegisterDriver(absl::string_view name, DriverFactory factory);

// The factory registered under `name`, or NotFound listing the registered
// names. Thread-safe.
absl::StatusOr<DriverFactory> FindDriver(absl::string_view name);

// Sorted names of the registered drivers. Thread-safe.
std::vector<std::string> RegisteredDrivers();

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_DB_H_
