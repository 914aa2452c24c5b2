#!/usr/bin/env bash
# The README's test command: installs what is missing, then builds and runs
# every test. Exits non-zero if anything fails.
#
#   1. bazel test //...            unit and end-to-end tests on the shm provider
#   2. tools/vm_suite.sh           real verbs (Soft-RoCE in a qemu VM): the provider
#                                  conformance suite and the RF-RPC end-to-end tests
#   3. tests/kvstore_vm_test.sh    Jakiro + YCSB over verbs: one VM, then two VMs
#                                  (server in one, client in the other)
#
# RFRPC_SKIP_VM=1 skips step 2 (e.g. on a machine without qemu).
set -euo pipefail
cd "$(dirname "$0")/.."
# --peers: //kvstore/ycsb links libmemcached and hiredis, and its peer tests
# start memcached and redis-server. --vm: qemu, busybox, perftest for step 2.
groups=(--peers)
if [ "${RFRPC_SKIP_VM:-0}" != 1 ]; then groups+=(--vm); fi
bash tools/setup.sh "${groups[@]}"

BAZEL_FLAGS=()
if [ -n "${CI:-}" ]; then BAZEL_FLAGS+=(--config=ci); fi

echo "== bazel test //... (unit and end-to-end tests, shm provider)"
bazel test "${BAZEL_FLAGS[@]}" //...

if [ "${RFRPC_SKIP_VM:-0}" != 1 ]; then
  echo "== Soft-RoCE VM suite (verbs; figures there show correctness, not hardware speed)"
  bash tools/vm_suite.sh
  echo "== Jakiro over verbs in one and in two Soft-RoCE VMs"
  bazel build "${BAZEL_FLAGS[@]}" //kvstore/server:kvstore_server //kvstore/ycsb:ycsb
  bash tests/kvstore_vm_test.sh
fi
