// Copyright 2026 The rfrpc Authors.
//
// kvstore_server's flag checks (kv_flags.h), against the limits they stand
// for: the server's message bound and the store's partitions.

#include "kvstore/server/kv_flags.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kvstore/server/jakiro_service.h"
#include "kvstore/server/message_limits.h"
#include "kvstore/store/partition.h"
#include "rpc/options.h"

namespace rfrpc {
namespace kvstore {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(KvFlagsTest, AcceptsDefaultsAndBounds) {
  EXPECT_TRUE(CheckKvFlags(64, 32 << 10).ok());
  EXPECT_TRUE(CheckKvFlags(1, 1).ok());
  EXPECT_TRUE(CheckKvFlags(kMaxKvMemoryMb, MaxKvValueBytes()).ok());
}

TEST(KvFlagsTest, RefusesNonPositive) {
  absl::Status s = CheckKvFlags(0, 1024);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--kv_memory_mb=0"));
  s = CheckKvFlags(64, -5);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--kv_max_value_bytes=-5"));
}

// A value near 4 GiB wrapped in a 32-bit message size (4294967200 + 272 =
// 176), and 2000000000 was refused under a limit the user never set.
TEST(KvFlagsTest, RefusesValuesWhoseMessagesExceedTheServerLimit) {
  EXPECT_EQ(MaxKvValueBytes(), (uint64_t{1} << 30) - 272);
  for (int64_t v : {int64_t{4294967200}, int64_t{2000000000},
                    static_cast<int64_t>(MaxKvValueBytes()) + 1}) {
    const absl::Status s = CheckKvFlags(64, v);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << v;
    EXPECT_THAT(s.message(),
                HasSubstr(absl::StrCat("--kv_max_value_bytes=", v, " is above ",
                                       MaxKvValueBytes())));
    EXPECT_THAT(s.message(), Not(HasSubstr("max_request_bytes")));
  }
}

// kServerMaxMessageBytes is the bound ValidateServerOptions enforces.
TEST(KvFlagsTest, LargestValueFitsServerOptions) {
  ServerOptions so;
  const uint64_t needed = JakiroMaxMessageBytes(MaxKvValueBytes());
  ASSERT_EQ(needed, kServerMaxMessageBytes);
  RaiseMessageLimits(&so, static_cast<uint32_t>(needed), "--rfrpc_server_");
  EXPECT_TRUE(ValidateServerOptions(so).ok()) << ValidateServerOptions(so);
  so.max_request_bytes = static_cast<uint32_t>(needed + 1);
  EXPECT_EQ(ValidateServerOptions(so).code(),
            absl::StatusCode::kInvalidArgument);
}

// --kv_memory_mb=40000 passed the flag check and failed in the store
// without naming the flag.
TEST(KvFlagsTest, RefusesMemoryTheStoreRefuses) {
  const absl::Status s = CheckKvFlags(40000, 1024);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--kv_memory_mb=40000 is above 32767"));
  EXPECT_EQ(CheckKvFlags(kMaxKvMemoryMb + 1, 1024).code(),
            absl::StatusCode::kInvalidArgument);
  // One MiB more is what the store refuses (before allocating anything).
  PartitionOptions po;
  po.memory_bytes = static_cast<size_t>(kMaxKvMemoryMb + 1) << 20;
  po.max_value_bytes = 1024;
  EXPECT_EQ(Partition::Create(po).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --kv_memory_mb=1 gives 256 KiB segments: a 2 MB max value was accepted
// and every Put of a large value failed later.
TEST(KvFlagsTest, RefusesValuesLargerThanASegment) {
  JakiroServiceOptions kv;
  kv.memory_bytes_per_partition = size_t{1} << 20;
  kv.max_value_bytes = 2000000;
  absl::StatusOr<std::unique_ptr<JakiroService>> service =
      JakiroService::Create(kv);
  ASSERT_TRUE(service.ok()) << service.status();
  const size_t segment = (*service)->segment_bytes();
  EXPECT_EQ(segment, size_t{262144});
  const absl::Status s = CheckValueFitsSegment(1, 2000000, segment);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--kv_max_value_bytes=2000000"));
  EXPECT_THAT(s.message(), HasSubstr("--kv_memory_mb=1"));
  EXPECT_THAT(s.message(), HasSubstr("the largest value that fits is 261878"));
  EXPECT_TRUE(CheckValueFitsSegment(1, 261878, segment).ok());
  EXPECT_FALSE(CheckValueFitsSegment(1, 261879, segment).ok());

  // The bound is the store's: with the longest key, 261878 fits, one more
  // does not.
  PartitionOptions po;
  po.memory_bytes = kv.memory_bytes_per_partition;
  po.max_value_bytes = kv.max_value_bytes;
  absl::StatusOr<std::unique_ptr<Partition>> p = Partition::Create(po);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string key(Partition::kMaxKeyBytes, 'k');
  EXPECT_TRUE((*p)->Put(key, std::string(261878, 'v')).ok());
  EXPECT_EQ((*p)->Put(key, std::string(261879, 'v')).code(),
            absl::StatusCode::kResourceExhausted);

  // The default segment (1 MiB at 64 MiB) holds the default max value.
  kv.memory_bytes_per_partition = size_t{64} << 20;
  kv.max_value_bytes = 32 << 10;
  service = JakiroService::Create(kv);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_TRUE(
      CheckValueFitsSegment(64, 32 << 10, (*service)->segment_bytes()).ok());
}

TEST(KvFlagsTest, RefusesPositionalArguments) {
  char prog[] = "kvstore_server";
  char extra[] = "extra_positional_arg";
  char* argv[] = {prog, extra, nullptr};
  EXPECT_TRUE(CheckNoPositionalArgs(1, argv).ok());
  const absl::Status s = CheckNoPositionalArgs(2, argv);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("\"extra_positional_arg\""));
}

}  // namespace
}  // namespace kvstore
}  // namespace rfrpc
