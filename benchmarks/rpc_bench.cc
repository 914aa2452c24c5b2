// Copyright 2026 The rfrpc Authors.
//
// rpc_bench: echo calls through rfrpc, one server in this process, sweeping
// payload size, server processing time and mode (the paper's Fig. 9 sweep).
// Prints ops/s, p50/p99 latency, RDMA ops per call and the provider.
//
//   bazel run //benchmarks:rpc_bench -- --modes=rf,server_reply,hybrid
//       --sizes=8,32,256,1024,8192 --server_time_us=0,1,2,4,8,12
//
// Server threads (Fig. 7): --workers=W. Multi-connection-per-thread vs
// thread-per-connection (Figs. 11/12): --threads=C --connections=1 puts one
// connection per client thread, spread round robin over the W workers, so
// --workers=2 gives C/2 connections per server thread and --workers=C one.
// --cdf_csv=FILE appends each point's latency CDF (Fig. 8).
//
// Metrics overhead (docs/observability.md): --metrics=on keeps per-method
// counters on both sides (ServerOptions/ChannelOptions::method_stats) and
// serves /metrics, scraped over HTTP every --scrape_ms (default 1 s); off
// (the default, as before metrics existed) keeps none. --metrics=ab runs
// each point --ab_rounds times in each setting, alternating (off, on, on,
// off, ...), each run with a fresh server (at one address) and fresh
// channels, and prints the medians of the runs' p50s and the median of the
// rounds' paired differences:
//
//   bazel run //benchmarks:rpc_bench -- --modes=rf,server_reply --metrics=ab
//       --ab_rounds=21 --seconds=0.3
//
// --rfrpc_metrics_port / --rfrpc_metrics_file (//flags:metrics_flags) serve
// or write the process's metrics as kvstore_server's do.
//
// Figures from the shm provider are same-host figures; figures from the
// Soft-RoCE VM show correctness, not hardware speed.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "benchmarks/bench_util.h"
#include "benchmarks/rpc_options.h"
#include "benchmarks/harness.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "rpc/channel.h"
#include "rpc/metrics.h"
#include "rpc/metrics_endpoint.h"
#include "rpc/server.h"
#include "tests/test_service.h"
#include "flags/metrics_flags.h"

DEFINE_string(address, "", "Listen address (verbs: ip:0).");
DEFINE_string(modes, "rf,server_reply,hybrid", "Modes to run.");
DEFINE_string(sizes, "32", "Payload sizes in bytes (comma separated).");
DEFINE_string(server_time_us, "0", "Server processing times (us) to sweep.");
DEFINE_int32(threads, 1, "Client threads (each with its own channel).");
DEFINE_int32(workers, 1, "Server worker threads.");
DEFINE_int32(connections, 0,
             "Connections per client thread; 0 opens one per server worker. "
             "With 1, connections spread round robin over the workers. "
             "--threads x --connections (or x --workers for 0) is at most "
             "the server's max_connections (16384; --rfrpc_max_connections).");
DEFINE_string(label, "", "Free-form tag copied into every CSV row.");
DEFINE_string(cdf_csv, "",
              "If set, append each point's latency CDF to this file "
              "(label,latency_us,fraction; label = mode/size/server_us).");
DEFINE_double(seconds, 2.0, "Measured seconds per point.");
DEFINE_double(warmup_seconds, 0.3, "Unmeasured warm-up per point.");
DEFINE_bool(pin, true, "Pin server worker i to CPU i and client j to the next.");
DEFINE_int32(repeats, 1,
             "Measure each point this many times and keep the best by ops/s "
             "(other work on a shared machine only slows runs down).");
DEFINE_bool(csv, false, "Print CSV rows instead of a table.");
DEFINE_string(metrics, "off",
              "off: no per-method counters; on: counters on and /metrics "
              "served, scraped every --scrape_ms; ab: each point in both "
              "settings, alternating, --ab_rounds times, medians printed.");
DEFINE_int32(ab_rounds, 5, "--metrics=ab: runs of each point per setting.");
DEFINE_int32(scrape_ms, 1000,
             "--metrics=on/ab: scrape /metrics this often (15x Prometheus' "
             "usual 15 s; on a host whose cores all busy-poll, each scrape "
             "takes a core from a poller for about a millisecond); 0: serve "
             "it, never scrape.");

namespace rfrpc {
namespace {

void PinSelf(int cpu) {
  const int n = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % n, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

struct Point {
  double ops = 0;
  double p50_us = 0, p99_us = 0, avg_us = 0;
  double ops_per_call = 0, reads_per_call = 0;
  // Per call, as the transport counted (ChannelStats::wqes and friends).
  double wqes_per_call = 0, doorbells_per_call = 0, inline_per_call = 0,
         signaled_per_call = 0;
  uint64_t calls = 0, failed = 0, switches = 0;
  double rf_share = 0;
  double rtt_ns = 0, delay_ns = 0;
  std::vector<double> sorted_us;  // Every measured latency, ascending.
};

// The channel's options: bench::ClientOptions() (--provider and every
// --rfrpc_* flag given) and --connections. --modes and --metrics set the
// mode and method_stats of each point.
ChannelOptions ClientOptions() {
  ChannelOptions o = bench::ClientOptions();
  o.connections = FLAGS_connections;
  return o;
}

Point Run(const std::string& address, RpcMode mode, int size, int server_us,
          bool method_stats) {
  std::atomic<bool> measure{false}, stop{false};
  std::vector<std::vector<double>> lat(FLAGS_threads);
  std::vector<ChannelStats> before(FLAGS_threads), after(FLAGS_threads);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int t = 0; t < FLAGS_threads; ++t) {
    threads.emplace_back([&, t] {
      if (FLAGS_pin) PinSelf(FLAGS_workers + t);
      ChannelOptions opts = ClientOptions();
      opts.mode = mode;
      opts.method_stats = method_stats;
      opts.max_request_bytes = std::max(4096, size + 64);
      opts.max_response_bytes = std::max(64 * 1024, size + 64);
      const std::unique_ptr<Channel> ch =
          bench::ValueOrExit(Channel::Create(address, opts), "channel");
      testing::TestRequest req;
      req.set_payload(std::string(size, 'p'));
      req.set_delay_ns(static_cast<uint32_t>(server_us * 1000));
      testing::TestResponse resp;
      lat[t].reserve(1 << 20);
      ready++;
      bool measuring = false;
      uint64_t id = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        if (!measuring && measure.load(std::memory_order_relaxed)) {
          measuring = true;
          before[t] = ch->stats();
        }
        req.set_id(++id);
        const uint64_t t0 = bench::ProcessTicks().Now();
        absl::Status s = testing::CallEcho(ch.get(), nullptr, req, &resp);
        const uint64_t t1 = bench::ProcessTicks().Now();
        if (!s.ok() || resp.id() != id) {
          failed++;
          continue;
        }
        if (measuring) {
          lat[t].push_back(bench::ProcessTicks().NsBetween(t0, t1) / 1000.0);
        }
      }
      after[t] = ch->stats();
    });
  }
  while (ready.load() < FLAGS_threads) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Seconds(FLAGS_warmup_seconds));
  measure = true;
  const absl::Time start = absl::Now();
  absl::SleepFor(absl::Seconds(FLAGS_seconds));
  stop = true;
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  for (auto& th : threads) th.join();

  Point p;
  std::vector<double> all;
  uint64_t calls = 0, ops = 0, reads = 0, rf = 0;
  uint64_t wqes = 0, doorbells = 0, inlined = 0, signaled = 0;
  for (int t = 0; t < FLAGS_threads; ++t) {
    all.insert(all.end(), lat[t].begin(), lat[t].end());
    calls += after[t].calls - before[t].calls;
    ops += (after[t].rdma_reads + after[t].rdma_writes) -
           (before[t].rdma_reads + before[t].rdma_writes);
    reads += after[t].rdma_reads - before[t].rdma_reads;
    wqes += after[t].work.wqes - before[t].work.wqes;
    doorbells += after[t].work.doorbells - before[t].work.doorbells;
    inlined += after[t].work.inline_writes - before[t].work.inline_writes;
    signaled += after[t].work.signaled - before[t].work.signaled;
    rf += after[t].calls_remote_fetch - before[t].calls_remote_fetch;
    p.switches += after[t].switches_to_server_reply +
                  after[t].switches_to_remote_fetch;
  }
  std::sort(all.begin(), all.end());
  p.calls = all.size();
  p.failed = failed.load();
  p.ops = all.size() / secs;
  if (!all.empty()) {
    p.p50_us = all[all.size() / 2];
    p.p99_us = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    double sum = 0;
    for (double v : all) sum += v;
    p.avg_us = sum / all.size();
  }
  p.ops_per_call = calls ? static_cast<double>(ops) / calls : 0;
  p.reads_per_call = calls ? static_cast<double>(reads) / calls : 0;
  if (calls > 0) {
    p.wqes_per_call = static_cast<double>(wqes) / calls;
    p.doorbells_per_call = static_cast<double>(doorbells) / calls;
    p.inline_per_call = static_cast<double>(inlined) / calls;
    p.signaled_per_call = static_cast<double>(signaled) / calls;
  }
  p.rf_share = calls ? static_cast<double>(rf) / calls : 0;
  for (int t = 0; t < FLAGS_threads; ++t) {
    p.rtt_ns += after[t].fetch_rtt_ns / FLAGS_threads;
    p.delay_ns += after[t].fetch_delay_ns / FLAGS_threads;
  }
  p.sorted_us = std::move(all);
  return p;
}

ServerOptions BenchServerOptions(bool method_stats) {
  ServerOptions so;
  so.provider = FLAGS_provider;
  so.address = FLAGS_address;
  so.workers = FLAGS_workers;
  so.pin_first_cpu = FLAGS_pin ? 0 : -1;
  so.max_request_bytes = 1 << 20;
  so.method_stats = method_stats;
  return so;
}

// GET /metrics from 127.0.0.1:`port`; the bytes received (0 on error).
size_t Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  size_t got = 0;
  static const char kGet[] = "GET /metrics HTTP/1.0\r\n\r\n";
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      write(fd, kGet, sizeof(kGet) - 1) == sizeof(kGet) - 1) {
    char buf[8192];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) got += n;
  }
  close(fd);
  return got;
}

// /metrics served and scraped every --scrape_ms while it lives.
class Scraper {
 public:
  explicit Scraper(metrics::RpcMetrics* m) {
    endpoint_ = bench::ValueOrExit(
        metrics::MetricsEndpoint::Start("127.0.0.1", 0, m->collectable()),
        "metrics endpoint");
    if (FLAGS_scrape_ms <= 0) return;  // Served, never scraped.
    thread_ = std::thread([this] {
      do {
        const absl::Time t0 = absl::Now();
        bytes_ = Scrape(endpoint_->port());
        CHECK_GT(bytes_, 0u) << "scrape of " << endpoint_->url() << " failed";
        scrape_us_ += absl::ToInt64Microseconds(absl::Now() - t0);
        ++scrapes_;
      } while (!stop_.WaitForNotificationWithTimeout(
          absl::Milliseconds(FLAGS_scrape_ms)));
    });
  }
  ~Scraper() {
    stop_.Notify();
    if (thread_.joinable()) thread_.join();
  }
  int scrapes() const { return scrapes_; }
  size_t bytes() const { return bytes_; }
  int64_t scrape_us() const { return scrape_us_; }

 private:
  std::unique_ptr<metrics::MetricsEndpoint> endpoint_;
  absl::Notification stop_;
  std::atomic<int> scrapes_{0};
  std::atomic<size_t> bytes_{0};
  std::atomic<int64_t> scrape_us_{0};
  std::thread thread_;
};

// One point with a server of its own, metrics on or off.
Point RunFresh(metrics::RpcMetrics* m, bool on, RpcMode mode, int size,
               int server_us, int* scrapes, int64_t* scrape_us, size_t* bytes) {
  ServerOptions so = BenchServerOptions(on);
  // One address for every run, as a long-lived server would have: the
  // metrics keep one set of series, not one per run.
  if (so.address.empty() && so.provider == "shm") {
    so.address = absl::StrCat("@rpc_bench-", getpid());
  }
  testing::TestService service;
  std::unique_ptr<Server> server = bench::StartServer(
      bench::WithServerFlags(so), {&service});
  std::unique_ptr<Scraper> scraper;
  if (on) scraper = std::make_unique<Scraper>(m);
  Point p = Run(server->address(), mode, size, server_us, on);
  if (scraper != nullptr) {
    *scrapes += scraper->scrapes();
    *scrape_us += scraper->scrape_us();
    *bytes = scraper->bytes();
  }
  scraper.reset();
  server->Shutdown();
  return p;
}

// --metrics=ab: each point, off and on alternately, medians.
int MainAb(metrics::RpcMetrics* m) {
  std::printf("# rpc_bench metrics A/B provider=%s workers=%d client_threads=%d "
              "rounds=%d seconds=%.1f scrape_ms=%d latency clock=%s%s\n",
              FLAGS_provider.c_str(), FLAGS_workers, FLAGS_threads,
              FLAGS_ab_rounds, FLAGS_seconds, FLAGS_scrape_ms,
              bench::ProcessTicks().source(),
              FLAGS_provider == "shm" ? " (same-host shm figures)" : "");
  std::printf("%-8s %-12s %6s %6s %5s | %9s %9s %9s | %9s %9s %9s | %7s %7s\n",
              "provider", "mode", "size", "srv_us", "round", "off_p50", "off_p99",
              "off_kops", "on_p50", "on_p99", "on_kops", "p50_on%", "scrapes");
  for (const std::string& ms : bench::ParseList(FLAGS_modes)) {
    const RpcMode mode = bench::ValueOrExit(ParseRpcMode(ms), "--modes");
    for (int us : bench::ParseInts("--server_time_us", FLAGS_server_time_us)) {
      for (int size : bench::ParseInts("--sizes", FLAGS_sizes)) {
        std::vector<double> p50[2], p99[2], ops[2], paired;
        int scrapes = 0;
        int64_t scrape_us = 0;
        size_t bytes = 0;
        for (int r = 0; r < FLAGS_ab_rounds; ++r) {
          // Alternate which goes first, so neither always runs on a
          // warmer (or busier) machine.
          Point both[2];
          for (int k = 0; k < 2; ++k) {
            const bool on = (r % 2 == 0) == (k == 1);
            both[on] = RunFresh(m, on, mode, size, us, &scrapes, &scrape_us, &bytes);
            CHECK_EQ(both[on].failed, 0u) << "calls failed";
          }
          if (both[0].calls == 0 || both[1].calls == 0) {
            // The machine gave a run no time at all: not a measurement.
            std::printf("%-8s %-12s %6d %6d %5d | a run made no calls: round "
                        "left out\n",
                        FLAGS_provider.c_str(), ms.c_str(), size, us, r + 1);
            continue;
          }
          for (int on = 0; on < 2; ++on) {
            p50[on].push_back(both[on].p50_us);
            p99[on].push_back(both[on].p99_us);
            ops[on].push_back(both[on].ops / 1000);
          }
          paired.push_back(p50[1].back() / p50[0].back() - 1);
          std::printf("%-8s %-12s %6d %6d %5d | %9.3f %9.3f %9.1f | %9.3f %9.3f %9.1f | %+6.1f%%\n",
                      FLAGS_provider.c_str(), ms.c_str(), size, us, r + 1,
                      p50[0].back(), p99[0].back(), ops[0].back(), p50[1].back(),
                      p99[1].back(), ops[1].back(),
                      100 * (p50[1].back() / p50[0].back() - 1));
          std::fflush(stdout);
        }
        if (paired.empty()) continue;
        const double off50 = bench::Median(p50[0]), on50 = bench::Median(p50[1]);
        std::printf("%-8s %-12s %6d %6d %5s | %9.3f %9.3f %9.1f | %9.3f %9.3f %9.1f | %+6.1f%% %7d\n",
                    FLAGS_provider.c_str(), ms.c_str(), size, us, "median", off50,
                    bench::Median(p99[0]), bench::Median(ops[0]), on50,
                    bench::Median(p99[1]), bench::Median(ops[1]),
                    100 * (on50 / off50 - 1), scrapes);
        // Other work on a shared machine only slows runs down (--repeats
        // keeps the best run for the same reason): the best p50 of each side.
        const double best_off = *std::min_element(p50[0].begin(), p50[0].end());
        const double best_on = *std::min_element(p50[1].begin(), p50[1].end());
        std::printf("# %s size=%d srv_us=%d: p50 with metrics on is %+.1f%% of off "
                    "(medians of %zu runs each); median of the rounds' paired "
                    "differences %+.1f%%; best runs %.3f vs %.3f us (%+.1f%%); "
                    "provider %s\n",
                    ms.c_str(), size, us, 100 * (on50 / off50 - 1),
                    paired.size(), 100 * bench::Median(paired), best_off,
                    best_on, 100 * (best_on / best_off - 1),
                    FLAGS_provider.c_str());
        if (scrapes > 0) {
          std::printf("# %d scrapes of /metrics, %.2f ms each on average, the "
                      "last %zu bytes\n",
                      scrapes, scrape_us / 1000.0 / scrapes, bytes);
        }
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

int Main() {
  bench::FlagCheck()
      .AtLeast("--threads", FLAGS_threads, 1)
      .ServerField("--workers", FLAGS_workers, &ServerOptions::workers)
      .AtLeast("--connections", FLAGS_connections, 0)
      .Seconds("--seconds", FLAGS_seconds)
      .SecondsOrZero("--warmup_seconds", FLAGS_warmup_seconds)
      .AtLeast("--repeats", FLAGS_repeats, 1)
      .AtLeast("--ab_rounds", FLAGS_ab_rounds, 1)
      .AtLeast("--scrape_ms", FLAGS_scrape_ms, 0)
      .NotEmpty("--modes", FLAGS_modes)
      .NotEmpty("--sizes", FLAGS_sizes)
      .NotEmpty("--server_time_us", FLAGS_server_time_us)
      .EachInRange("--sizes", FLAGS_sizes, 0, 1000000)  // The server's 1 MiB.
      .EachInRange("--server_time_us", FLAGS_server_time_us, 0, 2000000)
      .OrExit();
  // Every client thread's channel opens its connections to the one server,
  // which accepts max_connections in all: past it the run cannot work, and a
  // huge --connections used to open connections until the process ran out
  // of file descriptors.
  const ServerOptions limits = bench::WithServerFlags(BenchServerOptions(false));
  bench::FlagCheck()
      .ServerConnections(
          FLAGS_connections > 0
              ? absl::StrCat("--threads=", FLAGS_threads,
                             " x --connections=", FLAGS_connections)
              : absl::StrCat("--threads=", FLAGS_threads, " x --workers=",
                             FLAGS_workers, " (--connections=0)"),
          int64_t{FLAGS_threads} *
              (FLAGS_connections > 0 ? FLAGS_connections : limits.workers),
          limits)
      .OrExit();
  for (const std::string& m : bench::ParseList(FLAGS_modes)) {
    bench::ValueOrExit(ParseRpcMode(m), "--modes");
  }
  if (!FLAGS_cdf_csv.empty()) {
    // Appended to after each point: find out now, not after the run.
    FILE* f = std::fopen(FLAGS_cdf_csv.c_str(), "a");
    if (f == nullptr) {
      bench::Exit("--cdf_csv",
                  absl::Status(absl::ErrnoToStatusCode(errno),
                               absl::StrCat("cannot open ", FLAGS_cdf_csv, ": ",
                                            std::strerror(errno))));
    }
    std::fclose(f);
  }
  if (FLAGS_metrics != "off" && FLAGS_metrics != "on" && FLAGS_metrics != "ab") {
    std::fprintf(stderr, "rpc_bench: --metrics must be off, on or ab\n");
    return 2;
  }
  // The --rfrpc_* channel flags, before a server starts (each point builds
  // its options from them later).
  ClientOptions();
  std::unique_ptr<metrics::RpcMetrics> m;
  if (FLAGS_metrics != "off") {
    m = bench::ValueOrExit(
        metrics::RpcMetrics::Create(std::make_shared<prometheus::Registry>()),
        "metrics");
    m->NameMethod(MethodId(testing::kEchoMethod), testing::kEchoMethod);
  }
  if (FLAGS_metrics == "ab") return MainAb(m.get());
  const bool on = FLAGS_metrics == "on";
  testing::TestService service;
  std::unique_ptr<Server> server = bench::StartServer(
      bench::WithServerFlags(BenchServerOptions(on)), {&service});
  std::unique_ptr<Scraper> scraper;
  if (on) scraper = std::make_unique<Scraper>(m.get());
  const ChannelOptions client = ClientOptions();
  std::printf(
      "# rpc_bench provider=%s workers=%d client_threads=%d R=%d F=%u K=%d "
      "max_inline=%u signal_every=%d post_lists=%d fetch_policy=%s "
      "fetch_miss_target=%g latency clock=%s%s\n",
      FLAGS_provider.c_str(), FLAGS_workers, FLAGS_threads,
      client.fetch.retries, client.fetch.size, client.fetch.switch_after,
      client.max_inline, client.signal_every, client.post_lists ? 1 : 0,
      std::string(FetchPolicyName(client)).c_str(),
      client.fetch.delay_miss_target, bench::ProcessTicks().source(),
      FLAGS_provider == "shm" ? " (same-host shm figures)" : "");
  if (FLAGS_csv) {
    std::printf("provider,mode,size,server_us,threads,ops_per_s,avg_us,p50_us,p99_us,"
                "rdma_ops_per_call,reads_per_call,rf_share,switches,calls,failed,workers,"
                "connections,label,loadavg,wqes_per_call,doorbells_per_call,"
                "inline_per_call,signaled_per_call\n");
  } else {
    std::printf("%-8s %-12s %6s %6s %12s %8s %8s %8s %8s %8s %6s %6s %7s %7s "
                "%6s %6s %6s %6s\n",
                "provider", "mode", "size", "srv_us", "ops/s", "avg_us",
                "p50_us", "p99_us", "ops/call", "rd/call", "rf%", "fail",
                "rtt_ns", "dly_ns", "wqe/c", "db/c", "inl/c", "sig/c");
  }
  for (const std::string& m : bench::ParseList(FLAGS_modes)) {
    const RpcMode mode = bench::ValueOrExit(ParseRpcMode(m), "--modes");
    for (int us : bench::ParseInts("--server_time_us", FLAGS_server_time_us)) {
      for (int size : bench::ParseInts("--sizes", FLAGS_sizes)) {
        Point p = Run(server->address(), mode, size, us, on);
        for (int rep = 1; rep < FLAGS_repeats; ++rep) {
          Point q = Run(server->address(), mode, size, us, on);
          if (q.ops > p.ops) p = std::move(q);
        }
        if (!FLAGS_cdf_csv.empty()) {
          FILE* f = std::fopen(FLAGS_cdf_csv.c_str(), "a");
          if (f == nullptr) {
            bench::Exit("--cdf_csv",
                        absl::Status(absl::ErrnoToStatusCode(errno),
                                     absl::StrCat("cannot open ", FLAGS_cdf_csv,
                                                  ": ", std::strerror(errno))));
          }
          bench::WriteCdf(f, m + "/" + std::to_string(size) + "/" + std::to_string(us),
                          p.sorted_us);
          std::fclose(f);
        }
        if (FLAGS_csv) {
          std::printf("%s,%s,%d,%d,%d,%.0f,%.3f,%.3f,%.3f,%.4f,%.4f,%.3f,%llu,%llu,%llu,"
                      "%d,%d,%s,%.2f,%.4f,%.4f,%.4f,%.4f\n",
                      FLAGS_provider.c_str(), m.c_str(), size, us, FLAGS_threads,
                      p.ops, p.avg_us, p.p50_us, p.p99_us, p.ops_per_call,
                      p.reads_per_call, p.rf_share,
                      static_cast<unsigned long long>(p.switches),
                      static_cast<unsigned long long>(p.calls),
                      static_cast<unsigned long long>(p.failed), FLAGS_workers,
                      FLAGS_connections, FLAGS_label.c_str(), bench::LoadAverage1(),
                      p.wqes_per_call, p.doorbells_per_call, p.inline_per_call,
                      p.signaled_per_call);
        } else {
          std::printf("%-8s %-12s %6d %6d %12.0f %8.3f %8.3f %8.3f %8.4f %8.4f %6.1f %6llu %7.0f %7.0f "
                      "%6.3f %6.3f %6.3f %6.3f\n",
                      FLAGS_provider.c_str(), m.c_str(), size, us, p.ops,
                      p.avg_us, p.p50_us, p.p99_us, p.ops_per_call,
                      p.reads_per_call, 100 * p.rf_share,
                      static_cast<unsigned long long>(p.failed), p.rtt_ns,
                      p.delay_ns, p.wqes_per_call, p.doorbells_per_call,
                      p.inline_per_call, p.signaled_per_call);
        }
        std::fflush(stdout);
      }
    }
  }
  if (scraper != nullptr && scraper->scrapes() > 0) {
    std::printf("# %d scrapes of /metrics, %.2f ms each on average, the last "
                "%zu bytes\n",
                scraper->scrapes(), scraper->scrape_us() / 1000.0 / scraper->scrapes(),
                scraper->bytes());
  }
  scraper.reset();
  server->Shutdown();
  return 0;
}

}  // namespace
}  // namespace rfrpc

int main(int argc, char** argv) {
  rfrpc::bench::Init(&argc, &argv);
  rfrpc::bench::RejectFlagsItSets({
      {"rfrpc_mode", "use --modes"},
      {"rfrpc_connections", "use --connections"},
      {"rfrpc_max_request_bytes", "it follows --sizes"},
      {"rfrpc_max_response_bytes", "it follows --sizes"},
  });
  // --rfrpc_metrics_port / --rfrpc_metrics_file: watch a long run from
  // Prometheus, or keep its final counts (whatever --metrics says).
  absl::StatusOr<std::unique_ptr<rfrpc::tools::FlagMetrics>> flag_metrics =
      rfrpc::tools::FlagMetrics::Create();
  if (!flag_metrics.ok()) {
    std::fprintf(stderr, "rpc_bench: %s\n", flag_metrics.status().ToString().c_str());
    return 2;
  }
  if (*flag_metrics != nullptr) {
    (*flag_metrics)->metrics()->NameMethod(rfrpc::MethodId(rfrpc::testing::kEchoMethod),
                                           rfrpc::testing::kEchoMethod);
    absl::Status s = (*flag_metrics)->Serve();
    if (!s.ok()) {
      std::fprintf(stderr, "rpc_bench: %s\n", s.ToString().c_str());
      return 1;
    }
    if ((*flag_metrics)->serving()) {
      std::printf("# metrics on %s\n", (*flag_metrics)->url().c_str());
    }
  }
  const int rc = rfrpc::Main();
  if (*flag_metrics != nullptr) {
    absl::Status s = (*flag_metrics)->WriteFile();
    if (!s.ok()) std::fprintf(stderr, "rpc_bench: %s\n", s.ToString().c_str());
  }
  return rc;
}
