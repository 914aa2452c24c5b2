// Copyright 2026 The rfrpc Authors.
//
// The client side of rfrpc: a Channel to one server, over which generated
// stubs (or user code) make unary calls.
//
// A Channel owns its connections (one per server worker, or as configured).
// Each call takes a slot on a connection: the request is WRITten into that
// slot in server memory; the result is fetched with RDMA READs of F bytes
// (remote fetching) or written back by the server (server-reply), per
// ChannelOptions::mode.
//
//   ChannelOptions opts;
//   RFRPC_ASSIGN_OR_RETURN(auto channel, Channel::Create(address, opts));
//   Echo::Stub stub(channel.get());
//   ClientContext ctx;
//   ctx.set_timeout(absl::Milliseconds(100));
//   EchoResponse resp;
//   absl::Status s = stub.Echo(&ctx, req, &resp);
//
// Thread safety: a Channel is thread-safe; sync calls from many threads and
// async calls may be mixed. Async callbacks run on the channel's progress
// thread (or on a thread making a sync call or calling Poll()) and must not
// block for long. A callback on the progress thread may destroy the channel
// (drop the last reference to it): the calls still outstanding then finish
// with CANCELLED, and those already finished get their results, each
// callback exactly once. One run by Poll() or by a sync call must not: that
// thread is inside the channel.
// A ClientContext is for one call at a time.
//
// A channel is listed by SnapshotChannels() (rpc/stats.h) while it exists,
// and its counts stay in its server address's totals after.

#ifndef RFRPC_RPC_CHANNEL_H_
#define RFRPC_RPC_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "rpc/call_stats.h"
#include "rpc/channel_stats.h"
#include "rpc/client_context.h"
#include "rpc/options.h"

namespace rfrpc {

class Channel {
 public:
  // Connects to the server at `address`. Errors: UNAVAILABLE (no server,
  // no device), INVALID_ARGUMENT (bad options), the server's refusal.
  static absl::StatusOr<std::unique_ptr<Channel>> Create(
      const std::string& address, const ChannelOptions& options);

  virtual ~Channel() = default;

  // Unary call of method `method_id` (see MethodId()). Blocks until the
  // response arrives, the deadline passes (DEADLINE_EXCEEDED) or the server
  // is lost (UNAVAILABLE). `response` must not be null; `ctx` may be null
  // (defaults apply). Neither is kept after the call returns.
  virtual absl::Status Call(uint32_t method_id,
                            const google::protobuf::MessageLite& request,
                            google::protobuf::MessageLite* response,
                            ClientContext* ctx) = 0;

  // Starts the same call and returns at once; `done` runs exactly once with
  // the call's status. `request` may be destroyed when CallAsync returns;
  // `response` and `ctx` (if not null) must live until `done` runs.
  virtual void CallAsync(uint32_t method_id,
                         const google::protobuf::MessageLite& request,
                         google::protobuf::MessageLite* response,
                         ClientContext* ctx,
                         std::function<void(absl::Status)> done) = 0;

  // Advances every connection's outstanding calls on the calling thread and
  // runs the callbacks of async calls that finished, here, before returning.
  // Returns true if anything happened. Any thread may poll; with
  // ChannelOptions::progress_thread = false someone must, or async calls
  // never finish.
  virtual bool Poll() = 0;

  // Future flavour of CallAsync.
  std::future<absl::Status> CallFuture(
      uint32_t method_id, const google::protobuf::MessageLite& request,
      google::protobuf::MessageLite* response, ClientContext* ctx);

  // Server worker count, as the last connect or reconnect learned it, and
  // connections opened. A channel with one connection per worker
  // (ChannelOptions::connections <= 0) follows a server that comes back at
  // its address with another worker count: with more, it connects to the
  // new workers when the first of its connections reconnects; with fewer,
  // server_workers() drops (a connection to a worker that is gone
  // reconnects to one the server picks, and nothing routes to it). Callers
  // that route by worker (ClientContext::set_shard) should read it per
  // call.
  virtual int server_workers() const = 0;
  virtual int connections() const = 0;
  // The mode connection `connection` (in [0, connections())) currently uses
  // (hybrid moves between the two); the channel's configured mode for one
  // outside that range or not connected.
  virtual RpcMode connection_mode(int connection) const = 0;

  virtual ChannelStats stats() const = 0;
  // Per method id, sorted by id (names empty: a channel knows ids only);
  // empty with ChannelOptions::method_stats off.
  virtual std::vector<MethodStats> method_stats() const = 0;

  // The batch size N in force: 0 when batching is off; fixed and adaptive:
  // ChannelOptions::batching.size; auto: the size the sizer chose last (of any
  // connection). Cheap (one atomic load): a caller that keeps a multiple of
  // N in flight may read it per call.
  virtual int batch_size() const = 0;

  // Changes R and F for calls started from now on (the R/F tuner's online
  // re-selection). INVALID_ARGUMENT if retries < 1 or fetch_size < 16.
  virtual absl::Status SetFetchParams(int retries, uint32_t fetch_size) = 0;
  // The R and F in force.
  virtual int retries() const = 0;
  virtual uint32_t fetch_size() const = 0;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_CHANNEL_H_
