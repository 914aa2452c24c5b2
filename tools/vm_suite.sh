#!/usr/bin/env bash
# The Soft-RoCE VM suite: real verbs tests that cannot run on this host (no RDMA in its kernel).
# Builds the test binaries on the host, boots ONE VM (tools/softroce_vm.sh) and runs them there one
# after another against rxe0 on the guest's eth0 (10.11.0.1). Figures printed inside the VM show
# correctness under qemu TCG, never hardware speed.
#
# Usage: tools/vm_suite.sh            (tools/test.sh calls it; RFRPC_SKIP_VM=1 skips it)
# Prints one line per binary and a closing "vm_suite: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."

TARGETS=(
  //transport/verbs:verbs_conformance_test
  //transport/verbs:verbs_softroce_test
  //tests:rpc_e2e_test
  //tests:rpc_batch_e2e_test
  //tests:rpc_fault_test
  //tests:rpc_fault_injection_test
  //tests:rpc_isolation_test
  //tests:rpc_discovery_test
  //tests:rpc_async_test
)
bash tools/setup.sh --vm >/dev/null || { echo "vm_suite: setup --vm failed" >&2; exit 1; }
BAZEL_FLAGS=()
if [ -n "${CI:-}" ]; then BAZEL_FLAGS+=(--config=ci); fi
bazel build "${BAZEL_FLAGS[@]}" "${TARGETS[@]}" //transport/verbs:verbs_conformance_peer //tests:rpc_peer || exit 1
BIN=$(bazel info bazel-bin 2>/dev/null)

# The script the guest runs: each binary under its own timeout, a summary at the end.
GUEST=$(mktemp /tmp/rfrpc-vm-suite.XXXXXX.sh)
trap 'rm -f "$GUEST"' EXIT
{
  echo 'set -u'
  echo 'export GLOG_logtostderr=1 RFRPC_REQUIRE_VERBS=1'
  echo 'export RFRPC_VERBS_ADDR=10.11.0.1:0 RFRPC_TEST_PROVIDER=verbs RFRPC_TEST_ADDRESS=10.11.0.1:0'
  printf 'export RFRPC_CONFORMANCE_PEER=%q\n' "$BIN/transport/verbs/verbs_conformance_peer"
  printf 'export RFRPC_RPC_PEER=%q\n' "$BIN/tests/rpc_peer"
  echo 'pass=0; fail=0'
  for t in "${TARGETS[@]}"; do
    path="$BIN/${t#//}"; path="${path/://}"
    printf 'echo "== vm: %s"\n' "$t"
    printf 'if timeout 900 %q --gtest_brief=1; then echo "vm: PASS %s"; pass=$((pass+1)); else echo "vm: FAIL %s (rc $?)"; fail=$((fail+1)); fi\n' "$path" "$t" "$t"
  done
  echo 'echo "vm_suite: $pass passed, $fail failed"'
  echo '[ "$fail" = 0 ]'
} > "$GUEST"
chmod +x "$GUEST"
RFRPC_VM_TIMEOUT=${RFRPC_VM_TIMEOUT:-2400} RFRPC_VM_MEM=${RFRPC_VM_MEM:-2048} \
  bash tools/softroce_vm.sh bash "$GUEST" 2>&1 | tee "${RFRPC_VM_LOG:-/tmp/rfrpc-vm-suite.log}"
exit "${PIPESTATUS[0]}"
