// Copyright 2026 The rfrpc Authors.
//
// Fuzzes the tuner profile file: Profile::Parse (protobuf text format, then
// validation) and, for a profile that validates, every lookup the selector
// makes (candidate fetch sizes, Throughput at each candidate, retry counts
// and server times around the table's ends).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/string_view.h"
#include "rpc/tuner/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<rfrpc::tuner::Profile> p = rfrpc::tuner::Profile::Parse(text, "");
  if (!p.ok()) {
    const absl::StatusCode c = p.status().code();
    if (c != absl::StatusCode::kInvalidArgument &&
        c != absl::StatusCode::kFailedPrecondition) {
      abort();
    }
    return 0;
  }
  const auto& cands = p->candidate_fetch_sizes();
  if (cands.empty() || cands.front() != p->low_size() ||
      cands.back() != p->high_size()) {
    abort();
  }
  // Bound the work per input: a profile may legally name L=32, H=4G, step 1.
  const size_t stride = cands.size() / 64 + 1;
  const double times[] = {-1.0, 0.0, 500.0, 1e4, 1e9};
  for (size_t i = 0; i < cands.size(); i += stride) {
    for (int r : {0, 1, 2, p->max_retries(), p->max_retries() + 1}) {
      for (double t : times) {
        const double ops = p->Throughput(r, cands[i], t);
        (void)ops;
      }
    }
  }
  (void)p->ToText();
  return 0;
}
