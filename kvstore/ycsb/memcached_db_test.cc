// Copyright 2026 The rfrpc Authors.
//
// The memcached driver against a real memcached on 127.0.0.1, started here.

#include "kvstore/ycsb/memcached_db.h"

#include <unistd.h>

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

using ::testing::UnorderedElementsAre;

// A typo in one of the driver's properties is an error naming it (it was
// ignored: the setting stayed at its default). No server needed.
TEST(MemcachedOptionsTest, UnknownDriverPropertyIsAnError) {
  Properties p;
  p.Set("memcached.hsts", "1", "-p");
  absl::StatusOr<MemcachedOptions> o = MemcachedOptions::FromProperties(p);
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(o.status().message()),
              HasSubstr("-p: unknown property \"memcached.hsts\""));
  EXPECT_THAT(std::string(o.status().message()), HasSubstr("memcached.hosts"));
}

class MemcachedDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string binary = FindExecutable("memcached");
    if (binary.empty()) {
      GTEST_SKIP() << "memcached is not installed (bash tools/setup.sh --peers)";
    }
    absl::StatusOr<std::unique_ptr<PeerProcess>> peer = PeerProcess::Start(
        binary, [](int port, const std::string&) {
          std::vector<std::string> args = {"-l", "127.0.0.1", "-p",
                                           absl::StrCat(port), "-U", "0",
                                           "-m", "64", "-t", "1"};
          if (geteuid() == 0) {  // memcached refuses root without -u.
            args.push_back("-u");
            args.push_back("root");
          }
          return args;
        });
    ASSERT_TRUE(peer.ok()) << peer.status();
    peer_ = *std::move(peer);
    options_.hosts = absl::StrCat("127.0.0.1:", peer_->port());
  }

  std::unique_ptr<PeerProcess> peer_;
  MemcachedOptions options_;
};

TEST_F(MemcachedDbTest, ReadInsertUpdateDelete) {
  MemcachedDb db(options_);
  ASSERT_TRUE(db.Init().ok());
  Record r;
  EXPECT_EQ(db.Read("t", "user1", nullptr, &r).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(db.Insert("t", "user1", {{"f0", "a"}, {"f1", "b"}}).ok());
  ASSERT_TRUE(db.Read("t", "user1", nullptr, &r).ok());
  EXPECT_THAT(r, UnorderedElementsAre(Field{"f0", "a"}, Field{"f1", "b"}));
  const std::vector<std::string> f1 = {"f1"};
  ASSERT_TRUE(db.Read("t", "user1", &f1, &r).ok());
  EXPECT_THAT(r, UnorderedElementsAre(Field{"f1", "b"}));

  ASSERT_TRUE(db.Update("t", "user1", {{"f1", "B"}, {"f2", "c"}}).ok());
  ASSERT_TRUE(db.Read("t", "user1", nullptr, &r).ok());
  EXPECT_THAT(r, UnorderedElementsAre(Field{"f0", "a"}, Field{"f1", "B"},
                                      Field{"f2", "c"}));
  EXPECT_EQ(db.Update("t", "nobody", {{"f0", "x"}}).code(),
            absl::StatusCode::kNotFound);

  std::vector<Record> scanned;
  EXPECT_EQ(db.Scan("t", "user1", 10, nullptr, &scanned).code(),
            absl::StatusCode::kUnimplemented);

  ASSERT_TRUE(db.Delete("t", "user1").ok());
  EXPECT_EQ(db.Read("t", "user1", nullptr, &r).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(db.Delete("t", "user1").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(db.Cleanup().ok());
}

TEST_F(MemcachedDbTest, InitFailsWithoutServer) {
  MemcachedOptions options = options_;
  const int port = peer_->port();
  peer_.reset();  // Stop the server.
  options.hosts = absl::StrCat("127.0.0.1:", port);
  options.timeout_ms = 200;
  MemcachedDb db(options);
  absl::Status s = db.Init();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // Which server and why, not only "SOME ERRORS WERE REPORTED".
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("CONNECTION FAILURE,  host: 127.0.0.1:",
                                     port)));
}

TEST_F(MemcachedDbTest, LoadAndRunWithDataIntegrity) {
  Properties props;
  props.Set("memcached.hosts", options_.hosts);
  WorkloadSpec spec;
  spec.recordcount = 500;
  spec.insertcount = 500;
  spec.operationcount = 2000;
  spec.fieldcount = 3;
  spec.fieldlength = 40;
  spec.readproportion = 0.5;
  spec.updateproportion = 0.3;
  spec.readmodifywriteproportion = 0.2;
  spec.requestdistribution = Distribution::kZipfian;
  spec.dataintegrity = true;
  spec.threadcount = 2;
  spec.seed = 17;
  ClientOptions options;
  absl::StatusOr<DriverFactory> factory = FindDriver("memcached");
  ASSERT_TRUE(factory.ok()) << factory.status();
  options.factory = *factory;

  options.load = true;
  absl::StatusOr<RunResult> load = RunClient(spec, props, options);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_TRUE(load->ok());
  EXPECT_EQ(load->operations, 500);
  EXPECT_EQ(load->measurements.at("INSERT").returns.at("OK"), 500);

  options.load = false;
  absl::StatusOr<RunResult> run = RunClient(spec, props, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->operations, 2000);
  EXPECT_EQ(run->integrity_failures, 0);
  EXPECT_TRUE(run->ok());
  const OpStats& verify = run->measurements.at("VERIFY");
  EXPECT_EQ(verify.returns.size(), 1u);
  EXPECT_GT(verify.returns.at("OK"), 500);
  EXPECT_EQ(run->measurements.at("READ").returns.count("NOT_FOUND"), 0u);
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
