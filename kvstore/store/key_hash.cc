// Copyright 2026 The rfrpc Authors.
//
// XXH64, written from the public xxHash specification.

#include "kvstore/store/key_hash.h"

#include <cstring>

namespace rfrpc {
namespace kvstore {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

inline uint64_t RotateLeft(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

// The specification reads input words as little-endian.
inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

inline uint32_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

inline uint64_t Round(uint64_t acc, uint64_t lane) {
  acc += lane * kPrime2;
  acc = RotateLeft(acc, 31);
  return acc * kPrime1;
}

inline uint64_t MergeAccumulator(uint64_t acc, uint64_t v) {
  acc ^= Round(0, v);
  return acc * kPrime1 + kPrime4;
}

}  // namespace

uint64_t XxHash64(const void* data, size_t size, uint64_t seed) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  const unsigned char* const end = p + size;
  uint64_t h;

  if (size >= 32) {
    // Four lanes over 32-byte stripes.
    uint64_t v1 = seed + kPrime1 + kPrime2;
    uint64_t v2 = seed + kPrime2;
    uint64_t v3 = seed;
    uint64_t v4 = seed - kPrime1;
    const unsigned char* const limit = end - 32;
    do {
      v1 = Round(v1, Load64(p));
      v2 = Round(v2, Load64(p + 8));
      v3 = Round(v3, Load64(p + 16));
      v4 = Round(v4, Load64(p + 24));
      p += 32;
    } while (p <= limit);
    h = RotateLeft(v1, 1) + RotateLeft(v2, 7) + RotateLeft(v3, 12) +
        RotateLeft(v4, 18);
    h = MergeAccumulator(h, v1);
    h = MergeAccumulator(h, v2);
    h = MergeAccumulator(h, v3);
    h = MergeAccumulator(h, v4);
  } else {
    h = seed + kPrime5;
  }

  h += static_cast<uint64_t>(size);

  // The remaining 0..31 bytes: 8 at a time, then 4, then 1.
  while (end - p >= 8) {
    h ^= Round(0, Load64(p));
    h = RotateLeft(h, 27) * kPrime1 + kPrime4;
    p += 8;
  }
  if (end - p >= 4) {
    h ^= static_cast<uint64_t>(Load32(p)) * kPrime1;
    h = RotateLeft(h, 23) * kPrime2 + kPrime3;
    p += 4;
  }
  while (p < end) {
    h ^= static_cast<uint64_t>(*p) * kPrime5;
    h = RotateLeft(h, 11) * kPrime1;
    ++p;
  }

  // Final avalanche.
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

}  // namespace kvstore
}  // namespace rfrpc
