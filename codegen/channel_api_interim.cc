// Copyright 2026 The rfrpc Authors.
//
// Interim definition of the one non-virtual Channel member, so code using
// generated stubs links before main's //rpc:rpc exists. Behaves as
// rpc/channel.h documents. Delete together with //codegen:channel_api when
// rfrpc.bzl switches to //rpc:rpc.

#include <future>
#include <memory>
#include <utility>

#include "rpc/channel.h"

namespace rfrpc {

std::future<absl::Status> Channel::CallFuture(
    uint32_t method_id, const google::protobuf::MessageLite& request,
    google::protobuf::MessageLite* response, ClientContext* ctx) {
  auto promise = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> future = promise->get_future();
  CallAsync(method_id, request, response, ctx,
            [promise](absl::Status status) {
              promise->set_value(std::move(status));
            });
  return future;
}

}  // namespace rfrpc
