// Copyright 2026 The rfrpc Authors.
//
// The naming rules of protoc-gen-rfrpc, kept apart from the generator so they
// can be tested directly and documented in one place (codegen/README.md).
//
// All functions are pure and thread-safe.

#ifndef RFRPC_CODEGEN_NAMING_H_
#define RFRPC_CODEGEN_NAMING_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace rfrpc {
namespace codegen {

// FNV-1a 32 of `full_method_name` ("/pkg.Service/Method"), with 0 mapped to 1.
// Must equal rfrpc::MethodId (rpc/service.h); codegen/method_id_test.cc checks
// that. Kept here so the generator does not link the runtime.
constexpr uint32_t Fnv1a32MethodId(absl::string_view full_method_name) {
  uint32_t h = 2166136261u;
  for (char c : full_method_name) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h == 0 ? 1 : h;
}

// True for C++ keywords and alternative tokens (C++20 list), which can never
// be identifiers.
bool IsCppKeyword(absl::string_view name);

// The C++ identifier used for an rpc named `rpc_name` in the generated
// Service and Stub classes: the name itself, or the name with a trailing
// underscore when it is a C++ keyword (`delete` -> `delete_`) or a name the
// generated classes already use: `Service`, `Stub` (the nested classes),
// `full_name`, `methods`, `AddMethod` (rfrpc::Service members) and `channel_`
// (the stub's member). The stub's other entry points append to the mangled
// name: rpc `delete` yields `delete_`, `delete_Async`, `delete_Future`.
// Constants use the rpc name unchanged (`kdeleteMethodId`): a `k` prefix
// never forms a keyword.
std::string MethodIdentifier(absl::string_view rpc_name);

// The C++ class name of a service: its name, with a trailing underscore when
// it is a C++ keyword or `Service` / `Stub` (the names of its nested classes).
std::string ServiceClassName(absl::string_view service_name);

// "::a::b" for package "a.b"; "" for no package.
std::string PackageToNamespace(absl::string_view package);

// Include guard for the header generated from `proto_file`, unique to
// the path: "proto/echo.proto" -> "PROTO_ECHO_RFRPC_H_<8 hex digits>_".
std::string IncludeGuard(absl::string_view proto_file);

// Turns protoc's comment text (lines without their comment markers) into
// "// "-prefixed lines, each ending with '\n', indented by `indent` spaces.
// Returns "" for no comment.
std::string FormatComment(absl::string_view comment, int indent);

}  // namespace codegen
}  // namespace rfrpc

#endif  // RFRPC_CODEGEN_NAMING_H_
