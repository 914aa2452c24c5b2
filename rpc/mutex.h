// Copyright 2026 The rfrpc Authors.
//
// Moved to base/mutex.h; this forwarding header goes once nothing includes it.

#include "base/mutex.h"  // IWYU pragma: export
