// Copyright 2026 The rfrpc Authors.
//
// --provider: the transport provider of an rfrpc binary (shm, verbs or
// auto), defined once for every binary that links //flags:provider_flag
// (the servers, ycsb's peers, rfrpc_tune, the benchmarks' harness, the test
// peers). Transport-only binaries under transport/ keep their own, so that
// transport/ depends on nothing above it.

#ifndef RFRPC_FLAGS_PROVIDER_FLAG_H_
#define RFRPC_FLAGS_PROVIDER_FLAG_H_

#include "gflags/gflags_declare.h"

DECLARE_string(provider);

#endif  // RFRPC_FLAGS_PROVIDER_FLAG_H_
