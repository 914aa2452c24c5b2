#!/usr/bin/env bash
# tools/vm_smoke.sh — proves the Soft-RoCE VM harness end to end, with stock rdma-core/perftest tools:
#   1. one VM (tools/softroce_vm.sh): ibv_devinfo; ib_write_lat and ib_read_lat, server and client in
#      the same VM over rxe0 against eth0's address 10.11.0.1;
#   2. two VMs (tools/softroce_2vm.sh): ibv_rc_pingpong -g 1 from 10.11.0.2 to 10.11.0.1.
# Prints each tool's result, then "N passed, N failed"; exits non-zero on any failure.
# Numbers are from TCG emulation: they show the verbs work, never hardware speed.
# Usage: bash tools/vm_smoke.sh          (as root; needs bash tools/setup.sh --vm)
#        SMOKE_ITERS=200 bash tools/vm_smoke.sh
#
# How a test runs its own binary inside the VM (what this script does with itself): the guest's root
# is the host's /, the working directory and exported environment carry over, so
#   tools/softroce_vm.sh bazel-bin/transport/verbs/verbs_test            (one VM, device rxe0)
#   tools/softroce_2vm.sh bazel-bin/x/server --port=7000 -- bazel-bin/x/client --server=10.11.0.1
# run Bazel-built binaries unchanged: bazel-bin points into /root/.cache/bazel/..., which the guest
# sees because it sees all of the host's /. Start from the workspace root; guest writes vanish.
# The "--in-vm-*" modes below are the parts that run inside the guest.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ITERS=${SMOKE_ITERS:-100}

# ---- guest side ------------------------------------------------------------------------------------
# Runs a perftest pair in this VM: server in the background, client retried until the server listens.
perftest_pair() {
  local tool=$1 port=$2 ip=${RFRPC_VM_IP%/*} spid src crc pin_s=() pin_c=()
  # The guest's vCPUs have unsynchronized TSCs under TCG: pin each side to its own vCPU so that
  # perftest's cycle counter calibration (which printed "inf" once when it migrated) stays sane.
  if [ "$(nproc)" -ge 2 ]; then pin_s=(taskset -c 0); pin_c=(taskset -c 1); fi
  timeout 60 "${pin_s[@]}" "$tool" -d rxe0 -x 1 -F -n "$ITERS" -p "$port" > "/tmp/$tool.server" 2>&1 &
  spid=$!
  for _ in $(seq 20); do
    timeout 30 "${pin_c[@]}" "$tool" -d rxe0 -x 1 -F -n "$ITERS" -p "$port" "$ip" > "/tmp/$tool.client" 2>&1 && break
    grep -q "Couldn't connect\|Unable to init the socket" "/tmp/$tool.client" || break
    sleep 0.5
  done
  wait "$spid"; src=$?
  grep -q '^ *#bytes' "/tmp/$tool.client"; crc=$?
  sed -n '/#bytes/,/^-----/p' "/tmp/$tool.client" | grep -v '^-----'
  if grep -q ' inf ' "/tmp/$tool.client"; then
    echo "note: perftest could not calibrate its cycle counter in this run (emulated TSC); the $ITERS"
    echo "      iterations completed, only the printed times are meaningless"
  fi
  if [ "$src" != 0 ] || [ "$crc" != 0 ]; then
    echo "$tool failed (server exit $src); client and server said:"
    tail -5 "/tmp/$tool.client" "/tmp/$tool.server"
    return 1
  fi
}

case ${1:-} in
  --in-vm-single)
    rc=0
    echo "== ibv_devinfo"
    timeout 30 ibv_devinfo -d rxe0 | grep -E 'hca_id|transport|state|active_mtu|link_layer' || rc=1
    echo "== ib_write_lat -n $ITERS"
    perftest_pair ib_write_lat 18515 || rc=1
    echo "== ib_read_lat -n $ITERS"
    perftest_pair ib_read_lat 18516 || rc=1
    exit $rc
    ;;
  --in-vm-pingpong-server)
    exec timeout 120 ibv_rc_pingpong -d rxe0 -g 1 -n "$ITERS"
    ;;
  --in-vm-pingpong-client)
    for _ in $(seq 60); do
      timeout 30 ibv_rc_pingpong -d rxe0 -g 1 -n "$ITERS" "$RFRPC_VM_PEER" > /tmp/pp 2>&1 && { cat /tmp/pp; exit 0; }
      grep -q "Couldn't connect" /tmp/pp || { cat /tmp/pp; exit 1; }
      sleep 1
    done
    cat /tmp/pp; exit 1
    ;;
  "") ;;
  *) echo "usage: $0" >&2; exit 2 ;;
esac

# ---- host side -------------------------------------------------------------------------------------
bash tools/setup.sh --vm > /dev/null || { echo "setup --vm failed" >&2; exit 1; }
passed=0 ; failed=0
check() {
  local name=$1; shift
  local t0=$SECONDS
  echo "==== $name"
  "$@"
  local rc=$?
  if [ $rc = 0 ]; then
    passed=$((passed + 1)); echo "==== $name: ok ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1)); echo "==== $name: FAILED, exit $rc ($((SECONDS - t0)) s)"
  fi
}
check "one VM: ibv_devinfo, ib_write_lat, ib_read_lat" \
  env RFRPC_VM_TIMEOUT=300 tools/softroce_vm.sh bash tools/vm_smoke.sh --in-vm-single
check "two VMs: ibv_rc_pingpong -g 1, 10.11.0.2 -> 10.11.0.1" \
  env RFRPC_VM_TIMEOUT=300 tools/softroce_2vm.sh bash tools/vm_smoke.sh --in-vm-pingpong-server \
  -- bash tools/vm_smoke.sh --in-vm-pingpong-client
echo "vm_smoke: $passed passed, $failed failed"
[ "$failed" = 0 ]
