// Copyright 2026 The rfrpc Authors.

#include "rpc/work_finder.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "glog/logging.h"

namespace rfrpc {
namespace internal {
namespace {

inline uint64_t LoadAcquire64(const char* p) {
  return __atomic_load_n(reinterpret_cast<const uint64_t*>(p), __ATOMIC_ACQUIRE);
}

}  // namespace

WorkFinder::WorkFinder(char* bells, const Options& options)
    : bells_(bells),
      layout_(wire::BellsLayout{options.capacity}),
      options_(options),
      table_(options.capacity),
      direct_seen_(options.max_hot_groups > 0
                       ? options.capacity
                       : std::min<size_t>(options.capacity,
                                          size_t{options.direct_groups} *
                                              wire::BellsLayout::kGroup)),
      hot_group_index_(options.max_hot_groups > 0
                           ? options.capacity / wire::BellsLayout::kGroup
                           : 0,
                       -1) {
  CHECK_EQ(options.capacity % 64, 0u);
  CHECK_EQ(reinterpret_cast<uintptr_t>(bells) % 8, 0u);
}

void WorkFinder::Add(uint32_t bell, uint32_t slots) {
  DCHECK_LT(bell, table_.size());
  DCHECK_LE(slots, 64u);
  Bell& b = table_[bell];
  DCHECK(!b.used);
  b.used = true;
  b.slots = slots;
  // b.last_word: what the previous owner's last ring left (0 at first).
  b.served_ns.assign(slots, INT64_MIN);
  b.hot_index.assign(slots, -1);
  added_.push_back(bell);
  summary_words_ = std::max<size_t>(
      summary_words_, wire::BellsLayout::SummaryOffset(bell) / 8 + 1);
  groups_ = std::max<uint32_t>(groups_, bell / wire::BellsLayout::kGroup + 1);
}

void WorkFinder::Remove(uint32_t bell) {
  Bell& b = table_[bell];
  if (!b.used) return;
  for (uint32_t s = 0; s < b.slots; ++s) {
    if (b.hot_index[s] >= 0) DropHot(static_cast<size_t>(b.hot_index[s]));
  }
  const uint64_t seen = b.last_word;
  b = Bell();
  b.last_word = seen;
}

void WorkFinder::DropHot(size_t i) {
  const Hot gone = hot_[i];
  table_[gone.bell].hot_index[gone.slot] = -1;
  if (i + 1 != hot_.size()) {
    hot_[i] = hot_.back();
    table_[hot_[i].bell].hot_index[hot_[i].slot] = static_cast<int32_t>(i);
  }
  hot_.pop_back();
}

void WorkFinder::MakeHot(Bell& b, uint32_t bell, uint32_t slot,
                         int64_t until) {
  const int32_t i = b.hot_index[slot];
  if (i >= 0) {
    hot_[static_cast<size_t>(i)].until_ns = until;
    return;
  }
  b.hot_index[slot] = static_cast<int32_t>(hot_.size());
  hot_.push_back(Hot{bell, slot, until});
}

bool WorkFinder::OnServed(uint32_t bell, uint32_t slot, int64_t now) {
  Bell& b = table_[bell];
  if (!b.used || slot >= b.slots) return false;
  const int64_t prev = b.served_ns[slot];
  b.served_ns[slot] = now;
  const bool already = b.hot_index[slot] >= 0;
  // Served within half the window of its previous request: the client
  // skips the doorbell only for a request it posts within half the window
  // of its previous one (RpcWelcome.hot_window_ns), so a slot served less
  // often than that rings anyway and polling it would be wasted.
  const bool recent =
      prev != INT64_MIN && now - prev < options_.hot_window_ns / 2;
  if (!recent || (!already && hot_.size() >= options_.max_hot)) {
    // Not hot: the client rings for its next request. A slot that stays
    // in the list as "kept polling" is harmless; it expires on its own.
    return false;
  }
  MakeHot(b, bell, slot, now + options_.hot_window_ns);
  return true;
}

void WorkFinder::KeepPolling(uint32_t bell, uint32_t slot, int64_t now) {
  Bell& b = table_[bell];
  if (!b.used || slot >= b.slots) return;
  MakeHot(b, bell, slot, now + options_.hot_window_ns);
}

bool WorkFinder::AnyRung() const {
  if (direct()) {
    for (uint32_t bell = 0; bell < groups_ * wire::BellsLayout::kGroup;
         ++bell) {
      const Bell& b = table_[bell];
      if (b.used &&
          LoadAcquire64(bells_ + layout_.WordOffset(bell)) != b.last_word) {
        return true;
      }
    }
    return false;
  }
  // A word the last Collect took but has not cleared holds only rings
  // taken already, unless another landed since; either way it is reported.
  const size_t words = summary_words_;
  for (size_t w = 0; w < words; ++w) {
    if (LoadAcquire64(bells_ + 8 * w) != 0) return true;
  }
  return false;
}

void WorkFinder::TakeWord(uint32_t bell, uint64_t word,
                          std::vector<Candidate>* out) {
  Bell& b = table_[bell];
  if (word == b.last_word) return;
  b.last_word = word;
  ++rings_;
  uint32_t mask = wire::BellMask(word);
  if (mask == 0) mask = ~0u;
  for (uint32_t s = 0; s < b.slots; ++s) {
    if (mask & wire::SlotBit(s)) out->push_back(Candidate{bell, s});
  }
}

void WorkFinder::ReadGroup(uint32_t group, std::vector<Candidate>* out) {
  const uint32_t first = group * wire::BellsLayout::kGroup;
  const uint32_t end =
      std::min<uint32_t>(first + wire::BellsLayout::kGroup, layout_.capacity);
  const bool seen = end <= direct_seen_.size();
  for (uint32_t bell = first; bell < end; ++bell) {
    const uint64_t word = LoadAcquire64(bells_ + layout_.WordOffset(bell));
    if (seen) direct_seen_[bell] = word;
    if (!table_[bell].used) continue;
    TakeWord(bell, word, out);
  }
}

void WorkFinder::TakeGroup(uint32_t group, std::vector<Candidate>* out) {
  ReadGroup(group, out);
  if (direct() || options_.max_hot_groups == 0) return;
  // Rung: read it directly for a window (its next rings skip the summary).
  const int64_t until = now_ + options_.hot_window_ns;
  const int32_t i = hot_group_index_[group];
  if (i >= 0) {
    hot_groups_[static_cast<size_t>(i)].until_ns = until;
  } else if (hot_groups_.size() < options_.max_hot_groups) {
    hot_group_index_[group] = static_cast<int32_t>(hot_groups_.size());
    hot_groups_.push_back(HotGroup{group, until});
  }
}

void WorkFinder::DropHotGroup(size_t i) {
  hot_group_index_[hot_groups_[i].group] = -1;
  if (i + 1 != hot_groups_.size()) {
    hot_groups_[i] = hot_groups_.back();
    hot_group_index_[hot_groups_[i].group] = static_cast<int32_t>(i);
  }
  hot_groups_.pop_back();
}

void WorkFinder::TakeGroupIfChanged(uint32_t group,
                                    std::vector<Candidate>* out) {
  constexpr uint32_t kGroup = wire::BellsLayout::kGroup;
  const uint32_t first = group * kGroup;
  uint64_t* seen = &direct_seen_[first];
  // The group's words are one line (8-byte aligned words at WordOffset):
  // relaxed loads and or-ed differences, one branch while nothing rang.
  // Only then ReadGroup's acquire loads, which order what a changed word
  // announces (the request) after it.
  const auto* line =
      reinterpret_cast<const uint64_t*>(bells_ + layout_.WordOffset(first));
  uint64_t diff = 0;
  for (uint32_t i = 0; i < kGroup; ++i) {
    diff |= __atomic_load_n(line + i, __ATOMIC_RELAXED) ^ seen[i];
  }
  if (diff != 0) ReadGroup(group, out);
}

void WorkFinder::TakeTaken(size_t w, uint64_t taken,
                           std::vector<Candidate>* out) {
  for (uint32_t byte = 0; taken != 0; ++byte, taken >>= 8) {
    if ((taken & 0xff) != 0) {
      TakeGroup(static_cast<uint32_t>(w * 8 + byte), out);
    }
  }
}

void WorkFinder::Collect(int64_t now, std::vector<Candidate>* out) {
  now_ = now;
  for (uint32_t bell : added_) {
    if (!table_[bell].used) continue;  // Removed again.
    TakeWord(bell, LoadAcquire64(bells_ + layout_.WordOffset(bell)), out);
  }
  added_.clear();
  // Groups read directly: every group in direct mode, else the hot ones.
  const size_t before_groups = out->size();
  if (direct()) {
    for (uint32_t g = 0; g < groups_; ++g) TakeGroupIfChanged(g, out);
  } else {
    for (size_t i = 0; i < hot_groups_.size();) {
      TakeGroupIfChanged(hot_groups_[i].group, out);
      if (hot_groups_[i].until_ns < now) {
        DropHotGroup(i);  // Its final look; `i` now holds another.
      } else {
        ++i;
      }
    }
  }
  const bool found_in_groups = out->size() > before_groups;
  for (size_t i = 0; i < hot_.size();) {
    const Hot h = hot_[i];
    out->push_back(Candidate{h.bell, h.slot});
    if (h.until_ns < now) {
      DropHot(i);  // This was its final look; `i` now holds another.
    } else {
      ++i;
    }
  }
  if (direct()) return;
  // A round whose hot groups named work leaves the summary to the next
  // round: its line, which the rings' byte stores took away, would delay
  // serving what was found. Never two rounds in a row.
  const bool defer = found_in_groups && !deferred_;
  deferred_ = defer;
  if (defer) return;
  // Clear the summary words whose groups the previous round took. The
  // exchange is atomic against peers' byte stores (none is lost between our
  // earlier load and this clear) and a full barrier: the groups whose bytes
  // it took are read again, so a ring that landed after that earlier read
  // (its bell word, then its byte, already set) is found now, and one that
  // lands after the clear sets its byte again for the scan below.
  for (const size_t w : uncleared_) {
    const uint64_t taken = __atomic_exchange_n(
        reinterpret_cast<uint64_t*>(bells_ + 8 * w), uint64_t{0},
        __ATOMIC_SEQ_CST);
    TakeTaken(w, taken, out);
  }
  uncleared_.clear();
  // The groups that rang: their bell words are read at once and the
  // summary word is cleared next round. Clearing first would put the
  // exchange's round trip for the line (the client's byte store owns it)
  // between the ring and its request on every doorbell call.
  const size_t words = summary_words_;
  for (size_t w = 0; w < words; ++w) {
    const uint64_t rang = LoadAcquire64(bells_ + 8 * w);
    if (rang == 0) continue;
    TakeTaken(w, rang, out);
    uncleared_.push_back(w);
  }
}

}  // namespace internal
}  // namespace rfrpc
