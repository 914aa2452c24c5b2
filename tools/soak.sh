#!/usr/bin/env bash
# Soak: tools/soak.sh [minutes] (default 2). Builds //tests:soak and runs it:
# clients x server workers on shm in every mode (rf, server_reply, hybrid,
# batched fixed/auto/adaptive) with injected faults on every third client,
# every reply checked against its request. Prints calls, errors by code,
# lost / duplicated / mismatched (all must be 0) and the server's RSS after
# warm-up and at the end (growth bound: --rss_growth_limit_mb, 32 MiB).
# Exits non-zero on any failure. Extra arguments go to the binary, e.g.
#   tools/soak.sh 10 --clients=12 --workers=2
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-2}
shift || true
BAZEL_FLAGS=()
if [ -n "${CI:-}" ]; then BAZEL_FLAGS+=(--config=ci); fi
bazel build "${BAZEL_FLAGS[@]}" //tests:soak
seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
GLOG_minloglevel=${GLOG_minloglevel:-2} exec "$(bazel info bazel-bin 2>/dev/null)/tests/soak" --seconds="$seconds" "$@"
