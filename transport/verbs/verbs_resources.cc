// Copyright 2026 The rfrpc Authors.

#include "base/errno_text.h"
#include "transport/verbs/verbs_resources.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"
#include "transport/verbs/device_choice.h"

namespace rfrpc {
namespace transport {
namespace verbs {
namespace {

// Frees the list returned by ibv_get_device_list.
struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};

bool IsZero(const ibv_gid& gid) {
  for (uint8_t b : gid.raw) {
    if (b != 0) return false;
  }
  return true;
}

// GID type from sysfs ("IB/RoCE v1" or "RoCE v2"); -1 if unreadable.
int GidTypeFromSysfs(ibv_context* ctx, int port, int index) {
  std::ifstream in(absl::StrCat("/sys/class/infiniband/",
                                ibv_get_device_name(ctx->device), "/ports/",
                                port, "/gid_attrs/types/", index));
  std::string line;
  if (!std::getline(in, line)) return -1;
  if (line.find("RoCE v2") != std::string::npos) return IBV_GID_TYPE_ROCE_V2;
  if (line.find("RoCE") != std::string::npos) return IBV_GID_TYPE_ROCE_V1;
  return IBV_GID_TYPE_IB;
}

}  // namespace

void LogDestroyFailure(const char* what, int rc) {
  LOG(ERROR) << "verbs: destroy failed in " << what << ": rc " << rc << " "
             << ErrnoDetail(rc > 0 ? rc : errno);
}

absl::StatusOr<std::unique_ptr<VerbsContext>> VerbsContext::Open(
    const std::string& device) {
  int num = 0;
  errno = 0;
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(
      ibv_get_device_list(&num));
  if (list == nullptr || num == 0) {
    const int err = errno;
    return absl::UnavailableError(absl::StrCat(
        "no RDMA device found (ibv_get_device_list: ",
        list == nullptr ? ErrnoDetail(err) : "0 devices",
        "; the kernel needs an RDMA driver, e.g. rdma_rxe for Soft-RoCE)"));
  }
  ibv_device* chosen = nullptr;
  std::string names;
  for (int i = 0; i < num; ++i) {
    const char* name = ibv_get_device_name(list.get()[i]);
    absl::StrAppend(&names, i ? ", " : "", name);
    if (chosen == nullptr && (device.empty() || device == name)) {
      chosen = list.get()[i];
    }
  }
  if (chosen == nullptr) {
    return absl::NotFoundError(absl::StrCat("RDMA device \"", device,
                                            "\" not found (have: ", names,
                                            ")"));
  }
  ibv_context* ctx = ibv_open_device(chosen);
  if (ctx == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("ibv_open_device(", ibv_get_device_name(chosen),
                     "): ", ErrnoDetail(errno)));
  }
  return std::make_unique<VerbsContext>(ctx);
}

std::string VerbsContext::device_name() const {
  return get() == nullptr ? "" : ibv_get_device_name(get()->device);
}

absl::StatusOr<std::unique_ptr<VerbsPd>> VerbsPd::Create(ibv_context* ctx) {
  ibv_pd* pd = ibv_alloc_pd(ctx);
  if (pd == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ibv_alloc_pd: ", ErrnoDetail(errno)));
  }
  return std::make_unique<VerbsPd>(pd);
}

absl::StatusOr<std::unique_ptr<VerbsCompChannel>> VerbsCompChannel::Create(
    ibv_context* ctx) {
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  if (ch == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ibv_create_comp_channel: ", ErrnoDetail(errno)));
  }
  auto owner = std::make_unique<VerbsCompChannel>(ch);
  int fl = fcntl(ch->fd, F_GETFL);
  if (fl < 0 || fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
    return absl::InternalError(
        absl::StrCat("fcntl(comp channel): ", ErrnoDetail(errno)));
  }
  return owner;
}

absl::StatusOr<std::unique_ptr<VerbsCq>> VerbsCq::Create(
    ibv_context* ctx, int depth, ibv_comp_channel* channel) {
  ibv_cq* cq = ibv_create_cq(ctx, depth, nullptr, channel, 0);
  if (cq == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ibv_create_cq(depth ", depth, "): ", ErrnoDetail(errno)));
  }
  return std::make_unique<VerbsCq>(cq);
}

absl::StatusOr<std::unique_ptr<VerbsQp>> VerbsQp::Create(
    ibv_pd* pd, ibv_qp_init_attr* attr) {
  ibv_qp* qp = ibv_create_qp(pd, attr);
  if (qp == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "ibv_create_qp(max_send_wr ", attr->cap.max_send_wr, ", max_inline ",
        attr->cap.max_inline_data, "): ", ErrnoDetail(errno)));
  }
  return std::make_unique<VerbsQp>(qp);
}

absl::StatusOr<std::unique_ptr<VerbsMr>> VerbsMr::Register(ibv_pd* pd,
                                                           void* addr,
                                                           size_t length,
                                                           int access) {
  ibv_mr* mr = ibv_reg_mr(pd, addr, length, access);
  if (mr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ibv_reg_mr(", length, " bytes, access 0x",
                     absl::Hex(access), "): ", ErrnoDetail(errno),
                     errno == ENOMEM ? "; check ulimit -l (locked memory)"
                                     : ""));
  }
  return std::make_unique<VerbsMr>(mr);
}

std::string GidToString(const ibv_gid& gid) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET6, gid.raw, buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

namespace {

GidType ToGidType(int t) {
  switch (t) {
    case IBV_GID_TYPE_IB:
      return GidType::kIb;
    case IBV_GID_TYPE_ROCE_V1:
      return GidType::kRoceV1;
    case IBV_GID_TYPE_ROCE_V2:
      return GidType::kRoceV2;
    default:
      return GidType::kUnknown;
  }
}

// Appends the ports of the open device `ctx` to `out`.
void DescribeDevice(ibv_context* ctx, std::vector<PortDescription>* out) {
  ibv_device_attr da{};
  if (ibv_query_device(ctx, &da) != 0) return;
  for (int port = 1; port <= da.phys_port_cnt; ++port) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, static_cast<uint8_t>(port), &pa) != 0) continue;
    PortDescription d;
    d.device = ibv_get_device_name(ctx->device);
    d.port = port;
    d.active = pa.state == IBV_PORT_ACTIVE;
    d.state = ibv_port_state_str(pa.state);
    d.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    for (int i = 0; i < pa.gid_tbl_len; ++i) {
      ibv_gid gid{};
      if (ibv_query_gid(ctx, static_cast<uint8_t>(port), i, &gid) != 0 ||
          IsZero(gid)) {
        continue;
      }
      GidDescription g;
      g.index = i;
      std::memcpy(g.raw.data(), gid.raw, 16);
      int type = GidTypeFromSysfs(ctx, port, i);
      if (type < 0) {
        ibv_gid_entry entry{};
        if (ibv_query_gid_ex(ctx, static_cast<uint8_t>(port), i, &entry, 0) ==
            0) {
          type = static_cast<int>(entry.gid_type);
        }
      }
      g.type = ToGidType(type);
      d.gids.push_back(g);
    }
    out->push_back(std::move(d));
  }
}

}  // namespace

absl::StatusOr<OpenedPort> OpenPort(const std::string& device, int port,
                                    int gid_index,
                                    const std::string& address_hint) {
  if (port < 0 || port > 255) {
    return absl::InvalidArgumentError(absl::StrCat("bad port ", port));
  }
  int num = 0;
  errno = 0;
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(
      ibv_get_device_list(&num));
  if (list == nullptr || num == 0) {
    const int err = errno;
    return absl::UnavailableError(absl::StrCat(
        "no RDMA device found (ibv_get_device_list: ",
        list == nullptr ? ErrnoDetail(err) : "0 devices",
        "; the kernel needs an RDMA driver, e.g. rdma_rxe for Soft-RoCE)"));
  }
  std::vector<std::unique_ptr<VerbsContext>> contexts;
  std::vector<PortDescription> ports;
  std::vector<size_t> context_of;  // Per port: its index in `contexts`.
  std::string unopened;
  for (int i = 0; i < num; ++i) {
    ibv_device* dev = list.get()[i];
    ibv_context* ctx = ibv_open_device(dev);
    if (ctx == nullptr) {
      absl::StrAppend(&unopened, "\n  ", ibv_get_device_name(dev),
                      ": ibv_open_device: ", ErrnoDetail(errno));
      continue;
    }
    contexts.push_back(std::make_unique<VerbsContext>(ctx));
    const size_t before = ports.size();
    DescribeDevice(ctx, &ports);
    context_of.resize(ports.size(), contexts.size() - 1);
    (void)before;
  }
  absl::StatusOr<DeviceChoice> choice =
      ChooseDevicePort(ports, device, port, gid_index, address_hint);
  if (!choice.ok()) {
    return absl::Status(choice.status().code(),
                        absl::StrCat(choice.status().message(), unopened));
  }
  const PortDescription& d = ports[choice->port];
  OpenedPort out;
  out.context = std::move(contexts[context_of[choice->port]]);
  ibv_context* ctx = out.context->get();
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(ctx, static_cast<uint8_t>(d.port), &pa); rc != 0) {
    return absl::UnavailableError(absl::StrCat(
        "ibv_query_port(", d.device, ", ", d.port, "): ", ErrnoDetail(rc)));
  }
  PortInfo& info = out.port;
  info.port = static_cast<uint8_t>(d.port);
  info.lid = pa.lid;
  info.active_mtu = pa.active_mtu;
  info.ethernet = d.ethernet;
  info.gid_index = choice->gid_index;
  GidType type = GidType::kUnknown;
  for (const GidDescription& g : d.gids) {
    if (g.index != choice->gid_index) continue;
    std::memcpy(info.gid.raw, g.raw.data(), 16);
    type = g.type;
  }
  info.gid_text = absl::StrCat(GidToString(info.gid), " (", GidTypeText(type),
                               ", index ", info.gid_index, ")");
  return out;
}

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc
