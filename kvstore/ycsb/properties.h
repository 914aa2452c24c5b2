// Copyright 2026 The rfrpc Authors.
//
// YCSB configuration: Java-.properties files (`-P file`), `-p key=value`
// overrides, and the typed core-workload settings (`WorkloadSpec`) read from
// them.
//
// Later sources override earlier ones, exactly as in Java YCSB: files in the
// order given, then `-p` pairs in the order given. Each value remembers where
// it came from ("workloads/workloada:7", "-p"), so a malformed value is
// reported with its file and line:
//
//   workloada:7: fieldcount: expected integer, got "x"
//
// Example:
//
//   Properties props;
//   RFRPC_RETURN_IF_ERROR(props.LoadFile("kvstore/workloads/workloada"));
//   RFRPC_RETURN_IF_ERROR(props.SetFromArgument("recordcount=5000"));
//   std::vector<std::string> warnings;
//   RFRPC_ASSIGN_OR_RETURN(WorkloadSpec spec,
//                          ParseWorkloadSpec(props, {"basic"}, &warnings));
//   for (const auto& w : warnings) std::cerr << "warning: " << w << "\n";
//
// Thread-safety: Properties and WorkloadSpec are plain values. Const methods
// may be called concurrently; mutation needs external synchronization.

#ifndef RFRPC_KVSTORE_YCSB_PROPERTIES_H_
#define RFRPC_KVSTORE_YCSB_PROPERTIES_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rfrpc {
namespace ycsb {

// An ordered key -> value map with the origin of each value.
class Properties {
 public:
  struct Entry {
    std::string value;
    // Where the value was set: "path:line" for files, "-p" for the command
    // line, or whatever `origin` Set() was given.
    std::string origin;
  };

  // Reads `path` as a Java .properties file and merges it over the current
  // contents. Returns NotFound if the file cannot be opened, InvalidArgument
  // ("path:line: ...") for a malformed line (a bad \u escape).
  absl::Status LoadFile(const std::string& path);

  // Parses `text` in .properties syntax and merges it over the current
  // contents; `source_name` names it in origins ("source_name:line").
  //
  // Syntax (java.util.Properties.load): lines whose first non-blank character
  // is '#' or '!' are comments; a key ends at the first unescaped '=', ':' or
  // blank, and one '='/':' plus the blanks around it separate it from the
  // value; a line ending in an odd number of backslashes continues on the next
  // line; escapes \t \n \r \f \uXXXX are decoded and '\x' means 'x'.
  absl::Status LoadString(absl::string_view text,
                          absl::string_view source_name);

  // Parses one `-p` argument, "key=value". InvalidArgument if there is no '='
  // or the key is empty.
  absl::Status SetFromArgument(absl::string_view key_value);

  // Sets `key` to `value`, recording `origin`.
  void Set(absl::string_view key, absl::string_view value,
           absl::string_view origin = "code");

  // Returns the value of `key`, or nullopt if unset.
  std::optional<std::string> Get(absl::string_view key) const;
  std::string GetOr(absl::string_view key, absl::string_view fallback) const;
  // Returns the entry for `key`, or nullptr if unset. The pointer is valid
  // until the next mutation.
  const Entry* Find(absl::string_view key) const;
  bool Contains(absl::string_view key) const { return Find(key) != nullptr; }

  const std::map<std::string, Entry, std::less<>>& entries() const {
    return entries_;
  }

 private:
  std::map<std::string, Entry, std::less<>> entries_;
};

// Upper bounds of properties whose larger values are typos, not workloads:
// each client thread builds its own driver before any starts (a huge
// threadcount exhausts memory), and keys are built in fixed buffers.
inline constexpr int64_t kMaxThreadCount = 4096;
inline constexpr int64_t kMaxKeyLength = 1024;
inline constexpr int64_t kMaxZeroPadding = 64;
// Seconds (about 11.6 days): more is a typo, and in nanoseconds stays far
// from overflowing.
inline constexpr int64_t kMaxUnavailableStop = 1'000'000;

// The smallest exponential.percentile. NextKeynum draws until a key falls
// in the records loaded, about 100 / percentile draws per key: below 1 the
// generator, not the database, sets the pace, and near 0 (gamma rounds to
// 0) it never returns.
inline constexpr double kMinExponentialPercentile = 1.0;

enum class Distribution {
  kConstant,
  kUniform,
  kZipfian,
  kLatest,
  kHotspot,
  kSequential,
  kExponential,
};

absl::string_view DistributionName(Distribution d);

// INVALID_ARGUMENT naming the first property of `props` under `prefix`
// ("redis.") that is not in `known`: a driver's typo ("redis.prot") is an
// error, as it is for jakiro.*, not a setting silently left at its default.
absl::Status CheckDriverProperties(const Properties& props,
                                   absl::string_view prefix,
                                   absl::Span<const absl::string_view> known);

// The core-workload properties, typed. Field names follow the property names;
// defaults are Java YCSB's (CoreWorkload and Client).
struct WorkloadSpec {
  // Default: "usertable". Property `table`.
  std::string table = "usertable";
  // Number of records loaded; the run phase reads keys below it.
  // Default: 0. Property `recordcount`.
  int64_t recordcount = 0;
  // Operations in the run phase, over all threads; 0 means no limit (stop on
  // maxexecutiontime). Default: 0. Property `operationcount`.
  int64_t operationcount = 0;
  // First record number this client loads/reads. Default: 0.
  int64_t insertstart = 0;
  // Records this client loads, starting at insertstart.
  // Default: recordcount - insertstart.
  int64_t insertcount = 0;
  // Default: 10.
  int64_t fieldcount = 10;
  // Bytes per field value (maximum for uniform/zipfian lengths). Default: 100.
  int64_t fieldlength = 100;
  // Smallest field length for uniform/zipfian lengths. Default: 1.
  int64_t minfieldlength = 1;
  // constant, uniform or zipfian. Default: constant.
  Distribution fieldlengthdistribution = Distribution::kConstant;
  // Field names are fieldnameprefix + index. Default: "field".
  std::string fieldnameprefix = "field";
  // Default: true.
  bool readallfields = true;
  // Default: false.
  bool writeallfields = false;
  // Operation mix. Defaults: 0.95, 0.05, 0, 0, 0.
  double readproportion = 0.95;
  double updateproportion = 0.05;
  double insertproportion = 0.0;
  double scanproportion = 0.0;
  double readmodifywriteproportion = 0.0;
  // uniform, zipfian, latest, hotspot, sequential or exponential.
  // Default: uniform.
  Distribution requestdistribution = Distribution::kUniform;
  // Zipfian skew. Only 0.99 uses Java's precomputed zeta over 10^16 items;
  // see generators.h. Default: 0.99.
  double zipfianconstant = 0.99;
  // Defaults: 0.2, 0.8.
  double hotspotdatafraction = 0.2;
  double hotspotopnfraction = 0.8;
  // Exponential request distribution: exponential.percentile percent of
  // the operations go to the newest exponential.frac of the records. In
  // [kMinExponentialPercentile, 100) and (0, 1]. Defaults: 95, 0.8571428571.
  double exponential_percentile = 95.0;
  double exponential_frac = 0.8571428571;
  // Scan lengths, inclusive. Defaults: 1, 1000, uniform (or zipfian).
  int64_t minscanlength = 1;
  int64_t maxscanlength = 1000;
  Distribution scanlengthdistribution = Distribution::kUniform;
  // true: keys are "user" + FNV-64(n); false ("ordered"): "user" + n.
  // Default: true ("hashed").
  bool hashed_inserts = true;
  // Minimum digits after "user" (zero-padded). At most kMaxZeroPadding.
  // Default: 1.
  int64_t zeropadding = 1;
  // Extension: if > 0, every key is exactly this many bytes: "user" followed
  // by the number zero-padded, or by its last keylength-4 digits if longer.
  // Must be 0 or in [5, kMaxKeyLength]. Default: 0 (YCSB keys as they are).
  int64_t keylength = 0;
  // Seconds after which the run stops; 0 means none. Default: 0.
  int64_t maxexecutiontime = 0;
  // Extension: a thread whose every operation for this many seconds
  // returned SERVICE_UNAVAILABLE stops, and the run fails: its database is
  // unreachable. 0 means never (e.g. across a planned server restart).
  // Default: 3.
  int64_t unavailablestop = 3;
  // Values derived from key and field; reads are verified. Requires a constant
  // field length. Default: false.
  bool dataintegrity = false;
  // Client threads, in [1, kMaxThreadCount]. Default: 1.
  int64_t threadcount = 1;
  // Extension: run-phase operations each client thread keeps in flight
  // through the driver's *Async methods (db.h); 1 is YCSB's synchronous
  // loop. Drivers without async support complete each call before the next
  // is issued, whatever this says. In [1, 4096]. Default: 1.
  int64_t outstanding = 1;
  // Target ops/s over all threads; 0 means unthrottled. Default: 0.
  double target = 0.0;
  // Insert retries in the load phase and their mean interval (seconds).
  // Defaults: 0, 3.
  int64_t insertion_retry_limit = 0;
  int64_t insertion_retry_interval = 3;
  // Percentiles exported per operation. Default: {95, 99, 99.9}.
  std::vector<double> percentiles = {95.0, 99.0, 99.9};
  // Seconds between status lines (with -s). Default: 1.
  int64_t status_interval = 1;
  // Extension: seed for every thread's random generator (thread i uses
  // seed + i); 0 picks a random seed. Default: 0.
  uint64_t seed = 0;
  // Prefix of the status lines. Default: "".
  std::string label;
  // Driver name (`db` property; -db on the command line). Default: "basic".
  std::string db = "basic";
  // Write the final report here instead of stdout. Default: "" (stdout).
  std::string exportfile;
};

// Reads the WorkloadSpec from `props`.
//
// Properties named `<driver>.<anything>` for a driver in `driver_names` belong
// to that driver and are not checked here. Any other property that is not a
// known YCSB property appends a warning to `*warnings` (which may be null), as
// do known ones this client accepts but ignores (measurementtype=timeseries).
//
// Errors (InvalidArgument, prefixed with the value's origin): a value that is
// not a number/boolean/known name, a proportion outside [0, 1], an invalid
// combination (insertstart past recordcount, insertstart + insertcount >
// recordcount, dataintegrity without a constant field length, keylength in
// 1..4, minscanlength > maxscanlength, zero threads, no operation with a
// positive proportion), a value above its limit (threadcount, keylength,
// zeropadding) or outside its range (exponential.*). recordcount 0 is
// accepted here (it is the default); CoreWorkload::CheckSpec refuses it.
absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(
    const Properties& props, absl::Span<const std::string> driver_names,
    std::vector<std::string>* warnings);

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_PROPERTIES_H_
