// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/redis_db.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace rfrpc {
namespace ycsb {
namespace {

absl::Status BadProperty(const Properties::Entry& e, absl::string_view key,
                         absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      e.origin, ": ", key, ": expected ", expected, ", got \"", e.value, "\""));
}

// Frees every reply when it goes out of scope.
struct Replies {
  std::vector<redisReply*> replies;
  ~Replies() {
    for (redisReply* r : replies) {
      if (r != nullptr) freeReplyObject(r);
    }
  }
};

absl::Status ReplyError(const redisReply* r, absl::string_view what) {
  if (r->type == REDIS_REPLY_ERROR) {
    return absl::InternalError(absl::StrCat(
        "redis ", what, ": ", absl::string_view(r->str, r->len)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RedisOptions> RedisOptions::FromProperties(const Properties& p) {
  static constexpr absl::string_view kKnown[] = {
      "redis.host",
      "redis.port",
      "redis.password",
      "redis.timeout_ms",
  };
  if (absl::Status s = CheckDriverProperties(p, "redis.", kKnown); !s.ok()) {
    return s;
  }
  RedisOptions o;
  if (const Properties::Entry* e = p.Find("redis.host")) {
    o.host = std::string(absl::StripAsciiWhitespace(e->value));
    if (o.host.empty()) return BadProperty(*e, "redis.host", "a host name");
  }
  if (const Properties::Entry* e = p.Find("redis.port")) {
    if (!absl::SimpleAtoi(e->value, &o.port) || o.port <= 0 ||
        o.port > 65535) {
      return BadProperty(*e, "redis.port", "port number");
    }
  }
  if (const Properties::Entry* e = p.Find("redis.password")) {
    o.password = e->value;
  }
  if (const Properties::Entry* e = p.Find("redis.timeout_ms")) {
    if (!absl::SimpleAtoi(e->value, &o.timeout_ms) || o.timeout_ms <= 0) {
      return BadProperty(*e, "redis.timeout_ms", "positive integer");
    }
  }
  return o;
}

RedisDb::RedisDb(RedisOptions options) : options_(std::move(options)) {}

RedisDb::~RedisDb() { Disconnect(); }

void RedisDb::Disconnect() {
  if (context_ != nullptr) {
    redisFree(context_);
    context_ = nullptr;
  }
}

absl::Status RedisDb::Connect() {
  Disconnect();
  struct timeval tv;
  tv.tv_sec = options_.timeout_ms / 1000;
  tv.tv_usec = (options_.timeout_ms % 1000) * 1000;
  context_ = redisConnectWithTimeout(options_.host.c_str(), options_.port, tv);
  const std::string where = absl::StrCat(options_.host, ":", options_.port);
  if (context_ == nullptr) {
    return absl::ResourceExhaustedError("redis: cannot allocate a context");
  }
  if (context_->err) {
    absl::Status s = absl::UnavailableError(
        absl::StrCat("redis: connect to ", where, ": ", context_->errstr));
    Disconnect();
    return s;
  }
  redisSetTimeout(context_, tv);
  if (!options_.password.empty()) {
    Replies r;
    absl::Status s = Pipeline({{"AUTH", options_.password}}, &r.replies);
    if (!s.ok()) return s;
    if (r.replies[0]->type == REDIS_REPLY_ERROR) {
      return absl::PermissionDeniedError(absl::StrCat(
          "redis AUTH: ",
          absl::string_view(r.replies[0]->str, r.replies[0]->len)));
    }
  }
  return absl::OkStatus();
}

absl::Status RedisDb::Init() {
  absl::Status s = Connect();
  if (!s.ok()) return s;
  Replies r;
  s = Pipeline({{"PING"}}, &r.replies);
  if (!s.ok()) return s;
  return ReplyError(r.replies[0], "PING");
}

absl::Status RedisDb::Cleanup() {
  Disconnect();
  return absl::OkStatus();
}

void RedisDb::AppendCommands(const std::vector<Args>& commands) {
  std::vector<const char*> argv;
  std::vector<size_t> argvlen;
  for (const Args& args : commands) {
    argv.clear();
    argvlen.clear();
    for (const std::string& a : args) {
      argv.push_back(a.data());
      argvlen.push_back(a.size());
    }
    redisAppendCommandArgv(context_, static_cast<int>(argv.size()),
                           argv.data(), argvlen.data());
  }
}

absl::Status RedisDb::Pipeline(const std::vector<Args>& commands,
                               std::vector<redisReply*>* replies) {
  while (!pending_.empty()) CompleteOldest();  // Their replies come first.
  if (context_ == nullptr || context_->err) {
    absl::Status s = Connect();
    if (!s.ok()) return s;
  }
  AppendCommands(commands);
  for (size_t i = 0; i < commands.size(); ++i) {
    void* reply = nullptr;
    if (redisGetReply(context_, &reply) != REDIS_OK || reply == nullptr) {
      absl::Status s = absl::UnavailableError(
          absl::StrCat("redis ", commands[i][0], ": ", context_->errstr));
      Disconnect();  // The stream is out of step; reconnect next time.
      return s;
    }
    replies->push_back(static_cast<redisReply*>(reply));
  }
  return absl::OkStatus();
}

RedisDb::Args RedisDb::ReadCommand(absl::string_view key,
                                   const std::vector<std::string>* fields) {
  if (fields == nullptr) return {"HGETALL", std::string(key)};
  Args args = {"HMGET", std::string(key)};
  args.insert(args.end(), fields->begin(), fields->end());
  return args;
}

absl::Status RedisDb::ParseRecordReply(const redisReply* reply,
                                       const std::vector<std::string>* fields,
                                       absl::string_view key, Record* out) {
  out->clear();
  absl::Status s = ReplyError(reply, "read");
  if (!s.ok()) return s;
  if (reply->type != REDIS_REPLY_ARRAY) {
    return absl::InternalError("redis read: unexpected reply type");
  }
  if (fields == nullptr) {
    for (size_t i = 0; i + 1 < reply->elements; i += 2) {
      const redisReply* f = reply->element[i];
      const redisReply* v = reply->element[i + 1];
      out->push_back({std::string(f->str, f->len), std::string(v->str, v->len)});
    }
  } else {
    for (size_t i = 0; i < reply->elements && i < fields->size(); ++i) {
      const redisReply* v = reply->element[i];
      if (v->type == REDIS_REPLY_STRING) {
        out->push_back({(*fields)[i], std::string(v->str, v->len)});
      }
    }
  }
  // Redis has no empty hashes: no fields means no record.
  if (out->empty()) return absl::NotFoundError(key);
  return absl::OkStatus();
}

absl::Status RedisDb::Read(absl::string_view table, absl::string_view key,
                           const std::vector<std::string>* fields,
                           Record* result) {
  result->clear();
  Replies r;
  absl::Status s = Pipeline({ReadCommand(key, fields)}, &r.replies);
  if (!s.ok()) return s;
  return ParseRecordReply(r.replies[0], fields, key, result);
}

absl::Status RedisDb::Scan(absl::string_view table,
                           absl::string_view start_key, int64_t count,
                           const std::vector<std::string>* fields,
                           std::vector<Record>* result) {
  result->clear();
  Replies keys;
  absl::Status s = Pipeline({{"ZRANGEBYLEX", kIndexKey,
                              absl::StrCat("[", start_key), "+", "LIMIT", "0",
                              absl::StrCat(count)}},
                            &keys.replies);
  if (!s.ok()) return s;
  const redisReply* list = keys.replies[0];
  s = ReplyError(list, "ZRANGEBYLEX");
  if (!s.ok()) return s;
  if (list->type != REDIS_REPLY_ARRAY) {
    return absl::InternalError("redis ZRANGEBYLEX: unexpected reply type");
  }
  std::vector<Args> reads;
  std::vector<std::string> names;
  for (size_t i = 0; i < list->elements; ++i) {
    names.emplace_back(list->element[i]->str, list->element[i]->len);
    reads.push_back(ReadCommand(names.back(), fields));
  }
  if (reads.empty()) return absl::OkStatus();
  Replies records;
  s = Pipeline(reads, &records.replies);
  if (!s.ok()) return s;
  for (size_t i = 0; i < records.replies.size(); ++i) {
    Record record;
    s = ParseRecordReply(records.replies[i], fields, names[i], &record);
    if (s.ok()) {
      result->push_back(std::move(record));
    } else if (!absl::IsNotFound(s)) {
      return s;  // Deleted since the index was read: skipped.
    }
  }
  return absl::OkStatus();
}

absl::Status RedisDb::Update(absl::string_view table, absl::string_view key,
                             const Record& values) {
  Args hset = {"HSET", std::string(key)};
  for (const Field& f : values) {
    hset.push_back(f.name);
    hset.push_back(f.value);
  }
  Replies r;
  absl::Status s = Pipeline({hset}, &r.replies);
  if (!s.ok()) return s;
  return ReplyError(r.replies[0], "HSET");
}

absl::Status RedisDb::Insert(absl::string_view table, absl::string_view key,
                             const Record& values) {
  Args hset = {"HSET", std::string(key)};
  for (const Field& f : values) {
    hset.push_back(f.name);
    hset.push_back(f.value);
  }
  Replies r;
  absl::Status s =
      Pipeline({hset, {"ZADD", kIndexKey, "0", std::string(key)}}, &r.replies);
  if (!s.ok()) return s;
  s = ReplyError(r.replies[0], "HSET");
  if (!s.ok()) return s;
  return ReplyError(r.replies[1], "ZADD");
}

absl::Status RedisDb::Delete(absl::string_view table, absl::string_view key) {
  Replies r;
  absl::Status s = Pipeline(
      {{"DEL", std::string(key)}, {"ZREM", kIndexKey, std::string(key)}},
      &r.replies);
  if (!s.ok()) return s;
  s = ReplyError(r.replies[0], "DEL");
  if (!s.ok()) return s;
  if (r.replies[0]->type == REDIS_REPLY_INTEGER && r.replies[0]->integer == 0) {
    return absl::NotFoundError(key);
  }
  return ReplyError(r.replies[1], "ZREM");
}

void RedisDb::Append(const std::vector<Args>& commands, Pending p) {
  if (context_ == nullptr || context_->err) {
    // Nothing can be pending on a failed connection (CompleteOldest failed
    // them all), so reconnecting loses no reply.
    absl::Status s = Connect();
    if (!s.ok()) return p.done(s);
  }
  AppendCommands(commands);
  p.replies = commands.size();
  pending_.push_back(std::move(p));
}

void RedisDb::CompleteOldest() {
  Pending p = std::move(pending_.front());
  pending_.pop_front();
  Replies r;
  for (size_t i = 0; i < p.replies; ++i) {
    void* reply = nullptr;
    if (redisGetReply(context_, &reply) != REDIS_OK || reply == nullptr) {
      const absl::Status s = absl::UnavailableError(
          absl::StrCat("redis (pipelined): ", context_->errstr));
      Disconnect();  // The stream is out of step: fail everything sent.
      p.done(s);
      while (!pending_.empty()) {
        Pending rest = std::move(pending_.front());
        pending_.pop_front();
        rest.done(s);
      }
      return;
    }
    r.replies.push_back(static_cast<redisReply*>(reply));
  }
  absl::Status s = p.finish(r.replies);
  p.done(std::move(s));
}

bool RedisDb::Poll() {
  if (pending_.empty()) return false;
  CompleteOldest();  // Sends the buffered commands, blocks for one answer.
  return true;
}

void RedisDb::ReadAsync(absl::string_view table, absl::string_view key,
                        const std::vector<std::string>* fields, Record* result,
                        Done done) {
  result->clear();
  Pending p;
  p.finish = [fields, key, result](const std::vector<redisReply*>& replies) {
    return ParseRecordReply(replies[0], fields, key, result);
  };
  p.done = std::move(done);
  Append({ReadCommand(key, fields)}, std::move(p));
}

void RedisDb::UpdateAsync(absl::string_view table, absl::string_view key,
                          const Record& values, Done done) {
  Args hset = {"HSET", std::string(key)};
  for (const Field& f : values) {
    hset.push_back(f.name);
    hset.push_back(f.value);
  }
  Pending p;
  p.finish = [](const std::vector<redisReply*>& replies) {
    return ReplyError(replies[0], "HSET");
  };
  p.done = std::move(done);
  Append({hset}, std::move(p));
}

void RedisDb::InsertAsync(absl::string_view table, absl::string_view key,
                          const Record& values, Done done) {
  Args hset = {"HSET", std::string(key)};
  for (const Field& f : values) {
    hset.push_back(f.name);
    hset.push_back(f.value);
  }
  Pending p;
  p.finish = [](const std::vector<redisReply*>& replies) {
    absl::Status s = ReplyError(replies[0], "HSET");
    if (!s.ok()) return s;
    return ReplyError(replies[1], "ZADD");
  };
  p.done = std::move(done);
  Append({hset, {"ZADD", kIndexKey, "0", std::string(key)}}, std::move(p));
}

namespace {

[[maybe_unused]] const bool kRegistered = RegisterDriver(
    "redis", [](const Properties& props) -> absl::StatusOr<std::unique_ptr<DB>> {
      absl::StatusOr<RedisOptions> options = RedisOptions::FromProperties(props);
      if (!options.ok()) return options.status();
      return std::make_unique<RedisDb>(*std::move(options));
    });

}  // namespace

}  // namespace ycsb
}  // namespace rfrpc
