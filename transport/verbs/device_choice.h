// Copyright 2026 The rfrpc Authors.
//
// Which RDMA device, port and GID the verbs provider uses: the decision as
// pure code over a description of what the host has (no libibverbs calls),
// so every rule is unit-tested on hosts without RDMA
// (device_choice_test.cc); verbs_provider.cc describes the real devices and
// applies the choice.
//
// Rules (ProviderOptions: device, port, gid_index, address_hint):
//   - device "" or "auto": every device, in libibverbs' order; otherwise the
//     named one. port 0: every port; otherwise that port. Only ACTIVE ports.
//   - gid_index >= 0: that GID (it must exist and be non-zero).
//   - gid_index -1 on an Ethernet (RoCE) port: RoCE v2 GIDs only; the one
//     equal to the address hint if it is an IP of this port, else one of
//     the hint's family (IPv4-mapped ::ffff:a.b.c.d for an IPv4 hint, a
//     plain IPv6 GID for an IPv6 hint), else, with no hint, an IPv4-mapped
//     one, then any. RoCE v1 GIDs are never picked automatically.
//   - gid_index -1 on an InfiniBand port: index 0.
//   - The first port (device order, then port order) with a usable GID
//     wins, except that a port holding the hint's exact IP wins over all.
// Failure is UNAVAILABLE (NOT_FOUND for an unknown device name) with a
// listing of every device, port, state, link layer and GID with its type.
//
// Thread-compatible (pure functions).

#ifndef RFRPC_TRANSPORT_VERBS_DEVICE_CHOICE_H_
#define RFRPC_TRANSPORT_VERBS_DEVICE_CHOICE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rfrpc {
namespace transport {
namespace verbs {

enum class GidType : uint8_t { kUnknown, kIb, kRoceV1, kRoceV2 };
const char* GidTypeText(GidType t);

struct GidDescription {
  int index = 0;
  std::array<uint8_t, 16> raw{};
  GidType type = GidType::kUnknown;
};

struct PortDescription {
  std::string device;
  int port = 1;
  bool active = false;
  std::string state;        // "PORT_ACTIVE", "PORT_DOWN", ...
  bool ethernet = false;    // Link layer: Ethernet (RoCE) or InfiniBand.
  std::vector<GidDescription> gids;  // Non-zero GIDs only.
};

struct DeviceChoice {
  size_t port = 0;  // Index into the descriptions.
  int gid_index = 0;
};

// The GID bytes of an IP address ("10.0.0.1" -> ::ffff:10.0.0.1, or an IPv6
// literal); false if `ip` is neither.
bool IpToGid(const std::string& ip, std::array<uint8_t, 16>* raw);
// "::ffff:10.0.0.1"-style text.
std::string GidText(const std::array<uint8_t, 16>& raw);

// `address_hint`: the host part of the address the provider will listen on
// or connect to ("" or a name that is not an IP: no hint).
absl::StatusOr<DeviceChoice> ChooseDevicePort(
    const std::vector<PortDescription>& ports, const std::string& device,
    int port, int gid_index, const std::string& address_hint);

// Every device, port and GID, one port per line, for error messages.
std::string DescribePorts(const std::vector<PortDescription>& ports);

}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc

#endif  // RFRPC_TRANSPORT_VERBS_DEVICE_CHOICE_H_
