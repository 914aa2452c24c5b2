// Copyright 2026 The rfrpc Authors.
//
// SendQueueCount: how many of a connection's send-queue entries are in use,
// counted the way an RC queue pair holds them. A work request keeps its
// entry until its own completion, or a later signaled one's, has been
// polled: a queue pair completes its send queue in order, so a completion
// retires every request posted before it. Unsignaled requests never
// complete on their own.
//
// A completion that never comes (a fault) is passed over by the next one.
// wr_ids may repeat; a completion is matched to the oldest outstanding
// signaled request with its wr_id, which at worst retires less than it
// could, never more.
//
//   SendQueueCount sq;
//   for (const WorkRequest& wr : list) sq.Posted(wr.wr_id, wr.signaled);
//   ...
//   sq.Completed(completion.wr_id);
//   if (sq.in_use() + n > depth) { /* poll before posting n more */ }
//
// Not thread-safe: the owner serializes.

#ifndef RFRPC_TRANSPORT_SEND_QUEUE_COUNT_H_
#define RFRPC_TRANSPORT_SEND_QUEUE_COUNT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

namespace rfrpc {
namespace transport {

class SendQueueCount {
 public:
  void Posted(uint64_t wr_id, bool signaled) {
    ++posted_;
    if (signaled) marks_.emplace_back(wr_id, posted_);
  }

  void Completed(uint64_t wr_id) {
    for (size_t i = 0; i < marks_.size(); ++i) {
      if (marks_[i].first != wr_id) continue;
      retired_ = std::max(retired_, marks_[i].second);
      marks_.erase(marks_.begin(), marks_.begin() + static_cast<long>(i) + 1);
      return;
    }
  }

  // Entries posted and not yet retired.
  uint64_t in_use() const { return posted_ - retired_; }
  // Whether a signaled request is outstanding (something can retire
  // entries).
  bool awaiting_completion() const { return !marks_.empty(); }

 private:
  uint64_t posted_ = 0;
  uint64_t retired_ = 0;
  // (wr_id, posted_ at it) of each signaled request not yet completed.
  std::deque<std::pair<uint64_t, uint64_t>> marks_;
};

}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_SEND_QUEUE_COUNT_H_
