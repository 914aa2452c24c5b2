// Copyright 2026 The rfrpc Authors.
//
// Size limits of Jakiro messages, shared by the server (to size
// ServerOptions) and the client (to size ChannelOptions).

#ifndef RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_
#define RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
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

// Raises `options`' max_request_bytes and max_response_bytes (a
// ChannelOptions or a ServerOptions) to `needed`, and returns, for each the
// user had set below it, "<prefix>max_..._bytes=<asked>" for the caller to
// say so. Empty: nothing the user set was raised.
template <typename Options>
std::vector<std::string> RaiseMessageLimits(Options* options, uint32_t needed,
                                            absl::string_view prefix) {
  const Options defaults;
  std::vector<std::string> raised;
  const uint32_t asked_request = options->max_request_bytes;
  if (RaiseToFit(&options->max_request_bytes, defaults.max_request_bytes,
                 needed)) {
    raised.push_back(absl::StrCat(prefix, "max_request_bytes=", asked_request));
  }
  const uint32_t asked_response = options->max_response_bytes;
  if (RaiseToFit(&options->max_response_bytes, defaults.max_response_bytes,
                 needed)) {
    raised.push_back(
        absl::StrCat(prefix, "max_response_bytes=", asked_response));
  }
  return raised;
}

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_SERVER_MESSAGE_LIMITS_H_
