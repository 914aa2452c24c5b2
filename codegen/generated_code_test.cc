// Copyright 2026 The rfrpc Authors.
//
// Generated stubs calling generated services over a real rfrpc::Server and
// Channel on the shm provider: sync, async and future calls, UNIMPLEMENTED
// defaults, mangled names, nested, imported, well-known and proto2 request
// types, and a package-less file. (generated_echo_e2e_test is the focused
// scenario test; this one covers the corpus.)

#include <future>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "codegen/testdata/handlers.rfrpc.h"
#include "codegen/testdata/imports.rfrpc.h"
#include "codegen/testdata/names.rfrpc.h"
#include "codegen/testdata/nested_package.rfrpc.h"
#include "codegen/testdata/no_package.rfrpc.h"
#include "codegen/testdata/proto2.rfrpc.h"
#include "gtest/gtest.h"
#include "proto/echo.rfrpc.h"
#include "rpc/channel.h"
#include "rpc/server.h"

namespace rfrpc {
namespace codegen {
namespace {

// A server on shm with `services` registered, and a channel to it.
class Served {
 public:
  explicit Served(std::initializer_list<Service*> services) {
    ServerOptions server_options;
    server_options.provider = "shm";
    server_options.idle_spin_rounds = 200;
    server_ = std::make_unique<Server>(server_options);
    for (Service* service : services) {
      absl::Status s = server_->RegisterService(service);
      EXPECT_TRUE(s.ok()) << s;
    }
    absl::Status s = server_->Start();
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return;
    ChannelOptions channel_options;
    channel_options.provider = "shm";
    absl::StatusOr<std::unique_ptr<Channel>> channel =
        Channel::Create(server_->address(), channel_options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    if (channel.ok()) channel_ = *std::move(channel);
  }
  ~Served() {
    channel_.reset();
    server_->Shutdown();
  }

  // Null if setting up failed (the test has already failed then).
  Channel* channel() const { return channel_.get(); }

 private:
  std::unique_ptr<Server> server_;
  std::unique_ptr<Channel> channel_;
};

using ::rfrpc::echo::Echo;
using ::rfrpc::echo::EchoRequest;
using ::rfrpc::echo::EchoResponse;

class EchoImpl final : public Echo::Service {
 public:
  absl::Status Echo(ServerContext* ctx, const EchoRequest* request,
                    EchoResponse* response) override {
    response->set_payload(request->payload());
    response->set_id(request->id());
    if (ctx->method() != "/rfrpc.echo.Echo/Echo") {
      return absl::InternalError(std::string(ctx->method()));
    }
    return absl::OkStatus();
  }
};

class EchoStubTest : public testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(served_.channel(), nullptr); }

  EchoImpl impl_;
  Served served_{&impl_};
  Echo::Stub stub_{served_.channel()};
};

TEST_F(EchoStubTest, Sync) {
  EchoRequest request;
  request.set_payload("hello");
  request.set_id(7);
  EchoResponse response;
  ClientContext ctx;
  ASSERT_TRUE(stub_.Echo(&ctx, request, &response).ok());
  EXPECT_EQ(response.payload(), "hello");
  EXPECT_EQ(response.id(), 7u);
}

TEST_F(EchoStubTest, NullContext) {
  EchoRequest request;
  request.set_id(1);
  EchoResponse response;
  ASSERT_TRUE(stub_.Echo(nullptr, request, &response).ok());
  EXPECT_EQ(response.id(), 1u);
}

TEST_F(EchoStubTest, Async) {
  EchoResponse response;
  absl::Status status = absl::UnknownError("not run");
  absl::Notification done;
  {
    EchoRequest request;  // May die once EchoAsync returns.
    request.set_payload("async");
    stub_.EchoAsync(nullptr, request, &response, [&](absl::Status s) {
      status = s;
      done.Notify();
    });
  }
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(response.payload(), "async");
}

TEST_F(EchoStubTest, Future) {
  EchoRequest request;
  request.set_payload("future");
  EchoResponse response;
  std::future<absl::Status> f = stub_.EchoFuture(nullptr, request, &response);
  ASSERT_TRUE(f.get().ok());
  EXPECT_EQ(response.payload(), "future");
}

TEST_F(EchoStubTest, UnimplementedMethod) {
  EchoResponse response;
  absl::Status s = stub_.Unimplemented(nullptr, EchoRequest(), &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(),
            "method /rfrpc.echo.Echo/Unimplemented is not implemented");
  EXPECT_EQ(stub_.UnimplementedFuture(nullptr, EchoRequest(), &response)
                .get()
                .code(),
            absl::StatusCode::kUnimplemented);
}

TEST(GeneratedServiceTest, DefaultServiceIsAllUnimplemented) {
  Echo::Service service;  // Not abstract: every rpc has a default.
  Served served{&service};
  ASSERT_NE(served.channel(), nullptr);
  Echo::Stub stub(served.channel());
  EchoResponse response;
  EXPECT_EQ(stub.Echo(nullptr, EchoRequest(), &response).code(),
            absl::StatusCode::kUnimplemented);
}

TEST(GeneratedServiceTest, MangledNames) {
  using ::rfrpc::codegen::testdata::names::Colliding;
  using ::rfrpc::codegen::testdata::names::Request;
  using ::rfrpc::codegen::testdata::names::Response;
  class Impl final : public Colliding::Service {
   public:
    absl::Status delete_(ServerContext* ctx, const Request*,
                         Response*) override {
      method = std::string(ctx->method());
      return absl::OkStatus();
    }
    std::string method;
  } impl;
  Served served{&impl};
  ASSERT_NE(served.channel(), nullptr);
  Colliding::Stub stub(served.channel());
  Response response;
  ASSERT_TRUE(stub.delete_(nullptr, Request(), &response).ok());
  EXPECT_EQ(impl.method, "/rfrpc.codegen.testdata.names.Colliding/delete");
  EXPECT_EQ(stub.Service_(nullptr, Request(), &response).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(stub.Stub_Future(nullptr, Request(), &response).get().code(),
            absl::StatusCode::kUnimplemented);
  // Inherited members stay reachable: the rpc `full_name` became full_name_.
  EXPECT_EQ(impl.full_name(), "rfrpc.codegen.testdata.names.Colliding");
}

TEST(GeneratedServiceTest, NestedMessagesAndProto3Optional) {
  namespace nested = ::rfrpc::codegen::testdata::deeply::nested;
  class Impl final : public nested::Lookup::Service {
   public:
    absl::Status Find(ServerContext*, const nested::Outer_Inner* request,
                      nested::Result* response) override {
      if (!request->has_key()) return absl::InvalidArgumentError("no key");
      response->set_value("v:" + request->key());
      return absl::OkStatus();
    }
  } impl;
  Served served{&impl};
  ASSERT_NE(served.channel(), nullptr);
  nested::Lookup::Stub stub(served.channel());
  nested::Outer::Inner request;
  nested::Result response;
  EXPECT_EQ(stub.Find(nullptr, request, &response).code(),
            absl::StatusCode::kInvalidArgument);
  request.set_key("k");
  ASSERT_TRUE(stub.Find(nullptr, request, &response).ok());
  EXPECT_EQ(response.value(), "v:k");
}

TEST(GeneratedServiceTest, WellKnownAndImportedTypes) {
  namespace imports = ::rfrpc::codegen::testdata::imports;
  class Impl final : public imports::Store::Service {
   public:
    absl::Status Now(ServerContext*, const google::protobuf::Empty*,
                     google::protobuf::Timestamp* response) override {
      response->set_seconds(42);
      return absl::OkStatus();
    }
    absl::Status Get(ServerContext*,
                     const ::rfrpc::codegen::testdata::dep::Key* request,
                     ::rfrpc::codegen::testdata::dep::Value* response) override {
      response->set_value(request->key());
      return absl::OkStatus();
    }
  } impl;
  Served served{&impl};
  ASSERT_NE(served.channel(), nullptr);
  imports::Store::Stub stub(served.channel());
  google::protobuf::Timestamp now;
  ASSERT_TRUE(stub.Now(nullptr, google::protobuf::Empty(), &now).ok());
  EXPECT_EQ(now.seconds(), 42);
  ::rfrpc::codegen::testdata::dep::Key key;
  key.set_key("x");
  ::rfrpc::codegen::testdata::dep::Value value;
  ASSERT_TRUE(stub.Get(nullptr, key, &value).ok());
  EXPECT_EQ(value.value(), "x");
}

TEST(GeneratedServiceTest, Proto2) {
  namespace p2 = ::rfrpc::codegen::testdata::p2;
  class Impl final : public p2::Legacy::Service {
   public:
    absl::Status Fetch(ServerContext*, const p2::Get* request,
                       p2::Got* response) override {
      response->set_value(request->key());
      response->add_tags(std::to_string(request->limit()));
      return absl::OkStatus();
    }
  } impl;
  Served served{&impl};
  ASSERT_NE(served.channel(), nullptr);
  p2::Legacy::Stub stub(served.channel());
  p2::Get request;
  request.set_key("k");
  p2::Got response;
  ASSERT_TRUE(stub.Fetch(nullptr, request, &response).ok());
  EXPECT_EQ(response.value(), "k");
  EXPECT_EQ(response.tags(0), "10");  // The proto2 default.
}

TEST(GeneratedServiceTest, NoPackage) {
  class Impl final : public ::Ping::Service {
   public:
    absl::Status Ping(ServerContext*, const ::PingRequest* request,
                      ::PingResponse* response) override {
      response->set_seq(request->seq() + 1);
      return absl::OkStatus();
    }
  } impl;
  Served served{&impl};
  ASSERT_NE(served.channel(), nullptr);
  ::Ping::Stub stub(served.channel());
  ::PingRequest request;
  request.set_seq(1);
  ::PingResponse response;
  ASSERT_TRUE(stub.Ping(nullptr, request, &response).ok());
  EXPECT_EQ(response.seq(), 2u);
}

// The option (rfrpc.handler) picks each method's kind: the registration the
// server runs by, the virtual's signature, and what the calls see.
TEST(GeneratedServiceTest, HandlerKindsFollowTheProtoOption) {
  namespace h = ::rfrpc::codegen::testdata::handlers;
  class Impl final : public h::Cache::Service {
   public:
    absl::Status Peek(ServerContext*, const h::Request* request,
                      h::Response* response) override {
      response->set_value("peek:" + request->key());
      return absl::OkStatus();
    }
    void Get(ServerContext*, const h::Request* request, h::Response* response,
             ServerDone done) override {
      // Finished from another thread, after the handler returned.
      std::thread([request, response, done] {
        response->set_value("get:" + request->key());
        done(absl::OkStatus());
      }).detach();
    }
    absl::Status Flush(ServerContext* ctx, const h::Request*,
                       h::Response* response) override {
      response->set_value(ctx->worker() == 0 ? "flushed" : "?");
      return absl::OkStatus();
    }
  } impl;
  std::map<std::string, MethodKind> kinds;
  for (const MethodEntry& m : impl.methods()) kinds[m.full_name] = m.kind;
  const std::string prefix = "/rfrpc.codegen.testdata.handlers.Cache/";
  EXPECT_EQ(kinds[prefix + "Peek"], MethodKind::kSync);
  EXPECT_EQ(kinds[prefix + "PeekExplicit"], MethodKind::kSync);
  EXPECT_EQ(kinds[prefix + "Get"], MethodKind::kAsync);
  EXPECT_EQ(kinds[prefix + "Refresh"], MethodKind::kAsync);
  EXPECT_EQ(kinds[prefix + "Flush"], MethodKind::kBlocking);
  EXPECT_EQ(kinds[prefix + "Compact"], MethodKind::kBlocking);

  Served served{&impl};
  ASSERT_NE(served.channel(), nullptr);
  h::Cache::Stub stub(served.channel());
  h::Request request;
  request.set_key("k");
  h::Response response;
  ASSERT_TRUE(stub.Peek(nullptr, request, &response).ok());
  EXPECT_EQ(response.value(), "peek:k");
  ASSERT_TRUE(stub.Get(nullptr, request, &response).ok());
  EXPECT_EQ(response.value(), "get:k");
  ASSERT_TRUE(stub.Flush(nullptr, request, &response).ok());
  EXPECT_EQ(response.value(), "flushed");
  // Not overridden: UNIMPLEMENTED, through done() for the async one.
  EXPECT_EQ(stub.Refresh(nullptr, request, &response).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(stub.Compact(nullptr, request, &response).code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(stub.PeekExplicit(nullptr, request, &response).code(),
            absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace codegen
}  // namespace rfrpc
