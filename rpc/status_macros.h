// Copyright 2026 The rfrpc Authors.
//
// Moved to base/status_macros.h; this forwarding header goes once nothing includes it.

#include "base/status_macros.h"  // IWYU pragma: export
