// Copyright 2026 The rfrpc Authors.
//
// Partition: one EREW partition of Jakiro's in-memory key-value store.
//
// Jakiro splits its data across server worker threads by key hash
// (PartitionOfHash(KeyHash(key), num_workers), see key_hash.h); each worker
// owns exactly one Partition and is the only thread that ever touches it
// (Exclusive Read, Exclusive Write), so the data path takes no locks.
//
// Layout.
//   * Index: a power-of-two array of 64-byte buckets, 8 slots each. A slot is
//     one 64-bit word: valid bit, 3-bit recency rank within the bucket,
//     16-bit tag (bits 16..31 of the key hash) and the item's location in the
//     arena (in 8-byte units). A lookup reads one cache line plus the items
//     whose tag matches. When a key must go into a full bucket the bucket's
//     least recently used slot is evicted (strict LRU: the ranks of the valid
//     slots always form a permutation of 0..n-1, 0 = most recently used; Get
//     hits and Puts make a slot rank 0).
//   * Arena: memory_bytes split into equal segments, used as a log. An item
//     (16-byte header, key bytes, value bytes, padded to 8 bytes; see
//     ItemFootprint) is appended to the head segment. Overwrites and deletes
//     leave dead bytes behind. All live items are also on one intrusive,
//     exact LRU list (Get hits and Puts move an item to the front).
//
// Memory policy. The arena is allocated once and never grows: memory used for
// items never exceeds memory_bytes. One segment is always kept free as the
// compaction reserve. When the head segment cannot fit a new item:
//   1. if another free segment exists, it becomes the head;
//   2. otherwise the reserve becomes the head and the sealed segment with the
//      fewest live bytes is compacted into it (live items copied, the segment
//      freed and made the new reserve), provided that frees
//      R = max(footprint, min_reclaim_percent% of a segment) bytes, i.e. its
//      live bytes are at most segment_bytes() - R;
//   3. if no segment is that empty, items are evicted from the tail of the
//      global LRU list, one at a time, until the segment of an evicted item
//      is that empty; then step 2 proceeds with it.
// So items are only ever evicted in exact global LRU order, and only when
// every one of the other num_segments()-1 segments holds more than
// segment_bytes() - R live bytes: with the default 10% and small items,
// about 90% of the budget holds live data before anything is evicted, and a
// compaction copies at most 9 bytes per byte it frees. Eviction can come in
// bursts: LRU items scattered over many segments must go before one segment
// is empty enough. Large items (footprint near segment_bytes) need a
// nearly empty segment and so may evict more; give such workloads a
// segment_bytes several times max_value_bytes.
//
// Ownership: a Partition owns its index and arena. It keeps no pointer to
// anything passed in; views it returns point into its arena.
//
// Thread-safety: none. A Partition must be used by one thread at a time (in
// Jakiro: its owning worker thread); even Get mutates recency state.
//
// Example:
//
//   absl::StatusOr<std::unique_ptr<Partition>> p = Partition::Create({});
//   if (!p.ok()) return p.status();
//   RFRPC_RETURN_IF_ERROR((*p)->Put("user:42", "alice"));
//   absl::StatusOr<absl::string_view> v = (*p)->GetView("user:42");
//   // *v == "alice" until the next Put or Delete on this partition.

#ifndef RFRPC_KVSTORE_STORE_PARTITION_H_
#define RFRPC_KVSTORE_STORE_PARTITION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstore/store/huge_page_buffer.h"

namespace rfrpc {
namespace kvstore {

// A key hash. Must be deterministic; the client must use the same one to pick
// the partition.
using KeyHashFunction = uint64_t (*)(absl::string_view key);

struct PartitionOptions {
  // Bytes of item storage (headers, keys and values), allocated once by
  // Create. The bucket index is extra: 64 bytes per bucket.
  // Default: 64 MiB.
  size_t memory_bytes = size_t{64} << 20;

  // Largest value Put accepts; larger ones are InvalidArgument.
  // Default: 1 MiB.
  size_t max_value_bytes = size_t{1} << 20;

  // Number of 8-slot buckets, rounded up to a power of two (at most 2^32).
  // 0 derives it: one bucket per 256 bytes of memory_bytes, i.e. about two
  // slots per 64-byte item (16-byte keys, 32-byte values).
  // Default: 0.
  size_t num_buckets = 0;

  // Bytes per arena segment, rounded down to a multiple of 8; memory_bytes
  // must hold at least 4 segments. An item whose footprint exceeds it is
  // ResourceExhausted. 0 derives it: the smallest multiple of 4 KiB, at
  // least 1 MiB, that holds the largest item (a 250-byte key and a
  // max_value_bytes value), capped at memory_bytes / 4.
  // Default: 0.
  size_t segment_bytes = 0;

  // Compaction only picks a segment whose compaction frees at least this
  // percentage of a segment (and room for the new item); if none has that
  // much dead space, LRU items are evicted until one does. Higher: less
  // copying (a compaction copies at most (100 - p) / p bytes per byte it
  // frees), more eviction, lower memory utilisation (eviction starts once
  // every segment is about (100 - p)% live). 0: evict only when nothing can
  // be compacted at all, at the price of unbounded copying near full.
  // Default: 10.
  int min_reclaim_percent = 10;

  // The hash used to place keys in buckets; nullptr means KeyHash. Tests
  // inject one to force collisions.
  // Default: nullptr.
  KeyHashFunction hash = nullptr;
};

// Counters since Create. All are exact.
struct PartitionStats {
  uint64_t items = 0;        // live items
  uint64_t live_bytes = 0;   // sum of ItemFootprint over live items
  uint64_t arena_bytes = 0;  // num_segments * segment_bytes <= memory_bytes
  uint64_t index_bytes = 0;  // bucket array
  uint64_t hits = 0;         // Get/GetView that found the key
  uint64_t misses = 0;       // Get/GetView that did not
  uint64_t puts = 0;         // successful Puts (inserts and overwrites)
  uint64_t deletes = 0;      // Deletes that removed an item
  uint64_t evictions_bucket_full = 0;  // bucket LRU evictions
  uint64_t evictions_memory = 0;       // global LRU evictions for space
  uint64_t compactions = 0;            // segments compacted
  uint64_t compacted_bytes = 0;        // live bytes copied by compaction
};

class Partition {
 public:
  // Longest key accepted (memcached's limit). Empty keys are invalid too.
  static constexpr size_t kMaxKeyBytes = 250;
  static constexpr int kSlotsPerBucket = 8;

  // Validates `options` (InvalidArgument on a bad combination) and allocates
  // the arena and index.
  static absl::StatusOr<std::unique_ptr<Partition>> Create(
      const PartitionOptions& options);

  Partition(const Partition&) = delete;
  Partition& operator=(const Partition&) = delete;
  ~Partition();

  // Zero-copy lookup. On success returns a view of the value inside the
  // arena, valid until the next Put or Delete on this partition (those may
  // evict or move items); Get/GetView do not invalidate it. Marks the item
  // most recently used. NotFound if absent; InvalidArgument for an invalid
  // key.
  absl::StatusOr<absl::string_view> GetView(absl::string_view key);

  // Copying lookup: as GetView, but copies the value into `*value`.
  // REQUIRES: value != nullptr. The pointer is not kept.
  absl::Status Get(absl::string_view key, std::string* value);

  // Inserts `key` or overwrites its value; the item becomes most recently
  // used. May evict other items (bucket full, or memory; see the header
  // comment) and invalidates views returned earlier. `key` and `value` are
  // copied and may point anywhere, even at a view from GetView.
  // InvalidArgument: empty key, key longer than kMaxKeyBytes, value longer
  // than max_value_bytes. ResourceExhausted: the item would not fit in one
  // segment (only when segment_bytes is smaller than the largest item, e.g.
  // a small memory_bytes); the partition is then unchanged.
  absl::Status Put(absl::string_view key, absl::string_view value);

  // Removes `key`. NotFound if absent; InvalidArgument for an invalid key.
  // Invalidates views returned earlier.
  absl::Status Delete(absl::string_view key);

  const PartitionStats& stats() const { return stats_; }

  // Arena bytes one item takes: 16-byte header + key + value, rounded up to
  // a multiple of 8.
  static size_t ItemFootprint(size_t key_bytes, size_t value_bytes);

  // The bucket that `key` maps to: bits 32..63 of its hash, masked.
  size_t BucketOf(absl::string_view key) const;

  size_t num_buckets() const { return num_buckets_; }
  size_t segment_bytes() const { return segment_bytes_; }
  size_t num_segments() const { return segments_.size(); }
  size_t max_value_bytes() const { return max_value_bytes_; }

  // Walks every structure and checks it against the others (bucket ranks,
  // slot/item agreement, the LRU list, per-segment live bytes, stats).
  // O(memory); for tests. Returns Internal describing the first violation.
  absl::Status CheckInvariants() const;

 private:
  struct alignas(64) Bucket {
    uint64_t slots[kSlotsPerBucket];
  };
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");

  enum class SegmentState : uint8_t { kFree, kHead, kSealed };
  struct Segment {
    size_t used = 0;  // bytes appended
    size_t live = 0;  // footprint of live items among them
    SegmentState state = SegmentState::kFree;
  };

  struct ItemHeader;

  Partition(const PartitionOptions& options, size_t num_buckets,
            size_t segment_bytes, size_t num_segments, HugePageBuffer index,
            HugePageBuffer arena);

  absl::Status ValidateKey(absl::string_view key) const;
  uint64_t Hash(absl::string_view key) const { return hash_(key); }
  Bucket& BucketFor(uint64_t hash) {
    return buckets_[(hash >> 32) & bucket_mask_];
  }
  const Bucket& BucketFor(uint64_t hash) const {
    return buckets_[(hash >> 32) & bucket_mask_];
  }

  // Index of the slot in `bucket` holding `key`, or -1.
  int FindSlot(const Bucket& bucket, uint64_t hash,
               absl::string_view key) const;
  // Index of the slot in `bucket` whose location is `unit`, or -1.
  static int FindSlotByLocation(const Bucket& bucket, uint32_t unit);

  // Bucket recency: make slot i rank 0; fill empty slot i as rank 0; clear
  // slot i; find the least recently used valid slot.
  static void TouchSlot(Bucket& bucket, int i);
  static void FillSlot(Bucket& bucket, int i, uint64_t hash, uint32_t unit);
  static void ClearSlot(Bucket& bucket, int i);
  static int LruSlot(const Bucket& bucket);
  static int EmptySlot(const Bucket& bucket);

  ItemHeader* ItemAt(uint32_t unit) const;
  size_t SegmentOf(uint32_t unit) const;

  // Global LRU list (intrusive, through item headers).
  void LruUnlink(uint32_t unit);
  void LruPushFront(uint32_t unit);

  // Removes the item in `bucket` slot `i` from every structure.
  void RemoveItem(Bucket& bucket, int i);
  // Evicts the least recently used item; returns the segment it was in.
  size_t EvictLru();

  // Returns the location of `footprint` fresh bytes in the head segment,
  // compacting and evicting as the header comment describes.
  // REQUIRES: footprint <= segment_bytes_.
  uint32_t Allocate(size_t footprint);
  // Makes a free segment the head segment.
  void OpenHead();
  // Copies the live items of sealed segment `victim` into the head segment
  // and frees it. REQUIRES: they fit.
  void Compact(size_t victim);

  const KeyHashFunction hash_;
  const size_t max_value_bytes_;
  const size_t segment_bytes_;
  const size_t min_reclaim_bytes_;
  const uint64_t bucket_mask_;

  // Both zero-filled at first and, where the kernel allows, on 2 MiB pages
  // (huge_page_buffer.h): a lookup is one random bucket and one random item,
  // and with 4 KiB pages each would also miss the TLB.
  HugePageBuffer index_;
  Bucket* const buckets_;  // num_buckets_ buckets in index_.
  const size_t num_buckets_;
  HugePageBuffer arena_;
  size_t arena_bytes_;
  std::vector<Segment> segments_;
  std::vector<size_t> free_segments_;  // stack
  size_t head_ = 0;

  uint32_t lru_front_;  // most recently used, or kNil
  uint32_t lru_back_;   // least recently used, or kNil

  PartitionStats stats_;
};

}  // namespace kvstore
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_STORE_PARTITION_H_
