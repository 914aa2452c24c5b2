// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/generators.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace rfrpc {
namespace ycsb {

double NextUnitDouble(Rng& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

uint64_t NextBelow(Rng& rng, uint64_t n) {
  DCHECK_GT(n, 0u);
  // Reject the top partial copy of [0, n) so every residue is equally likely.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % n;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return r % n;
}

int64_t FnvHash64(int64_t value) {
  uint64_t v = static_cast<uint64_t>(value);
  uint64_t hash = kFnvOffsetBasis64;
  for (int i = 0; i < 8; ++i) {
    hash ^= v & 0xff;
    hash *= kFnvPrime64;
    v >>= 8;
  }
  // Math.abs on the two's-complement value.
  if (hash >> 63) hash = ~hash + 1;
  if (hash >> 63) return 0;  // Only 2^63 itself; see the header.
  return static_cast<int64_t>(hash);
}

int32_t JavaStringHashCode(const std::string& s) {
  uint32_t h = 0;
  for (unsigned char c : s) h = 31 * h + c;
  return static_cast<int32_t>(h);
}

std::string BuildKeyName(int64_t keynum, const KeyFormat& format) {
  std::string key;
  BuildKeyName(keynum, format, &key);
  return key;
}

void BuildKeyName(int64_t keynum, const KeyFormat& format, std::string* key) {
  if (format.hashed) keynum = FnvHash64(keynum);
  // The decimal digits, written backwards from the end of `buf` (a '-' first
  // for a negative number, as StrCat prints it).
  static constexpr char kPairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536"
      "37383940414243444546474849505152535455565758596061626364656667686970717273"
      "7475767778798081828384858687888990919293949596979899";
  char buf[24];
  char* const end = buf + sizeof(buf);
  char* p = end;
  uint64_t v = keynum < 0 ? 0 - static_cast<uint64_t>(keynum)
                          : static_cast<uint64_t>(keynum);
  while (v >= 100) {  // Two digits per division.
    const size_t pair = static_cast<size_t>(v % 100) * 2;
    v /= 100;
    p -= 2;
    p[0] = kPairs[pair];
    p[1] = kPairs[pair + 1];
  }
  if (v >= 10) {
    p -= 2;
    p[0] = kPairs[v * 2];
    p[1] = kPairs[v * 2 + 1];
  } else {
    *--p = static_cast<char>('0' + v);
  }
  if (keynum < 0) *--p = '-';
  absl::string_view digits(p, static_cast<size_t>(end - p));
  size_t width = static_cast<size_t>(std::max(format.zeropadding, 0));
  if (format.keylength > 0) {
    width = static_cast<size_t>(format.keylength - 4);
    if (digits.size() > width) digits.remove_prefix(digits.size() - width);
  }
  key->assign("user", 4);
  if (digits.size() < width) key->append(width - digits.size(), '0');
  key->append(digits.data(), digits.size());
}

UniformLong::UniformLong(int64_t lb, int64_t ub) : lb_(lb), ub_(ub) {
  CHECK_LE(lb, ub);
}

int64_t UniformLong::Next(Rng& rng) {
  const uint64_t span = static_cast<uint64_t>(ub_) - static_cast<uint64_t>(lb_);
  if (span == std::numeric_limits<uint64_t>::max()) {
    return static_cast<int64_t>(rng());
  }
  return static_cast<int64_t>(static_cast<uint64_t>(lb_) +
                              NextBelow(rng, span + 1));
}

AcknowledgedCounter::AcknowledgedCounter(int64_t start)
    : Counter(start),
      window_(new std::atomic<bool>[kWindowSize]),
      limit_(start - 1) {
  for (int64_t i = 0; i < kWindowSize; ++i) {
    window_[i].store(false, std::memory_order_relaxed);
  }
}

absl::Status AcknowledgedCounter::Acknowledge(int64_t value) {
  constexpr int64_t kMask = kWindowSize - 1;
  // Java only notices a full window when the slot is still set; checking the
  // distance to the limit also catches a value landing on the empty slot of
  // a pending one, which would later be mistaken for it.
  if (value - limit_.load(std::memory_order_acquire) > kWindowSize ||
      window_[value & kMask].exchange(true, std::memory_order_acq_rel)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many unacknowledged insertion keys (window ", kWindowSize,
        ") at ", value));
  }
  // Whoever gets the lock moves the contiguous acknowledged run into limit_;
  // a value acknowledged while another thread scans is picked up by the next
  // acknowledgement.
  if (mu_.TryLock()) {
    const int64_t first = limit_.load(std::memory_order_relaxed) + 1;
    int64_t index = first;
    while (index - first < kWindowSize) {
      std::atomic<bool>& slot = window_[index & kMask];
      if (!slot.load(std::memory_order_acquire)) break;
      slot.store(false, std::memory_order_release);
      ++index;
    }
    limit_.store(index - 1, std::memory_order_release);
    mu_.Unlock();
  }
  return absl::OkStatus();
}

double Zipfian::Zeta(int64_t st, int64_t n, double theta, double initial_sum) {
  double sum = initial_sum;
  for (int64_t i = st; i < n; ++i) {
    sum += 1.0 / std::pow(static_cast<double>(i + 1), theta);
  }
  return sum;
}

Zipfian::Zipfian(int64_t min, int64_t max, double theta)
    : Zipfian(min, max, theta, Zeta(0, max - min + 1, theta, 0.0)) {}

Zipfian::Zipfian(int64_t min, int64_t max, double theta, double zetan)
    : items_(max - min + 1),
      base_(min),
      theta_(theta),
      zeta2theta_(Zeta(0, 2, theta, 0.0)),
      alpha_(1.0 / (1.0 - theta)),
      zetan_(zetan),
      count_for_zeta_(max - min + 1) {
  CHECK_LE(min, max);
  CHECK_GT(theta, 0.0);
  CHECK_NE(theta, 1.0);
  eta_ = (1.0 - std::pow(2.0 / static_cast<double>(items_), 1.0 - theta_)) /
         (1.0 - zeta2theta_ / zetan_);
}

int64_t Zipfian::Next(Rng& rng, int64_t itemcount) {
  if (itemcount > count_for_zeta_) {
    zetan_ = Zeta(count_for_zeta_, itemcount, theta_, zetan_);
    count_for_zeta_ = itemcount;
    // Java recomputes eta with the constructor's item count, not itemcount;
    // kept so the distribution matches Java YCSB's.
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(items_), 1.0 - theta_)) /
           (1.0 - zeta2theta_ / zetan_);
  }
  return Draw(rng, itemcount);
}

int64_t Zipfian::Draw(Rng& rng, int64_t itemcount) const {
  const double u = NextUnitDouble(rng);
  const double uz = u * zetan_;
  if (uz < 1.0) return base_;
  if (uz < 1.0 + std::pow(0.5, theta_)) return base_ + 1;
  return base_ + static_cast<int64_t>(static_cast<double>(itemcount) *
                                      std::pow(eta_ * u - eta_ + 1.0, alpha_));
}

ScrambledZipfian::ScrambledZipfian(int64_t min, int64_t max, double theta)
    : min_(min),
      itemcount_(max - min + 1),
      gen_(theta == Zipfian::kDefaultConstant
               ? Zipfian(0, kItemCount, theta, kZetan)
               : Zipfian(0, max - min, theta)) {
  CHECK_LE(min, max);
}

int64_t ScrambledZipfian::Next(Rng& rng) {
  return min_ + FnvHash64(gen_.Next(rng)) % itemcount_;
}

// Zipfian over the Last() keys below the latest, as Java YCSB's.
SkewedLatest::SkewedLatest(const Counter* basis)
    : basis_(basis), made_for_(basis->Last()) {
  if (made_for_ >= 1) zipfian_.emplace(0, made_for_ - 1);
}

int64_t SkewedLatest::Next(Rng& rng) {
  const int64_t max = basis_->Last();
  if (max <= 0) return max;  // One key (or none yet): the latest.
  if (!zipfian_.has_value() || max > 2 * made_for_) {
    made_for_ = max;
    zipfian_.emplace(0, max - 1);
  }
  return max - zipfian_->Next(rng, max);
}

Hotspot::Hotspot(int64_t lb, int64_t ub, double hot_set_fraction,
                 double hot_opn_fraction)
    : lb_(lb), hot_opn_fraction_(hot_opn_fraction) {
  CHECK_LE(lb, ub);
  const int64_t interval = ub - lb + 1;
  hot_interval_ =
      static_cast<int64_t>(static_cast<double>(interval) * hot_set_fraction);
  cold_interval_ = interval - hot_interval_;
}

int64_t Hotspot::Next(Rng& rng) {
  const bool hot = NextUnitDouble(rng) < hot_opn_fraction_;
  // An empty set (fraction 0 or 1) sends every draw to the other one.
  if ((hot && hot_interval_ > 0) || cold_interval_ == 0) {
    return lb_ + static_cast<int64_t>(NextBelow(rng, hot_interval_));
  }
  return lb_ + hot_interval_ +
         static_cast<int64_t>(NextBelow(rng, cold_interval_));
}

Exponential::Exponential(double percentile, double range)
    : gamma_(-std::log(1.0 - percentile / 100.0) / range) {}

double Exponential::NextDouble(Rng& rng) const {
  // 1 - U is in (0, 1], so the logarithm is finite.
  return -std::log(1.0 - NextUnitDouble(rng)) / gamma_;
}

Sequential::Sequential(int64_t lb, int64_t ub)
    : lb_(lb), interval_(ub - lb + 1) {
  CHECK_LE(lb, ub);
}

int64_t Sequential::Next(Rng&) {
  return lb_ + counter_.fetch_add(1, std::memory_order_relaxed) % interval_;
}

void Discrete::Add(double weight, int value) {
  CHECK_GE(weight, 0.0);
  values_.emplace_back(weight, value);
  sum_ += weight;
}

int Discrete::Next(Rng& rng) const {
  CHECK_GT(sum_, 0.0);
  double val = NextUnitDouble(rng) * sum_;
  int last = values_.front().second;
  for (const auto& [weight, value] : values_) {
    if (weight <= 0.0) continue;
    if (val < weight) return value;
    val -= weight;
    last = value;
  }
  return last;  // Rounding left val >= the last weight.
}

}  // namespace ycsb
}  // namespace rfrpc
