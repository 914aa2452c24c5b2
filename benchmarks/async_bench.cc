// Copyright 2026 The rfrpc Authors.
//
// async_bench: what async and offloaded handlers cost and buy (issue 18).
// One server in this process (tests/kinds_service.h: Fast sync, Later async,
// Slow blocking), one worker.
//
//   1. offload: a client thread makes sync Fast calls and records their
//      latency, alone ("alone") and while another channel keeps
//      --slow_in_flight calls of a --slow_ms blocking method in flight
//      ("with_blocking": Slow, offloaded to the handler pool). Target: the
//      fast p99 with the blocking method within 2x of alone. With
//      --contrast, also the same sleep in the sync method ("sleep_on_worker"),
//      which holds the worker: what offloading avoids.
//   2. echo: sync Fast vs async Later finished inline (done() before the
//      handler returns) vs async Later finished from a finisher thread.
//      Target: async-inline p50 within 10% of sync p50.
//
// Configurations run interleaved, --rounds rounds of --seconds each; each
// figure is the median over rounds. The machine is shared: the load average
// is printed with every round.
//
//   bazel run -c opt //benchmarks:async_bench -- --rounds=5

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "benchmarks/bench_util.h"
#include "benchmarks/harness.h"
#include "benchmarks/rpc_options.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "tests/kinds_service.h"

DEFINE_string(address, "", "Listen address (verbs: ip:0).");
DEFINE_string(mode, "hybrid", "Mode of the measured calls: rf, server_reply, hybrid.");
DEFINE_string(parts, "offload,echo", "What to run: offload, echo.");
DEFINE_int32(rounds, 5, "Interleaved rounds per configuration.");
DEFINE_double(seconds, 1.0, "Measured seconds per configuration and round.");
DEFINE_int32(slow_ms, 10, "Sleep of the blocking method.");
DEFINE_int32(slow_in_flight, 4, "Blocking calls kept in flight.");
DEFINE_int32(blocking_threads, 4, "ServerOptions::blocking_threads.");
DEFINE_bool(contrast, true, "offload: also run the sleep on the worker.");
DEFINE_int32(size, 32, "Payload bytes.");
DEFINE_bool(echo_thread, true,
            "echo: also async calls finished from a finisher thread.");
DEFINE_bool(pin, true, "Pin the worker to CPU 0 and the measuring client to CPU 1.");

namespace rfrpc {
namespace {

using testing::KindsService;
using testing::TestRequest;
using testing::TestResponse;

struct Figures {
  double p50_us = 0, p99_us = 0;
  double calls_per_s = 0;
  uint64_t slow_calls = 0;  // Blocking calls completed meanwhile.
};

std::unique_ptr<Channel> Connect(const std::string& address, RpcMode mode,
                                 bool progress_thread = true) {
  ChannelOptions opts = bench::ClientOptions();
  opts.mode = mode;
  opts.progress_thread = progress_thread;
  opts.default_timeout = absl::Seconds(30);
  opts.max_request_bytes = std::max(4096, FLAGS_size + 64);
  opts.max_response_bytes = std::max(64 * 1024, FLAGS_size + 64);
  return bench::ValueOrExit(Channel::Create(address, opts), "channel");
}

enum class Call { kFast, kLaterInline, kLaterThread };

// Sync calls for FLAGS_seconds on `ch`, from this thread, taking turns over
// `calls` (one of each, then again: every kind sees the same moments of the
// shared machine); figures per kind. Every reply checked. Between calls,
// untimed, it drives `poll` (may be null): the blocking load's channel, so
// that the load needs no client thread of its own.
std::vector<Figures> Measure(Channel* ch, const std::vector<Call>& calls,
                             Channel* poll = nullptr) {
  testing::Kinds::Stub stub(ch);
  TestRequest req;
  req.set_payload(std::string(FLAGS_size, 'p'));
  TestResponse resp;
  std::vector<std::vector<double>> lat(calls.size());
  for (auto& l : lat) l.reserve(1 << 20);
  uint64_t id = 0;
  // A short warm-up (fetch delay, hot slot).
  const absl::Time warm = absl::Now() + absl::Milliseconds(100);
  const absl::Time end = warm + absl::Seconds(FLAGS_seconds);
  bool measuring = false;
  for (size_t k = 0;; k = (k + 1) % calls.size()) {
    const Call call = calls[k];
    req.set_id(++id);
    req.set_async_mode(call == Call::kLaterThread ? testing::kThread
                                                  : testing::kInline);
    const uint64_t t0 = bench::ProcessTicks().Now();
    absl::Status s = call == Call::kFast ? stub.Fast(nullptr, req, &resp)
                                         : stub.Later(nullptr, req, &resp);
    const uint64_t t1 = bench::ProcessTicks().Now();
    CHECK(s.ok()) << s;
    CHECK_EQ(resp.id(), id);
    CHECK_EQ(resp.payload().size(), req.payload().size());
    if (measuring) {
      lat[k].push_back(bench::ProcessTicks().NsBetween(t0, t1) / 1000.0);
    }
    if (poll != nullptr) poll->Poll();
    if (k + 1 == calls.size()) {  // The clock once per turn.
      const absl::Time now = absl::Now();
      if (now >= end) break;
      measuring = now >= warm;
    }
  }
  std::vector<Figures> out(calls.size());
  for (size_t k = 0; k < calls.size(); ++k) {
    std::sort(lat[k].begin(), lat[k].end());
    out[k].p50_us = bench::Quantile(lat[k], 0.5);
    out[k].p99_us = bench::Quantile(lat[k], 0.99);
    out[k].calls_per_s = lat[k].size() / FLAGS_seconds;
  }
  return out;
}

// Keeps FLAGS_slow_in_flight calls of a FLAGS_slow_ms method in flight on
// its own channel until destroyed: Slow (offloaded), or Fast (the same
// sleep on the worker). Its channel has no progress thread: the measuring
// thread drives it (channel()) between its calls.
class SlowLoad {
 public:
  SlowLoad(const std::string& address, bool on_worker)
      : ch_(Connect(address, RpcMode::kServerReply, /*progress_thread=*/false)),
        on_worker_(on_worker) {
    for (int i = 0; i < FLAGS_slow_in_flight; ++i) Issue(i);
  }
  ~SlowLoad() {
    stop_.store(true);
    while (in_flight_.load() > 0) {
      if (!ch_->Poll()) absl::SleepFor(absl::Microseconds(100));
    }
  }
  Channel* channel() const { return ch_.get(); }
  uint64_t completed() const { return completed_.load(); }

 private:
  struct Slot {
    TestRequest req;
    TestResponse resp;
  };
  void Issue(int i) {
    if (stop_.load()) return;
    in_flight_.fetch_add(1);
    Slot& s = slots_[i];
    s.req.set_id(i);
    s.req.set_sleep_ms(FLAGS_slow_ms);
    testing::Kinds::Stub stub(ch_.get());
    auto done = [this, i](absl::Status st) {
      CHECK(st.ok()) << st;
      completed_.fetch_add(1);
      in_flight_.fetch_sub(1);
      Issue(i);
    };
    if (on_worker_) {
      stub.FastAsync(nullptr, s.req, &s.resp, done);
    } else {
      stub.SlowAsync(nullptr, s.req, &s.resp, done);
    }
  }

  std::unique_ptr<Channel> ch_;
  const bool on_worker_;
  Slot slots_[64];
  std::atomic<bool> stop_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<uint64_t> completed_{0};
};

void PrintRow(const char* part, const char* config, int round, const Figures& f) {
  std::printf("%-8s %-16s %5d %10.3f %10.3f %12.0f %8llu %7.2f\n", part, config,
              round, f.p50_us, f.p99_us, f.calls_per_s,
              static_cast<unsigned long long>(f.slow_calls),
              bench::LoadAverage1());
  std::fflush(stdout);
}

double MedianOf(const std::vector<Figures>& v, double Figures::*field) {
  std::vector<double> x;
  for (const Figures& f : v) x.push_back(f.*field);
  return bench::Median(x);
}

int Main() {
  bench::FlagCheck()
      .AtLeast("--rounds", FLAGS_rounds, 1)
      .Seconds("--seconds", FLAGS_seconds)
      .InRange("--size", FLAGS_size, 0, 60000)  // The server's 64 KiB.
      .AtLeast("--slow_ms", FLAGS_slow_ms, 0)
      .ServerField("--blocking_threads", FLAGS_blocking_threads,
                   &ServerOptions::blocking_threads)
      .InRange("--slow_in_flight", FLAGS_slow_in_flight, 1, 64)
      .NotEmpty("--parts", FLAGS_parts)
      .OrExit();
  const std::vector<std::string> parts = bench::ParseList(FLAGS_parts);
  for (const std::string& part : parts) {
    if (part != "offload" && part != "echo") {
      bench::Exit("flags",
                  absl::InvalidArgumentError(absl::StrCat(
                      "--parts: unknown part \"", part, "\" (offload, echo)")));
    }
  }
  // Before the server starts: an exit after it would leave its socket.
  const RpcMode mode = bench::ValueOrExit(ParseRpcMode(FLAGS_mode), "--mode");
  bench::ClientOptions();  // The --rfrpc_* channel flags.
  ServerOptions so;
  so.provider = FLAGS_provider;
  so.address = FLAGS_address;
  so.workers = 1;
  so.pin_first_cpu = FLAGS_pin ? 0 : -1;
  so.blocking_threads = FLAGS_blocking_threads;
  KindsService service(/*finishers=*/1);
  std::unique_ptr<Server> server =
      bench::StartServer(bench::WithServerFlags(so), {&service});
  if (FLAGS_pin) bench::PinSelf(1);
  std::printf("# async_bench provider=%s%s mode=%s workers=1 blocking_threads=%d "
              "slow=%d ms x %d in flight, payload %d B, %d rounds x %.1f s, "
              "cpus=%u, latency clock=%s\n",
              FLAGS_provider.c_str(),
              FLAGS_provider == "shm" ? " (same-host shm figures)" : "",
              FLAGS_mode.c_str(), FLAGS_blocking_threads, FLAGS_slow_ms,
              FLAGS_slow_in_flight, FLAGS_size, FLAGS_rounds, FLAGS_seconds,
              std::thread::hardware_concurrency(), bench::ProcessTicks().source());
  std::printf("%-8s %-16s %5s %10s %10s %12s %8s %7s\n", "part", "config",
              "round", "p50_us", "p99_us", "calls/s", "slow", "load1");
  std::unique_ptr<Channel> ch = Connect(server->address(), mode);
  const bool offload =
      std::find(parts.begin(), parts.end(), "offload") != parts.end();
  const bool echo = std::find(parts.begin(), parts.end(), "echo") != parts.end();

  if (offload) {
    std::vector<Figures> alone, with, contrast;
    for (int r = 0; r < FLAGS_rounds; ++r) {
      Figures a = Measure(ch.get(), {Call::kFast})[0];
      PrintRow("offload", "alone", r, a);
      alone.push_back(a);
      {
        SlowLoad load(server->address(), /*on_worker=*/false);
        const uint64_t before = load.completed();
        Figures w = Measure(ch.get(), {Call::kFast}, load.channel())[0];
        w.slow_calls = load.completed() - before;
        PrintRow("offload", "with_blocking", r, w);
        with.push_back(w);
      }
      if (FLAGS_contrast && r == 0) {
        SlowLoad load(server->address(), /*on_worker=*/true);
        const uint64_t before = load.completed();
        Figures c = Measure(ch.get(), {Call::kFast}, load.channel())[0];
        c.slow_calls = load.completed() - before;
        PrintRow("offload", "sleep_on_worker", r, c);
        contrast.push_back(c);
      }
    }
    const double p99a = MedianOf(alone, &Figures::p99_us);
    const double p99w = MedianOf(with, &Figures::p99_us);
    std::printf(
        "# offload: fast p50 %.3f -> %.3f us, p99 %.3f -> %.3f us (medians "
        "over %d rounds): with a %d ms blocking method offloaded, p99 is "
        "%.2fx alone (target <= 2x)%s\n",
        MedianOf(alone, &Figures::p50_us), MedianOf(with, &Figures::p50_us),
        p99a, p99w, FLAGS_rounds, FLAGS_slow_ms, p99a > 0 ? p99w / p99a : 0,
        contrast.empty()
            ? ""
            : absl::StrFormat("; the same sleep on the worker: p99 %.0f us",
                              contrast[0].p99_us)
                  .c_str());
  }
  if (echo) {
    std::vector<Figures> sync, inline_async, thread_async;
    for (int r = 0; r < FLAGS_rounds; ++r) {
      // Sync and inline-async calls alternate; calls finished on a thread
      // (whose wake-ups would disturb the others) run on their own.
      std::vector<Figures> f =
          Measure(ch.get(), {Call::kFast, Call::kLaterInline});
      PrintRow("echo", "sync", r, f[0]);
      PrintRow("echo", "async_inline", r, f[1]);
      sync.push_back(f[0]);
      inline_async.push_back(f[1]);
      if (FLAGS_echo_thread) {
        f = Measure(ch.get(), {Call::kLaterThread});
        PrintRow("echo", "async_thread", r, f[0]);
        thread_async.push_back(f[0]);
      }
    }
    const double ps = MedianOf(sync, &Figures::p50_us);
    const double pi = MedianOf(inline_async, &Figures::p50_us);
    const double pt = MedianOf(thread_async, &Figures::p50_us);
    std::printf(
        "# echo p50 (medians over %d rounds, calls taking turns): sync %.3f "
        "us, async finished inline %.3f us (%+.1f%%, target within 10%%)",
        FLAGS_rounds, ps, pi, ps > 0 ? 100 * (pi - ps) / ps : 0);
    if (FLAGS_echo_thread) {
      std::printf(", async finished on another thread %.3f us (%+.1f%%)", pt,
                  ps > 0 ? 100 * (pt - ps) / ps : 0);
    }
    std::printf("\n");
  }
  const ServerStats st = server->stats();
  std::printf("# server: calls %llu, async %llu, offloaded %llu, failed %llu\n",
              static_cast<unsigned long long>(st.calls),
              static_cast<unsigned long long>(st.calls_async),
              static_cast<unsigned long long>(st.calls_offloaded),
              static_cast<unsigned long long>(st.calls_failed));
  ch.reset();
  server->Shutdown();
  return 0;
}

}  // namespace
}  // namespace rfrpc

int main(int argc, char** argv) {
  rfrpc::bench::Init(&argc, &argv);
  rfrpc::bench::RejectFlagsItSets({
      {"rfrpc_mode", "use --mode"},
      {"rfrpc_progress_thread", "the parts set it as each needs"},
      {"rfrpc_timeout_ms", "it is 30 s"},
      {"rfrpc_max_request_bytes", "it follows --size"},
      {"rfrpc_max_response_bytes", "it follows --size"},
  });
  return rfrpc::Main();
}
