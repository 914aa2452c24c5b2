// Copyright 2026 The rfrpc Authors.
//
// The jakiro YCSB driver: its properties, and every operation against an
// in-process Jakiro server on shm.

#include "kvstore/ycsb/jakiro_db.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kvstore/server/jakiro_service.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/properties.h"
#include "rpc/server.h"

namespace rfrpc {
namespace ycsb {
namespace {

Properties Props(std::vector<std::pair<std::string, std::string>> kv) {
  Properties p;
  for (const auto& [k, v] : kv) p.Set(k, v, "-p");
  return p;
}

TEST(JakiroDbOptionsTest, ParsesProperties) {
  absl::StatusOr<JakiroDbOptions> o = JakiroDbOptions::FromProperties(Props(
      {{"jakiro.servers", "/a.sock, /b.sock"},
       {"jakiro.mode", "server_reply"},
       {"jakiro.batch", "fixed"},
       {"jakiro.batch_size", "8"},
       {"jakiro.batch_timeout_us", "30"},
       {"jakiro.fetch_size", "128"},
       {"jakiro.retries", "3"},
       {"fieldcount", "1"}}));
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->client.servers, (std::vector<std::string>{"/a.sock", "/b.sock"}));
  EXPECT_EQ(o->client.channel.mode, RpcMode::kServerReply);
  EXPECT_EQ(o->client.channel.batch, BatchMode::kFixed);
  EXPECT_EQ(o->client.channel.batch_size, 8);
  EXPECT_EQ(o->client.channel.batch_timeout, absl::Microseconds(30));
  EXPECT_EQ(o->client.channel.fetch_size, 128u);
  EXPECT_EQ(o->client.channel.retries, 3);
  EXPECT_TRUE(o->shared_client);  // Batching shares the client by default.
  EXPECT_EQ(o->fieldcount, 1);
}

TEST(JakiroDbOptionsTest, RejectsBadProperties) {
  EXPECT_EQ(JakiroDbOptions::FromProperties(Props({})).status().code(),
            absl::StatusCode::kInvalidArgument);  // No servers.
  absl::Status s = JakiroDbOptions::FromProperties(
                       Props({{"jakiro.servers", "/a"}, {"jakiro.mdoe", "rf"}}))
                       .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("unknown property \"jakiro.mdoe\""),
            std::string::npos)
      << s;
  s = JakiroDbOptions::FromProperties(
          Props({{"jakiro.servers", "/a"}, {"jakiro.mode", "fast"}}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("-p: jakiro.mode"), std::string::npos) << s;
  s = JakiroDbOptions::FromProperties(
          Props({{"jakiro.servers", "/a"}, {"jakiro.retries", "0"}}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

class JakiroDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kvstore::JakiroServiceOptions o;
    o.workers = 2;
    o.memory_bytes_per_partition = size_t{4} << 20;
    auto s = kvstore::JakiroService::Create(o);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
    ServerOptions so;
    so.workers = 2;
    so.idle_spin_rounds = 100;
    so.idle_yield_rounds = 100;
    server_ = std::make_unique<Server>(so);
    ASSERT_TRUE(server_->RegisterService(service_.get()).ok());
    ASSERT_TRUE(server_->Start().ok());
  }

  std::unique_ptr<DB> NewDb(const std::string& mode) {
    absl::StatusOr<DriverFactory> f = FindDriver("jakiro");
    EXPECT_TRUE(f.ok()) << f.status();
    absl::StatusOr<std::unique_ptr<DB>> db = (*f)(Props(
        {{"jakiro.servers", server_->address()}, {"jakiro.mode", mode},
         {"fieldcount", "2"}}));
    EXPECT_TRUE(db.ok()) << db.status();
    EXPECT_TRUE((*db)->Init().ok());
    return std::move(*db);
  }

  std::unique_ptr<kvstore::JakiroService> service_;
  std::unique_ptr<Server> server_;
};

TEST_F(JakiroDbTest, EveryOperation) {
  for (const char* mode : {"rf", "server_reply", "hybrid"}) {
    SCOPED_TRACE(mode);
    std::unique_ptr<DB> db = NewDb(mode);
    const std::string key = std::string("user") + mode;
    Record r;
    EXPECT_EQ(db->Read("usertable", key, nullptr, &r).code(),
              absl::StatusCode::kNotFound);
    ASSERT_TRUE(
        db->Insert("usertable", key, {{"field0", "a"}, {"field1", "b"}}).ok());
    ASSERT_TRUE(db->Read("usertable", key, nullptr, &r).ok());
    EXPECT_EQ(r, (Record{{"field0", "a"}, {"field1", "b"}}));
    // Updating one field of two keeps the other (get + merge + put).
    ASSERT_TRUE(db->Update("usertable", key, {{"field1", "B"}}).ok());
    const std::vector<std::string> one = {"field1"};
    ASSERT_TRUE(db->Read("usertable", key, &one, &r).ok());
    EXPECT_EQ(r, (Record{{"field1", "B"}}));
    ASSERT_TRUE(db->Read("usertable", key, nullptr, &r).ok());
    EXPECT_EQ(r, (Record{{"field0", "a"}, {"field1", "B"}}));
    // Updating every field replaces the record.
    ASSERT_TRUE(
        db->Update("usertable", key, {{"field0", "x"}, {"field1", "y"}}).ok());
    ASSERT_TRUE(db->Read("usertable", key, nullptr, &r).ok());
    EXPECT_EQ(r, (Record{{"field0", "x"}, {"field1", "y"}}));
    EXPECT_EQ(db->Update("usertable", "nosuchkey", {{"field0", "x"}}).code(),
              absl::StatusCode::kNotFound);
    std::vector<Record> scanned;
    EXPECT_EQ(db->Scan("usertable", key, 10, nullptr, &scanned).code(),
              absl::StatusCode::kUnimplemented);
    ASSERT_TRUE(db->Delete("usertable", key).ok());
    EXPECT_EQ(db->Delete("usertable", key).code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(db->Cleanup().ok());
  }
}

TEST_F(JakiroDbTest, InitFailsNamingAnAbsentServer) {
  absl::StatusOr<DriverFactory> f = FindDriver("jakiro");
  ASSERT_TRUE(f.ok());
  absl::StatusOr<std::unique_ptr<DB>> db =
      (*f)(Props({{"jakiro.servers", "/nonexistent/jakiro.sock"}}));
  ASSERT_TRUE(db.ok());
  absl::Status s = (*db)->Init();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/jakiro.sock"), std::string::npos)
      << s;
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
