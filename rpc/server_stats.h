// Copyright 2026 The rfrpc Authors.
//
// ServerStats: a server's counters (Server::stats(), and per address in
// rpc/stats.h's snapshots).

#ifndef RFRPC_RPC_SERVER_STATS_H_
#define RFRPC_RPC_SERVER_STATS_H_

#include <cstdint>

#include "rpc/call_stats.h"

namespace rfrpc {

struct ServerStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_rejected = 0;
  uint64_t connections_closed = 0;
  uint64_t calls = 0;
  uint64_t calls_server_reply = 0;  // Results written back by the server.
  uint64_t calls_failed = 0;        // Non-OK status returned to a caller.
  uint64_t bad_requests = 0;        // Malformed slots.
  uint64_t rdma_writes = 0;         // Out-bound WRITEs issued by workers.
  uint64_t batches = 0;             // Request batches served.
  // Runs of a batch's calls of one sync method that its handler served in
  // one call (MethodHandler::RunBatch; docs/rpc.md, "Serving a batch").
  uint64_t batch_runs = 0;
  // Sync handlers (or batch runs of them) that held their worker past
  // ServerOptions::stall_warning, stalling its other connections.
  uint64_t worker_stalls = 0;
  // Of worker_stalls: those where the worker waited at least half the time
  // for a CPU another thread had (/proc/thread-self/schedstat's run delay),
  // a preempted worker rather than a handler that held it. Zero where the
  // kernel keeps no scheduler statistics.
  uint64_t worker_stalls_preempted = 0;
  // Work discovery (docs/rpc.md): doorbell rings taken, times a worker
  // parked (went to sleep until woken) and of those the parks a client's
  // notify ended (the others ended at the 100 ms liveness check, a new
  // connection or shutdown), requests answered with the hot flag (their
  // client's next request needs no doorbell).
  uint64_t rings = 0;
  uint64_t parks = 0;
  uint64_t park_notifies = 0;
  uint64_t hot_serves = 0;
  // Results pushed with a notify that woke their sleeping caller's
  // completion queue (long calls: wire::kRequestFlagNotify).
  uint64_t push_notifies = 0;
  // Walks of every connection's liveness by parked workers: one after each
  // wake that followed a failure of some connection of the process (none
  // while nothing fails).
  uint64_t liveness_walks = 0;
  // Now: open connections, and the request slots they hold.
  uint64_t connections = 0;
  uint64_t connection_slots = 0;
  // Async and offloaded handlers (docs/define_a_service.md): calls whose
  // async handler returned before finishing them (their result was
  // published later, from the worker's mailbox), calls run on the handler
  // pool, calls the server answered CANCELLED because their client
  // cancelled them while they ran, calls answered DEADLINE_EXCEEDED because
  // their deadline passed before or while they ran, results finished after
  // their call was answered (or its connection lost) and dropped, and
  // ServerDones called twice or dropped uncalled (each logged).
  uint64_t calls_async = 0;
  uint64_t calls_offloaded = 0;
  uint64_t calls_cancelled = 0;
  uint64_t calls_expired = 0;
  uint64_t results_dropped = 0;
  uint64_t done_misuse = 0;
  // What the workers posted (their pushed results: one WRITE, one post
  // list, signaled each; inline when small, ServerOptions::max_inline) and
  // how their completion queues were polled.
  TransportWork work;
};

}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVER_STATS_H_
