// Copyright 2026 The rfrpc Authors.
//
// The --rfrpc_* flags both sides take (//flags:channel_flags and
// //flags:server_flags link them): --rfrpc_auth_token, --rfrpc_method_stats,
// --rfrpc_max_inline, and the provider's --rfrpc_device, --rfrpc_ib_port,
// --rfrpc_gid_index, --rfrpc_socket_dir. Internal to //flags.

#ifndef RFRPC_FLAGS_COMMON_FLAGS_H_
#define RFRPC_FLAGS_COMMON_FLAGS_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "gflags/gflags.h"
#include "transport/transport.h"

DECLARE_string(rfrpc_auth_token);
DECLARE_bool(rfrpc_method_stats);
DECLARE_uint32(rfrpc_max_inline);

namespace rfrpc {
namespace tools {

// INVALID_ARGUMENT "--<flag>: <why>".
absl::Status BadFlag(absl::string_view flag, absl::string_view why);

// The flag was given on the command line (or set by the program).
bool FlagGiven(const char* flag);

// Applies the flags --rfrpc_<knob> given on the command line to a copy of
// `*options` through the knobs (rpc/option_knobs.h), checks the result with
// `validate`, and stores it; on error returns INVALID_ARGUMENT naming the
// flag of the bad field (`knob_of_field`) and leaves `*options` unchanged.
// `what` names the options type. INTERNAL if a knob has no flag.
template <typename Knob, typename Options>
absl::Status ApplyKnobFlags(absl::Span<const Knob> knobs, absl::string_view what,
                            absl::Status (*validate)(const Options&,
                                                     std::string*),
                            const Knob* (*knob_of_field)(absl::string_view),
                            Options* options) {
  Options next = *options;
  for (const Knob& k : knobs) {
    const std::string flag = absl::StrCat("rfrpc_", k.name);
    gflags::CommandLineFlagInfo info;
    if (!gflags::GetCommandLineFlagInfo(flag.c_str(), &info)) {
      return absl::InternalError(
          absl::StrCat(what, " knob ", k.name, " has no flag --", flag));
    }
    if (info.is_default) continue;
    const absl::Status s = k.set(info.current_value, &next);
    if (!s.ok()) return BadFlag(flag, s.message());
  }
  std::string field;
  const absl::Status valid = validate(next, &field);
  if (!valid.ok()) {
    const Knob* k = knob_of_field(field);
    return BadFlag(k != nullptr ? absl::StrCat("rfrpc_", k->name)
                                : absl::StrCat("(", what, ") ", field),
                   valid.message());
  }
  *options = std::move(next);
  return absl::OkStatus();
}

}  // namespace tools
}  // namespace rfrpc

#endif  // RFRPC_FLAGS_COMMON_FLAGS_H_
