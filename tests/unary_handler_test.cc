// Copyright 2026 The rfrpc Authors.
//
// internal::UnaryHandler keeps one request and one response per thread and
// reuses them: each call must still see a fresh request and fill a fresh
// response, whatever the previous call (or a call running inside it, or a
// handler that threw) left behind.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "rpc/service.h"
#include "tests/test_service.pb.h"

namespace rfrpc {
namespace testing {
namespace {

// Sets only what the request asks for, so left-over fields would show.
class Sparse {
 public:
  absl::Status Run(ServerContext* ctx, const TestRequest* req,
                   TestResponse* resp) {
    seen_payload = req->payload();
    seen_id = req->id();
    if (!req->text().empty()) {
      // A call of the same handler inside this one.
      TestRequest inner;
      inner.set_id(req->id() + 1000);
      std::string out;
      out.resize(64);
      size_t len = 0;
      absl::Status s = handler->Run(ctx, inner.SerializeAsString(), out.data(),
                                    out.size(), &len);
      if (!s.ok()) return s;
      TestResponse inner_resp;
      if (!inner_resp.ParseFromArray(out.data(), static_cast<int>(len))) {
        return absl::InternalError("inner response does not parse");
      }
      resp->set_worker(static_cast<uint32_t>(inner_resp.id()));
    }
    if (!req->throw_message().empty()) {
      resp->set_payload("half-done");
      throw std::runtime_error(req->throw_message());
    }
    if (req->fail_code() != 0) {
      resp->set_payload("half-done");
      return absl::Status(static_cast<absl::StatusCode>(req->fail_code()),
                          "asked to fail");
    }
    if (req->id() != 0) resp->set_id(req->id());
    if (!req->payload().empty()) resp->set_payload(req->payload());
    return absl::OkStatus();
  }

  MethodHandler* handler = nullptr;
  std::string seen_payload;
  uint64_t seen_id = 0;
};

using Handler = internal::UnaryHandler<Sparse, TestRequest, TestResponse>;

class UnaryHandlerTest : public ::testing::Test {
 protected:
  UnaryHandlerTest() : handler_(&service_, &Sparse::Run) {
    service_.handler = &handler_;
  }

  // Runs `req`; returns the status and parses the response into `resp`.
  absl::Status Call(const TestRequest& req, TestResponse* resp) {
    std::string out(1 << 16, '\0');
    size_t len = 0;
    absl::Status s =
        handler_.Run(&ctx_, req.SerializeAsString(), out.data(), out.size(), &len);
    resp->Clear();
    if (s.ok()) {
      EXPECT_TRUE(resp->ParseFromArray(out.data(), static_cast<int>(len)));
    }
    return s;
  }

  Sparse service_;
  Handler handler_;
  ServerContext ctx_;
};

TEST_F(UnaryHandlerTest, ResponseFieldsOfTheLastCallDoNotCarryOver) {
  TestRequest first;
  first.set_id(7);
  first.set_payload("first payload, longer than a short string");
  TestResponse resp;
  ASSERT_TRUE(Call(first, &resp).ok());
  EXPECT_EQ(resp.id(), 7u);
  EXPECT_EQ(resp.payload(), first.payload());

  TestRequest empty;  // Sets nothing.
  ASSERT_TRUE(Call(empty, &resp).ok());
  EXPECT_EQ(resp.id(), 0u);
  EXPECT_EQ(resp.payload(), "");
  EXPECT_EQ(resp.worker(), 0u);
  EXPECT_EQ(resp.ByteSizeLong(), 0u);
}

TEST_F(UnaryHandlerTest, RequestFieldsOfTheLastCallDoNotCarryOver) {
  TestRequest first;
  first.set_id(9);
  first.set_payload("seen once");
  TestResponse resp;
  ASSERT_TRUE(Call(first, &resp).ok());
  EXPECT_EQ(service_.seen_payload, "seen once");

  TestRequest second;  // No payload, no id.
  ASSERT_TRUE(Call(second, &resp).ok());
  EXPECT_EQ(service_.seen_payload, "");
  EXPECT_EQ(service_.seen_id, 0u);
}

TEST_F(UnaryHandlerTest, FailedCallLeavesNothingForTheNext) {
  TestRequest fail;
  fail.set_fail_code(static_cast<int>(absl::StatusCode::kAborted));
  TestResponse resp;
  EXPECT_EQ(Call(fail, &resp).code(), absl::StatusCode::kAborted);

  TestRequest empty;
  ASSERT_TRUE(Call(empty, &resp).ok());
  EXPECT_EQ(resp.payload(), "");
}

TEST_F(UnaryHandlerTest, ThrowingHandlerLeavesTheKeptMessagesUsable) {
  TestRequest boom;
  boom.set_throw_message("boom");
  TestResponse resp;
  EXPECT_THROW(Call(boom, &resp), std::runtime_error);

  TestRequest next;
  next.set_id(3);
  ASSERT_TRUE(Call(next, &resp).ok());
  EXPECT_EQ(resp.id(), 3u);
  EXPECT_EQ(resp.payload(), "");  // Not the thrown call's "half-done".
}

TEST_F(UnaryHandlerTest, NestedCallOfTheSameHandlerGetsItsOwnMessages) {
  TestRequest outer;
  outer.set_id(5);
  outer.set_payload("outer payload");
  outer.set_text("nest");
  TestResponse resp;
  ASSERT_TRUE(Call(outer, &resp).ok());
  // The inner call (id 1005) answered into its own response; the outer
  // request and response were not touched by it.
  EXPECT_EQ(resp.worker(), 1005u);
  EXPECT_EQ(resp.id(), 5u);
  EXPECT_EQ(resp.payload(), "outer payload");
}

TEST_F(UnaryHandlerTest, LargeMessagesAreServedLikeSmallOnes) {
  TestRequest big;
  big.set_id(11);
  big.set_payload(std::string(20000, 'x'));
  TestResponse resp;
  ASSERT_TRUE(Call(big, &resp).ok());
  EXPECT_EQ(resp.payload(), big.payload());

  TestRequest small;
  small.set_payload("small");
  ASSERT_TRUE(Call(small, &resp).ok());
  EXPECT_EQ(resp.payload(), "small");
  EXPECT_EQ(resp.id(), 0u);
}

}  // namespace
}  // namespace testing
}  // namespace rfrpc
