// Copyright 2026 The rfrpc Authors.
//
// The R/F selector (paper §3.2, Eq. 2): given a calibrated Profile and the
// application's result sizes, evaluate
//
//   T(R, F) = Σ_i T_i,  T_i = I(R, F) if F >= S_i, else I(R, F) / 2
//
// for every R in [1, N] and every candidate F in [L, H], and pick the best.
// Results come as a histogram (size -> count), so one selection costs
// O(candidate F * N * buckets). Scores are reported per result (T / M, the
// predicted calls/s), which has the same argmax as the paper's sum.
// Ties go to the smaller F, then to the smaller R.
//
//   SizeHistogram h;
//   h.Add(56, 990);
//   h.Add(4016, 10);
//   Selection s = Select(profile, h, /*server_time_ns=*/0);
//   channel->SetFetchParams(s.retries, s.fetch_size);
//
// Thread safety: free functions over const inputs; SizeHistogram is a value
// type (not synchronized).

#ifndef RFRPC_RPC_TUNER_SELECTOR_H_
#define RFRPC_RPC_TUNER_SELECTOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rpc/tuner/profile.h"

namespace rfrpc {
namespace tuner {

// Result size (header + payload bytes: what F must cover) -> count. A bucket
// stands for results of at most its size.
class SizeHistogram {
 public:
  void Add(uint32_t size, uint64_t count = 1) {
    if (count == 0) return;
    buckets_[size] += count;
    total_ += count;
  }
  const std::map<uint32_t, uint64_t>& buckets() const { return buckets_; }
  uint64_t total() const { return total_; }
  bool empty() const { return total_ == 0; }

  // "32,32,4000" or one size per line/space ("32 32\n4000"); "size:count"
  // entries are accepted too. INVALID_ARGUMENT on anything else.
  static absl::StatusOr<SizeHistogram> ParseList(absl::string_view text);

 private:
  std::map<uint32_t, uint64_t> buckets_;
  uint64_t total_ = 0;
};

struct Candidate {
  int retries = 0;
  uint32_t fetch_size = 0;
  double ops_per_sec = 0;     // I(R, F) from the profile.
  double score = 0;           // T / M: predicted calls/s for this workload.
  double reads_per_call = 0;  // Predicted READs per call (1 or 2 each).
};

struct Selection {
  int retries = 0;
  uint32_t fetch_size = 0;
  double score = 0;
  double reads_per_call = 0;
  double server_time_ns = 0;  // The P the scores were evaluated at.
  // Every candidate evaluated, F ascending, then R ascending.
  std::vector<Candidate> table;
};

// Scores one (R, F) (which need not be a candidate) for `sizes`.
// REQUIRES: !sizes.empty().
Candidate Score(const Profile& profile, const SizeHistogram& sizes,
                int retries, uint32_t fetch_size, double server_time_ns);

// What `rfrpc_tune select` and tuner_bench pass as Select's tie_tolerance
// (their --tie_tolerance flag). OnlineTuner passes 0: it has its own
// hysteresis against small gains.
inline constexpr double kCliTieTolerance = 0.03;

// Evaluates every candidate and picks the best. Candidates scoring within
// `tie_tolerance` (a fraction) of the best score are ties, and a tie goes to
// the smaller F, then the smaller R. The profile's I(R, F) are measurements:
// a difference of a few percent between neighbouring points can be noise,
// and on a flat curve a zero tolerance may pick an F of several KiB for
// 64 B results, which costs a real NIC bandwidth for nothing.
// INVALID_ARGUMENT if `sizes` is empty or `tie_tolerance` is outside [0, 1).
absl::StatusOr<Selection> Select(const Profile& profile,
                                 const SizeHistogram& sizes,
                                 double server_time_ns,
                                 double tie_tolerance = 0);

// A human-readable summary: the best few candidates per F and the choice.
std::string FormatSelection(const Selection& s, int max_rows);

}  // namespace tuner
}  // namespace rfrpc

#endif  // RFRPC_RPC_TUNER_SELECTOR_H_
