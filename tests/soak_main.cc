// Copyright 2026 The rfrpc Authors.
//
// Soak: many clients x server workers on shm for a fixed time, with random
// payload sizes, every mode (rf, server_reply, hybrid, batched fixed / auto /
// adaptive) and injected faults on some clients (delayed and dropped
// completions, failed posts, connections failed mid-call; see
// transport/testing/fault_injection.h). Every reply is checked against its
// request. Run by tools/soak.sh [minutes].
//
// The server runs in a child process (forked before any thread starts) so
// its RSS is measured alone, from /proc/<pid>/status.
//
// Definitions (each must be 0 for a pass):
//   lost        a call whose completion (async callback, or the return of a
//               sync Call) has not happened by the end of the drain period:
//               its deadline (--call_timeout_ms) plus --grace_s after the
//               clients stop starting calls.
//   duplicated  a completion delivered for a call that had already
//               completed (the callback ran more than once).
//   mismatched  an OK reply whose id or payload is not its own request's.
// Also a failure: server RSS growing by more than --rss_growth_limit_mb from
// the end of warm-up to the end of the run.
//
// Errors by status code are printed but are not failures: faults make
// calls fail with UNAVAILABLE (lost connection, reconnected on next use) or
// DEADLINE_EXCEEDED, which is the promise (docs/reliability.md).

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "flags/provider_flag.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "tests/test_service.h"
#include "transport/testing/fault_injection.h"

DEFINE_double(seconds, 120, "How long clients start calls.");
DEFINE_int32(clients, 6, "Client threads, each with its own Channel.");
DEFINE_int32(workers, 2, "Server worker threads.");
DEFINE_int32(window, 16, "Async calls in flight per async client.");
DEFINE_int32(call_timeout_ms, 1000, "Deadline of every call.");
DEFINE_int32(grace_s, 10, "Drain time past the deadline before a call is lost.");
DEFINE_double(warmup_s, 10, "Server RSS baseline is taken after this long.");
DEFINE_int32(rss_growth_limit_mb, 32,
             "Fail if server RSS grows more than this after warm-up.");
DEFINE_bool(faults, true, "Inject faults on every third client.");

namespace rfrpc {
namespace testing {
namespace {

using transport::testing::FaultKnobs;

int64_t RssKiB(pid_t pid) {
  FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/status").c_str(), "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}

// Child: serve until killed (or the parent dies).
[[noreturn]] void RunServer(int out_fd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ServerOptions opts;
  opts.provider = FLAGS_provider;
  opts.workers = FLAGS_workers;
  opts.idle_spin_rounds = 200;
  Server server(opts);
  TestService service;
  CHECK(server.RegisterService(&service).ok());
  absl::Status s = server.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "soak server: %s\n", s.ToString().c_str());
    ::_exit(2);
  }
  const std::string line = server.address() + "\n";
  (void)!::write(out_fd, line.data(), line.size());
  ::close(out_fd);
  for (;;) absl::SleepFor(absl::Seconds(1));
}

struct ClientConfig {
  std::string name;
  RpcMode mode;
  BatchMode batch;
  bool async;
  bool faults;
  int connections;  // 0: one per worker.
};

struct Totals {
  std::atomic<uint64_t> started{0}, completed{0}, ok{0}, duplicated{0},
      mismatched{0};
  std::mutex mu;
  std::map<std::string, uint64_t> errors;  // "CODE" -> count.
  std::map<std::string, uint64_t> first_message;
  std::map<std::string, std::string> example;
  void Error(const absl::Status& s) {
    std::lock_guard<std::mutex> lock(mu);
    const std::string code = absl::StatusCodeToString(s.code());
    if (errors[code]++ == 0) example[code] = std::string(s.message());
  }
};

// One call's request and what its reply must be.
struct Call {
  uint64_t id = 0;
  TestRequest req;
  TestResponse resp;
  ClientContext ctx;
};

class Client {
 public:
  Client(int index, ClientConfig cfg, std::string address, Totals* totals)
      : index_(index), cfg_(std::move(cfg)), address_(std::move(address)),
        totals_(totals) {}

  absl::Status Connect() {
    ChannelOptions opts;
    const std::string tag = absl::StrCat("soak", index_);
    FaultKnobs* k = FaultKnobs::Named(tag);
    k->Reset();
    opts.provider = absl::StrCat("faulty@", tag, ":", FLAGS_provider);
    opts.mode = cfg_.mode;
    opts.batching.mode = cfg_.batch;
    opts.batching.size = 8;
    opts.connections = cfg_.connections;
    opts.slots_per_connection = 8;
    opts.max_request_bytes = 4096;
    opts.default_timeout = absl::Milliseconds(FLAGS_call_timeout_ms);
    auto ch = Channel::Create(address_, opts);
    if (!ch.ok()) return ch.status();
    channel_ = std::move(*ch);
    if (cfg_.faults) {
      k->set_completion_delay(absl::ZeroDuration(), absl::Microseconds(50));
      k->set_drop_completion_probability(1e-5);
      k->set_fail_post_probability(2e-6);
      k->set_fail_connection_probability(5e-6);
    }
    return absl::OkStatus();
  }

  void Run(const std::atomic<bool>* stop) {
    absl::BitGen gen(std::seed_seq{index_ + 1});
    uint64_t seq = 0;
    while (!stop->load(std::memory_order_relaxed)) {
      auto* call = new Call;
      call->id = (uint64_t{static_cast<uint32_t>(index_)} << 40) | ++seq;
      Fill(gen, call);
      totals_->started.fetch_add(1, std::memory_order_relaxed);
      if (!cfg_.async) {
        in_sync_call_.store(true);
        absl::Status s = CallEcho(channel_.get(), &call->ctx, call->req, &call->resp);
        in_sync_call_.store(false);
        Complete(call, s);
        delete call;
        continue;
      }
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return outstanding_.size() < static_cast<size_t>(FLAGS_window); });
        outstanding_.emplace(call->id, call);
      }
      const uint64_t id = call->id;
      channel_->CallAsync(MethodId(kEchoMethod), call->req, &call->resp,
                          &call->ctx, [this, id](absl::Status s) {
                            Call* c = nullptr;
                            {
                              std::lock_guard<std::mutex> lock(mu_);
                              auto it = outstanding_.find(id);
                              if (it != outstanding_.end()) {
                                c = it->second;
                                outstanding_.erase(it);
                              }
                            }
                            if (c == nullptr) {
                              totals_->duplicated.fetch_add(1);
                              return;
                            }
                            Complete(c, s);
                            delete c;
                            cv_.notify_one();
                          });
    }
  }

  // Calls whose completion has not happened (async still outstanding, or a
  // sync call still inside Call()).
  size_t Pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return outstanding_.size() + (in_sync_call_.load() ? 1 : 0);
  }
  const ClientConfig& config() const { return cfg_; }
  uint64_t calls() const { return calls_.load(); }
  uint64_t oks() const { return oks_.load(); }
  void Destroy() { channel_.reset(); }

 private:
  void Fill(absl::BitGen& gen, Call* call) {
    TestRequest& r = call->req;
    r.set_id(call->id);
    // Mostly small, sometimes up to 3 KiB (fits a 4 KiB slot as a batch
    // entry too).
    const int size = absl::Bernoulli(gen, 0.9) ? absl::Uniform(gen, 0, 256)
                                               : absl::Uniform(gen, 256, 3000);
    r.set_payload(ExpectedPayload(call->id ^ 0x5a5a, size));
    if (absl::Bernoulli(gen, 0.1)) {
      // Results past F (second READ) and past 8 KiB (pushed).
      r.set_response_size(absl::Uniform(gen, 300, 20000));
    }
    if (absl::Bernoulli(gen, 0.002)) r.set_delay_ns(200 * 1000);
    call->ctx.set_timeout(absl::Milliseconds(FLAGS_call_timeout_ms));
  }

  void Complete(Call* call, const absl::Status& s) {
    totals_->completed.fetch_add(1, std::memory_order_relaxed);
    calls_.fetch_add(1, std::memory_order_relaxed);
    if (!s.ok()) {
      totals_->Error(s);
      return;
    }
    const std::string want = call->req.response_size() > 0
                                 ? ExpectedPayload(call->id, call->req.response_size())
                                 : call->req.payload();
    if (call->resp.id() != call->id || call->resp.payload() != want) {
      if (totals_->mismatched.fetch_add(1) < 5) {
        LOG(ERROR) << "client " << index_ << " (" << cfg_.name << "): call "
                   << call->id << " got reply id " << call->resp.id()
                   << " with " << call->resp.payload().size() << " bytes, want "
                   << want.size();
      }
      return;
    }
    totals_->ok.fetch_add(1, std::memory_order_relaxed);
    oks_.fetch_add(1, std::memory_order_relaxed);
  }

  const int index_;
  const ClientConfig cfg_;
  const std::string address_;
  Totals* const totals_;
  std::unique_ptr<Channel> channel_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<uint64_t, Call*> outstanding_;
  std::atomic<bool> in_sync_call_{false};
  std::atomic<uint64_t> calls_{0}, oks_{0};
};

int Main() {
  int pipefd[2];
  CHECK_EQ(::pipe(pipefd), 0);
  const pid_t server_pid = ::fork();
  CHECK_GE(server_pid, 0);
  if (server_pid == 0) {
    ::close(pipefd[0]);
    RunServer(pipefd[1]);
  }
  ::close(pipefd[1]);
  std::string address;
  char ch;
  while (::read(pipefd[0], &ch, 1) == 1 && ch != '\n') address.push_back(ch);
  ::close(pipefd[0]);
  if (address.empty()) {
    std::fprintf(stderr, "soak: the server did not start\n");
    return 2;
  }
  auto kill_server = [&] {
    ::kill(server_pid, SIGKILL);
    ::waitpid(server_pid, nullptr, 0);
  };

  const std::vector<ClientConfig> kinds = {
      {"rf", RpcMode::kRemoteFetch, BatchMode::kOff, false, false, 1},
      {"server_reply", RpcMode::kServerReply, BatchMode::kOff, true, false, 0},
      {"hybrid", RpcMode::kHybrid, BatchMode::kOff, true, false, 0},
      {"batched_fixed", RpcMode::kHybrid, BatchMode::kFixed, true, false, 1},
      {"batched_auto", RpcMode::kRemoteFetch, BatchMode::kAuto, true, false, 1},
      {"batched_adaptive", RpcMode::kHybrid, BatchMode::kAdaptive, true, false, 0},
  };
  Totals totals;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < FLAGS_clients; ++i) {
    ClientConfig cfg = kinds[i % kinds.size()];
    // Faults on every third client, rotating over the kinds.
    cfg.faults = FLAGS_faults && i % 3 == 1;
    clients.push_back(std::make_unique<Client>(i, cfg, address, &totals));
    absl::Status s = clients.back()->Connect();
    if (!s.ok()) {
      std::fprintf(stderr, "soak: client %d: %s\n", i, s.ToString().c_str());
      kill_server();
      return 2;
    }
  }
  std::printf("soak: %.0f s, %d clients x %d server workers, provider %s, "
              "faults %s\n",
              FLAGS_seconds, FLAGS_clients, FLAGS_workers, FLAGS_provider.c_str(),
              FLAGS_faults ? "on (every third client)" : "off");
  for (size_t i = 0; i < clients.size(); ++i) {
    std::printf("  client %zu: %s%s%s\n", i, clients[i]->config().name.c_str(),
                clients[i]->config().async ? " async" : " sync",
                clients[i]->config().faults ? " +faults" : "");
  }
  std::fflush(stdout);

  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const absl::Time start = absl::Now();
  for (auto& c : clients) threads.emplace_back([&c, &stop] { c->Run(&stop); });

  const absl::Duration warmup =
      std::min(absl::Seconds(FLAGS_warmup_s), absl::Seconds(FLAGS_seconds) / 4);
  absl::SleepFor(warmup);
  const int64_t rss_start = RssKiB(server_pid);
  const absl::Time end = start + absl::Seconds(FLAGS_seconds);
  absl::Time next_report = absl::Now() + absl::Seconds(30);
  while (absl::Now() < end) {
    absl::SleepFor(std::min(absl::Seconds(1), end - absl::Now()));
    if (absl::Now() >= next_report) {
      next_report += absl::Seconds(30);
      std::printf("  t=%3.0fs calls %lu ok %lu server RSS %ld KiB\n",
                  absl::ToDoubleSeconds(absl::Now() - start),
                  static_cast<unsigned long>(totals.completed.load()),
                  static_cast<unsigned long>(totals.ok.load()),
                  static_cast<long>(RssKiB(server_pid)));
      std::fflush(stdout);
    }
  }
  stop.store(true);
  // Drain: every call must complete within its deadline plus the grace.
  const absl::Time drain_end = absl::Now() +
                               absl::Milliseconds(FLAGS_call_timeout_ms) +
                               absl::Seconds(FLAGS_grace_s);
  size_t pending = 0;
  do {
    pending = 0;
    for (auto& c : clients) pending += c->Pending();
    if (pending == 0) break;
    absl::SleepFor(absl::Milliseconds(10));
  } while (absl::Now() < drain_end);
  const uint64_t lost = pending;
  const int64_t rss_end = RssKiB(server_pid);
  const absl::Duration ran = absl::Now() - start;
  if (lost > 0) {
    // A stuck sync call would keep its thread from joining.
    std::printf("soak: %lu calls lost; not joining\n", static_cast<unsigned long>(lost));
  } else {
    for (auto& t : threads) t.join();
    for (auto& c : clients) c->Destroy();
  }
  kill_server();

  FaultKnobs::Counters f;
  for (int i = 0; i < FLAGS_clients; ++i) {
    FaultKnobs::Counters k = FaultKnobs::Named(absl::StrCat("soak", i))->counters();
    f.completions_dropped += k.completions_dropped;
    f.completions_delayed += k.completions_delayed;
    f.posts_failed += k.posts_failed;
    f.connections_failed += k.connections_failed;
  }
  const int64_t growth_kib = rss_end - rss_start;
  const bool rss_ok =
      rss_start > 0 && rss_end > 0 && growth_kib <= int64_t{FLAGS_rss_growth_limit_mb} * 1024;

  std::printf("soak: ran %.1f s\n", absl::ToDoubleSeconds(ran));
  for (size_t i = 0; i < clients.size(); ++i) {
    std::printf("  client %zu %-17s calls %9lu ok %9lu\n", i,
                clients[i]->config().name.c_str(),
                static_cast<unsigned long>(clients[i]->calls()),
                static_cast<unsigned long>(clients[i]->oks()));
  }
  std::printf("calls: %lu started, %lu completed, %lu ok (%.0f calls/s)\n",
              static_cast<unsigned long>(totals.started.load()),
              static_cast<unsigned long>(totals.completed.load()),
              static_cast<unsigned long>(totals.ok.load()),
              totals.completed.load() / absl::ToDoubleSeconds(ran));
  std::printf("errors by code:");
  if (totals.errors.empty()) std::printf(" none");
  std::printf("\n");
  for (const auto& [code, n] : totals.errors) {
    std::printf("  %-18s %9lu  e.g. \"%s\"\n", code.c_str(),
                static_cast<unsigned long>(n), totals.example[code].c_str());
  }
  std::printf("faults injected: completions dropped %lu, delayed %lu, posts "
              "failed %lu, connections failed %lu\n",
              static_cast<unsigned long>(f.completions_dropped),
              static_cast<unsigned long>(f.completions_delayed),
              static_cast<unsigned long>(f.posts_failed),
              static_cast<unsigned long>(f.connections_failed));
  std::printf("lost = %lu, duplicated = %lu, mismatched = %lu\n",
              static_cast<unsigned long>(lost),
              static_cast<unsigned long>(totals.duplicated.load()),
              static_cast<unsigned long>(totals.mismatched.load()));
  std::printf("server RSS: %.1f MiB after warm-up, %.1f MiB at end, growth "
              "%+.1f MiB (bound %d MiB)\n",
              rss_start / 1024.0, rss_end / 1024.0, growth_kib / 1024.0,
              FLAGS_rss_growth_limit_mb);
  const bool pass = lost == 0 && totals.duplicated.load() == 0 &&
                    totals.mismatched.load() == 0 && rss_ok &&
                    totals.ok.load() > 0;
  std::printf("soak: %s\n", pass ? "PASS" : "FAIL");
  std::fflush(stdout);
  if (lost > 0) ::_exit(1);  // Threads are stuck; don't run destructors.
  return pass ? 0 : 1;
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  return rfrpc::testing::Main();
}
