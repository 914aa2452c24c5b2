// Copyright 2026 The rfrpc Authors.

#include "base/integer_text.h"

#include "gtest/gtest.h"

namespace rfrpc {
namespace {

TEST(IntegerTextTest, ASignThenDigitsWithSpaceAround) {
  EXPECT_TRUE(IsIntegerText("0"));
  EXPECT_TRUE(IsIntegerText(" -12 "));
  EXPECT_TRUE(IsIntegerText("+7"));
  EXPECT_TRUE(IsIntegerText("99999999999999999999999"));  // Past int64.
  EXPECT_FALSE(IsIntegerText("-"));
  EXPECT_FALSE(IsIntegerText("1.0"));
  EXPECT_FALSE(IsIntegerText("1e3"));
  EXPECT_FALSE(IsIntegerText("0x10"));
  EXPECT_FALSE(IsIntegerText("- 1"));
  EXPECT_FALSE(IsIntegerText(""));
  EXPECT_FALSE(IsIntegerText("  "));
}

}  // namespace
}  // namespace rfrpc
