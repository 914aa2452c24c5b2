// Copyright 2026 The rfrpc Authors.

#include "kvstore/store/partition.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "kvstore/store/key_hash.h"

namespace rfrpc {
namespace kvstore {
namespace {

constexpr size_t kUnit = 8;  // arena locations are in 8-byte units
constexpr uint32_t kNil = 0xFFFFFFFFu;
constexpr size_t kMinSegments = 4;
constexpr size_t kMinDerivedSegmentBytes = size_t{1} << 20;
constexpr size_t kSegmentGranularity = 4096;

// Slot word: [63] valid, [62:60] rank, [59:44] tag, [43:0] location.
constexpr uint64_t kValidBit = uint64_t{1} << 63;
constexpr int kRankShift = 60;
constexpr uint64_t kRankMask = uint64_t{7} << kRankShift;
constexpr int kTagShift = 44;
constexpr uint64_t kTagMask = uint64_t{0xFFFF} << kTagShift;
constexpr uint64_t kLocationMask = (uint64_t{1} << kTagShift) - 1;

inline bool SlotValid(uint64_t s) { return (s & kValidBit) != 0; }
inline int SlotRank(uint64_t s) {
  return static_cast<int>((s & kRankMask) >> kRankShift);
}
inline uint64_t WithRank(uint64_t s, int rank) {
  return (s & ~kRankMask) | (static_cast<uint64_t>(rank) << kRankShift);
}
inline uint64_t TagOfHash(uint64_t hash) { return (hash >> 16) & 0xFFFF; }
inline uint64_t SlotTag(uint64_t s) { return (s & kTagMask) >> kTagShift; }
inline uint32_t SlotLocation(uint64_t s) {
  return static_cast<uint32_t>(s & kLocationMask);
}

size_t RoundUp(size_t x, size_t m) { return (x + m - 1) / m * m; }

size_t NextPowerOfTwo(size_t x) {
  size_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

uint64_t DefaultHash(absl::string_view key) { return KeyHash(key); }

}  // namespace

// An item in the arena: this header, then the key bytes, then the value
// bytes, then padding to 8 bytes.
struct Partition::ItemHeader {
  uint32_t value_bytes;
  uint8_t key_bytes;
  uint8_t live;  // 1 while indexed; 0 once overwritten, deleted or evicted
  uint16_t unused;
  uint32_t lru_prev;  // towards the front (more recent), or kNil
  uint32_t lru_next;  // towards the back (less recent), or kNil

  char* key_data() { return reinterpret_cast<char*>(this + 1); }
  absl::string_view key() { return absl::string_view(key_data(), key_bytes); }
  char* value_data() { return key_data() + key_bytes; }
  absl::string_view value() {
    return absl::string_view(value_data(), value_bytes);
  }
  size_t footprint() const { return ItemFootprint(key_bytes, value_bytes); }
};
size_t Partition::ItemFootprint(size_t key_bytes, size_t value_bytes) {
  static_assert(sizeof(ItemHeader) == 16, "item header is 16 bytes");
  return RoundUp(sizeof(ItemHeader) + key_bytes + value_bytes, kUnit);
}

absl::StatusOr<std::unique_ptr<Partition>> Partition::Create(
    const PartitionOptions& options) {
  if (options.max_value_bytes > 0xFFFFFFFFu) {
    return absl::InvalidArgumentError("max_value_bytes must be below 4 GiB");
  }
  size_t segment_bytes = options.segment_bytes;
  if (segment_bytes == 0) {
    const size_t largest = ItemFootprint(kMaxKeyBytes, options.max_value_bytes);
    segment_bytes = std::max(kMinDerivedSegmentBytes,
                             RoundUp(largest, kSegmentGranularity));
    segment_bytes =
        std::min(segment_bytes, options.memory_bytes / kMinSegments);
  }
  segment_bytes = segment_bytes / kUnit * kUnit;
  if (segment_bytes < ItemFootprint(1, 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "segment_bytes ", segment_bytes, " cannot hold even an empty item"));
  }
  const size_t num_segments = options.memory_bytes / segment_bytes;
  if (num_segments < kMinSegments) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_bytes ", options.memory_bytes, " holds ",
                     num_segments, " segments of ", segment_bytes,
                     " bytes; at least ", kMinSegments, " are needed"));
  }
  if (num_segments * segment_bytes / kUnit >= kNil) {
    return absl::InvalidArgumentError("memory_bytes must be below 32 GiB");
  }
  if (options.min_reclaim_percent < 0 || options.min_reclaim_percent > 100) {
    return absl::InvalidArgumentError(
        "min_reclaim_percent must be in [0, 100]");
  }
  size_t num_buckets = options.num_buckets;
  if (num_buckets == 0)
    num_buckets = std::max<size_t>(1, options.memory_bytes / 256);
  if (num_buckets > (size_t{1} << 32)) {
    return absl::InvalidArgumentError("num_buckets must be at most 2^32");
  }
  num_buckets = NextPowerOfTwo(num_buckets);
  absl::StatusOr<HugePageBuffer> index =
      HugePageBuffer::Allocate(num_buckets * sizeof(Bucket));
  if (!index.ok()) return index.status();
  absl::StatusOr<HugePageBuffer> arena =
      HugePageBuffer::Allocate(num_segments * segment_bytes);
  if (!arena.ok()) return arena.status();
  return std::unique_ptr<Partition>(
      new Partition(options, num_buckets, segment_bytes, num_segments,
                    std::move(*index), std::move(*arena)));
}

Partition::Partition(const PartitionOptions& options, size_t num_buckets,
                     size_t segment_bytes, size_t num_segments,
                     HugePageBuffer index, HugePageBuffer arena)
    : hash_(options.hash != nullptr ? options.hash : &DefaultHash),
      max_value_bytes_(options.max_value_bytes),
      segment_bytes_(segment_bytes),
      min_reclaim_bytes_(segment_bytes / 100 * options.min_reclaim_percent),
      bucket_mask_(num_buckets - 1),
      index_(std::move(index)),
      // A fresh mapping is zero-filled: every slot starts invalid.
      buckets_(reinterpret_cast<Bucket*>(index_.data())),
      num_buckets_(num_buckets),
      arena_(std::move(arena)),
      arena_bytes_(num_segments * segment_bytes),
      segments_(num_segments),
      lru_front_(kNil),
      lru_back_(kNil) {
  // Pop order: segment 0 first.
  for (size_t i = num_segments; i-- > 0;) free_segments_.push_back(i);
  OpenHead();
  stats_.arena_bytes = arena_bytes_;
  stats_.index_bytes = num_buckets * sizeof(Bucket);
}

Partition::~Partition() = default;

absl::Status Partition::ValidateKey(absl::string_view key) const {
  if (key.empty()) return absl::InvalidArgumentError("empty key");
  if (key.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("key of ", key.size(), " bytes exceeds ", kMaxKeyBytes));
  }
  return absl::OkStatus();
}

size_t Partition::BucketOf(absl::string_view key) const {
  return (Hash(key) >> 32) & bucket_mask_;
}

// ---------------------------------------------------------------------------
// Buckets.

int Partition::FindSlot(const Bucket& bucket, uint64_t hash,
                        absl::string_view key) const {
  const uint64_t tag = TagOfHash(hash);
  for (int i = 0; i < kSlotsPerBucket; ++i) {
    const uint64_t s = bucket.slots[i];
    if (!SlotValid(s) || SlotTag(s) != tag) continue;
    if (ItemAt(SlotLocation(s))->key() == key) return i;
  }
  return -1;
}

int Partition::FindSlotByLocation(const Bucket& bucket, uint32_t unit) {
  for (int i = 0; i < kSlotsPerBucket; ++i) {
    const uint64_t s = bucket.slots[i];
    if (SlotValid(s) && SlotLocation(s) == unit) return i;
  }
  return -1;
}

void Partition::TouchSlot(Bucket& bucket, int i) {
  const int rank = SlotRank(bucket.slots[i]);
  if (rank == 0) return;
  for (uint64_t& s : bucket.slots) {
    if (SlotValid(s) && SlotRank(s) < rank) s = WithRank(s, SlotRank(s) + 1);
  }
  bucket.slots[i] = WithRank(bucket.slots[i], 0);
}

void Partition::FillSlot(Bucket& bucket, int i, uint64_t hash, uint32_t unit) {
  DCHECK(!SlotValid(bucket.slots[i]));
  for (uint64_t& s : bucket.slots) {
    if (SlotValid(s)) s = WithRank(s, SlotRank(s) + 1);
  }
  bucket.slots[i] = kValidBit | (TagOfHash(hash) << kTagShift) | unit;
}

void Partition::ClearSlot(Bucket& bucket, int i) {
  const int rank = SlotRank(bucket.slots[i]);
  bucket.slots[i] = 0;
  for (uint64_t& s : bucket.slots) {
    if (SlotValid(s) && SlotRank(s) > rank) s = WithRank(s, SlotRank(s) - 1);
  }
}

int Partition::LruSlot(const Bucket& bucket) {
  int lru = -1;
  for (int i = 0; i < kSlotsPerBucket; ++i) {
    const uint64_t s = bucket.slots[i];
    if (SlotValid(s) &&
        (lru < 0 || SlotRank(s) > SlotRank(bucket.slots[lru]))) {
      lru = i;
    }
  }
  return lru;
}

int Partition::EmptySlot(const Bucket& bucket) {
  for (int i = 0; i < kSlotsPerBucket; ++i) {
    if (!SlotValid(bucket.slots[i])) return i;
  }
  return -1;
}

// ---------------------------------------------------------------------------
// Items and the global LRU list.

Partition::ItemHeader* Partition::ItemAt(uint32_t unit) const {
  return reinterpret_cast<ItemHeader*>(arena_.data() + size_t{unit} * kUnit);
}

size_t Partition::SegmentOf(uint32_t unit) const {
  return size_t{unit} * kUnit / segment_bytes_;
}

void Partition::LruUnlink(uint32_t unit) {
  ItemHeader* item = ItemAt(unit);
  if (item->lru_prev != kNil) {
    ItemAt(item->lru_prev)->lru_next = item->lru_next;
  } else {
    lru_front_ = item->lru_next;
  }
  if (item->lru_next != kNil) {
    ItemAt(item->lru_next)->lru_prev = item->lru_prev;
  } else {
    lru_back_ = item->lru_prev;
  }
}

void Partition::LruPushFront(uint32_t unit) {
  ItemHeader* item = ItemAt(unit);
  item->lru_prev = kNil;
  item->lru_next = lru_front_;
  if (lru_front_ != kNil) {
    ItemAt(lru_front_)->lru_prev = unit;
  } else {
    lru_back_ = unit;
  }
  lru_front_ = unit;
}

void Partition::RemoveItem(Bucket& bucket, int i) {
  const uint32_t unit = SlotLocation(bucket.slots[i]);
  ItemHeader* item = ItemAt(unit);
  const size_t footprint = item->footprint();
  LruUnlink(unit);
  item->live = 0;
  ClearSlot(bucket, i);
  segments_[SegmentOf(unit)].live -= footprint;
  --stats_.items;
  stats_.live_bytes -= footprint;
}

size_t Partition::EvictLru() {
  CHECK_NE(lru_back_, kNil) << "eviction from an empty partition";
  const uint32_t unit = lru_back_;
  ItemHeader* item = ItemAt(unit);
  Bucket& bucket = BucketFor(Hash(item->key()));
  const int i = FindSlotByLocation(bucket, unit);
  CHECK_GE(i, 0) << "live item missing from its bucket";
  RemoveItem(bucket, i);
  ++stats_.evictions_memory;
  return SegmentOf(unit);
}

// ---------------------------------------------------------------------------
// Arena.

void Partition::OpenHead() {
  CHECK(!free_segments_.empty());
  head_ = free_segments_.back();
  free_segments_.pop_back();
  Segment& seg = segments_[head_];
  DCHECK_EQ(seg.used, 0u);
  DCHECK_EQ(seg.live, 0u);
  seg.state = SegmentState::kHead;
}

uint32_t Partition::Allocate(size_t footprint) {
  DCHECK_LE(footprint, segment_bytes_);
  if (segments_[head_].used + footprint > segment_bytes_) {
    // Seal the head. One free segment always stays in reserve; if that is
    // the only one, it becomes the head and a sealed segment is compacted
    // into it, which frees that segment as the next reserve.
    segments_[head_].state = SegmentState::kSealed;
    const bool must_compact = free_segments_.size() == 1;
    OpenHead();
    if (must_compact) {
      // Compact only a segment whose compaction frees room for the item and
      // at least min_reclaim_bytes_: copying a nearly full segment to gain a
      // few bytes would make every insert copy a whole segment.
      const size_t room =
          segment_bytes_ - std::max(footprint, min_reclaim_bytes_);
      size_t victim = segments_.size();
      for (size_t s = 0; s < segments_.size(); ++s) {
        if (segments_[s].state != SegmentState::kSealed) continue;
        if (victim == segments_.size() ||
            segments_[s].live < segments_[victim].live) {
          victim = s;
        }
      }
      DCHECK_LT(victim, segments_.size());
      if (segments_[victim].live > room) {
        // Every sealed segment is too full: evict in LRU order until one is
        // not. Only the evicted item's segment changes, so test just it. The
        // new head is empty, so every item is in a sealed segment.
        do {
          victim = EvictLru();
        } while (segments_[victim].live > room);
      }
      Compact(victim);
    }
  }
  Segment& head = segments_[head_];
  const size_t offset = head_ * segment_bytes_ + head.used;
  head.used += footprint;
  return static_cast<uint32_t>(offset / kUnit);
}

void Partition::Compact(size_t victim) {
  Segment& seg = segments_[victim];
  DCHECK(seg.state == SegmentState::kSealed);
  Segment& head = segments_[head_];
  CHECK_LE(head.used + seg.live, segment_bytes_);
  char* const base = arena_.data() + victim * segment_bytes_;
  size_t offset = 0;
  while (offset < seg.used) {
    ItemHeader* item = reinterpret_cast<ItemHeader*>(base + offset);
    const size_t footprint = item->footprint();
    offset += footprint;
    if (!item->live) continue;
    const uint32_t from = static_cast<uint32_t>(
        (victim * segment_bytes_ + offset - footprint) / kUnit);
    const size_t to_offset = head_ * segment_bytes_ + head.used;
    const uint32_t to = static_cast<uint32_t>(to_offset / kUnit);
    std::memcpy(arena_.data() + to_offset, item, footprint);
    head.used += footprint;
    head.live += footprint;
    item->live = 0;
    // Re-point the LRU neighbours and the slot at the copy.
    ItemHeader* moved = ItemAt(to);
    if (moved->lru_prev != kNil) {
      ItemAt(moved->lru_prev)->lru_next = to;
    } else {
      lru_front_ = to;
    }
    if (moved->lru_next != kNil) {
      ItemAt(moved->lru_next)->lru_prev = to;
    } else {
      lru_back_ = to;
    }
    Bucket& bucket = BucketFor(Hash(moved->key()));
    const int i = FindSlotByLocation(bucket, from);
    CHECK_GE(i, 0) << "live item missing from its bucket";
    bucket.slots[i] = (bucket.slots[i] & ~kLocationMask) | to;
    stats_.compacted_bytes += footprint;
  }
  seg.used = 0;
  seg.live = 0;
  seg.state = SegmentState::kFree;
  free_segments_.push_back(victim);
  ++stats_.compactions;
}

// ---------------------------------------------------------------------------
// Data path.

absl::StatusOr<absl::string_view> Partition::GetView(absl::string_view key) {
  absl::Status valid = ValidateKey(key);
  if (!valid.ok()) return valid;
  const uint64_t hash = Hash(key);
  Bucket& bucket = BucketFor(hash);
  const int i = FindSlot(bucket, hash, key);
  if (i < 0) {
    ++stats_.misses;
    return absl::NotFoundError("key not found");
  }
  ++stats_.hits;
  TouchSlot(bucket, i);
  const uint32_t unit = SlotLocation(bucket.slots[i]);
  if (lru_front_ != unit) {
    LruUnlink(unit);
    LruPushFront(unit);
  }
  return ItemAt(unit)->value();
}

absl::Status Partition::Get(absl::string_view key, std::string* value) {
  DCHECK(value != nullptr);
  absl::StatusOr<absl::string_view> view = GetView(key);
  if (!view.ok()) return view.status();
  value->assign(view->data(), view->size());
  return absl::OkStatus();
}

absl::Status Partition::Put(absl::string_view key, absl::string_view value) {
  absl::Status valid = ValidateKey(key);
  if (!valid.ok()) return valid;
  if (value.size() > max_value_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "value of ", value.size(), " bytes exceeds ", max_value_bytes_));
  }
  const size_t footprint = ItemFootprint(key.size(), value.size());
  if (footprint > segment_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("item of ", footprint, " bytes exceeds the segment size ",
                     segment_bytes_, " of this partition"));
  }
  // Allocation may evict or move items; if the arguments point into the
  // arena (say, a view from GetView), copy them out first.
  const auto in_arena = [this](absl::string_view s) {
    const std::less<const char*> less;
    return !s.empty() && !less(s.data(), arena_.data()) &&
           less(s.data(), arena_.data() + arena_bytes_);
  };
  if (in_arena(key) || in_arena(value)) {
    const std::string key_copy(key);
    const std::string value_copy(value);
    return Put(key_copy, value_copy);
  }

  const uint64_t hash = Hash(key);
  Bucket& bucket = BucketFor(hash);
  int i = FindSlot(bucket, hash, key);
  if (i >= 0) {
    const uint32_t unit = SlotLocation(bucket.slots[i]);
    ItemHeader* item = ItemAt(unit);
    if (item->value_bytes == value.size()) {
      // Same footprint: overwrite in place.
      if (!value.empty())
        std::memcpy(item->value_data(), value.data(), value.size());
      TouchSlot(bucket, i);
      if (lru_front_ != unit) {
        LruUnlink(unit);
        LruPushFront(unit);
      }
      ++stats_.puts;
      return absl::OkStatus();
    }
    RemoveItem(bucket, i);
  } else if (EmptySlot(bucket) < 0) {
    RemoveItem(bucket, LruSlot(bucket));
    ++stats_.evictions_bucket_full;
  }

  const uint32_t unit = Allocate(footprint);
  ItemHeader* item = ItemAt(unit);
  item->value_bytes = static_cast<uint32_t>(value.size());
  item->key_bytes = static_cast<uint8_t>(key.size());
  item->live = 1;
  item->unused = 0;
  std::memcpy(item->key_data(), key.data(), key.size());
  if (!value.empty())
    std::memcpy(item->value_data(), value.data(), value.size());
  LruPushFront(unit);
  segments_[head_].live += footprint;
  // Allocation only ever removes items, so the slot freed above is still
  // free (and maybe others).
  i = EmptySlot(bucket);
  DCHECK_GE(i, 0);
  FillSlot(bucket, i, hash, unit);
  ++stats_.items;
  stats_.live_bytes += footprint;
  ++stats_.puts;
  return absl::OkStatus();
}

absl::Status Partition::Delete(absl::string_view key) {
  absl::Status valid = ValidateKey(key);
  if (!valid.ok()) return valid;
  const uint64_t hash = Hash(key);
  Bucket& bucket = BucketFor(hash);
  const int i = FindSlot(bucket, hash, key);
  if (i < 0) return absl::NotFoundError("key not found");
  RemoveItem(bucket, i);
  ++stats_.deletes;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Invariants (tests only).

absl::Status Partition::CheckInvariants() const {
  const auto fail = [](auto&&... parts) {
    return absl::InternalError(absl::StrCat(parts...));
  };
  // Buckets: ranks are a permutation; slots point at live items that hash
  // here with the right tag.
  uint64_t slots_in_use = 0;
  for (size_t b = 0; b < num_buckets_; ++b) {
    const Bucket& bucket = buckets_[b];
    int valid = 0;
    unsigned rank_seen = 0;
    for (int i = 0; i < kSlotsPerBucket; ++i) {
      const uint64_t s = bucket.slots[i];
      if (!SlotValid(s)) {
        if (s != 0) return fail("bucket ", b, " slot ", i, " not cleared");
        continue;
      }
      ++valid;
      rank_seen |= 1u << SlotRank(s);
      const uint32_t unit = SlotLocation(s);
      if (size_t{unit} * kUnit >= arena_bytes_) {
        return fail("bucket ", b, " slot ", i, " points outside the arena");
      }
      ItemHeader* item = ItemAt(unit);
      if (!item->live) return fail("bucket ", b, " slot ", i, " -> dead item");
      const uint64_t hash = Hash(item->key());
      if (((hash >> 32) & bucket_mask_) != b || TagOfHash(hash) != SlotTag(s)) {
        return fail("item ", item->key(), " in wrong bucket or with bad tag");
      }
      if (segments_[SegmentOf(unit)].state == SegmentState::kFree) {
        return fail("item ", item->key(), " in a free segment");
      }
    }
    if (rank_seen != (1u << valid) - 1) {
      return fail("bucket ", b, " ranks are not a permutation of 0..",
                  valid - 1);
    }
    slots_in_use += valid;
  }
  if (slots_in_use != stats_.items) {
    return fail(slots_in_use, " slots in use but stats say ", stats_.items);
  }
  // LRU list: every live item exactly once, links consistent.
  uint64_t listed = 0;
  uint64_t listed_bytes = 0;
  uint32_t prev = kNil;
  for (uint32_t u = lru_front_; u != kNil; u = ItemAt(u)->lru_next) {
    ItemHeader* item = ItemAt(u);
    if (item->lru_prev != prev) return fail("LRU back link broken at ", u);
    if (!item->live) return fail("dead item on the LRU list");
    if (++listed > stats_.items) return fail("LRU list longer than items");
    listed_bytes += item->footprint();
    prev = u;
  }
  if (prev != lru_back_) return fail("LRU back pointer wrong");
  if (listed != stats_.items || listed_bytes != stats_.live_bytes) {
    return fail("LRU list has ", listed, " items / ", listed_bytes,
                " bytes; stats say ", stats_.items, " / ", stats_.live_bytes);
  }
  // Segments: walk every item; live bytes add up.
  uint64_t live_total = 0;
  size_t free_count = 0;
  size_t heads = 0;
  for (size_t s = 0; s < segments_.size(); ++s) {
    const Segment& seg = segments_[s];
    if (seg.used > segment_bytes_) return fail("segment ", s, " overfull");
    if (seg.state == SegmentState::kFree) {
      ++free_count;
      if (seg.used != 0 || seg.live != 0)
        return fail("free segment ", s, " used");
      continue;
    }
    if (seg.state == SegmentState::kHead) ++heads;
    size_t offset = 0;
    size_t live = 0;
    const char* base = arena_.data() + s * segment_bytes_;
    while (offset < seg.used) {
      ItemHeader* item =
          reinterpret_cast<ItemHeader*>(const_cast<char*>(base + offset));
      if (item->live) live += item->footprint();
      offset += item->footprint();
    }
    if (offset != seg.used) return fail("segment ", s, " items overrun used");
    if (live != seg.live) {
      return fail("segment ", s, " live ", seg.live, " but items sum ", live);
    }
    live_total += live;
  }
  if (heads != 1 || segments_[head_].state != SegmentState::kHead) {
    return fail("expected exactly one head segment");
  }
  if (free_count != free_segments_.size() || free_count < 1) {
    return fail("free segment count ", free_count, " vs list ",
                free_segments_.size(), " (one must be in reserve)");
  }
  if (live_total != stats_.live_bytes) {
    return fail("segments hold ", live_total, " live bytes; stats say ",
                stats_.live_bytes);
  }
  return absl::OkStatus();
}

}  // namespace kvstore
}  // namespace rfrpc
