#!/usr/bin/env bash
# Jakiro over real verbs (Soft-RoCE, rxe0) in qemu VMs (docs/softroce_vm.md):
#   1. one VM: tests/kvstore_e2e_test.sh with RFRPC_TEST_PROVIDER=verbs, servers
#      listening on the guest's eth0 address 10.11.0.1 (load + run with
#      dataintegrity in rf / server_reply / hybrid and batched, scan, two
#      servers, SIGTERM, a restart with another --workers under a run);
#   2. two VMs (tools/softroce_2vm.sh): kvstore_server in the server VM
#      (10.11.0.1:7000), ycsb load + run with a small recordcount and
#      dataintegrity in the client VM (10.11.0.2).
# Prints what each part printed and "kvstore_vm_test: N passed, N failed";
# exits non-zero on any failure. TCG emulation: correctness, never speed.
#
# Usage (workspace root, as root; needs bash tools/setup.sh --vm --peers):
#   bazel build //kvstore/server:kvstore_server //kvstore/ycsb:ycsb
#   bash tests/kvstore_vm_test.sh [1vm|2vm]     (default: both)
# Under Bazel: //tests:kvstore_vm_test (tagged manual, vm: host `bazel test
# //...` does not run it).
set -uo pipefail
if [ -n "${TEST_SRCDIR:-}" ]; then
  cd "$TEST_SRCDIR/rfrpc" || exit 2   # Runfiles root: same relative layout.
  BIN=.
else
  cd "$(dirname "$0")/.." || exit 2
  BIN=bazel-bin
fi
SERVER="$BIN/kvstore/server/kvstore_server"
YCSB="$BIN/kvstore/ycsb/ycsb"

# ---- guest side: the client VM of part 2 ----------------------------------
if [ "${1:-}" = --in-vm-client ]; then
  server="${RFRPC_VM_PEER%/*}:7000"
  common=(-db jakiro -P kvstore/workloads/workloada -p jakiro.provider=verbs
    -p jakiro.servers="$server" -p jakiro.timeout_ms=60000
    -p recordcount=300 -p operationcount=600 -p dataintegrity=true -threads 1)
  echo "client VM ${RFRPC_VM_IP:-?} -> Jakiro server $server"
  # The server VM boots in parallel: retry the first connection for 120 s.
  "$YCSB" -load "${common[@]}" -p jakiro.connect_retry_ms=120000 || exit 1
  for mode in rf server_reply hybrid; do
    "$YCSB" -t "${common[@]}" -p jakiro.mode="$mode" -p jakiro.print_stats=true || exit 1
  done
  exit 0
fi

if [ ! -x "$SERVER" ] || [ ! -x "$YCSB" ]; then
  echo "build first: bazel build //kvstore/server:kvstore_server //kvstore/ycsb:ycsb" >&2
  exit 2
fi
PART="${1:-all}"
pass=0
fails=0
result() {  # result NAME RC
  if [ "$2" = 0 ]; then pass=$((pass + 1)); echo "== $1: PASS"
  else fails=$((fails + 1)); echo "== $1: FAIL (exit $2)"; fi
}

if [ "$PART" = all ] || [ "$PART" = 1vm ]; then
  echo "== 1 VM: tests/kvstore_e2e_test.sh over verbs (rxe0, 10.11.0.1)"
  RFRPC_TEST_PROVIDER=verbs RFRPC_TEST_ADDRESS=10.11.0.1:0 \
    RFRPC_TEST_ADDRESS2=10.11.0.1:0 RFRPC_TEST_BIN="$BIN" \
    RFRPC_TEST_WORKLOADS=kvstore/workloads RFRPC_TEST_RECORDS=400 \
    RFRPC_TEST_OPS=800 RFRPC_TEST_RESTART_RUN=40 \
    tools/softroce_vm.sh bash tests/kvstore_e2e_test.sh
  result "1 VM" $?
fi

if [ "$PART" = all ] || [ "$PART" = 2vm ]; then
  echo "== 2 VMs: kvstore_server on 10.11.0.1:7000, ycsb on 10.11.0.2"
  # The server runs until the client VM ends and the harness kills its VM.
  tools/softroce_2vm.sh timeout 500 "$SERVER" --provider=verbs \
    --address=10.11.0.1:7000 --workers=2 --kv_memory_mb=16 \
    -- bash tests/kvstore_vm_test.sh --in-vm-client
  result "2 VMs" $?
fi
echo "kvstore_vm_test: $pass passed, $fails failed"
[ "$fails" = 0 ]
