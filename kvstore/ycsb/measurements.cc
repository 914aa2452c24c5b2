// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/measurements.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "absl/numeric/bits.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rfrpc {
namespace ycsb {
namespace {

constexpr int kSubBuckets = 1 << Histogram::kSubBucketBits;  // 128
constexpr uint64_t kLinearLimit = uint64_t{2} * kSubBuckets;  // 256

}  // namespace

int Histogram::BucketIndex(uint64_t value) {
  if (value < kLinearLimit) return static_cast<int>(value);
  const int exponent = 63 - absl::countl_zero(value);  // >= 8
  const int shift = exponent - kSubBucketBits;
  const int sub = static_cast<int>(value >> shift);  // [128, 256)
  return shift * kSubBuckets + sub;
}

uint64_t Histogram::BucketLowest(int index) {
  if (index < static_cast<int>(kLinearLimit)) return index;
  const int shift = index / kSubBuckets - 1;
  const uint64_t sub = static_cast<uint64_t>(index % kSubBuckets + kSubBuckets);
  return sub << shift;
}

uint64_t Histogram::BucketHighest(int index) {
  if (index < static_cast<int>(kLinearLimit)) return index;
  const int shift = index / kSubBuckets - 1;
  return BucketLowest(index) + ((uint64_t{1} << shift) - 1);
}

void Histogram::Record(int64_t value) {
  if (value < 0) value = 0;
  const int index = BucketIndex(static_cast<uint64_t>(value));
  if (index >= static_cast<int>(counts_.size())) {
    // Grow in whole octaves so a slowly rising maximum reallocates rarely.
    counts_.resize((index / kSubBuckets + 1) * kSubBuckets, 0);
  }
  ++counts_[index];
  if (count_ == 0 || value < min_) min_ = value;
  if (count_ == 0 || value > max_) max_ = value;
  ++count_;
  sum_ += value;
}

void Histogram::Merge(const Histogram& other) {
  if (other.count_ == 0) return;
  if (other.counts_.size() > counts_.size()) {
    counts_.resize(other.counts_.size(), 0);
  }
  for (size_t i = 0; i < other.counts_.size(); ++i) {
    counts_[i] += other.counts_[i];
  }
  if (count_ == 0 || other.min_ < min_) min_ = other.min_;
  if (count_ == 0 || other.max_ > max_) max_ = other.max_;
  count_ += other.count_;
  sum_ += other.sum_;
}

void Histogram::Clear() { *this = Histogram(); }

double Histogram::mean() const {
  return count_ == 0 ? 0.0 : static_cast<double>(sum_ / count_);
}

int64_t Histogram::ValueAtPercentile(double p) const {
  if (count_ == 0) return 0;
  if (p <= 0.0) return min_;
  if (p >= 100.0) return max_;
  // The rank of the value, 1-based; the small slack keeps p * count / 100
  // from rounding up past an exact integer (99.9% of 1000 is rank 999).
  const double r = p / 100.0 * static_cast<double>(count_);
  int64_t rank = static_cast<int64_t>(std::ceil(r - 1e-9 * std::max(1.0, r)));
  rank = std::clamp<int64_t>(rank, 1, count_);
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const uint64_t lo = BucketLowest(static_cast<int>(i));
      const uint64_t hi = BucketHighest(static_cast<int>(i));
      const int64_t mid = static_cast<int64_t>(lo + (hi - lo) / 2);
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

void OpStats::Merge(const OpStats& other) {
  latency_ns.Merge(other.latency_ns);
  for (const auto& [name, n] : other.returns) returns[name] += n;
}

void MergeSnapshot(const MeasurementSnapshot& from, MeasurementSnapshot* into) {
  for (const auto& [op, stats] : from) (*into)[op].Merge(stats);
}

Measurements::Op* Measurements::FindOp(absl::string_view op) {
  Op* found = nullptr;
  int i = 0;
  for (; i < kRecent && recent_[i] != nullptr; ++i) {
    if (recent_[i]->name == op) {
      found = recent_[i];
      break;
    }
  }
  if (found == nullptr) {
    std::unique_ptr<Op>& slot = ops_[op];
    if (slot == nullptr) {
      slot = std::make_unique<Op>();
      slot->name = std::string(op);
    }
    found = slot.get();
    i = kRecent - 1;  // Evicts the least recent.
  }
  for (; i > 0; --i) recent_[i] = recent_[i - 1];
  recent_[0] = found;
  return found;
}

void Measurements::CountReturn(Op* o, absl::string_view return_name) {
  if (o->last_return == nullptr || o->last_return->first != return_name) {
    o->last_return = &*o->total.returns.try_emplace(std::string(return_name), 0)
                           .first;
  }
  ++o->last_return->second;
}

void Measurements::Measure(absl::string_view op, int64_t latency_ns) {
  MutexLock lock(&mu_);
  Op* o = FindOp(op);
  o->total.latency_ns.Record(latency_ns);
  o->interval.latency_ns.Record(latency_ns);
}

void Measurements::ReportReturn(absl::string_view op,
                                absl::string_view return_name) {
  MutexLock lock(&mu_);
  CountReturn(FindOp(op), return_name);
}

void Measurements::Record(absl::string_view measured_op, int64_t latency_ns,
                          absl::string_view op,
                          absl::string_view return_name) {
  MutexLock lock(&mu_);
  Op* m = FindOp(measured_op);
  m->total.latency_ns.Record(latency_ns);
  m->interval.latency_ns.Record(latency_ns);
  CountReturn(measured_op == op ? m : FindOp(op), return_name);
}

void Measurements::TakeInterval(MeasurementSnapshot* into) {
  MutexLock lock(&mu_);
  for (auto& [op, o] : ops_) {
    (*into)[op].latency_ns.Merge(o->interval.latency_ns);
    o->interval.latency_ns.Clear();
  }
}

void Measurements::MergeTotalInto(MeasurementSnapshot* into) const {
  MutexLock lock(&mu_);
  for (const auto& [op, o] : ops_) (*into)[op].Merge(o->total);
}

std::string FormatJavaDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-tripping digits.
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  // buf is "[-]D[.DDD]e[+-]XX".
  std::string s(buf);
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s = s.substr(1);
  }
  const size_t e_pos = s.find('e');
  const int exponent = std::atoi(s.c_str() + e_pos + 1);
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i) {
    if (s[i] != '.') digits.push_back(s[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();

  const double magnitude = std::fabs(d);
  std::string out = sign;
  if (magnitude >= 1e-3 && magnitude < 1e7) {
    if (exponent >= 0) {
      const size_t int_len = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= int_len) {
        out += digits;
        out.append(int_len - digits.size(), '0');
        out += ".0";
      } else {
        out += digits.substr(0, int_len);
        out += ".";
        out += digits.substr(int_len);
      }
    } else {
      out += "0.";
      out.append(static_cast<size_t>(-exponent - 1), '0');
      out += digits;
    }
  } else {
    out += digits.substr(0, 1);
    out += ".";
    out += digits.size() > 1 ? digits.substr(1) : "0";
    out += "E";
    out += std::to_string(exponent);
  }
  return out;
}

std::string FormatTwoDecimals(double d) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", d);
  std::string s(buf);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

std::string PercentileLabel(double p) {
  if (p == std::floor(p) && p < 1e9) {
    const int64_t j = static_cast<int64_t>(p);
    static constexpr const char* kSuffixes[] = {"th", "st", "nd", "rd", "th",
                                                "th", "th", "th", "th", "th"};
    const int64_t mod100 = j % 100;
    if (mod100 >= 11 && mod100 <= 13) return absl::StrCat(j, "th");
    return absl::StrCat(j, kSuffixes[j % 10]);
  }
  return absl::StrCat(FormatJavaDouble(p), "th");
}

void TextExporter::Write(absl::string_view metric,
                         absl::string_view measurement, int64_t value) {
  *out_ << "[" << metric << "], " << measurement << ", " << value << "\n";
}

void TextExporter::Write(absl::string_view metric,
                         absl::string_view measurement, double value) {
  *out_ << "[" << metric << "], " << measurement << ", "
        << FormatJavaDouble(value) << "\n";
}

std::vector<std::string> ReportOrder(const MeasurementSnapshot& snapshot) {
  static constexpr absl::string_view kFirst[] = {
      "READ",   "UPDATE", "INSERT",  "SCAN", "READ-MODIFY-WRITE",
      "DELETE", "VERIFY", "CLEANUP",
  };
  std::vector<std::string> order;
  for (absl::string_view op : kFirst) {
    if (snapshot.count(std::string(op)) > 0) order.emplace_back(op);
  }
  for (const auto& [op, stats] : snapshot) {
    if (std::find(order.begin(), order.end(), op) == order.end()) {
      order.push_back(op);  // std::map iterates by name.
    }
  }
  return order;
}

void ExportMeasurements(const MeasurementSnapshot& snapshot,
                        const std::vector<double>& percentiles,
                        TextExporter* exporter) {
  for (const std::string& op : ReportOrder(snapshot)) {
    const OpStats& stats = snapshot.at(op);
    const Histogram& h = stats.latency_ns;
    exporter->Write(op, "Operations", h.count());
    exporter->Write(op, "AverageLatency(us)", h.mean() / 1000.0);
    exporter->Write(op, "MinLatency(us)", h.min() / 1000);
    exporter->Write(op, "MaxLatency(us)", h.max() / 1000);
    for (double p : percentiles) {
      exporter->Write(op, absl::StrCat(PercentileLabel(p),
                                       "PercentileLatency(us)"),
                      h.ValueAtPercentile(p) / 1000);
    }
    // OK first, then the failures by name.
    auto ok = stats.returns.find("OK");
    if (ok != stats.returns.end()) {
      exporter->Write(op, "Return=OK", ok->second);
    }
    for (const auto& [name, n] : stats.returns) {
      if (name != "OK") exporter->Write(op, absl::StrCat("Return=", name), n);
    }
  }
}

std::string IntervalSummary(const MeasurementSnapshot& interval) {
  std::vector<std::string> parts;
  for (const std::string& op : ReportOrder(interval)) {
    const Histogram& h = interval.at(op).latency_ns;
    if (h.count() == 0) continue;
    auto us = [](double ns) { return FormatTwoDecimals(ns / 1000.0); };
    parts.push_back(absl::StrCat(
        "[", op, ": Count=", h.count(), ", Max=", us(h.max()),
        ", Min=", us(h.min()), ", Avg=", us(h.mean()),
        ", 50=", us(h.ValueAtPercentile(50)),
        ", 90=", us(h.ValueAtPercentile(90)),
        ", 99=", us(h.ValueAtPercentile(99)),
        ", 99.9=", us(h.ValueAtPercentile(99.9)),
        ", 99.99=", us(h.ValueAtPercentile(99.99)), "]"));
  }
  return absl::StrJoin(parts, " ");
}

}  // namespace ycsb
}  // namespace rfrpc
