#!/usr/bin/env bash
# The README's test command: installs what is missing, then builds and runs
# every test. Exits non-zero if anything fails.
#
#   1. bazel test //...            unit and end-to-end tests on the shm provider
#   2. tools/soak.sh 2             2-minute soak: every mode, injected faults, every reply
#                                  checked; lost = duplicated = 0, bounded server RSS
#   3. tools/sanitizers.sh         asan+ubsan (one build) on //..., tsan on the concurrent tests
#   4. tools/fuzz.sh run 60        every peer-bytes parser under libFuzzer, 60 s each
#   5. tools/vm_suite.sh           real verbs (Soft-RoCE in a qemu VM): the provider
#                                  conformance suite and the RF-RPC end-to-end tests
#   6. tests/kvstore_vm_test.sh    Jakiro + YCSB over verbs: one VM, then two VMs
#                                  (server in one, client in the other)
#
# RFRPC_SKIP_VM=1 skips steps 5-6 (a machine without qemu); RFRPC_QUICK=1 skips 2-4.
set -euo pipefail
cd "$(dirname "$0")/.."
# --peers: //kvstore/ycsb links libmemcached and hiredis, and its peer tests
# start memcached and redis-server; --bench: gRPC for //benchmarks:grpc_echo
# and gnuplot; --fuzz: clang for step 4; --vm: qemu, busybox, perftest for 5-6.
groups=(--peers --bench --fuzz)
if [ "${RFRPC_SKIP_VM:-0}" != 1 ]; then groups+=(--vm); fi
bash tools/setup.sh "${groups[@]}"

BAZEL_FLAGS=()
if [ -n "${CI:-}" ]; then BAZEL_FLAGS+=(--config=ci); fi

echo "== bazel test //... (unit and end-to-end tests, shm provider)"
bazel test "${BAZEL_FLAGS[@]}" //...

if [ "${RFRPC_QUICK:-0}" != 1 ]; then
  echo "== soak (2 minutes, shm)"
  bash tools/soak.sh 2
  echo "== sanitizers: asan+ubsan (one build) on //..., tsan on the concurrent tests"
  bash tools/sanitizers.sh
  echo "== fuzzers, 60 s each"
  bash tools/fuzz.sh build
  bash tools/fuzz.sh run 60
fi

if [ "${RFRPC_SKIP_VM:-0}" != 1 ]; then
  echo "== Soft-RoCE VM suite (verbs; figures there show correctness, not hardware speed)"
  bash tools/vm_suite.sh
  echo "== Jakiro over verbs in one and in two Soft-RoCE VMs"
  bazel build "${BAZEL_FLAGS[@]}" //kvstore/server:kvstore_server //kvstore/ycsb:ycsb
  bash tests/kvstore_vm_test.sh
fi
