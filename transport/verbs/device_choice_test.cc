// Copyright 2026 The rfrpc Authors.

#include "transport/verbs/device_choice.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rfrpc {
namespace transport {
namespace verbs {
namespace {

GidDescription Gid(int index, const std::string& ip, GidType type) {
  GidDescription g;
  g.index = index;
  g.type = type;
  EXPECT_TRUE(IpToGid(ip, &g.raw)) << ip;
  return g;
}

PortDescription Roce(const std::string& dev, int port, bool active,
                     std::vector<GidDescription> gids) {
  PortDescription p;
  p.device = dev;
  p.port = port;
  p.active = active;
  p.state = active ? "PORT_ACTIVE" : "PORT_DOWN";
  p.ethernet = true;
  p.gids = std::move(gids);
  return p;
}

// A typical RoCE host: each IP appears as a v1 and a v2 GID, link-local
// IPv6 first.
std::vector<PortDescription> Host() {
  return {
      Roce("mlx5_0", 1, false,
           {Gid(0, "fe80::1", GidType::kRoceV1), Gid(1, "fe80::1", GidType::kRoceV2)}),
      Roce("mlx5_1", 1, true,
           {Gid(0, "fe80::2", GidType::kRoceV1), Gid(1, "fe80::2", GidType::kRoceV2),
            Gid(2, "10.0.0.7", GidType::kRoceV1), Gid(3, "10.0.0.7", GidType::kRoceV2),
            Gid(4, "2001:db8::7", GidType::kRoceV2)}),
      Roce("mlx5_2", 1, true,
           {Gid(0, "10.1.0.7", GidType::kRoceV1), Gid(1, "10.1.0.7", GidType::kRoceV2)}),
  };
}

TEST(DeviceChoiceTest, AutoTakesTheFirstActivePortAndItsIpv4V2Gid) {
  auto c = ChooseDevicePort(Host(), "auto", 0, -1, "");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->port, 1u) << "mlx5_0's port is down";
  EXPECT_EQ(c->gid_index, 3) << "RoCE v2, IPv4-mapped, not the v1 twin";
}

TEST(DeviceChoiceTest, TheAddressFamilyOfTheHintDecides) {
  auto v6 = ChooseDevicePort(Host(), "", 0, -1, "2001:db8::99");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->port, 1u);
  EXPECT_EQ(v6->gid_index, 1) << "the first v2 IPv6 GID of the first port";
  auto v4 = ChooseDevicePort(Host(), "", 0, -1, "0.0.0.0");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->gid_index, 3);
}

TEST(DeviceChoiceTest, APortHoldingTheHintsExactIpWins) {
  auto c = ChooseDevicePort(Host(), "", 0, -1, "10.1.0.7");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, 2u);
  EXPECT_EQ(c->gid_index, 1);
  auto v6 = ChooseDevicePort(Host(), "", 0, -1, "2001:db8::7");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->port, 1u);
  EXPECT_EQ(v6->gid_index, 4);
}

TEST(DeviceChoiceTest, NamedDevicePortAndIndexAreHonoured) {
  auto c = ChooseDevicePort(Host(), "mlx5_2", 1, -1, "");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, 2u);
  auto g = ChooseDevicePort(Host(), "mlx5_1", 0, 2, "");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->gid_index, 2) << "an explicit index may even be RoCE v1";
  EXPECT_EQ(ChooseDevicePort(Host(), "mlx5_1", 0, 9, "").status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(DeviceChoiceTest, InfinibandPortsUseIndexZero) {
  PortDescription ib;
  ib.device = "mlx4_0";
  ib.port = 2;
  ib.active = true;
  ib.state = "PORT_ACTIVE";
  ib.ethernet = false;
  ib.gids = {Gid(0, "fe80::5", GidType::kIb)};
  auto c = ChooseDevicePort({ib}, "", 0, -1, "10.0.0.1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->gid_index, 0);
}

TEST(DeviceChoiceTest, FailuresListWhatTheHostHas) {
  auto unknown = ChooseDevicePort(Host(), "rxe9", 0, -1, "");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("mlx5_2 port 1: PORT_ACTIVE"),
            std::string::npos)
      << unknown.status();
  // Only a v1 GID for the hint's family: refused, with every GID listed.
  std::vector<PortDescription> v1only = {
      Roce("rxe0", 1, true, {Gid(0, "10.11.0.1", GidType::kRoceV1)})};
  auto none = ChooseDevicePort(v1only, "", 0, -1, "10.11.0.1");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("GID 0 ::ffff:10.11.0.1 (RoCE v1)"),
            std::string::npos)
      << none.status();
  auto down = ChooseDevicePort({Host()[0]}, "", 0, -1, "");
  EXPECT_NE(down.status().message().find("PORT_DOWN"), std::string::npos);
}

}  // namespace
}  // namespace verbs
}  // namespace transport
}  // namespace rfrpc
