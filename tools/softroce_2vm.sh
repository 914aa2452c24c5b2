#!/usr/bin/env bash
# tools/softroce_2vm.sh SERVER_CMD [ARGS...] -- CLIENT_CMD [ARGS...]
#
# Boots two Soft-RoCE VMs (tools/softroce_vm.sh) joined by a private point-to-point Ethernet link and
# nothing else: qemu's UDP socket netdev between two free loopback ports, PA and PB,
#   server VM: eth0 10.11.0.1/24, MAC 52:54:00:0b:00:01, socket,udp=127.0.0.1:PB,localaddr=127.0.0.1:PA
#   client VM: eth0 10.11.0.2/24, MAC 52:54:00:0b:00:02, socket,udp=127.0.0.1:PA,localaddr=127.0.0.1:PB
# runs SERVER_CMD in the server VM and CLIENT_CMD in the client VM, both booting at once, and exits with
# CLIENT_CMD's status once it ends; then the server VM is killed, whatever it is doing. Inside each VM,
# RFRPC_VM_PEER holds the other VM's address and RFRPC_VM_ROLE is server or client.
#
# The client boots in parallel with the server, so it must retry its first connection for a while
# (each try under `timeout`); the server command should have its own `timeout` too. Server output
# goes to stderr, each line prefixed "[server] ".
#
# Knobs: those of tools/softroce_vm.sh; RFRPC_VM_TIMEOUT applies to each VM. Each VM keeps 2 vCPUs by
# default: with 1, a busy-polling process and rxe's softirq work share one vCPU, and ibv_rc_pingpong
# (polling) measured 18 ms/iter against 6.5 ms/iter with 2 (same loaded host, TCG; idle ~2.7 ms).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SERVER=() ; CLIENT=() ; seen=0
for a in "$@"; do
  if [ $seen = 0 ] && [ "$a" = -- ]; then seen=1; continue; fi
  if [ $seen = 0 ]; then SERVER+=("$a"); else CLIENT+=("$a"); fi
done
if [ ${#SERVER[@]} = 0 ] || [ ${#CLIENT[@]} = 0 ]; then
  echo "usage: $0 SERVER_CMD [ARGS...] -- CLIENT_CMD [ARGS...]" >&2
  exit 2
fi

# Build the image before forking, so that the two VMs don't both wait on the cache lock.
"$HERE/softroce_vm_image.sh" > /dev/null || exit 2

# Two distinct UDP ports that nothing on 127.0.0.1 is bound to. A race with another process binding
# one of them before qemu does makes qemu fail at start (exit 125, "Address already in use").
udp_port_free() { ! ss -Hlun "sport = :$1" 2>/dev/null | grep -q .; }
pick_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 40000))
    if [ "$p" != "${1:-}" ] && udp_port_free "$p"; then echo "$p"; return 0; fi
  done
  return 1
}
PA=$(pick_port) && PB=$(pick_port "$PA") || { echo "softroce_2vm: no free UDP port" >&2; exit 2; }

SPID= ; SEDPID=
cleanup() {
  if [ -n "$SPID" ]; then kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; fi
  if [ -n "$SEDPID" ]; then wait "$SEDPID" 2>/dev/null; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Server output, prefixed, through a process substitution that is waited for at the end.
exec {SOUT}> >(sed -u 's/^/[server] /' >&2)
SEDPID=$!
RFRPC_VM_ROLE=server RFRPC_VM_PEER=10.11.0.2 RFRPC_VM_IP=10.11.0.1/24 RFRPC_VM_MAC=52:54:00:0b:00:01 \
  RFRPC_VM_NET="socket,udp=127.0.0.1:$PB,localaddr=127.0.0.1:$PA" \
  "$HERE/softroce_vm.sh" "${SERVER[@]}" 1>&"$SOUT" 2>&1 &
SPID=$!
exec {SOUT}>&-

RFRPC_VM_ROLE=client RFRPC_VM_PEER=10.11.0.1 RFRPC_VM_IP=10.11.0.2/24 RFRPC_VM_MAC=52:54:00:0b:00:02 \
  RFRPC_VM_NET="socket,udp=127.0.0.1:$PA,localaddr=127.0.0.1:$PB" \
  "$HERE/softroce_vm.sh" "${CLIENT[@]}"
RC=$?
exit "$RC"
