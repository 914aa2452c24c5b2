// Copyright 2026 The rfrpc Authors.

#include "base/errno_text.h"
#include "transport/verbs/verbs_resources.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>

#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "glog/logging.h"

namespace rfrpc {
namespace transport {
namespace verbs {
namespace {

// Frees the list returned by ibv_get_device_list.
struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};

bool IsIpv4Mapped(const ibv_gid& gid) {
  static const uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return memcmp(gid.raw, kPrefix, sizeof(kPrefix)) == 0;
}

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

const char* GidTypeName(int type) {
  switch (type) {
    case IBV_GID_TYPE_IB:
      return "IB";
    case IBV_GID_TYPE_ROCE_V1:
      return "RoCE v1";
    case IBV_GID_TYPE_ROCE_V2:
      return "RoCE v2";
  }
  return "unknown type";
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

absl::StatusOr<PortInfo> QueryPort(ibv_context* ctx, int port,
                                   int gid_index) {
  if (port < 1 || port > 255) {
    return absl::InvalidArgumentError(absl::StrCat("bad port ", port));
  }
  ibv_port_attr pa{};
  if (int rc = ibv_query_port(ctx, static_cast<uint8_t>(port), &pa); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ibv_query_port(", ibv_get_device_name(ctx->device), ", ",
                     port, "): ", ErrnoDetail(rc)));
  }
  if (pa.state != IBV_PORT_ACTIVE) {
    return absl::UnavailableError(absl::StrCat(
        "port ", port, " of ", ibv_get_device_name(ctx->device),
        " is not active (", ibv_port_state_str(pa.state), ")"));
  }
  PortInfo info;
  info.port = static_cast<uint8_t>(port);
  info.lid = pa.lid;
  info.active_mtu = pa.active_mtu;
  info.ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;

  // sysfs first (plain text, any kernel with RoCE), then the verb.
  auto gid_type = [&](int index) {
    int type = GidTypeFromSysfs(ctx, port, index);
    if (type >= 0) return type;
    ibv_gid_entry entry{};
    if (ibv_query_gid_ex(ctx, info.port, index, &entry, 0) == 0) {
      return static_cast<int>(entry.gid_type);
    }
    return -1;
  };

  if (gid_index >= 0) {
    if (gid_index >= pa.gid_tbl_len ||
        ibv_query_gid(ctx, info.port, gid_index, &info.gid) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("GID index ", gid_index, " not readable on port ", port,
                       " (table has ", pa.gid_tbl_len, " entries)"));
    }
    info.gid_index = gid_index;
  } else {
    int v2_any = -1, v2_ipv4 = -1;
    ibv_gid any_gid{}, ipv4_gid{};
    for (int i = 0; i < pa.gid_tbl_len && v2_ipv4 < 0; ++i) {
      ibv_gid gid{};
      if (ibv_query_gid(ctx, info.port, i, &gid) != 0 || IsZero(gid)) continue;
      if (gid_type(i) != IBV_GID_TYPE_ROCE_V2) continue;
      if (v2_any < 0) {
        v2_any = i;
        any_gid = gid;
      }
      if (IsIpv4Mapped(gid)) {
        v2_ipv4 = i;
        ipv4_gid = gid;
      }
    }
    if (v2_ipv4 >= 0) {
      info.gid_index = v2_ipv4;
      info.gid = ipv4_gid;
    } else if (v2_any >= 0) {
      info.gid_index = v2_any;
      info.gid = any_gid;
    } else if (!info.ethernet) {
      info.gid_index = 0;
      ibv_query_gid(ctx, info.port, 0, &info.gid);
    } else {
      return absl::UnavailableError(absl::StrCat(
          "no RoCE v2 GID on ", ibv_get_device_name(ctx->device), " port ",
          port, " (is an IP address assigned to its netdev?)"));
    }
  }
  info.gid_text = absl::StrCat(GidToString(info.gid), " (",
                               GidTypeName(gid_type(info.gid_index)),
                               ", index ", info.gid_index, ")");
  return info;
}

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc
