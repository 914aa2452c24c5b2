// Copyright 2026 The rfrpc Authors.

#include "kvstore/ycsb/db.h"

#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"

namespace rfrpc {
namespace ycsb {
namespace {

struct Registry {
  absl::Mutex mu;
  std::map<std::string, DriverFactory, std::less<>> factories
      ABSL_GUARDED_BY(mu);
};

// Constructed on first use, so registrations from static initializers in
// other translation units are safe; never destroyed.
Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

}  // namespace

absl::string_view YcsbReturnName(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return "OK";
    case absl::StatusCode::kNotFound:
      return "NOT_FOUND";
    case absl::StatusCode::kUnimplemented:
      return "NOT_IMPLEMENTED";
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kDataLoss:
      return "UNEXPECTED_STATE";
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return "BAD_REQUEST";
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return "FORBIDDEN";
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return "SERVICE_UNAVAILABLE";
    default:
      return "ERROR";
  }
}

bool RegisterDriver(absl::string_view name, DriverFactory factory) {
  CHECK(!name.empty());
  CHECK(factory != nullptr);
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  const bool inserted =
      r.factories.emplace(std::string(name), std::move(factory)).second;
  CHECK(inserted) << "YCSB driver \"" << name << "\" registered twice";
  return true;
}

absl::StatusOr<DriverFactory> FindDriver(absl::string_view name) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  auto it = r.factories.find(name);
  if (it == r.factories.end()) {
    std::vector<std::string> names;
    for (const auto& [n, f] : r.factories) names.push_back(n);
    return absl::NotFoundError(absl::StrCat("unknown YCSB driver \"", name,
                                            "\"; registered: ",
                                            absl::StrJoin(names, ", ")));
  }
  return it->second;
}

std::vector<std::string> RegisteredDrivers() {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.factories) names.push_back(n);
  return names;
}

}  // namespace ycsb
}  // namespace rfrpc
