// Copyright 2026 The rfrpc Authors.
//
// A small rfrpc service for the fuzzers that drive the protobuf-in-slot
// decode path (request_slot_fuzzer, server_fuzzer). Like tests/TestService,
// but bounded so no input can make a handler spin or allocate without limit:
//
//   /rfrpc.fuzz.Fuzz/Echo      TestRequest -> TestResponse: echoes payload and
//                              id, or a payload of response_size bytes
//                              (capped at kMaxResponse), or fails with
//                              fail_code. delay_ns is ignored.
//   /rfrpc.fuzz.Fuzz/Other     NotATestRequest -> TestResponse: text as
//                              payload (a second message type to parse).
//   /rfrpc.fuzz.Fuzz/Later     async Echo: finished inline for even ids, from
//                              a helper thread for odd ones (results that
//                              come late, in and out of batches).
//
// Thread safety: handlers are stateless and thread-safe.

#ifndef RFRPC_FUZZ_FUZZ_SERVICE_H_
#define RFRPC_FUZZ_FUZZ_SERVICE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "rpc/service.h"
#include "tests/test_service.pb.h"

namespace rfrpc {
namespace fuzz {

inline constexpr char kEchoMethod[] = "/rfrpc.fuzz.Fuzz/Echo";
inline constexpr char kOtherMethod[] = "/rfrpc.fuzz.Fuzz/Other";
inline constexpr char kLaterMethod[] = "/rfrpc.fuzz.Fuzz/Later";
inline constexpr uint32_t kMaxResponse = 64 * 1024;

class FuzzService final : public Service {
 public:
  FuzzService();
  absl::Status Echo(ServerContext* ctx, const testing::TestRequest* req,
                    testing::TestResponse* resp);
  absl::Status Other(ServerContext* ctx, const testing::NotATestRequest* req,
                     testing::TestResponse* resp);
  void Later(ServerContext* ctx, const testing::TestRequest* req,
             testing::TestResponse* resp, ServerDone done);
};

// Method ids a fuzz input can pick by index: Echo, Other, an id no method
// has, and Later. `selector` is taken modulo 4.
uint32_t PickMethodId(uint32_t selector);

}  // namespace fuzz
}  // namespace rfrpc

#endif  // RFRPC_FUZZ_FUZZ_SERVICE_H_
