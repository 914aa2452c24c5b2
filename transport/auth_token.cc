// Copyright 2026 The rfrpc Authors.

#include "transport/auth_token.h"

#include <cstddef>

#include "absl/strings/str_cat.h"

namespace rfrpc {
namespace transport {

bool ConstantTimeEquals(absl::string_view expected,
                        absl::string_view presented) {
  // Every byte of `presented` is compared (against `expected` repeated), and
  // differences are OR-ed together instead of returning at the first one;
  // the length difference joins the same accumulator. No branch depends on
  // the contents. The empty asm keeps the compiler from turning the loop
  // into an early exit.
  size_t diff = expected.size() ^ presented.size();
  for (size_t i = 0; i < presented.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i]) ^
            static_cast<unsigned char>(expected[i % expected.size()]);
    __asm__ volatile("" : "+r"(diff));
  }
  return diff == 0;
}

absl::Status CheckAuthToken(absl::string_view required,
                            absl::string_view presented,
                            absl::string_view peer_name) {
  if (required.empty()) return absl::OkStatus();
  if (presented.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "no auth token from ", peer_name, " (the listener requires one)"));
  }
  if (!ConstantTimeEquals(required, presented)) {
    return absl::UnauthenticatedError(
        absl::StrCat("wrong auth token from ", peer_name));
  }
  return absl::OkStatus();
}

}  // namespace transport
}  // namespace rfrpc
