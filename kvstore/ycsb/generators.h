// Copyright 2026 The rfrpc Authors.
//
// The number generators of YCSB's core workload, computing what Java YCSB's
// site.ycsb.generator classes compute, so results are comparable:
//
//   UniformLong        uniform over [lb, ub]
//   Counter            lb, lb+1, ... (atomic)
//   AcknowledgedCounter  a Counter whose Last() is the highest value below
//                      which every value was acknowledged (2^20-slot window)
//   Zipfian            Gray et al., "Quickly Generating Billion-Record
//                      Synthetic Databases" (SIGMOD'94), zeta incremental
//   ScrambledZipfian   Zipfian over 10^16 items (zeta = 26.46902820178302 for
//                      theta = 0.99), hashed with FNV-64 onto [min, max]
//   SkewedLatest       max - Zipfian(max): recent items are popular
//   Hotspot            x% of operations on the first y% of items
//   Exponential        -ln(U) / gamma
//   Sequential         lb, lb+1, ..., ub, lb, ... (atomic)
//   Discrete           weighted choice (the operation chooser)
//
// Randomness: every random generator draws from the caller's `Rng&`
// (std::mt19937_64), so one seed gives one sequence on every platform; each
// client thread owns its own Rng. Java's java.util.Random streams are not
// reproduced, only the distributions.
//
// Thread-safety: Next(rng) may be called concurrently on one generator (with a
// different Rng per thread) for all classes except Zipfian::Next(rng, count)
// with a changing count and SkewedLatest, which are single-threaded: give
// each thread its own (they are copyable).
//
// Example:
//
//   Rng rng(42);
//   ScrambledZipfian keys(0, 999999);
//   int64_t keynum = keys.Next(rng);
//   std::string key = BuildKeyName(keynum, KeyFormat{});

#ifndef RFRPC_KVSTORE_YCSB_GENERATORS_H_
#define RFRPC_KVSTORE_YCSB_GENERATORS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"

namespace rfrpc {
namespace ycsb {

using Rng = std::mt19937_64;

// A double uniform in [0, 1) with 53 random bits (like Java's nextDouble).
double NextUnitDouble(Rng& rng);

// An integer uniform in [0, n), without modulo bias. REQUIRES: n > 0.
uint64_t NextBelow(Rng& rng, uint64_t n);

inline constexpr uint64_t kFnvOffsetBasis64 = 0xCBF29CE484222325ULL;
inline constexpr uint64_t kFnvPrime64 = 1099511628211ULL;

// Java YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of `value`, least
// significant first, then made non-negative like Math.abs. The one input whose
// hash is 2^63 (Math.abs leaves Long.MIN_VALUE negative) maps to 0 here.
int64_t FnvHash64(int64_t value);

// Java's String.hashCode (UTF-16 code units; `s` is taken as Latin-1 bytes,
// which is exact for the ASCII keys and values YCSB builds).
int32_t JavaStringHashCode(const std::string& s);

// How record numbers become keys.
struct KeyFormat {
  // true: the number is FNV-64 hashed first (insertorder=hashed).
  // Default: true.
  bool hashed = true;
  // Minimum number of digits, zero-padded (zeropadding). Default: 1.
  int zeropadding = 1;
  // If > 0: the key is exactly this long, "user" plus the number zero-padded
  // to keylength - 4 digits or cut to its last keylength - 4 digits. Cutting
  // can map two numbers to one key (records then share a key, and with
  // dataintegrity still verify, since the value derives from the key).
  // REQUIRES: 0 or >= 5. Default: 0 (no fixed length).
  int keylength = 0;
};

// "user" + number, as CoreWorkload.buildKeyName (plus `keylength`).
std::string BuildKeyName(int64_t keynum, const KeyFormat& format);
// The same into `*key` (not null, overwritten), reusing its buffer: no
// allocation once it has held one key.
void BuildKeyName(int64_t keynum, const KeyFormat& format, std::string* key);

// A source of integers.
class NumberGenerator {
 public:
  virtual ~NumberGenerator() = default;
  virtual int64_t Next(Rng& rng) = 0;
};

class ConstantGenerator final : public NumberGenerator {
 public:
  explicit ConstantGenerator(int64_t value) : value_(value) {}
  int64_t Next(Rng&) override { return value_; }

 private:
  const int64_t value_;
};

// Uniform over [lb, ub]. REQUIRES: lb <= ub.
class UniformLong final : public NumberGenerator {
 public:
  UniformLong(int64_t lb, int64_t ub);
  int64_t Next(Rng& rng) override;
  int64_t lb() const { return lb_; }
  int64_t ub() const { return ub_; }

 private:
  const int64_t lb_;
  const int64_t ub_;
};

// start, start+1, ... Thread-safe.
class Counter : public NumberGenerator {
 public:
  explicit Counter(int64_t start) : next_(start) {}
  int64_t Next(Rng&) override { return Next(); }
  int64_t Next() { return next_.fetch_add(1, std::memory_order_relaxed); }
  // The last value handed out (start - 1 before the first).
  virtual int64_t Last() const {
    return next_.load(std::memory_order_relaxed) - 1;
  }

 private:
  std::atomic<int64_t> next_;
};

// A Counter whose Last() is the highest value v such that every value up to v
// was acknowledged, so readers never choose a key whose insert is still in
// flight (YCSB's AcknowledgedCounterGenerator). At most kWindowSize values may
// be outstanding. Thread-safe.
class AcknowledgedCounter final : public Counter {
 public:
  static constexpr int64_t kWindowSize = int64_t{1} << 20;

  explicit AcknowledgedCounter(int64_t start);
  int64_t Last() const override {
    return limit_.load(std::memory_order_acquire);
  }
  // Marks `value` (from Next()) done. ResourceExhausted if more than
  // kWindowSize values are outstanding.
  absl::Status Acknowledge(int64_t value);

 private:
  std::unique_ptr<std::atomic<bool>[]> window_;
  std::atomic<int64_t> limit_;
  Mutex mu_;  // Held by the one thread advancing limit_.
};

// Zipfian over [min, max]: min is the most popular, then min+1, ...
// Copyable; see the file comment on thread-safety.
class Zipfian final : public NumberGenerator {
 public:
  static constexpr double kDefaultConstant = 0.99;

  // Computes zeta over max - min + 1 items (O(items)).
  // REQUIRES: min <= max, theta > 0, theta != 1.
  Zipfian(int64_t min, int64_t max, double theta = kDefaultConstant);
  // Uses a precomputed zeta(max - min + 1, theta).
  Zipfian(int64_t min, int64_t max, double theta, double zetan);

  // Draws over the constructor's item count. Thread-safe (const state).
  int64_t Next(Rng& rng) override { return Draw(rng, items_); }
  // Draws over `itemcount` items, growing zeta incrementally when itemcount
  // grows (never shrinking it, like Java's default). Not thread-safe.
  int64_t Next(Rng& rng, int64_t itemcount);

  // sum_{i=st+1..n} 1/i^theta, plus initial_sum.
  static double Zeta(int64_t st, int64_t n, double theta, double initial_sum);

  double zetan() const { return zetan_; }

 private:
  int64_t Draw(Rng& rng, int64_t itemcount) const;

  int64_t items_;
  int64_t base_;
  double theta_;
  double zeta2theta_;
  double alpha_;
  double zetan_;
  double eta_;
  int64_t count_for_zeta_;
};

// Zipfian popularity scattered over [min, max] by FNV-64 hashing. With theta
// 0.99 this is Java's ScrambledZipfianGenerator exactly: a Zipfian over
// [0, 10^16] with the precomputed zeta, hashed modulo the item count. (That
// constant is Java's, not the true zeta(10^16, 0.99), which is about 45.1;
// it is kept so the key popularity matches Java YCSB's.) Java
// would compute zeta over 10^16 items for other constants (which never ends);
// here other constants use a Zipfian over the item count itself.
// Thread-safe.
class ScrambledZipfian final : public NumberGenerator {
 public:
  static constexpr double kZetan = 26.46902820178302;
  static constexpr int64_t kItemCount = 10000000000000000LL;

  // REQUIRES: min <= max.
  ScrambledZipfian(int64_t min, int64_t max,
                   double theta = Zipfian::kDefaultConstant);
  int64_t Next(Rng& rng) override;

 private:
  const int64_t min_;
  const int64_t itemcount_;
  Zipfian gen_;
};

// Favors the most recently inserted items: basis->Last() - Zipfian(Last()).
// Not thread-safe (one per thread); `basis` must outlive it.
// With one record (Last() == 0) it draws that one; the Zipfian is made
// again whenever the keys have more than doubled since it was made (its
// draws go past the item count when it has grown far beyond the count it
// was made for, e.g. from one record).
class SkewedLatest final : public NumberGenerator {
 public:
  // REQUIRES: basis->Last() >= 0.
  explicit SkewedLatest(const Counter* basis);
  int64_t Next(Rng& rng) override;

 private:
  const Counter* basis_;
  int64_t made_for_;  // The item count the Zipfian was made for.
  std::optional<Zipfian> zipfian_;
};

// `hot_opn_fraction` of draws are uniform over the first
// `hot_set_fraction` of [lb, ub], the rest uniform over the remainder.
// Thread-safe. REQUIRES: lb <= ub, fractions in [0, 1].
class Hotspot final : public NumberGenerator {
 public:
  Hotspot(int64_t lb, int64_t ub, double hot_set_fraction,
          double hot_opn_fraction);
  int64_t Next(Rng& rng) override;

 private:
  const int64_t lb_;
  int64_t hot_interval_;
  int64_t cold_interval_;
  const double hot_opn_fraction_;
};

// Exponentially distributed values: `percentile`% of draws fall below
// `range`. Thread-safe.
class Exponential final : public NumberGenerator {
 public:
  Exponential(double percentile, double range);
  double NextDouble(Rng& rng) const;
  // Truncated toward zero, as Java's intValue().
  int64_t Next(Rng& rng) override {
    return static_cast<int64_t>(NextDouble(rng));
  }
  double gamma() const { return gamma_; }

 private:
  double gamma_;
};

// lb, lb+1, ..., ub, lb, ... Thread-safe. REQUIRES: lb <= ub.
class Sequential final : public NumberGenerator {
 public:
  Sequential(int64_t lb, int64_t ub);
  int64_t Next(Rng&) override;

 private:
  const int64_t lb_;
  const int64_t interval_;
  std::atomic<int64_t> counter_{0};
};

// Chooses among values with given weights. Add all values before the first
// Next(); Next() is then thread-safe.
class Discrete {
 public:
  // REQUIRES: weight >= 0.
  void Add(double weight, int value);
  // REQUIRES: at least one positive weight.
  int Next(Rng& rng) const;

 private:
  std::vector<std::pair<double, int>> values_;
  double sum_ = 0.0;
};

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_GENERATORS_H_
