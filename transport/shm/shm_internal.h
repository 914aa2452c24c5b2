// Copyright 2026 The rfrpc Authors.
//
// Internals of the shm provider shared by its setup code (shm_provider.cc)
// and its data path (shm_datapath.cc). Not part of the public interface.
//
// Ownership graph (so that destroying any public object in any order is
// safe):
//
//   ShmProvider ─┐
//   ShmListener ─┼─ shared_ptr ─> ProviderCore ─ unique_ptr ─> LivenessMonitor (thread)
//   ShmIncoming ─┤
//   ShmConnection┘─ shared_ptr ─> ConnState (socket, peer mappings, status)
//
// The liveness monitor's callbacks hold only weak_ptrs to ConnState and
// never a ProviderCore reference, so the last owner of the core is always a
// user thread and joining the monitor never joins itself. A ConnState may
// die on the monitor thread; it owns no thread.
//
// Locks are std::mutex, not absl::Mutex: Debian's abseil is not built with
// ThreadSanitizer, so TSan cannot see absl::Mutex's happens-before edges and
// reports every guarded access as a race; pthread mutexes it intercepts.
// ABSL_GUARDED_BY still documents what each lock protects.

#ifndef RFRPC_TRANSPORT_SHM_SHM_INTERNAL_H_
#define RFRPC_TRANSPORT_SHM_SHM_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include <mutex>  // NOLINT: see shm_internal.h on std::mutex.
#include "transport/bootstrap.h"
#include "transport/liveness_monitor.h"
#include "transport/shm/shm_completion_queue.h"
#include "transport/shm/shm_segment.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace shm {

// A MemoryRegion backed by its own memfd segment (one segment per region, so
// exposing a region hands a peer exactly that region and nothing else).
class ShmMemoryRegion final : public MemoryRegion {
 public:
  ShmMemoryRegion(std::unique_ptr<Segment> segment, size_t size, uint32_t rkey)
      : MemoryRegion(segment->mapping.data(), size),
        segment_(std::move(segment)),
        rkey_(rkey) {}
  const Segment& segment() const { return *segment_; }
  uint32_t rkey() const { return rkey_; }

 private:
  const std::unique_ptr<Segment> segment_;
  const uint32_t rkey_;
};

// One region the peer exposed to this connection, mapped here.
struct PeerRegion {
  uint64_t addr = 0;    // Peer's address (what WorkRequest::remote names).
  uint64_t length = 0;
  uint32_t rkey = 0;
  bool remote_write = false;
  bool remote_read = false;
  char* base = nullptr;  // Our mapping of `addr`.
};

// The peer's segments mapped into this process, and the regions in them.
struct PeerMemory {
  // Shared with other connections that map the same segments
  // (MapPeerSegmentShared).
  std::vector<std::shared_ptr<const Mapping>> mappings;
  std::vector<PeerRegion> regions;
  // The peer's completion-queue wake word (Hello.wake), or null.
  std::shared_ptr<const Mapping> wake_mapping;
  std::atomic<uint32_t>* wake_word = nullptr;
};

// Connection state shared with the liveness monitor.
class ConnState {
 public:
  ConnState(ScopedFd sock, PeerMemory peer, std::string peer_name)
      : sock_(std::move(sock)),
        peer_(std::move(peer)),
        peer_name_(std::move(peer_name)) {}
  ~ConnState();

  // First reason wins; shuts the bootstrap socket down so the peer learns.
  void Fail(const absl::Status& reason);
  absl::Status status() const;
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // The line failed() reads (ShmConnection::HotLines).
  const void* failed_line() const { return &failed_; }

  int sock() const { return sock_.get(); }
  const PeerMemory& peer() const { return peer_; }
  const std::string& peer_name() const { return peer_name_; }

 private:
  const ScopedFd sock_;
  const PeerMemory peer_;
  const std::string peer_name_;
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

// Provider-wide state shared by everything the provider created.
class ProviderCore {
 public:
  ProviderCore(ProviderOptions options,
               std::unique_ptr<LivenessMonitor> monitor)
      : options_(std::move(options)), monitor_(std::move(monitor)) {}

  const ProviderOptions& options() const { return options_; }
  LivenessMonitor& monitor() { return *monitor_; }
  uint64_t NextConnectionId() {
    return next_id_.fetch_add(1, std::memory_order_relaxed);
  }
  uint32_t NewRkey();  // Random, non-zero.
  uint64_t NextSocketSerial() {
    return next_socket_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  const ProviderOptions options_;
  std::unique_ptr<LivenessMonitor> monitor_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> next_socket_{1};
  std::mutex mu_;
  absl::BitGen gen_ ABSL_GUARDED_BY(mu_);
};

class ShmConnection final : public Connection {
 public:
  ShmConnection(uint64_t id, ConnectionInfo info,
                std::shared_ptr<ProviderCore> core,
                std::shared_ptr<ConnState> state, ShmCompletionQueue* cq,
                uint32_t max_inline, uint32_t max_outstanding);
  ~ShmConnection() override;

  // Datapath (shm_datapath.cc). A single request that validates goes the
  // fast path: no completion-queue work when unsignaled, one claimed cell
  // when signaled; anything else (post lists, errors, a failed connection)
  // the general path.
  absl::Status Post(absl::Span<const WorkRequest> wrs) override;
  absl::Status status() const override { return state_->status(); }
  void Fail(absl::Status reason) override { state_->Fail(reason); }
  uint32_t max_inline() const override { return max_inline_; }
  int HotLines(absl::Span<const RemoteRegion> writes, const void** out,
               int max) const override;
  // Every request runs inside Post, so its completion is known there: with
  // a sink, completions go to it and the queue only gets the wake-up.
  bool SetInlineCompletions(InlineCompletions* sink) override {
    inline_ = sink;
    return true;
  }

 private:
  // The peer's regions as the datapath checks them: bounds precomputed,
  // copied into this object (no pointer chase through the shared state or
  // to a heap block: a server exposes 3 regions to a client, a client 1).
  struct Target {
    uint64_t addr = 0;
    uint64_t end = 0;  // addr + length.
    char* base = nullptr;
    uint32_t rkey = 0;
    bool remote_write = false;
    bool remote_read = false;
  };

  // Where [addr, addr + len) of the peer lies in our mapping, or nullptr if
  // no region with `rkey` covers it with the needed right.
  char* Translate(uint32_t rkey, uint64_t addr, uint64_t len,
                  bool write) const;
  // Checks one request's local range and remote target; on success sets its
  // source and destination. Touches nothing. On failure returns the
  // completion status (kLocalError, kRemoteAccessError) and sets `why`.
  WcStatus Resolve(const WorkRequest& wr, const char** src, char** dst,
                   const char** why) const;
  // Copies with the ordering contract and counts. REQUIRES: Resolve() ok.
  void Run(const WorkRequest& wr, const char* src, char* dst);
  // Post-time (not completion) errors: unknown opcode, bad inline use.
  absl::Status CheckPostable(const WorkRequest& wr) const;
  Completion MakeCompletion(const WorkRequest& wr, WcStatus st) const;
  absl::Status PostList(absl::Span<const WorkRequest> wrs);
  absl::Status PostOnFailed(absl::Span<const WorkRequest> wrs);
  // RESOURCE_EXHAUSTED: no room for a post's signaled completions.
  absl::Status QueueFull() const;

  // First, so that it goes last.
  const std::shared_ptr<ProviderCore> core_;
  // What a post reads, right after the base class's counters: a client
  // cycling through thousands of connections finds them cold.
  ShmCompletionQueue* const cq_;
  // cq_'s wake word: a post wakes a waiter on the queue without reading
  // the queue's own line (with inline completions it touches nothing else
  // of the queue).
  std::atomic<uint32_t>* const cq_wake_;
  InlineCompletions* inline_ = nullptr;  // SetInlineCompletions.
  const uint32_t max_inline_;
  const uint32_t max_outstanding_;
  const std::shared_ptr<ConnState> state_;
  const absl::InlinedVector<Target, 3> targets_;
  // The peer queue's wake word (null: the peer cannot be woken).
  std::atomic<uint32_t>* const peer_wake_;

  // After a notify WRITE ran: wakes the peer's queue if it is armed.
  void NotifyPeer();
};

}  // namespace shm
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_SHM_SHM_INTERNAL_H_
