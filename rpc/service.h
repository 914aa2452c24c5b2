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
// A method is sync (the default), async (the handler gets a ServerDone and
// finishes the call later from any thread, rpc/server_context.h) or
// blocking (a sync handler run on the server's handler pool); see MethodKind
// and docs/define_a_service.md.
//
// Thread safety: a sync handler runs on the server worker that polled the
// request, an offloaded one on a pool thread, an async one starts on the
// worker and finishes wherever; any may run concurrently with other calls
// of the same method, so handlers must be thread-safe (or the server
// single-worker, with no async or blocking methods). Services and their
// handlers must outlive the Server they are registered with.

#ifndef RFRPC_RPC_SERVICE_H_
#define RFRPC_RPC_SERVICE_H_

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "rpc/batch_format.h"
#include "rpc/server_call.h"
#include "rpc/server_context.h"

namespace rfrpc {

// The id of "/package.Service/Method": FNV-1a 32 of that string. Derived from
// the full name, not from declaration order, so adding a method renumbers
// nothing. Zero is reserved (never returned).
uint32_t MethodId(absl::string_view full_method_name);

// How a method's handler runs. Chosen per method in the .proto with the
// option (rfrpc.handler) (proto/rfrpc_options.proto), which the generated
// code passes to AddMethod; Service::SetBlocking can also offload a sync
// method at run time.
enum class MethodKind : uint8_t {
  // On the worker that took the request, which waits for it: for handlers
  // that return in microseconds. The default.
  kSync = 0,
  // Started on the worker, which goes on polling; the handler finishes the
  // call later, from any thread, with its ServerDone. For handlers that wait
  // on something (another service, a disk, a timer) without a thread.
  kAsync = 1,
  // A sync handler run on the server's handler pool
  // (ServerOptions::blocking_threads): for handlers that block (a blocking
  // library call), without rewriting them as async.
  kBlocking = 2,
};

// "sync", "async", "blocking".
absl::string_view MethodKindName(MethodKind kind);

namespace internal {

// Consecutive entries of one request batch that call the same sync method,
// handed to its handler in one call (MethodHandler::RunBatch). The handler
// writes their results back to back at `out` as result entries
// (rpc/batch_format.h: an 8-byte entry header, then the payload padded to
// 8) while they fit in `room`, and stops at the first entry whose result
// it cannot place there.
struct BatchRun {
  // In: the entries' requests (valid during the call) and deadlines.
  const absl::string_view* requests = nullptr;
  const int64_t* deadlines_ns = nullptr;
  uint32_t count = 0;
  // Where the first result entry goes, and the bytes the entries may take.
  char* out = nullptr;
  size_t room = 0;
  // Where a result that does not fit in `room` goes instead.
  char* spill = nullptr;
  size_t spill_cap = 0;

  // Out: results written at `out`, in order, and their bytes.
  uint32_t done = 0;
  size_t used = 0;
  // Whether entry `done` (when done < count) ran. If it did, `status` is its
  // outcome; if OK, its result is `result_len` bytes at `spill`
  // (RESOURCE_EXHAUSTED with result_len > spill_cap: the result is that
  // large). If it did not, the caller runs it through MethodHandler::Run.
  bool ran = false;
  absl::Status status;
  size_t result_len = 0;
};

}  // namespace internal

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
  // Used for MethodKind::kSync; async handlers return INTERNAL.
  virtual absl::Status Run(ServerContext* ctx, absl::string_view request,
                           char* response_buf, size_t response_cap,
                           size_t* response_len) = 0;

  // Runs the entries of `run` (MethodKind::kSync) as Run would, one after
  // another, with ctx's deadline set to each one's; see BatchRun. Returns
  // false if this handler does not (the default): the caller then runs
  // each entry through Run.
  virtual bool RunBatch(ServerContext* ctx, internal::BatchRun* run);

  // Async and offloaded calls (MethodKind::kAsync, kBlocking), in two steps:
  // NewCall parses `request` (valid only during the call) into a new call
  // object holding one reference (the caller's), or returns null with the
  // parse error in `*error` (not null). Invoke then runs the user's code for
  // `call`, which finishes it through `done` (now or later, from any
  // thread). The defaults return UNIMPLEMENTED / finish with INTERNAL.
  virtual internal::ServerCall* NewCall(absl::string_view request,
                                        absl::Status* error);
  virtual void Invoke(internal::ServerCall* call, ServerDone done);
};

// One method of a service.
struct MethodEntry {
  uint32_t id = 0;
  std::string full_name;  // "/package.Service/Method".
  std::unique_ptr<MethodHandler> handler;
  MethodKind kind = MethodKind::kSync;
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

  // Runs the sync method `method_name` (as in the .proto, e.g. "Get") on the
  // server's handler pool instead of its worker, as if the .proto marked it
  // (rfrpc.handler) = HANDLER_BLOCKING. Call before RegisterService.
  // NOT_FOUND if there is no such method; FAILED_PRECONDITION if it is async.
  absl::Status SetBlocking(absl::string_view method_name);

 protected:
  explicit Service(std::string full_name) : full_name_(std::move(full_name)) {}

  // Adds a method "/<full_name>/<method_name>" served by `handler`, run as
  // `kind` says (an async handler must be one: AsyncUnaryHandler).
  void AddMethod(absl::string_view method_name,
                 std::unique_ptr<MethodHandler> handler,
                 MethodKind kind = MethodKind::kSync);

 private:
  std::string full_name_;
  std::vector<MethodEntry> methods_;
};

namespace internal {

// The errors of ParseRequest and SerializeResponse, out of line: the inline
// paths stay a few instructions with no string building in their frames.
absl::Status RequestDoesNotParse(size_t size,
                                 const google::protobuf::MessageLite& msg);
absl::Status ResponseTooLarge(size_t size, size_t cap);

// Parses `request` into `msg`. Returns INVALID_ARGUMENT naming the type if it
// does not parse.
inline absl::Status ParseRequest(absl::string_view request,
                                 google::protobuf::MessageLite* msg) {
  if (ABSL_PREDICT_FALSE(!msg->ParseFromArray(
          request.data(), static_cast<int>(request.size())))) {
    return RequestDoesNotParse(request.size(), *msg);
  }
  return absl::OkStatus();
}

// Serializes `msg` into the response buffer per MethodHandler::Run.
inline absl::Status SerializeResponse(const google::protobuf::MessageLite& msg,
                                      char* buf, size_t cap, size_t* len) {
  const size_t size = msg.ByteSizeLong();
  *len = size;
  if (ABSL_PREDICT_FALSE(size > cap)) return ResponseTooLarge(size, cap);
  msg.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(buf));
  return absl::OkStatus();
}

// The status of a call whose handler threw (`what` may be null).
absl::Status HandlerThrew(const ServerContext* ctx, const char* what);

// A call object of these types with `request` parsed into it, or null with
// the parse error in `*error`.
template <typename Req, typename Resp>
ServerCall* NewTypedCall(absl::string_view request, absl::Status* error) {
  TypedServerCall<Req, Resp>* c = TypedServerCall<Req, Resp>::New();
  if (request.size() > 4096) c->set_big();
  *error = ParseRequest(request, &c->request);
  if (!error->ok()) {
    c->Unref();
    return nullptr;
  }
  return c;
}

// The typed unary handler used by generated services: parses Req, calls
// (service->*method)(ctx, &req, &resp), serializes Resp.
template <typename ServiceT, typename Req, typename Resp>
class UnaryHandler final : public MethodHandler {
 public:
  using Method = absl::Status (ServiceT::*)(ServerContext*, const Req*, Resp*);

  UnaryHandler(ServiceT* service, Method method)
      : service_(service), method_(method) {}

  // Offloaded (MethodKind::kBlocking): parsed on the worker, run on a pool
  // thread.
  ServerCall* NewCall(absl::string_view request, absl::Status* error) override {
    return NewTypedCall<Req, Resp>(request, error);
  }
  void Invoke(ServerCall* call, ServerDone done) override {
    auto* c = static_cast<TypedServerCall<Req, Resp>*>(call);
    absl::Status s;
    try {
      s = (service_->*method_)(c->context(), &c->request, &c->response);
    } catch (const std::exception& e) {
      s = HandlerThrew(c->context(), e.what());
    } catch (...) {
      s = HandlerThrew(c->context(), nullptr);
    }
    done(std::move(s));
  }

  absl::Status Run(ServerContext* ctx, absl::string_view request,
                   char* response_buf, size_t response_cap,
                   size_t* response_len) override {
    Kept& kept = KeptMessages();
    if (ABSL_PREDICT_FALSE(kept.busy || request.size() > kKeepBytes)) {
      return RunOnFresh(ctx, request, response_buf, response_cap,
                        response_len);
    }
    kept.busy = true;
    kept.resp.Clear();
    Release release{&kept};
    absl::Status s = RunOn(ctx, request, &kept.req, &kept.resp, response_buf,
                           response_cap, response_len);
    // A failed call may have left anything in the response.
    if (!s.ok() || *response_len > kKeepBytes) kept.resp = Resp();
    return s;
  }

  // A run of a batch's entries in one call: one virtual call, one lookup of
  // the kept messages, and the results written straight into the result
  // part (docs/rpc.md, "Serving a batch").
  bool RunBatch(ServerContext* ctx, BatchRun* run) override {
    Kept& kept = KeptMessages();
    if (ABSL_PREDICT_FALSE(kept.busy)) return false;
    kept.busy = true;
    Release release{&kept};
    char* p = run->out;
    size_t used = 0;
    const absl::string_view name = ctx->method();
    uint32_t i = 0;
    for (; i < run->count; ++i) {
      const absl::string_view request = run->requests[i];
      // A large request runs alone, on messages of its own (Run).
      if (ABSL_PREDICT_FALSE(request.size() > kKeepBytes)) break;
      ctx->SetCall(name, run->deadlines_ns[i]);
      kept.resp.Clear();
      if (ABSL_PREDICT_FALSE(!kept.req.ParseFromArray(
              request.data(), static_cast<int>(request.size())))) {
        run->ran = true;
        run->status = RequestDoesNotParse(request.size(), kept.req);
        break;
      }
      absl::Status s = CallCatching(ctx, &kept.req, &kept.resp);
      if (ABSL_PREDICT_FALSE(!s.ok())) {
        kept.resp = Resp();
        run->ran = true;
        run->status = std::move(s);
        break;
      }
      const size_t size = kept.resp.ByteSizeLong();
      const size_t entry_bytes = wire::EntryBytes(size);
      if (ABSL_PREDICT_FALSE(entry_bytes > run->room - used)) {
        // Where the caller can place it, or its size if it fits nowhere.
        run->ran = true;
        run->result_len = size;
        if (size <= run->spill_cap) {
          kept.resp.SerializeWithCachedSizesToArray(
              reinterpret_cast<uint8_t*>(run->spill));
        } else {
          run->status = ResponseTooLarge(size, run->spill_cap);
        }
        if (size > kKeepBytes) kept.resp = Resp();
        break;
      }
      kept.resp.SerializeWithCachedSizesToArray(
          reinterpret_cast<uint8_t*>(p + wire::kEntryHeaderBytes));
      wire::PutResultEntry(p, static_cast<uint32_t>(size), 0);
      if (ABSL_PREDICT_FALSE(size > kKeepBytes)) kept.resp = Resp();
      p += entry_bytes;
      used += entry_bytes;
    }
    run->done = i;
    run->used = used;
    return true;
  }

 private:
  // Messages above this many bytes are not kept between calls.
  static constexpr size_t kKeepBytes = 4096;

  // Each thread keeps one request and one response of these types and
  // reuses them (parsing clears the request; the response is cleared
  // before each call), so a small call allocates nothing for its messages.
  // Large messages are not kept, so a thread holds no big buffers; a
  // handler running a handler of the same types inside itself gets fresh
  // ones (busy).
  struct Kept {
    Req req;
    Resp resp;
    bool busy = false;
  };
  struct Release {
    Kept* k;
    ~Release() { k->busy = false; }
  };
  static Kept& KeptMessages() {
    thread_local Kept kept;
    return kept;
  }

  // Run's rare path, out of line so that its two messages on the stack do
  // not weigh on Run's frame: messages of their own.
  ABSL_ATTRIBUTE_NOINLINE absl::Status RunOnFresh(ServerContext* ctx,
                                                  absl::string_view request,
                                                  char* response_buf,
                                                  size_t response_cap,
                                                  size_t* response_len) {
    Req req;
    Resp resp;
    return RunOn(ctx, request, &req, &resp, response_buf, response_cap,
                 response_len);
  }

  ABSL_ATTRIBUTE_ALWAYS_INLINE absl::Status RunOn(
      ServerContext* ctx, absl::string_view request, Req* req, Resp* resp,
      char* response_buf, size_t response_cap, size_t* response_len) {
    absl::Status s = ParseRequest(request, req);
    if (!s.ok()) return s;
    s = (service_->*method_)(ctx, req, resp);
    if (!s.ok()) return s;
    return SerializeResponse(*resp, response_buf, response_cap, response_len);
  }

  // The user's method; what it throws becomes INTERNAL (Run's caller
  // catches for Run).
  absl::Status CallCatching(ServerContext* ctx, const Req* req, Resp* resp) {
    try {
      return (service_->*method_)(ctx, req, resp);
    } catch (const std::exception& e) {
      return HandlerThrew(ctx, e.what());
    } catch (...) {
      return HandlerThrew(ctx, nullptr);
    }
  }

  ServiceT* const service_;  // Not owned.
  const Method method_;
};

// The typed handler of an async method (MethodKind::kAsync): parses Req on
// the worker, calls (service->*method)(ctx, &req, &resp, done) there; the
// call is published once `done` is called, from whatever thread.
template <typename ServiceT, typename Req, typename Resp>
class AsyncUnaryHandler final : public MethodHandler {
 public:
  using Method = void (ServiceT::*)(ServerContext*, const Req*, Resp*,
                                    ServerDone);

  AsyncUnaryHandler(ServiceT* service, Method method)
      : service_(service), method_(method) {}

  absl::Status Run(ServerContext*, absl::string_view, char*, size_t,
                   size_t*) override {
    return absl::InternalError("an async method has no sync handler");
  }
  ServerCall* NewCall(absl::string_view request, absl::Status* error) override {
    return NewTypedCall<Req, Resp>(request, error);
  }
  void Invoke(ServerCall* call, ServerDone done) override {
    auto* c = static_cast<TypedServerCall<Req, Resp>*>(call);
    try {
      (service_->*method_)(c->context(), &c->request, &c->response,
                           std::move(done));
    } catch (const std::exception& e) {
      c->FinishIfPending(HandlerThrew(c->context(), e.what()));
    } catch (...) {
      c->FinishIfPending(HandlerThrew(c->context(), nullptr));
    }
  }

 private:
  ServiceT* const service_;  // Not owned.
  const Method method_;
};

}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_SERVICE_H_
