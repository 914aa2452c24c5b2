// Copyright 2026 The rfrpc Authors.
//
// A fault-injecting transport provider for tests, in the spirit of leveldb's
// FaultInjectionTestEnv: it wraps any other provider and, on command, drops
// or delays completions, fails posts, fails connections mid-call and flips
// bytes of WRITE payloads or READ results. Everything else passes through to
// the inner provider unchanged (memory regions are the inner provider's own).
//
// Use it by name wherever a provider name is taken (ChannelOptions::provider,
// ServerOptions::provider, Provider::Open):
//
//   "faulty:shm"          wraps "shm"; faults come from FaultKnobs::Named("")
//   "faulty@c1:verbs"     wraps "verbs"; faults come from FaultKnobs::Named("c1")
//
// and steer it from the test through the named knobs:
//
//   FaultKnobs* k = FaultKnobs::Named("c1");
//   k->Reset();
//   ChannelOptions opts;
//   opts.provider = "faulty@c1:shm";
//   auto channel = Channel::Create(address, opts);
//   k->CorruptNextRead(/*offset=*/3, /*xor_mask=*/0x40);   // a header byte
//   ... the next READ's result arrives with byte 3 flipped ...
//   EXPECT_EQ(k->counters().reads_corrupted, 1u);
//
// Faults:
//   drop completion    a successful completion is never delivered.
//   delay completion   completions are held for a random time in
//                      [delay_min, delay_max] before delivery (FIFO per
//                      queue, so order is kept).
//   fail post          Post() returns `post_error` and executes nothing.
//   fail connection    before a Post() executes, the connection is failed
//                      (Connection::Fail: the peer learns it too); the post
//                      then reports UNAVAILABLE and signaled work completes
//                      kFlushed, as on an RC QP in the error state.
//   corrupt WRITE      the WRITE carries `payload[offset] ^ xor_mask` (sent
//                      from a private copy; the caller's memory is intact).
//   corrupt READ       the READ's landing buffer has byte `offset` flipped
//                      when its completion is delivered.
// "Next" faults are one-shot counts; probabilities apply to every eligible
// event. Knobs are thread-safe and may change while traffic runs; counters
// say what was injected.
//
// Thread safety: FaultKnobs is thread-safe. The wrapped objects keep the
// inner provider's promises (transport.h).

#ifndef RFRPC_TRANSPORT_TESTING_FAULT_INJECTION_H_
#define RFRPC_TRANSPORT_TESTING_FAULT_INJECTION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>  // NOLINT: std::mutex is visible to ThreadSanitizer.
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace testing {

class FaultyConnection;

class FaultKnobs {
 public:
  // The knobs of "faulty@<tag>:..." providers; "" for "faulty:...". Created
  // on first use, never destroyed.
  static FaultKnobs* Named(const std::string& tag);

  FaultKnobs() = default;
  FaultKnobs(const FaultKnobs&) = delete;
  FaultKnobs& operator=(const FaultKnobs&) = delete;

  // Turns every fault off and zeroes the counters. Live connections stay.
  void Reset();

  // Completions (successful ones only; errors are always delivered).
  void set_drop_completion_probability(double p) { drop_p_.store(p); }
  void DropNextCompletions(int n) { drop_next_.store(n); }
  // Each completion is held for a uniform random time in [min, max].
  // Zero (the default) delivers at once.
  void set_completion_delay(absl::Duration min, absl::Duration max);

  // Posts.
  void set_fail_post_probability(double p) { fail_post_p_.store(p); }
  void FailNextPosts(int n) { fail_post_next_.store(n); }
  // What a failed post returns. Default: UNAVAILABLE.
  void set_post_error(absl::StatusCode code) { post_error_.store(code); }

  // Connections.
  void set_fail_connection_probability(double p) { fail_conn_p_.store(p); }
  // The connection of the n-th next Post() (1 = the very next) fails.
  void FailConnectionAtPost(int n) { fail_conn_at_.store(n); }
  // Fails every live connection made with these knobs, now.
  void FailAllConnections();

  // Corruption: the next `count` WRITEs (READs) longer than `offset` get
  // byte `offset` XORed with `xor_mask` (non-zero).
  void CorruptNextWrite(uint32_t offset, uint8_t xor_mask, int count = 1);
  // The next `count` unsignaled WRITEs of exactly `length` bytes are not
  // executed (nor their notify), as if lost: no error, nothing lands. Stands
  // for a hint another party erased, e.g. a doorbell summary byte that a
  // client sharing it cleared.
  void DropNextWritesOfLength(uint32_t length, int count = 1) {
    drop_write_length_.store(length);
    drop_write_next_.store(count);
  }
  void CorruptNextRead(uint32_t offset, uint8_t xor_mask, int count = 1);
  // Torn WRITEs: every WRITE of at least `min_length` bytes is posted as
  // two, all but its last 8 bytes first, then, after `delay` (the posting
  // thread sleeps), the last 8. Legal under the ordering contract
  // (transport.h: only a WRITE's last 8 bytes are ordered), and the worst a
  // NIC may do: a target polling the WRITE's first bytes sees them long
  // before the rest. Zero (the default) turns it off. Meant for shm, which
  // applies a WRITE when it is posted.
  void set_write_tail_delay(absl::Duration delay, uint32_t min_length = 16);
  // Verbs send-queue semantics on any provider: a work request holds one of
  // its connection's ConnectionSetup::max_outstanding entries until its own
  // completion, or a later one's, has been polled through the wrapping
  // queue; a post that would need more fails with RESOURCE_EXHAUSTED, as
  // ibv_post_send's ENOMEM does (shm executes at post time and has no send
  // queue). Requests posted while it is off are not counted. Off by default.
  void set_emulate_send_queue(bool on) { send_queue_.store(on); }
  // Every eligible WRITE / READ, with probability p, at a random offset in
  // [0, min(length, max_offset)) with a random non-zero mask.
  void set_corrupt_write_probability(double p, uint32_t max_offset = 16);
  void set_corrupt_read_probability(double p, uint32_t max_offset = 16);

  struct Counters {
    uint64_t posts = 0;                 // Post() calls.
    uint64_t work_requests = 0;
    uint64_t completions = 0;           // Delivered.
    uint64_t completions_dropped = 0;
    uint64_t completions_delayed = 0;
    uint64_t posts_failed = 0;
    uint64_t connections_failed = 0;
    uint64_t writes_corrupted = 0;
    uint64_t reads_corrupted = 0;
    uint64_t writes_dropped = 0;
    uint64_t writes_torn = 0;           // set_write_tail_delay.
    uint64_t send_queue_full = 0;       // Posts refused (emulated queue).
    uint64_t connections_made = 0;      // Connect() and Accept() successes.
  };
  Counters counters() const;

  // What the peers of the live connections exposed (for isolation tests
  // that want a real descriptor of someone else's memory).
  std::vector<ConnectionInfo> LivePeers() const;
  size_t live_connections() const;

 private:
  friend class FaultyConnection;
  friend class FaultyCompletionQueue;
  friend class FaultyProvider;

  // Decides one event: true if the one-shot counter fired or the dice did.
  // `next` may be null (dice only).
  bool Fire(std::atomic<int>* next, const std::atomic<double>& p);
  // Decrements a positive `at`; true when it reaches 0.
  bool CountDown(std::atomic<int>* at);
  double Uniform();  // [0, 1), thread-safe.
  uint32_t UniformInt(uint32_t n);  // [0, n), n > 0.
  absl::Duration DelayForOne();

  void Register(FaultyConnection* c);
  void Unregister(FaultyConnection* c);

  std::atomic<double> drop_p_{0};
  std::atomic<int> drop_next_{0};
  std::atomic<int64_t> delay_min_ns_{0};
  std::atomic<int64_t> delay_max_ns_{0};
  std::atomic<double> fail_post_p_{0};
  std::atomic<int> fail_post_next_{0};
  std::atomic<absl::StatusCode> post_error_{absl::StatusCode::kUnavailable};
  std::atomic<double> fail_conn_p_{0};
  std::atomic<int> fail_conn_at_{0};

  std::atomic<int> corrupt_write_next_{0};
  std::atomic<uint32_t> drop_write_length_{0};
  std::atomic<int> drop_write_next_{0};
  std::atomic<uint64_t> writes_dropped_{0};
  std::atomic<int64_t> tail_delay_ns_{0};
  std::atomic<uint32_t> tail_delay_min_length_{16};
  std::atomic<uint64_t> writes_torn_{0};
  std::atomic<bool> send_queue_{false};
  std::atomic<uint64_t> send_queue_full_{0};
  std::atomic<uint32_t> corrupt_write_offset_{0};
  std::atomic<uint8_t> corrupt_write_mask_{0};
  std::atomic<double> corrupt_write_p_{0};
  std::atomic<uint32_t> corrupt_write_max_offset_{16};
  std::atomic<int> corrupt_read_next_{0};
  std::atomic<uint32_t> corrupt_read_offset_{0};
  std::atomic<uint8_t> corrupt_read_mask_{0};
  std::atomic<double> corrupt_read_p_{0};
  std::atomic<uint32_t> corrupt_read_max_offset_{16};

  std::atomic<uint64_t> posts_{0}, work_requests_{0}, completions_{0},
      completions_dropped_{0}, completions_delayed_{0}, posts_failed_{0},
      connections_failed_{0}, writes_corrupted_{0}, reads_corrupted_{0},
      connections_made_{0};

  std::atomic<uint64_t> rng_{0x9E3779B97F4A7C15ull};

  mutable std::mutex mu_;
  std::set<FaultyConnection*> live_ ABSL_GUARDED_BY(mu_);
};

// Wraps `inner` programmatically (what "faulty@tag:inner" does by name).
// `knobs` is not owned and must outlive the provider and everything it made.
std::unique_ptr<Provider> WrapWithFaults(std::unique_ptr<Provider> inner,
                                         FaultKnobs* knobs);

}  // namespace testing
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_TESTING_FAULT_INJECTION_H_
