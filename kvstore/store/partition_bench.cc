// Copyright 2026 The rfrpc Authors.
//
// Single-thread Partition throughput at the paper's default workload:
// 16-byte keys and 32-byte values (RF-RPC §5.1). No network: this is the
// per-worker ceiling of Jakiro's storage engine.
//
//   bazel run -c opt //kvstore/store:partition_bench

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "kvstore/store/key_hash.h"
#include "kvstore/store/partition.h"

namespace rfrpc {
namespace kvstore {
namespace {

constexpr size_t kKeyBytes = 16;
constexpr size_t kValueBytes = 32;

// Key i: "k:" + 6 filler bytes + i as 8 raw bytes = 16 bytes.
std::string MakeKey(uint64_t i) {
  std::string key = "k:______";
  key.append(reinterpret_cast<const char*>(&i), sizeof(i));
  return key;
}

std::unique_ptr<Partition> Preloaded(size_t items,
                                     size_t memory_bytes = size_t{64} << 20) {
  PartitionOptions options;
  options.memory_bytes = memory_bytes;
  std::unique_ptr<Partition> p = *Partition::Create(options);
  const std::string value(kValueBytes, 'v');
  for (size_t i = 0; i < items; ++i) {
    if (!p->Put(MakeKey(i), value).ok()) std::abort();
  }
  return p;
}

void Report(benchmark::State& state, const Partition& p) {
  state.SetItemsProcessed(state.iterations());
  const PartitionStats& s = p.stats();
  state.counters["items"] = static_cast<double>(s.items);
  state.counters["evict_mem"] = static_cast<double>(s.evictions_memory);
  state.counters["evict_bucket"] = static_cast<double>(s.evictions_bucket_full);
}

// Keys visited in a scrambled order so lookups are not sequential in memory.
std::vector<std::string> ScrambledKeys(size_t n) {
  std::vector<std::string> keys;
  keys.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    keys.push_back(MakeKey((i * 2654435761u) % n));
  }
  return keys;
}

void BM_GetHit(benchmark::State& state) {
  const size_t n = state.range(0);
  std::unique_ptr<Partition> p = Preloaded(n);
  const std::vector<std::string> keys = ScrambledKeys(n);
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<absl::string_view> v = p->GetView(keys[i]);
    benchmark::DoNotOptimize(v);
    if (++i == n) i = 0;
  }
  Report(state, *p);
}
BENCHMARK(BM_GetHit)->Arg(1 << 10)->Arg(1 << 17)->Arg(1 << 20);

// One Get at a time, as a synchronous Jakiro server serves them: the next
// key depends on the value just read, so the CPU cannot overlap the lookups'
// cache and TLB misses. Args: items, partition MiB (kv_compare.sh gives the
// server 256).
void BM_GetHitSerial(benchmark::State& state) {
  const size_t n = state.range(0);
  std::unique_ptr<Partition> p =
      Preloaded(n, static_cast<size_t>(state.range(1)) << 20);
  const std::vector<std::string> keys = ScrambledKeys(n);
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<absl::string_view> v = p->GetView(keys[i]);
    // The value is all 'v': this adds 0 but makes i wait for the load.
    i += 1 + static_cast<size_t>((*v)[0] - 'v');
    if (i >= n) i = 0;
  }
  Report(state, *p);
}
BENCHMARK(BM_GetHitSerial)->Args({100000, 64})->Args({100000, 256});

// As BM_GetHitSerial, with keys drawn zipfian (theta 0.99, the paper's YCSB
// skew; rank r has weight 1 / r^0.99, ranks scattered over the keys).
void BM_GetHitSerialZipf(benchmark::State& state) {
  const size_t n = state.range(0);
  std::unique_ptr<Partition> p =
      Preloaded(n, static_cast<size_t>(state.range(1)) << 20);
  std::vector<double> cdf(n);
  double sum = 0;
  for (size_t r = 0; r < n; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r + 1), 0.99);
    cdf[r] = sum;
  }
  const std::vector<std::string> keys = ScrambledKeys(n);
  std::vector<const std::string*> draws(1 << 16);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, sum);
  for (auto& d : draws) {
    const size_t r = static_cast<size_t>(
        std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin());
    d = &keys[std::min(r, n - 1)];
  }
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<absl::string_view> v = p->GetView(*draws[i]);
    i += 1 + static_cast<size_t>((*v)[0] - 'v');
    if (i >= draws.size()) i = 0;
  }
  Report(state, *p);
}
BENCHMARK(BM_GetHitSerialZipf)->Args({100000, 256});

void BM_GetMiss(benchmark::State& state) {
  const size_t n = state.range(0);
  std::unique_ptr<Partition> p = Preloaded(n);
  std::vector<std::string> keys;
  for (size_t i = 0; i < n; ++i) keys.push_back(MakeKey(n + i));
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<absl::string_view> v = p->GetView(keys[i]);
    benchmark::DoNotOptimize(v);
    if (++i == n) i = 0;
  }
  Report(state, *p);
}
BENCHMARK(BM_GetMiss)->Arg(1 << 17);

// Overwrites of present keys with same-size values (in place).
void BM_PutOverwrite(benchmark::State& state) {
  const size_t n = state.range(0);
  std::unique_ptr<Partition> p = Preloaded(n);
  const std::vector<std::string> keys = ScrambledKeys(n);
  const std::string value(kValueBytes, 'w');
  size_t i = 0;
  for (auto _ : state) {
    if (!p->Put(keys[i], value).ok()) std::abort();
    if (++i == n) i = 0;
  }
  Report(state, *p);
}
BENCHMARK(BM_PutOverwrite)->Arg(1 << 17)->Arg(1 << 20);

// Inserts of ever-new keys into a full 64 MiB partition: every Put appends,
// and the log compacts and evicts (LRU) to make room.
void BM_PutInsertUnderEviction(benchmark::State& state) {
  std::unique_ptr<Partition> p = *Partition::Create(PartitionOptions{});
  const std::string value(kValueBytes, 'v');
  const size_t fill =
      (size_t{64} << 20) / Partition::ItemFootprint(kKeyBytes, kValueBytes);
  uint64_t next = 0;
  for (; next < fill; ++next) {
    if (!p->Put(MakeKey(next), value).ok()) std::abort();
  }
  std::string key = MakeKey(0);
  for (auto _ : state) {
    std::memcpy(&key[8], &next, sizeof(next));
    ++next;
    if (!p->Put(key, value).ok()) std::abort();
  }
  Report(state, *p);
}
BENCHMARK(BM_PutInsertUnderEviction);

void BM_KeyHash16(benchmark::State& state) {
  const std::string key = MakeKey(12345);
  uint64_t sink = 0;
  for (auto _ : state) {
    sink += KeyHash(key);
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_KeyHash16);

}  // namespace
}  // namespace kvstore
}  // namespace rfrpc

// The library's --benchmark_repetitions (exported by libbenchmark 1.7, not
// declared in its public header). It aborts on a negative count and runs
// nothing on 0; a huge one reserves memory it cannot have.
namespace benchmark {
extern int32_t FLAGS_benchmark_repetitions;
}  // namespace benchmark

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  // Prints "error: unrecognized command-line flag: ..." for each.
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  constexpr int32_t kMaxRepetitions = 100000;
  if (benchmark::FLAGS_benchmark_repetitions < 1 ||
      benchmark::FLAGS_benchmark_repetitions > kMaxRepetitions) {
    std::fprintf(stderr,
                 "partition_bench: flags: INVALID_ARGUMENT: "
                 "--benchmark_repetitions=%d: must be in [1, %d]\n",
                 benchmark::FLAGS_benchmark_repetitions, kMaxRepetitions);
    return 2;
  }
  benchmark::AddCustomContext("workload", "16 B keys, 32 B values, 1 thread");
  benchmark::AddCustomContext("provider", "none (in-memory partition only)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
