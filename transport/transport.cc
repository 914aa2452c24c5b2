// Copyright 2026 The rfrpc Authors.

#include "transport/transport.h"

#include <atomic>
#include <map>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "glog/logging.h"

namespace rfrpc {
namespace transport {
namespace {

std::atomic<uint64_t> connection_failures{0};

struct Registry {
  absl::Mutex mu;
  std::map<std::string, ProviderFactory> factories ABSL_GUARDED_BY(mu);
  std::map<std::string, ProviderFamilyFactory> families ABSL_GUARDED_BY(mu);
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;  // Never destroyed.
  return *registry;
}

}  // namespace

const char* WcStatusName(WcStatus status) {
  switch (status) {
    case WcStatus::kSuccess:
      return "success";
    case WcStatus::kLocalError:
      return "local error";
    case WcStatus::kRemoteAccessError:
      return "remote access error";
    case WcStatus::kRetryExceeded:
      return "transport retry counter exceeded";
    case WcStatus::kFlushed:
      return "work request flushed";
    case WcStatus::kOther:
      return "other error";
  }
  return "unknown";
}

absl::Status Completion::ToStatus() const {
  const std::string what =
      absl::StrCat(opcode == Opcode::kRead ? "READ" : "WRITE", " wr_id ",
                   wr_id, " on connection ", connection_id, ": ",
                   WcStatusName(status));
  switch (status) {
    case WcStatus::kSuccess:
      return absl::OkStatus();
    case WcStatus::kRemoteAccessError:
      return absl::PermissionDeniedError(what);
    case WcStatus::kRetryExceeded:
    case WcStatus::kFlushed:
      return absl::UnavailableError(what);
    default:
      return absl::InternalError(what);
  }
}

InlineCompletions::InlineCompletions(size_t capacity) {
  size_t c = 1;
  while (c < capacity) c <<= 1;
  capacity_ = c;
  mask_ = c - 1;
  ring_ = std::make_unique<Completion[]>(c);
}

bool RegisterProvider(const char* name, ProviderFactory factory) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.factories[name] = factory;
  return true;
}

bool RegisterProviderFamily(const char* prefix, ProviderFamilyFactory factory) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  r.families[prefix] = factory;
  return true;
}

absl::StatusOr<std::unique_ptr<Provider>> Provider::Open(
    const std::string& name, const ProviderOptions& options) {
  Registry& r = GetRegistry();
  ProviderFactory verbs = nullptr;
  ProviderFactory shm = nullptr;
  ProviderFactory wanted = nullptr;
  ProviderFamilyFactory family = nullptr;
  std::vector<std::string> known;
  {
    absl::MutexLock lock(&r.mu);
    for (const auto& [n, f] : r.factories) known.push_back(n);
    for (const auto& [n, f] : r.families) known.push_back(n + ":<provider>");
    auto find = [&](const std::string& n) -> ProviderFactory {
      auto it = r.factories.find(n);
      return it == r.factories.end() ? nullptr : it->second;
    };
    verbs = find("verbs");
    shm = find("shm");
    wanted = find(name);
    const size_t sep = name.find_first_of(":@");
    if (wanted == nullptr && sep != std::string::npos) {
      auto it = r.families.find(name.substr(0, sep));
      if (it != r.families.end()) family = it->second;
    }
  }
  if (family != nullptr) return family(name, options);
  if (name == "auto") {
    if (verbs != nullptr) {
      absl::StatusOr<std::unique_ptr<Provider>> p = verbs(options);
      if (p.ok()) {
        LOG(INFO) << "transport auto: using verbs";
        return p;
      }
      LOG(INFO) << "transport auto: verbs unavailable (" << p.status()
                << "); using shm";
    }
    if (shm != nullptr) return shm(options);
    return absl::UnavailableError("transport auto: no provider linked in");
  }
  if (wanted == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown transport provider \"", name, "\" (linked in: ",
                     absl::StrJoin(known, ", "), ", auto)"));
  }
  return wanted(options);
}

absl::StatusOr<std::string> Provider::ResolveName(
    const std::string& name, const ProviderOptions& options) {
  if (name != "auto") return name;
  absl::StatusOr<std::unique_ptr<Provider>> p = Open(name, options);
  if (!p.ok()) return p.status();
  return (*p)->name();
}

namespace {
constexpr char kRetryLaterUrl[] = "type.rfrpc/transport.RetryLater";
}  // namespace

absl::Status MarkRetryLater(absl::Status status) {
  if (!status.ok()) status.SetPayload(kRetryLaterUrl, absl::Cord("1"));
  return status;
}

bool IsRetryLater(const absl::Status& status) {
  return !status.ok() && status.GetPayload(kRetryLaterUrl).has_value();
}

std::string AddressHost(const std::string& address) {
  if (address.empty() || address[0] == '/' || address[0] == '@') return "";
  if (address[0] == '[') {
    const size_t close = address.find(']');
    return close == std::string::npos ? "" : address.substr(1, close - 1);
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return "";
  return address.substr(0, colon);
}

uint64_t ConnectionFailures() {
  return connection_failures.load(std::memory_order_acquire);
}

namespace internal {
void CountConnectionFailure() {
  connection_failures.fetch_add(1, std::memory_order_release);
}
}  // namespace internal

}  // namespace transport
}  // namespace rfrpc
