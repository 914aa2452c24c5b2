#!/usr/bin/env bash
# tools/vm_bench.sh — issue 3's overhead check on real verbs: inside ONE Soft-RoCE VM boot, perftest's
# ib_write_lat and ib_read_lat (server and client in the VM against 10.11.0.1, -x 1) beside
# `transport_bench --provider=verbs --sections=lat` over the same rxe0, same sizes; prints both and
# the ratio ours / perftest (target: within 1.2x; reported, not asserted).
#
# What is compared: perftest's t_typical (median) vs transport_bench's p50. ib_read_lat times one READ
# from post to completion, like transport_bench's READ. ib_write_lat is a ping-pong and reports half
# its round trip, while transport_bench's WRITE is post-to-completion of one WRITE (which waits for
# the responder's ACK: about a round trip), so the WRITE ratio carries up to ~2x by construction.
#
# Soft-RoCE under qemu TCG: correctness, not hardware speed. Every tool runs under a timeout.
#
# Usage: bash tools/vm_bench.sh                     VM_BENCH_ITERS=500 VM_BENCH_SIZES=8,64,512,4096
set -uo pipefail
cd "$(dirname "$0")/.."
ITERS=${VM_BENCH_ITERS:-300}
SIZES=${VM_BENCH_SIZES:-8,64,512,4096}

# One result row: op, bytes, perftest's figure and ours (both us), then the
# ratio ours / perftest and whether it is within 1.2x ("n/a" and no verdict
# when perftest gave no figure).
print_row() {
  local op=$1 bytes=$2 pt=$3 ours=$4 ratio verdict
  ratio=$(awk -v a="$ours" -v b="$pt" 'BEGIN { if (b + 0 > 0) printf "%.2fx", a / b; else print "n/a" }')
  verdict=$(awk -v a="$ours" -v b="$pt" 'BEGIN { if (b + 0 <= 0) print ""; else if (a / b <= 1.2) print "(<= 1.2x)"; else print "(> 1.2x)" }')
  printf '%-6s %7s %16s %16s %14s %s\n' "$op" "$bytes" "$pt" "$ours" "$ratio" "$verdict"
}

if [ "${1:-}" = --in-vm ]; then
  BIN=$2
  IP=${RFRPC_VM_IP%/*}
  pin_s=() pin_c=()
  if [ "$(nproc)" -ge 2 ]; then pin_s=(taskset -c 0); pin_c=(taskset -c 1); fi
  port=18515
  declare -A PT
  for tool in ib_write_lat ib_read_lat; do
    for s in ${SIZES//,/ }; do
      port=$((port + 1))
      timeout 60 "${pin_s[@]}" "$tool" -d rxe0 -x 1 -F -n "$ITERS" -s "$s" -p "$port" > /tmp/pt.server 2>&1 &
      spid=$!
      for _ in $(seq 20); do
        timeout 30 "${pin_c[@]}" "$tool" -d rxe0 -x 1 -F -n "$ITERS" -s "$s" -p "$port" "$IP" > /tmp/pt.client 2>&1 && break
        grep -q "Couldn't connect\|Unable to init the socket" /tmp/pt.client || break
        sleep 0.5
      done
      wait "$spid"
      # Row: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
      typ=$(awk -v s="$s" '$1 == s && NF >= 5 { print $5 }' /tmp/pt.client | tail -1)
      PT[$tool/$s]=${typ:-?}
      echo "perftest $tool $s B: t_typical ${typ:-?} us" >&2
    done
  done
  # Pinned as perftest's client is (its server side is the kernel's rxe, as
  # for ib_read_lat's passive side).
  timeout 600 "${pin_c[@]}" "$BIN/transport_bench" --provider=verbs --listen="$IP:0" --sections=lat \
    --iters="$ITERS" --sizes="$SIZES" --lat_csv=/tmp/vm_bench_lat.csv > /tmp/tb.out 2>&1 ||
    { echo "transport_bench failed:"; tail -20 /tmp/tb.out; }
  echo "== Soft-RoCE under qemu TCG: correctness, not hardware speed (rxe0, $ITERS iterations, load $(cut -d' ' -f1 /proc/loadavg) in guest)"
  printf '%-6s %7s %16s %16s %14s\n' op bytes perftest_us transport_bench_us ratio
  tail -n +2 /tmp/vm_bench_lat.csv | while IFS=, read -r prov op bytes p50 p99 ops mbs load; do
    tool=ib_$(echo "$op" | tr 'A-Z' 'a-z')_lat
    pt=${PT[$tool/$bytes]:-?}
    ours=$(awk -v n="$p50" 'BEGIN { printf "%.2f", n / 1000 }')
    print_row "$op" "$bytes" "$pt" "$ours"
  done
  echo "WRITE: perftest reports half a ping-pong; ours is post-to-completion (ACKed), ~a round trip."
  # The like-for-like WRITE figure: transport_bench's 8 B inline WRITE
  # ping-pong between two threads on the two vCPUs (its rtt section, not
  # pinned to one CPU), half a round trip, against ib_write_lat 8 B.
  timeout 600 "$BIN/transport_bench" --provider=verbs --listen="$IP:0" --sections=rtt \
    --rtt_per_op --iters=$((ITERS * 20)) --rtt_csv=/tmp/vm_bench_rtt.csv > /tmp/tb_rtt.out 2>&1 ||
    { echo "transport_bench rtt failed:"; tail -20 /tmp/tb_rtt.out; }
  pp=$(awk -F, '$2 == "write_then_poll_8B_per_op" { printf "%.2f", $4 / 2000 }' /tmp/vm_bench_rtt.csv 2>/dev/null)
  # Half the median of round trips timed one by one, as perftest's t_typical.
  pt=${PT[ib_write_lat/8]:-?}
  if [ -n "$pp" ]; then
    print_row WRITE "8 pp/2" "$pt" "$pp"
    echo "WRITE 8 pp/2: half the median round trip (each timed) of an 8 B inline WRITE ping-pong between two threads, as ib_write_lat's t_typical."
  fi
  exit 0
fi

bash tools/setup.sh --vm > /dev/null || { echo "vm_bench: setup --vm failed" >&2; exit 1; }
bazel build //benchmarks:transport_bench > /dev/null 2>&1 || { echo "vm_bench: build failed" >&2; exit 1; }
BIN=$(bazel info bazel-bin 2>/dev/null)/benchmarks
echo "vm_bench: host load $(cut -d' ' -f1-3 /proc/loadavg); booting one VM"
RFRPC_VM_TIMEOUT=${RFRPC_VM_TIMEOUT:-900} VM_BENCH_ITERS=$ITERS VM_BENCH_SIZES=$SIZES \
  bash tools/softroce_vm.sh bash "$PWD/tools/vm_bench.sh" --in-vm "$BIN"
