// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/basic_db.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace rfrpc {
namespace ycsb {

void SelectFields(const Record& record, const std::vector<std::string>* fields,
                  Record* out) {
  out->clear();
  if (fields == nullptr) {
    *out = record;
    return;
  }
  for (const Field& f : record) {
    if (std::find(fields->begin(), fields->end(), f.name) != fields->end()) {
      out->push_back(f);
    }
  }
}

void MergeFields(const Record& values, Record* record) {
  for (const Field& v : values) {
    auto it = std::find_if(record->begin(), record->end(),
                           [&](const Field& f) { return f.name == v.name; });
    if (it == record->end()) {
      record->push_back(v);
    } else {
      it->value = v.value;
    }
  }
}

absl::Status MemoryStore::Read(absl::string_view table, absl::string_view key,
                               const std::vector<std::string>* fields,
                               Record* result) const {
  ReaderMutexLock lock(&mu_);
  result->clear();
  auto t = tables_.find(table);
  if (t == tables_.end()) return absl::NotFoundError(key);
  auto r = t->second.find(key);
  if (r == t->second.end()) return absl::NotFoundError(key);
  SelectFields(r->second, fields, result);
  return absl::OkStatus();
}

absl::Status MemoryStore::Scan(absl::string_view table,
                               absl::string_view start_key, int64_t count,
                               const std::vector<std::string>* fields,
                               std::vector<Record>* result) const {
  ReaderMutexLock lock(&mu_);
  result->clear();
  auto t = tables_.find(table);
  if (t == tables_.end()) return absl::OkStatus();
  for (auto it = t->second.lower_bound(start_key);
       it != t->second.end() && static_cast<int64_t>(result->size()) < count;
       ++it) {
    result->emplace_back();
    SelectFields(it->second, fields, &result->back());
  }
  return absl::OkStatus();
}

absl::Status MemoryStore::Update(absl::string_view table, absl::string_view key,
                                 const Record& values) {
  WriterMutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return absl::NotFoundError(key);
  auto r = t->second.find(key);
  if (r == t->second.end()) return absl::NotFoundError(key);
  MergeFields(values, &r->second);
  return absl::OkStatus();
}

absl::Status MemoryStore::Insert(absl::string_view table, absl::string_view key,
                                 const Record& values) {
  WriterMutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) t = tables_.emplace(std::string(table), Table()).first;
  t->second.insert_or_assign(std::string(key), values);
  return absl::OkStatus();
}

absl::Status MemoryStore::Delete(absl::string_view table,
                                 absl::string_view key) {
  WriterMutexLock lock(&mu_);
  auto t = tables_.find(table);
  if (t == tables_.end()) return absl::NotFoundError(key);
  auto r = t->second.find(key);
  if (r == t->second.end()) return absl::NotFoundError(key);
  t->second.erase(r);
  return absl::OkStatus();
}

int64_t MemoryStore::Size(absl::string_view table) const {
  ReaderMutexLock lock(&mu_);
  auto t = tables_.find(table);
  return t == tables_.end() ? 0 : static_cast<int64_t>(t->second.size());
}

std::shared_ptr<MemoryStore> MemoryStore::Named(absl::string_view name) {
  static Mutex* mu = new Mutex;
  static auto* stores =
      new std::map<std::string, std::shared_ptr<MemoryStore>, std::less<>>;
  MutexLock lock(mu);
  auto it = stores->find(name);
  if (it == stores->end()) {
    it = stores->emplace(std::string(name), std::make_shared<MemoryStore>())
             .first;
  }
  return it->second;
}

BasicDb::BasicDb(std::shared_ptr<MemoryStore> store)
    : store_(std::move(store)) {
  CHECK(store_ != nullptr);
}

absl::Status BasicDb::Read(absl::string_view table, absl::string_view key,
                           const std::vector<std::string>* fields,
                           Record* result) {
  return store_->Read(table, key, fields, result);
}

absl::Status BasicDb::Scan(absl::string_view table,
                           absl::string_view start_key, int64_t count,
                           const std::vector<std::string>* fields,
                           std::vector<Record>* result) {
  return store_->Scan(table, start_key, count, fields, result);
}

absl::Status BasicDb::Update(absl::string_view table, absl::string_view key,
                             const Record& values) {
  return store_->Update(table, key, values);
}

absl::Status BasicDb::Insert(absl::string_view table, absl::string_view key,
                             const Record& values) {
  return store_->Insert(table, key, values);
}

absl::Status BasicDb::Delete(absl::string_view table, absl::string_view key) {
  return store_->Delete(table, key);
}

namespace {

[[maybe_unused]] const bool kRegistered = RegisterDriver(
    "basic",
    [](const Properties& props) -> absl::StatusOr<std::unique_ptr<DB>> {
      return std::make_unique<BasicDb>(
          MemoryStore::Named(props.GetOr("basic.store", "default")));
    });

}  // namespace

}  // namespace ycsb
}  // namespace rfrpc
