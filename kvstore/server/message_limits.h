// Copyright 2026 The rfrpc Authors.
//
// Size limits of Jakiro messages, shared by the server (to size
// ServerOptions) and the client (to size ChannelOptions).

#ifndef RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_
#define RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_

#include <cstddef>
#include <cstdint>

#include "kvstore/store/partition.h"

namespace rfrpc {
namespace kvstore {

// Largest serialized Jakiro request or response for values of up to
// `max_value_bytes` and keys of up to Partition::kMaxKeyBytes: two
// length-delimited fields, each a 1-byte tag and a varint length (<= 10).
inline size_t JakiroMaxMessageBytes(size_t max_value_bytes) {
  return Partition::kMaxKeyBytes + max_value_bytes + 2 * (1 + 10);
}

// Raises a message size limit `*bytes` to `needed`. Returns true when that
// raised a value the user set (one other than `default_bytes`): the caller
// says so, since the user asked for less. A default raised is what the
// defaults are for.
inline bool RaiseToFit(uint32_t* bytes, uint32_t default_bytes,
                       uint32_t needed) {
  if (*bytes >= needed) return false;
  const bool user_set = *bytes != default_bytes;
  *bytes = needed;
  return user_set;
}

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_
