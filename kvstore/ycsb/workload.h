// Copyright 2026 The rfrpc Authors.
//
// CoreWorkload: what Java YCSB's site.ycsb.workloads.CoreWorkload does. It
// builds keys ("user" + hashed or ordered record number) and values, chooses
// operations and keys with the generators of generators.h, and issues them
// through a MeasuredDb, which times each call and counts return codes.
//
// With dataintegrity, every value is derived from its key and field name the
// way Java YCSB derives it (key ":" field, then ":" + the Java hashCode of
// everything so far, repeated, cut to fieldlength), and every read is
// verified; results go to the "VERIFY" measurement as Return=OK,
// UNEXPECTED_STATE (wrong or missing field) or ERROR (no data).
//
// Thread-safety: one CoreWorkload is shared by all client threads; each
// thread passes its own ThreadState (its Rng and any generator that cannot be
// shared) and its own DB and Measurements.
//
// Example:
//
//   RFRPC_ASSIGN_OR_RETURN(auto workload, CoreWorkload::Create(spec));
//   CoreWorkload::ThreadState state = workload->NewThreadState(/*seed=*/1);
//   MeasuredDb db(driver.get(), &measurements);
//   RFRPC_RETURN_IF_ERROR(workload->DoInsert(db, state));

#ifndef RFRPC_KVSTORE_YCSB_WORKLOAD_H_
#define RFRPC_KVSTORE_YCSB_WORKLOAD_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/generators.h"
#include "kvstore/ycsb/measurements.h"
#include "kvstore/ycsb/properties.h"

namespace rfrpc {
namespace ycsb {

// A DB wrapper that measures every call under its YCSB name (READ, UPDATE,
// INSERT, SCAN, DELETE, CLEANUP), as "<OP>-FAILED" when the call failed, and
// counts the Return= name of each result under the operation name.
// Single-threaded, like the DB it wraps. Neither pointer is owned; both must
// outlive the wrapper.
class MeasuredDb {
 public:
  MeasuredDb(DB* db, Measurements* measurements)
      : db_(db), measurements_(measurements) {}

  absl::Status Init() { return db_->Init(); }
  absl::Status Cleanup();
  absl::Status Read(absl::string_view table, absl::string_view key,
                    const std::vector<std::string>* fields, Record* result);
  absl::Status Scan(absl::string_view table, absl::string_view start_key,
                    int64_t count, const std::vector<std::string>* fields,
                    std::vector<Record>* result);
  absl::Status Update(absl::string_view table, absl::string_view key,
                      const Record& values);
  absl::Status Insert(absl::string_view table, absl::string_view key,
                      const Record& values);
  absl::Status Delete(absl::string_view table, absl::string_view key);

  Measurements* measurements() const { return measurements_; }

 private:
  void Note(absl::string_view op, const absl::Status& status,
            int64_t start_ns);

  DB* db_;
  Measurements* measurements_;
};

// Monotonic nanoseconds.
int64_t NowNanos();

// Records one finished call of `op` (READ, UPDATE, ...) the way MeasuredDb
// does: its latency under `op` or "<op>-FAILED", and its Return= name.
void RecordCall(Measurements* measurements, absl::string_view op,
                const absl::Status& status, int64_t latency_ns);

enum class Operation { kRead, kUpdate, kInsert, kScan, kReadModifyWrite };

// One run-phase operation of the pipelined client (client.h, `outstanding` >
// 1), from its choice to its completion: CoreWorkload::NextTransaction fills
// it, StartStep issues it through the driver's *Async methods, FinishStep
// records it. A read-modify-write takes two steps (the read, then the
// update). Owned by the client thread; between StartStep and the step's
// `done` the driver may write `cells`, `status` and `end_ns` from its
// completion thread.
struct PendingOp {
  Operation op = Operation::kRead;
  std::string key;
  std::vector<std::string> field_storage;
  const std::vector<std::string>* fields = nullptr;  // Null: all fields.
  Record values;  // What an update / insert / read-modify-write writes.
  Record cells;   // What a read returned.
  int64_t keynum = 0;       // A transaction insert's record number.
  int64_t scan_length = 0;  // A scan's record count.
  int step = 0;        // Read-modify-write: 0 the read, 1 the update.
  int64_t op_start_ns = 0;    // Issue of the first step.
  int64_t step_start_ns = 0;  // Issue of the current step.
  absl::Status read_status;   // Read-modify-write: the read's result.
  // Set by the completion of the current step.
  int64_t end_ns = 0;
  absl::Status status;
};

class CoreWorkload {
 public:
  // Per-thread state. Movable; not shareable between threads.
  struct ThreadState {
    Rng rng;
    // Set for requestdistribution=latest, whose generator is per thread.
    std::unique_ptr<SkewedLatest> latest;
    // Buffers the synchronous operations reuse from one operation to the
    // next (the key, the field list a read asks for, what it returned), so
    // the run phase does not allocate them per operation.
    std::string key;
    std::vector<std::string> field_storage;
    Record cells;
  };

  // InvalidArgument, naming the property, if `spec` cannot drive a
  // workload: recordcount or insertcount 0 (a key distribution over no
  // keys), keylength or zeropadding above its limit (properties.h). Cheap:
  // builds no generator.
  static absl::Status CheckSpec(const WorkloadSpec& spec);

  // CheckSpec's errors, or the workload.
  static absl::StatusOr<std::unique_ptr<CoreWorkload>> Create(
      const WorkloadSpec& spec);

  ThreadState NewThreadState(uint64_t seed) const;

  // Load phase: inserts the next record of the insert sequence, retrying as
  // core_workload_insertion_retry_limit says. Returns the last insert error
  // if every attempt failed.
  absl::Status DoInsert(MeasuredDb& db, ThreadState& state) const;

  // Run phase: performs one operation chosen by the proportions. DB errors
  // are counted, not returned; an error return means the thread must stop
  // (too many inserts in flight).
  absl::Status DoTransaction(MeasuredDb& db, ThreadState& state) const;

  // The pipelined run phase (see PendingOp). NextTransaction chooses the
  // next operation and its key, fields and values with the same generator
  // draws, in the same order, as DoTransaction.
  void NextTransaction(ThreadState& state, PendingOp* op) const;
  // Issues op's current step on `db` (not kept) and stamps its start; when
  // the step completes, its status and end time are stored in `*op` and
  // `done` runs (on any thread, possibly before StartStep returns). Scans
  // run synchronously (no driver scans asynchronously).
  void StartStep(DB* db, PendingOp* op, std::function<void()> done) const;
  // On the client thread, after op's step completed: records it in
  // `measurements` (latency from the step's issue to its completion, the
  // Return= code, VERIFY with dataintegrity, READ-MODIFY-WRITE). Returns
  // true when the operation is complete, false if it has another step to
  // start; an error means the thread must stop (as DoTransaction's).
  absl::StatusOr<bool> FinishStep(PendingOp* op,
                                  Measurements* measurements) const;

  // The key of record number `keynum`.
  std::string BuildKeyName(int64_t keynum) const;
  // The same into `*key` (not null), reusing its buffer.
  void BuildKeyName(int64_t keynum, std::string* key) const;
  // The dataintegrity value of `field` in record `key`.
  std::string BuildDeterministicValue(absl::string_view key,
                                      absl::string_view field) const;
  // All fields of a new record `key`.
  Record BuildValues(absl::string_view key, ThreadState& state) const;

  Operation NextOperation(ThreadState& state) const;
  // The record number the next read/update/scan/rmw uses.
  int64_t NextKeynum(ThreadState& state) const;

  const WorkloadSpec& spec() const { return spec_; }
  const std::vector<std::string>& field_names() const { return field_names_; }

 private:
  explicit CoreWorkload(const WorkloadSpec& spec);

  Record BuildSingleValue(absl::string_view key, ThreadState& state) const;
  std::string RandomValue(ThreadState& state) const;
  std::string FieldValue(absl::string_view key, absl::string_view field,
                         ThreadState& state) const;
  // Selects the fields a read asks for (null: all).
  const std::vector<std::string>* ReadFields(
      ThreadState& state, std::vector<std::string>* storage) const;
  void VerifyRow(absl::string_view key, const std::vector<std::string>* fields,
                 const absl::Status& read_status, const Record& cells,
                 Measurements* measurements) const;

  void DoRead(MeasuredDb& db, ThreadState& state) const;
  void DoUpdate(MeasuredDb& db, ThreadState& state) const;
  absl::Status DoTransactionInsert(MeasuredDb& db, ThreadState& state) const;
  void DoScan(MeasuredDb& db, ThreadState& state) const;
  void DoReadModifyWrite(MeasuredDb& db, ThreadState& state) const;

  const WorkloadSpec spec_;
  KeyFormat key_format_;
  std::vector<std::string> field_names_;
  std::unique_ptr<NumberGenerator> field_length_;
  std::unique_ptr<UniformLong> field_chooser_;
  std::unique_ptr<NumberGenerator> scan_length_;
  Discrete operation_chooser_;
  // Load-phase record numbers.
  std::unique_ptr<Counter> key_sequence_;
  // Run-phase insert record numbers; readers stay below its Last().
  std::unique_ptr<AcknowledgedCounter> transaction_insert_sequence_;
  // Shared key chooser (null for latest, which is per thread).
  std::unique_ptr<NumberGenerator> key_chooser_;
  std::unique_ptr<Exponential> exponential_;  // For exponential.
};

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_WORKLOAD_H_
