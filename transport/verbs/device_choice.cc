// Copyright 2026 The rfrpc Authors.

#include "transport/verbs/device_choice.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace rfrpc {
namespace transport {
namespace verbs {
namespace {

bool Ipv4Mapped(const std::array<uint8_t, 16>& g) {
  for (int i = 0; i < 10; ++i) {
    if (g[i] != 0) return false;
  }
  return g[10] == 0xff && g[11] == 0xff;
}

enum class Family { kAny, kV4, kV6 };

// The GID index to use on `p`, or -1; `exact` set when it equals the hint.
int PickGid(const PortDescription& p, int gid_index, Family family,
            const std::array<uint8_t, 16>* hint, bool* exact) {
  *exact = false;
  if (gid_index >= 0) {
    for (const GidDescription& g : p.gids) {
      if (g.index == gid_index) {
        *exact = hint != nullptr && g.raw == *hint;
        return gid_index;
      }
    }
    return -1;
  }
  if (!p.ethernet) {
    for (const GidDescription& g : p.gids) {
      if (g.index == 0) return 0;
    }
    return -1;
  }
  int family_match = -1, mapped = -1, any = -1;
  for (const GidDescription& g : p.gids) {
    if (g.type != GidType::kRoceV2) continue;
    if (hint != nullptr && g.raw == *hint) {
      *exact = true;
      return g.index;
    }
    const bool v4 = Ipv4Mapped(g.raw);
    if (family_match < 0 && ((family == Family::kV4 && v4) ||
                             (family == Family::kV6 && !v4))) {
      family_match = g.index;
    }
    if (mapped < 0 && v4) mapped = g.index;
    if (any < 0) any = g.index;
  }
  if (family != Family::kAny) return family_match;
  return mapped >= 0 ? mapped : any;
}

}  // namespace

const char* GidTypeText(GidType t) {
  switch (t) {
    case GidType::kIb:
      return "IB";
    case GidType::kRoceV1:
      return "RoCE v1";
    case GidType::kRoceV2:
      return "RoCE v2";
    case GidType::kUnknown:
      break;
  }
  return "unknown type";
}

bool IpToGid(const std::string& ip, std::array<uint8_t, 16>* raw) {
  in_addr v4{};
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) {
    raw->fill(0);
    (*raw)[10] = 0xff;
    (*raw)[11] = 0xff;
    std::memcpy(raw->data() + 12, &v4, 4);
    return true;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, ip.c_str(), &v6) == 1) {
    std::memcpy(raw->data(), &v6, 16);
    return true;
  }
  return false;
}

std::string GidText(const std::array<uint8_t, 16>& raw) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(AF_INET6, raw.data(), buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

std::string DescribePorts(const std::vector<PortDescription>& ports) {
  if (ports.empty()) return "no ports";
  std::string out;
  for (const PortDescription& p : ports) {
    absl::StrAppend(&out, "\n  ", p.device, " port ", p.port, ": ", p.state,
                    ", ", p.ethernet ? "Ethernet (RoCE)" : "InfiniBand");
    if (p.gids.empty()) absl::StrAppend(&out, ", no GIDs");
    for (const GidDescription& g : p.gids) {
      absl::StrAppend(&out, "\n    GID ", g.index, " ", GidText(g.raw), " (",
                      GidTypeText(g.type), ")");
    }
  }
  return out;
}

absl::StatusOr<DeviceChoice> ChooseDevicePort(
    const std::vector<PortDescription>& ports, const std::string& device,
    int port, int gid_index, const std::string& address_hint) {
  const bool any_device = device.empty() || device == "auto";
  if (!any_device) {
    bool known = false;
    for (const PortDescription& p : ports) known |= p.device == device;
    if (!known) {
      return absl::NotFoundError(absl::StrCat("RDMA device \"", device,
                                              "\" not found; the host has:",
                                              DescribePorts(ports)));
    }
  }
  std::array<uint8_t, 16> hint{};
  const bool have_hint = IpToGid(address_hint, &hint);
  const Family family = !have_hint          ? Family::kAny
                        : Ipv4Mapped(hint) ? Family::kV4
                                            : Family::kV6;
  // A wildcard address names a family but no port.
  const bool wildcard = have_hint && (address_hint == "0.0.0.0" ||
                                      address_hint == "::");
  int first = -1, first_gid = -1;
  for (size_t i = 0; i < ports.size(); ++i) {
    const PortDescription& p = ports[i];
    if (!any_device && p.device != device) continue;
    if (port > 0 && p.port != port) continue;
    if (!p.active) continue;
    bool exact = false;
    const int g = PickGid(p, gid_index, family,
                          have_hint && !wildcard ? &hint : nullptr, &exact);
    if (g < 0) continue;
    if (exact) return DeviceChoice{i, g};
    if (first < 0) {
      first = static_cast<int>(i);
      first_gid = g;
    }
  }
  if (first >= 0) return DeviceChoice{static_cast<size_t>(first), first_gid};
  std::string want = absl::StrCat(
      any_device ? "any device" : absl::StrCat("device ", device), ", ",
      port > 0 ? absl::StrCat("port ", port) : "any port", ", ",
      gid_index >= 0 ? absl::StrCat("GID index ", gid_index)
                     : (family == Family::kV4   ? "a RoCE v2 IPv4 GID"
                        : family == Family::kV6 ? "a RoCE v2 IPv6 GID"
                                                : "a RoCE v2 (or IB) GID"));
  return absl::UnavailableError(absl::StrCat(
      "no active RDMA port with a usable GID (wanted ", want,
      have_hint ? absl::StrCat(" for ", address_hint) : "",
      "); the host has:", DescribePorts(ports),
      "\n(set --rfrpc_device, --rfrpc_ib_port, --rfrpc_gid_index; a RoCE "
      "port needs an IP address on its netdev)"));
}

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc
