// Copyright 2026 The rfrpc Authors.
//
// The conformance suite's peer process: connects to --address with
// --provider, exposes 4 KiB, reports "ready" on stdout, then waits to be
// killed (exits by itself after --linger_s). Linked with one provider into
// a per-provider cc_binary (e.g. //transport/shm:shm_conformance_peer).

#include <unistd.h>

#include <cstdio>
#include <memory>

#include "absl/time/clock.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "transport/transport.h"

DEFINE_string(provider, "shm", "transport provider to open");
DEFINE_string(address, "", "listener address to connect to");
DEFINE_int32(linger_s, 60, "exit after this many seconds if not killed");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  using rfrpc::transport::Provider;
  auto provider = Provider::Open(FLAGS_provider, {});
  if (!provider.ok()) {
    std::fprintf(stderr, "open: %s\n", provider.status().ToString().c_str());
    return 2;
  }
  auto cq = (*provider)->CreateCompletionQueue({});
  auto mem = (*provider)->AllocateMemory(4096);
  if (!cq.ok() || !mem.ok()) return 2;
  rfrpc::transport::ConnectionSetup setup;
  setup.cq = cq->get();
  setup.exposed.push_back(rfrpc::transport::ExposedRegion{mem->get()});
  setup.user_data = "conformance peer";
  auto conn = (*provider)->Connect(FLAGS_address, setup);
  if (!conn.ok()) {
    std::fprintf(stderr, "connect: %s\n", conn.status().ToString().c_str());
    return 3;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  absl::SleepFor(absl::Seconds(FLAGS_linger_s));
  return 0;
}
