// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/record_codec.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace rfrpc {
namespace ycsb {
namespace {

void PutLength(size_t n, std::string* out) {
  const uint32_t v = static_cast<uint32_t>(n);
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

bool GetChunk(absl::string_view* in, absl::string_view* chunk) {
  if (in->size() < 4) return false;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) {
    n |= static_cast<uint32_t>(static_cast<unsigned char>((*in)[i])) << (8 * i);
  }
  in->remove_prefix(4);
  if (in->size() < n) return false;
  *chunk = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

}  // namespace

void EncodeRecord(const Record& record, std::string* out) {
  size_t total = 0;
  for (const Field& f : record) total += 8 + f.name.size() + f.value.size();
  out->reserve(out->size() + total);
  for (const Field& f : record) {
    PutLength(f.name.size(), out);
    out->append(f.name);
    PutLength(f.value.size(), out);
    out->append(f.value);
  }
}

absl::StatusOr<Record> DecodeRecord(absl::string_view bytes) {
  Record record;
  absl::Status s = DecodeRecordInto(bytes, /*fields=*/nullptr, &record);
  if (!s.ok()) return s;
  return record;
}

absl::Status DecodeRecordInto(absl::string_view bytes,
                              const std::vector<std::string>* fields,
                              Record* out) {
  const size_t size = bytes.size();
  size_t n = 0;  // Fields of *out filled so far.
  while (!bytes.empty()) {
    absl::string_view name, value;
    if (!GetChunk(&bytes, &name) || !GetChunk(&bytes, &value)) {
      out->clear();
      return absl::DataLossError(absl::StrCat(
          "malformed record: truncated field at byte ", size - bytes.size()));
    }
    if (fields != nullptr &&
        std::find(fields->begin(), fields->end(), name) == fields->end()) {
      continue;
    }
    if (n == out->size()) out->emplace_back();
    Field& f = (*out)[n++];
    f.name.assign(name.data(), name.size());
    f.value.assign(value.data(), value.size());
  }
  out->resize(n);
  return absl::OkStatus();
}

}  // namespace ycsb
}  // namespace rfrpc
