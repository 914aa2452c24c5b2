// Copyright 2026 The rfrpc Authors.

#include "codegen/naming.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rfrpc {
namespace codegen {
namespace {

using ::testing::MatchesRegex;

TEST(MethodIdentifierTest, OrdinaryNamesAreKept) {
  EXPECT_EQ(MethodIdentifier("Echo"), "Echo");
  EXPECT_EQ(MethodIdentifier("New"), "New");
  EXPECT_EQ(MethodIdentifier("get_value"), "get_value");
}

TEST(MethodIdentifierTest, KeywordsGetATrailingUnderscore) {
  EXPECT_EQ(MethodIdentifier("delete"), "delete_");
  EXPECT_EQ(MethodIdentifier("class"), "class_");
  EXPECT_EQ(MethodIdentifier("and_eq"), "and_eq_");
  EXPECT_EQ(MethodIdentifier("co_await"), "co_await_");
}

TEST(MethodIdentifierTest, GeneratedAndInheritedNamesGetATrailingUnderscore) {
  EXPECT_EQ(MethodIdentifier("Service"), "Service_");
  EXPECT_EQ(MethodIdentifier("Stub"), "Stub_");
  EXPECT_EQ(MethodIdentifier("full_name"), "full_name_");
  EXPECT_EQ(MethodIdentifier("methods"), "methods_");
  EXPECT_EQ(MethodIdentifier("AddMethod"), "AddMethod_");
  EXPECT_EQ(MethodIdentifier("SetBlocking"), "SetBlocking_");
  EXPECT_EQ(MethodIdentifier("channel_"), "channel__");
}

TEST(ServiceClassNameTest, Mangling) {
  EXPECT_EQ(ServiceClassName("Echo"), "Echo");
  EXPECT_EQ(ServiceClassName("namespace"), "namespace_");
  EXPECT_EQ(ServiceClassName("Service"), "Service_");
  EXPECT_EQ(ServiceClassName("Stub"), "Stub_");
}

TEST(PackageToNamespaceTest, DotsBecomeScopes) {
  EXPECT_EQ(PackageToNamespace(""), "");
  EXPECT_EQ(PackageToNamespace("pkg"), "::pkg");
  EXPECT_EQ(PackageToNamespace("a.b.c"), "::a::b::c");
}

TEST(IncludeGuardTest, FromPath) {
  EXPECT_THAT(IncludeGuard("proto/echo.proto"),
              MatchesRegex("PROTO_ECHO_RFRPC_H_[0-9A-F]{8}_"));
  EXPECT_THAT(IncludeGuard("a-b/c.d.proto"),
              MatchesRegex("A_B_C_D_RFRPC_H_[0-9A-F]{8}_"));
  EXPECT_THAT(IncludeGuard("top.proto"),
              MatchesRegex("TOP_RFRPC_H_[0-9A-F]{8}_"));
}

// A guard is an identifier, and two paths never share one.
TEST(IncludeGuardTest, ValidAndDistinct) {
  EXPECT_THAT(IncludeGuard("2fa.proto"),
              MatchesRegex("RFRPC_2FA_RFRPC_H_[0-9A-F]{8}_"));
  const std::vector<std::string> guards = {
      IncludeGuard("a_b.proto"), IncludeGuard("a-b.proto"),
      IncludeGuard("a/b.proto"), IncludeGuard("A_b.proto")};
  for (size_t i = 0; i < guards.size(); ++i) {
    for (size_t j = i + 1; j < guards.size(); ++j) {
      EXPECT_NE(guards[i], guards[j]) << i << " " << j;
    }
  }
}

TEST(FormatCommentTest, PrefixesAndIndents) {
  EXPECT_EQ(FormatComment("", 2), "");
  EXPECT_EQ(FormatComment(" One line.\n", 0), "// One line.\n");
  EXPECT_EQ(FormatComment(" First.\n\n Third.  \n", 4),
            "    // First.\n    //\n    // Third.\n");
  EXPECT_EQ(FormatComment("No space\n", 0), "// No space\n");
}

// A comment line ending in a backslash would splice the next source line
// into the comment (the class after a service comment vanished).
TEST(FormatCommentTest, NoLineEndsInABackslash) {
  EXPECT_EQ(FormatComment(" ends in \\\n", 0), "// ends in \\ //\n");
  EXPECT_EQ(FormatComment(" C:\\dir\\ \n next\n", 2),
            "  // C:\\dir\\ //\n  // next\n");
}

TEST(Fnv1a32MethodIdTest, KnownValues) {
  // FNV-1a 32 reference values.
  static_assert(Fnv1a32MethodId("a") == 0xe40c292cu, "");
  static_assert(Fnv1a32MethodId("foobar") == 0xbf9cf968u, "");
  // The empty string hashes to the offset basis.
  EXPECT_EQ(Fnv1a32MethodId(""), 2166136261u);
}

}  // namespace
}  // namespace codegen
}  // namespace rfrpc
