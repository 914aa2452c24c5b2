// Copyright 2026 The rfrpc Authors.
//
// What auto batching adds to an async call on the client, on one thread, no
// transport: the callback loop's latency stamps (CallbackLatencies) and the
// sizer's record of them (RequestBatcher::Record), per call, for a batch of
// results delivered one callback after another. The end-to-end figure is
// batch_bench's auto against fixed at the same N.
//
//   bazel run -c opt //rpc:auto_sizer_bench

#include <cstdint>
#include <vector>

#include "base/clock.h"
#include "benchmark/benchmark.h"
#include "rpc/options.h"
#include "rpc/request_batcher.h"

namespace rfrpc {
namespace internal {
namespace {

BatchingOptions AutoOptions(int64_t limit_us) {
  BatchingOptions o;
  o.mode = BatchMode::kAuto;
  o.size = 128;
  o.sizer.latency_limit = absl::Microseconds(limit_us);
  return o;
}

// Call starts spread over the ~40 us before now, as a batch's calls are
// (one clock read per round, outside the part measured per call).
void Starts(std::vector<int64_t>* starts) {
  const int64_t now = UnixNanos();
  for (size_t i = 0; i < starts->size(); ++i) {
    (*starts)[i] = now - 40000 + 300 * static_cast<int64_t>(i);
  }
}

// Stamps `range(0)` callbacks a round and, with `record`, hands their
// latencies to the sizer (whose window ends on its own as calls
// accumulate); per call in items/s.
void StampRounds(benchmark::State& state, RequestBatcher* batcher) {
  const int n = static_cast<int>(state.range(0));
  std::vector<int64_t> starts(n);
  for (auto _ : state) {
    Starts(&starts);
    CallbackLatencies latencies(UnixNanos);
    for (int i = 0; i < n; ++i) latencies.Before(starts[i]);
    int64_t end = 0;
    const absl::Span<const int64_t> measured = latencies.Finish(&end);
    if (batcher != nullptr) {
      benchmark::DoNotOptimize(batcher->Record(measured, end, 0));
    } else {
      benchmark::DoNotOptimize(measured);
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// Stamps and the sizer's record, at l_limit range(1) us.
void BM_StampAndRecord(benchmark::State& state) {
  RequestBatcher batcher(AutoOptions(state.range(1)));
  StampRounds(state, &batcher);
}
BENCHMARK(BM_StampAndRecord)
    ->Args({128, 1000})
    ->Args({128, 20})
    ->Args({8, 1000});

// The stamps alone, without the sizer.
void BM_StampOnly(benchmark::State& state) { StampRounds(state, nullptr); }
BENCHMARK(BM_StampOnly)->Arg(128)->Arg(8);

}  // namespace
}  // namespace internal
}  // namespace rfrpc

BENCHMARK_MAIN();
