// Copyright 2026 The rfrpc Authors.
//
// grpc_echo: the gRPC C++ 1.51 side of experiment 6 (rfrpc vs gRPC), on the
// same proto/echo.proto as rfrpc_echo_bench. Sync unary calls.
//
//   grpc_echo --role=server --listen=unix:/tmp/echo.sock      # or 127.0.0.1:0
//       prints "LISTENING <address>" once serving; stops on SIGTERM/SIGINT
//       or after --max_seconds.
//   grpc_echo --role=client --target=unix:/tmp/echo.sock --threads=1
//       --sizes=32,1024 --transport=unix --csv
//       one channel per client thread; ops/s, avg, p50, p99 per size.
//
// gRPC here runs over the kernel's Unix socket or loopback TCP; rfrpc's
// figures beside it come from shm (same host), so both are same-host runs.

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "benchmarks/bench_util.h"
#include "benchmarks/echo_grpc/echo.grpc.pb.h"
#include "flags/flagfile_check.h"
#include "gflags/gflags.h"
#include "grpcpp/grpcpp.h"

DEFINE_string(role, "client", "server or client.");
DEFINE_string(listen, "unix:/tmp/rfrpc-grpc-echo.sock",
              "Server: address to listen on (unix:PATH or HOST:PORT; port 0 "
              "picks one).");
DEFINE_int32(server_threads, 2, "Server: polling threads (min = max).");
DEFINE_double(max_seconds, 900, "Server: exit after this long regardless.");
DEFINE_string(target, "unix:/tmp/rfrpc-grpc-echo.sock", "Client: server address.");
DEFINE_string(transport, "unix", "Client: label for the CSV (unix, tcp).");
DEFINE_int32(threads, 1, "Client threads, one channel each.");
DEFINE_string(sizes, "32", "Payload sizes in bytes.");
DEFINE_double(seconds, 2.0, "Measured seconds per point.");
DEFINE_double(warmup_seconds, 0.3, "Unmeasured warm-up per point.");
DEFINE_int32(repeats, 1, "Measure each point this many times, keep the best.");
DEFINE_bool(csv, false, "CSV rows instead of a table.");
DEFINE_bool(header, true, "Print the CSV header.");

namespace rfrpc {
namespace {

class EchoImpl final : public echo::Echo::Service {
  grpc::Status Echo(grpc::ServerContext*, const echo::EchoRequest* req,
                    echo::EchoResponse* resp) override {
    if (req->server_delay_ns() > 0) {
      const int64_t until = absl::GetCurrentTimeNanos() + req->server_delay_ns();
      while (absl::GetCurrentTimeNanos() < until) {
      }
    }
    resp->set_payload(req->payload());
    resp->set_id(req->id());
    return grpc::Status::OK;
  }
};

// The harness's FlagCheck in the same words (this binary, the gRPC side,
// does not link the harness): the first flag outside [min, max] (nan and inf
// included), or "" when all are in range.
class FlagCheck {
 public:
  // 4193280 rather than 4.19328e+06.
  static std::string Num(double v) {
    if (std::fabs(v) < 1e15 && v == std::trunc(v)) {
      return absl::StrCat(static_cast<int64_t>(v));
    }
    return absl::StrCat(v);
  }

  FlagCheck& InRange(const char* flag, double value, double min, double max) {
    if (error_.empty() && !(value >= min && value <= max)) {
      error_ = absl::StrCat(flag, "=", Num(value), ": must be in [", Num(min),
                            ", ", Num(max), "]");
    }
    return *this;
  }
  // Every entry of a comma-separated list flag, which must have one.
  FlagCheck& EachInRange(const char* flag, const std::string& value, int min,
                         int max) {
    int entries = 0;
    for (absl::string_view p : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      int x;
      if (!absl::SimpleAtoi(p, &x)) {
        if (error_.empty()) {
          error_ = absl::StrCat(
              flag, "=", value, ": \"", p, "\" ",
              IsIntegerText(p)
                  ? absl::StrCat("is out of range: must be in [", min, ", ",
                                 max, "]")
                  : "is not an integer");
        }
        return *this;
      }
      InRange(flag, x, min, max);
      ++entries;
    }
    if (error_.empty() && entries == 0) {
      error_ = absl::StrCat(flag, " is empty: nothing to run");
    }
    return *this;
  }
  // A gRPC address: unix:PATH (or unix-abstract:NAME), or HOST:PORT with
  // PORT in [min_port, 65535] (gRPC takes a larger port modulo 65536, or
  // picks one at random, without a word). A client's target may also be a
  // gRPC URI (dns:///host:port, ipv4:..., ...): only a numeric port there
  // is checked.
  FlagCheck& Address(const char* flag, const std::string& value, int min_port,
                     bool uri_ok) {
    if (!error_.empty() || absl::StartsWith(value, "unix:") ||
        absl::StartsWith(value, "unix-abstract:")) {
      return *this;
    }
    const size_t colon = value.rfind(':');
    const absl::string_view port =
        colon == std::string::npos ? absl::string_view()
                                   : absl::string_view(value).substr(colon + 1);
    const bool numeric =
        !port.empty() && std::all_of(port.begin(), port.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
    if (!numeric) {
      if (!uri_ok) {
        error_ = absl::StrCat(flag, "=", value,
                              colon == std::string::npos
                                  ? ": must be unix:PATH or HOST:PORT"
                                  : ": the port is not a number");
      }
      return *this;
    }
    int n = 0;
    if (!absl::SimpleAtoi(port, &n) || n < min_port || n > 65535) {
      error_ = absl::StrCat(flag, "=", value, ": port ", port, " must be in [",
                            min_port, ", 65535]",
                            min_port == 0 ? " (0 picks one)" : "");
    }
    return *this;
  }
  // Prints "grpc_echo: flags: INVALID_ARGUMENT: <error>" and exits with
  // status 2 on an error.
  void OrExit() const {
    if (error_.empty()) return;
    std::fprintf(stderr, "grpc_echo: flags: INVALID_ARGUMENT: %s\n",
                 error_.c_str());
    std::exit(2);
  }

 private:
  std::string error_;
};

// The benchmarks' measured spans are at most an hour (bench::kMaxSeconds);
// the server's lifetime cap at most a day.
constexpr double kMaxSeconds = 3600;
constexpr double kMaxServerSeconds = 86400;
// gRPC's default largest received message is 4 MiB; the reply carries the
// payload and a few bytes more.
constexpr int kMaxSize = 4 * 1024 * 1024 - 1024;

int Serve() {
  FlagCheck()
      .InRange("--server_threads", FLAGS_server_threads, 1, 1024)
      .InRange("--max_seconds", FLAGS_max_seconds, 0.001, kMaxServerSeconds)
      .Address("--listen", FLAGS_listen, /*min_port=*/0, /*uri_ok=*/false)
      .OrExit();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // Inherited by gRPC's threads.

  EchoImpl impl;
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort(FLAGS_listen, grpc::InsecureServerCredentials(), &port);
  b.RegisterService(&impl);
  b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS,
                        FLAGS_server_threads);
  b.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                        FLAGS_server_threads);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "grpc_echo: cannot listen on %s\n", FLAGS_listen.c_str());
    return 1;
  }
  std::string addr = FLAGS_listen;
  if (addr.rfind("unix:", 0) != 0) {
    addr = addr.substr(0, addr.rfind(':')) + ":" + std::to_string(port);
  }
  std::printf("LISTENING %s\n", addr.c_str());
  std::fflush(stdout);
  const double whole = std::floor(FLAGS_max_seconds);
  timespec limit{static_cast<time_t>(whole),
                 static_cast<long>((FLAGS_max_seconds - whole) * 1e9)};
  sigtimedwait(&set, nullptr, &limit);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}

int Client() {
  FlagCheck()
      .InRange("--threads", FLAGS_threads, 1, 1024)
      .EachInRange("--sizes", FLAGS_sizes, 0, kMaxSize)
      .InRange("--seconds", FLAGS_seconds, 0.001, kMaxSeconds)
      .InRange("--warmup_seconds", FLAGS_warmup_seconds, 0, kMaxSeconds)
      .InRange("--repeats", FLAGS_repeats, 1, 1000000)
      .Address("--target", FLAGS_target, /*min_port=*/1, /*uri_ok=*/true)
      .OrExit();
  if (FLAGS_csv && FLAGS_header) {
    std::printf("system,transport,threads,size,ops_per_s,avg_us,p50_us,p99_us,"
                "calls,failed,loadavg\n");
  } else if (!FLAGS_csv) {
    std::printf("# grpc_echo client target=%s threads=%d (gRPC %s, sync unary)\n",
                FLAGS_target.c_str(), FLAGS_threads, grpc::Version().c_str());
  }
  for (int size : bench::ParseInts("--sizes", FLAGS_sizes)) {
    // Best of --repeats by calls/s: other work on a shared machine only
    // ever slows a run down.
    bench::EchoPoint best;
    for (int rep = 0; rep < FLAGS_repeats; ++rep) {
      std::atomic<bool> measure{false}, stop{false}, unreachable{false};
      std::atomic<uint64_t> failed{0};
      std::vector<std::vector<double>> lat(FLAGS_threads);
      std::vector<std::thread> threads;
      std::atomic<int> ready{0};
      for (int t = 0; t < FLAGS_threads; ++t) {
        threads.emplace_back([&, t] {
          grpc::ChannelArguments args;
          args.SetInt("rfrpc.bench.channel", t);  // A channel (and socket) each.
          auto ch = grpc::CreateCustomChannel(
              FLAGS_target, grpc::InsecureChannelCredentials(), args);
          auto stub = echo::Echo::NewStub(ch);
          echo::EchoRequest req;
          req.set_payload(std::string(size, 'p'));
          echo::EchoResponse resp;
          lat[t].reserve(1 << 18);
          if (!ch->WaitForConnected(std::chrono::system_clock::now() +
                                    std::chrono::seconds(10))) {
            failed++;
            unreachable = true;
          }
          ready++;
          uint64_t id = 0;
          while (!stop.load(std::memory_order_relaxed)) {
            grpc::ClientContext ctx;
            ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
            req.set_id(++id);
            const int64_t t0 = absl::GetCurrentTimeNanos();
            grpc::Status s = stub->Echo(&ctx, req, &resp);
            const int64_t t1 = absl::GetCurrentTimeNanos();
            if (!s.ok() || resp.id() != id) {
              if (failed++ == 0) {
                std::fprintf(stderr, "grpc_echo: %s\n", s.error_message().c_str());
              }
              continue;
            }
            if (measure.load(std::memory_order_relaxed)) {
              lat[t].push_back((t1 - t0) / 1000.0);
            }
          }
        });
      }
      while (ready.load() < FLAGS_threads) absl::SleepFor(absl::Milliseconds(1));
      if (unreachable) {
        stop = true;
        for (auto& th : threads) th.join();
        std::fprintf(stderr,
                     "grpc_echo: --target=%s: no connection within 10 s (is "
                     "a grpc_echo server running there?)\n",
                     FLAGS_target.c_str());
        return 2;
      }
      absl::SleepFor(absl::Seconds(FLAGS_warmup_seconds));
      measure = true;
      const absl::Time start = absl::Now();
      absl::SleepFor(absl::Seconds(FLAGS_seconds));
      measure = false;
      const double secs = absl::ToDoubleSeconds(absl::Now() - start);
      stop = true;
      for (auto& th : threads) th.join();
      best.Keep(lat, secs, failed.load());
    }
    best.Print("grpc", FLAGS_transport, FLAGS_threads, size, FLAGS_csv);
  }
  return 0;
}

}  // namespace
}  // namespace rfrpc

int main(int argc, char** argv) {
  if (absl::Status s = rfrpc::tools::CheckFlagfiles(argc, argv); !s.ok()) {
    std::fprintf(stderr, "grpc_echo: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_role == "server") return rfrpc::Serve();
  if (FLAGS_role == "client") return rfrpc::Client();
  std::fprintf(stderr, "grpc_echo: --role must be server or client\n");
  return 2;
}
