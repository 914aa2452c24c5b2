// Copyright 2026 The rfrpc Authors.
//
// Size limits of Jakiro messages, shared by the server (to size
// ServerOptions) and the client (to size ChannelOptions).

#ifndef RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_
#define RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_

#include <cstddef>

#include "kvstore/store/partition.h"

namespace rfrpc {
namespace kvstore {

// Largest serialized Jakiro request or response for values of up to
// `max_value_bytes` and keys of up to Partition::kMaxKeyBytes: two
// length-delimited fields, each a 1-byte tag and a varint length (<= 10).
inline size_t JakiroMaxMessageBytes(size_t max_value_bytes) {
  return Partition::kMaxKeyBytes + max_value_bytes + 2 * (1 + 10);
}

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_
