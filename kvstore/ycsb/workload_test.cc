// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/workload.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstore/ycsb/basic_db.h"
#include "kvstore/ycsb/properties.h"

namespace rfrpc {
namespace ycsb {
namespace {

using ::testing::IsEmpty;

WorkloadSpec SmallSpec() {
  WorkloadSpec spec;
  spec.recordcount = 200;
  spec.insertcount = 200;
  spec.operationcount = 1000;
  spec.fieldcount = 3;
  spec.fieldlength = 24;
  spec.dataintegrity = true;
  return spec;
}

// Reference values computed independently with Java's rules (String.hashCode
// appended as a signed decimal int).
TEST(CoreWorkloadTest, DeterministicValuesMatchJavaYcsb) {
  WorkloadSpec spec = SmallSpec();
  spec.fieldlength = 32;
  auto w = CoreWorkload::Create(spec);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->BuildDeterministicValue("user1", "field3"),
            "user1:field3:1621652141:42713932");
  spec.fieldlength = 100;
  w = CoreWorkload::Create(spec);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->BuildDeterministicValue("user6284781860667377211", "field0"),
            "user6284781860667377211:field0:1106546143:680040890:-1813823343:"
            "-1693248218:-1278633925:-150907434:-");
  spec.fieldlength = 4;
  w = CoreWorkload::Create(spec);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->BuildDeterministicValue("user1", "field0"), "user");
}

TEST(CoreWorkloadTest, StandardWorkloadFilesParseCleanly) {
  for (const char* name : {"workloada", "workloadb", "workloadc", "workloadd",
                           "workloade", "workloadf", "paper", "paper_zipf"}) {
    Properties props;
    ASSERT_TRUE(
        props.LoadFile(std::string("kvstore/workloads/") + name).ok())
        << name;
    std::vector<std::string> warnings;
    absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(props, {}, &warnings);
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    EXPECT_THAT(warnings, IsEmpty()) << name;
    EXPECT_TRUE(CoreWorkload::Create(*spec).ok()) << name;
  }
  Properties props;
  ASSERT_TRUE(props.LoadFile("kvstore/workloads/paper_zipf").ok());
  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(props, {}, nullptr);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->requestdistribution, Distribution::kZipfian);
  EXPECT_DOUBLE_EQ(spec->zipfianconstant, 0.99);
  auto w = CoreWorkload::Create(*spec);
  ASSERT_TRUE(w.ok());
  CoreWorkload::ThreadState state = (*w)->NewThreadState(1);
  const std::string key = (*w)->BuildKeyName(12345);
  EXPECT_EQ(key.size(), 16u);
  const Record values = (*w)->BuildValues(key, state);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].value.size(), 32u);
}

TEST(CoreWorkloadTest, OperationMixFollowsProportions) {
  WorkloadSpec spec = SmallSpec();
  spec.readproportion = 0.5;
  spec.updateproportion = 0.2;
  spec.scanproportion = 0.1;
  spec.insertproportion = 0.1;
  spec.readmodifywriteproportion = 0.1;
  auto w = CoreWorkload::Create(spec);
  ASSERT_TRUE(w.ok());
  CoreWorkload::ThreadState state = (*w)->NewThreadState(3);
  std::map<Operation, int> counts;
  for (int i = 0; i < 100000; ++i) ++counts[(*w)->NextOperation(state)];
  EXPECT_NEAR(counts[Operation::kRead], 50000, 1000);
  EXPECT_NEAR(counts[Operation::kUpdate], 20000, 1000);
  EXPECT_NEAR(counts[Operation::kScan], 10000, 1000);
  EXPECT_NEAR(counts[Operation::kInsert], 10000, 1000);
  EXPECT_NEAR(counts[Operation::kReadModifyWrite], 10000, 1000);
}

TEST(CoreWorkloadTest, KeysStayInTheLoadedRange) {
  for (Distribution d :
       {Distribution::kUniform, Distribution::kZipfian, Distribution::kLatest,
        Distribution::kHotspot, Distribution::kSequential,
        Distribution::kExponential}) {
    WorkloadSpec spec = SmallSpec();
    spec.requestdistribution = d;
    auto w = CoreWorkload::Create(spec);
    ASSERT_TRUE(w.ok());
    CoreWorkload::ThreadState state = (*w)->NewThreadState(9);
    for (int i = 0; i < 10000; ++i) {
      const int64_t k = (*w)->NextKeynum(state);
      ASSERT_GE(k, 0) << DistributionName(d);
      ASSERT_LT(k, 200) << DistributionName(d);
    }
  }
}

TEST(CoreWorkloadTest, LoadThenTransactionsVerify) {
  WorkloadSpec spec = SmallSpec();
  spec.readproportion = 0.4;
  spec.updateproportion = 0.2;
  spec.insertproportion = 0.1;
  spec.scanproportion = 0.1;
  spec.readmodifywriteproportion = 0.2;
  spec.maxscanlength = 5;
  auto w = CoreWorkload::Create(spec);
  ASSERT_TRUE(w.ok());
  auto store = std::make_shared<MemoryStore>();
  BasicDb basic(store);
  Measurements m;
  MeasuredDb db(&basic, &m);
  CoreWorkload::ThreadState state = (*w)->NewThreadState(4);
  for (int i = 0; i < 200; ++i) ASSERT_TRUE((*w)->DoInsert(db, state).ok());
  EXPECT_EQ(store->Size("usertable"), 200);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_TRUE((*w)->DoTransaction(db, state).ok());
  }
  MeasurementSnapshot s;
  m.MergeTotalInto(&s);
  EXPECT_EQ(s["VERIFY"].returns.size(), 1u);
  EXPECT_GT(s["VERIFY"].returns["OK"], 500);
  EXPECT_EQ(s["READ"].returns.size(), 1u);  // All OK.
  EXPECT_GT(s["READ-MODIFY-WRITE"].latency_ns.count(), 0);
  EXPECT_GT(s["SCAN"].returns["OK"], 0);
  EXPECT_GT(store->Size("usertable"), 200);  // Run-phase inserts.
}

TEST(CoreWorkloadTest, CorruptedRecordFailsVerification) {
  WorkloadSpec spec = SmallSpec();
  spec.recordcount = spec.insertcount = 1;
  spec.readproportion = 1;
  spec.updateproportion = 0;
  auto w = CoreWorkload::Create(spec);
  ASSERT_TRUE(w.ok());
  auto store = std::make_shared<MemoryStore>();
  BasicDb basic(store);
  Measurements m;
  MeasuredDb db(&basic, &m);
  CoreWorkload::ThreadState state = (*w)->NewThreadState(4);
  ASSERT_TRUE((*w)->DoInsert(db, state).ok());
  const std::string key = (*w)->BuildKeyName(0);
  ASSERT_TRUE(store->Update("usertable", key, {{"field1", "garbage"}}).ok());
  ASSERT_TRUE((*w)->DoTransaction(db, state).ok());
  ASSERT_TRUE(store->Delete("usertable", key).ok());
  ASSERT_TRUE((*w)->DoTransaction(db, state).ok());
  MeasurementSnapshot s;
  m.MergeTotalInto(&s);
  EXPECT_EQ(s["VERIFY"].returns["UNEXPECTED_STATE"], 1);
  EXPECT_EQ(s["VERIFY"].returns["ERROR"], 1);
  EXPECT_EQ(s["READ"].returns["NOT_FOUND"], 1);
  EXPECT_EQ(s["READ-FAILED"].latency_ns.count(), 1);
}

// The counts say how often an operation failed; stderr says why, once per
// operation and return code: without NoteFirstFailure nothing is printed.
TEST(RecordCallTest, TheFirstFailureOfEachKindIsPrintedOnce) {
  // Operation names of this test only: the record is process-wide.
  Measurements m;
  ::testing::internal::CaptureStderr();
  RecordCall(&m, "FIRST_A", absl::InvalidArgumentError("value too large"), 10);
  RecordCall(&m, "FIRST_A", absl::InvalidArgumentError("value too large"), 10);
  RecordCall(&m, "FIRST_A", absl::NotFoundError("no such key"), 10);
  RecordCall(&m, "FIRST_B", absl::InvalidArgumentError("bad key"), 10);
  RecordCall(&m, "FIRST_B", absl::OkStatus(), 10);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "ycsb: first FIRST_A that failed (BAD_REQUEST): INVALID_ARGUMENT: "
            "value too large\n"
            "ycsb: first FIRST_A that failed (NOT_FOUND): NOT_FOUND: no such "
            "key\n"
            "ycsb: first FIRST_B that failed (BAD_REQUEST): INVALID_ARGUMENT: "
            "bad key\n");
  MeasurementSnapshot snap;
  m.MergeTotalInto(&snap);
  EXPECT_EQ(snap["FIRST_A"].returns["BAD_REQUEST"], 2);
}

// A run of SERVICE_UNAVAILABLE returns is timed from its first call's
// start; any other return (OK, or an answer such as NOT_FOUND) ends it. The
// client loop stops a thread on it (client_test).
TEST(RecordCallTest, TracksHowLongEveryCallWasUnavailable) {
  Measurements m;
  EXPECT_EQ(m.unavailable_since_ns(), 0);
  ::testing::internal::CaptureStderr();
  const int64_t before = NowNanos();
  RecordCall(&m, "UNAV_A", absl::UnavailableError("lost"), 1000);
  const int64_t since = m.unavailable_since_ns();
  EXPECT_GE(since, before - 1000);
  EXPECT_LE(since, NowNanos());
  RecordCall(&m, "UNAV_A", absl::DeadlineExceededError("late"), 10);
  EXPECT_EQ(m.unavailable_since_ns(), since);  // Still the same run.
  RecordCall(&m, "UNAV_A", absl::NotFoundError("no such key"), 10);
  EXPECT_EQ(m.unavailable_since_ns(), 0);
  RecordCall(&m, "UNAV_A", absl::UnavailableError("lost"), 10);
  EXPECT_NE(m.unavailable_since_ns(), 0);
  RecordCall(&m, "UNAV_A", absl::OkStatus(), 10);
  EXPECT_EQ(m.unavailable_since_ns(), 0);
  ::testing::internal::GetCapturedStderr();
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
