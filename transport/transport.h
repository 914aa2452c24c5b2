// Copyright 2026 The rfrpc Authors.
//
// The verbs-level transport interface every rfrpc provider implements.
//
// The interface speaks RDMA verbs, not sockets: registered memory regions,
// reliable connections with one-sided WRITE and READ, completion queues. Its
// semantics are those of an RDMA RC queue pair; rpc/ relies on nothing else.
//
// Providers:
//   "verbs"  rdma-core libibverbs, real RC queue pairs (transport/verbs/).
//   "shm"    same host; processes share memfd segments and the initiator's
//            CPU performs WRITE and READ (truly one-sided: the target process
//            does nothing) (transport/shm/).
//   "auto"   verbs if a device exists, otherwise shm; logs which.
//
// Example (client side):
//
//   RFRPC_ASSIGN_OR_RETURN(auto provider, Provider::Open("shm", {}));
//   RFRPC_ASSIGN_OR_RETURN(auto cq, provider->CreateCompletionQueue({}));
//   RFRPC_ASSIGN_OR_RETURN(auto buf, provider->AllocateMemory(4096));
//   ConnectionSetup setup;
//   setup.cq = cq.get();
//   RFRPC_ASSIGN_OR_RETURN(auto conn, provider->Connect("/tmp/srv.sock", setup));
//   RemoteRegion target = conn->peer().regions[0];
//   WorkRequest wr = WorkRequest::Write(/*wr_id=*/1, buf.get(), 0, 64, target, 0);
//   RFRPC_RETURN_IF_ERROR(conn->Post({&wr, 1}));
//   Completion c;
//   RFRPC_RETURN_IF_ERROR(cq->Wait(&c, absl::Seconds(1)));
//
// Ordering contract (every provider; tested by the conformance suite):
//   1. WRITEs on one connection are applied in posting order.
//   2. Within one WRITE, the last 8 bytes become visible after all earlier
//      bytes (so a trailing flag polled by the target implies the payload;
//      the HERD/FaRM pattern). The target must read that flag with acquire
//      semantics (see LoadAcquire64 below).
//   3. A READ observes its first 8 bytes before the rest (so a header the
//      owner writes last, with release semantics, guarantees the payload
//      behind it).
//
// Isolation: a peer reaches only the regions exposed to *that* connection
// (ConnectionSetup::exposed). A WRITE or READ with an unknown key, or a range
// outside the exposed region, completes with kRemoteAccessError and touches
// nothing.
//
// Thread safety: Provider, MemoryRegion descriptors and CompletionQueue::Wait
// wake-ups are safe from any thread. A Connection's Post() may be called from
// one thread at a time (the rpc layer gives each connection one owner); a
// CompletionQueue is polled by one thread at a time but may be shared by
// connections posted from several threads.

#ifndef RFRPC_TRANSPORT_TRANSPORT_H_
#define RFRPC_TRANSPORT_TRANSPORT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace rfrpc {
namespace transport {

// A descriptor of registered memory that a peer may access: the owner's
// address, the length, and the key that grants access. Plain data; safe to
// copy and to send over the wire.
struct RemoteRegion {
  uint64_t addr = 0;
  uint64_t length = 0;
  uint32_t rkey = 0;

  // Descriptor for the sub-range [offset, offset + len).
  // REQUIRES: offset + len <= length.
  RemoteRegion Slice(uint64_t offset, uint64_t len) const {
    return RemoteRegion{addr + offset, len, rkey};
  }
};

// Memory allocated and registered by a provider. Owned by the caller; must
// outlive every connection that exposes it and every work request that names
// it. Zero-filled at allocation. Contents may change at any time through
// peers' WRITEs; use the atomic helpers below for words peers write.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  MemoryRegion(const MemoryRegion&) = delete;
  MemoryRegion& operator=(const MemoryRegion&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }

 protected:
  MemoryRegion(char* data, size_t size) : data_(data), size_(size) {}

 private:
  char* const data_;
  const size_t size_;
};

// A local memory region exposed to one connection's peer. The peer receives
// one RemoteRegion per entry, in order (ConnectionInfo::regions).
struct ExposedRegion {
  const MemoryRegion* region = nullptr;  // Not owned. Must not be null.
  uint64_t offset = 0;
  uint64_t length = 0;                   // 0 means "to the end of region".
  bool remote_write = true;
  bool remote_read = true;
};

enum class Opcode : uint8_t { kWrite = 0, kRead = 1 };

// One one-sided operation. For a WRITE, `length` bytes at local+local_offset
// go to remote.addr + remote_offset; for a READ the other way round.
struct WorkRequest {
  uint64_t wr_id = 0;                      // Returned in the Completion.
  Opcode opcode = Opcode::kWrite;
  const MemoryRegion* local = nullptr;     // Not owned. May be null only for
                                           // an inline WRITE (see inline_data).
  uint64_t local_offset = 0;
  uint32_t length = 0;
  RemoteRegion remote;                     // From the peer's ConnectionInfo.
  uint64_t remote_offset = 0;
  // Signaled requests produce a Completion; unsignaled ones produce one only
  // on error. An unsignaled request holds its send-queue entry until a later
  // signaled one completes (transport/send_queue_count.h): post a signaled
  // request at least every ConnectionSetup::max_outstanding requests.
  bool signaled = true;
  // WRITE only: the payload is copied at post time (<= the connection's
  // max_inline()), so the source may be reused when Post returns. If `inline_data` is non-null the
  // bytes come from there instead of `local`.
  bool inline_write = false;
  const void* inline_data = nullptr;
  // WRITE only: also wake the peer. If the completion queue the peer's side
  // of this connection names is armed (CompletionQueue::ArmWake) or blocked
  // in Wait(), it wakes once the WRITE has been applied. Nothing reaches the
  // peer's user: no completion, no data beyond the WRITE's own bytes.
  //   verbs: an RDMA WRITE with immediate; it consumes one of the receives
  //          the provider keeps posted on every queue pair, and the target's
  //          provider consumes (and counts) the receive completion inside
  //          Poll() and reposts.
  //   shm:   after the copy, a full fence, then a futex wake of the target
  //          queue's wake word if it is armed: a load when it is not. Only
  //          queues created with CompletionQueueOptions::remote_wake can be
  //          woken; for others it does nothing.
  bool notify = false;

  static WorkRequest Write(uint64_t wr_id, const MemoryRegion* local,
                           uint64_t local_offset, uint32_t length,
                           const RemoteRegion& remote, uint64_t remote_offset) {
    WorkRequest wr;
    wr.wr_id = wr_id;
    wr.opcode = Opcode::kWrite;
    wr.local = local;
    wr.local_offset = local_offset;
    wr.length = length;
    wr.remote = remote;
    wr.remote_offset = remote_offset;
    return wr;
  }
  static WorkRequest Read(uint64_t wr_id, const MemoryRegion* local,
                          uint64_t local_offset, uint32_t length,
                          const RemoteRegion& remote, uint64_t remote_offset) {
    WorkRequest wr = Write(wr_id, local, local_offset, length, remote,
                           remote_offset);
    wr.opcode = Opcode::kRead;
    return wr;
  }
};

// Completion status, mirroring the ibv_wc_status values rpc/ cares about.
enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocalError,          // Bad local range/key, or post-time failure.
  kRemoteAccessError,   // Wrong key or out of bounds at the target.
  kRetryExceeded,       // Peer unreachable (verbs: IBV_WC_RETRY_EXC_ERR).
  kFlushed,             // The connection failed; outstanding work flushed.
  kOther,
};

const char* WcStatusName(WcStatus status);

class Connection;

struct Completion {
  uint64_t wr_id = 0;
  Opcode opcode = Opcode::kWrite;
  WcStatus status = WcStatus::kSuccess;
  uint32_t byte_len = 0;
  Connection* connection = nullptr;  // Not owned; the posting connection.
  uint64_t connection_id = 0;        // That connection's id().

  bool ok() const { return status == WcStatus::kSuccess; }
  // UNAVAILABLE for retry/flush, PERMISSION_DENIED for remote access,
  // INTERNAL otherwise; the message names the provider's status text.
  absl::Status ToStatus() const;
};

// Completions a connection hands to its poster at post time instead of
// through its completion queue (Connection::SetInlineCompletions): a FIFO
// of fixed capacity, filled by Post and drained by the caller, both under
// the caller's own serialization (one posting thread at a time). A client
// cycling through thousands of connections then touches none of a queue's
// cells, nor its claim counter, to learn what its own post just did.
class InlineCompletions {
 public:
  // Holds at least `capacity` entries (rounded up to a power of two).
  // REQUIRES: capacity >= 1.
  explicit InlineCompletions(size_t capacity);
  InlineCompletions(const InlineCompletions&) = delete;
  InlineCompletions& operator=(const InlineCompletions&) = delete;

  bool HasRoom(size_t n) const { return tail_ - head_ + n <= capacity_; }
  bool empty() const { return head_ == tail_; }
  // Appends `c`; one for which there is no room is counted in dropped()
  // instead (as a completion queue that overflows).
  void Push(const Completion& c) {
    if (!HasRoom(1)) {
      ++dropped_;
      return;
    }
    ring_[tail_++ & mask_] = c;
  }
  // Takes up to out.size() entries, oldest first; returns how many. Once
  // empty it starts over at the first entry, so a poster that drains after
  // each post keeps using the same line.
  int Take(absl::Span<Completion> out) {
    size_t n = 0;
    while (n < out.size() && head_ != tail_) out[n++] = ring_[head_++ & mask_];
    if (head_ == tail_) head_ = tail_ = 0;
    return static_cast<int>(n);
  }
  size_t capacity() const { return capacity_; }
  // The first entry (prefetch hints).
  const void* data() const { return ring_.get(); }
  uint64_t dropped() const { return dropped_; }

 private:
  uint64_t head_ = 0;
  uint64_t tail_ = 0;
  size_t capacity_;
  size_t mask_;
  uint64_t dropped_ = 0;
  std::unique_ptr<Completion[]> ring_;
};

// How CompletionQueue::Wait spends the time until a completion arrives.
enum class PollMode : uint8_t {
  kAdaptive = 0,  // Poll, then after max_retry empty rounds arm and block.
  kBusy,          // Poll only (lowest latency, one core per poller).
  kEvent,         // Arm and block at once (no spinning).
};

struct CompletionQueueOptions {
  // Entries the queue holds. Default: 4096.
  int depth = 4096;
  // Default: kAdaptive.
  PollMode poll_mode = PollMode::kAdaptive;
  // Completions taken per poll round. Default: 16 (RDMAbox's max_poll_wc).
  int max_poll_wc = 16;
  // Empty poll rounds before arming the event and blocking. Default: 2000.
  int max_retry = 2000;
  // Peers' notify WRITEs (WorkRequest::notify) can wake this queue. shm:
  // the queue's wake word lives in a small shared segment that each peer
  // maps (so, on shm, a peer can wake it spuriously: it never sees or
  // changes anything else); without it the word is process-private and
  // notify WRITEs aimed at this queue do nothing. verbs: always possible;
  // ignored. Default: false.
  bool remote_wake = false;
};

// Completions of the connections that name this queue in ConnectionSetup.
class CompletionQueue {
 public:
  virtual ~CompletionQueue() = default;

  // Takes up to out.size() completions without blocking; returns how many.
  virtual int Poll(absl::Span<Completion> out) = 0;

  // Waits up to `timeout` for at least one completion, per the poll mode, and
  // takes up to out.size(). Returns the count (>= 1), or DEADLINE_EXCEEDED.
  virtual absl::StatusOr<int> Wait(absl::Span<Completion> out,
                                   absl::Duration timeout) = 0;

  // Single-completion convenience. `c` must not be null.
  absl::Status Wait(Completion* c, absl::Duration timeout) {
    absl::StatusOr<int> n = Wait(absl::MakeSpan(c, 1), timeout);
    return n.ok() ? absl::OkStatus() : n.status();
  }

  // Wakes one blocked Wait() early (it returns DEADLINE_EXCEEDED if nothing
  // arrived). Safe from any thread.
  virtual void Interrupt() = 0;

  // Sleeping until a peer or a completion wakes the caller, in two steps so
  // the caller can look at its own memory in between (RDMAbox's Algorithm 3
  // with the caller's check added; a peer signals with a notify WRITE):
  //
  //   cq->ArmWake();                  // from here on, wake-ups are kept
  //   if (WorkInMyMemory()) {
  //     cq->Disarm();
  //   } else {
  //     cq->WaitArmed(out, timeout);  // returns at once if one came already
  //   }
  //
  // A peer that stores into this side's memory, issues a full fence and
  // then a notify WRITE (or, on verbs, any WRITE with notify after its
  // stores on the same connection) either has its stores seen by the
  // caller's check or wakes WaitArmed: no wake-up is lost. The poller's
  // thread only.
  virtual void ArmWake() = 0;
  virtual void Disarm() = 0;
  // REQUIRES: ArmWake() since the last WaitArmed() or Disarm(). Blocks until
  // a completion, a peer's notify, an Interrupt() or `timeout`; disarms;
  // returns the completions taken (up to out.size(); 0 when woken by a
  // notify or Interrupt) or DEADLINE_EXCEEDED if the timeout passed with
  // nothing.
  virtual absl::StatusOr<int> WaitArmed(absl::Span<Completion> out,
                                        absl::Duration timeout) = 0;
  // Like WaitArmed, but takes no completions: returns once anything that
  // would end WaitArmed happened since ArmWake() (a completion, a peer's
  // notify, an Interrupt()) or at `timeout`, and leaves the completions to
  // the next Poll(). OK when woken, DEADLINE_EXCEEDED at the timeout (a
  // spurious early return is possible: the caller checks and waits again).
  // Unlike WaitArmed it may run while another thread polls the queue, so a
  // thread can sleep until a peer's push without owning the queue; several
  // threads may wait at once (each wake-up ends at least one wait; the
  // others end at their timeouts).
  // REQUIRES: ArmWake() since the last wait or Disarm().
  virtual absl::Status WaitWoken(absl::Duration timeout) = 0;

  struct Stats {
    uint64_t polls = 0;          // Poll rounds.
    uint64_t empty_polls = 0;
    uint64_t completions = 0;
    uint64_t blocks = 0;         // Times Wait() armed the event and slept.
    uint64_t wakeups = 0;        // Times it was woken by a completion.
    uint64_t notifies = 0;       // Times a peer's notify woke it (shm: a
                                 // WaitArmed woken with nothing to poll;
                                 // verbs: notify receives consumed).
  };
  virtual Stats stats() const = 0;

  // Prefetch hints: up to `max` addresses, into `out`, of the memory the
  // next Poll() and the next signaled post read first (the queue's indexes
  // and the cells they name); returns how many. For a caller that cycles
  // through thousands of queues and finds each one cold: it prefetches them
  // all at once rather than missing on them one after another. They may be
  // stale when used (a prefetch never faults). Not concurrently with
  // Poll(). Default: none.
  virtual int HotLines(const void** /*out*/, int /*max*/) const { return 0; }
};

// What a side of a connection knows about its peer after the handshake.
struct ConnectionInfo {
  std::string provider;                 // "verbs" or "shm".
  std::vector<RemoteRegion> regions;    // Memory the peer exposed to us.
  std::string user_data;                // Opaque bytes from the peer's layer.
  std::string peer_name;                // E.g. "pid 123" or "10.0.0.2:40000".
};

struct ConnectionSetup {
  CompletionQueue* cq = nullptr;        // Not owned. Must not be null.
  std::vector<ExposedRegion> exposed;   // Memory this side lets the peer use.
  std::string user_data;                // Delivered as peer().user_data.
  // Largest inline WRITE asked for; the connection may grant less (verbs:
  // what the device allows; see Connection::max_inline()). 0 asks for
  // none. Default: 128 (the paper inlines < 92 B payloads).
  uint32_t max_inline = 128;
  // Outstanding work requests. Default: 256.
  uint32_t max_outstanding = 256;
  // Shared secret. Connecting side: the token it presents (sent in clear in
  // its Hello). Listening side (Accept): the token a peer must present;
  // empty accepts anyone. Only the listener checks (transport/auth_token.h:
  // constant-time, UNAUTHENTICATED on a missing or wrong token).
  // Default: "".
  std::string auth_token;
  // Handshake must finish within this. Default: 5 s.
  absl::Duration handshake_timeout = absl::Seconds(5);
};

// A reliable connection (RC queue pair semantics) to one peer.
class Connection {
 public:
  virtual ~Connection() = default;

  // Posts `wrs` as one post list (one doorbell). On a post-time error returns
  // that error and none of the list after the failing request is executed;
  // requests before it may be. A connection that has failed returns
  // UNAVAILABLE, and signaled requests also complete with kFlushed.
  // Not thread-safe: one posting thread per connection at a time.
  virtual absl::Status Post(absl::Span<const WorkRequest> wrs) = 0;

  // OK while the connection works; UNAVAILABLE (with the reason) after the
  // peer went away or a completion error failed it. Thread-safe.
  virtual absl::Status status() const = 0;
  bool ok() const { return status().ok(); }

  // Marks the connection failed (e.g. the rpc layer saw a protocol violation)
  // and closes the liveness channel so the peer learns it too. Idempotent.
  virtual void Fail(absl::Status reason) = 0;

  // The largest WRITE that may be posted with inline_write: what
  // ConnectionSetup::max_inline asked for, or less if the provider granted
  // less (verbs: the queue pair's max_inline_data).
  virtual uint32_t max_inline() const = 0;

  // Asks the provider to hand this connection's completions to `sink`
  // (success, error and flush alike, in post order) instead of its
  // completion queue, from the next Post() on. Only a provider that runs
  // requests as they are posted can (shm); others return false and keep
  // using the queue (verbs: the NIC completes them later). After true, the
  // queue gets no entry of this connection, but a post that completes
  // something still wakes a Wait/WaitWoken on it as an entry would; Post
  // fails with RESOURCE_EXHAUSTED, executing nothing, when `sink` has no
  // room for the list's signaled requests. `sink` is used only inside
  // Post(), so the posting serialization covers it; it must outlive the
  // connection's last Post(). Call before the first Post(). Default: false.
  virtual bool SetInlineCompletions(InlineCompletions* /*sink*/) {
    return false;
  }

  // Prefetch hints for the next Post() (as CompletionQueue::HotLines): the
  // connection's own state it reads first, then, where the provider can
  // tell, the local lines behind the peer ranges it will WRITE, `writes`
  // (shm: our mapping of the peer's memory; verbs: none, the NIC writes
  // them). Default: none.
  virtual int HotLines(absl::Span<const RemoteRegion> /*writes*/,
                       const void** /*out*/, int /*max*/) const {
    return 0;
  }

  const ConnectionInfo& peer() const { return *peer_; }
  uint64_t id() const { return id_; }

  // Those a call bumps first: with the object's vtable pointer they fill
  // one cache line.
  struct Counters {
    std::atomic<uint64_t> post_lists{0};  // Doorbells.
    std::atomic<uint64_t> writes{0};
    std::atomic<uint64_t> reads{0};
    std::atomic<uint64_t> signaled{0};
    std::atomic<uint64_t> completions{0};
    std::atomic<uint64_t> bytes_written{0};
    std::atomic<uint64_t> bytes_read{0};
    std::atomic<uint64_t> inline_writes{0};
    std::atomic<uint64_t> errors{0};
    std::atomic<uint64_t> notifies{0};  // WRITEs with notify.
  };
  const Counters& counters() const { return counters_; }

 protected:
  Connection(uint64_t id, ConnectionInfo peer)
      : id_(id), peer_(std::make_unique<const ConnectionInfo>(std::move(peer))) {}
  Counters counters_;

 private:
  const uint64_t id_;
  // Behind a pointer, so a provider's datapath fields follow the counters
  // closely (the datapath never reads it).
  const std::unique_ptr<const ConnectionInfo> peer_;
};

// A connection request that arrived at a Listener, before this side has
// answered. Destroying it without Accept() rejects it.
class IncomingConnection {
 public:
  virtual ~IncomingConnection() = default;
  // What the peer sent: its exposed regions and user data.
  virtual const ConnectionInfo& peer() const = 0;
  // Completes the handshake with this side's setup.
  virtual absl::StatusOr<std::unique_ptr<Connection>> Accept(
      const ConnectionSetup& setup) = 0;
  // Refuses it; the peer's Connect() returns `reason`.
  virtual void Reject(const absl::Status& reason) = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  // Waits up to `timeout` for the next connection request whose handshake
  // hello parsed. Garbled or foreign handshakes are answered with an error
  // and logged here; they never surface as a crash. DEADLINE_EXCEEDED when
  // nothing arrived. Safe to call from one thread at a time.
  virtual absl::StatusOr<std::unique_ptr<IncomingConnection>> Next(
      absl::Duration timeout) = 0;
  // Where peers connect ("/path/sock" for shm, "host:port" for verbs).
  virtual std::string address() const = 0;
  // Wakes a blocked Next(). Safe from any thread.
  virtual void Shutdown() = 0;
};

struct ProviderOptions {
  // verbs: device name; "" or "auto" picks one (the first device with an
  // active port and a usable GID; transport/verbs/device_choice.h has the
  // rules). Default: "".
  std::string device;
  // verbs: port number; 0 picks the first active one. Default: 0.
  int port = 0;
  // verbs: GID index; -1 picks a RoCE v2 GID of the address hint's family
  // (the hint's own IP if the port has it), or index 0 on InfiniBand.
  // Default: -1.
  int gid_index = -1;
  // verbs: the IP the provider will listen on or connect to (the host part
  // of the address), for choosing the GID; "" or a name: none. The rpc
  // layer fills it from the channel's or server's address. Default: "".
  std::string address_hint;
  // shm: folder for bootstrap sockets when an address has no '/'. Default:
  // "" ($TMPDIR or /tmp).
  std::string socket_dir;
};

// Connections of this process, of every provider, that have failed so far
// (each counted once, when it first fails: its peer left, a completion
// error, Fail()). A poller that walks its connections' status() to close
// the failed ones can skip the walk while this has not moved. Thread-safe.
uint64_t ConnectionFailures();

namespace internal {
// Providers call this once per connection, as it first fails.
void CountConnectionFailure();
}  // namespace internal

class Provider {
 public:
  virtual ~Provider() = default;

  // Opens "verbs", "shm" or "auto". verbs with no device returns
  // UNAVAILABLE ("no RDMA device found (...)"); an unknown name returns
  // INVALID_ARGUMENT.
  static absl::StatusOr<std::unique_ptr<Provider>> Open(
      const std::string& name, const ProviderOptions& options);
  // The provider `name` stands for on this host: `name` itself, except that
  // "auto" is opened (with `options`) to learn which one it picks. For
  // figures and profiles, which name the provider they ran on.
  static absl::StatusOr<std::string> ResolveName(
      const std::string& name, const ProviderOptions& options = {});

  virtual std::string name() const = 0;

  // Allocates `size` bytes of zeroed registered memory. Page-aligned.
  virtual absl::StatusOr<std::unique_ptr<MemoryRegion>> AllocateMemory(
      size_t size) = 0;

  virtual absl::StatusOr<std::unique_ptr<CompletionQueue>>
  CreateCompletionQueue(const CompletionQueueOptions& options) = 0;

  // Listens at `address` (verbs: "host:port", port 0 picks one; shm: a Unix
  // socket path, "" picks a fresh one). See Listener::address().
  virtual absl::StatusOr<std::unique_ptr<Listener>> Listen(
      const std::string& address) = 0;

  // Connects to a Listener's address and completes the handshake.
  virtual absl::StatusOr<std::unique_ptr<Connection>> Connect(
      const std::string& address, const ConnectionSetup& setup) = 0;
};

// A Connect error that may pass if tried again soon: the listener's
// handshakes were at their cap, its process out of descriptors, or (shm)
// its backlog full. Providers mark such errors; Channel's connect retries
// them, with back-off, until its connect timeout.
absl::Status MarkRetryLater(absl::Status status);
bool IsRetryLater(const absl::Status& status);

// The host part of a "host:port" address ("10.0.0.1:7000" -> "10.0.0.1",
// "[fe80::1]:0" -> "fe80::1"); "" for an address without one (an shm socket
// path). For ProviderOptions::address_hint.
std::string AddressHost(const std::string& address);

// Registry for providers (each provider's library registers itself).
using ProviderFactory = absl::StatusOr<std::unique_ptr<Provider>> (*)(
    const ProviderOptions& options);
// Returns true so it can initialize a namespace-scope bool.
bool RegisterProvider(const char* name, ProviderFactory factory);

// A family of provider names that wrap another provider, e.g. "faulty:shm"
// or "faulty@client1:verbs" (transport/testing/fault_injection.h). Provider::
// Open(name) with no exactly registered `name` looks for a family whose
// `prefix` is the part of `name` before its first ':' or '@' and calls its
// factory with the whole name. Returns true like RegisterProvider.
using ProviderFamilyFactory = absl::StatusOr<std::unique_ptr<Provider>> (*)(
    const std::string& name, const ProviderOptions& options);
bool RegisterProviderFamily(const char* prefix, ProviderFamilyFactory factory);

// Loads and stores of 8-byte words in registered memory that peers access
// concurrently. `p` must be 8-byte aligned.
inline uint64_t LoadAcquire64(const void* p) {
  return __atomic_load_n(static_cast<const uint64_t*>(p), __ATOMIC_ACQUIRE);
}
inline void StoreRelease64(void* p, uint64_t v) {
  __atomic_store_n(static_cast<uint64_t*>(p), v, __ATOMIC_RELEASE);
}
inline uint32_t LoadAcquire32(const void* p) {
  return __atomic_load_n(static_cast<const uint32_t*>(p), __ATOMIC_ACQUIRE);
}
inline void StoreRelease32(void* p, uint32_t v) {
  __atomic_store_n(static_cast<uint32_t*>(p), v, __ATOMIC_RELEASE);
}

// A full (store-load) fence between this thread's stores and later loads of
// memory that peers access, e.g. publish-then-read-a-flag (Dekker) patterns.
// Under ThreadSanitizer, which rejects standalone fences, a seq_cst
// read-modify-write does the job (a locked instruction on x86).
inline void FullFence() {
#if defined(__SANITIZE_THREAD__)
  static uint64_t fence_word;
  __atomic_fetch_add(&fence_word, 0, __ATOMIC_SEQ_CST);
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_TRANSPORT_H_
