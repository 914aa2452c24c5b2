// Copyright 2026 The rfrpc Authors.

#include "gtest/gtest.h"
#include "transport/transport.h"

namespace rfrpc {
namespace transport {
namespace {

TEST(AddressHostTest, HostPartOfEveryAddressForm) {
  EXPECT_EQ(AddressHost("10.11.0.1:0"), "10.11.0.1");
  EXPECT_EQ(AddressHost("10.11.0.1:18515"), "10.11.0.1");
  EXPECT_EQ(AddressHost("[fe80::1]:7000"), "fe80::1");
  EXPECT_EQ(AddressHost("server.example:7000"), "server.example");
  EXPECT_EQ(AddressHost("/tmp/jakiro.sock"), "");
  EXPECT_EQ(AddressHost("@rfrpc-abstract"), "");
  EXPECT_EQ(AddressHost("jakiro"), "");
  EXPECT_EQ(AddressHost(""), "");
  EXPECT_EQ(AddressHost("[fe80::1"), "");
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc
