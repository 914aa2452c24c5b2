// Copyright 2026 The rfrpc Authors.
//
// Server-side service API: what a handler sees (ServerContext), how a service
// exposes its methods (Service, MethodHandler), and the stable method ids
// that both sides agree on.
//
// Users normally do not touch this directly: protoc-gen-rfrpc generates, for
// each `service Foo` in a .proto, a `Foo::Service` base class whose
// constructor registers one typed handler per rpc. Implement the virtual
// methods and pass the object to Server::RegisterService:
//
//   class EchoImpl final : public rfrpc::test::Echo::Service {
//     absl::Status Echo(rfrpc::ServerContext* ctx, const EchoRequest* req,
//                       EchoResponse* resp) override {
//       resp->set_text(req->text());
//       return absl::OkStatus();
//     }
//   };
//
// Thread safety: a handler runs on the server worker that polled the request
// and may run concurrently with other calls of the same method on other
// workers, so handlers must be thread-safe (or the server single-worker).
// Services and their handlers must outlive the Server they are registered
// with.

#ifndef RFRPC_RPC_SERVICE_H_
#define RFRPC_RPC_SERVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"

namespace rfrpc {

// The id of "/package.Service/Method": FNV-1a 32 of that string. Derived from
// the full name, not from declaration order, so adding a method renumbers
// nothing. Zero is reserved (never returned).
uint32_t MethodId(absl::string_view full_method_name);

// Per-call information for a handler. Valid only during the handler call.
class ServerContext {
 public:
  // "/package.Service/Method".
  absl::string_view method() const { return method_; }
  // Who called, e.g. "pid 4242" or "10.11.0.2:51234".
  absl::string_view peer() const { return peer_; }
  // Index of the worker thread running the handler, in [0, workers).
  int worker() const { return worker_; }
  // When the call arrived at this worker (for a call in a request batch:
  // when the worker took the batch, the same for all its calls).
  absl::Time arrival() const { return arrival_; }

  // Internal: set by the server before each call.
  void Reset(absl::string_view method, absl::string_view peer, int worker,
             absl::Time arrival) {
    method_ = method;
    peer_ = peer;
    worker_ = worker;
    arrival_ = arrival;
  }

 private:
  absl::string_view method_;
  absl::string_view peer_;
  int worker_ = 0;
  absl::Time arrival_;
};

// Runs one method on raw bytes. Implementations (normally the generated
// typed handlers below) parse the request, call user code and serialize the
// response into `response_buf`.
class MethodHandler {
 public:
  virtual ~MethodHandler() = default;

  // `request` holds the serialized request (valid only during the call).
  // On success writes the serialized response into `response_buf` (capacity
  // `response_cap`) and sets `*response_len`. If the response does not fit,
  // returns RESOURCE_EXHAUSTED and sets `*response_len` to the size needed;
  // the server then retries with a large buffer. Other errors are returned
  // to the caller as the call's status.
  virtual absl::Status Run(ServerContext* ctx, absl::string_view request,
                           char* response_buf, size_t response_cap,
                           size_t* response_len) = 0;
};

// One method of a service.
struct MethodEntry {
  uint32_t id = 0;
  std::string full_name;  // "/package.Service/Method".
  std::unique_ptr<MethodHandler> handler;
};

// A collection of methods registered with a Server together.
class Service {
 public:
  virtual ~Service() = default;
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // "package.Service".
  const std::string& full_name() const { return full_name_; }
  const std::vector<MethodEntry>& methods() const { return methods_; }

 protected:
  explicit Service(std::string full_name) : full_name_(std::move(full_name)) {}

  // Adds a method "/<full_name>/<method_name>" served by `handler`.
  void AddMethod(absl::string_view method_name,
                 std::unique_ptr<MethodHandler> handler);

 private:
  std::string full_name_;
  std::vector<MethodEntry> methods_;
};

namespace internal {

// Parses `request` into `msg`. Returns INVALID_ARGUMENT naming the type if it
// does not parse.
absl::Status ParseRequest(absl::string_view request,
                          google::protobuf::MessageLite* msg);

// Serializes `msg` into the response buffer per MethodHandler::Run.
absl::Status SerializeResponse(const google::protobuf::MessageLite& msg,
                               char* buf, size_t cap, size_t* len);

// The typed unary handler used by generated services: parses Req, calls
// (service->*method)(ctx, &req, &resp), serializes Resp.
template <typename ServiceT, typename Req, typename Resp>
class UnaryHandler final : public MethodHandler {
 public:
  using Method = absl::Status (ServiceT::*)(ServerContext*, const Req*, Resp*);

  UnaryHandler(ServiceT* service, Method method)
      : service_(service), method_(method) {}

  absl::Status Run(ServerContext* ctx, absl::string_view request,
                   char* response_buf, size_t response_cap,
                   size_t* response_len) override {
    // Each thread keeps one request and one response of these types and
    // reuses them (parsing clears the request; the response is cleared
    // here), so a small call allocates nothing for its messages. Large
    // messages are not kept, so a thread holds no big buffers; a handler
    // running a handler of the same types inside itself gets fresh ones.
    struct Kept {
      Req req;
      Resp resp;
      bool busy = false;
    };
    thread_local Kept kept;
    if (kept.busy || request.size() > kKeepBytes) {
      Req req;
      Resp resp;
      return RunOn(ctx, request, &req, &resp, response_buf, response_cap,
                   response_len);
    }
    kept.busy = true;
    kept.resp.Clear();
    struct Release {
      Kept* k;
      ~Release() { k->busy = false; }
    } release{&kept};
    absl::Status s = RunOn(ctx, request, &kept.req, &kept.resp, response_buf,
                           response_cap, response_len);
    // A failed call may have left anything in the response.
    if (!s.ok() || *response_len > kKeepBytes) kept.resp = Resp();
    return s;
  }

 private:
  // Messages above this many bytes are not kept between calls.
  static constexpr size_t kKeepBytes = 4096;

  absl::Status RunOn(ServerContext* ctx, absl::string_view request, Req* req,
                     Resp* resp, char* response_buf, size_t response_cap,
                     size_t* response_len) {
    absl::Status s = ParseRequest(request, req);
    if (!s.ok()) return s;
    s = (service_->*method_)(ctx, req, resp);
    if (!s.ok()) return s;
    return SerializeResponse(*resp, response_buf, response_cap, response_len);
  }

  ServiceT* const service_;  // Not owned.
  const Method method_;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVICE_H_
