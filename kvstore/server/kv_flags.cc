// Copyright 2026 The rfrpc Authors.

#include "kvstore/server/kv_flags.h"

#include "absl/strings/str_cat.h"
#include "kvstore/server/message_limits.h"
#include "kvstore/store/partition.h"

namespace rfrpc {
namespace kvstore {

uint64_t MaxKvValueBytes() {
  // JakiroMaxMessageBytes is the value plus a fixed overhead.
  return kServerMaxMessageBytes - JakiroMaxMessageBytes(0);
}

absl::Status CheckKvFlags(int64_t memory_mb, int64_t max_value_bytes) {
  if (memory_mb < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv_memory_mb=", memory_mb, " must be >= 1"));
  }
  if (memory_mb > kMaxKvMemoryMb) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv_memory_mb=", memory_mb, " is above ", kMaxKvMemoryMb,
        ", the largest partition (a partition's memory must be below 32 GiB)"));
  }
  if (max_value_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv_max_value_bytes=", max_value_bytes, " must be >= 1"));
  }
  // In 64 bits: the message size of a value near 4 GiB wraps in 32.
  if (static_cast<uint64_t>(max_value_bytes) > MaxKvValueBytes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kv_max_value_bytes=", max_value_bytes, " is above ",
        MaxKvValueBytes(), ", the largest value whose requests and responses (",
        JakiroMaxMessageBytes(0), " bytes of key and framing more) fit the ",
        kServerMaxMessageBytes, "-byte message limit of a server"));
  }
  return absl::OkStatus();
}

absl::Status CheckValueFitsSegment(int64_t memory_mb, int64_t max_value_bytes,
                                   size_t segment_bytes) {
  const size_t value = static_cast<size_t>(max_value_bytes);
  const size_t item = Partition::ItemFootprint(Partition::kMaxKeyBytes, value);
  if (item <= segment_bytes) return absl::OkStatus();
  // The largest value whose item, with the longest key, still fits.
  size_t fits = 0;
  const size_t empty = Partition::ItemFootprint(Partition::kMaxKeyBytes, 0);
  if (segment_bytes >= empty) {
    fits = segment_bytes - empty;
    while (Partition::ItemFootprint(Partition::kMaxKeyBytes, fits + 1) <=
           segment_bytes) {
      ++fits;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--kv_max_value_bytes=", max_value_bytes, " does not fit a partition of ",
      "--kv_memory_mb=", memory_mb, ": an item of that value and a ",
      Partition::kMaxKeyBytes, "-byte key takes ", item,
      " bytes, more than the partition's ", segment_bytes,
      "-byte arena segment; the largest value that fits is ", fits,
      " (or raise --kv_memory_mb)"));
}

absl::Status CheckNoPositionalArgs(int argc, char** argv) {
  if (argc <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("unexpected argument \"", argv[1], "\"",
                   argc > 2 ? absl::StrCat(" (and ", argc - 2, " more)") : "",
                   ": kvstore_server takes only flags, as --name=value"));
}

}  // namespace kvstore
}  // namespace rfrpc
