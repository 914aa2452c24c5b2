// Copyright 2026 The rfrpc Authors.

#include "codegen/naming.h"

#include <cctype>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rfrpc {
namespace codegen {
namespace {

const absl::flat_hash_set<absl::string_view>& Keywords() {
  static const auto* const kKeywords = new absl::flat_hash_set<
      absl::string_view>({
      "alignas",   "alignof",      "and",          "and_eq",
      "asm",       "auto",         "bitand",       "bitor",
      "bool",      "break",        "case",         "catch",
      "char",      "char8_t",      "char16_t",     "char32_t",
      "class",     "compl",        "concept",      "const",
      "consteval", "constexpr",    "constinit",    "const_cast",
      "continue",  "co_await",     "co_return",    "co_yield",
      "decltype",  "default",      "delete",       "do",
      "double",    "dynamic_cast", "else",         "enum",
      "explicit",  "export",       "extern",       "false",
      "float",     "for",          "friend",       "goto",
      "if",        "inline",       "int",          "long",
      "mutable",   "namespace",    "new",          "noexcept",
      "not",       "not_eq",       "nullptr",      "operator",
      "or",        "or_eq",        "private",      "protected",
      "public",    "register",     "reinterpret_cast", "requires",
      "return",    "short",        "signed",       "sizeof",
      "static",    "static_assert", "static_cast", "struct",
      "switch",    "template",     "this",         "thread_local",
      "throw",     "true",         "try",          "typedef",
      "typeid",    "typename",     "union",        "unsigned",
      "using",     "virtual",      "void",         "volatile",
      "wchar_t",   "while",        "xor",          "xor_eq",
  });
  return *kKeywords;
}

// Names the generated Service/Stub classes (or their bases) already use.
const absl::flat_hash_set<absl::string_view>& ReservedMemberNames() {
  static const auto* const kReserved =
      new absl::flat_hash_set<absl::string_view>({
          "Service", "Stub", "full_name", "methods", "AddMethod", "SetBlocking",
          "channel_",
      });
  return *kReserved;
}

}  // namespace

bool IsCppKeyword(absl::string_view name) { return Keywords().contains(name); }

std::string MethodIdentifier(absl::string_view rpc_name) {
  if (IsCppKeyword(rpc_name) || ReservedMemberNames().contains(rpc_name)) {
    return absl::StrCat(rpc_name, "_");
  }
  return std::string(rpc_name);
}

std::string ServiceClassName(absl::string_view service_name) {
  // `Service` and `Stub` would clash with the nested classes of that name.
  if (IsCppKeyword(service_name) || service_name == "Service" ||
      service_name == "Stub") {
    return absl::StrCat(service_name, "_");
  }
  return std::string(service_name);
}

std::string PackageToNamespace(absl::string_view package) {
  if (package.empty()) return "";
  return absl::StrCat("::", absl::StrReplaceAll(package, {{".", "::"}}));
}

std::string IncludeGuard(absl::string_view proto_file) {
  absl::string_view base = proto_file;
  if (!absl::ConsumeSuffix(&base, ".protodevel")) {
    absl::ConsumeSuffix(&base, ".proto");
  }
  std::string guard;
  for (char c : base) {
    guard.push_back(absl::ascii_isalnum(static_cast<unsigned char>(c))
                        ? absl::ascii_toupper(static_cast<unsigned char>(c))
                        : '_');
  }
  // A path may start with a digit ("2fa.proto"): not an identifier.
  if (guard.empty() || absl::ascii_isdigit(static_cast<unsigned char>(guard[0]))) {
    guard.insert(0, "RFRPC_");
  }
  // Paths that differ only in case or in the characters above that became
  // '_' ("a_b.proto", "a-b.proto", "a/b.proto") must not share a guard: one
  // header would vanish where both are included. The path's FNV-1a hash.
  absl::StrAppend(&guard, "_RFRPC_H_",
                  absl::AsciiStrToUpper(absl::StrCat(absl::Hex(
                      Fnv1a32MethodId(proto_file), absl::kZeroPad8))),
                  "_");
  return guard;
}

std::string FormatComment(absl::string_view comment, int indent) {
  // protoc ends the text with '\n'; drop trailing blank lines.
  while (!comment.empty() &&
         (comment.back() == '\n' || comment.back() == ' ')) {
    comment.remove_suffix(1);
  }
  if (comment.empty()) return "";
  const std::string pad(indent, ' ');
  std::string out;
  for (absl::string_view line : absl::StrSplit(comment, '\n')) {
    line = absl::StripTrailingAsciiWhitespace(line);
    absl::StrAppend(&out, pad, "//");
    if (!line.empty()) {
      absl::StrAppend(&out, line.front() == ' ' ? "" : " ", line);
      // A backslash ending a line splices the next line into the comment
      // (the next comment line: -Wcomment; the code after the last one:
      // it vanishes). Something after it ends the comment line instead.
      if (line.back() == '\\') out.append(" //");
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace codegen
}  // namespace rfrpc
