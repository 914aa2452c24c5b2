// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/client.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstore/ycsb/basic_db.h"
#include "kvstore/ycsb/workload.h"

namespace rfrpc {
namespace ycsb {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

WorkloadSpec IntegritySpec() {
  WorkloadSpec spec;
  spec.recordcount = 1000;
  spec.insertcount = 1000;
  spec.operationcount = 4000;
  spec.fieldcount = 4;
  spec.fieldlength = 50;
  spec.readproportion = 0.5;
  spec.updateproportion = 0.25;
  spec.readmodifywriteproportion = 0.15;
  spec.insertproportion = 0.1;
  spec.requestdistribution = Distribution::kZipfian;
  spec.dataintegrity = true;
  spec.threadcount = 4;
  spec.seed = 42;
  return spec;
}

DriverFactory FactoryFor(std::shared_ptr<MemoryStore> store) {
  return [store](const Properties&) -> absl::StatusOr<std::unique_ptr<DB>> {
    return std::make_unique<BasicDb>(store);
  };
}

TEST(ClientTest, LoadThenRunWithDataIntegrity) {
  auto store = std::make_shared<MemoryStore>();
  ClientOptions options;
  options.factory = FactoryFor(store);
  const WorkloadSpec spec = IntegritySpec();

  options.load = true;
  absl::StatusOr<RunResult> load = RunClient(spec, Properties(), options);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_TRUE(load->ok());
  EXPECT_EQ(load->operations, 1000);
  EXPECT_EQ(store->Size("usertable"), 1000);
  EXPECT_EQ(load->measurements.at("INSERT").returns.at("OK"), 1000);
  EXPECT_EQ(load->measurements.at("CLEANUP").latency_ns.count(), 4);

  options.load = false;
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->ok()) << run->integrity_failures;
  EXPECT_EQ(run->operations, 4000);
  EXPECT_EQ(run->integrity_failures, 0);
  const OpStats& verify = run->measurements.at("VERIFY");
  EXPECT_EQ(verify.returns.size(), 1u);
  // Every read, including those inside read-modify-writes, was verified.
  EXPECT_EQ(verify.returns.at("OK"),
            run->measurements.at("READ").latency_ns.count());
  EXPECT_GT(store->Size("usertable"), 1000);

  std::ostringstream report;
  ExportReport(*run, spec, report);
  const std::vector<std::string> lines =
      absl::StrSplit(report.str(), '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 2u);
  EXPECT_TRUE(std::regex_match(lines[0],
                               std::regex(R"(\[OVERALL\], RunTime\(ms\), \d+)")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(
      lines[1],
      std::regex(R"(\[OVERALL\], Throughput\(ops/sec\), \d+\.\d+(E\d+)?)")))
      << lines[1];
  const std::regex line(
      R"(\[[A-Z-]+\], (Operations|AverageLatency\(us\)|MinLatency\(us\)|)"
      R"(MaxLatency\(us\)|95thPercentileLatency\(us\)|)"
      R"(99thPercentileLatency\(us\)|99\.9thPercentileLatency\(us\)|)"
      R"(Return=[A-Z_]+), [0-9.E-]+)");
  for (size_t i = 2; i < lines.size(); ++i) {
    EXPECT_TRUE(std::regex_match(lines[i], line)) << lines[i];
  }
  EXPECT_THAT(lines, Contains("[READ], Return=OK, " +
                              std::to_string(verify.returns.at("OK"))));
  EXPECT_THAT(lines, Contains(HasSubstr("[VERIFY], Return=OK, ")));
  EXPECT_THAT(lines, Contains(HasSubstr("[READ-MODIFY-WRITE], Operations, ")));
}

// Returns wrong data for one field of every record.
class CorruptingDb final : public DB {
 public:
  explicit CorruptingDb(std::shared_ptr<MemoryStore> store) : inner_(store) {}
  absl::Status Read(absl::string_view t, absl::string_view k,
                    const std::vector<std::string>* f, Record* r) override {
    absl::Status s = inner_.Read(t, k, f, r);
    if (s.ok() && !r->empty()) r->back().value[0] ^= 1;
    return s;
  }
  absl::Status Scan(absl::string_view t, absl::string_view k, int64_t n,
                    const std::vector<std::string>* f,
                    std::vector<Record>* r) override {
    return inner_.Scan(t, k, n, f, r);
  }
  absl::Status Update(absl::string_view t, absl::string_view k,
                      const Record& v) override {
    return inner_.Update(t, k, v);
  }
  absl::Status Insert(absl::string_view t, absl::string_view k,
                      const Record& v) override {
    return inner_.Insert(t, k, v);
  }
  absl::Status Delete(absl::string_view t, absl::string_view k) override {
    return inner_.Delete(t, k);
  }

 private:
  BasicDb inner_;
};

TEST(ClientTest, IntegrityMismatchFailsTheRun) {
  auto store = std::make_shared<MemoryStore>();
  WorkloadSpec spec = IntegritySpec();
  spec.threadcount = 2;
  ClientOptions options;
  options.factory = FactoryFor(store);
  options.load = true;
  ASSERT_TRUE(RunClient(spec, Properties(), options).ok());
  options.load = false;
  options.factory = [store](const Properties&)
      -> absl::StatusOr<std::unique_ptr<DB>> {
    return std::make_unique<CorruptingDb>(store);
  };
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_FALSE(run->ok());
  EXPECT_EQ(run->integrity_failures,
            run->measurements.at("READ").latency_ns.count());
  EXPECT_EQ(run->measurements.at("VERIFY").returns.at("UNEXPECTED_STATE"),
            run->integrity_failures);
}

class FailingDb final : public DB {
 public:
  explicit FailingDb(bool fail_init) : fail_init_(fail_init) {}
  absl::Status Init() override {
    return fail_init_ ? absl::UnavailableError("no server") : absl::OkStatus();
  }
  absl::Status Read(absl::string_view, absl::string_view,
                    const std::vector<std::string>*, Record*) override {
    return absl::InternalError("read");
  }
  absl::Status Scan(absl::string_view, absl::string_view, int64_t,
                    const std::vector<std::string>*,
                    std::vector<Record>*) override {
    return absl::UnimplementedError("scan");
  }
  absl::Status Update(absl::string_view, absl::string_view,
                      const Record&) override {
    return absl::InternalError("update");
  }
  absl::Status Insert(absl::string_view, absl::string_view,
                      const Record&) override {
    return absl::InternalError("insert failed");
  }
  absl::Status Delete(absl::string_view, absl::string_view) override {
    return absl::InternalError("delete");
  }

 private:
  bool fail_init_;
};

// A database whose every operation returns one status, SCAN its own: one
// that went away (UNAVAILABLE, as an rfrpc channel's calls once its server
// died), a server of another service (UNIMPLEMENTED, as an rfrpc server
// answers a method it does not have), or a driver whose keys have no order
// (only SCAN is UNIMPLEMENTED). Async calls complete inline.
class FixedStatusDb final : public DB {
 public:
  FixedStatusDb(bool async, absl::Status others, absl::Status scan)
      : async_(async), others_(std::move(others)), scan_(std::move(scan)) {}
  FixedStatusDb(bool async, const absl::Status& all)
      : FixedStatusDb(async, all, all) {}
  absl::Status Read(absl::string_view, absl::string_view,
                    const std::vector<std::string>*, Record*) override {
    return others_;
  }
  absl::Status Scan(absl::string_view, absl::string_view, int64_t,
                    const std::vector<std::string>*,
                    std::vector<Record>*) override {
    return scan_;
  }
  absl::Status Update(absl::string_view, absl::string_view,
                      const Record&) override {
    return others_;
  }
  absl::Status Insert(absl::string_view, absl::string_view,
                      const Record&) override {
    return others_;
  }
  absl::Status Delete(absl::string_view, absl::string_view) override {
    return others_;
  }
  bool SupportsAsync() const override { return async_; }

 private:
  const bool async_;
  const absl::Status others_;
  const absl::Status scan_;
};

// A run whose database is unreachable stops after unavailable_stop_ns and
// fails, sync and pipelined, instead of counting failures to the end.
TEST(ClientTest, AnUnreachableDatabaseStopsTheRunAndFailsIt) {
  for (const bool async : {false, true}) {
    ClientOptions options;
    options.unavailable_stop_ns = 50'000'000;  // 50 ms.
    options.factory =
        [async](const Properties&) -> absl::StatusOr<std::unique_ptr<DB>> {
      return std::make_unique<FixedStatusDb>(
          async, absl::UnavailableError("connection lost"));
    };
    WorkloadSpec spec = IntegritySpec();
    spec.dataintegrity = false;
    spec.threadcount = 2;
    spec.operationcount = 0;     // Unlimited: only the stop ends it...
    spec.maxexecutiontime = 20;  // ...or this, which would fail the test.
    spec.outstanding = async ? 8 : 1;
    const int64_t start = NowNanos();
    absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_LT(NowNanos() - start, int64_t{10'000'000'000}) << async;
    EXPECT_FALSE(run->timed_out) << async;
    EXPECT_FALSE(run->ok()) << async;
    ASSERT_EQ(run->thread_errors.size(), 2u) << async;
    EXPECT_THAT(run->thread_errors[0],
                HasSubstr("returned SERVICE_UNAVAILABLE: the database is "
                          "unreachable"))
        << async;
  }
}

// A run against a database that does not serve its operations stops at the
// first NOT_IMPLEMENTED and fails, sync and pipelined (it counted them to
// the end and exited 0). A SCAN that is NOT_IMPLEMENTED (a driver whose keys
// have no order, warned of before the run) is counted and the run goes on.
TEST(ClientTest, ADatabaseThatDoesNotServeTheOperationsStopsTheRun) {
  for (const bool async : {false, true}) {
    for (const bool scan_only : {false, true}) {
      ClientOptions options;
      options.factory = [async, scan_only](const Properties&)
          -> absl::StatusOr<std::unique_ptr<DB>> {
        const absl::Status unimplemented =
            absl::UnimplementedError("no method with id 0x1 on this server");
        return std::make_unique<FixedStatusDb>(
            async, scan_only ? absl::OkStatus() : unimplemented,
            unimplemented);
      };
      WorkloadSpec spec = IntegritySpec();
      spec.dataintegrity = false;
      spec.threadcount = 2;
      spec.readproportion = 0.5;
      spec.updateproportion = 0;
      spec.readmodifywriteproportion = 0;
      spec.insertproportion = 0;
      spec.scanproportion = 0.5;
      spec.operationcount = scan_only ? 400 : 0;  // 0: only a stop ends it...
      spec.maxexecutiontime = 20;  // ...or this, which would fail the test.
      spec.outstanding = async ? 8 : 1;
      absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
      ASSERT_TRUE(run.ok()) << run.status();
      EXPECT_FALSE(run->timed_out) << async << scan_only;
      if (scan_only) {
        EXPECT_TRUE(run->ok()) << async;
        EXPECT_TRUE(run->thread_errors.empty()) << async;
        continue;
      }
      EXPECT_FALSE(run->ok()) << async;
      ASSERT_EQ(run->thread_errors.size(), 2u) << async;
      EXPECT_THAT(run->thread_errors[0],
                  HasSubstr("returned NOT_IMPLEMENTED: the database does not "
                            "serve it"))
          << async;
    }
  }
}

TEST(ClientTest, InitFailureIsReturned) {
  ClientOptions options;
  options.factory = [](const Properties&) -> absl::StatusOr<std::unique_ptr<DB>> {
    return std::make_unique<FailingDb>(true);
  };
  absl::StatusOr<RunResult> run = RunClient(IntegritySpec(), Properties(), options);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(run.status().message(), HasSubstr("driver Init failed"));
}

TEST(ClientTest, FailedLoadInsertStopsThreadAndFailsRun) {
  ClientOptions options;
  options.load = true;
  options.factory = [](const Properties&) -> absl::StatusOr<std::unique_ptr<DB>> {
    return std::make_unique<FailingDb>(false);
  };
  WorkloadSpec spec = IntegritySpec();
  spec.threadcount = 2;
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_FALSE(run->ok());
  EXPECT_EQ(run->thread_errors.size(), 2u);
  EXPECT_THAT(run->thread_errors[0], HasSubstr("insert failed"));
  EXPECT_EQ(run->measurements.at("INSERT").returns.at("ERROR"), 2);
  EXPECT_EQ(run->measurements.at("INSERT-FAILED").latency_ns.count(), 2);
}

TEST(ClientTest, FailedRunOperationsAreCountedNotFatal) {
  ClientOptions options;
  options.factory = [](const Properties&) -> absl::StatusOr<std::unique_ptr<DB>> {
    return std::make_unique<FailingDb>(false);
  };
  WorkloadSpec spec = IntegritySpec();
  spec.dataintegrity = false;
  spec.operationcount = 100;
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->ok());
  EXPECT_EQ(run->operations, 100);
  EXPECT_GT(run->measurements.at("READ").returns.at("ERROR"), 0);
}

TEST(ClientTest, MaxExecutionTimeStopsAnUnlimitedRunAndStatusIsPrinted) {
  auto store = std::make_shared<MemoryStore>();
  WorkloadSpec spec = IntegritySpec();
  spec.threadcount = 2;
  spec.target = 2000;  // Keep the CPU free for others.
  ClientOptions options;
  options.factory = FactoryFor(store);
  options.load = true;
  ASSERT_TRUE(RunClient(spec, Properties(), options).ok());

  spec.operationcount = 0;  // Unlimited.
  spec.maxexecutiontime = 1;
  spec.label = "test: ";
  std::ostringstream status;
  options.load = false;
  options.status = true;
  options.status_out = &status;
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->timed_out);
  EXPECT_GE(run->runtime_ms, 1000);
  EXPECT_GT(run->operations, 0);
  EXPECT_TRUE(run->ok());
  EXPECT_THAT(status.str(), HasSubstr("test: "));
  EXPECT_THAT(status.str(), HasSubstr(" sec: "));
  EXPECT_THAT(status.str(), HasSubstr(" operations; "));
  EXPECT_THAT(status.str(), HasSubstr("[READ: Count="));
}

TEST(ClientTest, TargetThrottlesThroughput) {
  auto store = std::make_shared<MemoryStore>();
  WorkloadSpec spec = IntegritySpec();
  spec.threadcount = 2;
  spec.recordcount = spec.insertcount = 100;
  spec.target = 400;  // 100 inserts at 400/s take at least ~250 ms.
  ClientOptions options;
  options.factory = FactoryFor(store);
  options.load = true;
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->operations, 100);
  EXPECT_GE(run->runtime_ms, 240);
}

// An async driver over MemoryStore whose operations run when they complete:
// from Poll() (newest first, so completions come back out of order, on the
// client thread), or, with `threaded`, on a completion thread of its own that
// picks a random pending operation each time.
class AsyncMemoryDb final : public DB {
 public:
  AsyncMemoryDb(std::shared_ptr<MemoryStore> store, bool threaded,
                std::atomic<int>* max_in_flight)
      : inner_(store), threaded_(threaded), max_in_flight_(max_in_flight) {
    if (threaded_) completer_ = std::thread([this] { CompleteLoop(); });
  }
  ~AsyncMemoryDb() override {
    if (!threaded_) return;
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.notify_all();
    completer_.join();
  }

  absl::Status Read(absl::string_view t, absl::string_view k,
                    const std::vector<std::string>* f, Record* r) override {
    return inner_.Read(t, k, f, r);
  }
  absl::Status Scan(absl::string_view t, absl::string_view k, int64_t n,
                    const std::vector<std::string>* f,
                    std::vector<Record>* r) override {
    return inner_.Scan(t, k, n, f, r);
  }
  absl::Status Update(absl::string_view t, absl::string_view k,
                      const Record& v) override {
    return inner_.Update(t, k, v);
  }
  absl::Status Insert(absl::string_view t, absl::string_view k,
                      const Record& v) override {
    return inner_.Insert(t, k, v);
  }
  absl::Status Delete(absl::string_view t, absl::string_view k) override {
    return inner_.Delete(t, k);
  }

  bool SupportsAsync() const override { return true; }
  void ReadAsync(absl::string_view t, absl::string_view k,
                 const std::vector<std::string>* f, Record* r,
                 Done done) override {
    Add([=] { done(inner_.Read(t, k, f, r)); });
  }
  void UpdateAsync(absl::string_view t, absl::string_view k, const Record& v,
                   Done done) override {
    Add([=, &v] { done(inner_.Update(t, k, v)); });
  }
  void InsertAsync(absl::string_view t, absl::string_view k, const Record& v,
                   Done done) override {
    Add([=, &v] { done(inner_.Insert(t, k, v)); });
  }
  bool Poll() override {
    if (threaded_) return false;
    std::function<void()> task;
    {
      MutexLock lock(&mu_);
      if (pending_.empty()) return false;
      task = std::move(pending_.back());
      pending_.pop_back();
    }
    task();
    return true;
  }

 private:
  void Add(std::function<void()> task) {
    {
      MutexLock lock(&mu_);
      pending_.push_back(std::move(task));
      int seen = max_in_flight_->load();
      const int now = static_cast<int>(pending_.size());
      while (now > seen && !max_in_flight_->compare_exchange_weak(seen, now)) {
      }
    }
    cv_.notify_one();
  }
  void CompleteLoop() {
    std::mt19937 rng(7);
    for (;;) {
      std::function<void()> task;
      {
        MutexLock lock(&mu_);
        // rfrpc::Mutex (not absl's): ThreadSanitizer sees through it.
        mu_.Await(&cv_, [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stop_ || !pending_.empty();
        });
        if (pending_.empty()) return;  // Stopped with nothing left.
        const size_t i = rng() % pending_.size();
        task = std::move(pending_[i]);
        pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
      }
      task();
    }
  }

  BasicDb inner_;
  const bool threaded_;
  std::atomic<int>* const max_in_flight_;
  Mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread completer_;
};

// Every operation came back exactly once: each READ/UPDATE/INSERT/SCAN call
// has one Return= count, and a read-modify-write is one READ and one UPDATE.
int64_t CountedCalls(const RunResult& run) {
  int64_t n = 0;
  for (const char* op : {"READ", "UPDATE", "INSERT", "SCAN"}) {
    auto it = run.measurements.find(op);
    if (it == run.measurements.end()) continue;
    for (const auto& [name, count] : it->second.returns) n += count;
  }
  return n;
}

int64_t Count(const RunResult& run, const std::string& op) {
  auto it = run.measurements.find(op);
  return it == run.measurements.end() ? 0 : it->second.latency_ns.count();
}

TEST(ClientTest, PipelinedRunKeepsIntegrityAndLosesNoCompletion) {
  for (bool threaded : {false, true}) {
    SCOPED_TRACE(threaded ? "completion thread" : "completed in Poll");
    auto store = std::make_shared<MemoryStore>();
    std::atomic<int> max_in_flight{0};
    WorkloadSpec spec = IntegritySpec();
    spec.outstanding = 8;
    ClientOptions options;
    options.factory = [&](const Properties&)
        -> absl::StatusOr<std::unique_ptr<DB>> {
      return std::make_unique<AsyncMemoryDb>(store, threaded, &max_in_flight);
    };
    options.load = true;
    absl::StatusOr<RunResult> load = RunClient(spec, Properties(), options);
    ASSERT_TRUE(load.ok()) << load.status();
    EXPECT_EQ(load->operations, 1000);
    EXPECT_EQ(max_in_flight.load(), 0);  // The load phase is synchronous.

    options.load = false;
    absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE(run->ok()) << run->integrity_failures << " "
                           << (run->thread_errors.empty()
                                   ? ""
                                   : run->thread_errors[0]);
    EXPECT_EQ(run->operations, 4000);
    const int64_t rmw = Count(*run, "READ-MODIFY-WRITE");
    EXPECT_GT(rmw, 0);
    EXPECT_EQ(CountedCalls(*run), 4000 + rmw);
    EXPECT_EQ(run->measurements.at("VERIFY").returns.size(), 1u);
    EXPECT_EQ(run->measurements.at("VERIFY").returns.at("OK"),
              Count(*run, "READ"));
    EXPECT_GT(store->Size("usertable"), 1000);  // Inserts landed.
    EXPECT_LE(max_in_flight.load(), 8);
    if (!threaded) {
      // Completions only come from Poll, so a thread fills its window first.
      EXPECT_EQ(max_in_flight.load(), 8);
    }
  }
}

TEST(ClientTest, PipelinedRunChoosesTheSameOperationsAsSynchronous) {
  // One thread, one seed, no inserts (whose acknowledgement timing moves the
  // key range): the pipelined loop draws the same operations and keys.
  WorkloadSpec spec = IntegritySpec();
  spec.threadcount = 1;
  spec.insertproportion = 0;
  std::map<std::string, int64_t> counts[2];
  for (int outstanding : {1, 16}) {
    auto store = std::make_shared<MemoryStore>();
    std::atomic<int> max_in_flight{0};
    spec.outstanding = outstanding;
    ClientOptions options;
    options.factory = [&](const Properties&)
        -> absl::StatusOr<std::unique_ptr<DB>> {
      return std::make_unique<AsyncMemoryDb>(store, false, &max_in_flight);
    };
    options.load = true;
    ASSERT_TRUE(RunClient(spec, Properties(), options).ok());
    options.load = false;
    absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE(run->ok());
    for (const char* op : {"READ", "UPDATE", "READ-MODIFY-WRITE", "VERIFY"}) {
      counts[outstanding > 1][op] = Count(*run, op);
    }
  }
  EXPECT_EQ(counts[0], counts[1]);
  EXPECT_GT(counts[0]["READ-MODIFY-WRITE"], 0);
}

TEST(ClientTest, PipelinedRunStopsAtMaxExecutionTimeAndDrains) {
  auto store = std::make_shared<MemoryStore>();
  std::atomic<int> max_in_flight{0};
  WorkloadSpec spec = IntegritySpec();
  spec.threadcount = 2;
  spec.outstanding = 4;
  spec.target = 2000;  // Keep the CPU free for others.
  ClientOptions options;
  options.factory = [&](const Properties&)
      -> absl::StatusOr<std::unique_ptr<DB>> {
    return std::make_unique<AsyncMemoryDb>(store, true, &max_in_flight);
  };
  options.load = true;
  ASSERT_TRUE(RunClient(spec, Properties(), options).ok());
  spec.operationcount = 0;  // Unlimited.
  spec.maxexecutiontime = 1;
  options.load = false;
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->timed_out);
  EXPECT_TRUE(run->ok());
  EXPECT_GT(run->operations, 0);
  EXPECT_EQ(CountedCalls(*run),
            run->operations + Count(*run, "READ-MODIFY-WRITE"));
}

TEST(ClientTest, SynchronousDriverRunsAtDepthOne) {
  WorkloadSpec spec = IntegritySpec();
  spec.outstanding = 8;
  BasicDb basic(std::make_shared<MemoryStore>());
  std::atomic<int> unused{0};
  AsyncMemoryDb async(std::make_shared<MemoryStore>(), false, &unused);
  EXPECT_EQ(OperationsInFlight(spec, /*load=*/false, basic), 1);
  EXPECT_EQ(OperationsInFlight(spec, /*load=*/false, async), 8);
  EXPECT_EQ(OperationsInFlight(spec, /*load=*/true, async), 1);
}

TEST(ClientTest, ThreadcountThatDoesNotFitAnIntIsRefused) {
  // Used to be cast to 0 threads: a run that did nothing and succeeded.
  auto store = std::make_shared<MemoryStore>();
  ClientOptions options;
  options.load = true;
  options.factory = FactoryFor(store);
  WorkloadSpec spec = IntegritySpec();
  spec.threadcount = int64_t{1} << 32;
  absl::StatusOr<RunResult> result = RunClient(spec, Properties(), options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(),
            "threadcount 4294967296 is outside [1, 4096]");
  EXPECT_EQ(store->Size("usertable"), 0);
}

TEST(ClientTest, CheckRunnableNamesTheProperty) {
  EXPECT_TRUE(CheckRunnable(IntegritySpec()).ok());
  WorkloadSpec spec = IntegritySpec();
  spec.recordcount = 0;
  EXPECT_EQ(CheckRunnable(spec).message(),
            "recordcount: must be at least 1, got 0");
  spec = IntegritySpec();
  spec.insertcount = 0;
  EXPECT_THAT(CheckRunnable(spec).message(),
              HasSubstr("insertcount: must be at least 1, got 0"));
  spec = IntegritySpec();
  spec.keylength = 99999999;
  EXPECT_EQ(CheckRunnable(spec).message(),
            "keylength 99999999 is outside [0, 1024]");
  spec = IntegritySpec();
  spec.zeropadding = 65;
  EXPECT_EQ(CheckRunnable(spec).code(), absl::StatusCode::kInvalidArgument);
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

TEST(ClientTest, CheckExportFileRefusesWhatCannotBeWritten) {
  EXPECT_TRUE(CheckExportFile("").ok());
  const absl::Status missing = CheckExportFile("/nonexistent_dir/out");
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(),
              HasSubstr("exportfile: cannot write \"/nonexistent_dir/out\""));
  const std::string dir = TempPath("");
  EXPECT_EQ(CheckExportFile(dir).code(), absl::StatusCode::kInvalidArgument);
  // A new file is probed and removed; an existing one is left intact.
  const std::string fresh = TempPath("fresh_report");
  std::remove(fresh.c_str());
  EXPECT_TRUE(CheckExportFile(fresh).ok());
  EXPECT_FALSE(std::ifstream(fresh).good());
  const std::string old = TempPath("old_report");
  std::ofstream(old) << "earlier\n";
  EXPECT_TRUE(CheckExportFile(old).ok());
  std::ifstream in(old);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "earlier");
  EXPECT_TRUE(CheckExportFile("/dev/null").ok());
}

// Keys without order, as memcached's and Jakiro's: Scan is Unimplemented.
class NoScanDb final : public DB {
 public:
  explicit NoScanDb(std::shared_ptr<MemoryStore> store) : inner_(store) {}
  absl::Status Read(absl::string_view t, absl::string_view k,
                    const std::vector<std::string>* f, Record* r) override {
    return inner_.Read(t, k, f, r);
  }
  absl::Status Scan(absl::string_view, absl::string_view, int64_t,
                    const std::vector<std::string>*,
                    std::vector<Record>*) override {
    return absl::UnimplementedError("no key order");
  }
  absl::Status Update(absl::string_view t, absl::string_view k,
                      const Record& v) override {
    return inner_.Update(t, k, v);
  }
  absl::Status Insert(absl::string_view t, absl::string_view k,
                      const Record& v) override {
    return inner_.Insert(t, k, v);
  }
  absl::Status Delete(absl::string_view t, absl::string_view k) override {
    return inner_.Delete(t, k);
  }
  bool SupportsScan() const override { return false; }

 private:
  BasicDb inner_;
};

TEST(ClientTest, ScansAgainstADriverThatCannotScanAreRefused) {
  // Used to run every SCAN as NOT_IMPLEMENTED and succeed, having done
  // nothing.
  auto store = std::make_shared<MemoryStore>();
  WorkloadSpec spec = IntegritySpec();
  spec.db = "noscan";
  spec.dataintegrity = false;
  spec.readproportion = spec.updateproportion = spec.insertproportion =
      spec.readmodifywriteproportion = 0;
  spec.scanproportion = 1;
  NoScanDb no_scan(store);
  BasicDb basic(store);
  std::string warning = "stale";
  const absl::Status refused =
      CheckDriverCanRun(spec, /*load=*/false, no_scan, &warning);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(),
              HasSubstr("scanproportion=1: driver \"noscan\" cannot scan"));
  EXPECT_EQ(warning, "");
  EXPECT_TRUE(CheckDriverCanRun(spec, /*load=*/true, no_scan).ok());
  EXPECT_TRUE(CheckDriverCanRun(spec, /*load=*/false, basic, &warning).ok());
  EXPECT_EQ(warning, "");
  WorkloadSpec no_scans = IntegritySpec();
  EXPECT_TRUE(CheckDriverCanRun(no_scans, /*load=*/false, no_scan).ok());
  // Scans among other operations run, as in Java YCSB (each SCAN counted
  // as NOT_IMPLEMENTED), with a warning.
  WorkloadSpec mixed = spec;
  mixed.insertproportion = 0.05;
  mixed.scanproportion = 0.95;
  EXPECT_TRUE(CheckDriverCanRun(mixed, /*load=*/false, no_scan, &warning).ok());
  EXPECT_THAT(warning, HasSubstr("every SCAN will return NOT_IMPLEMENTED"));

  ClientOptions options;
  options.factory =
      [store](const Properties&) -> absl::StatusOr<std::unique_ptr<DB>> {
    return std::make_unique<NoScanDb>(store);
  };
  absl::StatusOr<RunResult> run = RunClient(spec, Properties(), options);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("cannot scan"));
  spec.operationcount = 100;
  options.load = true;
  ASSERT_TRUE(RunClient(spec, Properties(), options).ok());
  options.load = false;
  run = RunClient(mixed, Properties(), options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_GT(run->measurements.at("SCAN").returns.at("NOT_IMPLEMENTED"), 0);
}

TEST(ClientTest, MissingFactoryIsInvalidArgument) {
  EXPECT_EQ(RunClient(IntegritySpec(), Properties(), ClientOptions())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
