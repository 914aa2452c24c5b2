// Copyright 2026 The rfrpc Authors.
//
// Fuzzes YCSB property files: Properties::LoadString (the .properties
// syntax: continuations, escapes, \uXXXX) and ParseWorkloadSpec over what
// loaded (numbers, booleans, distributions, proportions, percentiles).
// Input: the file text. A line "-p key=value" style override is also tried
// with the first line, as `ycsb -p` would pass it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kvstore/ycsb/properties.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  rfrpc::ycsb::Properties props;
  absl::Status s = props.LoadString(text, "fuzz");
  if (!s.ok() && s.code() != absl::StatusCode::kInvalidArgument) abort();
  const size_t nl = text.find('\n');
  (void)props.SetFromArgument(text.substr(0, nl));
  std::vector<std::string> warnings;
  // Built once: per input it would be four allocations the parser never sees.
  static const auto* const drivers = new std::vector<std::string>{
      "basic", "rfrpc", "memcached", "redis"};
  absl::StatusOr<rfrpc::ycsb::WorkloadSpec> spec =
      rfrpc::ycsb::ParseWorkloadSpec(props, *drivers, &warnings);
  if (!spec.ok() && spec.status().code() != absl::StatusCode::kInvalidArgument) {
    abort();
  }
  return 0;
}
