// Copyright 2026 The rfrpc Authors.

#include "transport/auth_token.h"

#include <string>

#include "gtest/gtest.h"

namespace rfrpc {
namespace transport {
namespace {

TEST(AuthTokenTest, NoRequiredTokenAcceptsAnyone) {
  EXPECT_TRUE(CheckAuthToken("", "", "pid 1").ok());
  EXPECT_TRUE(CheckAuthToken("", "whatever", "pid 1").ok());
}

TEST(AuthTokenTest, MatchingTokenIsAccepted) {
  EXPECT_TRUE(CheckAuthToken("s3cret", "s3cret", "pid 1").ok());
  const std::string with_nul("a\0b", 3);
  EXPECT_TRUE(CheckAuthToken(with_nul, with_nul, "pid 1").ok());
}

TEST(AuthTokenTest, MissingTokenIsUnauthenticated) {
  const absl::Status s = CheckAuthToken("s3cret", "", "pid 7");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(s.message(), "no auth token from pid 7 (the listener requires one)");
}

TEST(AuthTokenTest, WrongTokensAreUnauthenticated) {
  const std::string nul_suffix("s3cret\0", 7);
  for (const std::string& wrong :
       {std::string("s3creT"), std::string("S3cret"), std::string("s3cre"),
        std::string("s3cret!"), std::string("s3crets3cret"),
        std::string("x"), nul_suffix}) {
    const absl::Status s = CheckAuthToken("s3cret", wrong, "pid 7");
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << wrong;
    EXPECT_EQ(s.message(), "wrong auth token from pid 7") << wrong;
  }
}

TEST(AuthTokenTest, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(ConstantTimeEquals("a", "a"));
  EXPECT_TRUE(ConstantTimeEquals("abcdef", "abcdef"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", ""));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdeg"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "bbcdef"));
  // A repetition of the expected token is longer, so not equal.
  EXPECT_FALSE(ConstantTimeEquals("ab", "abab"));
  EXPECT_FALSE(ConstantTimeEquals("abab", "ab"));
  // Bytes that differ only in the high bit.
  EXPECT_FALSE(ConstantTimeEquals("\x01", "\x81"));
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc
