// Copyright 2026 The rfrpc Authors.
//
// KeyHash: the one key hash that Jakiro's clients and servers agree on.
//
// A client picks the server worker (partition) that owns a key by hashing the
// key itself, so the hash must give the same answer in every process, on every
// machine and in every build. absl::Hash and std::hash do not promise that
// (absl::Hash is salted per process), so rfrpc carries its own: XXH64 with
// seed 0, the 64-bit xxHash algorithm as publicly specified by its author
// (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md),
// implemented here from the specification. The output equals the reference
// XXH64(key, len, 0); key_hash_test.cc pins known values. Changing this
// function is a wire-format change: every client and server must agree.
//
// Which hash bits go where (so the uses do not correlate):
//   bits  0..31  choose the partition: PartitionOfHash(hash, n) = hash % n.
//   bits 16..31  the 16-bit bucket tag inside a Partition.
//   bits 32..63  the bucket index inside a Partition (masked to its size).
// With n a power of two up to 2^16 the partition choice uses only bits below
// the tag and the bucket index, so keys of one partition still spread over all
// of its buckets.
//
// Thread-safety: pure functions; safe to call from any thread.
//
// Example:
//
//   uint64_t h = rfrpc::kvstore::KeyHash("user:42");
//   uint32_t worker = rfrpc::kvstore::PartitionOfHash(h, num_workers);

#ifndef RFRPC_KVSTORE_STORE_KEY_HASH_H_
#define RFRPC_KVSTORE_STORE_KEY_HASH_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace rfrpc {
namespace kvstore {

// Returns XXH64(data, size, seed). Stable across processes, machines (either
// byte order) and builds. `data` may be null only when `size` is 0.
uint64_t XxHash64(const void* data, size_t size, uint64_t seed);

// The key hash of the Jakiro protocol: XXH64 with seed 0.
inline uint64_t KeyHash(absl::string_view key) {
  return XxHash64(key.data(), key.size(), 0);
}

// The partition (server worker) that owns a key with hash `hash` when the
// store has `num_partitions` partitions.
// REQUIRES: num_partitions > 0.
inline uint32_t PartitionOfHash(uint64_t hash, uint32_t num_partitions) {
  return static_cast<uint32_t>(hash % num_partitions);
}

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_STORE_KEY_HASH_H_
