// Copyright 2026 The rfrpc Authors.
//
// The byte layout of a YCSB record stored as one value (the memcached
// driver's format). A record is its fields in order, each as
//
//   u32 name length (little-endian) | name bytes | u32 value length | value
//
// with nothing before or after. Byte-exact, so any client can read what
// another wrote; a value that does not parse is DataLoss.

#ifndef RFRPC_KVSTORE_YCSB_RECORD_CODEC_H_
#define RFRPC_KVSTORE_YCSB_RECORD_CODEC_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstore/ycsb/db.h"

namespace rfrpc {
namespace ycsb {

// Appends the encoding of `record` to `*out` (not null).
void EncodeRecord(const Record& record, std::string* out);

// Decodes a whole encoded record. DataLoss if `bytes` is truncated or has
// trailing bytes.
absl::StatusOr<Record> DecodeRecord(absl::string_view bytes);

// What DecodeRecord then SelectFields (basic_db.h) give, straight into
// `*out` (not null): the fields named in `fields` (all if null; not kept),
// in record order. `*out` is overwritten, reusing the Fields and string
// buffers it already has, so decoding into the same Record op after op
// allocates nothing once the sizes settle. DataLoss as DecodeRecord, with
// `*out` left empty.
absl::Status DecodeRecordInto(absl::string_view bytes,
                              const std::vector<std::string>* fields,
                              Record* out);

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_RECORD_CODEC_H_
