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
#include <vector>

namespace rfrpc {
namespace transport {

class SendQueueCount {
 public:
  void Posted(uint64_t wr_id, bool signaled) {
    ++posted_;
    if (!signaled) return;
    if (size_ == marks_.size()) Grow();
    marks_[(head_ + size_) & (marks_.size() - 1)] = Mark{wr_id, posted_};
    ++size_;
  }

  void Completed(uint64_t wr_id) {
    const size_t mask = marks_.size() - 1;
    for (size_t i = 0; i < size_; ++i) {
      const Mark& m = marks_[(head_ + i) & mask];
      if (m.wr_id != wr_id) continue;
      retired_ = std::max(retired_, m.posted);
      head_ = (head_ + i + 1) & mask;
      size_ -= i + 1;
      return;
    }
  }

  // Entries posted and not yet retired.
  uint64_t in_use() const { return posted_ - retired_; }
  // Whether a signaled request is outstanding (something can retire
  // entries).
  bool awaiting_completion() const { return size_ != 0; }

 private:
  // A signaled request not yet completed: its wr_id and posted_ at it.
  struct Mark {
    uint64_t wr_id;
    uint64_t posted;
  };

  // Doubles the ring (a power of two), oldest mark first.
  void Grow() {
    std::vector<Mark> bigger(std::max<size_t>(16, 2 * marks_.size()));
    for (size_t i = 0; i < size_; ++i) {
      bigger[i] = marks_[(head_ + i) & (marks_.size() - 1)];
    }
    marks_.swap(bigger);
    head_ = 0;
  }

  uint64_t posted_ = 0;
  uint64_t retired_ = 0;
  // A ring of the outstanding marks, oldest at head_: a fixed block reused
  // call after call (a deque's blocks came and went every 32 marks, and a
  // connection cycled through with thousands of others found them cold).
  std::vector<Mark> marks_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_SEND_QUEUE_COUNT_H_
