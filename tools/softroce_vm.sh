#!/usr/bin/env bash
# tools/softroce_vm.sh CMD [ARGS...]
#
# Runs CMD with real RDMA verbs: boots Debian's stock kernel in qemu (TCG, no KVM needed), creates the
# Soft-RoCE device rxe0 on the guest's eth0, and runs CMD there as root. The guest's root is the host's
# own / (9p, read-only, with a tmpfs overlay: writes work and vanish with the VM), chrooted, so
# host-built binaries run as they are. CMD runs in the caller's working directory with the caller's
# exported environment (plus RFRPC_VM_GUEST=1 and
# RFRPC_VM_IP, the guest's eth0 address/prefix); stdin is /dev/null. Its stdout and stderr stream back
# to this script's stdout and stderr while it runs.
#
# Exit status: CMD's; 124 if CMD or the VM timed out; 125 if the VM failed without an exit status
# (the guest console and qemu's log are then printed to stderr); 2 on bad usage or a missing image.
#
# Inside the guest: rxe0, port 1, GID index 1 = the IPv4-mapped RoCEv2 GID of eth0's address
# (10.11.0.1 by default). `ibv_rc_pingpong` needs `-g 1`; perftest needs `-x 1`. rdma_cm cannot use
# 127.0.0.1: connect to eth0's address. Put a `timeout` on any server you start in the background.
#
# Knobs (environment):
#   RFRPC_VM_TIMEOUT  seconds until the VM is killed (default 600) -> 124. CMD itself gets
#                     RFRPC_VM_TIMEOUT - 20 inside the guest, so a hung CMD also ends as 124.
#   RFRPC_VM_MEM      guest RAM in MiB (default 1024; the tmpfs overlay lives in it too)
#   RFRPC_VM_SMP      guest vCPUs (default: host cores, at most 2)
#   RFRPC_VM_NETDEV   guest device rxe0 sits on: eth0 (default), dummy0, or lo (then RFRPC_VM_IP=127.0.0.2/8)
#   RFRPC_VM_IP       guest address with prefix (default 10.11.0.1/24)
#   RFRPC_VM_MAC      eth0 MAC (default 52:54:00:0b:00:01; must differ between linked VMs)
#   RFRPC_VM_NET      qemu -netdev backend of eth0 (default user,restrict=on: no way out of the VM).
#                     Two linked VMs: socket,udp=127.0.0.1:PB,localaddr=127.0.0.1:PA and the mirror
#                     in the other VM; tools/softroce_2vm.sh does exactly that.
#   RFRPC_VM_CACHE    kernel/initramfs cache (default /var/cache/rfrpc-vm; see softroce_vm_image.sh)
#   RFRPC_VM_APPEND   extra kernel command line parameters
#   RFRPC_VM_VERBOSE=1  print boot timing, the guest console and qemu's log to stderr afterwards
#   RFRPC_VM_KEEP=1   keep the per-run folder (command script, console log, qemu log)
#
# Running a Bazel-built binary (the guest sees the host's whole /, so bazel-bin works unchanged):
#   bazel build //transport/verbs:verbs_test
#   tools/softroce_vm.sh bazel-bin/transport/verbs/verbs_test --gtest_brief=1
# bazel-bin is a symlink into /root/.cache/bazel/_bazel_root/<hash>/execroot/rfrpc/bazel-out/...;
# that is visible because the guest root is the host's /, and so are the binary's .runfiles tree and
# _solib_k8 shared libraries (absolute symlinks / $ORIGIN rpaths). Run from the workspace root (CMD
# runs in the same cwd). Writes inside the guest vanish: report results on stdout/stderr (or exit
# status). Inside a `bazel test` action, depend on //tools:softroce_vm (data) and call this script and
# the binary by their runfiles paths ($TEST_SRCDIR/rfrpc/...): host paths, so the same inside the guest.
# //tools:vm_smoke_test does exactly that.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 CMD [ARGS...]" >&2; exit 2; }
command -v qemu-system-x86_64 >/dev/null || { echo "softroce_vm: no qemu (bash tools/setup.sh --vm)" >&2; exit 2; }

IMAGE=$("$HERE/softroce_vm_image.sh") || { echo "softroce_vm: building the VM image failed" >&2; exit 2; }
KERNEL=$(sed -n 's/^KERNEL=//p' <<< "$IMAGE")
INITRD=$(sed -n 's/^INITRD=//p' <<< "$IMAGE")

TMO=${RFRPC_VM_TIMEOUT:-600}
CMD_TMO=$((TMO > 40 ? TMO - 20 : TMO / 2))
MEM=${RFRPC_VM_MEM:-1024}
NCPU=$(nproc)
SMP=${RFRPC_VM_SMP:-$((NCPU < 2 ? NCPU : 2))}
NETDEV=${RFRPC_VM_NETDEV:-eth0}
IP=${RFRPC_VM_IP:-10.11.0.1/24}
MAC=${RFRPC_VM_MAC:-52:54:00:0b:00:01}
NET=${RFRPC_VM_NET:-user,restrict=on}

# Per-run folder on the host: the guest reads cmd.sh through the 9p root (same path), the host reads
# the exit status and logs from it. Kept out of the cache so parallel runs never share anything.
RUN=$(mktemp -d "${TMPDIR:-/tmp}/rfrpc-vm.XXXXXX") || exit 2
RUN=$(cd "$RUN" && pwd -P)  # the guest resolves no host symlinks before the chroot; keep it canonical
QPID= ; OUTPID= ; ERRPID=
cleanup() {
  [ -n "$QPID" ] && kill "$QPID" 2>/dev/null && wait "$QPID" 2>/dev/null
  # Open each FIFO for writing once so a reader still blocked in open() returns, then reap it.
  for f in out err; do [ -p "$RUN/$f" ] && { : 1<>"$RUN/$f"; } 2>/dev/null; done
  [ -n "$OUTPID$ERRPID" ] && wait $OUTPID $ERRPID 2>/dev/null
  [ "${RFRPC_VM_KEEP:-0}" = 1 ] && echo "softroce_vm: kept $RUN" >&2 || rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The command script: exported environment, cwd, then exec CMD.
{
  echo '# written by tools/softroce_vm.sh; run by bash chrooted into the host root inside the VM'
  while IFS= read -r v; do
    case $v in PWD | OLDPWD | SHLVL | _ | SHELLOPTS | BASHOPTS | BASH_* | *[!A-Za-z0-9_]*) continue ;; esac
    printf 'export %s=%q\n' "$v" "${!v}"
  done < <(compgen -e)
  printf 'export RFRPC_VM_GUEST=1 RFRPC_VM_IP=%q\n' "$IP"
  printf 'cd %q || exit 126\n' "$PWD"
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} > "$RUN/cmd.sh"

# Guest stdout/stderr: virtio-serial ports -> qemu `file` chardevs writing into FIFOs -> cat.
mkfifo "$RUN/out" "$RUN/err" || exit 2
cat "$RUN/out" &
OUTPID=$!
cat "$RUN/err" >&2 &
ERRPID=$!

T0=$(date +%s.%N)
timeout -k 5 "$TMO" qemu-system-x86_64 \
  -accel tcg,thread=multi -cpu max -smp "$SMP" -m "$MEM" \
  -nodefaults -no-user-config -display none -no-reboot \
  -kernel "$KERNEL" -initrd "$INITRD" \
  -append "console=ttyS0 quiet panic=-1 mitigations=off rfrpc.run=$RUN rfrpc.dev=$NETDEV rfrpc.ip=$IP rfrpc.tmo=$CMD_TMO ${RFRPC_VM_APPEND:-}" \
  -serial file:"$RUN/console.log" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,multidevs=remap,readonly=on \
  -device virtio-serial-pci,max_ports=4 \
  -chardev file,id=out,path="$RUN/out" -device virtserialport,chardev=out,name=org.rfrpc.out \
  -chardev file,id=err,path="$RUN/err" -device virtserialport,chardev=err,name=org.rfrpc.err \
  -chardev file,id=rc,path="$RUN/rc" -device virtserialport,chardev=rc,name=org.rfrpc.rc \
  -netdev "$NET,id=n0" -device virtio-net-pci,netdev=n0,mac="$MAC" \
  < /dev/null > "$RUN/qemu.log" 2>&1 &
QPID=$!
wait "$QPID"
QRC=$?
QPID=
T1=$(date +%s.%N)

RC=$(tr -dc 0-9 < "$RUN/rc" 2>/dev/null)
if [ "${RFRPC_VM_VERBOSE:-0}" = 1 ] || [ -z "$RC" ]; then
  {
    echo "---- softroce_vm: guest console ----"; cat "$RUN/console.log" 2>/dev/null
    echo "---- softroce_vm: qemu (exit $QRC) ----"; cat "$RUN/qemu.log"
    echo "---- softroce_vm: VM ran $(awk "BEGIN { printf \"%.1f\", $T1 - $T0 }") s, command exit ${RC:-none}"
  } >&2
fi
if [ -z "$RC" ]; then
  if [ "$QRC" = 124 ] || [ "$QRC" = 137 ]; then
    echo "softroce_vm: VM timed out after $TMO s" >&2
    RC=124
  else
    echo "softroce_vm: VM ended without an exit status (qemu exit $QRC)" >&2
    RC=125
  fi
fi
exit "$RC"
