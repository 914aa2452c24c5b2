// Copyright 2026 The rfrpc Authors.

#include "transport/bootstrap.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "transport/handshake.pb.h"

namespace rfrpc {
namespace transport {
namespace {

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    a_.reset(fds[0]);
    b_.reset(fds[1]);
  }
  void SendRaw(const void* p, size_t n) {
    ASSERT_EQ(::write(a_.get(), p, n), static_cast<ssize_t>(n));
  }
  ScopedFd a_, b_;
};

TEST_F(BootstrapTest, RoundTrip) {
  Hello hello;
  hello.set_provider("shm");
  hello.set_user_data(std::string("\0\1\2", 3));
  RegionDescriptor* r = hello.add_regions();
  r->set_addr(0x1000);
  r->set_length(4096);
  r->set_rkey(7);
  ASSERT_TRUE(SendFrame(a_.get(), hello, absl::Seconds(1)).ok());
  Hello got;
  absl::Status s = RecvFrame(b_.get(), &got, absl::Seconds(1));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got.provider(), "shm");
  EXPECT_EQ(got.user_data(), std::string("\0\1\2", 3));
  ASSERT_EQ(got.regions_size(), 1);
  EXPECT_EQ(got.regions(0).rkey(), 7u);
}

TEST_F(BootstrapTest, BadMagicIsInvalidArgument) {
  const char junk[] = "GET / HTTP/1.1\r\n\r\n";
  SendRaw(junk, sizeof(junk));
  Hello got;
  absl::Status s = RecvFrame(b_.get(), &got, absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not an rfrpc endpoint"), std::string::npos) << s;
}

TEST_F(BootstrapTest, WrongVersionIsFailedPrecondition) {
  FrameHeader h{kFrameMagic, kHandshakeVersion + 1, 0, 0};
  SendRaw(&h, sizeof(h));
  Hello got;
  absl::Status s = RecvFrame(b_.get(), &got, absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(absl::StrCat("version ", kHandshakeVersion + 1)),
            std::string::npos)
      << s;
}

TEST_F(BootstrapTest, OversizeIsRejectedBeforeReading) {
  FrameHeader h{kFrameMagic, kHandshakeVersion, 0, kMaxFrameBytes + 1};
  SendRaw(&h, sizeof(h));
  Hello got;
  EXPECT_EQ(RecvFrame(b_.get(), &got, absl::Seconds(1)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(BootstrapTest, GarbledBodyIsInvalidArgument) {
  const char body[] = {'\xff', '\xff', '\xff', '\xff', '\xff'};
  FrameHeader h{kFrameMagic, kHandshakeVersion, 0, sizeof(body)};
  SendRaw(&h, sizeof(h));
  SendRaw(body, sizeof(body));
  Hello got;
  absl::Status s = RecvFrame(b_.get(), &got, absl::Seconds(1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("garbled"), std::string::npos) << s;
}

TEST_F(BootstrapTest, TruncatedFrameThenCloseIsUnavailable) {
  FrameHeader h{kFrameMagic, kHandshakeVersion, 0, 100};
  SendRaw(&h, sizeof(h));
  SendRaw("abc", 3);
  a_.reset();
  Hello got;
  EXPECT_EQ(RecvFrame(b_.get(), &got, absl::Seconds(1)).code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(BootstrapTest, SilentPeerTimesOut) {
  Hello got;
  EXPECT_EQ(RecvFrame(b_.get(), &got, absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace transport
}  // namespace rfrpc
