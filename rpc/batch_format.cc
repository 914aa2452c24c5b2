// Copyright 2026 The rfrpc Authors.

#include "rpc/batch_format.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace rfrpc {
namespace wire {

size_t PutBatchEntry(char* p, uint32_t size, uint32_t method_id) {
  BatchEntryHeader h{size, method_id};
  std::memcpy(p, &h, sizeof(h));
  const size_t pad = Align8(size) - size;
  if (pad > 0) std::memset(p + kEntryHeaderBytes + size, 0, pad);
  return EntryBytes(size);
}

size_t PutResultEntry(char* p, uint32_t size, uint16_t status_code) {
  ResultEntryHeader h{size, status_code, 0};
  std::memcpy(p, &h, sizeof(h));
  const size_t pad = Align8(size) - size;
  if (pad > 0) std::memset(p + kEntryHeaderBytes + size, 0, pad);
  return EntryBytes(size);
}

namespace {

// Splits one entry off `rest`. Returns false at the end or on error.
template <typename Header>
bool SplitEntry(absl::string_view* rest, Header* h, absl::string_view* payload,
                absl::Status* error) {
  if (rest->empty()) return false;
  if (rest->size() < kEntryHeaderBytes) {
    *error = absl::InvalidArgumentError(absl::StrFormat(
        "batch entry header truncated: %d bytes left", rest->size()));
    return false;
  }
  std::memcpy(h, rest->data(), sizeof(*h));
  const size_t avail = rest->size() - kEntryHeaderBytes;
  if (h->size > avail) {
    *error = absl::InvalidArgumentError(absl::StrFormat(
        "batch entry of %d bytes overruns the batch (%d bytes left)", h->size,
        avail));
    return false;
  }
  *payload = absl::string_view(rest->data() + kEntryHeaderBytes, h->size);
  const size_t step = EntryBytes(h->size);
  rest->remove_prefix(step < rest->size() ? step : rest->size());
  return true;
}

}  // namespace

bool BatchReader::Next(uint32_t* method_id, absl::string_view* payload) {
  if (!error_.ok()) return false;
  BatchEntryHeader h;
  if (!SplitEntry(&rest_, &h, payload, &error_)) return false;
  *method_id = h.method_id;
  return true;
}

bool ResultReader::Next(uint16_t* status_code, absl::string_view* payload) {
  if (!error_.ok()) return false;
  ResultEntryHeader h;
  if (!SplitEntry(&rest_, &h, payload, &error_)) return false;
  *status_code = h.status_code;
  return true;
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

}  // namespace wire
}  // namespace rfrpc
