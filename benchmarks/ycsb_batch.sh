#!/usr/bin/env bash
# YCSB over kvstore_server with jakiro.batch=off|fixed|auto (issue 16): what a
# YCSB client sees when it turns batching on: synchronous (1 and 4 threads,
# one shared client when batching) and pipelined (each thread keeps 4
# operations in flight: where batching in hybrid mode, the default, ran 70x
# slower until e3908c1). Workload kvstore/workloads/paper (95% GET, 16 B keys,
# 32 B values), one server worker, fixed N = 16, auto at l_limit = 20 us,
# library defaults otherwise (hybrid mode, T = 5 ms). Runs the points
# interleaved, round after round (the host's load drifts), and prints one row
# per run plus the medians per point. Asserts nothing.
#
#   benchmarks/ycsb_batch.sh                       # bazel-built binaries
#   benchmarks/ycsb_batch.sh --rounds=5 --secs=3 --threads="1 4" --outstanding="1 4"
#   benchmarks/ycsb_batch.sh --bin=/some/dir       # kvstore_server and ycsb there
#   benchmarks/ycsb_batch.sh --extra="-p jakiro.mode=rf"
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=3
SECS=3
THREADS="1 4"
OUTSTANDING="1 4"
BIN=
EXTRA=
for a in "$@"; do
  case "$a" in
    --rounds=*) ROUNDS="${a#*=}" ;;
    --secs=*) SECS="${a#*=}" ;;
    --threads=*) THREADS="${a#*=}" ;;
    --outstanding=*) OUTSTANDING="${a#*=}" ;;
    --bin=*) BIN="${a#*=}" ;;
    --extra=*) EXTRA="${a#*=}" ;;
    *) echo "ycsb_batch.sh: unknown argument $a" >&2; exit 2 ;;
  esac
done
if [ -z "$BIN" ]; then
  bazel build -c opt //kvstore/server:kvstore_server //kvstore/ycsb:ycsb >&2
  BIN="$(bazel info -c opt bazel-bin 2>/dev/null)"
  SERVER="$BIN/kvstore/server/kvstore_server"
  YCSB="$BIN/kvstore/ycsb/ycsb"
else
  SERVER="$BIN/kvstore_server"
  YCSB="$BIN/ycsb"
fi

WORK="$(mktemp -d)"
SOCK="$WORK/jakiro.sock"
SRV_PID=
cleanup() {
  if [ -n "$SRV_PID" ]; then kill -TERM "$SRV_PID" 2>/dev/null || true; wait "$SRV_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

"$SERVER" --workers=1 --address="$SOCK" >"$WORK/server.log" 2>&1 &
SRV_PID=$!
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
BASE=(-db jakiro -P kvstore/workloads/paper -p jakiro.servers="$SOCK" -p jakiro.connect_retry_ms=5000)
"$YCSB" -load "${BASE[@]}" -threads 1 >"$WORK/load.out" 2>"$WORK/load.err" || {
  echo "load failed:" >&2; tail -5 "$WORK/load.err" >&2; exit 1; }

declare -A OPS AVG P95 CPB
echo "# ycsb_batch provider=shm workload=paper server_workers=1 secs=$SECS rounds=$ROUNDS extra='$EXTRA' load=$(cut -d' ' -f1 /proc/loadavg)"
printf "%-7s %-6s %5s %12s %9s %8s %8s\n" thr/out batch round ops/s avg_us p95_us c/batch
POINTS=(off fixed auto)
LOADS=()  # threads/outstanding
for t in $THREADS; do for o in $OUTSTANDING; do LOADS+=("$t/$o"); done; done
for r in $(seq 1 "$ROUNDS"); do
  for load in "${LOADS[@]}"; do
    t="${load%/*}"
    o="${load#*/}"
    for i in 0 1 2; do
      b="${POINTS[$(((i + r) % 3))]}"
      # shellcheck disable=SC2206
      args=(-p jakiro.batch="$b" -p jakiro.batch_size=16 -p jakiro.latency_limit_us=20
            -p jakiro.print_stats=true -p operationcount=0 -p maxexecutiontime="$SECS"
            -p hdrhistogram.percentiles=50,95,99 -p outstanding="$o" $EXTRA)
      if ! timeout -k 5 $((SECS + 60)) "$YCSB" -t "${BASE[@]}" "${args[@]}" -threads "$t" \
          >"$WORK/run.out" 2>"$WORK/run.err"; then
        echo "ycsb failed ($t threads, $o outstanding, $b):" >&2; tail -5 "$WORK/run.err" >&2; continue
      fi
      ops="$(sed -n 's/^\[OVERALL\], Throughput(ops\/sec), //p' "$WORK/run.out")"
      avg="$(sed -n 's/^\[READ\], AverageLatency(us), //p' "$WORK/run.out")"
      p95="$(sed -n 's/^\[READ\], 95thPercentileLatency(us), //p' "$WORK/run.out")"
      cpb="$(sed -n 's/.*calls\/batch=\([0-9.]*\).*/\1/p' "$WORK/run.err" | tail -1)"
      printf "%-7s %-6s %5s %12.0f %9.2f %8s %8s\n" "$load" "$b" "$r" "$ops" "$avg" "$p95" "${cpb:-?}"
      OPS[$load,$b]+="$ops "
      AVG[$load,$b]+="$avg "
      P95[$load,$b]+="$p95 "
    done
  done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {if (NR) printf "%s [%s, %s]", v[int((NR+1)/2)], v[1], v[NR]; else printf "-"}'; }
for load in "${LOADS[@]}"; do
  for b in "${POINTS[@]}"; do
    echo "# threads/outstanding=$load batch=$b: ops/s $(echo "${OPS[$load,$b]:-}" | median)  read avg us $(echo "${AVG[$load,$b]:-}" | median)  read p95 us $(echo "${P95[$load,$b]:-}" | median)  (median [min, max])"
  done
done
