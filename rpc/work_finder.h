// Copyright 2026 The rfrpc Authors.
//
// WorkFinder: which request slots a server worker should look at, found in
// time proportional to the requests that arrived rather than to the
// connections that exist (issue 15; docs/rpc.md "Work discovery").
//
// Two sources, both cheap when nothing happens:
//   - Doorbells (wire::BellsLayout). A client that posts a request WRITEs its
//     bell word (a ring count and a slot mask) and then its group's summary
//     byte. Collect() reads the summary a word (8 groups) at a time, and for
//     each group that rang reads its 8 bell words (one cache line); a word
//     that differs from the last one seen names the slots to look at. The
//     next Collect swaps those summary words to 0 (an atomic exchange: no
//     ring between the load and the clear is lost, and it fences the reads
//     of the bell words it took, which it reads again): the clear is off
//     the path between a ring and its request. An idle worker with N
//     connections reads N / 64 summary words. While its bells in use fit
//     in Options::direct_groups groups, it reads their bell words directly
//     instead (a line per group, every round): one line transfer fewer
//     between a ring and its request. Past them, a group the summary named
//     is read that way for a window (Options::max_hot_groups), and a round
//     that found work there leaves the summary to the next.
//   - Hot slots. A slot served twice within half the hot window (the
//     client skips the doorbell only within half of it) is kept in a
//     short list and looked at every round for `hot_window` after each
//     request (OnServed says so, and the response carries
//     kResponseFlagHot): a client calling in a loop then needs no doorbell.
//     A hot slot is looked at once more after its window ends (the final
//     check), so a request that landed inside the window is never missed.
// A slot the worker could not serve yet (its previous result's server-reply
// WRITE is still in flight, or its request is still landing) is handed back
// with KeepPolling and looked at for another window.
//
// Pure logic over memory it is given: no transport, no clock of its own
// (every call takes `now`), so it is unit-tested with a plain buffer as the
// doorbell area and a fake clock (rpc/work_finder_test.cc).
//
// Thread-compatible: one worker thread drives it. The doorbell memory is
// written concurrently by peers (through the transport), which it reads
// with acquire loads and clears with atomic exchanges.

#ifndef RFRPC_RPC_WORK_FINDER_H_
#define RFRPC_RPC_WORK_FINDER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rpc/wire_format.h"

namespace rfrpc {
namespace internal {

class WorkFinder {
 public:
  struct Options {
    // Bells (connections) the doorbell area holds; a multiple of 64.
    uint32_t capacity = 0;
    // How long a hot slot is polled after each of its requests.
    int64_t hot_window_ns = 50000;
    // Hot slots at most: a slot is not made hot while the list is full (its
    // client then rings), which bounds what a round costs.
    size_t max_hot = 128;
    // While every bell in use lies in the first `direct_groups` groups
    // (kGroup bells, one line of bell words each), Collect reads those
    // groups' bell words every round instead of the summary: one line
    // transfer fewer between a ring and its request, for a bounded read of
    // at most this many lines a round. 0: always the summary.
    uint32_t direct_groups = 0;
    // Past the direct groups: a group whose ring the summary named is read
    // directly every round for `hot_window` after it (its line compared
    // with the last copy, as in direct mode), at most this many groups at
    // once. A client calling round robin over many connections rings the 8
    // bells of a group one after another: all but the first are then found
    // without the summary line. 0: none.
    uint32_t max_hot_groups = 0;
  };

  // A slot to look at.
  struct Candidate {
    uint32_t bell;
    uint32_t slot;
  };

  // `bells` (not owned) is the doorbell area: wire::BellsLayout{capacity}.
  // Bytes() bytes, 8-byte aligned, zeroed or holding what peers wrote.
  WorkFinder(char* bells, const Options& options);

  const wire::BellsLayout& layout() const { return layout_; }

  // A connection took bell `bell` with `slots` slots (at most 64). If the
  // bell word changed since the bell's previous owner left (its client rang
  // before the worker took it on, and Collect may have taken the summary
  // byte then), the next Collect names the slots that ring asked for.
  // REQUIRES: bell < capacity, not in use.
  void Add(uint32_t bell, uint32_t slots);
  // The connection left; its hot slots are dropped.
  void Remove(uint32_t bell);

  // Appends the slots to look at this round: every hot slot (and drops
  // those whose window ended before `now`, after this last look), then every
  // slot named by a bell that rang. A slot may appear twice.
  void Collect(int64_t now, std::vector<Candidate>* out);

  // True if a summary byte is set: a ring that Collect has not taken yet
  // (or one the last Collect took, whose byte the next one clears). For
  // the check between arming a wake-up and sleeping.
  bool AnyRung() const;

  // Bell `bell`'s slot `slot` was served at `now`. Returns true if it is
  // hot from now on (served within the window of its previous request, and
  // room in the list), and keeps it polled until now + hot_window.
  bool OnServed(uint32_t bell, uint32_t slot, int64_t now);

  // Keeps polling `slot` of `bell` until now + hot_window (a slot that rang
  // but could not be served yet).
  void KeepPolling(uint32_t bell, uint32_t slot, int64_t now);

  // Hot slots in the list (including ones kept polling).
  size_t hot() const { return hot_.size(); }
  // Hot groups (Options::max_hot_groups) in the list.
  size_t hot_groups() const { return hot_groups_.size(); }
  // Rings taken (bell words found changed) since construction.
  uint64_t rings() const { return rings_; }

 private:
  struct Hot {
    uint32_t bell;
    uint32_t slot;
    int64_t until_ns;
  };
  struct Bell {
    bool used = false;
    uint32_t slots = 0;
    // The bell word as last seen; kept while the bell is unused.
    uint64_t last_word = 0;
    // Per slot: when it was last served (INT64_MIN: never) and its index in
    // hot_ (-1: not there).
    std::vector<int64_t> served_ns;
    std::vector<int32_t> hot_index;
  };

  void MakeHot(Bell& b, uint32_t bell, uint32_t slot, int64_t until);
  void DropHot(size_t i);
  // Reads `group`'s bell words (noting them in direct_seen_ if it covers
  // them) and takes those of bells in use.
  void ReadGroup(uint32_t group, std::vector<Candidate>* out);
  // ReadGroup for a group the summary named, which then turns hot
  // (Options::max_hot_groups).
  void TakeGroup(uint32_t group, std::vector<Candidate>* out);
  // Direct mode: takes `group` if its line of bell words changed since
  // this last looked (a line's 8 compares per round, nothing more, while
  // no client rings).
  void TakeGroupIfChanged(uint32_t group, std::vector<Candidate>* out);
  // Takes every group whose byte is set in summary word `w`'s value.
  void TakeTaken(size_t w, uint64_t taken, std::vector<Candidate>* out);
  // Names the slots `word` asks for, if it differs from the last one seen.
  void TakeWord(uint32_t bell, uint64_t word, std::vector<Candidate>* out);

  char* const bells_;
  const wire::BellsLayout layout_;
  const Options options_;
  std::vector<Bell> table_;
  std::vector<Hot> hot_;
  std::vector<uint32_t> added_;  // Bells whose slots Collect names once.
  // Summary words that can hold a ring of a bell in use: bells are handed
  // out lowest first, so with N connections Collect reads about N / 64
  // words, not capacity / 64. Only grows (a freed bell may be rung late).
  size_t summary_words_ = 0;
  // Groups that can hold a bell in use (bells lowest first; only grows).
  uint32_t groups_ = 0;
  // The bell words as TakeGroupIfChanged or TakeGroup last read them (of
  // every bell of the groups it may read, used or not).
  std::vector<uint64_t> direct_seen_;
  // Hot groups (Options::max_hot_groups) and, per group, its index in
  // hot_groups_ (-1: not there).
  struct HotGroup {
    uint32_t group;
    int64_t until_ns;
  };
  std::vector<HotGroup> hot_groups_;
  std::vector<int32_t> hot_group_index_;
  int64_t now_ = 0;        // Collect's `now`, for TakeGroup.
  bool deferred_ = false;  // The last Collect skipped the summary.
  void DropHotGroup(size_t i);
  bool direct() const { return groups_ <= options_.direct_groups; }
  // Summary words whose rings the last Collect took, to clear in the next.
  std::vector<size_t> uncleared_;
  uint64_t rings_ = 0;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_WORK_FINDER_H_
