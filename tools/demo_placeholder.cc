// Copyright 2026 The rfrpc Authors.
//
// Placeholder for the README's demo command until Jakiro + YCSB land: proves
// that flags, logging and protobuf link and run in this build.

#include <cstdio>
#include <string>

#include "gflags/gflags.h"
#include "glog/logging.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

DEFINE_string(greeting, "rfrpc", "Name printed by the placeholder demo.");

int main(int argc, char** argv) {
  gflags::SetUsageMessage("rfrpc placeholder demo");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  google::protobuf::Timestamp now =
      google::protobuf::util::TimeUtil::GetCurrentTime();
  std::string wire;
  CHECK(now.SerializeToString(&wire));
  LOG(INFO) << "demo placeholder: " << FLAGS_greeting << ", protobuf "
            << GOOGLE_PROTOBUF_VERSION << ", timestamp of " << wire.size()
            << " bytes on the wire";
  std::printf("rfrpc placeholder demo OK (Jakiro demo not built yet)\n");
  return 0;
}
