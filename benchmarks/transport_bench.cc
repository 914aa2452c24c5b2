// Copyright 2026 The rfrpc Authors.
//
// Transport micro-benchmarks, perftest style, on one provider:
//
//   1. WRITE and READ latency (p50/p99, one signaled request at a time,
//      busy-polled) and ops/s (unsignaled, every 32nd signaled) per size.
//   2. 8 B WRITE-then-poll round trip between two pinned threads through the
//      provider, next to a bare cache-line ping-pong between two processes
//      (and two threads) on a shared mmap, measured in the same run.
//   3. The RF-RPC paper's Fig. 1 method: a server issuing WRITEs to many
//      clients (out-bound) vs clients READing the server (in-bound), ops/s.
//
// With --provider=shm every figure is same-host: the initiating CPU copies
// through shared memory; no NIC is involved. Threads are pinned to distinct
// cores where measured; every spin is bounded.
//
// --sections picks the parts (lat,rtt,fig1); --lat_csv, --rtt_csv and
// --fig1_csv also write their rows as CSV files; --listen sets the
// listener's address (verbs inside the Soft-RoCE VM: 10.11.0.1:0).

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/cpu_relax.h"
#include "benchmarks/bench_util.h"
#include "benchmarks/harness.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "transport/transport.h"

DEFINE_int32(iters, 100000, "operations per measurement");
DEFINE_string(sizes, "8,64,512,4096,8192", "payload sizes in bytes");
DEFINE_int32(clients, 8, "client connections for the Fig. 1 comparison");
DEFINE_string(listen, "",
              "listener address (shm: socket path, \"\" picks one; verbs: "
              "host:port, e.g. 10.11.0.1:0 in the Soft-RoCE VM)");
DEFINE_string(sections, "lat,rtt,fig1", "parts to run: lat, rtt, fig1");
DEFINE_bool(rtt_per_op, false,
            "rtt: also time every provider round trip (one RDTSC each) and "
            "print their median, the statistic perftest's t_typical reports");
DEFINE_string(lat_csv, "", "also write WRITE/READ latency and ops/s rows here");
DEFINE_string(rtt_csv, "", "also write the round-trip rows here");
DEFINE_string(fig1_csv, "", "also write the Fig. 1 rows here");

namespace rfrpc {
namespace transport {
namespace {

using bench::LoadAverage1;
using bench::TickClock;
using Clock = std::chrono::steady_clock;

// A CSV file named by a flag, or nothing when the flag is empty.
class CsvOut {
 public:
  CsvOut(const std::string& path, const char* header) {
    if (path.empty()) return;
    f_ = std::fopen(path.c_str(), "w");
    if (f_ == nullptr) {
      bench::Exit("csv", absl::Status(absl::ErrnoToStatusCode(errno),
                                      absl::StrCat("cannot write ", path, ": ",
                                                   std::strerror(errno))));
    }
    std::fprintf(f_, "%s\n", header);
  }
  ~CsvOut() {
    if (f_ != nullptr) std::fclose(f_);
  }
  FILE* get() const { return f_; }

 private:
  FILE* f_ = nullptr;
};

double NsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

// Spins until pred(); gives up (returns false) after about `limit_s`
// seconds. The clock is first read after 4096 spins, not on entry: a round
// trip spins far less than that, so the loops measured below pay no clock
// read per leg (one used to cost as much as the cache-line transfer).
template <typename Pred>
bool BoundedSpin(Pred pred, double limit_s = 10) {
  Clock::time_point t0;
  for (uint64_t i = 1;; ++i) {
    if (pred()) return true;
    CpuRelax();
    if ((i & 0xfff) == 0) {
      if (i == 0x1000) {
        t0 = Clock::now();
      } else if (NsSince(t0) > limit_s * 1e9) {
        return false;
      }
    }
  }
}

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}

void Check(const absl::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

template <typename T>
T Take(absl::StatusOr<T> v, const char* what) {
  Check(v.status(), what);
  return std::move(*v);
}

struct Pair {
  std::unique_ptr<Connection> client;
  std::unique_ptr<Connection> server;
};

Pair ConnectPair(Provider* p, Listener* l, const ConnectionSetup& cs,
                 const ConnectionSetup& ss) {
  absl::StatusOr<std::unique_ptr<Connection>> client =
      absl::UnknownError("not run");
  std::thread t([&] { client = p->Connect(l->address(), cs); });
  auto inc = Take(l->Next(absl::Seconds(10)), "listener");
  auto server = Take(inc->Accept(ss), "accept");
  t.join();
  return Pair{Take(std::move(client), "connect"), std::move(server)};
}

// Polls until `n` completions arrived; exits on error.
void Drain(CompletionQueue* cq, int n) {
  Completion cs[32];
  while (n > 0) {
    auto got = cq->Wait(absl::MakeSpan(cs), absl::Seconds(10));
    Check(got.status(), "completion");
    for (int i = 0; i < *got; ++i) Check(cs[i].ToStatus(), "completion status");
    n -= *got;
  }
}

double Percentile(std::vector<double>* v, double q) {
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(q * v->size()));
  std::nth_element(v->begin(), v->begin() + k, v->end());
  return (*v)[k];
}

struct Setup {
  std::unique_ptr<Provider> provider;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<CompletionQueue> client_cq, server_cq;
  std::unique_ptr<MemoryRegion> client_mem, server_mem;
  Pair pair;
};

constexpr size_t kRegionBytes = 1 << 20;

void Open(Setup* s) {
  s->provider = Take(Provider::Open(FLAGS_provider, {}), "open provider");
  s->listener = Take(s->provider->Listen(FLAGS_listen), "listen");
  CompletionQueueOptions busy;
  busy.poll_mode = PollMode::kBusy;
  s->client_cq = Take(s->provider->CreateCompletionQueue(busy), "cq");
  s->server_cq = Take(s->provider->CreateCompletionQueue(busy), "cq");
  s->client_mem = Take(s->provider->AllocateMemory(kRegionBytes), "memory");
  s->server_mem = Take(s->provider->AllocateMemory(kRegionBytes), "memory");
  ConnectionSetup cs;
  cs.cq = s->client_cq.get();
  cs.exposed.push_back(ExposedRegion{s->client_mem.get()});
  ConnectionSetup ss;
  ss.cq = s->server_cq.get();
  ss.exposed.push_back(ExposedRegion{s->server_mem.get()});
  s->pair = ConnectPair(s->provider.get(), s->listener.get(), cs, ss);
}

// 1. perftest-like latency and ops/s.
void LatencyAndRate(Setup* s, const std::vector<uint32_t>& sizes) {
  const std::string name = s->provider->name();
  std::printf(
      "\n== [%s] WRITE/READ latency and ops/s (one connection, one thread; "
      "%s)\n",
      name.c_str(),
      name == "shm" ? "same-host shm figures: CPU copies, no NIC"
                    : "RDMA NIC");
  const TickClock ticks;
  std::printf("(per-op latency timed with %s)\n", ticks.source());
  std::printf("%-9s %-6s %8s %8s %8s %12s %10s\n", "provider", "op",
              "bytes", "p50 ns", "p99 ns", "ops/s", "MB/s");
  CsvOut csv(FLAGS_lat_csv,
             "provider,op,bytes,p50_ns,p99_ns,ops_per_s,mb_per_s,loadavg");
  Connection* c = s->pair.client.get();
  const RemoteRegion remote = c->peer().regions[0];
  for (Opcode op : {Opcode::kWrite, Opcode::kRead}) {
    for (uint32_t size : sizes) {
      std::vector<double> lat;
      lat.reserve(static_cast<size_t>(FLAGS_iters));
      for (int i = 0; i < FLAGS_iters; ++i) {
        WorkRequest wr =
            op == Opcode::kWrite
                ? WorkRequest::Write(i, s->client_mem.get(), 0, size, remote,
                                     (i % 64) * 8192)
                : WorkRequest::Read(i, s->client_mem.get(), 0, size, remote,
                                    (i % 64) * 8192);
        const uint64_t t0 = ticks.Now();
        Check(c->Post({&wr, 1}), "post");
        Completion done;
        while (s->client_cq->Poll({&done, 1}) == 0) CpuRelax();
        lat.push_back(ticks.NsBetween(t0, ticks.Now()));
        Check(done.ToStatus(), "completion");
      }
      // Throughput: unsignaled, every 32nd signaled.
      const auto t0 = Clock::now();
      int signaled = 0;
      for (int i = 0; i < FLAGS_iters; ++i) {
        WorkRequest wr =
            op == Opcode::kWrite
                ? WorkRequest::Write(i, s->client_mem.get(), 0, size, remote,
                                     (i % 64) * 8192)
                : WorkRequest::Read(i, s->client_mem.get(), 0, size, remote,
                                    (i % 64) * 8192);
        wr.signaled = (i % 32) == 31 || i == FLAGS_iters - 1;
        Check(c->Post({&wr, 1}), "post");
        if (wr.signaled) ++signaled;
        if (signaled >= 64) {
          Drain(s->client_cq.get(), signaled);
          signaled = 0;
        }
      }
      Drain(s->client_cq.get(), signaled);
      const double secs = NsSince(t0) / 1e9;
      const double ops = FLAGS_iters / secs;
      const double p50 = Percentile(&lat, 0.50), p99 = Percentile(&lat, 0.99);
      const char* opname = op == Opcode::kWrite ? "WRITE" : "READ";
      std::printf("%-9s %-6s %8u %8.0f %8.0f %12.0f %10.1f\n", name.c_str(),
                  opname, size, p50, p99, ops, ops * size / 1e6);
      if (csv.get()) {
        std::fprintf(csv.get(), "%s,%s,%u,%.0f,%.0f,%.0f,%.1f,%.2f\n",
                     name.c_str(), opname, size, p50, p99, ops,
                     ops * size / 1e6, LoadAverage1());
      }
    }
  }
}

// 2a. Bare cache-line ping-pong between two processes (or threads) on a
// shared mapping: the floor any same-host transport round trip sits on.
double BarePingPong(const std::vector<int>& cpus, bool processes, int iters) {
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(mem != MAP_FAILED);
  auto* ping = static_cast<std::atomic<uint64_t>*>(mem);
  auto* pong = reinterpret_cast<std::atomic<uint64_t>*>(
      static_cast<char*>(mem) + 128);
  ping->store(0);
  pong->store(0);
  // Captures by value: a by-reference capture makes the responder reload
  // `ping` from the other thread's stack on every spin, a cache line that
  // thread dirties with each call's return address (false sharing that made
  // the two-thread figure 2-4x the two-process one).
  const int responder_cpu = cpus.back();
  auto responder = [ping, pong, iters, responder_cpu] {
    PinTo(responder_cpu);
    for (uint64_t seq = 1; seq <= static_cast<uint64_t>(iters); ++seq) {
      if (!BoundedSpin([&] {
            return ping->load(std::memory_order_acquire) == seq;
          })) {
        return;
      }
      pong->store(seq, std::memory_order_release);
    }
  };
  pid_t child = -1;
  std::thread t;
  if (processes) {
    child = fork();
    CHECK_GE(child, 0);
    if (child == 0) {
      responder();
      _exit(0);
    }
  } else {
    t = std::thread(responder);
  }
  PinTo(cpus.front());
  const auto t0 = Clock::now();
  for (uint64_t seq = 1; seq <= static_cast<uint64_t>(iters); ++seq) {
    ping->store(seq, std::memory_order_release);
    if (!BoundedSpin([&] {
          return pong->load(std::memory_order_acquire) == seq;
        })) {
      std::fprintf(stderr, "bare ping-pong stalled\n");
      break;
    }
  }
  const double rtt = NsSince(t0) / iters;
  if (processes) {
    waitpid(child, nullptr, 0);
  } else {
    t.join();
  }
  munmap(mem, 4096);
  return rtt;
}

// 2b. 8 B WRITE-then-poll round trip through the provider: the client
// WRITEs seq into the server's flag word; the server polls it and WRITEs seq
// back into the client's; the client polls that.
double TransportPingPong(Setup* s, const std::vector<int>& cpus, int iters,
                         const TickClock* ticks, std::vector<double>* per_op) {
  Connection* client = s->pair.client.get();
  Connection* server = s->pair.server.get();
  CompletionQueue* client_cq = s->client_cq.get();
  CompletionQueue* server_cq = s->server_cq.get();
  char* server_flag = s->server_mem->data() + 4096;
  char* client_flag = s->client_mem->data() + 4096;
  StoreRelease64(server_flag, 0);
  StoreRelease64(client_flag, 0);
  auto write8 = [](Connection* c, CompletionQueue* cq, uint64_t seq,
                   uint64_t* pending) {
    WorkRequest wr = WorkRequest::Write(seq, nullptr, 0, 8, c->peer().regions[0],
                                        4096);
    wr.inline_write = true;
    wr.inline_data = &seq;
    wr.signaled = (seq % 64) == 0;  // Keep the send queue drained.
    Check(c->Post({&wr, 1}), "post");
    if (wr.signaled && ++*pending >= 1) {
      Completion done;
      if (cq->Poll({&done, 1}) == 1) {
        Check(done.ToStatus(), "completion");
        --*pending;
      }
    }
  };
  // By-value captures, for the reason given in BarePingPong.
  const int responder_cpu = cpus.back();
  std::thread responder([server, server_cq, server_flag, iters, responder_cpu,
                         write8] {
    PinTo(responder_cpu);
    uint64_t pending = 0;
    for (uint64_t seq = 1; seq <= static_cast<uint64_t>(iters); ++seq) {
      if (!BoundedSpin([&] { return LoadAcquire64(server_flag) == seq; })) {
        return;
      }
      write8(server, server_cq, seq, &pending);
    }
    Drain(server_cq, static_cast<int>(pending));
  });
  PinTo(cpus.front());
  uint64_t pending = 0;
  const auto t0 = Clock::now();
  uint64_t last = per_op != nullptr ? ticks->Now() : 0;
  for (uint64_t seq = 1; seq <= static_cast<uint64_t>(iters); ++seq) {
    if (per_op != nullptr && seq > 1) {
      const uint64_t now = ticks->Now();
      per_op->push_back(ticks->NsBetween(last, now));
      last = now;
    }
    write8(client, client_cq, seq, &pending);
    if (!BoundedSpin([&] { return LoadAcquire64(client_flag) == seq; })) {
      std::fprintf(stderr, "transport ping-pong stalled\n");
      break;
    }
  }
  const double rtt = NsSince(t0) / iters;
  responder.join();
  Drain(client_cq, static_cast<int>(pending));
  return rtt;
}

void RoundTrip(Setup* s) {
  const std::vector<int> cpus = AllowedCpus();
  const std::string name = s->provider->name();
  // Alternate the three measurements over several rounds so that load from
  // other processes hits them alike; report the best and the median round.
  constexpr int kRounds = 5;
  const int iters = std::max(1000, FLAGS_iters / kRounds);
  std::printf(
      "\n== [%s] 8 B WRITE-then-poll round trip vs bare cache-line "
      "ping-pong (%d rounds x %d round trips, cpus %d and %d; same host)\n",
      name.c_str(), kRounds, iters, cpus.front(), cpus.back());
  std::vector<double> bare_proc, bare_thread, via, via_per_op;
  const TickClock ticks;
  for (int r = 0; r < kRounds; ++r) {
    bare_proc.push_back(BarePingPong(cpus, /*processes=*/true, iters));
    bare_thread.push_back(BarePingPong(cpus, /*processes=*/false, iters));
    via.push_back(TransportPingPong(s, cpus, iters, &ticks,
                                    FLAGS_rtt_per_op ? &via_per_op : nullptr));
  }
  auto best = [](std::vector<double> v) {
    return *std::min_element(v.begin(), v.end());
  };
  auto median = [](std::vector<double> v) { return Percentile(&v, 0.5); };
  std::printf("%-9s %-44s %12s %12s\n", "provider", "round trip",
              "best ns/RTT", "median");
  std::printf("%-9s %-44s %12.0f %12.0f\n", "-",
              "bare ping-pong, two processes", best(bare_proc),
              median(bare_proc));
  std::printf("%-9s %-44s %12.0f %12.0f\n", "-", "bare ping-pong, two threads",
              best(bare_thread), median(bare_thread));
  std::printf("%-9s %-44s %12.0f %12.0f\n", name.c_str(),
              "8 B WRITE-then-poll via provider, 2 threads", best(via),
              median(via));
  CsvOut csv(FLAGS_rtt_csv, "provider,what,best_ns,median_ns,loadavg");
  if (csv.get()) {
    const double l = LoadAverage1();
    std::fprintf(csv.get(), "-,bare_two_processes,%.0f,%.0f,%.2f\n",
                 best(bare_proc), median(bare_proc), l);
    std::fprintf(csv.get(), "-,bare_two_threads,%.0f,%.0f,%.2f\n",
                 best(bare_thread), median(bare_thread), l);
    std::fprintf(csv.get(), "%s,write_then_poll_8B,%.0f,%.0f,%.2f\n",
                 name.c_str(), best(via), median(via), l);
    if (!via_per_op.empty()) {
      std::fprintf(csv.get(), "%s,write_then_poll_8B_per_op,%.0f,%.0f,%.2f\n",
                   name.c_str(), Percentile(&via_per_op, 0.0),
                   Percentile(&via_per_op, 0.5), l);
    }
  }
  if (!via_per_op.empty()) {
    std::printf("%-9s %-44s %12.0f %12.0f  (timed per round trip, %s)\n",
                name.c_str(), "8 B WRITE-then-poll, per round trip",
                Percentile(&via_per_op, 0.0), Percentile(&via_per_op, 0.5),
                ticks.source());
  }
  std::printf(
      "%-9s ratio provider / bare two-process ping-pong: best %.2fx, median "
      "%.2fx (target <= 2x)%s\n",
      name.c_str(), best(via) / best(bare_proc),
      median(via) / median(bare_proc),
      cpus.size() < 2 ? "  [only one cpu: spins time-share, figures are "
                        "scheduler-bound]"
                      : "");
}

// 3. Fig. 1 method: out-bound WRITEs by the server to many clients vs
// in-bound READs of the server by the clients.
void Fig1(const std::vector<uint32_t>& sizes) {
  const int n = std::max(2, FLAGS_clients);
  auto provider = Take(Provider::Open(FLAGS_provider, {}), "open provider");
  const std::string name = provider->name();
  auto listener = Take(provider->Listen(FLAGS_listen), "listen");
  CompletionQueueOptions busy;
  busy.poll_mode = PollMode::kBusy;
  auto server_cq = Take(provider->CreateCompletionQueue(busy), "cq");
  auto client_cq_a = Take(provider->CreateCompletionQueue(busy), "cq");
  auto client_cq_b = Take(provider->CreateCompletionQueue(busy), "cq");
  auto server_mem = Take(provider->AllocateMemory(kRegionBytes), "memory");
  std::vector<std::unique_ptr<MemoryRegion>> client_mems;
  std::vector<Pair> pairs;
  for (int i = 0; i < n; ++i) {
    client_mems.push_back(Take(provider->AllocateMemory(64 * 1024), "memory"));
    ConnectionSetup cs;
    cs.cq = (i % 2 == 0 ? client_cq_a : client_cq_b).get();
    cs.exposed.push_back(ExposedRegion{client_mems.back().get()});
    ConnectionSetup ss;
    ss.cq = server_cq.get();
    ss.exposed.push_back(ExposedRegion{server_mem.get()});
    pairs.push_back(ConnectPair(provider.get(), listener.get(), cs, ss));
  }
  const std::vector<int> cpus = AllowedCpus();
  std::printf(
      "\n== [%s] Fig. 1 method: out-bound WRITEs (server -> %d clients) vs "
      "in-bound READs (%d clients -> server), ops/s (%s)\n",
      name.c_str(), n, n,
      name == "shm" ? "same-host shm: both directions are CPU copies, so the "
                      "NIC asymmetry of the paper cannot show"
                    : "RDMA NIC");
  std::printf("%-9s %8s %16s %16s %16s\n", "provider", "bytes",
              "out WRITE 1thr", "in READ 1thr", "in READ 2thr");
  auto run = [&](Opcode op, uint32_t size, int first, int step,
                 CompletionQueue* cq, int cpu, uint64_t ops) {
    PinTo(cpu);
    int signaled = 0;
    for (uint64_t i = 0; i < ops; ++i) {
      const int k = first + static_cast<int>(i % (n / step)) * step;
      Connection* c = op == Opcode::kWrite ? pairs[k].server.get()
                                           : pairs[k].client.get();
      WorkRequest wr =
          op == Opcode::kWrite
              ? WorkRequest::Write(i, server_mem.get(), 0, size,
                                   c->peer().regions[0], 0)
              : WorkRequest::Read(i, client_mems[k].get(), 0, size,
                                  c->peer().regions[0], (k % 64) * 8192);
      wr.signaled = (i % 32) == 31;
      Check(c->Post({&wr, 1}), "post");
      if (wr.signaled && ++signaled >= 64) {
        Drain(cq, signaled);
        signaled = 0;
      }
    }
    Drain(cq, signaled);
  };
  const uint64_t ops = static_cast<uint64_t>(FLAGS_iters);
  CsvOut csv(FLAGS_fig1_csv,
             "provider,bytes,clients,out_write_1thr,in_read_1thr,in_read_2thr,"
             "loadavg");
  for (uint32_t size : sizes) {
    auto t0 = Clock::now();
    run(Opcode::kWrite, size, 0, 1, server_cq.get(), cpus.front(), ops);
    const double out1 = ops / (NsSince(t0) / 1e9);
    // In-bound, one thread: READs over the even clients (one CQ).
    t0 = Clock::now();
    run(Opcode::kRead, size, 0, 2, client_cq_a.get(), cpus.front(), ops);
    const double in1 = ops / (NsSince(t0) / 1e9);
    // In-bound, two pinned threads (even/odd clients).
    t0 = Clock::now();
    std::thread other([&] {
      run(Opcode::kRead, size, 1, 2, client_cq_b.get(), cpus.back(), ops);
    });
    run(Opcode::kRead, size, 0, 2, client_cq_a.get(), cpus.front(), ops);
    other.join();
    const double in2 = 2 * ops / (NsSince(t0) / 1e9);
    std::printf("%-9s %8u %16.0f %16.0f %16.0f\n", name.c_str(), size, out1,
                in1, in2);
    if (csv.get()) {
      std::fprintf(csv.get(), "%s,%u,%d,%.0f,%.0f,%.0f,%.2f\n", name.c_str(),
                   size, n, out1, in1, in2, LoadAverage1());
    }
  }
}

std::vector<uint32_t> ParseSizes() {
  std::vector<uint32_t> sizes;
  for (absl::string_view part : absl::StrSplit(FLAGS_sizes, ',')) {
    uint32_t v;
    if (absl::SimpleAtoi(part, &v) && v > 0 && v <= 8192) sizes.push_back(v);
  }
  if (sizes.empty()) sizes = {8};
  return sizes;
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc

int main(int argc, char** argv) {
  rfrpc::bench::Init(&argc, &argv);
  rfrpc::bench::FlagCheck()
      .AtLeast("--iters", FLAGS_iters, 1)
      .AtLeast("--clients", FLAGS_clients, 1)
      .EachInRange("--sizes", FLAGS_sizes, 1, 8192)
      .NotEmpty("--sizes", FLAGS_sizes)
      .NotEmpty("--sections", FLAGS_sections)
      .OrExit();
  for (const std::string& part : rfrpc::bench::ParseList(FLAGS_sections)) {
    if (part != "lat" && part != "rtt" && part != "fig1") {
      rfrpc::bench::Exit("flags", absl::InvalidArgumentError(absl::StrCat(
                                      "--sections: unknown section \"", part,
                                      "\" (lat, rtt, fig1)")));
    }
  }
  // The CSV files are written as their sections run: find out now that one
  // cannot be, not after the sections before it.
  for (const std::string* path :
       {&FLAGS_lat_csv, &FLAGS_rtt_csv, &FLAGS_fig1_csv}) {
    if (path->empty()) continue;
    FILE* f = std::fopen(path->c_str(), "a");
    if (f == nullptr) {
      rfrpc::bench::Exit("csv",
                         absl::Status(absl::ErrnoToStatusCode(errno),
                                      absl::StrCat("cannot write ", *path, ": ",
                                                   std::strerror(errno))));
    }
    std::fclose(f);
  }
  using namespace rfrpc::transport;  // NOLINT: a benchmark's main.
  const std::vector<uint32_t> sizes = ParseSizes();
  const std::string sections = "," + FLAGS_sections + ",";
  auto want = [&](const char* part) {
    return sections.find(std::string(",") + part + ",") != std::string::npos;
  };
  {
    Setup s;
    Open(&s);
    std::printf("transport_bench: provider %s, %d iterations per figure%s\n",
                s.provider->name().c_str(), FLAGS_iters,
                s.provider->name() == "shm"
                    ? " (shm: same-host figures, not RDMA)"
                    : "");
    if (want("lat")) LatencyAndRate(&s, sizes);
    if (want("rtt")) RoundTrip(&s);
  }  // Its listener closes: fig1 listens at --listen with its own.
  if (want("fig1")) Fig1(sizes);
  return 0;
}
