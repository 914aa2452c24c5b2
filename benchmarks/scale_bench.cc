// Copyright 2026 The rfrpc Authors.
//
// scale_bench: what a server costs as the number of connected clients grows
// (issue 15). One server with --workers workers runs in a child process (so
// its CPU, RSS and file descriptors are its own, read from /proc); this
// process holds M channels to it and, per M in --ms, prints:
//
//   connect     channels opened per second while growing to M;
//   fds         server and client file descriptors per connection;
//   rss         server resident memory per connection;
//   idle        the server's CPU over --idle_seconds with no calls, as a
//               share of one core per worker (from /proc/<pid>/task/*/
//               schedstat), and the latency of the first call after it;
//   floor       with --floor, the platform's share of that first call: a
//               thread of this process pinned to the server's CPU parks on
//               a futex for --idle_seconds and is woken from the client's
//               CPU; the time until the waker sees it run (a halted vCPU's
//               wake-up is tens of microseconds in a VM; no RPC design
//               avoids it once the server sleeps);
//   every 5 ms  with --pin, the p50 of 21 sync calls each after a 5 ms
//               pause (the worker has parked; the call wakes it), from a
//               thread on the worker's CPU and from one on another: on the
//               worker's CPU the woken worker preempts its caller, so this
//               shows what a worker that keeps the CPU after serving costs
//               a caller that shares it;
//   first pass  after that, one sync call on each channel opened for this
//               M that has had none: the mean time of a connection's
//               first call (its pages and lines touched for the first
//               time on both sides), so that the phases below measure
//               connections in use, not new ones;
//   one_active  sync Ping calls on one channel while M - 1 sit idle:
//               calls/s, p50, p99;
//   round_robin one thread calling each of the M channels in turn;
//   shared      --threads threads, thread t calling channels t, t + T, ...
//   paired      round robin over the M channels against one channel to a
//               second server (the reference, started for this phase), in
//               alternating blocks of --block_ms: the round-robin target's
//               ratio (M against one connection) measured in one run, each
//               block pair under the same host conditions. On this VM a
//               cross-core transfer moves between ~100 and ~500 ns with
//               the host's placement of the vCPUs, so separate phases
//               seconds apart differ by +-30% on their own.
//
// then the ratios the targets are stated in (against the first M).
// --cycles=N then opens and closes a channel N times (clean closes), and
// --kills=N forks N client processes that connect and are SIGKILLed; after
// each the server's descriptors and RSS are compared with where they started.
//
//   bazel run -c opt //benchmarks:scale_bench -- --ms=1,16,128,1024,4096
//
// Figures from the shm provider are same-host figures.

#include <dirent.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "benchmarks/bench_util.h"
#include "benchmarks/harness.h"
#include "benchmarks/rpc_options.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "proto/ping.rfrpc.h"
#include "rpc/channel.h"
#include "rpc/server.h"

DEFINE_string(role, "client", "client (the benchmark) or server (its child).");
DEFINE_string(address, "", "Server listen address (verbs: ip:0).");
DEFINE_int32(workers, 1, "Server worker threads.");
DEFINE_int32(max_connections, 0,
             "Server's max_connections; 0 keeps the library default.");
DEFINE_string(ms, "1,8,16,128,1024,4096",
              "Connected-client counts M (8: the reference of the "
              "--threads target).");
DEFINE_double(seconds, 1.0, "Measured seconds per load point.");
DEFINE_double(idle_seconds, 1.0, "Idle span over which server CPU is read.");
DEFINE_int32(threads, 8, "Client threads of the shared-connections point.");
DEFINE_string(phases, "one,rr,shared,paired,async",
              "Load points to run per M: one (1 active, M - 1 idle), rr (round "
              "robin over all M from one thread), shared (--threads threads), "
              "paired (rr interleaved with one channel to a second server), "
              "async (round robin over all M from one thread, "
              "--async_window async calls in flight).");
DEFINE_int32(block_ms, 50,
             "paired: the length of each block; the first 2 ms of a block "
             "are not counted (the idle server's worker wakes up then).");
DEFINE_int32(slots, 0, "Slots per connection; 0 keeps the library default.");
DEFINE_int32(cycles, 0, "Connect/close cycles after the sweep.");
DEFINE_int32(kills, 0, "Client processes SIGKILLed after connecting.");
DEFINE_bool(pin, true, "Pin the server to CPU 0 and client threads to CPU 1.");
DEFINE_bool(progress_thread, true,
            "ChannelOptions::progress_thread of every channel (the default "
            "true). Only the async phase makes async calls; with false it "
            "drives them by Poll() of every channel.");
DEFINE_int32(async_window, 32,
             "async: calls in flight at once, from one thread.");
DEFINE_bool(csv, false, "CSV rows instead of a table.");
DEFINE_int32(hot_window_us, -1,
             "ServerOptions::hot_window in microseconds; -1 keeps the "
             "library default.");
DEFINE_bool(server_park, true,
            "ServerOptions::idle_park_after stays the default; false: never "
            "park (an idle worker spins and yields: what the first call after "
            "idle costs without a wake-up, at the price of idle CPU).");
DEFINE_bool(floor, true,
            "Per M, also time a bare futex wake of a thread parked "
            "--idle_seconds on the server's CPU (the platform floor of the "
            "first call after idle).");
DEFINE_int32(rt_priority, 0,
             "If > 0, run the benchmark and its server under SCHED_FIFO at "
             "this priority (root): on a host shared with other work, the "
             "figures then measure rfrpc rather than the scheduler (the "
             "kernel still keeps 5% of each second for everything else).");

namespace rfrpc {
namespace {

class PingImpl final : public ping::Ping::Service {
 public:
  absl::Status Ping(ServerContext* ctx, const ping::Empty* req,
                    ping::Empty* resp) override {
    return absl::OkStatus();
  }
};

// Raises this process's soft descriptor limit as far as it goes (root may
// raise the hard one too); returns the soft limit in force.
long RaiseFdLimit() {
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  rlimit want = lim;
  want.rlim_max = std::max<rlim_t>(lim.rlim_max, 1 << 20);
  want.rlim_cur = want.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &want) != 0) {
    want = lim;
    want.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &want);
  }
  getrlimit(RLIMIT_NOFILE, &lim);
  return static_cast<long>(lim.rlim_cur);
}

int ServerMain() {
  RaiseFdLimit();
  ServerOptions so;
  so.provider = FLAGS_provider;
  so.address = FLAGS_address;
  so.workers = FLAGS_workers;
  so.pin_first_cpu = FLAGS_pin ? 0 : -1;
  if (FLAGS_max_connections > 0) so.max_connections = FLAGS_max_connections;
  if (!FLAGS_server_park) so.idle_park_after = absl::InfiniteDuration();
  if (FLAGS_hot_window_us >= 0) {
    so.hot_window = absl::Microseconds(FLAGS_hot_window_us);
  }
  so = bench::WithServerFlags(so);
  PingImpl impl;  // Outlives the server.
  Server server(so);
  absl::Status s = server.RegisterService(&impl);
  if (s.ok()) s = server.Start();
  if (!s.ok()) {
    std::printf("ERROR %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("LISTENING %s\n", server.address().c_str());
  std::fflush(stdout);
  // Until the benchmark closes our stdin (or dies).
  char buf[64];
  while (read(0, buf, sizeof(buf)) > 0) {
  }
  server.Shutdown();
  return 0;
}

// The server child and what /proc says about it.
class ServerProcess {
 public:
  // `address`: the server's listen address (an empty one: the provider
  // picks one).
  bool Start(const std::string& address) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return false;
    // This binary's path, read before the fork: exec'ing "/proc/self/exe"
    // itself fails under valgrind, which is how the client side's cache
    // misses per call are counted (the server then runs natively).
    char exe[4096];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0) return false;
    exe[n] = '\0';
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[1]);
      close(out[0]);
      std::vector<std::string> args = {
          exe, "--role=server",
          absl::StrCat("--provider=", FLAGS_provider),
          absl::StrCat("--address=", address),
          absl::StrCat("--workers=", FLAGS_workers),
          absl::StrCat("--max_connections=", FLAGS_max_connections),
          absl::StrCat("--pin=", FLAGS_pin ? "true" : "false"),
          absl::StrCat("--server_park=", FLAGS_server_park ? "true" : "false"),
          absl::StrCat("--hot_window_us=", FLAGS_hot_window_us)};
      // The --rfrpc_* flags given: the server child applies its side's.
      std::vector<gflags::CommandLineFlagInfo> flags;
      gflags::GetAllFlags(&flags);
      for (const gflags::CommandLineFlagInfo& f : flags) {
        if (absl::StartsWith(f.name, "rfrpc_") && !f.is_default) {
          args.push_back(absl::StrCat("--", f.name, "=", f.current_value));
        }
      }
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(exe, argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    out_ = fdopen(out[0], "r");
    char line[512];
    while (std::fgets(line, sizeof(line), out_) != nullptr) {
      absl::string_view l(line);
      if (absl::ConsumePrefix(&l, "LISTENING ")) {
        address_ = std::string(absl::StripTrailingAsciiWhitespace(l));
        return true;
      }
      if (absl::StartsWith(l, "ERROR")) {
        std::fprintf(stderr, "scale_bench: server: %s", line);
        return false;
      }
    }
    return false;
  }

  ~ServerProcess() {
    if (pid_ <= 0) return;
    close(stdin_);
    int status;
    waitpid(pid_, &status, 0);
    if (out_ != nullptr) std::fclose(out_);
  }

  const std::string& address() const { return address_; }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int stdin_ = -1;
  FILE* out_ = nullptr;
  std::string address_;
};

// What each open descriptor of `pid` that a connection can hold names (its
// /proc link: a socket's inode, a memfd's name, an eventfd, an RDMA
// device), one entry per descriptor. Other files are not counted: the
// server's log file (opened at its first warning) and a /proc file it is
// reading at that moment were reported as leaked descriptors.
std::vector<std::string> FdTargets(const std::string& pid) {
  std::vector<std::string> out;
  const std::string dir = absl::StrCat("/proc/", pid, "/fd");
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char buf[512];
      const ssize_t n = readlink(absl::StrCat(dir, "/", e->d_name).c_str(), buf,
                                 sizeof(buf) - 1);
      const std::string target =
          n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
      if (target[0] == '/' && !absl::StartsWith(target, "/memfd:") &&
          !absl::StartsWith(target, "/dev/infiniband/")) {
        continue;
      }
      out.push_back(target);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

int CountFds(const std::string& pid) {
  return static_cast<int>(FdTargets(pid).size());
}

// Memory mappings of a process: each counts against vm.max_map_count.
int CountMaps(const std::string& pid) {
  int n = 0;
  if (FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/maps").c_str(), "r")) {
    for (int c; (c = std::fgetc(f)) != EOF;) n += c == '\n';
    std::fclose(f);
  }
  return n;
}

// vm.max_map_count (-1 if unreadable).
long MaxMapCount() {
  long n = -1;
  if (FILE* f = std::fopen("/proc/sys/vm/max_map_count", "r")) {
    if (std::fscanf(f, "%ld", &n) != 1) n = -1;
    std::fclose(f);
  }
  return n;
}

// VmRSS in KiB.
long RssKib(int pid) {
  long kib = -1;
  if (FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/status").c_str(), "r")) {
    char line[256];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      if (std::sscanf(line, "VmRSS: %ld", &kib) == 1) break;
    }
    std::fclose(f);
  }
  return kib;
}

// The p50 of 21 sync calls on `stub`, each after a 5 ms pause, from a
// thread pinned to `cpu`.
double SlowCallerP50Us(ping::Ping::Stub* stub, int cpu) {
  std::vector<double> us;
  std::thread t([&] {
    bench::PinSelf(cpu);
    const bench::TickClock& ticks = bench::ProcessTicks();
    ping::Empty req, resp;
    for (int i = 0; i < 21; ++i) {
      absl::SleepFor(absl::Milliseconds(5));
      const uint64_t t0 = ticks.Now();
      absl::Status s = stub->Ping(nullptr, req, &resp);
      us.push_back(ticks.NsBetween(t0, ticks.Now()) / 1000.0);
      if (!s.ok()) {
        std::fprintf(stderr, "slow caller: %s\n", s.ToString().c_str());
      }
    }
  });
  t.join();
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// The platform floor of a first call after idle: a thread on `cpu` (-1:
// unpinned) futex-waits for `idle`, is woken from this thread, and answers
// by a store this thread spins on. Microseconds from the wake to the
// answer.
double WakeFloorUs(int cpu, absl::Duration idle) {
  std::atomic<uint32_t> word{0}, answered{0};
  std::thread sleeper([&] {
    if (cpu >= 0) bench::PinSelf(cpu);
    while (word.load(std::memory_order_acquire) == 0) {
      ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, 0,
                nullptr, nullptr, 0);
    }
    answered.store(1, std::memory_order_release);
  });
  absl::SleepFor(idle);
  const bench::TickClock& ticks = bench::ProcessTicks();
  const uint64_t t0 = ticks.Now();
  word.store(1, std::memory_order_release);
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, 1,
            nullptr, nullptr, 0);
  while (answered.load(std::memory_order_acquire) == 0) {
  }
  const double us = ticks.NsBetween(t0, ticks.Now()) / 1000.0;
  sleeper.join();
  return us;
}

// Nanoseconds every thread of `pid` has run (schedstat's first field).
uint64_t CpuNs(int pid) {
  uint64_t total = 0;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (FILE* f = std::fopen(absl::StrCat(dir, "/", e->d_name, "/schedstat").c_str(), "r")) {
        unsigned long long ns = 0;
        if (std::fscanf(f, "%llu", &ns) == 1) total += ns;
        std::fclose(f);
      }
    }
    closedir(d);
  }
  return total;
}

ChannelOptions ClientOptions() {
  ChannelOptions o = bench::ClientOptions();
  o.progress_thread = FLAGS_progress_thread;
  if (FLAGS_slots > 0) o.slots_per_connection = FLAGS_slots;
  return o;
}

struct LoadResult {
  double calls_per_s = 0;
  double p50_us = 0, p99_us = 0;
  uint64_t failed = 0;
};

// A load's result from its latencies in microseconds (sorted here).
LoadResult Summarize(std::vector<double>* lat_us, double calls_per_s,
                     uint64_t failed) {
  std::sort(lat_us->begin(), lat_us->end());
  LoadResult r;
  r.calls_per_s = calls_per_s;
  r.p50_us = bench::Quantile(*lat_us, 0.5);
  r.p99_us = bench::Quantile(*lat_us, 0.99);
  r.failed = failed;
  return r;
}

// Sync Pings from `threads` threads for FLAGS_seconds; thread t calls the
// channels t, t + threads, ... (of `channels`) in turn.
LoadResult RunLoad(const std::vector<std::unique_ptr<ping::Ping::Stub>>& stubs,
                   size_t channels, int threads) {
  const bench::TickClock& ticks = bench::ProcessTicks();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> failed{0};
  std::vector<std::vector<double>> lat(threads);
  std::vector<uint64_t> calls(threads, 0);
  std::vector<std::thread> ts;
  const absl::Time start = absl::Now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      if (FLAGS_pin) bench::PinSelf(1);
      ping::Empty req, resp;
      lat[t].reserve(1 << 20);
      size_t i = static_cast<size_t>(t) % channels;
      while (!stop.load(std::memory_order_relaxed)) {
        const uint64_t t0 = ticks.Now();
        absl::Status s = stubs[i]->Ping(nullptr, req, &resp);
        const uint64_t t1 = ticks.Now();
        if (!s.ok()) {
          if (failed.fetch_add(1) < 3) {
            std::fprintf(stderr, "scale_bench: call on channel %zu: %s\n", i,
                         s.ToString().c_str());
          }
        } else if (lat[t].size() < (1u << 22)) {
          lat[t].push_back(ticks.NsBetween(t0, t1) / 1000.0);
        }
        ++calls[t];
        i += static_cast<size_t>(threads);
        if (i >= channels) i = static_cast<size_t>(t) % channels;
      }
    });
  }
  absl::SleepFor(absl::Seconds(FLAGS_seconds));
  stop = true;
  for (auto& th : ts) th.join();
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  std::vector<double> all;
  uint64_t total = 0;
  for (int t = 0; t < threads; ++t) {
    all.insert(all.end(), lat[t].begin(), lat[t].end());
    total += calls[t];
  }
  return Summarize(&all, total / secs, failed.load());
}

// Async Pings from one thread for FLAGS_seconds, round robin over
// `channels`, --async_window of them in flight at once: each callback
// records its call's latency and frees its place in the window. Where the
// callbacks run (the process's progress thread, or this thread's Poll() of
// each channel with --progress_thread=false) is the channels' option.
LoadResult RunAsync(const std::vector<std::unique_ptr<Channel>>& chans,
                    const std::vector<std::unique_ptr<ping::Ping::Stub>>& stubs,
                    size_t channels) {
  const bench::TickClock& ticks = bench::ProcessTicks();
  if (FLAGS_pin) bench::PinSelf(1);
  struct Slot {
    ping::Empty req, resp;
    uint64_t t0 = 0;
    std::atomic<bool> busy{false};
  };
  std::vector<Slot> window(static_cast<size_t>(FLAGS_async_window));
  std::mutex mu;
  std::vector<double> lat;
  lat.reserve(1 << 20);
  std::atomic<uint64_t> calls{0}, failed{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(FLAGS_seconds);
  // Advances the calls in flight: Poll() of every channel without a
  // progress thread; with one, a yield if this thread has nothing to do.
  auto help = [&](bool stalled) {
    if (!FLAGS_progress_thread) {
      for (size_t k = 0; k < channels; ++k) chans[k]->Poll();
    } else if (stalled) {
      std::this_thread::yield();
    }
  };
  size_t i = 0;
  while (absl::Now() < end) {
    bool any = false;
    for (Slot& w : window) {
      if (w.busy.load(std::memory_order_acquire)) continue;
      any = true;
      w.busy.store(true, std::memory_order_relaxed);
      w.t0 = ticks.Now();
      stubs[i]->PingAsync(nullptr, w.req, &w.resp, [&, sp = &w](absl::Status s) {
        const double us = ticks.NsBetween(sp->t0, ticks.Now()) / 1000.0;
        if (!s.ok()) {
          if (failed.fetch_add(1) < 3) {
            std::fprintf(stderr, "scale_bench: async call: %s\n",
                         s.ToString().c_str());
          }
        } else {
          std::lock_guard<std::mutex> l(mu);
          if (lat.size() < (1u << 22)) lat.push_back(us);
        }
        calls.fetch_add(1, std::memory_order_relaxed);
        sp->busy.store(false, std::memory_order_release);
      });
      if (++i >= channels) i = 0;
    }
    help(/*stalled=*/!any);
  }
  // Drain: every call in the window finishes before the slots go.
  for (;;) {
    bool busy = false;
    for (Slot& w : window) busy |= w.busy.load(std::memory_order_acquire);
    if (!busy) break;
    help(/*stalled=*/true);
  }
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  std::lock_guard<std::mutex> l(mu);
  return Summarize(&lat, calls.load() / secs, failed.load());
}

// The paired phase: both sides' calls/s and latencies over the counted
// part of their blocks, and the per-block-pair ratios (round robin over
// the block's calls/s against the reference's in the block after it).
struct PairedResult {
  LoadResult rr, ref;
  double ratio_median = 0, ratio_min = 0, ratio_max = 0;
  int pairs = 0;
};

// Sync Pings for about 2 * FLAGS_seconds from the calling thread (pinned to
// the client CPU with --pin): round robin over `channels` of the server
// under test, then `ref` alone, in blocks of --block_ms.
PairedResult RunPaired(
    const std::vector<std::unique_ptr<ping::Ping::Stub>>& stubs,
    size_t channels, ping::Ping::Stub* ref) {
  const bench::TickClock& ticks = bench::ProcessTicks();
  if (FLAGS_pin) bench::PinSelf(1);
  const uint64_t block_ns = uint64_t{1000000} * FLAGS_block_ms;
  const uint64_t skip_ns = 2000000;
  struct Side {
    std::vector<double> lat;
    uint64_t calls = 0, ns = 0, failed = 0;
  } rr, rf;
  rr.lat.reserve(1 << 20);
  rf.lat.reserve(1 << 20);
  std::vector<double> ratios;
  ping::Empty req, resp;
  size_t i = 0;
  // One block on `side`: returns its counted calls per second.
  auto block = [&](Side* side, bool round_robin) {
    const uint64_t b0 = ticks.Now();
    uint64_t counted = 0, c0 = 0;
    bool counting = false;
    uint64_t now = b0;
    while (ticks.NsBetween(b0, now) < block_ns) {
      ping::Ping::Stub* stub = round_robin ? stubs[i].get() : ref;
      const uint64_t t0 = now;
      absl::Status st = stub->Ping(nullptr, req, &resp);
      now = ticks.Now();
      if (round_robin && ++i >= channels) i = 0;
      if (!counting && ticks.NsBetween(b0, t0) >= skip_ns) {
        counting = true;
        c0 = t0;
      }
      if (!counting) continue;
      if (!st.ok()) {
        if (side->failed++ < 3) {
          std::fprintf(stderr, "scale_bench: paired call: %s\n",
                       st.ToString().c_str());
        }
      } else if (side->lat.size() < (1u << 22)) {
        side->lat.push_back(ticks.NsBetween(t0, now) / 1000.0);
      }
      ++counted;
    }
    const uint64_t ns = counting ? ticks.NsBetween(c0, now) : 0;
    side->calls += counted;
    side->ns += ns;
    return ns > 0 ? counted * 1e9 / ns : 0.0;
  };
  const absl::Time end = absl::Now() + absl::Seconds(2 * FLAGS_seconds);
  while (absl::Now() < end) {
    const double a = block(&rr, /*round_robin=*/true);
    const double b = block(&rf, /*round_robin=*/false);
    if (a > 0 && b > 0) ratios.push_back(a / b);
  }
  auto result = [](Side* side) {
    return Summarize(&side->lat,
                     side->ns > 0 ? side->calls * 1e9 / side->ns : 0,
                     side->failed);
  };
  PairedResult p;
  p.rr = result(&rr);
  p.ref = result(&rf);
  p.pairs = static_cast<int>(ratios.size());
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    p.ratio_median = bench::Quantile(ratios, 0.5);
    p.ratio_min = ratios.front();
    p.ratio_max = ratios.back();
  }
  return p;
}

struct Point {
  int m = 0;
  double connects_per_s = 0;
  double server_fds_per_conn = 0, client_fds_per_conn = 0;
  double server_maps_per_conn = 0, client_maps_per_conn = 0;
  double server_rss_kib_per_conn = 0;
  double idle_core_share = 0;  // Per worker.
  double client_idle_core_share = 0;  // The whole client process.
  double first_call_us = 0;
  // --pin: the median of 21 calls, each after a 5 ms pause (the worker
  // parks after 1 ms), from a thread on the worker's CPU (the kernel often
  // runs a woken thread on its waker's CPU) and from one on the client's.
  double slow_caller_same_cpu_us = 0;
  double slow_caller_other_cpu_us = 0;
  double floor_us = 0;  // --floor: a bare futex wake after as long idle.
  double first_pass_us = 0;  // Mean first call of a new connection.

  LoadResult one, rr, shared, async;
  PairedResult paired;
};

// Flags that cannot make a run, each with its reason; OK otherwise.
absl::Status CheckFlags() {
  for (int m : bench::ParseInts("--ms", FLAGS_ms)) {
    if (m < 1 || m > 1000000) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ms: ", m, " connections is outside [1, 1000000]"));
    }
  }
  if (bench::ParseInts("--ms", FLAGS_ms).empty()) {
    return absl::InvalidArgumentError("--ms: no connection count");
  }
  if (bench::ParseList(FLAGS_phases).empty()) {
    return absl::InvalidArgumentError(
        "--phases is empty: nothing to run (one, rr, shared, paired, async)");
  }
  for (const std::string& phase : bench::ParseList(FLAGS_phases)) {
    if (phase != "one" && phase != "rr" && phase != "shared" &&
        phase != "paired" && phase != "async") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--phases: unknown phase \"", phase,
          "\" (one, rr, shared, paired, async)"));
    }
  }
  if (FLAGS_block_ms < 5 || FLAGS_block_ms > 10000) {
    return absl::InvalidArgumentError(
        "--block_ms must be in [5, 10000] (the first 2 ms of a block are "
        "not counted)");
  }
  if (FLAGS_threads < 1) {
    return absl::InvalidArgumentError("--threads must be >= 1");
  }
  if (FLAGS_async_window < 1 || FLAGS_async_window > 4096) {
    return absl::InvalidArgumentError("--async_window must be in [1, 4096]");
  }
  if (!(FLAGS_seconds > 0 && FLAGS_seconds <= bench::kMaxSeconds) ||
      !(FLAGS_idle_seconds > 0 && FLAGS_idle_seconds <= bench::kMaxSeconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seconds and --idle_seconds must be in (0, ",
                     bench::kMaxSeconds, "] seconds"));
  }
  if (FLAGS_cycles < 0 || FLAGS_kills < 0 || FLAGS_slots < 0 ||
      FLAGS_max_connections < 0 || FLAGS_rt_priority < 0) {
    return absl::InvalidArgumentError(
        "--cycles, --kills, --slots, --max_connections and --rt_priority "
        "must be >= 0 (0: none, or the library default)");
  }
  if (FLAGS_hot_window_us < -1) {
    return absl::InvalidArgumentError(
        "--hot_window_us must be >= 0 (-1: the library default)");
  }
  return absl::OkStatus();
}

int ClientMain() {
  bench::OkOrExit(CheckFlags(), "flags");
  // The server child's flags, checked here: its own error would only say
  // that the server did not start.
  bench::FlagCheck check;
  check.ServerField("--workers", FLAGS_workers, &ServerOptions::workers);
  if (FLAGS_max_connections > 0) {  // 0: the library default.
    check.ServerField("--max_connections", FLAGS_max_connections,
                      &ServerOptions::max_connections);
  }
  check.OrExit();
  ClientOptions();  // The --rfrpc_* channel flags, before the child starts.
  const long fd_limit = RaiseFdLimit();
  if (FLAGS_rt_priority > 0) {
    // Inherited by the threads started later and by the server child.
    sched_param sp{};
    sp.sched_priority = FLAGS_rt_priority;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
      std::fprintf(stderr, "scale_bench: SCHED_FIFO %d: %s\n", FLAGS_rt_priority,
                   std::strerror(errno));
      return 2;
    }
  }
  ServerProcess server;
  if (!server.Start(FLAGS_address)) {
    std::fprintf(stderr, "scale_bench: the server did not start\n");
    return 1;
  }
  const int spid = server.pid();
  // The paired phase's reference: a second server with one channel, started
  // before the descriptors and maps are counted (they are the same for
  // every M).
  ServerProcess ref_server;
  std::unique_ptr<Channel> ref_channel;
  std::unique_ptr<ping::Ping::Stub> ref_stub;
  // ",one,rr,...": a phase is run if ",name," is in it.
  const std::string phases = "," + FLAGS_phases + ",";
  if (absl::StrContains(phases, ",paired,")) {
    // Beside a given shm path; ip:0 (verbs) takes another port.
    const std::string ref_address =
        FLAGS_address.empty() || absl::StrContains(FLAGS_address, ':')
            ? FLAGS_address
            : FLAGS_address + ".ref";
    if (!ref_server.Start(ref_address)) {
      std::fprintf(stderr, "scale_bench: the reference server did not start\n");
      return 1;
    }
    auto ch = Channel::Create(ref_server.address(), ClientOptions());
    if (!ch.ok()) {
      std::fprintf(stderr, "scale_bench: reference channel: %s\n",
                   ch.status().ToString().c_str());
      return 1;
    }
    ref_channel = std::move(*ch);
    ref_stub = std::make_unique<ping::Ping::Stub>(ref_channel.get());
  }
  const std::string self = std::to_string(getpid());
  const int server_fds0 = CountFds(std::to_string(spid));
  const std::vector<std::string> server_fd_targets0 =
      FdTargets(std::to_string(spid));
  const long server_rss0 = RssKib(spid);
  const int client_fds0 = CountFds(self);
  const int server_maps0 = CountMaps(std::to_string(spid));
  const int client_maps0 = CountMaps(self);
  std::printf("# scale_bench provider=%s workers=%d threads=%d seconds=%.1f "
              "fd_limit=%ld max_map_count=%ld rt_priority=%d load=%.2f "
              "(same-host figures on shm)\n",
              FLAGS_provider.c_str(), FLAGS_workers, FLAGS_threads,
              FLAGS_seconds, fd_limit, MaxMapCount(), FLAGS_rt_priority,
              bench::LoadAverage1());
  if (FLAGS_csv) {
    std::printf("m,connects_per_s,server_fds_per_conn,client_fds_per_conn,"
                "server_rss_kib_per_conn,idle_core_share,first_call_us,"
                "floor_us,one_calls_per_s,one_p50_us,one_p99_us,rr_calls_per_s,rr_p50_us,"
                "shared_calls_per_s,shared_p50_us,failed,loadavg,"
                "server_maps_per_conn,client_maps_per_conn,"
                "paired_rr_calls_per_s,paired_ref_calls_per_s,"
                "paired_ratio_median,paired_ratio_min,paired_ratio_max,"
                "paired_blocks,first_pass_us,slow_caller_same_cpu_us,"
                "slow_caller_other_cpu_us,async_calls_per_s,async_p50_us,"
                "async_p99_us,client_idle_core_share\n");
  }
  std::fflush(stdout);

  std::vector<std::unique_ptr<Channel>> channels;
  std::vector<std::unique_ptr<ping::Ping::Stub>> stubs;
  std::vector<Point> points;
  bool short_of_channels = false;  // The exit status says so.
  for (int m : bench::ParseInts("--ms", FLAGS_ms)) {
    Point p;
    p.m = m;
    const absl::Time c0 = absl::Now();
    const size_t before = channels.size();
    while (channels.size() < static_cast<size_t>(m)) {
      auto ch = Channel::Create(server.address(), ClientOptions());
      if (!ch.ok()) {
        std::fprintf(stderr, "scale_bench: channel %zu: %s\n", channels.size(),
                     ch.status().ToString().c_str());
        short_of_channels = true;
        break;
      }
      stubs.push_back(std::make_unique<ping::Ping::Stub>(ch->get()));
      channels.push_back(std::move(*ch));
    }
    if (channels.size() < static_cast<size_t>(m)) break;
    const double csecs = absl::ToDoubleSeconds(absl::Now() - c0);
    p.connects_per_s = channels.size() > before && csecs > 0
                           ? (channels.size() - before) / csecs
                           : 0;
    // Let the server adopt them all: one call on the last channel.
    ping::Empty req, resp;
    (void)stubs.back()->Ping(nullptr, req, &resp);
    p.server_fds_per_conn =
        static_cast<double>(CountFds(std::to_string(spid)) - server_fds0) / m;
    p.client_fds_per_conn = static_cast<double>(CountFds(self) - client_fds0) / m;
    p.server_maps_per_conn =
        static_cast<double>(CountMaps(std::to_string(spid)) - server_maps0) / m;
    p.client_maps_per_conn =
        static_cast<double>(CountMaps(self) - client_maps0) / m;
    // Idle: nobody calls.
    absl::SleepFor(absl::Milliseconds(50));
    const uint64_t cpu0 = CpuNs(spid);
    const uint64_t client_cpu0 = CpuNs(getpid());
    const absl::Time i0 = absl::Now();
    absl::SleepFor(absl::Seconds(FLAGS_idle_seconds));
    const double idle_ns = absl::ToDoubleNanoseconds(absl::Now() - i0);
    p.idle_core_share =
        static_cast<double>(CpuNs(spid) - cpu0) / idle_ns / FLAGS_workers;
    // The client's too: its channels (those of earlier M's async phase have
    // made async calls) should cost nothing while nobody calls.
    p.client_idle_core_share =
        static_cast<double>(CpuNs(getpid()) - client_cpu0) / idle_ns;
    {
      // From this thread, unpinned, as a user's first call would be.
      const bench::TickClock& ticks = bench::ProcessTicks();
      const uint64_t t0 = ticks.Now();
      absl::Status s = stubs[0]->Ping(nullptr, req, &resp);
      p.first_call_us = ticks.NsBetween(t0, ticks.Now()) / 1000.0;
      if (!s.ok()) std::fprintf(stderr, "first call: %s\n", s.ToString().c_str());
    }
    if (FLAGS_floor) {
      p.floor_us = WakeFloorUs(FLAGS_pin ? 0 : -1,
                               absl::Seconds(FLAGS_idle_seconds));
    }
    if (FLAGS_pin) {
      p.slow_caller_same_cpu_us = SlowCallerP50Us(stubs[0].get(), 0);
      p.slow_caller_other_cpu_us = SlowCallerP50Us(stubs[0].get(), 1);
    }
    p.server_rss_kib_per_conn =
        static_cast<double>(RssKib(spid) - server_rss0) / m;
    {
      // The first call of each channel opened for this M (the first and
      // the last have had theirs), from the load phases' CPU: without it
      // round robin's first seconds were these calls (at M = 4 096, 83 K
      // calls/s and p99 109 us over 0.5 s against 274 K and 30 us over 2 s).
      const bench::TickClock& ticks = bench::ProcessTicks();
      std::thread t([&] {
        if (FLAGS_pin) bench::PinSelf(1);
        size_t n = 0;
        const uint64_t t0 = ticks.Now();
        for (size_t i = std::max<size_t>(before, 1); i + 1 < stubs.size(); ++i) {
          (void)stubs[i]->Ping(nullptr, req, &resp);
          ++n;
        }
        if (n > 0) p.first_pass_us = ticks.NsBetween(t0, ticks.Now()) / 1000.0 / n;
      });
      t.join();
    }
    if (phases.find(",one,") != std::string::npos) p.one = RunLoad(stubs, 1, 1);
    if (phases.find(",rr,") != std::string::npos) {
      p.rr = RunLoad(stubs, channels.size(), 1);
    }
    if (phases.find(",shared,") != std::string::npos) {
      p.shared = RunLoad(stubs, channels.size(), FLAGS_threads);
    }
    if (phases.find(",async,") != std::string::npos) {
      // On a thread of its own (pinned with --pin), as RunLoad's.
      std::thread t([&] { p.async = RunAsync(channels, stubs, channels.size()); });
      t.join();
    }
    if (phases.find(",paired,") != std::string::npos) {
      // On a thread of its own, as RunLoad's: it pins itself to the client
      // CPU, and this thread's first call after idle stays unpinned.
      std::thread t([&] {
        p.paired = RunPaired(stubs, channels.size(), ref_stub.get());
      });
      t.join();
    }
    points.push_back(p);
    const uint64_t failed = p.one.failed + p.rr.failed + p.shared.failed +
                            p.paired.rr.failed + p.paired.ref.failed +
                            p.async.failed;
    {
      // How calls found the worker: doorbell rings, re-rings of unanswered
      // calls (a lost doorbell: should stay 0), notifies, hot posts, and
      // RDMA operations per call.
      ChannelStats sum;
      for (const auto& ch : channels) {
        const ChannelStats st = ch->stats();
        sum.calls += st.calls;
        sum.rings += st.rings;
        sum.rerings += st.rerings;
        sum.notifies += st.notifies;
        sum.hot_posts += st.hot_posts;
        sum.rdma_reads += st.rdma_reads;
        sum.rdma_writes += st.rdma_writes;
      }
      std::printf("#   M=%d so far: %llu calls, %.3f RDMA ops/call, rings %llu, "
                  "re-rings %llu, notifies %llu, hot posts %llu\n",
                  m, static_cast<unsigned long long>(sum.calls),
                  sum.RdmaOpsPerCall(), static_cast<unsigned long long>(sum.rings),
                  static_cast<unsigned long long>(sum.rerings),
                  static_cast<unsigned long long>(sum.notifies),
                  static_cast<unsigned long long>(sum.hot_posts));
    }
    if (FLAGS_csv) {
      std::printf("%d,%.0f,%.2f,%.2f,%.1f,%.4f,%.1f,%.1f,%.0f,%.2f,%.2f,%.0f,"
                  "%.2f,%.0f,%.2f,%llu,%.2f,%.2f,%.2f,%.0f,%.0f,%.3f,%.3f,"
                  "%.3f,%d,%.2f,%.1f,%.1f,%.0f,%.2f,%.2f,%.4f\n",
                  m, p.connects_per_s, p.server_fds_per_conn,
                  p.client_fds_per_conn, p.server_rss_kib_per_conn,
                  p.idle_core_share, p.first_call_us, p.floor_us,
                  p.one.calls_per_s, p.one.p50_us, p.one.p99_us, p.rr.calls_per_s, p.rr.p50_us,
                  p.shared.calls_per_s, p.shared.p50_us,
                  static_cast<unsigned long long>(failed), bench::LoadAverage1(),
                  p.server_maps_per_conn, p.client_maps_per_conn,
                  p.paired.rr.calls_per_s, p.paired.ref.calls_per_s,
                  p.paired.ratio_median, p.paired.ratio_min,
                  p.paired.ratio_max, p.paired.pairs, p.first_pass_us,
                  p.slow_caller_same_cpu_us, p.slow_caller_other_cpu_us,
                  p.async.calls_per_s, p.async.p50_us, p.async.p99_us,
                  p.client_idle_core_share);
    } else {
      std::printf(
          "M=%-6d connect %7.0f/s  fds/conn server %.2f client %.2f  maps/conn "
          "server %.2f client %.2f  rss/conn "
          "%7.1f KiB  idle %5.2f%% core (client %.2f%%), first call %7.1f us "
          "(floor %.1f)  "
          "a call every 5 ms: p50 %.1f us on the worker's CPU, %.1f on "
          "another  first pass %.1f us/call\n"
          "         one active %9.0f calls/s p50 %6.2f p99 %8.2f us | round "
          "robin %9.0f calls/s p50 %6.2f p99 %8.2f | %d threads %9.0f calls/s "
          "p50 %6.2f p99 %8.2f  failed %llu load %.2f\n",
          m, p.connects_per_s, p.server_fds_per_conn, p.client_fds_per_conn,
          p.server_maps_per_conn, p.client_maps_per_conn,
          p.server_rss_kib_per_conn, 100 * p.idle_core_share,
          100 * p.client_idle_core_share, p.first_call_us,
          p.floor_us, p.slow_caller_same_cpu_us, p.slow_caller_other_cpu_us,
          p.first_pass_us,
          p.one.calls_per_s, p.one.p50_us, p.one.p99_us, p.rr.calls_per_s,
          p.rr.p50_us, p.rr.p99_us, FLAGS_threads, p.shared.calls_per_s,
          p.shared.p50_us, p.shared.p99_us,
          static_cast<unsigned long long>(failed), bench::LoadAverage1());
      if (p.paired.pairs > 0) {
        std::printf(
            "         paired: round robin %9.0f calls/s p50 %6.2f | one "
            "connection to a second server %9.0f calls/s p50 %6.2f | ratio "
            "median %.2f (%d block pairs of %d ms, min %.2f max %.2f)\n",
            p.paired.rr.calls_per_s, p.paired.rr.p50_us,
            p.paired.ref.calls_per_s, p.paired.ref.p50_us,
            p.paired.ratio_median, p.paired.pairs, FLAGS_block_ms,
            p.paired.ratio_min, p.paired.ratio_max);
      }
      if (p.async.calls_per_s > 0) {
        std::printf(
            "         async round robin, %d in flight from one thread "
            "(progress_thread=%d): %9.0f calls/s p50 %6.2f p99 %8.2f us\n",
            FLAGS_async_window, FLAGS_progress_thread ? 1 : 0,
            p.async.calls_per_s, p.async.p50_us, p.async.p99_us);
      }
    }
    std::fflush(stdout);
  }
  if (!points.empty()) {
    const Point& base = points.front();
    std::printf("# ratios vs M=%d (targets: one-active p50 <= 1.5x; round robin "
                ">= 0.70; idle <= 2%% core/worker; first call <= 50 us)\n",
                base.m);
    // "-" for a phase not run (--phases).
    auto ratio = [](double a, double b) {
      return b > 0 && a > 0 ? absl::StrFormat("%5.2f", a / b)
                            : std::string("    -");
    };
    for (const Point& p : points) {
      std::printf(
          "#   M=%-6d one-active p50 %sx  round robin %s  "
          "idle %5.2f%%  first call %6.1f us (platform floor %.1f)\n",
          p.m, ratio(p.one.p50_us, base.one.p50_us).c_str(),
          ratio(p.rr.calls_per_s, base.rr.calls_per_s).c_str(),
          100 * p.idle_core_share, p.first_call_us, p.floor_us);
      if (p.paired.pairs > 0) {
        std::printf(
            "#   M=%-6d paired round robin against one connection, same "
            "run: median %.2f (min %.2f, max %.2f over %d block pairs; "
            "target >= 0.70)\n",
            p.m, p.paired.ratio_median, p.paired.ratio_min,
            p.paired.ratio_max, p.paired.pairs);
      }
    }
    // The shared-connections target compares M = 8 (one per thread) with
    // the largest M.
    for (const Point& p : points) {
      if (p.m == FLAGS_threads && p.shared.calls_per_s > 0) {
        std::printf("#   %d threads: M=%d %.0f calls/s vs M=%d %.0f: %.2f "
                    "(target >= 0.80 at M=4096)\n",
                    FLAGS_threads, points.back().m,
                    points.back().shared.calls_per_s, p.m,
                    p.shared.calls_per_s,
                    points.back().shared.calls_per_s / p.shared.calls_per_s);
      }
    }
  }
  stubs.clear();
  channels.clear();
  // An idle server closes a gone client's side when its parked worker
  // wakes (at most a second later, docs/rpc.md "Work discovery"): wait for
  // the descriptors to come back, and say how long that took.
  auto settle = [&]() {
    const absl::Time t0 = absl::Now();
    while (CountFds(std::to_string(spid)) > server_fds0 &&
           absl::Now() - t0 < absl::Seconds(5)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    return absl::ToDoubleMilliseconds(absl::Now() - t0);
  };
  // Names the descriptors the server holds beyond those it started with,
  // when it did not give them all back.
  auto name_extra_fds = [&]() {
    const std::vector<std::string> now = FdTargets(std::to_string(spid));
    if (now.size() <= server_fd_targets0.size()) return;
    std::vector<std::string> extra;
    std::set_difference(now.begin(), now.end(), server_fd_targets0.begin(),
                        server_fd_targets0.end(), std::back_inserter(extra));
    std::printf("# server descriptors beyond the start: %s\n",
                absl::StrJoin(extra, ", ").c_str());
  };
  double settled_ms = settle();
  std::printf("# after closing every channel: server fds %d (start %d, "
              "settled in %.0f ms), rss %ld KiB (start %ld)\n",
              CountFds(std::to_string(spid)), server_fds0, settled_ms,
              RssKib(spid), server_rss0);
  name_extra_fds();

  if (FLAGS_cycles > 0) {
    const absl::Time t0 = absl::Now();
    int failures = 0;
    for (int i = 0; i < FLAGS_cycles; ++i) {
      auto ch = Channel::Create(server.address(), ClientOptions());
      if (!ch.ok()) {
        if (++failures <= 3) {
          std::fprintf(stderr, "cycle %d: %s\n", i, ch.status().ToString().c_str());
        }
        continue;
      }
      ping::Ping::Stub stub(ch->get());
      ping::Empty req, resp;
      if (!stub.Ping(nullptr, req, &resp).ok()) ++failures;
    }
    const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
    settled_ms = settle();
    std::printf("# %d connect/call/close cycles: %.0f cycles/s, %d failed; "
                "server fds %d (start %d, settled in %.0f ms), rss %ld KiB "
                "(start %ld)\n",
                FLAGS_cycles, FLAGS_cycles / secs, failures,
                CountFds(std::to_string(spid)), server_fds0, settled_ms,
                RssKib(spid), server_rss0);
    name_extra_fds();
  }
  if (FLAGS_kills > 0) {
    const absl::Time t0 = absl::Now();
    int done = 0;
    for (int i = 0; i < FLAGS_kills; ++i) {
      int ready[2];
      if (pipe(ready) != 0) break;
      const pid_t pid = fork();
      if (pid == 0) {
        close(ready[0]);
        auto ch = Channel::Create(server.address(), ClientOptions());
        char ok = ch.ok() ? 1 : 0;
        if (ch.ok()) {
          ping::Ping::Stub stub(ch->get());
          ping::Empty req, resp;
          ok = stub.Ping(nullptr, req, &resp).ok() ? 1 : 0;
        }
        (void)!write(ready[1], &ok, 1);
        pause();
        _exit(0);
      }
      close(ready[1]);
      char ok = 0;
      (void)!read(ready[0], &ok, 1);
      close(ready[0]);
      kill(pid, SIGKILL);
      int status;
      waitpid(pid, &status, 0);
      done += ok;
    }
    const double secs = absl::ToDoubleSeconds(absl::Now() - t0);
    settled_ms = settle();
    std::printf("# %d SIGKILLed clients (%d connected and called): %.0f/s; "
                "server fds %d (start %d, settled in %.0f ms), rss %ld KiB "
                "(start %ld)\n",
                FLAGS_kills, done, FLAGS_kills / secs,
                CountFds(std::to_string(spid)), server_fds0, settled_ms,
                RssKib(spid), server_rss0);
    name_extra_fds();
  }
  std::fflush(stdout);
  return short_of_channels ? 2 : 0;
}

}  // namespace
}  // namespace rfrpc

int main(int argc, char** argv) {
  rfrpc::bench::Init(&argc, &argv);
  rfrpc::bench::RejectFlagsItSets({
      {"rfrpc_progress_thread", "use --progress_thread"},
  });
  if (FLAGS_role == "server") return rfrpc::ServerMain();
  if (FLAGS_role != "client") {
    rfrpc::bench::Exit(
        "flags", absl::InvalidArgumentError(absl::StrCat(
                     "--role=", FLAGS_role, ": must be client or server")));
  }
  return rfrpc::ClientMain();
}
