// Copyright 2026 The rfrpc Authors.
//
// Test hooks of the process's progress engine (rpc/channel.cc), which
// drives every channel's async calls. Tests only.

#ifndef RFRPC_RPC_PROGRESS_ENGINE_TESTING_H_
#define RFRPC_RPC_PROGRESS_ENGINE_TESTING_H_

#include <cstdint>

namespace rfrpc {
namespace internal {
namespace testing {

// Each wake of the engine from its idle sleep then counts as costing the
// waking caller `ns` more than it did, as a futex wake under qemu TCG costs
// ~120 us (0: as measured).
void AddToEngineWakeCost(int64_t ns);

// How many times the engine has gone to sleep with nothing to drive.
uint64_t EngineIdleSleeps();

}  // namespace testing
}  // namespace internal
}  // namespace rfrpc

#endif  // RFRPC_RPC_PROGRESS_ENGINE_TESTING_H_
