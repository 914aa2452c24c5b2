// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/client.h"

#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstore/ycsb/basic_db.h"

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

TEST(ClientTest, MissingFactoryIsInvalidArgument) {
  EXPECT_EQ(RunClient(IntegritySpec(), Properties(), ClientOptions())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
