// Copyright 2026 The rfrpc Authors.
//
// What a cold connection's state costs on this host, without rfrpc: the
// time of one dependent load (pointer chasing, in a random order) when the
// lines loaded sit one per page over P pages ("spread", as each
// connection's state sits on its own pages), against the same number of
// lines packed together ("packed"). The difference is the address
// translation: past the TLB's reach every spread load also walks the page
// tables, and in a VM that walk is two-dimensional (the guest's tables and
// then the host's), so it costs several memory loads of its own.
//
// --thp asks for transparent huge pages (madvise) on the spread area; the
// output says how much of it the kernel backed with them. In a guest whose
// memory the host backs with 4 KiB pages, a guest huge page still needs a
// host translation per 4 KiB, which this shows.
//
// Memory only: no provider, no RPC. Round robin over M connections touches
// a few such lines per call on each side, one after the other (see
// docs/rpc.md, "A cold connection's cost").

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "benchmarks/bench_util.h"
#include "benchmarks/harness.h"
#include "gflags/gflags.h"

DEFINE_string(pages, "16,64,256,1024,2048,4096,16384,65536",
              "Numbers of pages (one line loaded on each) to chase over.");
DEFINE_int64(loads, 4000000, "Dependent loads timed per point.");
DEFINE_bool(thp, false,
            "madvise(MADV_HUGEPAGE) on the spread area (MADV_NOHUGEPAGE "
            "otherwise).");
DEFINE_int32(rounds, 3, "Rounds per point; the table prints the median.");
DEFINE_string(chains, "1,8",
              "Independent chases advanced together (memory-level "
              "parallelism: 8 is a call whose lines are all prefetched at "
              "once); the time printed is per load.");

namespace rfrpc {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kLine = 64;
constexpr size_t kHuge = size_t{2} << 20;

// An anonymous area of at least `bytes`, aligned to 2 MiB so that huge
// pages can back it; unmapped when it goes.
class Area {
 public:
  Area(size_t bytes, bool thp) : mapped_(bytes + kHuge) {
    void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    start_ = p;
    base_ = reinterpret_cast<char*>(
        (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1));
    ::madvise(base_, bytes, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
  ~Area() {
    if (start_ != nullptr) ::munmap(start_, mapped_);
  }
  Area(const Area&) = delete;
  Area& operator=(const Area&) = delete;

  char* base() const { return base_; }  // nullptr if mmap failed.

 private:
  size_t mapped_;
  void* start_ = nullptr;
  char* base_ = nullptr;
};

// kB of this process's anonymous memory backed by huge pages.
long AnonHugeKb() {
  FILE* f = std::fopen("/proc/self/smaps_rollup", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb;
}

// Links `n` lines, the i-th at base + i * stride, into one random cycle,
// starts `k` chases spread evenly around it and returns the ns per load of
// advancing all of them together, `loads` loads in all (after one warm lap).
// With k = 1 every load waits for the one before; with k > 1 the k loads of
// a step are independent, as a call's prefetched lines are.
double ChaseNs(char* base, size_t n, size_t stride, int64_t loads, int k,
               uint32_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(seed));
  for (size_t i = 0; i < n; ++i) {
    char* at = base + order[i] * stride;
    char* next = base + order[(i + 1) % n] * stride;
    std::memcpy(at, &next, sizeof next);
  }
  constexpr int kMaxChains = 64;
  char* q[kMaxChains];
  for (int j = 0; j < k; ++j) q[j] = base + order[j * n / k] * stride;
  for (size_t i = 0; i < n / k + 1; ++i) {
    for (int j = 0; j < k; ++j) std::memcpy(&q[j], q[j], sizeof q[j]);
  }
  const int64_t steps = loads / k;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) {
    for (int j = 0; j < k; ++j) std::memcpy(&q[j], q[j], sizeof q[j]);
  }
  const auto t1 = std::chrono::steady_clock::now();
  // Keep the chains' results alive.
  for (int j = 0; j < k; ++j) {
    if (q[j] == nullptr) std::printf("unreachable\n");
  }
  return std::chrono::duration<double, std::nano>(t1 - t0).count() /
         static_cast<double>(steps * k);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Run() {
  bench::FlagCheck()
      .EachInRange("--pages", FLAGS_pages, 2, 1 << 20)
      .NotEmpty("--pages", FLAGS_pages)
      .InRange("--loads", static_cast<double>(FLAGS_loads), 1000, 1e10)
      .InRange("--rounds", FLAGS_rounds, 1, 100)
      .EachInRange("--chains", FLAGS_chains, 1, 64)
      .NotEmpty("--chains", FLAGS_chains)
      .OrExit();
  // FlagCheck checked every entry of both lists.
  auto ints = [](absl::string_view list) {
    std::vector<int> out;
    for (absl::string_view p : absl::StrSplit(list, ',', absl::SkipEmpty())) {
      int v = 0;
      (void)absl::SimpleAtoi(p, &v);
      out.push_back(v);
    }
    return out;
  };
  const std::vector<int> points = ints(FLAGS_pages);
  const std::vector<int> chains = ints(FLAGS_chains);
  std::printf(
      "# page_spread_bench provider=none (memory only) thp=%s loads=%lld "
      "rounds=%d load=%.2f\n",
      FLAGS_thp ? "madvise" : "off", static_cast<long long>(FLAGS_loads),
      FLAGS_rounds, bench::LoadAverage1());
  std::printf("%8s %10s %7s %12s %12s %8s %14s\n", "pages", "bytes", "chains",
              "spread_ns", "packed_ns", "ratio", "thp_backed_kB");
  for (const int page_count : points) {
    const size_t pages = static_cast<size_t>(page_count);
    Area spread_area(pages * kPage, FLAGS_thp);
    Area packed_area(pages * kLine, false);
    char* spread = spread_area.base();
    char* packed = packed_area.base();
    if (spread == nullptr || packed == nullptr) {
      bench::Exit("--pages", absl::ResourceExhaustedError(
                                 "mmap of the chase area failed"));
    }
    for (const int k : chains) {
      std::vector<double> s, p;
      for (int r = 0; r < FLAGS_rounds; ++r) {
        s.push_back(ChaseNs(spread, pages, kPage, FLAGS_loads, k, 17 + r));
        p.push_back(ChaseNs(packed, pages, kLine, FLAGS_loads, k, 17 + r));
      }
      const double sn = Median(s), pn = Median(p);
      std::printf("%8zu %10zu %7d %12.1f %12.1f %8.2f %14ld\n", pages,
                  pages * kLine, k, sn, pn, sn / pn, AnonHugeKb());
    }
  }
  return 0;
}

}  // namespace
}  // namespace rfrpc

int main(int argc, char** argv) {
  rfrpc::bench::Init(&argc, &argv);
  return rfrpc::Run();
}
