// Copyright 2026 The rfrpc Authors.
//
// What per-method stats add to one call (rpc/method_counters.h), on one
// thread, no transport: the client's record of a finished call (thread-local
// block lookup, counters, histogram), the server's, the clock read neither
// adds (for scale), and a snapshot such as a scrape takes. The end-to-end
// A/B is rpc_bench --metrics=ab.
//
//   bazel run //rpc:method_counters_bench

#include <cstdint>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "base/clock.h"
#include "rpc/method_counters.h"

namespace rfrpc {
namespace internal {
namespace {

void BM_ClientFinished(benchmark::State& state) {
  ClientMethodCounters counters(/*enabled=*/true);
  int64_t i = 0;
  for (auto _ : state) counters.Finished(7, 0, 500 + (++i & 1023));
}
BENCHMARK(BM_ClientFinished);

// A thread alternating between two channels and two methods.
void BM_ClientFinishedTwoChannels(benchmark::State& state) {
  ClientMethodCounters a(true), b(true);
  int64_t i = 0;
  for (auto _ : state) {
    ++i;
    ((i & 1) ? a : b).Finished((i & 2) ? 7 : 8, 0, 500 + (i & 1023));
  }
}
BENCHMARK(BM_ClientFinishedTwoChannels);

// One thread calling round robin over many channels (scale_bench's round
// robin phase): each call on another channel's counters.
void BM_ClientFinishedRoundRobin(benchmark::State& state) {
  std::vector<std::unique_ptr<ClientMethodCounters>> channels;
  for (int64_t c = 0; c < state.range(0); ++c) {
    channels.push_back(std::make_unique<ClientMethodCounters>(true));
  }
  size_t i = 0;
  for (auto _ : state) {
    channels[i]->Finished(7, 0, 500 + (i & 1023));
    if (++i == channels.size()) i = 0;
  }
}
BENCHMARK(BM_ClientFinishedRoundRobin)->Arg(16)->Arg(1024)->Arg(4096);

void BM_ClientDisabled(benchmark::State& state) {
  ClientMethodCounters counters(/*enabled=*/false);
  for (auto _ : state) counters.Finished(7, 0, 500);
}
BENCHMARK(BM_ClientDisabled);

void BM_ServerServed(benchmark::State& state) {
  MethodCounters m;
  int64_t i = 0;
  for (auto _ : state) m.Served(0, 300 + (++i & 1023), 100);
}
BENCHMARK(BM_ServerServed);

void BM_UnixNanos(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(UnixNanos());
}
BENCHMARK(BM_UnixNanos);

void BM_ClientSnapshot(benchmark::State& state) {
  ClientMethodCounters counters(true);
  for (uint32_t id = 1; id <= 3; ++id) counters.Finished(id, 0, 1000);
  for (auto _ : state) benchmark::DoNotOptimize(counters.Snapshot());
}
BENCHMARK(BM_ClientSnapshot);

}  // namespace
}  // namespace internal
}  // namespace rfrpc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::AddCustomContext("provider", "none (counters only, one thread)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
