// Copyright 2026 The rfrpc Authors.
//
// Options for rfrpc channels and servers. Library code takes these structs;
// binaries map gflags onto them (see flags/rpc_flags.h for the standard mapping).

#ifndef RFRPC_RPC_OPTIONS_H_
#define RFRPC_RPC_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "transport/transport.h"

namespace rfrpc {

// How a connection's results come back (paper §3).
enum class RpcMode : uint8_t {
  // The client fetches results with RDMA READs from the server's local
  // response buffer; never switches.
  kRemoteFetch = 0,
  // The server WRITEs results into the client's memory (the baseline).
  kServerReply = 1,
  // Remote fetching, switching to server-reply after `fetch.switch_after`
  // consecutive calls needed more than `fetch.retries` fetches, and back when
  // the
  // server's reported processing time shows results are ready sooner.
  kHybrid = 2,
};

// "rf", "server_reply", "hybrid".
absl::string_view RpcModeName(RpcMode mode);
absl::StatusOr<RpcMode> ParseRpcMode(absl::string_view name);

// Request batching (paper §4; RB²'s adaptive batching).
enum class BatchMode : uint8_t {
  kOff = 0,       // One request per slot.
  kFixed = 1,     // Batches of batch_size, flushed on N, L or T.
  kAuto = 2,      // The size follows the latency bound (paper §4.2).
  kAdaptive = 3,  // Entries are transmitted in groups of batch_group as they
                  // fill and the batch is published after; a publish waits
                  // while the previous one is in flight (elastic threshold).
};

// "off", "fixed", "auto", "adaptive".
absl::string_view BatchModeName(BatchMode mode);
absl::StatusOr<BatchMode> ParseBatchMode(absl::string_view name);

struct ChannelOptions;

// Named choices that set several ChannelOptions fields at once, for flags
// and properties (--rfrpc_fetch_policy, -p jakiro.fetch_policy, ...).
// Fetch policy: "adaptive" (adaptive_fetch_delay) or "paper" (fetch at once
// and repeatedly, R times: adaptive_fetch_delay false).
absl::Status SetFetchPolicy(absl::string_view name, ChannelOptions* options);
absl::string_view FetchPolicyName(const ChannelOptions& options);
// Auto sizer rule: "proportional" (the defaults) or "paper" (-1/+1 after
// every window of sizer_window calls: no proportional steps, no hold-off,
// shrink after one window, windows of a call count only).
absl::Status SetSizerRule(absl::string_view name, ChannelOptions* options);
absl::string_view SizerRuleName(const ChannelOptions& options);

// Checks `options` against the bounds the library accepts: the one check
// behind Channel::Create, the --rfrpc_* flags and Jakiro's -p jakiro.*
// properties, so a bad value gets the same error from each (the batching
// fields too when batching is off). On INVALID_ARGUMENT the
// message starts with the field's name ("fetch.size 8 is below ...") and,
// if `field` is not null, *field is set to it, so an entry point can name
// its own knob for it (FindChannelKnobOfField, rpc/option_knobs.h).
absl::Status ValidateChannelOptions(const ChannelOptions& options,
                                    std::string* field = nullptr);

// The same for a server: the one check behind Server::Start and the server's
// --rfrpc_* flags (FindServerKnobOfField names the knob of `field`). Both
// check their provider_options alike (fields "provider_options.port",
// "provider_options.gid_index").
struct ServerOptions;
absl::Status ValidateServerOptions(const ServerOptions& options,
                                   std::string* field = nullptr);

// How a call's result is fetched (paper §3.2, §4.1): R, F, K, the switch
// back from server-reply, and the adaptive delay of the first fetch.
struct FetchOptions {
  // R: fetches of one call before it counts as slow (paper: 5). Default: 5.
  int retries = 5;
  // F: bytes fetched by the first READ (header + payload); a second READ
  // fetches the rest only when the result is larger. Default: 256.
  uint32_t size = 256;
  // K: consecutive slow calls that switch a connection to server-reply.
  // Default: 2.
  int switch_after = 2;
  // In server-reply, calls whose reported server processing time is below
  // switch_back_ratio * (how long remote fetching waits before a call is
  // slow: the first-fetch delay cap + retries * measured fetch time) count
  // as fast; `switch_after` consecutive fast calls switch back. Default: 0.8.
  double switch_back_ratio = 0.8;
  // Adaptive delay of a call's first fetch: the client learns how long
  // results take and READs once they are likely ready, instead of at once.
  // Off gives the paper's "fetch immediately, repeatedly". Default: true.
  bool adaptive_delay = true;
  // Upper bound of that delay: max(max_delay, R * measured fetch time).
  // Past it, fetches count against R as usual, so a slow server still shows
  // up as calls needing more than R fetches. Default: 2 us.
  absl::Duration max_delay = absl::Microseconds(2);
  // The share of calls whose first fetch the adaptive delay lets come one
  // fetch too early: the delay settles where about this fraction of first
  // fetches miss and the retry right after them finds the result. So it is
  // a percentile of how long results take: low, the delay waits for nearly
  // the slowest results (about 1 + this READs per call, but every call
  // waits that long); higher, it sits nearer the typical result (more
  // READs, lower latency when result times spread, e.g. a store whose
  // lookups sometimes miss the cache). In (0, 0.5]. Default: 1/20 (5%).
  // Where result times have a slow mode of a few percent (a host moving its
  // vCPUs: cross-core transfers of ~100 or ~500 ns), a target under that
  // share makes every call wait for the slow mode: on shm, 1/129 (the
  // default until 2026-11-26) gave a p50 of 1.17 us against 0.68 us at
  // 1/20, for 1.04 against 1.12 READs a call (benchmarks/RESULTS.md).
  double delay_miss_target = 1.0 / 20;
};

// The auto batch sizer (AutoBatchSizer in rpc/batch_policy.h, docs/rpc.md):
// keep at most `alpha` of calls above `latency_limit`, deciding at the end
// of each window of at least `window` calls and `min_window` time (up to
// 64 * window calls; the paper: 0, windows of `window` calls), with latency
// taken as the caller sees it (async: up to the start of the callback).
// SetSizerRule("paper") sets the paper's rule.
struct SizerOptions {
  // l_limit. Default: 100 us.
  absl::Duration latency_limit = absl::Microseconds(100);
  // alpha. Default: 0.05.
  double alpha = 0.05;
  // Calls per window. Default: 1000.
  int window = 1000;
  // Shortest window in time: longer than a scheduler slice, so a
  // descheduled thread's late calls count as the share of calls they are
  // (see AutoBatchSizer). Default: 10 ms.
  absl::Duration min_window = absl::Milliseconds(10);
  // A window this old ends at its next call even if it holds fewer than
  // `window` calls, so a slow caller (a few hundred calls a second) still
  // gets a decision this often; zero: windows end on their call count only
  // (the paper). Not below min_window unless zero. Default: 50 ms.
  absl::Duration max_window = absl::Milliseconds(50);
  // Steps to the size the window's latency quantiles point at (bounded to
  // halving / doubling) instead of the paper's -1 / +1. Default: true.
  bool proportional_steps = true;
  // Windows measured but not acted on after each change (the paper: 0).
  // Default: 1.
  int holdoff_windows = 1;
  // Consecutive windows with more than alpha of calls above the limit
  // before N shrinks (the paper: 1): one such window is most often a stall
  // of the host, not N. Default: 2.
  int shrink_windows = 2;
  // A grow that lowered the window's calls per second by more than 3% (or
  // than twice their measured move from one window to the next, up to 50%)
  // is undone, and growth stops there for 64 windows (AutoBatchSizer's
  // peak guard; the paper: off). Default: true.
  bool peak_guard = true;
  // Where calls are late in the band the paper leaves N alone (between a
  // tenth of alpha and alpha of them above l_limit), N still grows while
  // the window's (1 - alpha) quantile is at most this fraction of l_limit,
  // toward where it would reach it. In (0, 1]. Default: 0.7 (0.5 until
  // 2026-11-27: at l_limit 20 us auto then held p95 near 10 us, at 89-92%
  // of the best fixed N's calls/s; at 0.7, 92-96% with p95 near 14 us).
  double grow_to = 0.7;
};

// Request batching (paper §4; RB²'s adaptive batching; docs/rpc.md).
struct BatchingOptions {
  // Default: kOff.
  BatchMode mode = BatchMode::kOff;
  // N: requests per batch (fixed), the starting size (auto), the publish
  // threshold (adaptive). Default: 16.
  int size = 16;
  // L: a batch is flushed before its payload would exceed this. Default: 2048.
  uint32_t bytes = 2048;
  // A batch's results share one response slot (max_response_bytes), so a
  // batch also closes before its entries' results might not fit: each
  // keeps room for the largest result its method has returned on the
  // connection, and a method not seen yet for this many bytes. 0: a whole
  // response slot (its first call goes in a batch alone; once its result
  // is back, its calls batch). A result larger than any before may still
  // find too little room and fail RESOURCE_EXHAUSTED after its handler ran
  // (the next batches keep room for it). Set it where results are known to
  // be small, so a connection's first calls batch at once. Default: 0.
  uint32_t result_bytes = 0;
  // T: a batch is flushed this long after its first request. Default: 5 ms.
  // With the idle flush on, only an upper bound (docs/rpc.md).
  absl::Duration timeout = absl::Milliseconds(5);
  // Idle flush: the open batch is sent as soon as a caller would otherwise
  // wait for it (a sync caller whose call is in it, or the poller driving
  // the connection) and no other caller is in the middle of adding a call.
  // A batch of async calls still waits while this many batches are in
  // flight on the connection (their callers come back and join), until the
  // oldest is late (two typical turnarounds), or for N, L or T. So a lone
  // sync caller never waits for T, and pipelined async load still fills its
  // batches. An async call that would open a batch with fewer than this many
  // in flight goes alone (Nagle's rule). 2 suits a shallow pipeline (a few
  // calls in flight: two batches stay out instead of one), at the price of
  // half-size batches in a deep one. 0 turns the idle flush off (N, L and T
  // only, as in the paper). Default: 1.
  int idle_in_flight = 1;
  // Sync callers of many threads combine: a batch with a sync call waits
  // for company as a batch of async calls does, for callers in the middle
  // of adding (flat combining; up to 5 us) and behind batches in flight
  // (leader/follower; until the oldest is late). Off, a sync caller's batch
  // goes the moment its caller would wait, and a lone sync call takes the
  // unbatched path. Combining pays where those threads run in parallel and
  // the server or fabric is the bottleneck; where they are time-sliced
  // nobody joins meanwhile and every wait is the blocked caller's (on the
  // 2-core development machine 4 sync threads averaged 1.00 to 1.08 calls
  // a batch either way, at 0.26x to 1.06x of batch-off calls/s with it
  // (most runs 0.7x to 0.9x), 0.95x to 1.21x without; benchmarks/RESULTS.md).
  // Default: false.
  bool sync_combine = false;
  // Requests in flight per connection (batches are pipelined up to this); a
  // batched call stops counting when its result part arrives, not when the
  // whole batch is done. Async calls past it wait in a queue
  // (ChannelStats::calls_queued). Default: 256.
  int max_outstanding = 256;
  // Adaptive: entries transmitted per group (RB²'s beta). Default: 4.
  int group = 4;
  // mode kAuto: the sizer.
  SizerOptions sizer;
};

struct ChannelOptions {
  // Transport provider: "shm", "verbs" or "auto". Default: "shm".
  std::string provider = "shm";
  transport::ProviderOptions provider_options;

  // Default: kHybrid.
  RpcMode mode = RpcMode::kHybrid;
  // R, F, K and the first-fetch delay.
  FetchOptions fetch;
  // Connections to open; 0 opens one per server worker (calls are routed by
  // ClientContext::set_shard). Default: 1.
  int connections = 1;
  // Calls in flight per connection (one slot each). Default: 8.
  int slots_per_connection = 8;
  // The seq of each slot's first request. 0 (the default) picks one at
  // random per connection, so that bytes another client stored (e.g. a
  // value, later pushed into this client's reply slot) cannot be crafted to
  // pass for one of this connection's future headers. Tests may fix it.
  uint32_t first_seq = 0;
  // Largest serialized request, at most 1 GiB. Default: 4096.
  uint32_t max_request_bytes = 4096;
  // Largest serialized response, at most 1 GiB. Default: 65536.
  uint32_t max_response_bytes = 64 * 1024;

  // A request still unanswered this long after it was posted rings the
  // worker's doorbell again (with notify), then after twice that, up to
  // 64 ms: a lost doorbell hint costs this much latency, never the call
  // (docs/rpc.md "Work discovery"). Default: 1 ms.
  absl::Duration rering_after = absl::Milliseconds(1);

  // Deadline of calls whose ClientContext sets none. Default: 5 s.
  absl::Duration default_timeout = absl::Seconds(5);
  // Connection set-up limit. Default: 5 s.
  absl::Duration connect_timeout = absl::Seconds(5);
  // Shared secret presented in the handshake. Default: "" (none).
  std::string auth_token;

  // Work requests (docs/rpc.md "What a call posts"). WRITEs of up to this
  // many bytes go inline: the NIC takes the bytes from the work request
  // instead of reading them from memory (every doorbell and mode WRITE, and
  // requests that fit). The queue pair may grant less (verbs: the device's
  // limit); 0 turns inlining off. At most 1024. Default: 128.
  uint32_t max_inline = 128;
  // Selective signaling: the last WRITE of a post list is signaled (makes a
  // completion) once this many WRITEs have gone unsignaled since the last
  // signaled one; the others keep their send-queue entries until a later
  // signaled request completes. 1 signals every post list. READs are always
  // signaled. In [1, 64]. Default: 16.
  int signal_every = 16;
  // Doorbell batching: work requests that go together (a request and its
  // doorbell ring, the header READs due in one progress round, a batch's
  // WRITEs) are posted as one post list, one doorbell. false posts each on
  // its own (to measure what the lists save). Default: true.
  bool post_lists = true;

  // Batching (off by default) and its auto sizer.
  BatchingOptions batching;

  // How a thread waits for its calls (a sync caller, the progress thread):
  // false spins briefly, yields, and once a wait has lasted 1 ms sleeps a
  // sixteenth of the wait so far between polls (at most 2 ms), so a call
  // that takes T > 1 ms costs its caller ~100 wake-ups (T = 100 ms) instead
  // of a core, and finishes at most ~T/16 (plus the kernel's timer slack)
  // later.
  // true spins and yields for as long as the wait lasts, and a call past R
  // fetches keeps fetching at the short pauses (the lowest latency for long
  // calls, a core per waiting thread). Default: false.
  bool busy_wait = false;

  // true: from its first async call, the process's progress thread (one
  // for all channels) advances the channel's async calls and runs their
  // callbacks; a callback that blocks holds up every channel's. false: the
  // channel is never on that thread; async calls advance
  // only while some thread calls Channel::Poll() or makes a sync call on the
  // same connection. For a client that keeps calls in flight from one thread
  // and polls itself, as eRPC's event loop: no second spinning thread on its
  // core and no hand-off per completion. Default: true.
  bool progress_thread = true;

  // Called for every completed call with the result's size (header,
  // payload padded to 8, tail: what F must cover to fetch it in one READ,
  // wire::FramedBytes) and the
  // server's reported processing time; used by the R/F tuner's online
  // re-selection. Runs under a connection lock: keep it short and do not
  // call into the channel. Default: none.
  std::function<void(uint32_t result_bytes, absl::Duration server_time)>
      on_result;

  // Keep per-method counts and a latency histogram of the calls
  // (Channel::method_stats(), exported by //rpc:metrics): a thread-local
  // lookup and a few plain stores per call, no clock read of its own (the
  // progress round's is the call's end). Default: true.
  bool method_stats = true;
};

struct ServerOptions {
  // Default: "shm".
  std::string provider = "shm";
  transport::ProviderOptions provider_options;
  // Where to listen: shm: a Unix socket path ("" picks one); verbs:
  // "host:port" (port 0 picks one). Default: "".
  std::string address;
  // Worker threads; each owns many connections and polls them round robin.
  // Default: 1.
  int workers = 1;
  // Pin worker i to CPU (first_cpu + i) % ncpus; -1 leaves them unpinned.
  // At most 2^20. Default: -1.
  int pin_first_cpu = -1;
  // Upper bounds on what a client may ask for per connection (sizes at most
  // 1 GiB). Default: 64 slots, 64 KiB requests, 1 MiB responses.
  int max_slots_per_connection = 64;
  uint32_t max_request_bytes = 64 * 1024;
  uint32_t max_response_bytes = 1024 * 1024;
  // Results larger than this go by server-reply whatever the mode (the
  // paper's large-entry path). Default: 8192.
  uint32_t large_result_bytes = 8192;
  // Result parts of a batch hold at most this much payload (unless one
  // entry is larger) and at most the client's batch size in entries; at
  // least 64. Default: 2048.
  uint32_t result_batch_bytes = 2048;
  // Connections accepted at most (all workers together); beyond it a client
  // gets RESOURCE_EXHAUSTED at connect. A worker's work discovery does not
  // grow with connections (docs/rpc.md "Work discovery"); each costs the
  // server 2 file descriptors on shm (see raise_fd_limit) and memory for
  // the slots its client touches. Default: 16384.
  int max_connections = 16384;
  // Idle policy of a worker with nothing to do: spin this many empty rounds,
  // then yield, and once `idle_park_after` has passed without work, park:
  // sleep until a client's notify, a new connection or every 100 ms. A
  // client whose previous call on the connection is older than half of
  // idle_park_after sends a notify with its doorbell, so the first call
  // after a quiet spell pays one wake-up (tens of microseconds). A worker
  // whose park ended with work yields once at its first idle round after
  // serving it (its caller may be waiting on the same CPU).
  // InfiniteDuration() never parks. Defaults: 2000, 1 ms.
  int idle_spin_rounds = 2000;
  absl::Duration idle_park_after = absl::Milliseconds(1);
  // How long a worker keeps polling a hot slot (one served twice within
  // half this window) after each of its requests: a client calling in a loop
  // then skips the doorbell WRITE. 0 turns hot slots off (every request
  // rings); at most 1 s. Default: 50 us (20 us until 2026-11-27: a client
  // calling round robin over 16 connections then rang on every call; at
  // 50 us it does not, and calls/s rose ~12%. The client skips the
  // doorbell within half the window.)
  absl::Duration hot_window = absl::Microseconds(50);
  // At Start, raise the process's soft RLIMIT_NOFILE to its hard limit and
  // log how many connections that allows. Default: true.
  bool raise_fd_limit = true;
  // Shared secret clients must present; "" accepts everyone. Default: "".
  std::string auth_token;
  // Results pushed back (server-reply) of up to this many framed bytes go
  // as inline WRITEs; 0 turns that off. At most 1024. Default: 128.
  uint32_t max_inline = 128;
  // Keep per-method counts, a handler-time histogram and a result-size
  // histogram (Server::method_stats(), exported by //rpc:metrics), per
  // worker: a few plain stores per call after its result is published (the
  // handler-end clock read doubles as the published server time).
  // Default: true.
  bool method_stats = true;
  // Threads of the handler pool that runs blocking methods (MethodKind::
  // kBlocking: the .proto option (rfrpc.handler) = HANDLER_BLOCKING, or
  // Service::SetBlocking), so that a handler that blocks does not stall the
  // worker polling its connections. The pool starts only if some registered
  // method is blocking; at most this many blocking calls run at once, the
  // rest wait in its queue. In [1, 65536]. Default: 4.
  int blocking_threads = 4;
  // A sync handler (or a batch's run of sync calls) that holds its worker
  // this long stalls every other connection of that worker: the server
  // counts it (ServerStats::worker_stalls) and logs a warning naming the
  // method, once per method and worker, saying how to move it off the
  // worker (HANDLER_BLOCKING or HANDLER_ASYNC). The time is the one method
  // stats read, so with method_stats off nothing is counted. Zero turns it
  // off. Default: 10 ms.
  absl::Duration stall_warning = absl::Milliseconds(10);
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_OPTIONS_H_
