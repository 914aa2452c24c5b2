// Copyright 2026 The rfrpc Authors.
//
// The knobs of ChannelOptions: every field a user may set, by one name and
// one text syntax, so that each way in sets it the same way. A knob named
// `retries` is the flag --rfrpc_retries (//flags:channel_flags) and the
// YCSB property -p jakiro.retries (kvstore/ycsb); both parse the value here
// and check the result with ValidateChannelOptions, so a bad value gets the
// same message whichever way it came in.
//
//   ChannelOptions options;
//   RFRPC_RETURN_IF_ERROR(SetChannelKnob("batch_timeout_us", "20", &options));
//   // options.batching.timeout == absl::Microseconds(20)
//
// Values: integers and numbers in decimal; booleans true/false (or 1/0);
// durations as an integer in the unit the name ends with (_us, _ms); named
// choices by name (mode=rf|server_reply|hybrid, ...). SetChannelKnob checks
// only the syntax and the field type's range; ValidateChannelOptions the
// library's bounds.
//
// Not knobs: `provider` (each binary has its --provider / jakiro.provider),
// `provider_options.address_hint` (filled from the address), `first_seq`
// (tests), `on_result` (a callback). `fetch.adaptive_delay` is set through
// fetch_policy, `batching.sizer.proportional_steps` through sizer_rule.
//
// Thread-safety: the table is immutable; the functions are thread-safe for
// distinct options structs.

#ifndef RFRPC_RPC_OPTION_KNOBS_H_
#define RFRPC_RPC_OPTION_KNOBS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "rpc/options.h"

namespace rfrpc {

struct ChannelKnob {
  // Flag rfrpc_<name>, property jakiro.<name>.
  absl::string_view name;
  // The ChannelOptions field it sets (the main one for a knob that sets
  // several, as sizer_rule does); "provider_options.<x>" for those.
  absl::string_view field;
  // Parses `value` into the field. INVALID_ARGUMENT ("expected ..., got
  // \"value\"") for a value of the wrong syntax; `*options` is then
  // unchanged.
  absl::Status (*set)(absl::string_view value, ChannelOptions* options);
  // The field's value in the knob's syntax: set(get(o)) leaves o unchanged.
  std::string (*get)(const ChannelOptions& options);
};

// Every knob, in the order they are to be applied: a knob that sets several
// fields (sizer_rule) comes before the knobs of those fields, so that
// "sizer_rule=paper sizer_window=100" means the paper's rule with windows of
// 100 calls.
absl::Span<const ChannelKnob> ChannelKnobs();

// The knob named `name`; null if there is none.
const ChannelKnob* FindChannelKnob(absl::string_view name);

// The knob that sets ChannelOptions field `field` (as
// ValidateChannelOptions names it); null if no knob sets it.
const ChannelKnob* FindChannelKnobOfField(absl::string_view field);

// FindChannelKnob(name)->set(value, options); INVALID_ARGUMENT for an
// unknown name.
absl::Status SetChannelKnob(absl::string_view name, absl::string_view value,
                            ChannelOptions* options);

// The knobs of ServerOptions, the same way: knob `hot_window_us` is the
// flag --rfrpc_hot_window_us (//flags:server_flags), checked by
// ValidateServerOptions. Knobs both sides have (auth_token, max_inline,
// method_stats, device, ib_port, gid_index, socket_dir) share their names
// and syntax; the server's request and response limits are
// server_max_request_bytes / server_max_response_bytes (the channel's
// max_request_bytes is what a client asks for). idle_park_after_us takes
// -1 for never. Not knobs: provider, address and workers (each server
// binary has its own), provider_options.address_hint.
struct ServerKnob {
  absl::string_view name;
  absl::string_view field;  // As ValidateServerOptions names it.
  absl::Status (*set)(absl::string_view value, ServerOptions* options);
  std::string (*get)(const ServerOptions& options);
};

absl::Span<const ServerKnob> ServerKnobs();
const ServerKnob* FindServerKnob(absl::string_view name);
const ServerKnob* FindServerKnobOfField(absl::string_view field);
absl::Status SetServerKnob(absl::string_view name, absl::string_view value,
                           ServerOptions* options);

}  // namespace rfrpc

#endif  // RFRPC_RPC_OPTION_KNOBS_H_
