// Copyright 2026 The rfrpc Authors.
//
// The hybrid mode-switch state machine of one client connection (paper §3.2,
// "Discussion"). Pure logic, no I/O, so it is tested with scripted events.
//
//  - A connection starts in remote fetching.
//  - A call that needs more than R fetches is slow (the connection's
//    FetchTiming holds R and says which calls are). K consecutive slow calls
//    switch the connection to server-reply (a single outlier does not).
//  - In server-reply the client records each result's server processing
//    time; when K consecutive results report a time below
//    switch_back_ratio * (the time remote fetching waits before a call
//    counts as slow: first-fetch delay cap + R fetch round trips), remote
//    fetching would again find results in time, so it switches back.
//  - Forced modes (kRemoteFetch, kServerReply) never switch.
//
// Thread-compatible: the owning connection serializes calls.

#ifndef RFRPC_RPC_HYBRID_POLICY_H_
#define RFRPC_RPC_HYBRID_POLICY_H_

#include <cstdint>

#include "absl/time/time.h"
#include "rpc/options.h"

namespace rfrpc {

class HybridPolicy {
 public:
  struct Params {
    RpcMode mode = RpcMode::kHybrid;
    int switch_after = 2;    // K.
    double switch_back_ratio = 0.8;
  };

  explicit HybridPolicy(const Params& params);

  // The mode new calls use: kRemoteFetch or kServerReply (never kHybrid).
  RpcMode current() const { return current_; }

  // A remote-fetching call has just exceeded R fetches (call once per call).
  // Returns true if the connection switches to server-reply now.
  bool OnCallExceededRetries();

  // A call completed by remote fetching; `slow`: it needed more than R
  // header READs (and OnCallExceededRetries was told).
  void OnFetchedCall(bool slow);

  // A call completed by a server WRITE while in server-reply, reporting
  // `server_time`, `reply_latency` after its request was posted.
  // `rf_budget` is how long remote fetching waits before a call counts as
  // slow: the connection's first-fetch delay cap plus R measured READ round
  // trips. The call is fast when the server's time is below
  // switch_back_ratio * rf_budget and the whole reply came within rf_budget
  // (so remote fetching would have found it in time). Returns true if the
  // connection switches back to remote fetching now.
  bool OnServerReplyCall(absl::Duration server_time,
                         absl::Duration reply_latency,
                         absl::Duration rf_budget);

  uint64_t switches_to_server_reply() const { return to_server_reply_; }
  uint64_t switches_to_remote_fetch() const { return to_remote_fetch_; }
  int consecutive_slow() const { return consecutive_slow_; }

 private:
  Params params_;
  RpcMode current_;
  int consecutive_slow_ = 0;
  int consecutive_fast_ = 0;
  uint64_t to_server_reply_ = 0;
  uint64_t to_remote_fetch_ = 0;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_HYBRID_POLICY_H_
