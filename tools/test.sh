#!/usr/bin/env bash
# The README's test command: installs what is missing, then builds and runs
# every test. Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# --peers: //kvstore/ycsb links libmemcached and hiredis, and its peer tests
# start memcached and redis-server.
bash tools/setup.sh --peers

BAZEL_FLAGS=()
if [ -n "${CI:-}" ]; then BAZEL_FLAGS+=(--config=ci); fi

echo "== bazel test //... (unit and end-to-end tests, shm provider)"
bazel test "${BAZEL_FLAGS[@]}" //...
