// Copyright 2026 The rfrpc Authors.
//
// Fuzzes the bootstrap handshake as a listener and a connector receive it:
// the input is written into one end of a socketpair and the other end is read
// with the real RecvFrame, first as a Hello (what a listener reads), then,
// from the bytes that follow, as a HelloReply (what a connector reads). The
// rpc layer's RpcHello / RpcWelcome inside user_data are parsed as the server
// and the client parse them. Every outcome must be a status, never a crash.

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/time/time.h"
#include "fuzz/fuzz_util.h"
#include "rpc/rpc_handshake.pb.h"
#include "transport/bootstrap.h"
#include "transport/handshake.pb.h"

namespace {

using rfrpc::transport::RecvFrame;

void CheckRoundTrip(const google::protobuf::MessageLite& msg) {
  // What parsed must serialize (SendFrame's path) without tripping anything.
  std::string out;
  if (!msg.SerializeToString(&out)) abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rfrpc::fuzz::QuietProtobufLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
  // The socket buffer holds well over a maximal frame (64 KiB + 12); write
  // what fits without blocking, then close so the reader sees EOF, not a
  // timeout.
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  size_t off = 0;
  while (off < size) {
    ssize_t n = send(sv[0], data + off, size - off, MSG_NOSIGNAL);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(sv[0]);

  rfrpc::transport::ScopedFd fd(sv[1]);
  rfrpc::transport::Hello hello;
  absl::Status s = RecvFrame(fd.get(), &hello, absl::Seconds(1));
  if (s.code() == absl::StatusCode::kDeadlineExceeded) abort();  // EOF, not a hang.
  if (s.ok()) {
    CheckRoundTrip(hello);
    rfrpc::rpc::RpcHello rpc_hello;
    if (rpc_hello.ParseFromString(hello.user_data())) CheckRoundTrip(rpc_hello);
  }
  rfrpc::transport::HelloReply reply;
  s = RecvFrame(fd.get(), &reply, absl::Seconds(1));
  if (s.code() == absl::StatusCode::kDeadlineExceeded) abort();
  if (s.ok()) {
    CheckRoundTrip(reply);
    rfrpc::rpc::RpcWelcome welcome;
    if (welcome.ParseFromString(reply.hello().user_data())) {
      CheckRoundTrip(welcome);
    }
  }
  return 0;
}
