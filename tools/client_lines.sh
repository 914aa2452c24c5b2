#!/usr/bin/env bash
# Cache lines a client call touches when its connection's state is cold:
# cachegrind on scale_bench's round robin over M connections (each call on
# the connection least recently used), client process only (the server runs
# natively), with a simulated last-level cache smaller than M connections'
# state. Prints, per call, the instructions and the D1 and LL misses of the
# client process: the marginal figures between a short and a long run, so
# connection set-up does not count. A deterministic figure where timings on
# this host move by +-30%: use it to compare layouts (issue 15).
#
#   tools/client_lines.sh [M] [LL bytes]     (defaults: 1024, 1 MiB)
#   PAGES=1 tools/client_lines.sh [M]        (default M: 4096)
#
# PAGES=1 counts pages instead of lines: the simulated D1 becomes a data TLB
# of 1 536 entries, 12 ways, 4 KiB pages (a Skylake-class second-level TLB;
# in this VM a miss walks guest and host tables), and the script prints the
# misses per call and the functions that take them (the first touch of a
# page in a call; prefetches are not simulated). Past the TLB's reach every
# page a call touches that no other connection shares is a miss.
#
# Builds //benchmarks:scale_bench (-c opt). Takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
PAGES=${PAGES:-0}
if [[ "$PAGES" == 1 ]]; then
  M=${1:-4096}
  D1=6291456,12,4096
  LL=8388608
  LINE=4096
else
  M=${1:-1024}
  D1=32768,8,64
  LL=${2:-1048576}
  LINE=64
fi
bazel build -c opt //benchmarks:scale_bench >/dev/null 2>&1
BIN=bazel-out/k8-opt/bin/benchmarks/scale_bench
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {  # $1: seconds; prints "calls Ir D1miss LLmiss"
  valgrind --tool=cachegrind --cache-sim=yes --LL="$LL",16,"$LINE" \
    --D1="$D1" --I1=32768,8,64 \
    --cachegrind-out-file="$OUT/cg.$1" "$BIN" --ms="$M" --phases=rr \
    --seconds="$1" --floor=false --pin=false >"$OUT/log.$1" 2>&1
  local calls
  calls=$(sed -nE 's/.*so far: ([0-9]+) calls.*/\1/p' "$OUT/log.$1" | tail -1)
  awk -v calls="$calls" '/^summary:/ {
      # Events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
      print calls, $2, $6 + $9, $7 + $10 }' "$OUT/cg.$1"
}
read -r c1 i1 d1 l1 < <(run 2)
read -r c2 i2 d2 l2 < <(run 6)
if [[ "$PAGES" == 1 ]]; then
  awk -v c1="$c1" -v c2="$c2" -v d1="$d1" -v d2="$d2" -v m="$M" 'BEGIN {
    dc = c2 - c1
    if (dc <= 0) { print "client_lines: no calls between the runs"; exit 1 }
    printf "client_pages: M=%d, %d calls between the runs: %.2f data TLB misses per call (1 536 x 4 KiB, shm, cachegrind)\n",
           m, dc, (d2 - d1) / dc
  }'
  cg_diff "$OUT/cg.2" "$OUT/cg.6" >"$OUT/diff" 2>/dev/null
  # Per function, misses per call (reads and writes), the largest first.
  cg_annotate --show=D1mr,D1mw --sort=D1mr --threshold=0 --auto=no \
      "$OUT/diff" 2>/dev/null |
    awk -v dc=$((c2 - c1)) '/^ *-?[0-9,]+ / && /:/ {
        line = $0
        gsub(/\(anonymous namespace\)/, "{anon}", line)
        gsub(/\( *[0-9.-]+%\)/, "", line)
        split(line, f, " +")
        off = (f[1] == "") ? 1 : 0
        r = f[1 + off]; w = f[2 + off]; gsub(",", "", r); gsub(",", "", w)
        name = line; sub(/^[^:]*:/, "", name); sub(/\(.*/, "", name)
        sum[name] += (r + w) / dc
      }
      END { for (k in sum) if (sum[k] >= 0.05) printf "  %5.2f  %s\n", sum[k], k }' |
    sort -rn | head -20
  exit 0
fi
awk -v c1="$c1" -v c2="$c2" -v i1="$i1" -v i2="$i2" -v d1="$d1" -v d2="$d2" \
    -v l1="$l1" -v l2="$l2" -v m="$M" -v ll="$LL" 'BEGIN {
  dc = c2 - c1
  if (dc <= 0) { print "client_lines: no calls between the runs"; exit 1 }
  printf "client_lines: M=%d LL=%d B, %d calls between the runs: per call %.0f instructions, %.1f D1 misses, %.1f LL misses (shm, cachegrind)\n",
         m, ll, dc, (i2 - i1) / dc, (d2 - d1) / dc, (l2 - l1) / dc
}'
