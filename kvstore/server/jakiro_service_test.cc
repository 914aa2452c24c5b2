// Copyright 2026 The rfrpc Authors.
//
// JakiroService handlers called directly, as a server worker would call them.

#include "kvstore/server/jakiro_service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "kvstore/store/key_hash.h"

namespace rfrpc {
namespace kvstore {
namespace {

using rfrpc::kv::DeleteRequest;
using rfrpc::kv::DeleteResponse;
using rfrpc::kv::GetRequest;
using rfrpc::kv::GetResponse;
using rfrpc::kv::PutRequest;
using rfrpc::kv::PutResponse;

class JakiroServiceTest : public ::testing::Test {
 protected:
  void Create(int workers, size_t max_value_bytes = 1024) {
    JakiroServiceOptions o;
    o.workers = workers;
    o.memory_bytes_per_partition = size_t{4} << 20;
    o.max_value_bytes = max_value_bytes;
    absl::StatusOr<std::unique_ptr<JakiroService>> s = JakiroService::Create(o);
    ASSERT_TRUE(s.ok()) << s.status();
    service_ = std::move(*s);
  }

  // A context of the worker that owns `key` (or of `worker` if >= 0).
  ServerContext* Ctx(const std::string& key, int worker = -1) {
    if (worker < 0) {
      worker = static_cast<int>(
          PartitionOfHash(KeyHash(key), service_->workers()));
    }
    ctx_.Reset("/rfrpc.kv.Jakiro/Test", "test", worker, absl::Now());
    return &ctx_;
  }

  absl::Status Put(const std::string& key, const std::string& value,
                   int worker = -1) {
    PutRequest req;
    req.set_key(key);
    req.set_value(value);
    PutResponse resp;
    return service_->Put(Ctx(key, worker), &req, &resp);
  }
  absl::Status Get(const std::string& key, std::string* value,
                   int worker = -1) {
    GetRequest req;
    req.set_key(key);
    GetResponse resp;
    absl::Status s = service_->Get(Ctx(key, worker), &req, &resp);
    *value = resp.value();
    return s;
  }
  absl::Status Delete(const std::string& key, int worker = -1) {
    DeleteRequest req;
    req.set_key(key);
    DeleteResponse resp;
    return service_->Delete(Ctx(key, worker), &req, &resp);
  }

  ServerContext ctx_;
  std::unique_ptr<JakiroService> service_;
};

TEST_F(JakiroServiceTest, PutGetOverwriteDelete) {
  Create(1);
  std::string v;
  EXPECT_EQ(Get("user1", &v).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(Put("user1", "alice").ok());
  ASSERT_TRUE(Get("user1", &v).ok());
  EXPECT_EQ(v, "alice");
  ASSERT_TRUE(Put("user1", "bob, a longer value").ok());
  ASSERT_TRUE(Get("user1", &v).ok());
  EXPECT_EQ(v, "bob, a longer value");
  ASSERT_TRUE(Delete("user1").ok());
  EXPECT_EQ(Get("user1", &v).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Delete("user1").code(), absl::StatusCode::kNotFound);
}

TEST_F(JakiroServiceTest, BinaryKeysAndValues) {
  Create(1);
  const std::string key("k\0ey", 4);
  const std::string value("\0\xff\0", 3);
  ASSERT_TRUE(Put(key, value).ok());
  std::string v;
  ASSERT_TRUE(Get(key, &v).ok());
  EXPECT_EQ(v, value);
  EXPECT_EQ(Get(std::string("k"), &v).code(), absl::StatusCode::kNotFound);
}

TEST_F(JakiroServiceTest, EmptyValueIsAValue) {
  Create(1);
  ASSERT_TRUE(Put("k", "").ok());
  std::string v = "x";
  ASSERT_TRUE(Get("k", &v).ok());
  EXPECT_EQ(v, "");
}

TEST_F(JakiroServiceTest, InvalidKeys) {
  Create(1);
  std::string v;
  EXPECT_EQ(Put("", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Get("", &v).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Delete("").code(), absl::StatusCode::kInvalidArgument);
  const std::string longest(Partition::kMaxKeyBytes, 'k');
  EXPECT_TRUE(Put(longest, "v").ok());
  const std::string too_long(Partition::kMaxKeyBytes + 1, 'k');
  EXPECT_EQ(Put(too_long, "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Get(too_long, &v).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(JakiroServiceTest, ValueBeyondTheMaximumIsResourceExhausted) {
  Create(1, /*max_value_bytes=*/100);
  EXPECT_TRUE(Put("k", std::string(100, 'v')).ok());
  absl::Status s = Put("k", std::string(101, 'v'));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  std::string v;
  ASSERT_TRUE(Get("k", &v).ok());  // The old value stays.
  EXPECT_EQ(v.size(), 100u);
}

TEST_F(JakiroServiceTest, MisroutedRequestNamesTheOwner) {
  Create(4);
  // Find a key owned by worker 2 and send it to worker 1.
  std::string key;
  for (int i = 0;; ++i) {
    key = absl::StrCat("user", i);
    if (PartitionOfHash(KeyHash(key), 4) == 2) break;
  }
  absl::Status s = Put(key, "v", /*worker=*/1);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("belongs to worker 2 of 4"), std::string::npos)
      << s;
  std::string v;
  EXPECT_EQ(Get(key, &v, 1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Delete(key, 1).code(), absl::StatusCode::kFailedPrecondition);
  // Routed right, it works, and only partition 2 holds it.
  ASSERT_TRUE(Put(key, "v").ok());
  ASSERT_TRUE(Get(key, &v).ok());
  EXPECT_EQ(service_->partition_stats(2).items, 1u);
  EXPECT_EQ(service_->partition_stats(1).items, 0u);
  EXPECT_EQ(service_->TotalStats().items, 1u);
}

TEST_F(JakiroServiceTest, WorkerBeyondThePartitionsIsInternal) {
  Create(2);
  std::string v;
  EXPECT_EQ(Get("k", &v, /*worker=*/5).code(), absl::StatusCode::kInternal);
}

TEST_F(JakiroServiceTest, ManyKeysSpreadOverPartitions) {
  Create(3);
  for (int i = 0; i < 3000; ++i) {
    ASSERT_TRUE(Put(absl::StrCat("user", i), absl::StrCat("value", i)).ok());
  }
  for (int i = 0; i < 3000; ++i) {
    std::string v;
    ASSERT_TRUE(Get(absl::StrCat("user", i), &v).ok());
    EXPECT_EQ(v, absl::StrCat("value", i));
  }
  for (int w = 0; w < 3; ++w) {
    EXPECT_GT(service_->partition_stats(w).items, 800u) << "partition " << w;
  }
}

TEST(JakiroServiceCreateTest, RejectsBadOptions) {
  JakiroServiceOptions o;
  o.workers = 0;
  EXPECT_EQ(JakiroService::Create(o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(JakiroServiceTest, PublishedStatsFollowEveryCall) {
  Create(2);
  for (int w = 0; w < 2; ++w) {
    const PartitionStats p = service_->PublishedStats(w);
    EXPECT_EQ(p.items, 0u);
    EXPECT_EQ(p.arena_bytes, service_->partition_stats(w).arena_bytes);
    EXPECT_GT(p.index_bytes, 0u);
  }
  std::string v;
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(Put(absl::StrCat("k", i), "v").ok());
  for (int i = 0; i < 80; ++i) (void)Get(absl::StrCat("k", i), &v);  // 30 miss.
  ASSERT_TRUE(Delete("k0").ok());
  // A misrouted call touches no partition.
  EXPECT_EQ(Get("k1", &v, 1 - static_cast<int>(PartitionOfHash(KeyHash("k1"), 2)))
                .code(),
            absl::StatusCode::kFailedPrecondition);
  PartitionStats sum;
  for (int w = 0; w < 2; ++w) {
    const PartitionStats p = service_->PublishedStats(w);
    const PartitionStats& want = service_->partition_stats(w);
    EXPECT_EQ(p.items, want.items);
    EXPECT_EQ(p.live_bytes, want.live_bytes);
    EXPECT_EQ(p.hits, want.hits);
    EXPECT_EQ(p.misses, want.misses);
    sum.items += p.items;
    sum.hits += p.hits;
    sum.misses += p.misses;
    sum.puts += p.puts;
    sum.deletes += p.deletes;
  }
  EXPECT_EQ(sum.items, 49u);
  EXPECT_EQ(sum.hits, 50u);
  EXPECT_EQ(sum.misses, 30u);
  EXPECT_EQ(sum.puts, 50u);
  EXPECT_EQ(sum.deletes, 1u);
}

// Keeps the warnings logged while it is installed.
class WarningSink : public google::LogSink {
 public:
  WarningSink() { google::AddLogSink(this); }
  ~WarningSink() override { google::RemoveLogSink(this); }
  void send(google::LogSeverity severity, const char* /*full_filename*/,
            const char* /*base_filename*/, int /*line*/,
            const struct ::tm* /*tm_time*/, const char* message,
            size_t message_len) override {
    if (severity != google::GLOG_WARNING) return;
    absl::MutexLock lock(&mu_);
    warnings_.emplace_back(message, message_len);
  }
  std::vector<std::string> warnings() {
    absl::MutexLock lock(&mu_);
    return warnings_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> warnings_;
};

// A Put never fails for lack of memory; the partition evicts. The first
// eviction is logged (once per partition), so a user who loaded more than
// the partition holds learns why Gets miss.
TEST_F(JakiroServiceTest, TheFirstEvictionIsLoggedOnce) {
  Create(1);  // 4 MiB.
  WarningSink sink;
  const std::string value(1000, 'v');
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(Put(absl::StrCat("k", i), value).ok());
  }
  EXPECT_TRUE(sink.warnings().empty());
  // 10 MB into 4 MiB.
  for (int i = 100; i < 10000; ++i) {
    ASSERT_TRUE(Put(absl::StrCat("k", i), value).ok());
  }
  const PartitionStats& st = service_->partition_stats(0);
  ASSERT_GT(st.evictions_memory + st.evictions_bucket_full, 0u);
  const std::vector<std::string> w = sink.warnings();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(absl::StrContains(w[0], "partition 0 evicts")) << w[0];
  EXPECT_TRUE(absl::StrContains(w[0], "--kv_memory_mb")) << w[0];
  std::string got;
  EXPECT_EQ(Get("k0", &got).code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace kvstore
}  // namespace rfrpc
