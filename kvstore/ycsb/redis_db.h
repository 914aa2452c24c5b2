// Copyright 2026 The rfrpc Authors.
//
// The "redis" YCSB driver, on hiredis. A record is a Redis hash (field ->
// value); every key is also a member of the sorted set "_indices" (score 0,
// so members sort by key) to serve Scan with ZRANGEBYLEX. The table name is
// not part of the key, as in Java YCSB's redis binding.
//
//   Read    HGETALL, or HMGET of the wanted fields
//   Insert  HSET of all fields + ZADD _indices (one round trip, pipelined)
//   Update  HSET of the given fields (like Java's binding, this also creates
//           a missing record)
//   Delete  DEL + ZREM
//   Scan    ZRANGEBYLEX _indices [start + LIMIT 0 count, then HGETALL/HMGET
//           of each key, pipelined
//
// Properties:
//   redis.host        Default: 127.0.0.1
//   redis.port        Default: 6379
//   redis.password    AUTH password. Default: none
//   redis.timeout_ms  connect and command timeout. Default: 2000
//
// A lost connection fails the operation with SERVICE_UNAVAILABLE; the next
// operation reconnects.
//
// Pipelined (`outstanding` > 1): ReadAsync / UpdateAsync / InsertAsync append
// their commands to hiredis's output buffer and return; Poll() sends what is
// buffered, waits for the oldest operation's replies (Redis answers in
// order) and completes it. A synchronous call (Scan, Delete) first completes
// every pending operation, so replies never go to the wrong caller.
//
// Thread-safety: one RedisDb per client thread (it owns its connection).

#ifndef RFRPC_KVSTORE_YCSB_REDIS_DB_H_
#define RFRPC_KVSTORE_YCSB_REDIS_DB_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kvstore/ycsb/db.h"
#include "kvstore/ycsb/properties.h"

struct redisContext;
struct redisReply;

namespace rfrpc {
namespace ycsb {

struct RedisOptions {
  // Default: "127.0.0.1".
  std::string host = "127.0.0.1";
  // Default: 6379.
  int port = 6379;
  // Default: "" (no AUTH).
  std::string password;
  // Default: 2000.
  int64_t timeout_ms = 2000;

  // Reads the redis.* properties; InvalidArgument naming the property's
  // origin for a malformed value.
  static absl::StatusOr<RedisOptions> FromProperties(const Properties& p);
};

class RedisDb final : public DB {
 public:
  // The sorted set holding every key, for Scan.
  static constexpr char kIndexKey[] = "_indices";

  explicit RedisDb(RedisOptions options);
  ~RedisDb() override;
  RedisDb(const RedisDb&) = delete;
  RedisDb& operator=(const RedisDb&) = delete;

  // Connects (and authenticates); Unavailable if the server does not answer.
  absl::Status Init() override;
  absl::Status Cleanup() override;

  absl::Status Read(absl::string_view table, absl::string_view key,
                    const std::vector<std::string>* fields,
                    Record* result) override;
  absl::Status Scan(absl::string_view table, absl::string_view start_key,
                    int64_t count, const std::vector<std::string>* fields,
                    std::vector<Record>* result) override;
  absl::Status Update(absl::string_view table, absl::string_view key,
                      const Record& values) override;
  absl::Status Insert(absl::string_view table, absl::string_view key,
                      const Record& values) override;
  absl::Status Delete(absl::string_view table, absl::string_view key) override;

  bool SupportsAsync() const override { return true; }
  void ReadAsync(absl::string_view table, absl::string_view key,
                 const std::vector<std::string>* fields, Record* result,
                 Done done) override;
  void UpdateAsync(absl::string_view table, absl::string_view key,
                   const Record& values, Done done) override;
  void InsertAsync(absl::string_view table, absl::string_view key,
                   const Record& values, Done done) override;
  bool Poll() override;

 private:
  using Args = std::vector<std::string>;
  // An async operation whose commands are sent; `finish` turns its replies
  // (still owned by the caller) into the operation's status.
  struct Pending {
    size_t replies = 0;
    std::function<absl::Status(const std::vector<redisReply*>&)> finish;
    Done done;
  };

  // Appends `commands` and queues `p` for them; on a connection error runs
  // p.done with it at once.
  void Append(const std::vector<Args>& commands, Pending p);
  // Reads the oldest pending operation's replies and completes it; on a
  // connection error fails it and every other pending operation.
  void CompleteOldest();

  absl::Status Connect();
  void Disconnect();
  // Buffers `commands` on the connection (hiredis sends them on the next
  // read of a reply).
  void AppendCommands(const std::vector<Args>& commands);
  // Sends all `commands` in one pipeline and returns their replies (caller
  // frees each with freeReplyObject). Reconnects first if needed.
  absl::Status Pipeline(const std::vector<Args>& commands,
                        std::vector<redisReply*>* replies);
  // Fills `*out` from an HGETALL (pairs) or HMGET (values of `fields`) reply;
  // NotFound if the record does not exist.
  static absl::Status ParseRecordReply(const redisReply* reply,
                                       const std::vector<std::string>* fields,
                                       absl::string_view key, Record* out);
  static Args ReadCommand(absl::string_view key,
                          const std::vector<std::string>* fields);

  const RedisOptions options_;
  redisContext* context_ = nullptr;  // Owned.
  std::deque<Pending> pending_;      // Oldest first.
};

}  // namespace ycsb
}  // namespace rfrpc

#endif  // RFRPC_KVSTORE_YCSB_REDIS_DB_H_
