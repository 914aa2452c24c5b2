// Copyright 2026 The rfrpc Authors.
//
// A peer process for the kill tests in rpc_fault_test.cc:
//   --role=server: serves TestService at --address, prints "listening on
//                  <address>" and serves until killed.
//   --role=client: connects to --address and calls Echo in a loop until
//                  killed (prints "calling" once the first call succeeded).

#include <cstdio>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "flags/provider_flag.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "rpc/channel.h"
#include "rpc/server.h"
#include "tests/test_service.h"

DEFINE_string(role, "server", "server or client");
DEFINE_string(address, "", "Listen (server) or connect (client) address.");
DEFINE_int32(workers, 2,
             "Server workers. Two, so connections made one after another land "
             "on different workers (round robin) and a crash in one handler "
             "finds the other's calls in flight.");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  if (FLAGS_role == "server") {
    rfrpc::ServerOptions opts;
    opts.provider = FLAGS_provider;
    opts.address = FLAGS_address;
    opts.workers = FLAGS_workers;
    opts.idle_spin_rounds = 100;
    rfrpc::Server server(opts);
    rfrpc::testing::TestService service;
    CHECK(server.RegisterService(&service).ok());
    absl::Status s = server.Start();
    if (!s.ok()) {
      std::fprintf(stderr, "rpc_peer: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("listening on %s\n", server.address().c_str());
    std::fflush(stdout);
    for (;;) absl::SleepFor(absl::Seconds(1));
  }
  rfrpc::ChannelOptions opts;
  opts.provider = FLAGS_provider;
  auto ch = rfrpc::Channel::Create(FLAGS_address, opts);
  if (!ch.ok()) {
    std::fprintf(stderr, "rpc_peer: %s\n", ch.status().ToString().c_str());
    return 1;
  }
  bool announced = false;
  for (uint64_t i = 1;; ++i) {
    rfrpc::testing::TestRequest req;
    req.set_id(i);
    req.set_delay_ns(i % 2 == 0 ? 100000 : 0);  // Calls in flight when killed.
    rfrpc::testing::TestResponse resp;
    absl::Status s = rfrpc::testing::CallEcho(ch->get(), nullptr, req, &resp);
    if (s.ok() && !announced) {
      std::printf("calling\n");
      std::fflush(stdout);
      announced = true;
    }
  }
}
