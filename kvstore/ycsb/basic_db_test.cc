// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/basic_db.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstore/ycsb/db.h"

namespace rfrpc {
namespace ycsb {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BasicDbTest, StoresReadsUpdatesDeletes) {
  BasicDb db(std::make_shared<MemoryStore>());
  ASSERT_TRUE(db.Init().ok());
  Record r;
  EXPECT_EQ(db.Read("t", "k", nullptr, &r).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(db.Insert("t", "k", {{"a", "1"}, {"b", "2"}}).ok());
  ASSERT_TRUE(db.Read("t", "k", nullptr, &r).ok());
  EXPECT_THAT(r, ElementsAre(Field{"a", "1"}, Field{"b", "2"}));
  const std::vector<std::string> b = {"b"};
  ASSERT_TRUE(db.Read("t", "k", &b, &r).ok());
  EXPECT_THAT(r, ElementsAre(Field{"b", "2"}));
  // Tables are separate.
  EXPECT_EQ(db.Read("other", "k", nullptr, &r).code(),
            absl::StatusCode::kNotFound);

  ASSERT_TRUE(db.Update("t", "k", {{"b", "3"}, {"c", "4"}}).ok());
  ASSERT_TRUE(db.Read("t", "k", nullptr, &r).ok());
  EXPECT_THAT(r, ElementsAre(Field{"a", "1"}, Field{"b", "3"}, Field{"c", "4"}));
  EXPECT_EQ(db.Update("t", "missing", {{"a", "x"}}).code(),
            absl::StatusCode::kNotFound);

  ASSERT_TRUE(db.Delete("t", "k").ok());
  EXPECT_EQ(db.Delete("t", "k").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(db.Cleanup().ok());
}

TEST(BasicDbTest, ScanIsOrderedFromStartKey) {
  BasicDb db(std::make_shared<MemoryStore>());
  for (const char* k : {"user3", "user1", "user5", "user2", "user4"}) {
    ASSERT_TRUE(db.Insert("t", k, {{"f", k}}).ok());
  }
  std::vector<Record> out;
  ASSERT_TRUE(db.Scan("t", "user2", 3, nullptr, &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0][0].value, "user2");
  EXPECT_EQ(out[2][0].value, "user4");
  ASSERT_TRUE(db.Scan("t", "user45", 10, nullptr, &out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0].value, "user5");
}

TEST(RegistryTest, BasicIsRegisteredAndOthersCanRegister) {
  EXPECT_THAT(RegisteredDrivers(), Contains("basic"));
  ASSERT_TRUE(RegisterDriver(
      "registry_test_driver",
      [](const Properties&) -> absl::StatusOr<std::unique_ptr<DB>> {
        return std::make_unique<BasicDb>(std::make_shared<MemoryStore>());
      }));
  absl::StatusOr<DriverFactory> f = FindDriver("registry_test_driver");
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE((*f)(Properties()).ok());
  absl::StatusOr<DriverFactory> missing = FindDriver("nosuchdb");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("basic"));
}

TEST(RegistryTest, BasicStoreIsSharedByName) {
  Properties p;
  p.Set("basic.store", "registry_test");
  absl::StatusOr<DriverFactory> f = FindDriver("basic");
  ASSERT_TRUE(f.ok());
  absl::StatusOr<std::unique_ptr<DB>> a = (*f)(p), b = (*f)(p);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Insert("t", "k", {{"f", "v"}}).ok());
  Record r;
  EXPECT_TRUE((*b)->Read("t", "k", nullptr, &r).ok());
}

TEST(ReturnNameTest, MapsStatusCodesToYcsbNames) {
  EXPECT_EQ(YcsbReturnName(absl::OkStatus()), "OK");
  EXPECT_EQ(YcsbReturnName(absl::NotFoundError("")), "NOT_FOUND");
  EXPECT_EQ(YcsbReturnName(absl::UnimplementedError("")), "NOT_IMPLEMENTED");
  EXPECT_EQ(YcsbReturnName(absl::FailedPreconditionError("")),
            "UNEXPECTED_STATE");
  EXPECT_EQ(YcsbReturnName(absl::InvalidArgumentError("")), "BAD_REQUEST");
  EXPECT_EQ(YcsbReturnName(absl::PermissionDeniedError("")), "FORBIDDEN");
  EXPECT_EQ(YcsbReturnName(absl::UnavailableError("")), "SERVICE_UNAVAILABLE");
  EXPECT_EQ(YcsbReturnName(absl::InternalError("")), "ERROR");
}

}  // namespace
}  // namespace ycsb
}  // namespace rfrpc
