// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/selector.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace rfrpc {
namespace tuner {
namespace {

// Fraction of results that F covers in one READ.
double CoveredShare(const SizeHistogram& sizes, uint32_t f) {
  uint64_t covered = 0;
  for (const auto& [size, count] : sizes.buckets()) {
    if (size > f) break;
    covered += count;
  }
  return static_cast<double>(covered) / sizes.total();
}

Candidate ScoreWithShare(const Profile& profile, double share, int retries,
                         uint32_t f, double server_time_ns) {
  Candidate c;
  c.retries = retries;
  c.fetch_size = f;
  c.ops_per_sec = profile.Throughput(retries, f, server_time_ns);
  c.score = c.ops_per_sec * (share + (1 - share) / 2);
  c.reads_per_call = share + 2 * (1 - share);
  return c;
}

}  // namespace

absl::StatusOr<SizeHistogram> SizeHistogram::ParseList(absl::string_view text) {
  SizeHistogram h;
  for (absl::string_view tok :
       absl::StrSplit(text, absl::ByAnyChar(", \t\r\n"), absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(tok, ':');
    uint32_t size = 0;
    uint64_t count = 1;
    if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &size) ||
        (parts.size() == 2 && !absl::SimpleAtoi(parts[1], &count))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad size entry \"", tok, "\" (want SIZE or SIZE:COUNT)"));
    }
    h.Add(size, count);
  }
  return h;
}

Candidate Score(const Profile& profile, const SizeHistogram& sizes,
                int retries, uint32_t fetch_size, double server_time_ns) {
  return ScoreWithShare(profile, CoveredShare(sizes, fetch_size), retries,
                        fetch_size, server_time_ns);
}

absl::StatusOr<Selection> Select(const Profile& profile,
                                 const SizeHistogram& sizes,
                                 double server_time_ns, double tie_tolerance) {
  if (sizes.empty()) {
    return absl::InvalidArgumentError("no result sizes to select for");
  }
  if (!(tie_tolerance >= 0 && tie_tolerance < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tie tolerance ", tie_tolerance, " is outside [0, 1)"));
  }
  Selection s;
  s.server_time_ns = server_time_ns;
  const std::vector<uint32_t>& fs = profile.candidate_fetch_sizes();
  s.table.reserve(fs.size() * profile.max_retries());
  const Candidate* best = nullptr;
  for (uint32_t f : fs) {
    const double share = CoveredShare(sizes, f);
    for (int r = 1; r <= profile.max_retries(); ++r) {
      s.table.push_back(ScoreWithShare(profile, share, r, f, server_time_ns));
    }
  }
  // The first candidate (smallest F, then smallest R) within the tolerance
  // of the best score; rounding never breaks a tie.
  double top = 0;
  for (const Candidate& c : s.table) top = std::max(top, c.score);
  const double bar = top * (1 - tie_tolerance) * (1 - 1e-9);
  for (const Candidate& c : s.table) {
    if (c.score >= bar) {
      best = &c;
      break;
    }
  }
  s.retries = best->retries;
  s.fetch_size = best->fetch_size;
  s.score = best->score;
  s.reads_per_call = best->reads_per_call;
  return s;
}

std::string FormatSelection(const Selection& s, int max_rows) {
  std::string out = absl::StrFormat(
      "%6s %4s %14s %14s %10s\n", "F", "R", "I(R,F) ops/s", "T/M ops/s",
      "reads/call");
  // Rank F values by their best score; print the top max_rows of them.
  std::vector<const Candidate*> best_per_f;
  for (const Candidate& c : s.table) {
    if (best_per_f.empty() ||
        best_per_f.back()->fetch_size != c.fetch_size) {
      best_per_f.push_back(&c);
    } else if (c.score > best_per_f.back()->score * (1 + 1e-9)) {
      best_per_f.back() = &c;
    }
  }
  std::stable_sort(best_per_f.begin(), best_per_f.end(),
                   [](const Candidate* a, const Candidate* b) {
                     return a->score > b->score;
                   });
  const int rows = std::min<int>(max_rows, best_per_f.size());
  for (int i = 0; i < rows; ++i) {
    const Candidate& c = *best_per_f[i];
    absl::StrAppendFormat(&out, "%6u %4d %14.0f %14.0f %10.3f%s\n",
                          c.fetch_size, c.retries, c.ops_per_sec, c.score,
                          c.reads_per_call,
                          c.fetch_size == s.fetch_size && c.retries == s.retries
                              ? "  <- chosen"
                              : "");
  }
  absl::StrAppendFormat(
      &out,
      "(%zu candidates: %zu fetch sizes x R in [1, N]; best R per F shown, "
      "top %d)\nchosen: R=%d F=%u predicted %.0f calls/s, %.3f READs/call "
      "at P=%.0f ns\n",
      s.table.size(), best_per_f.size(), rows, s.retries, s.fetch_size,
      s.score, s.reads_per_call, s.server_time_ns);
  return out;
}

}  // namespace tuner
}  // namespace rfrpc
