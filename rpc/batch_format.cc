// Copyright 2026 The rfrpc Authors.

#include "rpc/batch_format.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

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

namespace {
constexpr absl::string_view kTooLargeBefore = "response of ";
constexpr absl::string_view kTooLargeAfter = " bytes exceeds";
}  // namespace

std::string ResultTooLargeMessage(size_t bytes, size_t left) {
  return absl::StrCat(kTooLargeBefore, bytes, kTooLargeAfter, " the ", left,
                      " bytes left in the connection's response slot (raise "
                      "ChannelOptions::max_response_bytes)");
}

uint64_t ResultTooLargeBytes(absl::string_view message) {
  if (!absl::ConsumePrefix(&message, kTooLargeBefore)) return 0;
  const size_t digits = std::min(message.find(' '), message.size());
  const absl::string_view rest = message.substr(digits);
  uint64_t bytes = 0;
  if (digits == 0 || !absl::SimpleAtoi(message.substr(0, digits), &bytes) ||
      !(absl::StartsWith(rest, kTooLargeAfter) ||
        absl::StartsWith(kTooLargeAfter, rest))) {
    return 0;
  }
  return bytes;
}

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

absl::Status ParseBatchPayload(absl::string_view payload, uint16_t flags,
                               uint32_t method_id, BatchPayload* out) {
  out->entries = payload;
  out->budgets = nullptr;
  if ((flags & kRequestFlagDeadline) != 0) {
    if (method_id > payload.size() || method_id % 8 != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "batch entries of %d bytes (header) do not fit its %d-byte payload "
          "or are not 8-aligned",
          method_id, payload.size()));
    }
    out->entries = payload.substr(0, method_id);
  }
  absl::Status s = CountBatchEntries(out->entries, &out->count);
  if (!s.ok()) return s;
  if ((flags & kRequestFlagDeadline) != 0) {
    const size_t room = payload.size() - method_id;
    if (room < 2 * size_t{out->count}) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "batch of %d entries has %d bytes of budget codes", out->count, room));
    }
    out->budgets = payload.data() + method_id;
  }
  return absl::OkStatus();
}

}  // namespace wire
}  // namespace rfrpc
