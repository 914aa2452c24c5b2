// Copyright 2026 The rfrpc Authors.

#include "rpc/method_counters.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "base/mutex.h"

namespace rfrpc {
namespace internal {

void MethodCounters::Served(int code, int64_t handler_ns, uint64_t bytes) {
  Finish(code, handler_ns);
  if (code == 0) result_bytes.Record(bytes);
}

void MethodCounters::AddTo(MethodStats* out) const {
  out->calls += calls.Read();
  for (int i = 0; i < kStatusCodes; ++i) out->failures[i] += failures[i].Read();
  latency_ns.AddTo(&out->latency_ns);
  result_bytes.AddTo(&out->result_bytes);
}

WorkerMethodCounters::WorkerMethodCounters(
    absl::Span<const MethodEntry* const> methods) {
  methods_.reserve(methods.size());
  for (const MethodEntry* m : methods) {
    methods_.push_back(
        Named{m->id, m->full_name, std::make_unique<MethodCounters>()});
    index_.emplace(m->id, methods_.back().counters.get());
  }
}

namespace {

MethodStats* FindOrAdd(std::vector<MethodStats>* out, uint32_t id,
                       const std::string& name) {
  for (MethodStats& m : *out) {
    if (m.method == name) return &m;
  }
  out->emplace_back();
  out->back().method_id = id;
  out->back().method = name;
  return &out->back();
}

}  // namespace

void WorkerMethodCounters::AddTo(std::vector<MethodStats>* out) const {
  for (const Named& m : methods_) {
    m.counters->AddTo(FindOrAdd(out, m.id, m.name));
  }
  // Unknown ids: shown only once there were any.
  if (unknown_.calls.Read() > 0) {
    unknown_.AddTo(FindOrAdd(out, 0, ""));
  }
}

// ---------------------------------------------------------------------------
// ClientMethodCounters

// A thread's block of one ClientMethodCounters.
struct ClientThreadBlock {
  // Changes only on the owning thread, under Shared::mu; the owner reads it
  // without the lock, other threads only under it.
  absl::flat_hash_map<uint32_t, std::unique_ptr<MethodCounters>> methods;
  // Owner only: the method of the last call (threads past the owners).
  uint32_t last_id = 0;
  MethodCounters* last = nullptr;
};

struct ClientMethodCounters::Shared {
  explicit Shared(uint64_t s) : serial(s) {}

  // The first kOwners threads to finish calls on the channel each own a
  // block for as long as they live: a thread finds its slot by its id in
  // this one line, whichever other channels it uses in between, and in the
  // same line the counters of the method of its last call, so a call on a
  // channel its thread cycles through with thousands of others misses only
  // this line and the counters'. Threads beyond them go through their
  // thread cache. owner_block[i], last[i] and last_id[i] are written under
  // mu when slot i is claimed or left, and otherwise only by the thread whose
  // id thread[i] holds, which alone reads them without mu.
  struct alignas(64) Owners {
    std::atomic<uint64_t> thread[kOwners] = {};
    MethodCounters* last[kOwners] = {};
    uint32_t last_id[kOwners] = {};
  };
  static_assert(sizeof(Owners) == 64, "the owners' slots take one line");
  Owners owners;
  ClientThreadBlock* owner_block[kOwners] = {};

  // Never reused, unlike the object's address: names it in thread caches.
  const uint64_t serial;
  // Blocks claimed (owner or cache entry), for tests.
  std::atomic<uint64_t> claims{0};
  // Set when the ClientMethodCounters is destroyed.
  std::atomic<bool> closed{false};

  mutable Mutex mu;
  std::vector<std::unique_ptr<ClientThreadBlock>> blocks ABSL_GUARDED_BY(mu);
  std::vector<ClientThreadBlock*> free ABSL_GUARDED_BY(mu);
  // Updates from threads whose thread-locals are gone, under mu.
  ClientThreadBlock fallback ABSL_GUARDED_BY(mu);
};

namespace {

std::atomic<uint64_t> next_serial{1};

using SharedPtr = std::shared_ptr<ClientMethodCounters::Shared>;

// A thread's claimed blocks, one per channel it used lately. Holding the
// Shared keeps the block alive after its channel is gone, until the entry is
// pruned (next miss) or the thread exits.
struct ThreadCache {
  struct Entry {
    uint64_t serial;
    SharedPtr shared;
    ClientThreadBlock* block;
  };
  std::vector<Entry> entries;
  // Channels where this thread holds an owner slot (Shared::owners), to
  // leave at exit. Entries of closed channels are dropped whenever the
  // list has doubled since the last sweep, so a thread cycling through
  // short-lived channels stays bounded.
  struct Owned {
    SharedPtr shared;
    size_t slot;
  };
  std::vector<Owned> owned;
  size_t owned_after_sweep = 0;

  ~ThreadCache();
};

std::atomic<uint64_t> next_thread_id{1};
thread_local uint64_t thread_id = 0;

uint64_t ThisThreadId() {
  if (thread_id == 0) {
    thread_id = next_thread_id.fetch_add(1, std::memory_order_relaxed);
  }
  return thread_id;
}

// Entries kept at most; past it the oldest goes back to its channel.
constexpr size_t kMaxCacheEntries = 64;

// Trivially destructible, so it can be read after the cache's destructor ran
// (a callback running from another thread-local's destructor).
thread_local bool thread_cache_gone = false;
thread_local ThreadCache thread_cache;

void Release(const ThreadCache::Entry& e) {
  ClientMethodCounters::Shared* s = e.shared.get();
  MutexLock lock(&s->mu);
  e.block->last = nullptr;
  e.block->last_id = 0;
  s->free.push_back(e.block);
}

void LeaveOwner(const ThreadCache::Owned& e) {
  ClientMethodCounters::Shared* s = e.shared.get();
  const size_t i = e.slot;
  MutexLock lock(&s->mu);
  s->owners.last[i] = nullptr;
  s->owners.last_id[i] = 0;
  s->owner_block[i]->last = nullptr;  // Set by the call that claimed it.
  s->owner_block[i]->last_id = 0;
  // The block stays in its slot, counts and all, for the next owner.
  s->owners.thread[i].store(0, std::memory_order_relaxed);
}

ThreadCache::~ThreadCache() {
  thread_cache_gone = true;
  for (const Entry& e : entries) Release(e);
  entries.clear();
  for (const Owned& e : owned) LeaveOwner(e);
  owned.clear();
}

// Drops the entries of closed channels from `v`, letting each go with
// `leave` (Release or LeaveOwner).
template <typename E>
void DropClosed(std::vector<E>* v, void (*leave)(const E&)) {
  auto closed = std::remove_if(v->begin(), v->end(), [leave](const E& e) {
    if (!e.shared->closed.load(std::memory_order_acquire)) return false;
    leave(e);
    return true;
  });
  v->erase(closed, v->end());
}

ClientThreadBlock* TakeFreeBlockLocked(ClientMethodCounters::Shared* shared)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared->mu) {
  shared->claims.fetch_add(1, std::memory_order_relaxed);
  if (!shared->free.empty()) {
    ClientThreadBlock* block = shared->free.back();
    shared->free.pop_back();
    return block;
  }
  shared->blocks.push_back(std::make_unique<ClientThreadBlock>());
  return shared->blocks.back().get();
}

// Claims a free owner slot of `shared` for this thread, if there is one.
ClientThreadBlock* ClaimOwner(ThreadCache& cache, const SharedPtr& shared,
                              uint64_t me) {
  ClientMethodCounters::Shared* s = shared.get();
  ClientThreadBlock* block = nullptr;
  size_t slot = 0;
  {
    MutexLock lock(&s->mu);
    for (; slot < ClientMethodCounters::kOwners; ++slot) {
      if (s->owners.thread[slot].load(std::memory_order_relaxed) == 0) break;
    }
    if (slot == ClientMethodCounters::kOwners) return nullptr;
    if (s->owner_block[slot] == nullptr) {
      s->owner_block[slot] = TakeFreeBlockLocked(s);
    } else {
      s->claims.fetch_add(1, std::memory_order_relaxed);
    }
    block = s->owner_block[slot];
    s->owners.last[slot] = nullptr;
    s->owners.last_id[slot] = 0;
    s->owners.thread[slot].store(me, std::memory_order_relaxed);
  }
  if (cache.owned.size() >= 2 * std::max<size_t>(cache.owned_after_sweep, 32)) {
    DropClosed(&cache.owned, LeaveOwner);
    cache.owned_after_sweep = cache.owned.size();
  }
  cache.owned.push_back(ThreadCache::Owned{shared, slot});
  return block;
}

// The owner's slow path: method `id`'s counters in `block`, added under
// the lock if new.
MethodCounters* FindOrAddMethod(ClientMethodCounters::Shared* shared,
                                ClientThreadBlock* block, uint32_t id) {
  auto it = block->methods.find(id);
  if (it != block->methods.end()) return it->second.get();
  MutexLock lock(&shared->mu);
  auto& slot = block->methods[id];
  if (slot == nullptr) slot = std::make_unique<MethodCounters>();
  return slot.get();
}

// The calling thread's block of `shared` when it owns none of its slots
// (claiming one if free); null while the thread-locals are being destroyed.
ClientThreadBlock* CachedBlockOf(const SharedPtr& shared, uint64_t me,
                                 bool free_owner) {
  ThreadCache& cache = thread_cache;
  const uint64_t serial = shared->serial;
  for (const ThreadCache::Entry& e : cache.entries) {
    if (e.serial == serial) return e.block;
  }
  if (free_owner) {
    if (ClientThreadBlock* b = ClaimOwner(cache, shared, me)) return b;
  }
  // A channel this thread has not used (lately): drop the blocks of closed
  // channels and the oldest if there are too many, then claim one.
  DropClosed(&cache.entries, Release);
  if (cache.entries.size() >= kMaxCacheEntries) {
    Release(cache.entries.front());
    cache.entries.erase(cache.entries.begin());
  }
  ClientThreadBlock* block;
  {
    MutexLock lock(&shared->mu);
    block = TakeFreeBlockLocked(shared.get());
  }
  cache.entries.push_back(ThreadCache::Entry{serial, shared, block});
  return block;
}

}  // namespace

MethodCounters* CountersOf(const SharedPtr& shared, uint32_t id) {
  if (thread_cache_gone) return nullptr;
  const uint64_t me = ThisThreadId();
  ClientMethodCounters::Shared::Owners& owners = shared->owners;
  bool free_owner = false;
  for (size_t i = 0; i < ClientMethodCounters::kOwners; ++i) {
    const uint64_t t = owners.thread[i].load(std::memory_order_relaxed);
    if (t == me) {
      MethodCounters* m = owners.last[i];
      if (m == nullptr || owners.last_id[i] != id) {
        m = FindOrAddMethod(shared.get(), shared->owner_block[i], id);
        owners.last[i] = m;
        owners.last_id[i] = id;
      }
      return m;
    }
    free_owner |= t == 0;
  }
  ClientThreadBlock* b = CachedBlockOf(shared, me, free_owner);
  MethodCounters* m = b->last;
  if (m == nullptr || b->last_id != id) {
    m = FindOrAddMethod(shared.get(), b, id);
    b->last_id = id;
    b->last = m;
  }
  return m;
}

void RecordLocked(ClientMethodCounters::Shared* shared, uint32_t id,
                  void (*f)(MethodCounters*, const void*), const void* arg) {
  MutexLock lock(&shared->mu);
  auto& slot = shared->fallback.methods[id];
  if (slot == nullptr) slot = std::make_unique<MethodCounters>();
  f(slot.get(), arg);
}

ClientMethodCounters::ClientMethodCounters(bool enabled)
    : enabled_(enabled),
      shared_(std::make_shared<Shared>(
          next_serial.fetch_add(1, std::memory_order_relaxed))) {}

ClientMethodCounters::~ClientMethodCounters() {
  shared_->closed.store(true, std::memory_order_release);
}

const void* ClientMethodCounters::owners_line() const {
  return &shared_->owners;
}

uint64_t ClientMethodCounters::block_claims() const {
  return shared_->claims.load(std::memory_order_relaxed);
}

std::vector<MethodStats> ClientMethodCounters::Snapshot() const {
  std::vector<MethodStats> out;
  if (!enabled_) return out;
  absl::flat_hash_map<uint32_t, size_t> index;
  auto add = [&](const ClientThreadBlock& b) {
    for (const auto& [id, counters] : b.methods) {
      auto [it, inserted] = index.emplace(id, out.size());
      if (inserted) {
        out.emplace_back();
        out.back().method_id = id;
      }
      counters->AddTo(&out[it->second]);
    }
  };
  {
    MutexLock lock(&shared_->mu);
    for (const auto& b : shared_->blocks) add(*b);
    add(shared_->fallback);
  }
  for (MethodStats& m : out) m.result_bytes = HistogramStats();  // Not kept.
  std::sort(out.begin(), out.end(),
            [](const MethodStats& a, const MethodStats& b) {
              return a.method_id < b.method_id;
            });
  return out;
}

}  // namespace internal
}  // namespace rfrpc
