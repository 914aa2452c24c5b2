// Copyright 2026 The rfrpc Authors.
//
// RFRPC_RETURN_IF_ERROR and RFRPC_ASSIGN_OR_RETURN: early-return helpers for
// absl::Status and absl::StatusOr<T>. Debian's abseil (20220623) predates
// absl's own versions, so rfrpc defines them once, here.
//
// Example:
//
//   absl::StatusOr<int> ParsePort(absl::string_view s);
//
//   absl::Status Listen(absl::string_view spec) {
//     RFRPC_ASSIGN_OR_RETURN(int port, ParsePort(spec));
//     RFRPC_RETURN_IF_ERROR(Bind(port));
//     return absl::OkStatus();
//   }
//
// Both macros evaluate their expression exactly once. They work in any
// function whose return type is constructible from absl::Status (absl::Status
// itself or any absl::StatusOr<U>).

#ifndef RFRPC_BASE_STATUS_MACROS_H_
#define RFRPC_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Returns the status from the enclosing function if `expr` (an absl::Status)
// is not OK.
#define RFRPC_RETURN_IF_ERROR(expr)                                 \
  do {                                                              \
    ::absl::Status rfrpc_status_macro_status_ = (expr);             \
    if (ABSL_PREDICT_FALSE(!rfrpc_status_macro_status_.ok())) {     \
      return rfrpc_status_macro_status_;                            \
    }                                                               \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status from
// the enclosing function, otherwise move-assigns the value to `lhs`, which may
// be a declaration (`int x`, `auto y`) or an existing lvalue.
#define RFRPC_ASSIGN_OR_RETURN(lhs, rexpr)                                 \
  RFRPC_ASSIGN_OR_RETURN_IMPL_(                                            \
      RFRPC_STATUS_MACROS_CONCAT_(rfrpc_statusor_, __LINE__), lhs, rexpr)

#define RFRPC_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                 \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {                \
    return std::move(statusor).status();                   \
  }                                                        \
  lhs = std::move(statusor).value()

#define RFRPC_STATUS_MACROS_CONCAT_INNER_(a, b) a##b
#define RFRPC_STATUS_MACROS_CONCAT_(a, b) RFRPC_STATUS_MACROS_CONCAT_INNER_(a, b)

#endif  // RFRPC_BASE_STATUS_MACROS_H_
