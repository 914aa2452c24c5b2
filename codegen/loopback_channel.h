// Copyright 2026 The rfrpc Authors.
//
// Test helper: a Channel that serves calls in-process from registered
// rfrpc::Service objects, going through the same serialize -> MethodHandler
// -> parse path as a real server, minus the transport. Lets codegen tests
// run generated stubs against generated services.
//
//   MyEchoImpl impl;
//   LoopbackChannel channel;
//   channel.AddService(&impl);
//   Echo::Stub stub(&channel);
//
// Services are not owned and must outlive the channel. CallAsync runs `done`
// on a new thread (like a progress thread would). Thread-compatible for
// AddService; calls are thread-safe.

#ifndef RFRPC_CODEGEN_LOOPBACK_CHANNEL_H_
#define RFRPC_CODEGEN_LOOPBACK_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "rpc/channel.h"
#include "rpc/service.h"

namespace rfrpc {
namespace codegen {

class LoopbackChannel final : public Channel {
 public:
  LoopbackChannel() = default;
  ~LoopbackChannel() override {
    for (std::thread& t : threads_) t.join();
  }

  void AddService(Service* service) {
    for (const MethodEntry& entry : service->methods()) {
      methods_[entry.id] = &entry;
    }
  }

  // The ids of the calls made so far, in order.
  std::vector<uint32_t> called_ids() const {
    absl::MutexLock lock(&mu_);
    return called_ids_;
  }

  absl::Status Call(uint32_t method_id,
                    const google::protobuf::MessageLite& request,
                    google::protobuf::MessageLite* response,
                    ClientContext* ctx) override {
    {
      absl::MutexLock lock(&mu_);
      called_ids_.push_back(method_id);
    }
    auto it = methods_.find(method_id);
    if (it == methods_.end()) {
      return absl::UnimplementedError(
          absl::StrCat("no method with id ", method_id));
    }
    const std::string wire = request.SerializeAsString();
    ServerContext server_ctx;
    server_ctx.Reset(it->second->full_name, "loopback", 0, absl::Now());
    std::string out(64 * 1024, '\0');
    size_t len = 0;
    absl::Status s = it->second->handler->Run(&server_ctx, wire, out.data(),
                                              out.size(), &len);
    if (!s.ok()) return s;
    if (!response->ParseFromArray(out.data(), static_cast<int>(len))) {
      return absl::InternalError("response does not parse");
    }
    return absl::OkStatus();
  }

  void CallAsync(uint32_t method_id,
                 const google::protobuf::MessageLite& request,
                 google::protobuf::MessageLite* response, ClientContext* ctx,
                 std::function<void(absl::Status)> done) override {
    // `request` may die when we return: copy it first.
    std::unique_ptr<google::protobuf::MessageLite> copy(request.New());
    copy->CheckTypeAndMergeFrom(request);
    absl::MutexLock lock(&mu_);
    threads_.emplace_back([this, method_id, copy = std::move(copy), response,
                           ctx, done = std::move(done)] {
      done(Call(method_id, *copy, response, ctx));
    });
  }

  int server_workers() const override { return 1; }
  int connections() const override { return 1; }
  RpcMode connection_mode(int) const override { return RpcMode::kRemoteFetch; }
  ChannelStats stats() const override { return {}; }

 private:
  absl::flat_hash_map<uint32_t, const MethodEntry*> methods_;
  mutable absl::Mutex mu_;
  std::vector<uint32_t> called_ids_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace codegen
}  // namespace rfrpc

#endif  // RFRPC_CODEGEN_LOOPBACK_CHANNEL_H_
