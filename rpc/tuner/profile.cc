// Copyright 2026 The rfrpc Authors.

#include "rpc/tuner/profile.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace rfrpc {
namespace tuner {
namespace {

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrCat("line ", line + 1, ":", column + 1, ": ",
                                   message));
  }
  std::string Joined() const { return absl::StrJoin(errors_, "; "); }

 private:
  std::vector<std::string> errors_;
};

// Linear interpolation over points ascending in x, clamped at the ends.
double Interpolate(const std::vector<std::pair<uint32_t, double>>& pts,
                   double x) {
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  auto hi = std::lower_bound(
      pts.begin(), pts.end(), x,
      [](const std::pair<uint32_t, double>& p, double v) { return p.first < v; });
  auto lo = hi - 1;
  const double w = (x - lo->first) / static_cast<double>(hi->first - lo->first);
  return lo->second + w * (hi->second - lo->second);
}

}  // namespace

std::vector<uint32_t> CandidateFetchSizes(uint32_t low, uint32_t high,
                                          uint32_t step) {
  std::vector<uint32_t> out;
  if (low == 0 || high < low || step == 0) return out;
  out.push_back(low);
  for (uint64_t f = (uint64_t{low} / step + 1) * step; f < high; f += step) {
    out.push_back(static_cast<uint32_t>(f));
  }
  if (high != low) out.push_back(high);
  return out;
}

absl::StatusOr<Profile> Profile::FromProto(TunerProfile proto,
                                           absl::string_view expected_provider) {
  if (proto.format_version() != kProfileFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "profile format_version is ", proto.format_version(),
        ", this build reads version ", kProfileFormatVersion,
        "; re-run `rfrpc_tune calibrate`"));
  }
  if (proto.provider().empty()) {
    return absl::InvalidArgumentError("profile names no provider");
  }
  if (!expected_provider.empty() && proto.provider() != expected_provider) {
    return absl::FailedPreconditionError(absl::StrCat(
        "profile was calibrated on provider \"", proto.provider(),
        "\" (host \"", proto.host(), "\"), not \"", expected_provider,
        "\"; calibrate on this provider"));
  }
  const uint32_t low = proto.low_size(), high = proto.high_size();
  if (low < kMinFetchSize || high < low) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile has L=", low, " H=", high, " (need ", kMinFetchSize,
        " <= L <= H)"));
  }
  if (proto.max_retries() < 1 || proto.max_retries() > 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile has N=", proto.max_retries(), " (need 1 <= N <= 1024)"));
  }
  if (proto.fetch_step() == 0) {
    return absl::InvalidArgumentError("profile has fetch_step 0");
  }
  if ((uint64_t{high} - low) / proto.fetch_step() + 2 >
      kMaxCandidateFetchSizes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile has L=", low, " H=", high, " fetch_step ", proto.fetch_step(),
        ": more than ", kMaxCandidateFetchSizes, " candidate fetch sizes"));
  }
  if (proto.throughput_size() == 0) {
    return absl::InvalidArgumentError("profile has no I(R,F) table");
  }
  Profile p;
  p.candidates_ = CandidateFetchSizes(low, high, proto.fetch_step());
  const int n = static_cast<int>(proto.max_retries());
  std::set<uint32_t> times;
  for (const ThroughputTable& t : proto.throughput()) {
    if (!times.insert(t.server_time_ns()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "two I(R,F) tables for server_time_ns ", t.server_time_ns()));
    }
    Table table;
    table.server_time_ns = t.server_time_ns();
    std::vector<std::map<uint32_t, double>> rows(n);
    for (const ThroughputPoint& pt : t.points()) {
      if (pt.retries() < 1 || pt.retries() > proto.max_retries()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "I(R,F) point with R=", pt.retries(), " outside [1, N=", n, "]"));
      }
      // Infinite ops (a measurement divided by ~0) would win every choice.
      if (pt.fetch_size() < kMinFetchSize || !(pt.ops_per_sec() > 0) ||
          !std::isfinite(pt.ops_per_sec())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "I(R,F) point R=", pt.retries(), " F=", pt.fetch_size(),
            " has ops_per_sec ", pt.ops_per_sec(),
            " (need F >= ", kMinFetchSize, " and finite ops > 0)"));
      }
      if (!rows[pt.retries() - 1].emplace(pt.fetch_size(), pt.ops_per_sec())
               .second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "duplicate I(R,F) point R=", pt.retries(), " F=", pt.fetch_size()));
      }
    }
    for (int r = 1; r <= n; ++r) {
      if (rows[r - 1].empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "I(R,F) table at server_time_ns ", t.server_time_ns(),
            " has no point for R=", r));
      }
      table.by_retries.emplace_back(rows[r - 1].begin(), rows[r - 1].end());
    }
    p.tables_.push_back(std::move(table));
  }
  std::sort(p.tables_.begin(), p.tables_.end(),
            [](const Table& a, const Table& b) {
              return a.server_time_ns < b.server_time_ns;
            });
  p.proto_ = std::move(proto);
  return p;
}

absl::StatusOr<Profile> Profile::Parse(absl::string_view text,
                                       absl::string_view expected_provider) {
  TunerProfile proto;
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &proto)) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile does not parse: ", errors.Joined()));
  }
  return FromProto(std::move(proto), expected_provider);
}

absl::StatusOr<Profile> Profile::Load(const std::string& path,
                                      absl::string_view expected_provider) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open profile ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile ", path, " is a directory"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) {
    // Else it reads as a profile of format_version 0.
    return absl::InvalidArgumentError(absl::StrCat(
        "profile ", path, " is empty; write one with `rfrpc_tune calibrate`"));
  }
  absl::StatusOr<Profile> p = Parse(ss.str(), expected_provider);
  if (!p.ok()) {
    return absl::Status(p.status().code(),
                        absl::StrCat(path, ": ", p.status().message()));
  }
  return p;
}

std::string Profile::ToText() const {
  std::string out;
  google::protobuf::TextFormat::PrintToString(proto_, &out);
  return absl::StrCat(
      "# rfrpc R/F tuner profile (docs/tuner.md). protobuf text format,\n"
      "# message rfrpc.tuner.TunerProfile (rpc/tuner/profile.proto).\n",
      out);
}

absl::Status Profile::Save(const std::string& path) const {
  const std::string tmp = absl::StrCat(path, ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
    }
    out << ToText();
    out.flush();
    if (!out) {
      return absl::DataLossError(absl::StrCat("short write to ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());  // Nothing of a failed save stays behind.
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot rename ", tmp, " to ", path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

double Profile::TableThroughput(const Table& t, int retries,
                                uint32_t f) const {
  return Interpolate(t.by_retries[retries - 1], f);
}

double Profile::Throughput(int retries, uint32_t fetch_size,
                           double server_time_ns) const {
  retries = std::max(1, std::min(retries, max_retries()));
  if (server_time_ns <= tables_.front().server_time_ns) {
    return TableThroughput(tables_.front(), retries, fetch_size);
  }
  if (server_time_ns >= tables_.back().server_time_ns) {
    return TableThroughput(tables_.back(), retries, fetch_size);
  }
  size_t i = 1;
  while (tables_[i].server_time_ns < server_time_ns) ++i;
  const Table& lo = tables_[i - 1];
  const Table& hi = tables_[i];
  const double w = (server_time_ns - lo.server_time_ns) /
                   (hi.server_time_ns - lo.server_time_ns);
  return (1 - w) * TableThroughput(lo, retries, fetch_size) +
         w * TableThroughput(hi, retries, fetch_size);
}

}  // namespace tuner
}  // namespace rfrpc
