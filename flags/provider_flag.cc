// Copyright 2026 The rfrpc Authors.

#include "flags/provider_flag.h"

#include "gflags/gflags.h"

DEFINE_string(provider, "shm",
              "Transport provider: shm (same host, shared memory), verbs "
              "(rdma-core) or auto (verbs if a device is up, else shm).");
