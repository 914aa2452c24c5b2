// Copyright 2026 The rfrpc Authors.

#include "rpc/service.h"

#include "absl/strings/str_cat.h"

namespace rfrpc {

uint32_t MethodId(absl::string_view full_method_name) {
  uint32_t h = 2166136261u;  // FNV-1a 32 offset basis.
  for (unsigned char c : full_method_name) {
    h ^= c;
    h *= 16777619u;
  }
  return h == 0 ? 1 : h;
}

absl::string_view MethodKindName(MethodKind kind) {
  switch (kind) {
    case MethodKind::kSync:
      return "sync";
    case MethodKind::kAsync:
      return "async";
    case MethodKind::kBlocking:
      return "blocking";
  }
  return "unknown";
}

void Service::AddMethod(absl::string_view method_name,
                        std::unique_ptr<MethodHandler> handler,
                        MethodKind kind) {
  MethodEntry entry;
  entry.full_name = absl::StrCat("/", full_name_, "/", method_name);
  entry.id = MethodId(entry.full_name);
  entry.handler = std::move(handler);
  entry.kind = kind;
  methods_.push_back(std::move(entry));
}

absl::Status Service::SetBlocking(absl::string_view method_name) {
  const std::string full = absl::StrCat("/", full_name_, "/", method_name);
  for (MethodEntry& m : methods_) {
    if (m.full_name != full) continue;
    if (m.kind == MethodKind::kAsync) {
      return absl::FailedPreconditionError(
          absl::StrCat("method ", full, " is async; only sync methods can be "
                       "offloaded"));
    }
    m.kind = MethodKind::kBlocking;
    return absl::OkStatus();
  }
  return absl::NotFoundError(
      absl::StrCat("service ", full_name_, " has no method ", method_name));
}

internal::ServerCall* MethodHandler::NewCall(absl::string_view,
                                             absl::Status* error) {
  *error = absl::UnimplementedError(
      "this method's handler cannot run async or offloaded");
  return nullptr;
}

bool MethodHandler::RunBatch(ServerContext*, internal::BatchRun*) {
  return false;
}

void MethodHandler::Invoke(internal::ServerCall*, ServerDone done) {
  done(absl::InternalError("this method's handler cannot run async"));
}

namespace internal {

absl::Status RequestDoesNotParse(size_t size,
                                 const google::protobuf::MessageLite& msg) {
  return absl::InvalidArgumentError(absl::StrCat(
      "request of ", size, " bytes does not parse as ", msg.GetTypeName()));
}

absl::Status ResponseTooLarge(size_t size, size_t cap) {
  return absl::ResourceExhaustedError(
      absl::StrCat("response of ", size, " bytes exceeds ", cap));
}

absl::Status HandlerThrew(const ServerContext* ctx, const char* what) {
  return absl::InternalError(
      what == nullptr
          ? absl::StrCat("handler of ", ctx->method(), " threw")
          : absl::StrCat("handler of ", ctx->method(), " threw: ", what));
}

}  // namespace internal
}  // namespace rfrpc
