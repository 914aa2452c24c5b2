// Copyright 2026 The rfrpc Authors.
//
// Synthetic tuner profiles for tests: I(R, F, P) given by a function,
// measured at every candidate fetch size, so the optimum is known exactly.

#ifndef RFRPC_RPC_TUNER_TEST_PROFILES_H_
#define RFRPC_RPC_TUNER_TEST_PROFILES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rpc/tuner/profile.h"

namespace rfrpc {
namespace tuner {

struct SyntheticSpec {
  std::string provider = "shm";
  uint32_t low = 128;    // L.
  uint32_t high = 8192;  // H.
  uint32_t step = 64;
  int max_retries = 5;   // N.
  std::vector<uint32_t> server_times_ns = {0};
  // I(R, F, P) in calls/s. Must be set.
  std::function<double(int retries, uint32_t fetch_size,
                       uint32_t server_time_ns)>
      ops;
};

TunerProfile MakeSyntheticProto(const SyntheticSpec& spec);

}  // namespace tuner
}  // namespace rfrpc

#endif  // RFRPC_RPC_TUNER_TEST_PROFILES_H_
