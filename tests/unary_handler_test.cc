// Copyright 2026 The rfrpc Authors.
//
// internal::UnaryHandler reuses its request and response messages per
// thread: each call must still see only its own request and start from an
// empty response, also when calls nest or a method throws.

#include <stdexcept>
#include <string>

#include "gtest/gtest.h"
#include "rpc/service.h"
#include "tests/test_service.pb.h"

namespace rfrpc {
namespace {

using testing::TestRequest;
using testing::TestResponse;

// Echoes what the request sets, nothing more; `nested` lets a call run
// another through the same handler before it answers.
class EchoService {
 public:
  absl::Status Echo(ServerContext*, const TestRequest* req,
                    TestResponse* resp) {
    seen_payload = req->payload();
    seen_id = req->id();
    if (!req->throw_message().empty()) {
      throw std::runtime_error(req->throw_message());
    }
    if (req->id() == 7 && handler != nullptr) {
      TestRequest inner;
      inner.set_payload("inner");
      std::string bytes = inner.SerializeAsString();
      char buf[256];
      size_t len = 0;
      ServerContext ctx;
      EXPECT_TRUE(handler->Run(&ctx, bytes, buf, sizeof(buf), &len).ok());
      TestResponse inner_resp;
      EXPECT_TRUE(inner_resp.ParseFromArray(buf, static_cast<int>(len)));
      EXPECT_EQ(inner_resp.payload(), "inner");
      EXPECT_EQ(inner_resp.id(), 0u);
    }
    // The outer call's request is still its own after a nested call.
    if (!req->payload().empty()) resp->set_payload(req->payload());
    if (req->id() != 0) resp->set_id(req->id());
    return absl::OkStatus();
  }

  MethodHandler* handler = nullptr;
  std::string seen_payload;
  uint64_t seen_id = 0;
};

class UnaryHandlerTest : public ::testing::Test {
 protected:
  UnaryHandlerTest() : handler_(&service_, &EchoService::Echo) {
    service_.handler = &handler_;
  }

  // Runs `req` and parses the response into *resp.
  absl::Status Call(const TestRequest& req, TestResponse* resp) {
    const std::string bytes = req.SerializeAsString();
    char buf[256];
    size_t len = 0;
    ServerContext ctx;
    absl::Status s = handler_.Run(&ctx, bytes, buf, sizeof(buf), &len);
    if (s.ok()) {
      EXPECT_TRUE(resp->ParseFromArray(buf, static_cast<int>(len)));
    }
    return s;
  }

  EchoService service_;
  internal::UnaryHandler<EchoService, TestRequest, TestResponse> handler_;
};

TEST_F(UnaryHandlerTest, NothingCarriesOverFromThePreviousCall) {
  TestRequest full;
  full.set_payload(std::string(100, 'p'));
  full.set_id(42);
  TestResponse resp;
  ASSERT_TRUE(Call(full, &resp).ok());
  EXPECT_EQ(resp.payload(), std::string(100, 'p'));
  EXPECT_EQ(resp.id(), 42u);

  // The next request sets nothing: the method sees empty fields and the
  // response it leaves empty serializes empty.
  TestResponse empty;
  ASSERT_TRUE(Call(TestRequest(), &empty).ok());
  EXPECT_EQ(service_.seen_payload, "");
  EXPECT_EQ(service_.seen_id, 0u);
  EXPECT_EQ(empty.payload(), "");
  EXPECT_EQ(empty.id(), 0u);
}

TEST_F(UnaryHandlerTest, NestedCallGetsItsOwnMessages) {
  TestRequest outer;
  outer.set_payload("outer");
  outer.set_id(7);  // Runs a nested call before answering.
  TestResponse resp;
  ASSERT_TRUE(Call(outer, &resp).ok());
  EXPECT_EQ(resp.payload(), "outer");
  EXPECT_EQ(resp.id(), 7u);
}

TEST_F(UnaryHandlerTest, AThrowingMethodDoesNotKeepTheMessagesBusy) {
  TestRequest bad;
  bad.set_throw_message("boom");
  TestResponse resp;
  EXPECT_THROW(Call(bad, &resp).IgnoreError(), std::runtime_error);
  TestRequest good;
  good.set_payload("after");
  ASSERT_TRUE(Call(good, &resp).ok());
  EXPECT_EQ(resp.payload(), "after");
}

TEST_F(UnaryHandlerTest, MalformedRequestIsInvalidArgument) {
  const std::string junk = "\xff\xff\xff";
  char buf[64];
  size_t len = 0;
  ServerContext ctx;
  EXPECT_EQ(handler_.Run(&ctx, junk, buf, sizeof(buf), &len).code(),
            absl::StatusCode::kInvalidArgument);
  // And the handler works after it.
  TestRequest good;
  good.set_id(3);
  TestResponse resp;
  ASSERT_TRUE(Call(good, &resp).ok());
  EXPECT_EQ(resp.id(), 3u);
}

}  // namespace
}  // namespace rfrpc
