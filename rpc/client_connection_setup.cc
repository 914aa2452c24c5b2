// Copyright 2026 The rfrpc Authors.
//
// Client connection set-up: registered memory, the handshake that agrees on
// the slot layout, and the initial mode. The datapath is in
// client_connection.cc.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "base/status_macros.h"
#include "glog/logging.h"
#include "rpc/client_connection.h"
#include "rpc/rpc_handshake.pb.h"

namespace rfrpc {
namespace internal {
namespace {

using wire::kRpcVersion;

uint32_t RoundUp64(uint32_t n) { return (n + 63u) & ~63u; }

// When this process last posted to server worker `worker` of the server
// run `epoch` at `address`: one clock per worker, shared by every
// connection to it (a client calling round robin over thousands of
// connections then notifies only when the worker may really have parked,
// not on every call). A server that sends no epoch gets a clock per
// connection.
std::shared_ptr<std::atomic<int64_t>> WorkerPostClock(
    const std::string& address, uint64_t epoch, uint32_t worker) {
  if (epoch == 0) return std::make_shared<std::atomic<int64_t>>(0);
  static Mutex mu;
  static auto* clocks = new absl::flat_hash_map<
      std::string, std::weak_ptr<std::atomic<int64_t>>>();
  const std::string key = absl::StrCat(address, "|", epoch, "|", worker);
  MutexLock lock(&mu);
  if (clocks->size() >= 64) {  // Drop the clocks of servers gone.
    absl::erase_if(*clocks, [](const auto& e) { return e.second.expired(); });
  }
  std::weak_ptr<std::atomic<int64_t>>& entry = (*clocks)[key];
  std::shared_ptr<std::atomic<int64_t>> clock = entry.lock();
  if (clock == nullptr) {
    clock = std::make_shared<std::atomic<int64_t>>(0);
    entry = clock;
  }
  return clock;
}

// Calls fn(count, total, stat) for each scalar of CallCounts: its member,
// the ChannelCounters total it joins when the connection goes, and the
// ChannelStats field it is read into (fetch_histogram is done apart). One
// list, so that a count added to CallCounts cannot be left out of either.
template <typename Fn>
void ForEachCallCount(Fn fn) {
  fn(&CallCounts::calls, &ChannelCounters::calls, &ChannelStats::calls);
  fn(&CallCounts::calls_remote_fetch, &ChannelCounters::calls_remote_fetch,
     &ChannelStats::calls_remote_fetch);
  fn(&CallCounts::calls_server_reply, &ChannelCounters::calls_server_reply,
     &ChannelStats::calls_server_reply);
  fn(&CallCounts::server_time_ns, &ChannelCounters::server_time_ns,
     &ChannelStats::server_time_ns);
  fn(&CallCounts::fetched_call_fetches, &ChannelCounters::fetched_call_fetches,
     &ChannelStats::fetched_call_fetches);
  fn(&CallCounts::fetches, &ChannelCounters::fetches, &ChannelStats::fetches);
  fn(&CallCounts::rdma_writes, &ChannelCounters::rdma_writes,
     &ChannelStats::rdma_writes);
  fn(&CallCounts::rdma_reads, &ChannelCounters::rdma_reads,
     &ChannelStats::rdma_reads);
  fn(&CallCounts::rings, &ChannelCounters::rings, &ChannelStats::rings);
  fn(&CallCounts::notifies, &ChannelCounters::notifies, &ChannelStats::notifies);
  fn(&CallCounts::hot_posts, &ChannelCounters::hot_posts,
     &ChannelStats::hot_posts);
  fn(&CallCounts::batches_plain, &ChannelCounters::batches_plain,
     &ChannelStats::batches_plain);
  fn(&CallCounts::flushes_idle, &ChannelCounters::flushes_idle,
     &ChannelStats::flushes_idle);
}

}  // namespace

ClientConnection::ClientConnection(ChannelOptions options,
                                   ChannelCounters* counters)
    : post_lists_(options.post_lists),
      has_on_result_(options.on_result != nullptr),
      mode_option_(options.mode),
      batch_mode_(options.batching.mode),
      max_outstanding_(options.batching.max_outstanding),
      counters_(counters),
      // The queue's depth (Connect): room for what the admitted calls post.
      inline_comps_(
          4 * static_cast<size_t>(std::max(1, options.slots_per_connection)) +
          64),
      timing_(FetchTiming::Params{
          options.fetch.retries, options.fetch.adaptive_delay,
          absl::ToDoubleNanoseconds(options.fetch.max_delay),
          options.fetch.delay_miss_target, options.busy_wait}),
      signal_every_(static_cast<uint32_t>(std::max(1, options.signal_every))),
      rering_after_ns_(
          std::clamp<int64_t>(absl::ToInt64Nanoseconds(options.rering_after),
                              1000, int64_t{3600} * 1000 * 1000 * 1000)),
      first_policy_(HybridPolicy::Params{options.mode,
                                         options.fetch.switch_after,
                                         options.fetch.switch_back_ratio}),
      batcher_(options.batching),
      options_(std::move(options)) {
  MutexLock lock(&mu_);
  fetch_size_ = options_.fetch.size;
  std::fill(std::begin(policy_index_), std::end(policy_index_), uint8_t{0xff});
}

void ClientConnection::SetFetchParams(int retries, uint32_t fetch_size) {
  MutexLock lock(&mu_);
  timing_.set_retries(retries);
  fetch_size_ = fetch_size;
}

ClientConnection::~ClientConnection() {
  {
    MutexLock lock(&counters_->closed_mu);
    AddWorkCounts(&counters_->closed_work);
  }
  // The per-call counts join the channel's totals (ChannelImpl::stats
  // adds the live connections' own).
  auto fold = [](std::atomic<uint64_t>& to, const SingleWriterCounter& from) {
    if (from.Read() != 0) to.fetch_add(from.Read(), std::memory_order_relaxed);
  };
  ForEachCallCount([&](auto count, auto total, auto /*stat*/) {
    fold(counters_->*total, counts_.*count);
  });
  for (int i = 0; i < 16; ++i) {
    fold(counters_->fetch_histogram[i], counts_.fetch_histogram[i]);
  }
  // The transport connection goes first so the server sees us leave.
  conn_.reset();
}

void ClientConnection::AddCallCounts(ChannelStats* to) const {
  ForEachCallCount([&](auto count, auto /*total*/, auto stat) {
    to->*stat += (counts_.*count).Read();
  });
  for (int i = 0; i < 16; ++i) {
    to->fetch_histogram[i] += counts_.fetch_histogram[i].Read();
  }
}

void ClientConnection::AddWorkCounts(TransportWork* to) const {
  if (conn_ != nullptr) {
    const transport::Connection::Counters& c = conn_->counters();
    to->wqes += c.writes.load(std::memory_order_relaxed) +
                c.reads.load(std::memory_order_relaxed);
    to->doorbells += c.post_lists.load(std::memory_order_relaxed);
    to->inline_writes += c.inline_writes.load(std::memory_order_relaxed);
    to->signaled += c.signaled.load(std::memory_order_relaxed);
  }
  if (cq_ != nullptr) {
    const transport::CompletionQueue::Stats q = cq_->stats();
    to->cq_polls += q.polls;
    to->cq_empty_polls += q.empty_polls;
    to->cq_blocks += q.blocks;
  }
  to->cq_polls += inline_polls_.Read();
  to->cq_empty_polls += inline_empty_polls_.Read();
}

absl::StatusOr<std::unique_ptr<ClientConnection>> ClientConnection::Connect(
    transport::Provider* provider, const std::string& address, int worker,
    const ChannelOptions& options, ChannelCounters* counters) {
  RFRPC_RETURN_IF_ERROR(ValidateChannelOptions(options));
  std::unique_ptr<ClientConnection> c(new ClientConnection(options, counters));
  const uint32_t slots = static_cast<uint32_t>(options.slots_per_connection);
  const uint32_t req_bytes = RoundUp64(static_cast<uint32_t>(
      wire::FramedBytes(options.max_request_bytes)));
  const uint32_t resp_bytes = RoundUp64(static_cast<uint32_t>(
      wire::FramedBytes(options.max_response_bytes)));

  // Local memory. The mode word and the doorbell sources first, on the
  // page of slot 0's staging buffer (a call on slot 0 that rings touches one
  // page for both), then the staging slots, the fetch buffers and the cancel
  // word sources (8 bytes a slot).
  c->mode_word_offset_ = 0;
  c->staging_offset_ = 64;
  c->fetch_offset_ = c->staging_offset_ + size_t{slots} * req_bytes;
  c->cancel_src_offset_ = c->fetch_offset_ + size_t{slots} * resp_bytes;
  RFRPC_ASSIGN_OR_RETURN(
      c->local_, provider->AllocateMemory(c->cancel_src_offset_ +
                                          wire::Align64(size_t{slots} * 8)));
  RFRPC_ASSIGN_OR_RETURN(c->reply_,
                         provider->AllocateMemory(size_t{slots} * resp_bytes));
  transport::CompletionQueueOptions cq_options;
  cq_options.depth = static_cast<int>(4 * slots + 64);
  cq_options.poll_mode = transport::PollMode::kBusy;
  // A long call's push can wake a caller sleeping on the queue
  // (SleepForPush); shm keeps the wake word in a segment shared by the
  // process's queues, so this costs no descriptor or mapping per connection.
  cq_options.remote_wake = true;
  RFRPC_ASSIGN_OR_RETURN(c->cq_, provider->CreateCompletionQueue(cq_options));

  rpc::RpcHello hello;
  hello.set_version(kRpcVersion);
  hello.set_worker(worker);
  hello.set_slots(slots);
  hello.set_request_slot_bytes(req_bytes);
  hello.set_response_slot_bytes(resp_bytes);
  hello.set_client_name(absl::StrCat("pid ", getpid()));
  uint32_t first_seq = options.first_seq;
  if (first_seq == 0) {
    absl::BitGen gen;
    first_seq = absl::Uniform<uint32_t>(gen, 1, std::numeric_limits<uint32_t>::max());
  }
  hello.set_first_seq(first_seq);

  transport::ConnectionSetup setup;
  setup.cq = c->cq_.get();
  setup.exposed.push_back(transport::ExposedRegion{
      c->reply_.get(), 0, c->reply_->size(), /*remote_write=*/true,
      /*remote_read=*/false});
  setup.user_data = hello.SerializeAsString();
  setup.max_outstanding = SendQueueDepth(slots);
  setup.max_inline = options.max_inline;
  c->sq_admit_ = SendQueueAdmit(slots);
  setup.auth_token = options.auth_token;
  // A refusal the listener marks as passing (its handshakes at their cap,
  // out of descriptors; shm: its backlog full), as when hundreds of clients
  // connect at once, is tried again with a jittered back-off until the
  // connect timeout, not returned at once.
  const absl::Time give_up = absl::Now() + options.connect_timeout;
  absl::Duration backoff = absl::Milliseconds(1);
  absl::BitGen jitter;
  for (int attempt = 1;; ++attempt) {
    setup.handshake_timeout = give_up - absl::Now();
    absl::StatusOr<std::unique_ptr<transport::Connection>> conn =
        provider->Connect(address, setup);
    if (conn.ok()) {
      c->conn_ = std::move(*conn);
      break;
    }
    const absl::Duration pause = backoff * absl::Uniform(jitter, 0.5, 1.5);
    if (!transport::IsRetryLater(conn.status()) ||
        absl::Now() + pause >= give_up) {
      // A fresh status: the retry mark is not for the caller.
      if (attempt == 1) {
        return absl::Status(conn.status().code(), conn.status().message());
      }
      return absl::Status(
          conn.status().code(),
          absl::StrCat(conn.status().message(), " (", attempt, " attempts in ",
                       absl::FormatDuration(options.connect_timeout -
                                            (give_up - absl::Now())),
                       ")"));
    }
    absl::SleepFor(pause);
    backoff = std::min(2 * backoff, absl::Milliseconds(50));
  }
  c->inline_completions_ = c->conn_->SetInlineCompletions(&c->inline_comps_);
  c->inline_max_ = std::min(options.max_inline, c->conn_->max_inline());

  rpc::RpcWelcome welcome;
  if (!welcome.ParseFromString(c->conn_->peer().user_data)) {
    return absl::InvalidArgumentError(
        "server's handshake reply does not parse as RpcWelcome");
  }
  if (welcome.version() != kRpcVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("server speaks rpc version ", welcome.version(),
                     ", this client ", kRpcVersion));
  }
  if (welcome.slots() < 1 || welcome.slots() > slots ||
      welcome.request_slot_bytes() > req_bytes ||
      welcome.response_slot_bytes() > resp_bytes ||
      welcome.request_slot_bytes() < 64 || welcome.response_slot_bytes() < 64 ||
      welcome.workers() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server granted a layout this client cannot use: ",
        welcome.ShortDebugString()));
  }
  if (welcome.slots() < slots) {
    // Granted fewer than asked (the server's max_slots_per_connection): the
    // connection works with them; said once per process, not per connection.
    LOG_FIRST_N(WARNING, 1)
        << "rfrpc: " << address << " granted " << welcome.slots()
        << " slots per connection of the " << slots
        << " asked (ChannelOptions::slots_per_connection; the server's "
           "--rfrpc_max_slots_per_connection caps it)";
  }
  c->worker_ = static_cast<int>(welcome.worker());
  c->server_workers_ = static_cast<int>(welcome.workers());
  c->layout_.slots = welcome.slots();
  c->layout_.request_slot_bytes = welcome.request_slot_bytes();
  c->layout_.response_slot_bytes = welcome.response_slot_bytes();
  c->large_result_bytes_ = welcome.large_result_bytes();
  // The granted layout must match our local buffers' strides: keep ours and
  // only use the granted counts/sizes for what goes on the wire.
  if (welcome.request_slot_bytes() != req_bytes ||
      welcome.response_slot_bytes() != resp_bytes) {
    // Remap strides: simplest is to require equality of strides.
    return absl::InvalidArgumentError(absl::StrCat(
        "server reduced the slot sizes (", welcome.request_slot_bytes(), "/",
        welcome.response_slot_bytes(), " < ", req_bytes, "/", resp_bytes,
        "); lower max_request_bytes/max_response_bytes to at most the "
        "server's limits"));
  }
  const std::vector<transport::RemoteRegion>& regions = c->conn_->peer().regions;
  if (regions.size() < 3 ||
      regions[0].length < c->layout_.ServerRegionBytes() ||
      regions[1].length < 8 || regions[2].length < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server exposed ", regions.size(),
        " regions; need its connection region (large enough for the granted "
        "layout), a bell word and a summary byte"));
  }
  c->server_region_ = regions[0];
  c->bell_word_region_ = regions[1];
  c->bell_summary_region_ = regions[2];
  c->hot_half_window_ns_ = static_cast<int64_t>(
      std::min<uint64_t>(welcome.hot_window_ns(), uint64_t{1} << 40) / 2);
  // 0: the worker never parks (no notifies); a worker that parks at once
  // (1 ns) is notified on every ring.
  c->notify_gap_ns_ =
      welcome.park_after_ns() == 0
          ? 0
          : std::max<int64_t>(1, static_cast<int64_t>(std::min<uint64_t>(
                                     welcome.park_after_ns(), uint64_t{1} << 40) /
                                 2));
  c->worker_last_post_ =
      WorkerPostClock(address, welcome.server_epoch(), welcome.worker());
  c->bell_src_offset_ = c->mode_word_offset_ + 8;
  c->local_->data()[c->bell_src_offset_ + 8] = 1;  // The summary byte's value.

  MutexLock lock(&c->mu_);
  c->slots_.resize(c->layout_.slots);
  // PublishLocked/StartLocked advance the seq before use.
  for (auto& slot : c->slots_) slot.seq = first_seq - 1;
  for (uint32_t s = c->layout_.slots; s > 0; --s) c->free_slots_.push_back(s - 1);
  if (options.mode == RpcMode::kServerReply) {
    // Every method, and batches, in server reply for good.
    c->mode_bits_ = wire::kModeServerReply;
    c->WriteModeWord();
    if (!c->status_.ok()) return c->status_;
  }
  return c;
}


}  // namespace internal
}  // namespace rfrpc
