// Copyright 2026 The rfrpc Authors.
//
// ErrnoText: "what: strerror(errno) (errno N)" for status messages, with a
// thread-safe strerror.
//
//   if (::bind(fd, ...) != 0) return absl::InternalError(ErrnoText("bind"));
//
// Thread-safe.

#ifndef RFRPC_BASE_ERRNO_TEXT_H_
#define RFRPC_BASE_ERRNO_TEXT_H_

#include <errno.h>
#include <string.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace rfrpc {

// strerror(err), thread-safe ("unknown error N" for values libc does not
// know).
inline std::string ErrnoString(int err) {
  char buf[128];
  // The GNU strerror_r returns the message (maybe a static string).
  const char* msg = strerror_r(err, buf, sizeof(buf));
  return msg != nullptr ? std::string(msg) : absl::StrCat("unknown error ", err);
}

// "<strerror(err)> (errno err)".
inline std::string ErrnoDetail(int err) {
  return absl::StrCat(ErrnoString(err), " (errno ", err, ")");
}

// "what: <strerror(err)> (errno err)"; `err` defaults to the current errno.
inline std::string ErrnoText(const char* what, int err = errno) {
  return absl::StrCat(what, ": ", ErrnoDetail(err));
}

}  // namespace rfrpc

#endif  // RFRPC_BASE_ERRNO_TEXT_H_
