// Copyright 2026 The rfrpc Authors.
//
// The R/F tuner's calibrated profile: a validated, read-only view of a
// TunerProfile (profile.proto) with the lookups the selector needs.
//
// A profile records, for one provider on one host, the ops/s-vs-READ-size
// curve (from which L and H were chosen), rf vs server-reply throughput over
// the server processing time P (from which N was chosen), and the measured
// I(R, F) table. The candidate fetch sizes are
//
//   { L } ∪ { k * fetch_step : L < k * fetch_step < H } ∪ { H }
//
// and I(R, F) at a candidate is interpolated linearly (in F, then in P)
// between measured points, clamped at the ends.
//
//   RFRPC_ASSIGN_OR_RETURN(Profile p, Profile::Load("profile.txt", "shm"));
//   double ops = p.Throughput(/*retries=*/3, /*fetch_size=*/512, /*P ns=*/0);
//
// Errors: text that does not parse or is semantically broken (L > H, a
// missing table row, ...) is INVALID_ARGUMENT; a profile of another
// format_version, or one measured on a provider other than the one asked
// for, is FAILED_PRECONDITION. Unreadable files are NOT_FOUND / the OS error.
//
// Thread safety: a Profile is immutable after creation; const methods are
// safe from any thread. Copyable.

#ifndef RFRPC_RPC_TUNER_PROFILE_H_
#define RFRPC_RPC_TUNER_PROFILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpc/tuner/profile.pb.h"

namespace rfrpc {
namespace tuner {

inline constexpr uint32_t kProfileFormatVersion = 1;
// No F below this: the 16-byte response header plus a minimal payload.
inline constexpr uint32_t kMinFetchSize = 32;
// At most this many candidate fetch sizes: a profile whose L, H and
// fetch_step give more is INVALID_ARGUMENT (found by fuzzing: L=32,
// H=4e9, step 1 made Load allocate 16 GB). 64 Ki candidates still cover
// H = 1 MiB at a 16-byte step; calibrated profiles have ~100.
inline constexpr uint64_t kMaxCandidateFetchSizes = 64 * 1024;

class Profile {
 public:
  // Validates `proto`. `expected_provider` "" accepts any provider;
  // otherwise a profile made on another provider is FAILED_PRECONDITION.
  static absl::StatusOr<Profile> FromProto(TunerProfile proto,
                                           absl::string_view expected_provider);
  // Parses protobuf text format, then FromProto.
  static absl::StatusOr<Profile> Parse(absl::string_view text,
                                       absl::string_view expected_provider);
  // Reads `path`, then Parse.
  static absl::StatusOr<Profile> Load(const std::string& path,
                                      absl::string_view expected_provider);

  // Text format, as Parse reads it.
  std::string ToText() const;
  // Writes ToText() to `path` (via a temporary file and rename).
  absl::Status Save(const std::string& path) const;

  const TunerProfile& proto() const { return proto_; }
  const std::string& provider() const { return proto_.provider(); }
  uint32_t low_size() const { return proto_.low_size(); }    // L.
  uint32_t high_size() const { return proto_.high_size(); }  // H.
  int max_retries() const { return static_cast<int>(proto_.max_retries()); }
  // Ascending; first L, last H.
  const std::vector<uint32_t>& candidate_fetch_sizes() const {
    return candidates_;
  }

  // I(R, F) at server processing time `server_time_ns`, calls/s.
  // `retries` is clamped to [1, max_retries()].
  double Throughput(int retries, uint32_t fetch_size,
                    double server_time_ns) const;

 private:
  struct Table {
    double server_time_ns = 0;
    // by_retries[r - 1]: (fetch_size, ops/s) ascending in fetch_size.
    std::vector<std::vector<std::pair<uint32_t, double>>> by_retries;
  };

  Profile() = default;
  double TableThroughput(const Table& t, int retries, uint32_t f) const;

  TunerProfile proto_;
  std::vector<uint32_t> candidates_;
  std::vector<Table> tables_;  // Ascending in server_time_ns.
};

// The candidate grid for L, H and step (see above). Exposed for tools.
std::vector<uint32_t> CandidateFetchSizes(uint32_t low, uint32_t high,
                                          uint32_t step);

}  // namespace tuner
}  // namespace rfrpc

#endif  // RFRPC_RPC_TUNER_PROFILE_H_
