// Copyright 2026 The rfrpc Authors.
//
// Move-only RAII owners for the libibverbs objects the verbs provider uses
// (device context, protection domain, completion channel, completion queue,
// queue pair, memory registration), their factories, and device/port/GID
// discovery. Setup-time code only; the data path lives in verbs_datapath.cc.
//
// Each owner holds one ibv_* pointer and destroys it exactly once; owners are
// movable, not copyable. Factories return absl::StatusOr<std::unique_ptr<T>>
// with a message naming the failed verb and errno text. The owners do not
// keep their parents alive: callers destroy children first (QP and MR before
// PD, QP before CQ, CQ before channel, everything before the context); the
// member order of the classes in verbs_internal.h encodes this.
//
// Thread safety: the owners are thread-compatible. The raw pointers they hand
// out follow libibverbs' own rules (posting and polling are thread-safe).
//
// Example:
//
//   RFRPC_ASSIGN_OR_RETURN(auto ctx, VerbsContext::Open(""));
//   RFRPC_ASSIGN_OR_RETURN(auto pd, VerbsPd::Create(ctx->get()));
//   RFRPC_ASSIGN_OR_RETURN(auto mr,
//       VerbsMr::Register(pd->get(), buf, len, IBV_ACCESS_LOCAL_WRITE));

#ifndef RFRPC_TRANSPORT_VERBS_VERBS_RESOURCES_H_
#define RFRPC_TRANSPORT_VERBS_VERBS_RESOURCES_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfrpc {
namespace transport {
namespace verbs {

// Logs (never aborts) when a destroy verb fails; used by IbvHandle.
void LogDestroyFailure(const char* what, int rc);

// Owns one T*, destroyed by Destroy (an ibv_destroy_*/dealloc/dereg/close
// verb). Move-only.
template <typename T, int (*Destroy)(T*)>
class IbvHandle {
 public:
  IbvHandle() = default;
  explicit IbvHandle(T* p) : p_(p) {}
  ~IbvHandle() { reset(); }
  IbvHandle(IbvHandle&& other) noexcept
      : p_(std::exchange(other.p_, nullptr)) {}
  IbvHandle& operator=(IbvHandle&& other) noexcept {
    if (this != &other) reset(std::exchange(other.p_, nullptr));
    return *this;
  }
  IbvHandle(const IbvHandle&) = delete;
  IbvHandle& operator=(const IbvHandle&) = delete;

  T* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  void reset(T* p = nullptr) {
    if (p_ != nullptr) {
      int rc = Destroy(p_);
      if (rc != 0) LogDestroyFailure(__PRETTY_FUNCTION__, rc);
    }
    p_ = p;
  }

 private:
  T* p_ = nullptr;
};

// An open device (ibv_open_device / ibv_close_device).
class VerbsContext : public IbvHandle<ibv_context, &ibv_close_device> {
 public:
  using IbvHandle::IbvHandle;
  // Opens `device` ("" = the first one). UNAVAILABLE "no RDMA device found
  // (...)" when libibverbs lists none; NOT_FOUND for an unknown name.
  static absl::StatusOr<std::unique_ptr<VerbsContext>> Open(
      const std::string& device);
  std::string device_name() const;
};

// A protection domain (ibv_alloc_pd / ibv_dealloc_pd).
class VerbsPd : public IbvHandle<ibv_pd, &ibv_dealloc_pd> {
 public:
  using IbvHandle::IbvHandle;
  // `ctx` is not owned and must outlive the PD.
  static absl::StatusOr<std::unique_ptr<VerbsPd>> Create(ibv_context* ctx);
};

// A completion event channel; its fd is made non-blocking.
class VerbsCompChannel
    : public IbvHandle<ibv_comp_channel, &ibv_destroy_comp_channel> {
 public:
  using IbvHandle::IbvHandle;
  static absl::StatusOr<std::unique_ptr<VerbsCompChannel>> Create(
      ibv_context* ctx);
};

// A completion queue (ibv_create_cq / ibv_destroy_cq).
class VerbsCq : public IbvHandle<ibv_cq, &ibv_destroy_cq> {
 public:
  using IbvHandle::IbvHandle;
  // `channel` may be null (no events). Neither pointer is kept as owned.
  static absl::StatusOr<std::unique_ptr<VerbsCq>> Create(
      ibv_context* ctx, int depth, ibv_comp_channel* channel);
};

// A queue pair (ibv_create_qp / ibv_destroy_qp).
class VerbsQp : public IbvHandle<ibv_qp, &ibv_destroy_qp> {
 public:
  using IbvHandle::IbvHandle;
  static absl::StatusOr<std::unique_ptr<VerbsQp>> Create(
      ibv_pd* pd, ibv_qp_init_attr* attr);
};

// A memory registration (ibv_reg_mr / ibv_dereg_mr).
class VerbsMr : public IbvHandle<ibv_mr, &ibv_dereg_mr> {
 public:
  using IbvHandle::IbvHandle;
  static absl::StatusOr<std::unique_ptr<VerbsMr>> Register(ibv_pd* pd,
                                                           void* addr,
                                                           size_t length,
                                                           int access);
};

// What the provider learned about its port at open time.
struct PortInfo {
  uint8_t port = 1;
  int gid_index = 0;
  ibv_gid gid{};
  uint16_t lid = 0;
  ibv_mtu active_mtu = IBV_MTU_1024;
  bool ethernet = false;  // RoCE: address handles need a GRH.
  std::string gid_text;   // For logs: "::ffff:10.11.0.1 (RoCE v2, index 1)".
};

// The device, port and GID the provider uses, opened.
struct OpenedPort {
  std::unique_ptr<VerbsContext> context;
  PortInfo port;
};

// Describes every device, port and GID of the host, picks one per
// ChooseDevicePort (device_choice.h: `device` "" or "auto", `port` 0 = any,
// `gid_index` -1 = automatic, `address_hint` the IP the provider will use)
// and opens it. GID types come from sysfs (/sys/class/infiniband/<dev>/
// ports/<port>/gid_attrs/types/<i>), falling back to ibv_query_gid_ex.
// UNAVAILABLE "no RDMA device found (...)" without devices; otherwise the
// choice's error, which lists what the host has.
absl::StatusOr<OpenedPort> OpenPort(const std::string& device, int port,
                                    int gid_index,
                                    const std::string& address_hint);

// "::ffff:10.11.0.1"-style text for a GID.
std::string GidToString(const ibv_gid& gid);

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_VERBS_VERBS_RESOURCES_H_
