// Copyright 2026 The rfrpc Authors.
//
// The counters behind MethodStats (rpc/call_stats.h), kept so that the call
// path pays a few plain stores and no shared cache line (internal to rpc/):
//
//   * MethodCounters: one method's counters and histograms, each field a
//     SingleWriterCounter: written by one thread at a time with a relaxed
//     load and store (no locked instruction), read by anyone.
//   * WorkerMethodCounters: a server worker's table of them, one per
//     registered method plus one for unknown ids; only that worker writes.
//   * ClientMethodCounters: a channel's, kept per calling thread: each thread
//     that finishes calls claims a block of its own on first use (a mutex,
//     once per thread and channel). The first three threads find theirs
//     again by their thread id in one line of the channel's, which also
//     holds the counters of each one's last method, so a thread cycling
//     through thousands of channels pays that line and the counters' per
//     call, not a claim; later threads go through a thread-local cache of
//     64 channels. A block goes back to the channel when its thread exits and
//     keeps its counts for the next thread.
//
// Snapshots sum the blocks on the reader's thread, off the call path.
//
// Thread safety: SingleWriterCounter::Add and MethodCounters' recording
// functions: one thread at a time per object (the owner); reads: any thread.
// WorkerMethodCounters::For: the owning worker only; AddTo: any thread.
// ClientMethodCounters: all functions thread-safe.

#ifndef RFRPC_RPC_METHOD_COUNTERS_H_
#define RFRPC_RPC_METHOD_COUNTERS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "rpc/call_stats.h"
#include "rpc/service.h"

namespace rfrpc {
namespace internal {

// A counter written by one thread at a time and read by any: Add is a
// relaxed load and store, not a locked read-modify-write.
class SingleWriterCounter {
 public:
  void Add(uint64_t n) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t Read() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// A single-writer histogram in power-of-two buckets (HistogramStats):
// finite buckets with upper bounds 2^kFirstLog2 .. 2^(kFirstLog2 +
// kFiniteBuckets - 1), then +Inf. Recording is a count-leading-zeros and two
// stores.
template <int kFirstLog2, int kFiniteBuckets>
class Log2Histogram {
 public:
  static constexpr int kBuckets = kFiniteBuckets + 1;

  static int BucketOf(uint64_t v) {
    if (v <= (uint64_t{1} << kFirstLog2)) return 0;
    // v >= 2: the bit width of v - 1 is ceil(log2(v)).
    const int ceil_log2 = 64 - __builtin_clzll(v - 1);
    return std::min(ceil_log2 - kFirstLog2, kFiniteBuckets);
  }

  void Record(uint64_t v) {
    CountBucket(v);
    AddSum(v);
  }
  // Record in two halves, for a writer that sums a run of values first.
  void CountBucket(uint64_t v) { counts_[BucketOf(v)].Add(1); }
  void CountBucket(uint64_t v, uint64_t n) { counts_[BucketOf(v)].Add(n); }
  void AddSum(uint64_t sum) { sum_.Add(sum); }

  // Adds the counts to `*out` (not null; its layout set if empty).
  void AddTo(HistogramStats* out) const {
    if (out->counts.empty()) {
      out->first_log2 = kFirstLog2;
      out->counts.assign(kBuckets, 0);
    }
    for (int i = 0; i < kBuckets; ++i) out->counts[i] += counts_[i].Read();
    out->sum += sum_.Read();
  }

 private:
  SingleWriterCounter sum_;  // First: on the line of the low buckets.
  SingleWriterCounter counts_[kBuckets];
};

// Times in ns: 128 ns .. 2^30 ns (1.07 s), then +Inf.
using LatencyHistogram = Log2Histogram<7, 24>;
// Result payloads in bytes: 16 B .. 1 MiB, then +Inf.
using BytesHistogram = Log2Histogram<4, 17>;

// One method's counters. `code` arguments are absl::StatusCode values
// (0 = OK); out-of-range codes count as UNKNOWN (2).
struct MethodCounters {
  // A call's record touches `calls`, the latency sum and one latency
  // bucket: the first two lines (buckets up to 4 us share the first).
  alignas(64) SingleWriterCounter calls;
  LatencyHistogram latency_ns;
  SingleWriterCounter failures[kStatusCodes];
  BytesHistogram result_bytes;

  // A call that finished with `code` after `latency` ns.
  void Finish(int code, int64_t latency) {
    calls.Add(1);
    if (code != 0) {
      failures[code > 0 && code < kStatusCodes ? code : 2].Add(1);
    }
    latency_ns.Record(static_cast<uint64_t>(std::max<int64_t>(latency, 0)));
  }
  // A server call: as Finish, and an OK result's size.
  void Served(int code, int64_t handler_ns, uint64_t result_bytes);
  // Adds the counts to `*out` (not null).
  void AddTo(MethodStats* out) const;
};

// A server worker's per-method counters: one MethodCounters per registered
// method and one for ids that no service has. Built before the worker runs;
// the table never changes after.
class WorkerMethodCounters {
 public:
  // `methods`: every registered method (not kept; names and ids copied).
  explicit WorkerMethodCounters(absl::Span<const MethodEntry* const> methods);
  WorkerMethodCounters(const WorkerMethodCounters&) = delete;
  WorkerMethodCounters& operator=(const WorkerMethodCounters&) = delete;

  // The counters of method `id` (those of unknown ids if no method has it).
  // Owning worker only.
  MethodCounters* For(uint32_t id) {
    auto it = index_.find(id);
    return it == index_.end() ? &unknown_ : it->second;
  }
  MethodCounters* unknown() { return &unknown_; }

  // Adds every method's counts into `*out` (not null), matching entries by
  // method name (unknown ids: name "", id 0) and appending missing ones.
  // Any thread.
  void AddTo(std::vector<MethodStats>* out) const;

 private:
  struct Named {
    uint32_t id;
    std::string name;
    std::unique_ptr<MethodCounters> counters;
  };
  std::vector<Named> methods_;
  absl::flat_hash_map<uint32_t, MethodCounters*> index_;
  MethodCounters unknown_;
};

// A channel's per-method counters, kept per calling thread (see the file
// comment). With `enabled` false every function returns at once (and
// Snapshot returns nothing).
class ClientMethodCounters {
 public:
  explicit ClientMethodCounters(bool enabled);
  // Threads still holding blocks let them go at their next miss or exit.
  ~ClientMethodCounters();
  ClientMethodCounters(const ClientMethodCounters&) = delete;
  ClientMethodCounters& operator=(const ClientMethodCounters&) = delete;

  bool enabled() const { return enabled_; }
  // Returns the counters it updated (a prefetch hint), or null.
  const MethodCounters* Finished(uint32_t method_id, int code,
                                 int64_t latency_ns) {
    if (!enabled_) return nullptr;
    return ForThisThread(method_id, [code, latency_ns](MethodCounters* m) {
      m->Finish(code, latency_ns);
    });
  }
  // The line a calling thread reads first to find its counters (a
  // prefetch hint).
  const void* owners_line() const;

  // Every method's counts, summed over threads, sorted by id; names empty.
  std::vector<MethodStats> Snapshot() const;

  // Blocks claimed for calling threads so far: once per thread for the
  // first kOwners threads, however many other channels each uses in
  // between; more for threads past them (a thread's cache holds 64
  // channels).
  uint64_t block_claims() const;

  // Threads that own a block for the channel's life (see Shared::owners).
  static constexpr size_t kOwners = 3;

  struct Shared;  // The blocks; outlives the object while threads hold some.

 private:
  // Runs `f` on the calling thread's counters of `method_id`; returns
  // them, or null if it took the shared fallback (RecordLocked).
  template <typename F>
  MethodCounters* ForThisThread(uint32_t method_id, F f);

  const bool enabled_;
  const std::shared_ptr<Shared> shared_;
};

// The counters of method `id` for the calling thread in `shared`'s blocks
// (claimed on first use); null once the thread's thread-locals are being
// destroyed (then `*shared` takes the update under its lock, RecordLocked).
MethodCounters* CountersOf(const std::shared_ptr<ClientMethodCounters::Shared>& shared,
                           uint32_t id);
// Runs `f` on method `id`'s counters of the shared fallback block, locked.
void RecordLocked(ClientMethodCounters::Shared* shared, uint32_t id,
                  void (*f)(MethodCounters*, const void*), const void* arg);

template <typename F>
MethodCounters* ClientMethodCounters::ForThisThread(uint32_t method_id, F f) {
  MethodCounters* m = CountersOf(shared_, method_id);
  if (m == nullptr) {
    RecordLocked(
        shared_.get(), method_id,
        [](MethodCounters* m, const void* arg) { (*static_cast<const F*>(arg))(m); },
        &f);
    return nullptr;
  }
  f(m);
  return m;
}

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_METHOD_COUNTERS_H_
