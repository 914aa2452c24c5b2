// Copyright 2026 The rfrpc Authors.
//
// The verbs provider's data path: Post() (one ibv_post_send per post list),
// completion polling and the adaptive Wait() (RDMAbox, Algorithm 3).
// Nothing here exits or aborts: errors become statuses and failed
// connections.

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "transport/adaptive_wait.h"
#include "transport/verbs/verbs_internal.h"

namespace rfrpc {
namespace transport {
namespace verbs {
namespace {

constexpr int kMaxPollBatch = 64;

const char* OpName(Opcode op) { return op == Opcode::kRead ? "READ" : "WRITE"; }

}  // namespace

int PostNotifyReceives(ibv_qp* qp, int n) {
  for (int i = 0; i < n; ++i) {
    ibv_recv_wr wr{};
    wr.wr_id = kNotifyReceiveWrId;
    wr.sg_list = nullptr;
    wr.num_sge = 0;  // WRITE with immediate carries no data into it.
    ibv_recv_wr* bad = nullptr;
    if (int rc = ibv_post_recv(qp, &wr, &bad); rc != 0) return rc;
  }
  return 0;
}

WcStatus MapWcStatus(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return WcStatus::kSuccess;
    case IBV_WC_REM_ACCESS_ERR:
      return WcStatus::kRemoteAccessError;
    case IBV_WC_RETRY_EXC_ERR:
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return WcStatus::kRetryExceeded;
    case IBV_WC_WR_FLUSH_ERR:
      return WcStatus::kFlushed;
    case IBV_WC_LOC_LEN_ERR:
    case IBV_WC_LOC_QP_OP_ERR:
    case IBV_WC_LOC_EEC_OP_ERR:
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_LOC_RDD_VIOL_ERR:
    case IBV_WC_MW_BIND_ERR:
      return WcStatus::kLocalError;
    default:
      return WcStatus::kOther;
  }
}

// ---------------------------------------------------------------------------
// VerbsConnection: posting.

absl::StatusOr<uint32_t> VerbsConnection::LocalKey(const MemoryRegion* region) {
  const auto* vr = dynamic_cast<const VerbsMemoryRegion*>(region);
  if (vr == nullptr) {
    return absl::InvalidArgumentError(
        "work request names memory not allocated by the verbs provider");
  }
  if (region == last_region_ && vr->serial() == last_serial_) {
    return last_lkey_;
  }
  auto it = local_mrs_.find(region);
  if (it != local_mrs_.end() && it->second.serial == vr->serial()) {
    last_region_ = region;
    last_serial_ = vr->serial();
    last_lkey_ = it->second.mr->get()->lkey;
    return last_lkey_;
  }
  // First use in this connection (or a new region at a reused address):
  // register it in this connection's PD with local rights only.
  absl::StatusOr<std::unique_ptr<VerbsMr>> mr =
      VerbsMr::Register(pd_->get(), region->data(), region->size(),
                        IBV_ACCESS_LOCAL_WRITE);
  if (!mr.ok()) return mr.status();
  LocalMr& slot = local_mrs_[region];
  slot.serial = vr->serial();
  slot.mr = std::move(mr).value();
  last_region_ = region;
  last_serial_ = vr->serial();
  last_lkey_ = slot.mr->get()->lkey;
  return last_lkey_;
}

absl::Status VerbsConnection::FailedPost(absl::Span<const WorkRequest> wrs) {
  for (const WorkRequest& wr : wrs) {
    if (!wr.signaled) continue;
    Completion c;
    c.wr_id = wr.wr_id;
    c.opcode = wr.opcode;
    c.status = WcStatus::kFlushed;
    c.connection = this;
    c.connection_id = id();
    counters_.completions.fetch_add(1, std::memory_order_relaxed);
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    cq_->PushSoftware(c);
  }
  return status();
}

absl::Status VerbsConnection::Post(absl::Span<const WorkRequest> wrs) {
  if (wrs.empty()) return absl::OkStatus();
  if (failed_.load(std::memory_order_acquire)) return FailedPost(wrs);

  const size_t n = wrs.size();
  if (wr_scratch_.size() < n) {
    wr_scratch_.resize(n);
    sge_scratch_.resize(n);
  }
  uint64_t writes = 0, reads = 0, inlined = 0, signaled = 0, notifies = 0;
  uint64_t bytes_written = 0, bytes_read = 0;
  const uint64_t first_seq = next_seq_;

  // Validate and translate everything first: an invalid request posts
  // nothing.
  for (size_t i = 0; i < n; ++i) {
    const WorkRequest& wr = wrs[i];
    ibv_send_wr& w = wr_scratch_[i];
    ibv_sge& sge = sge_scratch_[i];
    w = ibv_send_wr{};
    sge = ibv_sge{};
    w.wr_id = first_seq + i;
    w.next = i + 1 < n ? &wr_scratch_[i + 1] : nullptr;
    w.sg_list = &sge;
    w.num_sge = 1;
    w.wr.rdma.remote_addr = wr.remote.addr + wr.remote_offset;
    w.wr.rdma.rkey = wr.remote.rkey;
    if (wr.signaled) {
      w.send_flags |= IBV_SEND_SIGNALED;
      ++signaled;
    }
    sge.length = wr.length;
    if (wr.local != nullptr &&
        (wr.local_offset > wr.local->size() ||
         wr.length > wr.local->size() - wr.local_offset)) {
      return absl::OutOfRangeError(absl::StrCat(
          "work request ", i, " (wr_id ", wr.wr_id, "): local range [",
          wr.local_offset, ", +", wr.length, ") outside its ",
          wr.local->size(), "-byte region; nothing posted"));
    }
    if (wr.notify && wr.opcode != Opcode::kWrite) {
      return absl::InvalidArgumentError(absl::StrCat(
          "work request ", i, ": only a WRITE can notify; nothing posted"));
    }
    if (wr.opcode == Opcode::kWrite) {
      if (wr.notify) {
        w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        w.imm_data = 0;
        ++notifies;
      } else {
        w.opcode = IBV_WR_RDMA_WRITE;
      }
      ++writes;
      bytes_written += wr.length;
      if (wr.inline_write) {
        if (wr.length > max_inline_) {
          return absl::InvalidArgumentError(absl::StrCat(
              "work request ", i, " (wr_id ", wr.wr_id, "): inline WRITE of ",
              wr.length, " bytes exceeds the inline limit ", max_inline_,
              "; nothing posted"));
        }
        const void* src = wr.inline_data;
        if (src == nullptr) {
          if (wr.local == nullptr) {
            return absl::InvalidArgumentError(absl::StrCat(
                "work request ", i, ": inline WRITE with neither inline_data "
                "nor local; nothing posted"));
          }
          src = wr.local->data() + wr.local_offset;
        }
        w.send_flags |= IBV_SEND_INLINE;
        sge.addr = reinterpret_cast<uintptr_t>(src);
        sge.lkey = 0;  // Ignored for inline data.
        ++inlined;
        continue;
      }
    } else if (wr.opcode == Opcode::kRead) {
      w.opcode = IBV_WR_RDMA_READ;
      ++reads;
      bytes_read += wr.length;
      if (wr.inline_write) {
        return absl::InvalidArgumentError(absl::StrCat(
            "work request ", i, ": a READ cannot be inline; nothing posted"));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("work request ", i, ": unknown opcode"));
    }
    if (wr.local == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "work request ", i, " (wr_id ", wr.wr_id,
          "): local region is null; nothing posted"));
    }
    absl::StatusOr<uint32_t> lkey = LocalKey(wr.local);
    if (!lkey.ok()) return lkey.status();
    sge.addr = reinterpret_cast<uintptr_t>(wr.local->data() + wr.local_offset);
    sge.lkey = *lkey;
  }

  // Record before posting: a completion may arrive before ibv_post_send
  // returns.
  {
    absl::MutexLock lock(&pending_mu_);
    for (size_t i = 0; i < n; ++i) {
      pending_.push_back(Pending{first_seq + i, wrs[i].wr_id, wrs[i].length,
                                 wrs[i].opcode});
    }
  }
  next_seq_ += n;

  ibv_send_wr* bad = nullptr;
  const int rc = ibv_post_send(qp_->get(), &wr_scratch_[0], &bad);
  if (rc != 0) {
    const size_t bad_index =
        bad == nullptr ? 0 : static_cast<size_t>(bad - &wr_scratch_[0]);
    {
      // The failing request and those after it were not posted.
      absl::MutexLock lock(&pending_mu_);
      for (size_t i = bad_index; i < n && !pending_.empty(); ++i) {
        pending_.pop_back();
      }
    }
    const std::string what = absl::StrCat(
        "ibv_post_send failed at request ", bad_index, " of ", n, ": ",
        strerror(rc), " (errno ", rc, ")");
    if (rc == ENOMEM) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what, "; send queue full (max_outstanding)"));
    }
    MarkFailed(absl::InternalError(what));
    return status();
  }

  counters_.post_lists.fetch_add(1, std::memory_order_relaxed);
  counters_.writes.fetch_add(writes, std::memory_order_relaxed);
  counters_.reads.fetch_add(reads, std::memory_order_relaxed);
  counters_.inline_writes.fetch_add(inlined, std::memory_order_relaxed);
  counters_.signaled.fetch_add(signaled, std::memory_order_relaxed);
  counters_.notifies.fetch_add(notifies, std::memory_order_relaxed);
  counters_.bytes_written.fetch_add(bytes_written, std::memory_order_relaxed);
  counters_.bytes_read.fetch_add(bytes_read, std::memory_order_relaxed);
  return absl::OkStatus();
}

bool VerbsConnection::RepostNotifyReceive() {
  return PostNotifyReceives(qp_->get(), 1) == 0;
}

bool VerbsConnection::OnWorkCompletion(const ibv_wc& wc, Completion* out) {
  Pending p{};
  bool found = false;
  {
    absl::MutexLock lock(&pending_mu_);
    while (!pending_.empty() && pending_.front().seq <= wc.wr_id) {
      p = pending_.front();
      pending_.pop_front();
      if (p.seq == wc.wr_id) {
        found = true;
        break;
      }
    }
  }
  if (!found) {
    LOG(ERROR) << "verbs connection " << id() << ": completion for unknown "
               << "request " << wc.wr_id << " ("
               << ibv_wc_status_str(wc.status) << "); dropped";
    return false;
  }
  out->wr_id = p.wr_id;
  out->opcode = p.opcode;
  out->status = MapWcStatus(wc.status);
  out->byte_len = wc.status != IBV_WC_SUCCESS ? 0
                  : p.opcode == Opcode::kRead ? wc.byte_len
                                              : p.length;
  out->connection = this;
  out->connection_id = id();
  counters_.completions.fetch_add(1, std::memory_order_relaxed);
  if (wc.status != IBV_WC_SUCCESS) {
    counters_.errors.fetch_add(1, std::memory_order_relaxed);
    if (!failed_.load(std::memory_order_acquire)) {
      MarkFailed(absl::UnavailableError(absl::StrCat(
          OpName(p.opcode), " wr_id ", p.wr_id, " completed with ",
          ibv_wc_status_str(wc.status), " (ibv_wc_status ", wc.status,
          ", vendor_err 0x", absl::Hex(wc.vendor_err), ")")));
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// VerbsCompletionQueue: polling.

int VerbsCompletionQueue::Poll(absl::Span<Completion> out) {
  if (out.empty()) return 0;
  size_t n = 0;
  if (software_count_.load(std::memory_order_acquire) != 0) {
    absl::MutexLock lock(&mu_);
    while (n < out.size() && !software_.empty()) {
      out[n++] = software_.front();
      software_.pop_front();
    }
    software_count_.store(software_.size(), std::memory_order_release);
  }
  if (n < out.size()) {
    ibv_wc wc[kMaxPollBatch];
    const int want =
        static_cast<int>(std::min<size_t>(out.size() - n, kMaxPollBatch));
    const int got = ibv_poll_cq(cq_->get(), want, wc);
    if (got < 0) {
      LOG_EVERY_N(ERROR, 1000) << "verbs: ibv_poll_cq failed (" << got
                               << "); completion queue in error";
    } else if (got > 0) {
      absl::ReaderMutexLock lock(&mu_);
      for (int i = 0; i < got; ++i) {
        auto it = conns_.find(wc[i].qp_num);
        if (it == conns_.end()) {
          stats_.dropped.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        // A receive: matched by wr_id, since wc.opcode is undefined in an
        // error (e.g. flushed) completion; send wr_ids are sequence
        // numbers from 1.
        if (wc[i].wr_id == kNotifyReceiveWrId) {
          // A peer's notify (WRITE with immediate): it has woken us; the
          // user sees nothing. Flushed receives of a failed QP are dropped.
          if (wc[i].status == IBV_WC_SUCCESS) {
            stats_.notifies.fetch_add(1, std::memory_order_relaxed);
            if (!it->second->RepostNotifyReceive()) {
              LOG_EVERY_N(WARNING, 100)
                  << "verbs: could not repost a notify receive on QP "
                  << wc[i].qp_num;
            }
          }
          continue;
        }
        if (it->second->OnWorkCompletion(wc[i], &out[n])) ++n;
      }
    }
  }
  stats_.polls.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) {
    stats_.empty_polls.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats_.completions.fetch_add(n, std::memory_order_relaxed);
  }
  return static_cast<int>(n);
}

bool VerbsCompletionQueue::Block(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return false;
  stats_.blocks.fetch_add(1, std::memory_order_relaxed);
  pollfd fds[2] = {{channel_->get()->fd, POLLIN, 0},
                   {wake_fd_.get(), POLLIN, 0}};
  const int64_t ms = std::min<int64_t>(
      absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))),
      1 << 30);
  const int r = ::poll(fds, 2, static_cast<int>(ms));
  if (r <= 0) return false;  // Timeout or EINTR: the caller re-polls.
  if (fds[0].revents & POLLIN) {
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    int events = 0;
    while (ibv_get_cq_event(channel_->get(), &ev_cq, &ev_ctx) == 0) {
      ibv_ack_cq_events(ev_cq, 1);
      ++events;
    }
    if (events > 0) stats_.wakeups.fetch_add(1, std::memory_order_relaxed);
  }
  if (fds[1].revents & POLLIN) {
    uint64_t v;
    while (::read(wake_fd_.get(), &v, sizeof(v)) == sizeof(v)) {
    }
  }
  return true;
}

void VerbsCompletionQueue::ArmWake() {
  // Any completion from here on (a notify receive included) raises an event
  // on the channel; one that arrived before is found by WaitArmed's poll.
  ArmEvent();
}

void VerbsCompletionQueue::Disarm() {
  // A verbs CQ cannot be disarmed: an event may still fire; the next Block
  // acks it.
}

absl::StatusOr<int> VerbsCompletionQueue::WaitArmed(absl::Span<Completion> out,
                                                    absl::Duration timeout) {
  if (out.empty()) {
    return absl::InvalidArgumentError("WaitArmed: empty output span");
  }
  const absl::Time deadline = absl::Now() + timeout;
  uint64_t notified = stats_.notifies.load(std::memory_order_relaxed);
  for (;;) {
    const int n = Poll(out);
    if (n > 0) return n;
    if (stats_.notifies.load(std::memory_order_relaxed) != notified) return 0;
    if (interrupted_.exchange(false, std::memory_order_acq_rel)) {
      return absl::DeadlineExceededError("completion queue wait interrupted");
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          "no completion or notify before the deadline");
    }
    if (Block(deadline)) {
      // Woken: whatever woke us is polled next round; re-arm so a later
      // completion still raises an event if that was something else.
      ArmWake();
    }
  }
}

absl::Status VerbsCompletionQueue::WaitWoken(absl::Duration timeout) {
  // The channel's events and the eventfd only: ibv_poll_cq is left to the
  // pollers (a notify receive is consumed, and reposted, by the next Poll).
  if (interrupted_.exchange(false, std::memory_order_acq_rel) ||
      Block(absl::Now() + timeout)) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(
      "no completion or notify before the deadline");
}

absl::StatusOr<int> VerbsCompletionQueue::Wait(absl::Span<Completion> out,
                                               absl::Duration timeout) {
  return AdaptiveWait(this, options_, out, timeout);
}

void VerbsCompletionQueue::ArmEvent() {
  if (int rc = ibv_req_notify_cq(cq_->get(), 0); rc != 0) {
    LOG_EVERY_N(ERROR, 100) << "verbs: ibv_req_notify_cq: " << strerror(rc);
  }
}

void VerbsCompletionQueue::Interrupt() {
  interrupted_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  if (::write(wake_fd_.get(), &one, sizeof(one)) < 0) {
    LOG_EVERY_N(WARNING, 100) << "verbs: eventfd write: " << strerror(errno);
  }
}

void VerbsCompletionQueue::PushSoftware(const Completion& c) {
  {
    absl::MutexLock lock(&mu_);
    software_.push_back(c);
    software_count_.store(software_.size(), std::memory_order_release);
  }
  const uint64_t one = 1;
  if (::write(wake_fd_.get(), &one, sizeof(one)) < 0) {
    LOG_EVERY_N(WARNING, 100) << "verbs: eventfd write: " << strerror(errno);
  }
}

CompletionQueue::Stats VerbsCompletionQueue::stats() const {
  Stats s;
  s.polls = stats_.polls.load(std::memory_order_relaxed);
  s.empty_polls = stats_.empty_polls.load(std::memory_order_relaxed);
  s.completions = stats_.completions.load(std::memory_order_relaxed);
  s.blocks = stats_.blocks.load(std::memory_order_relaxed);
  s.wakeups = stats_.wakeups.load(std::memory_order_relaxed);
  s.notifies = stats_.notifies.load(std::memory_order_relaxed);
  return s;
}

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc
