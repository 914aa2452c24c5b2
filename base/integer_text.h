// Copyright 2026 The rfrpc Authors.
//
// IsIntegerText: whether a string is written as a base-10 integer, so that a
// value absl::SimpleAtoi refuses can be reported as out of range rather than
// as "not an integer".
//
//   if (!absl::SimpleAtoi(s, &n)) {
//     return IsIntegerText(s) ? "out of range" : "not an integer";
//   }

#ifndef RFRPC_BASE_INTEGER_TEXT_H_
#define RFRPC_BASE_INTEGER_TEXT_H_

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace rfrpc {

// A sign, then one or more digits; space around it is ignored, as
// absl::SimpleAtoi ignores it.
inline bool IsIntegerText(absl::string_view s) {
  s = absl::StripAsciiWhitespace(s);
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace rfrpc

#endif  // RFRPC_BASE_INTEGER_TEXT_H_
