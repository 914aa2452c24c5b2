// Copyright 2026 The rfrpc Authors.
//
// Server set-up: provider, listener, the accept thread that lays out each
// connection's memory, and the workers.

#include "rpc/server.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "rpc/rpc_handshake.pb.h"
#include "rpc/method_counters.h"
#include "rpc/server_worker.h"
#include "base/status_macros.h"
#include "rpc/stats_registry.h"
#include "rpc/wire_format.h"
#include "base/mutex.h"

namespace rfrpc {

using internal::ServerConnection;
using internal::ServerWorker;

namespace {

// Workers busy-poll while there is work and for idle_park_after after it.
// With as many workers as the process may use CPUs, a client on the same
// host shares a CPU with one of them, and each call that lands on that
// worker waits for the scheduler to switch threads: YCSB against
// kvstore_server --workers=2 on 2 CPUs ran ~22 K ops/s, against 520-650 K
// with one worker. Legitimate on a host that serves only remote clients,
// hence a warning.
void WarnIfWorkersFillTheCpus(int workers) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return;
  const int cpus = CPU_COUNT(&set);
  if (workers < cpus) return;
  LOG(WARNING) << "rfrpc server: " << workers << " busy-polling worker"
               << (workers == 1 ? "" : "s") << " on " << cpus
               << " CPU" << (cpus == 1 ? "" : "s")
               << ": a client on this host will share CPUs with them and its "
                  "calls slow down sharply; leave it a CPU (fewer workers) "
                  "unless all clients are remote";
}

using wire::kRpcVersion;

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit in
// force afterwards.
uint64_t RaiseFdLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit want = lim;
    want.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &want) == 0) lim = want;
  }
  return lim.rlim_cur;
}

}  // namespace

class Server::Impl final : public internal::ServerStatsSource {
 public:
  explicit Impl(ServerOptions options)
      : options_(std::move(options)),
        epoch_(absl::Uniform<uint64_t>(absl::BitGen(), 1,
                                       std::numeric_limits<uint64_t>::max())) {}
  ~Impl() {
    if (OnHandlerThread()) {
      // Its threads would run on in freed memory.
      LOG(FATAL) << "rfrpc::Server destroyed by one of its own handlers; "
                    "a handler may call Shutdown, not destroy the server";
    }
    Shutdown();
    std::thread started_by_handler;
    {
      MutexLock lock(&mu_);
      started_by_handler = std::move(shutdown_thread_);
    }
    if (started_by_handler.joinable()) started_by_handler.join();
  }

  absl::Status RegisterService(Service* service) {
    MutexLock lock(&mu_);
    if (started_) {
      return absl::FailedPreconditionError(
          "RegisterService must come before Server::Start");
    }
    for (const MethodEntry& m : service->methods()) {
      auto [it, inserted] = methods_.emplace(m.id, &m);
      if (!inserted) {
        return absl::AlreadyExistsError(absl::StrCat(
            "method ", m.full_name, " has the id of ", it->second->full_name,
            " (0x", absl::Hex(m.id), "); rename one of them"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Start() {
    MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("server already started");
    RFRPC_RETURN_IF_ERROR(ValidateServerOptions(options_));
    transport::ProviderOptions po = options_.provider_options;
    if (po.address_hint.empty()) {
      po.address_hint = transport::AddressHost(options_.address);
    }
    RFRPC_ASSIGN_OR_RETURN(provider_,
                           transport::Provider::Open(options_.provider, po));
    if (options_.raise_fd_limit) {
      const uint64_t fds = RaiseFdLimit();
      // shm: a connection's socket and its region's memfd; verbs: its
      // socket and its liveness monitor's eventfd. Plus room for
      // everything else the process holds.
      const uint64_t per_connection = 2;
      LOG(INFO) << "rfrpc server: file descriptor limit " << fds
                << ": room for about "
                << (fds > 64 ? (fds - 64) / per_connection : 0)
                << " connections (" << per_connection
                << " each), max_connections " << options_.max_connections;
    }
    WarnIfWorkersFillTheCpus(options_.workers);
    bool blocking = false;
    for (const auto& [id, m] : methods_) {
      blocking |= m->kind == MethodKind::kBlocking;
    }
    if (blocking) {
      pool_ = std::make_unique<internal::HandlerPool>(options_.blocking_threads);
    }
    const wire::BellsLayout bells{internal::BellCapacity(options_)};
    std::vector<const MethodEntry*> methods;
    for (const auto& [id, m] : methods_) methods.push_back(m);
    for (int i = 0; i < options_.workers; ++i) {
      transport::CompletionQueueOptions cq_options;
      cq_options.poll_mode = transport::PollMode::kBusy;
      cq_options.remote_wake = true;  // Parked workers wake on notifies.
      RFRPC_ASSIGN_OR_RETURN(auto cq, provider_->CreateCompletionQueue(cq_options));
      RFRPC_ASSIGN_OR_RETURN(auto area, provider_->AllocateMemory(bells.Bytes()));
      internal::WorkerMethodCounters* mc = nullptr;
      if (options_.method_stats) {
        method_counters_.push_back(
            std::make_unique<internal::WorkerMethodCounters>(methods));
        mc = method_counters_.back().get();
      }
      workers_.push_back(std::make_unique<ServerWorker>(
          i, options_, &methods_, &counters_, std::move(cq), std::move(area),
          mc, pool_.get()));
    }
    RFRPC_ASSIGN_OR_RETURN(listener_, provider_->Listen(options_.address));
    address_ = listener_->address();
    for (auto& w : workers_) {
      w->Start();
      handler_threads_.push_back(w->thread_id());
    }
    if (pool_ != nullptr) {
      for (std::thread::id id : pool_->thread_ids()) {
        handler_threads_.push_back(id);
      }
    }
    accept_thread_ = std::thread([this] { AcceptLoop(); });
    started_ = true;
    LOG(INFO) << "rfrpc server listening on " << address_ << " (provider "
              << provider_->name() << ", " << options_.workers << " workers)";
    return absl::OkStatus();
  }

  std::string address() const {
    MutexLock lock(&mu_);
    return address_;
  }

  // From a handler (an admin method, say), on a thread Shutdown must join:
  // the same shutdown runs on a thread of its own instead (joined by the
  // destructor), and this returns at once. From any other thread it returns
  // once the server has stopped, whoever started the shutdown.
  void Shutdown() {
    if (OnHandlerThread()) {
      MutexLock lock(&mu_);
      if (started_ && !stopped_ && !shutdown_thread_.joinable()) {
        try {
          shutdown_thread_ = std::thread([this] { ShutdownNow(); });
        } catch (const std::system_error& e) {
          LOG(ERROR) << "rfrpc server: a handler's Shutdown cannot start its "
                        "thread, the server keeps running: "
                     << e.what();
        }
      }
      return;
    }
    ShutdownNow();
  }

  // True on a worker or handler pool thread: where handlers run.
  bool OnHandlerThread() const {
    const std::thread::id me = std::this_thread::get_id();
    MutexLock lock(&mu_);
    return std::find(handler_threads_.begin(), handler_threads_.end(), me) !=
           handler_threads_.end();
  }

  // Stops the server, or waits for the shutdown already under way.
  void ShutdownNow() {
    {
      MutexLock lock(&mu_);
      if (!started_) return;
      if (stopped_) {
        mu_.Await(&shutdown_cv_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
          return shutdown_done_;
        });
        return;
      }
      stopped_ = true;
    }
    stop_.store(true);
    listener_->Shutdown();
    if (accept_thread_.joinable()) accept_thread_.join();
    for (auto& w : workers_) w->Stop();
    {
      MutexLock lock(&mu_);  // stats() reads the workers' counts.
      for (auto& w : workers_) {
        done_misuse_ += w->done_misuse();
        AddQueueStats(*w, &stopped_work_);
      }
      workers_.clear();
    }
    // Offloaded handlers still running finish (their results are dropped).
    if (pool_ != nullptr) pool_->Stop();
    listener_.reset();
    // Every connection is gone, including any a worker had not taken yet.
    counters_.connections_open.store(0);
    counters_.connection_slots.store(0);
    {
      MutexLock lock(&mu_);
      // Joined: their ids may now be given to other threads.
      handler_threads_.clear();
      shutdown_done_ = true;
      // Under the lock: a waiter may destroy the server once it has it.
      shutdown_cv_.notify_all();
    }
  }

  ServerStats stats() const override {
    ServerStats s;
    s.connections_accepted = counters_.connections_accepted.load();
    s.connections_rejected = counters_.connections_rejected.load();
    s.connections_closed = counters_.connections_closed.load();
    s.calls = counters_.calls.load();
    s.calls_server_reply = counters_.calls_server_reply.load();
    s.calls_failed = counters_.calls_failed.load();
    s.bad_requests = counters_.bad_requests.load();
    s.rdma_writes = counters_.rdma_writes.load();
    s.batches = counters_.batches.load();
    s.batch_runs = counters_.batch_runs.load();
    s.worker_stalls = counters_.worker_stalls.load();
    s.worker_stalls_preempted = counters_.worker_stalls_preempted.load();
    s.rings = counters_.rings.load();
    s.parks = counters_.parks.load();
    s.park_notifies = counters_.park_notifies.load();
    s.hot_serves = counters_.hot_serves.load();
    s.push_notifies = counters_.push_notifies.load();
    s.liveness_walks = counters_.liveness_walks.load();
    s.connections = counters_.connections_open.load();
    s.connection_slots = counters_.connection_slots.load();
    s.calls_async = counters_.calls_async.load();
    s.calls_offloaded = counters_.calls_offloaded.load();
    s.calls_cancelled = counters_.calls_cancelled.load();
    s.calls_expired = counters_.calls_expired.load();
    s.results_dropped = counters_.results_dropped.load();
    // Every push is one signaled WRITE; pushes to one connection in a row
    // share a post list.
    s.work.wqes = s.rdma_writes;
    s.work.doorbells = counters_.push_doorbells.load();
    s.work.signaled = s.rdma_writes;
    s.work.inline_writes = counters_.inline_writes.load();
    {
      MutexLock lock(&mu_);
      s.done_misuse = done_misuse_;
      s.work.Add(stopped_work_);
      for (const auto& w : workers_) {
        s.done_misuse += w->done_misuse();
        AddQueueStats(*w, &s.work);
      }
    }
    return s;
  }

  std::vector<MethodStats> method_stats() const override {
    // Built by Start under mu_ and never changed after.
    MutexLock lock(&mu_);
    std::vector<MethodStats> out;
    for (const auto& mc : method_counters_) mc->AddTo(&out);
    std::sort(out.begin(), out.end(),
              [](const MethodStats& a, const MethodStats& b) {
                return a.method < b.method;
              });
    return out;
  }

 private:
  void AcceptLoop() {
    while (!stop_.load()) {
      absl::StatusOr<std::unique_ptr<transport::IncomingConnection>> in =
          listener_->Next(absl::Milliseconds(100));
      if (!in.ok()) {
        if (in.status().code() != absl::StatusCode::kDeadlineExceeded &&
            !stop_.load()) {
          LOG(WARNING) << "rfrpc server: accept: " << in.status();
        }
        continue;
      }
      absl::Status s = AcceptOne(in->get());
      if (!s.ok()) {
        counters_.connections_rejected.fetch_add(1);
        LOG(WARNING) << "rfrpc server: refused " << (*in)->peer().peer_name
                     << ": " << s;
        (*in)->Reject(s);
      }
    }
  }

  absl::Status AcceptOne(transport::IncomingConnection* in) {
    rpc::RpcHello hello;
    if (!hello.ParseFromString(in->peer().user_data)) {
      return absl::InvalidArgumentError(
          "connection request carries no valid RpcHello");
    }
    if (hello.version() != kRpcVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("client speaks rpc version ", hello.version(),
                       "; this server speaks ", kRpcVersion));
    }
    int total = 0;
    for (auto& w : workers_) total += w->connections();
    if (total >= options_.max_connections) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "server is at max_connections (", options_.max_connections, ")"));
    }
    const uint32_t slots = std::min<uint32_t>(
        hello.slots(), static_cast<uint32_t>(options_.max_slots_per_connection));
    const uint32_t req_bytes = hello.request_slot_bytes();
    const uint32_t resp_bytes = hello.response_slot_bytes();
    if (slots < 1 || req_bytes < 64 || resp_bytes < 64 || req_bytes % 64 != 0 ||
        resp_bytes % 64 != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unusable slot layout: ", hello.ShortDebugString()));
    }
    if (req_bytes > wire::FramedBytes(options_.max_request_bytes) + 64 ||
        resp_bytes > wire::FramedBytes(options_.max_response_bytes) + 64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "requested slots of ", req_bytes, "/", resp_bytes,
          " bytes exceed this server's max_request_bytes/max_response_bytes (",
          options_.max_request_bytes, "/", options_.max_response_bytes, ")"));
    }
    if (in->peer().regions.empty()) {
      return absl::InvalidArgumentError("client exposed no reply region");
    }
    auto c = std::make_unique<ServerConnection>();
    c->layout.slots = slots;
    c->layout.request_slot_bytes = req_bytes;
    c->layout.response_slot_bytes = resp_bytes;
    c->client_reply = in->peer().regions[0];
    if (c->client_reply.length < c->layout.ReplyRegionBytes()) {
      return absl::InvalidArgumentError(
          "client's reply region is smaller than its slot layout");
    }
    int worker = hello.worker();
    if (worker < 0 || worker >= static_cast<int>(workers_.size())) {
      worker = static_cast<int>(next_worker_++ % workers_.size());
    }
    ServerWorker* w = workers_[worker].get();
    RFRPC_ASSIGN_OR_RETURN(c->region,
                           provider_->AllocateMemory(c->layout.ServerRegionBytes()));
    RFRPC_ASSIGN_OR_RETURN(c->bell, w->AllocateBell());
    // Until Adopt, the bell goes back if anything below fails.
    struct BellGuard {
      ServerWorker* w;
      uint32_t bell;
      bool armed = true;
      ~BellGuard() {
        if (armed) w->ReleaseBell(bell);
      }
    } guard{w, c->bell};
    c->expected_seq.assign(slots, hello.first_seq() != 0 ? hello.first_seq() : 1);
    c->push_in_flight.assign(slots, 0);
    c->push_posted_ns.assign(slots, 0);
    c->peer = in->peer().peer_name;

    rpc::RpcWelcome welcome;
    welcome.set_version(kRpcVersion);
    welcome.set_worker(static_cast<uint32_t>(worker));
    welcome.set_workers(static_cast<uint32_t>(workers_.size()));
    welcome.set_slots(slots);
    welcome.set_request_slot_bytes(req_bytes);
    welcome.set_response_slot_bytes(resp_bytes);
    welcome.set_large_result_bytes(options_.large_result_bytes);
    welcome.set_hot_window_ns(static_cast<uint64_t>(
        std::max<int64_t>(0, absl::ToInt64Nanoseconds(options_.hot_window))));
    welcome.set_server_epoch(epoch_);
    // 0 means "never parks", so a worker that parks at once says 1 ns.
    welcome.set_park_after_ns(
        options_.idle_park_after == absl::InfiniteDuration()
            ? 0
            : static_cast<uint64_t>(std::max<int64_t>(
                  1, absl::ToInt64Nanoseconds(options_.idle_park_after))));

    transport::ConnectionSetup setup;
    setup.cq = w->cq();
    // Region 0: the connection's slots. 1: its bell word. 2: its group's
    // summary byte. The last two are write-only.
    setup.exposed.push_back(transport::ExposedRegion{
        c->region.get(), 0, c->region->size(), /*remote_write=*/true,
        /*remote_read=*/true});
    const wire::BellsLayout& bl = w->bells_layout();
    setup.exposed.push_back(transport::ExposedRegion{
        w->bells(), bl.WordOffset(c->bell), 8, /*remote_write=*/true,
        /*remote_read=*/false});
    setup.exposed.push_back(transport::ExposedRegion{
        w->bells(), wire::BellsLayout::SummaryOffset(c->bell), 1,
        /*remote_write=*/true, /*remote_read=*/false});
    setup.user_data = welcome.SerializeAsString();
    setup.max_outstanding = 2 * slots + 16;
    setup.max_inline = options_.max_inline;
    setup.auth_token = options_.auth_token;
    RFRPC_ASSIGN_OR_RETURN(c->conn, in->Accept(setup));
    counters_.connections_accepted.fetch_add(1);
    counters_.connections_open.fetch_add(1);
    counters_.connection_slots.fetch_add(slots);
    guard.armed = false;
    w->Adopt(std::move(c));
    return absl::OkStatus();
  }

  const ServerOptions options_;
  const uint64_t epoch_;  // RpcWelcome::server_epoch.
  mutable Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::string address_ ABSL_GUARDED_BY(mu_);
  internal::MethodTable methods_;
  internal::ServerCounters counters_;
  // Per worker, when ServerOptions::method_stats; outlive the workers.
  std::vector<std::unique_ptr<internal::WorkerMethodCounters>> method_counters_
      ABSL_GUARDED_BY(mu_);
  std::unique_ptr<transport::Provider> provider_;
  std::unique_ptr<transport::Listener> listener_;
  std::unique_ptr<internal::HandlerPool> pool_;  // Blocking methods only.
  std::vector<std::unique_ptr<ServerWorker>> workers_;
  uint64_t done_misuse_ ABSL_GUARDED_BY(mu_) = 0;  // Of stopped workers.
  TransportWork stopped_work_ ABSL_GUARDED_BY(mu_);  // Their CQ polls.

  // Adds worker `w`'s completion-queue polls to `*to`.
  static void AddQueueStats(const ServerWorker& w, TransportWork* to) {
    const transport::CompletionQueue::Stats q = w.cq()->stats();
    to->cq_polls += q.polls;
    to->cq_empty_polls += q.empty_polls;
    to->cq_blocks += q.blocks;
  }
  std::thread accept_thread_;
  // The workers' and the handler pool's threads, from Start on.
  std::vector<std::thread::id> handler_threads_ ABSL_GUARDED_BY(mu_);
  // Runs ShutdownNow when a handler called Shutdown.
  std::thread shutdown_thread_ ABSL_GUARDED_BY(mu_);
  // Set when ShutdownNow is done; other callers wait for it.
  bool shutdown_done_ ABSL_GUARDED_BY(mu_) = false;
  std::condition_variable shutdown_cv_;
  std::atomic<bool> stop_{false};
  uint64_t next_worker_ = 0;
};

Server::Server(ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() {
  impl_->Shutdown();
  // Its counts stay in its address's totals (rpc/stats.h).
  internal::RetireServer(impl_.get());
}
absl::Status Server::RegisterService(Service* service) {
  return impl_->RegisterService(service);
}
absl::Status Server::Start() {
  RFRPC_RETURN_IF_ERROR(impl_->Start());
  // Not under the server's lock: snapshots take the registry's, then it.
  internal::RegisterServer(impl_.get(), impl_->address());
  return absl::OkStatus();
}
std::string Server::address() const { return impl_->address(); }
void Server::Shutdown() { impl_->Shutdown(); }
ServerStats Server::stats() const { return impl_->stats(); }
std::vector<MethodStats> Server::method_stats() const {
  return impl_->method_stats();
}

}  // namespace rfrpc
