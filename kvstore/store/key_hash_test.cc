// Copyright 2026 The rfrpc Authors.
//
// KeyHash is part of the Jakiro protocol: these values pin it. They are the
// outputs of the reference xxHash library (XXH64) for the same inputs.

#include "kvstore/store/key_hash.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rfrpc {
namespace kvstore {
namespace {

TEST(KeyHashTest, KnownStrings) {
  EXPECT_EQ(KeyHash(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(KeyHash("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(KeyHash("abc"), 0x44BC2CF5AD770999ULL);
  EXPECT_EQ(KeyHash("0123456789abcdef"), 0x5C5B90C34E376D0BULL);
  EXPECT_EQ(KeyHash("message digest"), 0x066ED728FCEEB3BEULL);
  EXPECT_EQ(KeyHash("abcdefghijklmnopqrstuvwxyz"), 0xCFE1F278FA89835CULL);
  EXPECT_EQ(KeyHash("The quick brown fox jumps over the lazy dog"),
            0x0B242D361FDA71BCULL);
}

// A buffer whose prefixes cover every code path: the 1-, 4- and 8-byte tails
// and the 32-byte stripes.
std::string Pattern() {
  std::string buf(200, '\0');
  for (int i = 0; i < 200; ++i) buf[i] = static_cast<char>((i * 31 + 7) & 255);
  return buf;
}

struct Vector {
  size_t length;
  uint64_t seed0;
  uint64_t seed_golden;
};

TEST(KeyHashTest, KnownPrefixesAndSeeds) {
  const std::string buf = Pattern();
  constexpr uint64_t kSeed = 0x9E3779B97F4A7C15ULL;
  const std::vector<Vector> vectors = {
      {1, 0xa96c7f0ce858bbb7ULL, 0x585882422a6165e7ULL},
      {3, 0x56e6957632a487f9ULL, 0x5acb303e78133c22ULL},
      {4, 0xc60d15b1e3ff8f04ULL, 0x7d51d5e2461732b3ULL},
      {7, 0xafbefc3d6c6f9a8eULL, 0x2ce9adec2b2c8104ULL},
      {8, 0x3da5c7aa269683e0ULL, 0x758848f033fa76a2ULL},
      {12, 0x8fe8ab1c1fd0666eULL, 0xeaa6d4d803d21fd7ULL},
      {15, 0xae2a37eb9357caa7ULL, 0xa18d5c90d722cee3ULL},
      {16, 0xa19ad429b02bc413ULL, 0xe3594f9058b426e7ULL},
      {31, 0x4a74f3a1a39ad4a1ULL, 0x8137041f5af88413ULL},
      {32, 0x8d57d6a4671cc43dULL, 0x184ebcf3745cd46cULL},
      {33, 0x62c9fd21ed857664ULL, 0x52fac3c981f3cc2eULL},
      {63, 0x5c320a0d2707057fULL, 0x64ef99a2e94cc7bdULL},
      {64, 0x7bbabbc45729d17eULL, 0xf7f22435fe1ab128ULL},
      {100, 0xefa0ad2d3e70c151ULL, 0xbc7ab33be7528c18ULL},
      {200, 0x95d9a0c977b4b6fbULL, 0x1ea63f1abd71fb0bULL},
  };
  for (const Vector& v : vectors) {
    SCOPED_TRACE(v.length);
    EXPECT_EQ(XxHash64(buf.data(), v.length, 0), v.seed0);
    EXPECT_EQ(KeyHash(absl::string_view(buf.data(), v.length)), v.seed0);
    EXPECT_EQ(XxHash64(buf.data(), v.length, kSeed), v.seed_golden);
  }
}

// Every length 0..199 folded into one value, so no tail length is skipped.
TEST(KeyHashTest, AllLengthsFold) {
  const std::string buf = Pattern();
  uint64_t acc = 0;
  for (size_t n = 0; n < 200; ++n) {
    acc ^= XxHash64(buf.data(), n, 0);
    acc *= 0x100000001B3ULL;
  }
  EXPECT_EQ(acc, 0x967201ef2667b32cULL);
}

TEST(KeyHashTest, DoesNotDependOnAlignment) {
  const std::string buf = Pattern();
  std::string shifted = "x" + buf;
  for (size_t n : {5, 16, 40, 199}) {
    EXPECT_EQ(XxHash64(shifted.data() + 1, n, 0), XxHash64(buf.data(), n, 0));
  }
}

TEST(KeyHashTest, PartitionOfHashIsModulo) {
  EXPECT_EQ(PartitionOfHash(0, 1), 0u);
  EXPECT_EQ(PartitionOfHash(17, 5), 2u);
  EXPECT_EQ(PartitionOfHash(0xFFFFFFFFFFFFFFFFULL, 4), 3u);
  // Keys spread over partitions (a broken hash would pile them up).
  std::vector<int> counts(4, 0);
  for (int i = 0; i < 4000; ++i) {
    ++counts[PartitionOfHash(KeyHash("key" + std::to_string(i)), 4)];
  }
  for (int c : counts) {
    EXPECT_GT(c, 850);
    EXPECT_LT(c, 1150);
  }
}

}  // namespace
}  // namespace kvstore
}  // namespace rfrpc
