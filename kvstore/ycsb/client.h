// Copyright 2026 The rfrpc Authors.
//
// The YCSB client driver loop (Java YCSB's Client + ClientThread +
// StatusThread): runs the load phase (inserts insertcount records) or the run
// phase (operationcount operations) of a CoreWorkload on `threadcount`
// threads, each with its own DB instance from the driver factory, optionally
// throttled to `target` ops/s in total and stopped after `maxexecutiontime`
// seconds, printing a status line every `status.interval` seconds when asked,
// and reports in Java YCSB's text format:
//
//   [OVERALL], RunTime(ms), 1021
//   [OVERALL], Throughput(ops/sec), 9794.31929480901
//   [READ], Operations, 9502
//   [READ], AverageLatency(us), 3.41
//   ...
//   [READ], Return=OK, 9502
//
// Example:
//
//   ClientOptions options;
//   options.load = true;
//   RFRPC_ASSIGN_OR_RETURN(DriverFactory factory, FindDriver(spec.db));
//   options.factory = factory;
//   RFRPC_ASSIGN_OR_RETURN(RunResult result, RunClient(spec, props, options));
//   ExportReport(result, spec, std::cout);
//   return result.ok() ? 0 : 1;
//
// Pipelining: with `outstanding` = N > 1 and a driver that SupportsAsync()
// (db.h), each thread of the run phase keeps up to N operations in flight
// through the driver's *Async methods. Operations are chosen in the same way
// (CoreWorkload::NextTransaction) and recorded on the thread itself when they
// complete: latency from issue to completion, Return= codes and VERIFY as in
// the synchronous loop. A thread issues nothing past its share of
// operationcount or maxexecutiontime and returns once all its operations
// completed. `target` throttles issues.
//
// Thread-safety: RunClient may be called from any thread; it starts and joins
// its own threads. Calls are independent.

#ifndef RFRPC_KVSTORE_YCSB_CLIENT_H_
#define RFRPC_KVSTORE_YCSB_CLIENT_H_

#include <cstdint>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/measurements.h"
#include "kvstore/ycsb/properties.h"

namespace rfrpc {
namespace ycsb {

struct ClientOptions {
  // true: load phase (-load); false: run phase (-t). Default: false.
  bool load = false;
  // Print a status line every spec.status_interval seconds (-s).
  // Default: false.
  bool status = false;
  // Where status lines go; not owned, must outlive the call.
  // Default: &std::cerr.
  std::ostream* status_out = &std::cerr;
  // Creates each thread's DB. Required (see FindDriver()).
  DriverFactory factory;
  // A thread stops (and the run fails: RunResult::ok() is false) once every
  // operation it completed for this long returned SERVICE_UNAVAILABLE (the
  // database is unreachable: a server that died), instead of counting
  // failures at full speed to the end. Zero or less: never.
  // Default: 3 s.
  int64_t unavailable_stop_ns = int64_t{3'000'000'000};
};

struct RunResult {
  // Wall time from the start of the threads to the last Cleanup().
  int64_t runtime_ms = 0;
  // Operations completed (inserts in the load phase).
  int64_t operations = 0;
  // Everything measured, merged over the threads.
  MeasurementSnapshot measurements;
  // Reads whose data failed verification (VERIFY returns other than OK).
  int64_t integrity_failures = 0;
  // Threads that stopped early, with why (a failed load insert, a full
  // acknowledgement window, a database unreachable for
  // ClientOptions::unavailable_stop_ns).
  std::vector<std::string> thread_errors;
  // True if the run stopped at maxexecutiontime before finishing its
  // operations.
  bool timed_out = false;

  double throughput() const {
    return runtime_ms > 0 ? 1000.0 * static_cast<double>(operations) /
                                static_cast<double>(runtime_ms)
                          : 0.0;
  }
  // No integrity failures and no thread stopped early.
  bool ok() const { return integrity_failures == 0 && thread_errors.empty(); }
};

// Operations each thread keeps in flight: spec.outstanding in the run phase
// of a driver that SupportsAsync(), else 1 (YCSB's synchronous loop; the
// load phase is always synchronous).
int OperationsInFlight(const WorkloadSpec& spec, bool load, const DB& db);

// What RunClient checks before it creates anything: the workload can be
// built from `spec` (CoreWorkload::CheckSpec) and threadcount is in
// [1, kMaxThreadCount]. InvalidArgument, naming the property, otherwise.
// Call it to refuse a configuration before announcing a run.
absl::Status CheckRunnable(const WorkloadSpec& spec);

// Whether `db` can run the run phase (`load` false) of `spec`. A driver that
// cannot scan (DB::SupportsScan) returns NOT_IMPLEMENTED for every SCAN,
// counted as failed, as in Java YCSB: with other operations in the mix that
// is OK, and `*warning` (if not null; cleared otherwise) says so, naming
// scanproportion and the driver (spec.db). A workload of scans only would
// fail every operation and still look like a success: InvalidArgument,
// naming both. The load phase only inserts: OK.
absl::Status CheckDriverCanRun(const WorkloadSpec& spec, bool load,
                               const DB& db, std::string* warning = nullptr);

// InvalidArgument, naming `exportfile`, if the report cannot be written to
// `path` (a missing or unwritable directory, a directory, a read-only
// file), so a run whose report would be lost never starts. Leaves an
// existing file as it is and removes a file it created; an existing FIFO or
// device is not opened (that would consume its reader). Empty `path`
// (stdout): OK.
absl::Status CheckExportFile(const std::string& path);

// Runs one phase. `props` is handed to the driver factory. Errors: those of
// CheckRunnable and CheckDriverCanRun (InvalidArgument), a driver could not
// be created or initialized (its status, prefixed with the thread). Failed
// operations are not errors: they are counted in the result.
absl::StatusOr<RunResult> RunClient(const WorkloadSpec& spec,
                                    const Properties& props,
                                    const ClientOptions& options);

// Writes the [OVERALL] lines and every operation's measurements, with
// spec.percentiles, in Java YCSB's text-exporter format.
void ExportReport(const RunResult& result, const WorkloadSpec& spec,
                  std::ostream& out);

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_CLIENT_H_
