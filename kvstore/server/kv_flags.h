// Copyright 2026 The rfrpc Authors.
//
// Checks of kvstore_server's own flags (--kv_memory_mb, --kv_max_value_bytes
// and stray arguments), as pure functions so that they can be tested without
// a process. Each returns INVALID_ARGUMENT with a message that names the
// flag(s) at fault; the binary exits 2 on any of them. Thread-safe (no
// state).
//
//   RFRPC_RETURN_IF_ERROR(CheckKvFlags(FLAGS_kv_memory_mb,
//                                      FLAGS_kv_max_value_bytes));
//   ... JakiroService::Create ...
//   RFRPC_RETURN_IF_ERROR(CheckValueFitsSegment(
//       FLAGS_kv_memory_mb, FLAGS_kv_max_value_bytes,
//       service->segment_bytes()));

#ifndef RFRPC_KVSTORE_SERVER_KV_FLAGS_H_
#define RFRPC_KVSTORE_SERVER_KV_FLAGS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace rfrpc {
namespace kvstore {

// The largest request and response a server grants: the bound
// ValidateServerOptions puts on max_request_bytes and max_response_bytes
// (rpc/options.h, 1 GiB; kv_flags_test pins the two together).
inline constexpr uint64_t kServerMaxMessageBytes = uint64_t{1} << 30;

// The largest --kv_memory_mb: Partition::Create refuses memory_bytes of
// 32 GiB or more (arena locations are 32-bit counts of 8-byte units).
inline constexpr int64_t kMaxKvMemoryMb = (int64_t{32} << 10) - 1;

// The largest --kv_max_value_bytes whose Jakiro messages
// (JakiroMaxMessageBytes) fit kServerMaxMessageBytes.
uint64_t MaxKvValueBytes();

// Checks --kv_memory_mb and --kv_max_value_bytes each on its own: both
// >= 1, memory at most kMaxKvMemoryMb, the value at most MaxKvValueBytes().
// Before anything is allocated.
absl::Status CheckKvFlags(int64_t memory_mb, int64_t max_value_bytes);

// Checks that an item of the longest key (Partition::kMaxKeyBytes) and a
// `max_value_bytes` value fits one arena segment of `segment_bytes` (what
// the partitions built from the flags use, JakiroService::segment_bytes()):
// otherwise every such Put would fail with RESOURCE_EXHAUSTED. The error
// names --kv_max_value_bytes and --kv_memory_mb and the largest value that
// fits.
absl::Status CheckValueFitsSegment(int64_t memory_mb, int64_t max_value_bytes,
                                   size_t segment_bytes);

// Refuses arguments gflags left in argv after the flags (argv[0] is the
// program). REQUIRES: argc >= 1, argv has argc entries. Not kept.
absl::Status CheckNoPositionalArgs(int argc, char** argv);

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_SERVER_KV_FLAGS_H_
