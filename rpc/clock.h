// Copyright 2026 The rfrpc Authors.
//
// Moved to base/clock.h; this forwarding header goes once nothing includes it.

#include "base/clock.h"  // IWYU pragma: export
