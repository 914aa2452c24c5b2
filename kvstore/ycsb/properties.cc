// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/properties.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/integer_text.h"
#include "base/status_macros.h"

namespace rfrpc {
namespace ycsb {
namespace {

// Workload files are a few hundred bytes; a megabyte is no workload.
constexpr size_t kMaxPropertyFileBytes = size_t{1} << 20;

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\f'; }

// One physical line of the input with its 1-based number.
struct NaturalLine {
  absl::string_view text;
  int number;
};

std::vector<NaturalLine> SplitNaturalLines(absl::string_view text) {
  std::vector<NaturalLine> lines;
  int number = 1;
  size_t start = 0;
  for (;;) {
    size_t i = text.find_first_of("\r\n", start);
    if (i == absl::string_view::npos) break;
    lines.push_back({text.substr(start, i - start), number++});
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < text.size()) {
    lines.push_back({text.substr(start), number});
  }
  return lines;
}

absl::string_view StripLeadingBlanks(absl::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsBlank(s[i])) ++i;
  return s.substr(i);
}

// True if `s` ends in an odd number of backslashes (a continuation).
bool EndsWithContinuation(absl::string_view s) {
  size_t n = 0;
  while (n < s.size() && s[s.size() - 1 - n] == '\\') ++n;
  return n % 2 == 1;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Decodes .properties escapes in `s`.
absl::StatusOr<std::string> Unescape(absl::string_view s) {
  if (s.find('\\') == absl::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 == s.size()) {
      if (c != '\\') out.push_back(c);
      continue;
    }
    char e = s[++i];
    switch (e) {
      case 't':
        out.push_back('\t');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'u': {
        if (s.size() - (i + 1) < 4) {
          return absl::InvalidArgumentError("malformed \\uXXXX escape");
        }
        uint32_t cp = 0;
        for (int k = 1; k <= 4; ++k) {
          char h = s[i + k];
          int digit;
          if (h >= '0' && h <= '9') {
            digit = h - '0';
          } else if (h >= 'a' && h <= 'f') {
            digit = h - 'a' + 10;
          } else if (h >= 'A' && h <= 'F') {
            digit = h - 'A' + 10;
          } else {
            return absl::InvalidArgumentError("malformed \\uXXXX escape");
          }
          cp = cp * 16 + digit;
        }
        i += 4;
        AppendUtf8(cp, &out);
        break;
      }
      default:
        out.push_back(e);
    }
  }
  return out;
}

// Splits a logical line into raw (still escaped) key and value.
std::pair<absl::string_view, absl::string_view> SplitKeyValue(
    absl::string_view line) {
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == '\\') {
      i += 2;
      continue;
    }
    if (c == '=' || c == ':' || IsBlank(c)) break;
    ++i;
  }
  if (i > line.size()) i = line.size();
  absl::string_view key = line.substr(0, i);
  size_t j = i;
  while (j < line.size() && IsBlank(line[j])) ++j;
  if (j < line.size() && (line[j] == '=' || line[j] == ':')) ++j;
  while (j < line.size() && IsBlank(line[j])) ++j;
  return {key, line.substr(j)};
}

}  // namespace

absl::Status Properties::LoadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot open property file \"", path, "\""));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    // A folder opens, and reads as nothing.
    return absl::InvalidArgumentError(
        absl::StrCat("property file \"", path, "\" is a folder"));
  }
  // Read at most one byte past the limit: /dev/zero or a FIFO that never
  // ends would otherwise be read until memory runs out.
  std::string text(kMaxPropertyFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxPropertyFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("property file \"", path, "\" is larger than ",
                     kMaxPropertyFileBytes, " bytes (1 MiB)"));
  }
  return LoadString(text, path);
}

absl::Status Properties::LoadString(absl::string_view text,
                                    absl::string_view source_name) {
  std::vector<NaturalLine> lines = SplitNaturalLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::string_view first = StripLeadingBlanks(lines[i].text);
    if (first.empty() || first[0] == '#' || first[0] == '!') continue;
    const int line_number = lines[i].number;
    // Most lines do not continue: read them in place.
    absl::string_view logical = first;
    std::string joined;
    if (EndsWithContinuation(first)) {
      joined = std::string(first);
      while (EndsWithContinuation(joined)) {
        joined.pop_back();
        if (i + 1 >= lines.size()) break;
        ++i;
        absl::StrAppend(&joined, StripLeadingBlanks(lines[i].text));
      }
      logical = joined;
    }
    auto [raw_key, raw_value] = SplitKeyValue(logical);
    std::string origin = absl::StrCat(source_name, ":", line_number);
    absl::StatusOr<std::string> key = Unescape(raw_key);
    absl::StatusOr<std::string> value = Unescape(raw_value);
    if (!key.ok() || !value.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          origin, ": ", (key.ok() ? value.status() : key.status()).message()));
    }
    Entry& e = entries_[*std::move(key)];
    e.value = *std::move(value);
    e.origin = std::move(origin);
  }
  return absl::OkStatus();
}

absl::Status Properties::SetFromArgument(absl::string_view key_value) {
  size_t eq = key_value.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "-p ", key_value, ": expected key=value"));
  }
  absl::string_view key = absl::StripAsciiWhitespace(key_value.substr(0, eq));
  if (key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("-p ", key_value, ": empty key"));
  }
  Set(key, key_value.substr(eq + 1), "-p");
  return absl::OkStatus();
}

void Properties::Set(absl::string_view key, absl::string_view value,
                     absl::string_view origin) {
  Entry& e = entries_[std::string(key)];
  e.value = std::string(value);
  e.origin = std::string(origin);
}

const Properties::Entry* Properties::Find(absl::string_view key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<std::string> Properties::Get(absl::string_view key) const {
  const Entry* e = Find(key);
  if (e == nullptr) return std::nullopt;
  return e->value;
}

std::string Properties::GetOr(absl::string_view key,
                              absl::string_view fallback) const {
  const Entry* e = Find(key);
  return e == nullptr ? std::string(fallback) : e->value;
}

absl::string_view DistributionName(Distribution d) {
  switch (d) {
    case Distribution::kConstant:
      return "constant";
    case Distribution::kUniform:
      return "uniform";
    case Distribution::kZipfian:
      return "zipfian";
    case Distribution::kLatest:
      return "latest";
    case Distribution::kHotspot:
      return "hotspot";
    case Distribution::kSequential:
      return "sequential";
    case Distribution::kExponential:
      return "exponential";
  }
  return "unknown";
}

namespace {

// Reads typed values out of a Properties, with errors naming the origin.
class SpecReader {
 public:
  explicit SpecReader(const Properties& props) : props_(props) {}

  // An integer in [0, INT64_MAX]; one past INT64_MAX is refused as too
  // large, with the limit in the message, not as "expected integer".
  absl::Status NonNegativeInt(absl::string_view key, int64_t* out) {
    return IntAtMost(key, std::numeric_limits<int64_t>::max(), out);
  }

  // An integer in [0, max], refused above `max` with the limit in the
  // message (also when it is past what an int64_t holds).
  absl::Status IntAtMost(absl::string_view key, int64_t max, int64_t* out) {
    const Properties::Entry* e = Lookup(key);
    if (e == nullptr) return absl::OkStatus();
    const absl::string_view v = absl::StripAsciiWhitespace(e->value);
    if (!absl::SimpleAtoi(v, out)) {
      if (!IsIntegerText(v)) return Error(*e, key, "integer");
      if (v[0] == '-') return Error(*e, key, "non-negative integer");
      return ComboError(key, absl::StrFormat("%s %s is above %d", key, v, max));
    }
    if (*out < 0) return Error(*e, key, "non-negative integer");
    if (*out <= max) return absl::OkStatus();
    return ComboError(key,
                      absl::StrFormat("%s %d is above %d", key, *out, max));
  }

  // Sets `*entry` (if not null) to the entry read, or nullptr if unset.
  absl::Status Double(absl::string_view key, double* out,
                      const Properties::Entry** entry = nullptr) {
    const Properties::Entry* e = Lookup(key);
    if (entry != nullptr) *entry = e;
    if (e == nullptr) return absl::OkStatus();
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(e->value), out) ||
        !std::isfinite(*out)) {
      return Error(*e, key, "number");
    }
    return absl::OkStatus();
  }

  absl::Status Fraction(absl::string_view key, double* out) {
    const Properties::Entry* e;
    RFRPC_RETURN_IF_ERROR(Double(key, out, &e));
    if (e != nullptr && (*out < 0.0 || *out > 1.0)) {
      return Error(*e, key, "number in [0, 1]");
    }
    return absl::OkStatus();
  }

  // Java's Boolean.parseBoolean treats anything but "true" as false, which
  // hides typos; this accepts true/false (any case) and rejects the rest.
  absl::Status Bool(absl::string_view key, bool* out) {
    const Properties::Entry* e = Lookup(key);
    if (e == nullptr) return absl::OkStatus();
    const absl::string_view v = absl::StripAsciiWhitespace(e->value);
    if (absl::EqualsIgnoreCase(v, "true")) {
      *out = true;
    } else if (absl::EqualsIgnoreCase(v, "false")) {
      *out = false;
    } else {
      return Error(*e, key, "true or false");
    }
    return absl::OkStatus();
  }

  absl::Status String(absl::string_view key, std::string* out) {
    const Properties::Entry* e = Lookup(key);
    if (e != nullptr) *out = std::string(absl::StripAsciiWhitespace(e->value));
    return absl::OkStatus();
  }

  absl::Status Choice(absl::string_view key,
                      std::initializer_list<Distribution> allowed,
                      Distribution* out) {
    const Properties::Entry* e = Lookup(key);
    if (e == nullptr) return absl::OkStatus();
    absl::string_view v = absl::StripAsciiWhitespace(e->value);
    for (Distribution d : allowed) {
      if (v == DistributionName(d)) {
        *out = d;
        return absl::OkStatus();
      }
    }
    std::vector<absl::string_view> names;
    for (Distribution d : allowed) names.push_back(DistributionName(d));
    return Error(*e, key, absl::StrJoin(names, ", "));
  }

  // Marks `key` as known without reading it.
  void Accept(absl::string_view key) { (void)Lookup(key); }

  // True if `e` (an entry of the Properties read) was looked up or accepted.
  bool IsKnown(const Properties::Entry& e) const {
    return known_.contains(&e);
  }

  // Returns the entry for `key` (nullptr if unset) and marks it known.
  const Properties::Entry* Lookup(absl::string_view key) {
    const Properties::Entry* e = props_.Find(key);
    if (e != nullptr) known_.insert(e);
    return e;
  }

  static absl::Status Error(const Properties::Entry& e, absl::string_view key,
                            absl::string_view expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s: expected %s, got \"%s\"", e.origin, key, expected,
        absl::CEscape(e.value)));
  }

  // An error about a combination, located at `key` if it is set.
  absl::Status ComboError(absl::string_view key, absl::string_view what) {
    const Properties::Entry* e = props_.Find(key);
    return absl::InvalidArgumentError(
        e == nullptr ? std::string(what) : absl::StrCat(e->origin, ": ", what));
  }

 private:
  const Properties& props_;
  // The entries of props_ that were read: remembering the (few) entries
  // found rather than every key asked for keeps a parse at one allocation
  // or none here; Properties does not move its entries while it is const.
  absl::flat_hash_set<const Properties::Entry*> known_;
};

constexpr absl::string_view kCoreWorkloadClasses[] = {
    "site.ycsb.workloads.CoreWorkload",
    "com.yahoo.ycsb.workloads.CoreWorkload",
};

constexpr absl::string_view kTextExporterClasses[] = {
    "site.ycsb.measurements.exporter.TextMeasurementsExporter",
    "com.yahoo.ycsb.measurements.exporter.TextMeasurementsExporter",
};

// Known properties this client reads elsewhere or accepts and ignores
// because they do not change what is measured here.
constexpr absl::string_view kAcceptedKeys[] = {
    // Read by the binary or by other layers.
    "dotransactions",
    // Java YCSB tuning that has no meaning for this client.
    "measurement.interval",
    "measurement.trackjvm",
    "measurement.histogram.verbose",
    "histogram.buckets",
    "hdrhistogram.fileoutput",
    "hdrhistogram.output.path",
    "reportlatencyforeacherror",
    "latencytrackederrors",
    "fieldlengthhistogram",
    "debug",
};

// exponential.percentile and exponential.frac, in the ranges that keep
// Exponential's gamma = -ln(1 - percentile / 100) / (recordcount * frac)
// positive and finite (0, 100 and frac 0 make it 0 or infinite; negative
// values make it negative: every key past the last record, NOT_FOUND) and
// NextKeynum's redraws few (percentile >= kMinExponentialPercentile).
absl::Status ReadExponential(SpecReader& r, WorkloadSpec* s) {
  const Properties::Entry* e;
  RFRPC_RETURN_IF_ERROR(
      r.Double("exponential.percentile", &s->exponential_percentile, &e));
  if (e != nullptr && (s->exponential_percentile < kMinExponentialPercentile ||
                       s->exponential_percentile >= 100.0)) {
    return SpecReader::Error(
        *e, "exponential.percentile",
        absl::StrFormat("number in [%g, 100)", kMinExponentialPercentile));
  }
  RFRPC_RETURN_IF_ERROR(r.Double("exponential.frac", &s->exponential_frac, &e));
  if (e != nullptr &&
      (s->exponential_frac <= 0.0 || s->exponential_frac > 1.0)) {
    return SpecReader::Error(*e, "exponential.frac", "number in (0, 1]");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckDriverProperties(const Properties& props,
                                   absl::string_view prefix,
                                   absl::Span<const absl::string_view> known) {
  for (const auto& [key, entry] : props.entries()) {
    if (!absl::StartsWith(key, prefix)) continue;
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    absl::string_view driver = prefix;
    driver.remove_suffix(1);  // The dot.
    return absl::InvalidArgumentError(absl::StrCat(
        entry.origin, ": unknown property \"", key, "\" of the ", driver,
        " driver (it has: ", absl::StrJoin(known, ", "), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(
    const Properties& props, absl::Span<const std::string> driver_names,
    std::vector<std::string>* warnings) {
  std::vector<std::string> local_warnings;
  if (warnings == nullptr) warnings = &local_warnings;
  WorkloadSpec s;
  SpecReader r(props);

  RFRPC_RETURN_IF_ERROR(r.String("table", &s.table));
  if (s.table.empty()) {
    return r.ComboError("table", "table: must not be empty");
  }
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("recordcount", &s.recordcount));
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("operationcount", &s.operationcount));
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("insertstart", &s.insertstart));
  // Checked first: the insertcount it would derive is negative, and the
  // user may never have set insertcount.
  if (s.insertstart > s.recordcount) {
    return r.ComboError("insertstart",
                        absl::StrFormat("insertstart (%d) is past recordcount "
                                        "(%d): no record left to load",
                                        s.insertstart, s.recordcount));
  }
  s.insertcount = s.recordcount - s.insertstart;
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("insertcount", &s.insertcount));
  // Subtracted, not added: insertcount may be near INT64_MAX.
  if (s.insertcount > s.recordcount - s.insertstart) {
    return r.ComboError(
        props.Contains("insertcount") ? "insertcount" : "insertstart",
        absl::StrFormat("insertstart (%d) + insertcount (%d) must not exceed "
                        "recordcount (%d)",
                        s.insertstart, s.insertcount, s.recordcount));
  }
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("fieldcount", &s.fieldcount));
  if (s.fieldcount < 1) {
    return r.ComboError("fieldcount", "fieldcount: must be at least 1");
  }
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("fieldlength", &s.fieldlength));
  // Every thread builds whole records in memory: a record past this is a
  // typo, not a workload (and would end in std::bad_alloc).
  constexpr int64_t kMaxRecordBytes = int64_t{1} << 30;
  if (s.fieldlength > kMaxRecordBytes / s.fieldcount) {
    return r.ComboError(
        props.Contains("fieldlength") ? "fieldlength" : "fieldcount",
        absl::StrFormat("fieldcount (%d) x fieldlength (%d) exceeds the "
                        "largest record, 1 GiB",
                        s.fieldcount, s.fieldlength));
  }
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("minfieldlength", &s.minfieldlength));
  RFRPC_RETURN_IF_ERROR(r.Choice(
      "fieldlengthdistribution",
      {Distribution::kConstant, Distribution::kUniform, Distribution::kZipfian},
      &s.fieldlengthdistribution));
  if (s.fieldlengthdistribution != Distribution::kConstant &&
      s.minfieldlength > s.fieldlength) {
    return r.ComboError("minfieldlength",
                        "minfieldlength must not exceed fieldlength");
  }
  RFRPC_RETURN_IF_ERROR(r.String("fieldnameprefix", &s.fieldnameprefix));
  RFRPC_RETURN_IF_ERROR(r.Bool("readallfields", &s.readallfields));
  RFRPC_RETURN_IF_ERROR(r.Bool("writeallfields", &s.writeallfields));

  RFRPC_RETURN_IF_ERROR(r.Fraction("readproportion", &s.readproportion));
  RFRPC_RETURN_IF_ERROR(r.Fraction("updateproportion", &s.updateproportion));
  RFRPC_RETURN_IF_ERROR(r.Fraction("insertproportion", &s.insertproportion));
  RFRPC_RETURN_IF_ERROR(r.Fraction("scanproportion", &s.scanproportion));
  RFRPC_RETURN_IF_ERROR(r.Fraction("readmodifywriteproportion",
                                   &s.readmodifywriteproportion));
  if (s.readproportion + s.updateproportion + s.insertproportion +
          s.scanproportion + s.readmodifywriteproportion <=
      0.0) {
    return absl::InvalidArgumentError(
        "all operation proportions are 0: nothing to run");
  }

  RFRPC_RETURN_IF_ERROR(r.Choice(
      "requestdistribution",
      {Distribution::kUniform, Distribution::kZipfian, Distribution::kLatest,
       Distribution::kHotspot, Distribution::kSequential,
       Distribution::kExponential},
      &s.requestdistribution));
  RFRPC_RETURN_IF_ERROR(r.Double("zipfianconstant", &s.zipfianconstant));
  if (props.Contains("zipfianconstant") &&
      (s.zipfianconstant <= 0.0 || s.zipfianconstant == 1.0)) {
    return SpecReader::Error(*props.Find("zipfianconstant"), "zipfianconstant",
                             "positive number other than 1");
  }
  RFRPC_RETURN_IF_ERROR(
      r.Fraction("hotspotdatafraction", &s.hotspotdatafraction));
  RFRPC_RETURN_IF_ERROR(r.Fraction("hotspotopnfraction", &s.hotspotopnfraction));
  RFRPC_RETURN_IF_ERROR(ReadExponential(r, &s));

  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("minscanlength", &s.minscanlength));
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("maxscanlength", &s.maxscanlength));
  if (s.minscanlength > s.maxscanlength) {
    return r.ComboError("minscanlength",
                        "minscanlength must not exceed maxscanlength");
  }
  RFRPC_RETURN_IF_ERROR(
      r.Choice("scanlengthdistribution",
               {Distribution::kUniform, Distribution::kZipfian},
               &s.scanlengthdistribution));

  if (const Properties::Entry* e = r.Lookup("insertorder")) {
    absl::string_view v = absl::StripAsciiWhitespace(e->value);
    if (v == "hashed") {
      s.hashed_inserts = true;
    } else if (v == "ordered") {
      s.hashed_inserts = false;
    } else {
      return SpecReader::Error(*e, "insertorder", "hashed or ordered");
    }
  }
  RFRPC_RETURN_IF_ERROR(
      r.IntAtMost("zeropadding", kMaxZeroPadding, &s.zeropadding));
  RFRPC_RETURN_IF_ERROR(r.IntAtMost("keylength", kMaxKeyLength, &s.keylength));
  if (s.keylength > 0 && s.keylength < 5) {
    return SpecReader::Error(*props.Find("keylength"), "keylength",
                             "0 or at least 5 (\"user\" + one digit)");
  }
  RFRPC_RETURN_IF_ERROR(
      r.NonNegativeInt("maxexecutiontime", &s.maxexecutiontime));
  RFRPC_RETURN_IF_ERROR(
      r.IntAtMost("unavailablestop", kMaxUnavailableStop, &s.unavailablestop));
  RFRPC_RETURN_IF_ERROR(r.Bool("dataintegrity", &s.dataintegrity));
  if (s.dataintegrity &&
      s.fieldlengthdistribution != Distribution::kConstant) {
    return r.ComboError("dataintegrity",
                        "dataintegrity requires fieldlengthdistribution="
                        "constant");
  }
  RFRPC_RETURN_IF_ERROR(
      r.IntAtMost("threadcount", kMaxThreadCount, &s.threadcount));
  if (s.threadcount < 1) {
    return r.ComboError("threadcount", "threadcount: must be at least 1");
  }
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("outstanding", &s.outstanding));
  if (s.outstanding < 1 || s.outstanding > 4096) {
    return r.ComboError("outstanding", "outstanding: must be in [1, 4096]");
  }
  RFRPC_RETURN_IF_ERROR(r.Double("target", &s.target));
  if (s.target < 0) {
    return SpecReader::Error(*props.Find("target"), "target",
                             "non-negative number");
  }
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("core_workload_insertion_retry_limit",
                                         &s.insertion_retry_limit));
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt(
      "core_workload_insertion_retry_interval", &s.insertion_retry_interval));
  if (const Properties::Entry* e = r.Lookup("hdrhistogram.percentiles")) {
    s.percentiles.clear();
    for (absl::string_view p : absl::StrSplit(e->value, ',')) {
      double v;
      // Written as "in range" so that NaN, which compares false with
      // everything, fails it (SimpleAtod takes "nan").
      if (!absl::SimpleAtod(absl::StripAsciiWhitespace(p), &v) ||
          !(v >= 0 && v <= 100)) {
        return SpecReader::Error(*e, "hdrhistogram.percentiles",
                                 "comma-separated percentiles in [0, 100]");
      }
      s.percentiles.push_back(v);
    }
  }
  RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("status.interval", &s.status_interval));
  if (s.status_interval < 1) {
    return r.ComboError("status.interval", "status.interval: must be >= 1");
  }
  {
    int64_t seed = 0;
    RFRPC_RETURN_IF_ERROR(r.NonNegativeInt("seed", &seed));
    s.seed = static_cast<uint64_t>(seed);
  }
  RFRPC_RETURN_IF_ERROR(r.String("label", &s.label));
  RFRPC_RETURN_IF_ERROR(r.String("db", &s.db));
  RFRPC_RETURN_IF_ERROR(r.String("exportfile", &s.exportfile));

  if (const Properties::Entry* e = r.Lookup("workload")) {
    absl::string_view v = absl::StripAsciiWhitespace(e->value);
    bool ok = false;
    for (absl::string_view c : kCoreWorkloadClasses) ok = ok || v == c;
    if (!ok) {
      return SpecReader::Error(*e, "workload",
                               "site.ycsb.workloads.CoreWorkload (the only "
                               "workload this client implements)");
    }
  }
  if (const Properties::Entry* e = r.Lookup("exporter")) {
    absl::string_view v = absl::StripAsciiWhitespace(e->value);
    bool ok = false;
    for (absl::string_view c : kTextExporterClasses) ok = ok || v == c;
    if (!ok) {
      warnings->push_back(absl::StrCat(
          e->origin, ": exporter \"", v,
          "\" is not supported; using the text exporter"));
    }
  }
  if (const Properties::Entry* e = r.Lookup("measurementtype")) {
    absl::string_view v = absl::StripAsciiWhitespace(e->value);
    if (v != "hdrhistogram" && v != "histogram") {
      warnings->push_back(absl::StrCat(
          e->origin, ": measurementtype \"", v,
          "\" is not supported; using the log-linear histogram"));
    }
  }
  for (absl::string_view k : kAcceptedKeys) r.Accept(k);

  for (const auto& [key, entry] : props.entries()) {
    if (r.IsKnown(entry)) continue;
    bool driver_owned = false;
    for (const std::string& d : driver_names) {
      if (key.size() > d.size() && key[d.size()] == '.' &&
          absl::StartsWith(key, d)) {
        driver_owned = true;
      }
    }
    if (driver_owned) continue;
    warnings->push_back(absl::StrCat(entry.origin, ": unknown property \"",
                                     key, "\" (ignored)"));
  }
  return s;
}

}  // namespace ycsb
}  // namespace rfrpc
