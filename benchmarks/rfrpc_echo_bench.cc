// Copyright 2026 The rfrpc Authors.
//
// rfrpc_echo_bench: the rfrpc side of experiment 6 (rfrpc vs gRPC). The
// generated rfrpc.echo.Echo service from proto/echo.proto (the file
// grpc_echo compiles too), served in this process, sync unary calls from
// --threads client threads (one channel each), the same payload sizes and
// the same CSV columns as grpc_echo --role=client.
//
//   bazel run //benchmarks:rfrpc_echo_bench -- --threads=1 --sizes=32 --csv
//
// shm figures are same-host figures, as are gRPC's over a Unix socket.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "benchmarks/bench_util.h"
#include "benchmarks/rpc_options.h"
#include "benchmarks/harness.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "proto/echo.rfrpc.h"
#include "rpc/channel.h"
#include "rpc/server.h"

DEFINE_string(address, "", "Listen address (verbs: ip:0).");
DEFINE_string(mode, "hybrid", "rf, server_reply or hybrid (the default).");
DEFINE_int32(threads, 1, "Client threads, one channel each.");
DEFINE_int32(workers, 1, "Server worker threads.");
DEFINE_string(sizes, "32", "Payload sizes in bytes.");
DEFINE_double(seconds, 2.0, "Measured seconds per point.");
DEFINE_double(warmup_seconds, 0.3, "Unmeasured warm-up per point.");
DEFINE_bool(pin, true, "Pin server worker i to CPU i, client j to the next.");
DEFINE_int32(repeats, 1, "Measure each point this many times, keep the best.");
DEFINE_bool(csv, false, "CSV rows instead of a table.");
DEFINE_bool(header, true, "Print the CSV header.");

namespace rfrpc {
namespace {

class EchoImpl final : public echo::Echo::Service {
 public:
  absl::Status Echo(ServerContext* ctx, const echo::EchoRequest* req,
                    echo::EchoResponse* resp) override {
    if (req->server_delay_ns() > 0) {
      const int64_t until = absl::GetCurrentTimeNanos() + req->server_delay_ns();
      while (absl::GetCurrentTimeNanos() < until) {
      }
    }
    resp->set_payload(req->payload());
    resp->set_id(req->id());
    return absl::OkStatus();
  }
};

int Main() {
  bench::FlagCheck()
      .AtLeast("--threads", FLAGS_threads, 1)
      .ServerField("--workers", FLAGS_workers, &ServerOptions::workers)
      .Seconds("--seconds", FLAGS_seconds)
      .SecondsOrZero("--warmup_seconds", FLAGS_warmup_seconds)
      .AtLeast("--repeats", FLAGS_repeats, 1)
      .NotEmpty("--sizes", FLAGS_sizes)
      .EachInRange("--sizes", FLAGS_sizes, 0, 60000)  // The server's 64 KiB.
      .OrExit();
  const RpcMode mode = bench::ValueOrExit(ParseRpcMode(FLAGS_mode), "--mode");
  // The --rfrpc_* channel flags, before the server starts (each client
  // thread builds its options from them later).
  bench::ClientOptions();
  ServerOptions so;
  so.provider = FLAGS_provider;
  so.address = FLAGS_address;
  so.workers = FLAGS_workers;
  so.pin_first_cpu = FLAGS_pin ? 0 : -1;
  EchoImpl impl;
  std::unique_ptr<Server> server = bench::StartServer(
      bench::WithServerFlags(so), {&impl});
  if (FLAGS_csv && FLAGS_header) {
    std::printf("system,transport,threads,size,ops_per_s,avg_us,p50_us,p99_us,"
                "calls,failed,loadavg\n");
  } else if (!FLAGS_csv) {
    std::printf("# rfrpc_echo_bench provider=%s mode=%s workers=%d threads=%d\n",
                FLAGS_provider.c_str(), FLAGS_mode.c_str(), FLAGS_workers,
                FLAGS_threads);
  }
  for (int size : bench::ParseInts("--sizes", FLAGS_sizes)) {
    // Best of --repeats by calls/s: other work on a shared machine only
    // ever slows a run down.
    bench::EchoPoint best;
    for (int rep = 0; rep < std::max(1, FLAGS_repeats); ++rep) {
      std::atomic<bool> measure{false}, stop{false};
      std::atomic<uint64_t> failed{0};
      std::vector<std::vector<double>> lat(FLAGS_threads);
      std::vector<std::thread> threads;
      std::atomic<int> ready{0};
      for (int t = 0; t < FLAGS_threads; ++t) {
        threads.emplace_back([&, t] {
          if (FLAGS_pin) bench::PinSelf(FLAGS_workers + t);
          ChannelOptions opts = bench::ClientOptions();
          opts.mode = mode;
          opts.connections = 1;
          opts.max_request_bytes = std::max(4096, size + 64);
          opts.max_response_bytes = std::max(64 * 1024, size + 64);
          const std::unique_ptr<Channel> ch = bench::ValueOrExit(
              Channel::Create(server->address(), opts), "channel");
          echo::Echo::Stub stub(ch.get());
          echo::EchoRequest req;
          req.set_payload(std::string(size, 'p'));
          echo::EchoResponse resp;
          lat[t].reserve(1 << 20);
          ready++;
          uint64_t id = 0;
          while (!stop.load(std::memory_order_relaxed)) {
            req.set_id(++id);
            const int64_t t0 = absl::GetCurrentTimeNanos();
            absl::Status st = stub.Echo(nullptr, req, &resp);
            const int64_t t1 = absl::GetCurrentTimeNanos();
            if (!st.ok() || resp.id() != id) {
              failed++;
              continue;
            }
            if (measure.load(std::memory_order_relaxed)) {
              lat[t].push_back((t1 - t0) / 1000.0);
            }
          }
        });
      }
      while (ready.load() < FLAGS_threads) absl::SleepFor(absl::Milliseconds(1));
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
    best.Print("rfrpc", FLAGS_provider, FLAGS_threads, size, FLAGS_csv);
  }
  server->Shutdown();
  return 0;
}

}  // namespace
}  // namespace rfrpc

int main(int argc, char** argv) {
  rfrpc::bench::Init(&argc, &argv);
  rfrpc::bench::RejectFlagsItSets({
      {"rfrpc_mode", "use --mode"},
      {"rfrpc_connections", "each client has one connection"},
      {"rfrpc_max_request_bytes", "it follows --sizes"},
      {"rfrpc_max_response_bytes", "it follows --sizes"},
  });
  return rfrpc::Main();
}
