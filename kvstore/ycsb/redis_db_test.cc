// Copyright 2026 The rfrpc Authors.
//
// The redis driver against a real redis-server on 127.0.0.1, started here.

#include "kvstore/ycsb/redis_db.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstore/ycsb/client.h"
#include "kvstore/ycsb/peer_process.h"

namespace rfrpc {
namespace ycsb {
namespace {

using ::testing::HasSubstr;

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// A typo in one of the driver's properties is an error naming it (it was
// ignored: the setting stayed at its default). No server needed.
TEST(RedisOptionsTest, UnknownDriverPropertyIsAnError) {
  Properties p;
  p.Set("redis.prot", "1", "-p");
  absl::StatusOr<RedisOptions> o = RedisOptions::FromProperties(p);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(o.status().message()),
              HasSubstr("-p: unknown property \"redis.prot\""));
  EXPECT_THAT(std::string(o.status().message()), HasSubstr("redis.port"));
}

class RedisDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string binary = FindExecutable("redis-server");
    if (binary.empty()) {
      GTEST_SKIP()
          << "redis-server is not installed (bash tools/setup.sh --peers)";
    }
    absl::StatusOr<std::unique_ptr<PeerProcess>> peer = PeerProcess::Start(
        binary, [](int port, const std::string& dir) {
          return std::vector<std::string>{
              "--port", absl::StrCat(port), "--bind", "127.0.0.1",
              "--save", "", "--appendonly", "no", "--dir", dir,
              "--daemonize", "no", "--logfile", ""};
        });
    ASSERT_TRUE(peer.ok()) << peer.status();
    peer_ = *std::move(peer);
    options_.port = peer_->port();
  }

  std::unique_ptr<PeerProcess> peer_;
  RedisOptions options_;
};

TEST_F(RedisDbTest, ReadInsertUpdateDeleteScan) {
  RedisDb db(options_);
  ASSERT_TRUE(db.Init().ok());
  Record r;
  EXPECT_EQ(db.Read("t", "user1", nullptr, &r).code(),
            absl::StatusCode::kNotFound);
  for (int i = 1; i <= 5; ++i) {
    ASSERT_TRUE(db.Insert("t", absl::StrCat("user", i),
                          {{"f0", absl::StrCat("a", i)}, {"f1", "b"}})
                    .ok());
  }
  ASSERT_TRUE(db.Read("t", "user1", nullptr, &r).ok());
  EXPECT_THAT(r, UnorderedElementsAre(Field{"f0", "a1"}, Field{"f1", "b"}));
  const std::vector<std::string> f0 = {"f0", "missing"};
  ASSERT_TRUE(db.Read("t", "user1", &f0, &r).ok());
  EXPECT_THAT(r, ElementsAre(Field{"f0", "a1"}));

  ASSERT_TRUE(db.Update("t", "user1", {{"f1", "B"}}).ok());
  ASSERT_TRUE(db.Read("t", "user1", nullptr, &r).ok());
  EXPECT_THAT(r, UnorderedElementsAre(Field{"f0", "a1"}, Field{"f1", "B"}));

  std::vector<Record> scanned;
  const std::vector<std::string> only_f0 = {"f0"};
  ASSERT_TRUE(db.Scan("t", "user2", 3, &only_f0, &scanned).ok());
  ASSERT_EQ(scanned.size(), 3u);
  EXPECT_THAT(scanned[0], ElementsAre(Field{"f0", "a2"}));
  EXPECT_THAT(scanned[2], ElementsAre(Field{"f0", "a4"}));

  ASSERT_TRUE(db.Delete("t", "user3").ok());
  EXPECT_EQ(db.Delete("t", "user3").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(db.Scan("t", "user2", 3, nullptr, &scanned).ok());
  ASSERT_EQ(scanned.size(), 3u);
  EXPECT_THAT(scanned[1], UnorderedElementsAre(Field{"f0", "a4"},
                                               Field{"f1", "b"}));
  EXPECT_TRUE(db.Cleanup().ok());
}

TEST_F(RedisDbTest, LostServerIsUnavailable) {
  RedisDb db(options_);
  ASSERT_TRUE(db.Init().ok());
  peer_.reset();
  Record r;
  EXPECT_EQ(db.Read("t", "user1", nullptr, &r).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(db.Init().code(), absl::StatusCode::kUnavailable);
}

TEST_F(RedisDbTest, PipelinedOperationsCompleteInOrderFromPoll) {
  RedisDb db(options_);
  ASSERT_TRUE(db.Init().ok());
  ASSERT_TRUE(db.SupportsAsync());
  std::vector<std::string> order;
  std::vector<absl::Status> statuses;
  auto done = [&](std::string name) {
    return [&, name](absl::Status s) {
      order.push_back(name);
      statuses.push_back(std::move(s));
    };
  };
  const Record a = {{"f0", "a"}};
  const Record b = {{"f0", "b"}};
  Record r1, r2;
  db.InsertAsync("t", "user1", a, done("insert"));
  db.UpdateAsync("t", "user1", b, done("update"));
  db.ReadAsync("t", "user1", nullptr, &r1, done("read"));
  db.ReadAsync("t", "nosuchuser", nullptr, &r2, done("missing"));
  EXPECT_TRUE(order.empty());  // Nothing completes before Poll.
  while (db.Poll()) {
  }
  EXPECT_THAT(order, ElementsAre("insert", "update", "read", "missing"));
  ASSERT_EQ(statuses.size(), 4u);
  EXPECT_TRUE(statuses[0].ok()) << statuses[0];
  EXPECT_TRUE(statuses[1].ok()) << statuses[1];
  EXPECT_TRUE(statuses[2].ok()) << statuses[2];
  EXPECT_THAT(r1, ElementsAre(Field{"f0", "b"}));
  EXPECT_EQ(statuses[3].code(), absl::StatusCode::kNotFound);

  // A synchronous call first completes what is pending.
  order.clear();
  statuses.clear();
  db.ReadAsync("t", "user1", nullptr, &r1, done("read"));
  Record r3;
  ASSERT_TRUE(db.Read("t", "user1", nullptr, &r3).ok());
  EXPECT_THAT(order, ElementsAre("read"));
  EXPECT_FALSE(db.Poll());

  // A lost server fails every pending operation, once.
  order.clear();
  statuses.clear();
  db.ReadAsync("t", "user1", nullptr, &r1, done("a"));
  db.ReadAsync("t", "user1", nullptr, &r2, done("b"));
  peer_.reset();
  while (db.Poll()) {
  }
  EXPECT_THAT(order, ElementsAre("a", "b"));
  for (const absl::Status& s : statuses) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  }
}

TEST_F(RedisDbTest, LoadAndRunWithDataIntegrity) {
  Properties props;
  props.Set("redis.port", absl::StrCat(options_.port));
  WorkloadSpec spec;
  spec.recordcount = 500;
  spec.insertcount = 500;
  spec.operationcount = 2000;
  spec.fieldcount = 2;
  spec.fieldlength = 32;
  spec.readproportion = 0.6;
  spec.updateproportion = 0.2;
  spec.scanproportion = 0.1;
  spec.insertproportion = 0.1;
  spec.maxscanlength = 10;
  spec.requestdistribution = Distribution::kLatest;
  spec.dataintegrity = true;
  spec.threadcount = 2;
  spec.seed = 5;
  ClientOptions options;
  absl::StatusOr<DriverFactory> factory = FindDriver("redis");
  ASSERT_TRUE(factory.ok()) << factory.status();
  options.factory = *factory;

  options.load = true;
  absl::StatusOr<RunResult> load = RunClient(spec, props, options);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_TRUE(load->ok());
  EXPECT_EQ(load->measurements.at("INSERT").returns.at("OK"), 500);

  options.load = false;
  // Synchronous, then pipelined (8 in flight; scans complete the pending
  // operations first and run synchronously in between).
  for (int outstanding : {1, 8}) {
    SCOPED_TRACE(outstanding);
    spec.outstanding = outstanding;
    absl::StatusOr<RunResult> run = RunClient(spec, props, options);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->operations, 2000);
    EXPECT_EQ(run->integrity_failures, 0);
    EXPECT_TRUE(run->ok());
    EXPECT_EQ(run->measurements.at("SCAN").returns.size(), 1u);
    EXPECT_GT(run->measurements.at("SCAN").returns.at("OK"), 0);
    // One completion per operation, each OK.
    int64_t calls = 0;
    for (const char* op : {"READ", "UPDATE", "INSERT", "SCAN"}) {
      const auto& returns = run->measurements.at(op).returns;
      EXPECT_EQ(returns.size(), 1u) << op;
      calls += returns.at("OK");
    }
    EXPECT_EQ(calls, 2000);
  }
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
