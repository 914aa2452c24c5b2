// Copyright 2026 The rfrpc Authors.

#include "fuzz/fuzz_service.h"

#include <memory>
#include <string>

namespace rfrpc {
namespace fuzz {

FuzzService::FuzzService() : Service("rfrpc.fuzz.Fuzz") {
  AddMethod("Echo",
            std::make_unique<internal::UnaryHandler<
                FuzzService, testing::TestRequest, testing::TestResponse>>(
                this, &FuzzService::Echo));
  AddMethod("Other",
            std::make_unique<internal::UnaryHandler<
                FuzzService, testing::NotATestRequest, testing::TestResponse>>(
                this, &FuzzService::Other));
}

absl::Status FuzzService::Echo(ServerContext* ctx,
                               const testing::TestRequest* req,
                               testing::TestResponse* resp) {
  if (req->fail_code() != 0) {
    // Any int, as a peer could send: the server must cope with codes outside
    // absl's enum.
    return absl::Status(static_cast<absl::StatusCode>(req->fail_code()),
                        "asked to fail");
  }
  resp->set_id(req->id());
  resp->set_worker(static_cast<uint32_t>(ctx->worker()));
  if (req->response_size() > 0) {
    const uint32_t n = req->response_size() < kMaxResponse
                           ? req->response_size()
                           : kMaxResponse;
    resp->set_payload(std::string(n, static_cast<char>('a' + req->id() % 26)));
  } else {
    resp->set_payload(req->payload());
  }
  return absl::OkStatus();
}

absl::Status FuzzService::Other(ServerContext* ctx,
                                const testing::NotATestRequest* req,
                                testing::TestResponse* resp) {
  resp->set_payload(req->text());
  return absl::OkStatus();
}

uint32_t PickMethodId(uint32_t selector) {
  switch (selector % 3) {
    case 0:
      return MethodId(kEchoMethod);
    case 1:
      return MethodId(kOtherMethod);
    default:
      return 0x12345678u;  // No such method: UNIMPLEMENTED.
  }
}

}  // namespace fuzz
}  // namespace rfrpc
