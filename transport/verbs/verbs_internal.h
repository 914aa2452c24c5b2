// Copyright 2026 The rfrpc Authors.
//
// Internal classes of the verbs provider, shared by its setup code
// (verbs_provider.cc) and its data path (verbs_datapath.cc). Not part of the
// public interface: use transport/transport.h.
//
// Ownership: a Device (ibv context plus port facts) is shared (shared_ptr) by
// the provider, every completion queue and every connection, so it outlives
// all of them whatever order the caller destroys them in. A connection needs
// its CompletionQueue to outlive it (ConnectionSetup::cq is not owned).

#ifndef RFRPC_TRANSPORT_VERBS_VERBS_INTERNAL_H_
#define RFRPC_TRANSPORT_VERBS_VERBS_INTERNAL_H_

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "transport/bootstrap.h"
#include "transport/adaptive_wait.h"
#include "transport/liveness_monitor.h"
#include "transport/transport.h"
#include "transport/verbs/verbs_resources.h"

namespace rfrpc {
namespace transport {
namespace verbs {

// The opened device. Immutable after OpenVerbsProvider; thread-safe.
struct Device {
  // Declared first, destroyed last: connections hold the Device, so it
  // outlives every connection watched.
  std::unique_ptr<LivenessMonitor> monitor;  // One thread for all sockets.
  std::unique_ptr<VerbsContext> context;
  ibv_device_attr attr{};
  PortInfo port;
  std::string name;
};

// Page-aligned anonymous memory (mmap), zero-filled. Registered lazily, per
// connection, in that connection's protection domain (see verbs_provider.h).
class VerbsMemoryRegion final : public MemoryRegion {
 public:
  static absl::StatusOr<std::unique_ptr<VerbsMemoryRegion>> Allocate(
      size_t size);
  ~VerbsMemoryRegion() override;

  // Unique per allocation in this process, so a connection's registration
  // cache never mistakes a new region at a reused address for an old one.
  uint64_t serial() const { return serial_; }

 private:
  VerbsMemoryRegion(char* data, size_t size, size_t mapped, uint64_t serial)
      : MemoryRegion(data, size), mapped_(mapped), serial_(serial) {}
  const size_t mapped_;
  const uint64_t serial_;
};

class VerbsConnection;

// A completion queue with its completion channel and adaptive polling.
// Poll/Wait from one thread at a time; Interrupt and stats from any thread.
class VerbsCompletionQueue final : public CompletionQueue {
 public:
  static absl::StatusOr<std::unique_ptr<VerbsCompletionQueue>> Create(
      std::shared_ptr<Device> device, const CompletionQueueOptions& options);
  ~VerbsCompletionQueue() override;

  // Data path (verbs_datapath.cc).
  int Poll(absl::Span<Completion> out) override;
  absl::StatusOr<int> Wait(absl::Span<Completion> out,
                           absl::Duration timeout) override;
  void Interrupt() override;
  void ArmWake() override;
  void Disarm() override;
  absl::StatusOr<int> WaitArmed(absl::Span<Completion> out,
                                absl::Duration timeout) override;
  absl::Status WaitWoken(absl::Duration timeout) override;
  Stats stats() const override;

  const Device* device() const { return device_.get(); }
  ibv_cq* cq() const { return cq_->get(); }
  int depth() const { return options_.depth; }

  // Routes completions of QP `qpn` to `conn` (not owned). Detach blocks until
  // no poller is using `conn`. Thread-safe.
  void Attach(uint32_t qpn, VerbsConnection* conn) ABSL_LOCKS_EXCLUDED(mu_);
  void Detach(uint32_t qpn, const VerbsConnection* conn)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Queues a completion made in software (kFlushed for requests posted on a
  // failed connection) and wakes a blocked Wait(). Thread-safe.
  void PushSoftware(const Completion& c) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  VerbsCompletionQueue(std::shared_ptr<Device> device,
                       const CompletionQueueOptions& options)
      : device_(std::move(device)), options_(options) {}

  // Blocks on the channel fd and the wake fd until `deadline`; acks events.
  // Returns true if the channel or the wake fd fired (false: timed out).
  bool Block(absl::Time deadline);

  // AdaptiveWait's hooks (transport/adaptive_wait.h).
  template <typename Q>
  friend absl::StatusOr<int> transport::AdaptiveWait(
      Q* q, const CompletionQueueOptions& o, absl::Span<Completion> out,
      absl::Duration timeout);
  bool TakeInterrupt() {
    return interrupted_.exchange(false, std::memory_order_acq_rel);
  }
  void ArmEvent();
  void DisarmEvent() {}  // A verbs CQ cannot be disarmed; Block acks late events.
  void BlockUntil(absl::Time deadline) { Block(deadline); }

  const std::shared_ptr<Device> device_;
  const CompletionQueueOptions options_;
  std::unique_ptr<VerbsCompChannel> channel_;  // Destroyed after cq_.
  std::unique_ptr<VerbsCq> cq_;
  ScopedFd wake_fd_;  // eventfd: Interrupt() and PushSoftware().
  std::atomic<bool> interrupted_{false};

  mutable absl::Mutex mu_;
  std::unordered_map<uint32_t, VerbsConnection*> conns_ ABSL_GUARDED_BY(mu_);
  std::deque<Completion> software_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> software_count_{0};

  struct AtomicStats {
    std::atomic<uint64_t> polls{0};
    std::atomic<uint64_t> empty_polls{0};
    std::atomic<uint64_t> completions{0};
    std::atomic<uint64_t> blocks{0};
    std::atomic<uint64_t> wakeups{0};
    std::atomic<uint64_t> dropped{0};  // Of QPs no longer attached.
    std::atomic<uint64_t> notifies{0};  // Notify receives consumed.
  };
  AtomicStats stats_;
};

// The protection domain, queue pair and registrations of one connection,
// before the connection object exists (during the handshake).
struct QpResources {
  std::unique_ptr<VerbsPd> pd;
  std::vector<std::unique_ptr<VerbsMr>> exposed;  // One per ExposedRegion.
  std::unique_ptr<VerbsQp> qp;                    // Destroyed before MRs/PD.
  uint32_t psn = 0;
  uint32_t max_inline = 0;
};

// One RC queue pair to one peer. Post() is the data path (one thread at a
// time); status(), Fail() and completions are thread-safe.
class VerbsConnection final : public Connection {
 public:
  // Takes the handshaken resources and the bootstrap socket (kept open as
  // the liveness channel, watched by a monitor thread). `cq` is not owned
  // and must outlive the connection.
  VerbsConnection(uint64_t id, ConnectionInfo peer,
                  std::shared_ptr<Device> device, VerbsCompletionQueue* cq,
                  QpResources resources, ScopedFd socket);
  ~VerbsConnection() override;

  absl::Status Post(absl::Span<const WorkRequest> wrs) override;
  absl::Status status() const override ABSL_LOCKS_EXCLUDED(mu_);
  void Fail(absl::Status reason) override;
  uint32_t max_inline() const override { return max_inline_; }

  // Called by the completion queue's poller for a work completion of this
  // QP; fills `out` and returns true, or returns false to drop it. Marks the
  // connection failed on an error completion.
  bool OnWorkCompletion(const ibv_wc& wc, Completion* out);

  // Reposts one notify receive (after the poller consumed one). Thread-safe
  // against Post(). Returns false if the QP refused it.
  bool RepostNotifyReceive();

  // Marks the connection failed (first reason wins), moves the QP to ERR so
  // outstanding work flushes, and shuts the liveness socket down so the peer
  // learns it. Idempotent, thread-safe.
  void MarkFailed(const absl::Status& reason) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Pending {
    uint64_t seq;
    uint64_t wr_id;
    uint32_t length;
    Opcode opcode;
  };
  struct LocalMr {
    uint64_t serial = 0;
    std::unique_ptr<VerbsMr> mr;
  };

  // The lkey of `region` in this connection's PD, registering it on first
  // use. Poster thread only.
  absl::StatusOr<uint32_t> LocalKey(const MemoryRegion* region);
  absl::Status FailedPost(absl::Span<const WorkRequest> wrs);

  const std::shared_ptr<Device> device_;
  VerbsCompletionQueue* const cq_;
  const uint32_t max_inline_;
  // Declaration order is destruction order reversed: QP, then MRs, then PD.
  std::unique_ptr<VerbsPd> pd_;
  std::vector<std::unique_ptr<VerbsMr>> exposed_mrs_;
  std::unordered_map<const MemoryRegion*, LocalMr> local_mrs_;  // Poster.
  std::unique_ptr<VerbsQp> qp_;
  const uint32_t qpn_;

  ScopedFd socket_;
  bool watched_ = false;  // Added to device_->monitor.

  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};

  // Posted requests not yet retired, in posting order; the ibv wr_id is
  // `seq`. RC completes a send queue in order, so a completion for seq s
  // retires every earlier (unsignaled) entry too.
  absl::Mutex pending_mu_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(pending_mu_);

  // Poster-thread state.
  uint64_t next_seq_ = 1;
  const MemoryRegion* last_region_ = nullptr;  // One-entry LocalKey cache.
  uint64_t last_serial_ = 0;
  uint32_t last_lkey_ = 0;
  std::vector<ibv_send_wr> wr_scratch_;
  std::vector<ibv_sge> sge_scratch_;
};

// Receives kept posted on every queue pair for peers' notify WRITEs (RDMA
// WRITE with immediate consumes one each). The rpc layer sends a notify only
// when the peer may be asleep, so a few suffice; if a burst runs them out the
// sender's RNR retry (infinite, kRnrRetry = 7) waits for the repost.
inline constexpr int kNotifyReceives = 16;
// wr_id of those receives.
inline constexpr uint64_t kNotifyReceiveWrId = ~uint64_t{0};
// Posts `n` notify receives on `qp`; returns ibv_post_recv's error (0: ok).
int PostNotifyReceives(ibv_qp* qp, int n);

// Maps an ibv_wc_status onto the interface's WcStatus.
WcStatus MapWcStatus(ibv_wc_status status);

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_VERBS_VERBS_INTERNAL_H_
