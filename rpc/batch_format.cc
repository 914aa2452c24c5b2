// Copyright 2026 The rfrpc Authors.

#include "rpc/batch_format.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace rfrpc {
namespace wire {

namespace batch_internal {

absl::Status TruncatedEntryHeader(size_t left) {
  return absl::InvalidArgumentError(
      absl::StrFormat("batch entry header truncated: %d bytes left", left));
}

absl::Status EntryOverrunsBatch(uint32_t size, size_t left) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "batch entry of %d bytes overruns the batch (%d bytes left)", size,
      left));
}

}  // namespace batch_internal

absl::Status CountBatchEntries(absl::string_view payload, uint32_t* count) {
  BatchReader r(payload);
  uint32_t method;
  absl::string_view entry;
  uint32_t n = 0;
  while (r.Next(&method, &entry)) ++n;
  if (!r.error().ok()) return r.error();
  if (n == 0) return absl::InvalidArgumentError("request batch has no entries");
  *count = n;
  return absl::OkStatus();
}

}  // namespace wire
}  // namespace rfrpc
