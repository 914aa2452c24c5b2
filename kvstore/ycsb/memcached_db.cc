// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/memcached_db.h"

#include <libmemcached/memcached.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kvstore/ycsb/basic_db.h"
#include "kvstore/ycsb/record_codec.h"

namespace rfrpc {
namespace ycsb {
namespace {

absl::Status FromMemcached(memcached_st* memc, memcached_return_t rc,
                           absl::string_view what) {
  if (memcached_success(rc)) return absl::OkStatus();
  std::string message =
      absl::StrCat("memcached ", what, ": ", memcached_strerror(memc, rc));
  // For a failed multi-server call the code says only "SOME ERRORS WERE
  // REPORTED"; the last error says which and why.
  const char* last_error = memcached_last_error_message(memc);
  absl::string_view last = last_error != nullptr ? last_error : "";
  // "(0x7f01b0000b70) CONNECTION FAILURE,  host: h:p -> ./src/...:40": the
  // error's address and libmemcached's source line are noise here.
  if (absl::ConsumePrefix(&last, "(0x")) {
    const size_t close = last.find(") ");
    last = close == absl::string_view::npos ? last : last.substr(close + 2);
  }
  last = last.substr(0, last.find(" -> "));
  if (!last.empty() && last != memcached_strerror(memc, rc)) {
    absl::StrAppend(&message, " (", last, ")");
  }
  switch (rc) {
    case MEMCACHED_NOTFOUND:
      return absl::NotFoundError(message);
    case MEMCACHED_CONNECTION_FAILURE:
    case MEMCACHED_CONNECTION_SOCKET_CREATE_FAILURE:
    case MEMCACHED_HOST_LOOKUP_FAILURE:
    case MEMCACHED_SERVER_MARKED_DEAD:
    case MEMCACHED_SERVER_TEMPORARILY_DISABLED:
    case MEMCACHED_NO_SERVERS:
    case MEMCACHED_TIMEOUT:
    case MEMCACHED_WRITE_FAILURE:
    case MEMCACHED_READ_FAILURE:
    case MEMCACHED_UNKNOWN_READ_FAILURE:
    case MEMCACHED_ERRNO:
    case MEMCACHED_SOME_ERRORS:  // A server of several did not answer.
      return absl::UnavailableError(message);
    case MEMCACHED_DATA_EXISTS:
      return absl::AbortedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status BadProperty(const Properties::Entry& e, absl::string_view key,
                         absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      e.origin, ": ", key, ": expected ", expected, ", got \"", e.value, "\""));
}

}  // namespace

absl::StatusOr<MemcachedOptions> MemcachedOptions::FromProperties(
    const Properties& p) {
  static constexpr absl::string_view kKnown[] = {
      "memcached.hosts",
      "memcached.binary",
      "memcached.timeout_ms",
      "memcached.expiration",
  };
  if (absl::Status s = CheckDriverProperties(p, "memcached.", kKnown);
      !s.ok()) {
    return s;
  }
  MemcachedOptions o;
  if (const Properties::Entry* e = p.Find("memcached.hosts")) {
    o.hosts = std::string(absl::StripAsciiWhitespace(e->value));
    if (o.hosts.empty()) {
      return BadProperty(*e, "memcached.hosts", "host:port[,host:port...]");
    }
  }
  if (const Properties::Entry* e = p.Find("memcached.binary")) {
    const std::string v = absl::AsciiStrToLower(e->value);
    if (v != "true" && v != "false") {
      return BadProperty(*e, "memcached.binary", "true or false");
    }
    o.binary_protocol = v == "true";
  }
  if (const Properties::Entry* e = p.Find("memcached.timeout_ms")) {
    if (!absl::SimpleAtoi(e->value, &o.timeout_ms) || o.timeout_ms <= 0) {
      return BadProperty(*e, "memcached.timeout_ms", "positive integer");
    }
  }
  if (const Properties::Entry* e = p.Find("memcached.expiration")) {
    if (!absl::SimpleAtoi(e->value, &o.expiration_s) || o.expiration_s < 0) {
      return BadProperty(*e, "memcached.expiration", "non-negative integer");
    }
  }
  return o;
}

MemcachedDb::MemcachedDb(MemcachedOptions options)
    : options_(std::move(options)) {}

MemcachedDb::~MemcachedDb() {
  if (memc_ != nullptr) memcached_free(memc_);
}

absl::Status MemcachedDb::Init() {
  memc_ = memcached_create(nullptr);
  if (memc_ == nullptr) return absl::ResourceExhaustedError("memcached_create");
  memcached_server_st* servers = memcached_servers_parse(options_.hosts.c_str());
  if (servers == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("memcached.hosts: cannot parse \"", options_.hosts, "\""));
  }
  memcached_return_t rc = memcached_server_push(memc_, servers);
  memcached_server_list_free(servers);
  if (!memcached_success(rc)) return FromMemcached(memc_, rc, "server_push");
  memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_TCP_NODELAY, 1);
  memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_SUPPORT_CAS, 1);
  memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_BINARY_PROTOCOL,
                         options_.binary_protocol ? 1 : 0);
  memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT,
                         static_cast<uint64_t>(options_.timeout_ms));
  memcached_behavior_set(memc_, MEMCACHED_BEHAVIOR_POLL_TIMEOUT,
                         static_cast<uint64_t>(options_.timeout_ms));
  // libmemcached connects lazily; ask every server now so a wrong address
  // fails Init instead of every operation.
  rc = memcached_version(memc_);
  if (!memcached_success(rc)) {
    return FromMemcached(memc_, rc,
                         absl::StrCat("connect to ", options_.hosts));
  }
  return absl::OkStatus();
}

absl::Status MemcachedDb::Cleanup() {
  if (memc_ != nullptr) {
    memcached_free(memc_);
    memc_ = nullptr;
  }
  return absl::OkStatus();
}

absl::Status MemcachedDb::Gets(absl::string_view key, std::string* value,
                               uint64_t* cas) {
  const char* keys[] = {key.data()};
  const size_t lengths[] = {key.size()};
  memcached_return_t rc = memcached_mget(memc_, keys, lengths, 1);
  if (!memcached_success(rc)) return FromMemcached(memc_, rc, "mget");
  bool found = false;
  memcached_result_st* result;
  while ((result = memcached_fetch_result(memc_, nullptr, &rc)) != nullptr) {
    if (!found) {
      value->assign(memcached_result_value(result),
                    memcached_result_length(result));
      *cas = memcached_result_cas(result);
      found = true;
    }
    memcached_result_free(result);
  }
  if (rc != MEMCACHED_END && rc != MEMCACHED_NOTFOUND &&
      !memcached_success(rc)) {
    return FromMemcached(memc_, rc, "fetch");
  }
  if (!found) return absl::NotFoundError(key);
  return absl::OkStatus();
}

absl::Status MemcachedDb::Read(absl::string_view table, absl::string_view key,
                               const std::vector<std::string>* fields,
                               Record* result) {
  size_t length = 0;
  uint32_t flags = 0;
  memcached_return_t rc;
  char* value =
      memcached_get(memc_, key.data(), key.size(), &length, &flags, &rc);
  if (value == nullptr) {
    result->clear();
    if (memcached_success(rc)) return absl::NotFoundError(key);
    return FromMemcached(memc_, rc, "get");
  }
  absl::Status s =
      DecodeRecordInto(absl::string_view(value, length), fields, result);
  std::free(value);
  return s;
}

absl::Status MemcachedDb::Scan(absl::string_view, absl::string_view, int64_t,
                               const std::vector<std::string>*,
                               std::vector<Record>* result) {
  result->clear();
  return absl::UnimplementedError("memcached has no ordered scan");
}

absl::Status MemcachedDb::Update(absl::string_view table, absl::string_view key,
                                 const Record& values) {
  for (int attempt = 0; attempt < options_.cas_attempts; ++attempt) {
    std::string current;
    uint64_t cas = 0;
    absl::Status s = Gets(key, &current, &cas);
    if (!s.ok()) return s;
    absl::StatusOr<Record> record = DecodeRecord(current);
    if (!record.ok()) return record.status();
    MergeFields(values, &*record);
    std::string encoded;
    EncodeRecord(*record, &encoded);
    memcached_return_t rc =
        memcached_cas(memc_, key.data(), key.size(), encoded.data(),
                      encoded.size(), options_.expiration_s, 0, cas);
    if (rc == MEMCACHED_DATA_EXISTS) continue;  // Changed since gets: retry.
    return FromMemcached(memc_, rc, "cas");
  }
  return absl::AbortedError(
      absl::StrCat("memcached update of ", key, ": item kept changing"));
}

absl::Status MemcachedDb::Insert(absl::string_view table, absl::string_view key,
                                 const Record& values) {
  std::string encoded;
  EncodeRecord(values, &encoded);
  return FromMemcached(
      memc_,
      memcached_set(memc_, key.data(), key.size(), encoded.data(),
                    encoded.size(), options_.expiration_s, 0),
      "set");
}

absl::Status MemcachedDb::Delete(absl::string_view table,
                                 absl::string_view key) {
  return FromMemcached(memc_, memcached_delete(memc_, key.data(), key.size(), 0),
                       "delete");
}

namespace {

[[maybe_unused]] const bool kRegistered = RegisterDriver(
    "memcached",
    [](const Properties& props) -> absl::StatusOr<std::unique_ptr<DB>> {
      absl::StatusOr<MemcachedOptions> options =
          MemcachedOptions::FromProperties(props);
      if (!options.ok()) return options.status();
      return std::make_unique<MemcachedDb>(*std::move(options));
    });

}  // namespace

}  // namespace ycsb
}  // namespace rfrpc
