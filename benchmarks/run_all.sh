#!/usr/bin/env bash
# The whole benchmark suite in one run: the RF-RPC paper's experiments on
# rfrpc and the peers users would pick instead, with CSVs, PNG plots and a
# summary table.
#
#   benchmarks/run_all.sh [--quick|--full] [--provider=shm|verbs] [--no-setup]
#
# 1. in-bound vs out-bound ops/s vs size 8 B..8 KiB (Fig. 1; transport_bench)
# 2. rf / server_reply / hybrid vs server processing time 0..12 us (Fig. 9)
# 3. throughput vs server threads (Fig. 7); multi-connection-per-thread vs
#    thread-per-connection (Figs. 11/12)
# 4. latency CDF of rf, server_reply, hybrid (Fig. 8)
# 5. batch-size sweep, auto batch at several latency limits, adaptive
#    (Figs. 13/14; batch_bench)
# 6. echo: rfrpc vs gRPC C++ 1.51 (Unix socket and loopback TCP), 1 and 2
#    client threads, the same proto/echo.proto
# 7. YCSB A and C: Jakiro vs memcached and Redis (benchmarks/kv_compare.sh,
#    when present; it starts and stops memcached and redis-server itself)
# 8. server cost vs connected clients (scale_bench, shm): latency and calls/s
#    with 1 active and M - 1 idle clients, round robin over all M, 8 threads;
#    idle server CPU, first call after idle, fds and RSS per connection,
#    connect/close cycles and SIGKILLed clients
# 9. datapath breakdown (Fig. 10): basic, + inline, + unsignaled, + post
#    lists, with work requests / doorbells / inline / signaled per call
#    (rpc_bench; in the VM with --provider=verbs)
#
# Writes benchmarks/results/<date>_<time>-<provider>/: expN_*.csv, expN_*.png,
# summary.md, logs/. --quick takes under 5 minutes on a 2-core machine once
# built. With --provider=verbs experiments 1-5 and rfrpc's side of 6 run in
# ONE Soft-RoCE VM boot (tools/softroce_vm.sh); those figures are labeled
# "Soft-RoCE under qemu TCG: correctness, not hardware speed". gRPC and the
# key-value peers always run on the host.
#
# Every server started here is stopped on exit (trap); rfrpc servers live in
# the bench binaries. Figures move with the load of a shared machine: every
# CSV row records the 1-minute load average.
set -uo pipefail
cd "$(dirname "$0")/.."

MODE=quick
PROVIDER=shm
SETUP=1
for arg in "$@"; do
  case "$arg" in
    --quick) MODE=quick ;;
    --full) MODE=full ;;
    --provider=*) PROVIDER=${arg#*=} ;;
    --no-setup) SETUP=0 ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run_all: unknown argument $arg" >&2; exit 2 ;;
  esac
done
case "$PROVIDER" in shm | verbs) ;; *) echo "run_all: provider must be shm or verbs" >&2; exit 2 ;; esac

T0=$(date +%s)
OUT=benchmarks/results/$(date +%Y-%m-%d_%H%M)-$PROVIDER
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
PIDS=()        # Servers started here.
GROUP_PIDS=()  # Long steps, each in its own session: stopped as a group.
TMP=$(mktemp -d /tmp/rfrpc-run-all.XXXXXX)
cleanup() {
  local p
  for p in "${GROUP_PIDS[@]}"; do [ -n "$p" ] && kill -TERM -- "-$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${GROUP_PIDS[@]}" "${PIDS[@]}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

progress() {
  printf '[run_all %4ds load %s] %s\n' $(($(date +%s) - T0)) \
    "$(cut -d' ' -f1 /proc/loadavg)" "$*" | tee -a "$OUT/logs/progress.log"
}

# run_group OUT ERR PREFIX CMD...: runs CMD in its own session (so the trap
# can stop it and everything it started), stdout to OUT, stderr to ERR;
# relays CMD's "[  12s] step" lines from ERR as progress lines. Returns
# CMD's status.
run_group() {
  local out=$1 err=$2 prefix=$3 pid rc
  shift 3
  : > "$err"
  setsid "$@" > "$out" 2> "$err" &
  pid=$!
  GROUP_PIDS+=("$pid")
  # The relay runs in the background so that `wait` (which a signal
  # interrupts, unlike a foreground pipeline) is what this shell blocks in.
  { tail --pid="$pid" -n +1 -F "$err" 2>/dev/null | grep --line-buffered -E '^\[ *[0-9]+s\]' |
      while IFS= read -r line; do progress "$prefix${line#\[*\] }"; done; } &
  local relay=$!
  wait "$pid"
  rc=$?
  wait "$relay"
  GROUP_PIDS=("${GROUP_PIDS[@]/$pid}")
  return $rc
}

progress "mode $MODE, provider $PROVIDER, results in ${OUT#"$PWD"/}"
if [ "$SETUP" = 1 ]; then
  groups=(--bench --peers)
  [ "$PROVIDER" = verbs ] && groups+=(--vm)
  progress "setup: tools/setup.sh ${groups[*]}"
  bash tools/setup.sh "${groups[@]}" > "$OUT/logs/setup.log" 2>&1 ||
    { cat "$OUT/logs/setup.log"; exit 1; }
fi
progress "build: bazel build -c opt //benchmarks/..."
BAZEL_FLAGS=(-c opt)
[ -n "${CI:-}" ] && BAZEL_FLAGS+=(--config=ci)
bazel build "${BAZEL_FLAGS[@]}" //benchmarks/... > "$OUT/logs/build.log" 2>&1 ||
  { tail -30 "$OUT/logs/build.log"; exit 1; }
BIN=$(bazel info -c opt bazel-bin 2>/dev/null)/benchmarks

{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "mode=$MODE"
  echo "provider=$PROVIDER"
  echo "host_cpus=$(nproc)"
  echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "git=$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo -dirty)"
  echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/meta.txt"

# --- Experiments 1-5 and rfrpc's side of 6 ---------------------------------
if [ "$PROVIDER" = shm ]; then
  run_group /dev/null "$OUT/logs/rfrpc_experiments.log" "" \
    bash benchmarks/rfrpc_experiments.sh "$BIN" "$OUT" shm "$MODE"
else
  progress "booting ONE Soft-RoCE VM for experiments 1-6 (qemu TCG: correctness, not speed)"
  run_group "$TMP/vm.out" "$OUT/logs/vm.err" "vm: " \
    env RFRPC_VM_TIMEOUT="${RFRPC_VM_TIMEOUT:-1500}" RFRPC_VM_MEM="${RFRPC_VM_MEM:-2048}" \
    bash tools/softroce_vm.sh bash "$PWD/benchmarks/rfrpc_experiments.sh" "$BIN" \
    /tmp/rfrpc-vm-bench verbs "$MODE" --emit
  echo "vm_exit=$?" >> "$OUT/meta.txt"
  # Split the emitted files back out.
  awk -v out="$OUT" '
    /^=== FILE / { f = out "/" substr($0, 10); next }
    /^=== END$/ { if (f) close(f); f = ""; next }
    f { print > f }' "$TMP/vm.out"
fi

# --- Experiment 6: gRPC servers on a Unix socket and loopback TCP ----------
progress "exp6: gRPC 1.51 echo server (Unix socket, loopback TCP); sync unary clients, 1 and 2 threads"
read -r SEC ESIZES REP < "$OUT/logs/exp6_params" 2>/dev/null || { SEC=0.4; ESIZES=32,1024; REP=1; }
[ "$PROVIDER" = verbs ] && SEC=0.5
# start_grpc ADDR NAME: a server in the background, its pid in PIDS (not in
# a subshell, so the trap can stop it); grpc_addr NAME: its address once
# it listens.
start_grpc() {
  "$BIN/grpc_echo" --role=server --listen="$1" --server_threads=2 --max_seconds=900 \
    > "$TMP/grpc.$2.out" 2>> "$OUT/logs/grpc_server.err" &
  PIDS+=($!)
}
grpc_addr() {
  local i
  for i in $(seq 100); do
    grep -q LISTENING "$TMP/grpc.$1.out" && break
    sleep 0.1
  done
  sed -n 's/^LISTENING //p' "$TMP/grpc.$1.out"
}
start_grpc "unix:$TMP/grpc.sock" unix
start_grpc "127.0.0.1:0" tcp
UNIX_ADDR=$(grpc_addr unix)
TCP_ADDR=$(grpc_addr tcp)
rm -f "$OUT/exp6_grpc_side.csv"
for spec in "unix $UNIX_ADDR" "tcp $TCP_ADDR"; do
  set -- $spec
  if [ -z "${2:-}" ]; then progress "  gRPC server ($1) did not start: logs/grpc_server.err"; continue; fi
  for t in 1 2; do
    timeout 300 "$BIN/grpc_echo" --role=client --target="$2" --transport="$1" --threads="$t" \
      --sizes="$ESIZES" --seconds="$(awk -v s="$SEC" 'BEGIN{print (s < 1 ? 1 : s)}')" --repeats="${REP:-1}" \
      --csv 2>> "$OUT/logs/grpc_client.err" |
      { if [ -s "$OUT/exp6_grpc_side.csv" ]; then tail -n +2; else cat; fi; } >> "$OUT/exp6_grpc_side.csv"
  done
done
{ cat "$OUT/exp6_rfrpc_side.csv" 2>/dev/null; tail -n +2 "$OUT/exp6_grpc_side.csv" 2>/dev/null; } \
  > "$OUT/exp6_rfrpc_vs_grpc.csv"
rm -f "$OUT/exp6_rfrpc_side.csv" "$OUT/exp6_grpc_side.csv"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
PIDS=()

# --- Experiment 7: YCSB against Jakiro, memcached, Redis -------------------
if [ -x benchmarks/kv_compare.sh ]; then
  KV_SEC=3
  [ "$MODE" = full ] && KV_SEC=10
  progress "exp7: YCSB A and C, Jakiro vs memcached vs Redis (benchmarks/kv_compare.sh, ${KV_SEC}s per run)"
  KV_ARGS=(--seconds="$KV_SEC" --out="$OUT/exp7_ycsb.md" --no-setup --provider=shm)
  [ "$MODE" = quick ] && KV_ARGS+=(--records=20000)
  run_group "$OUT/logs/exp7.txt" "$OUT/logs/exp7.err" "" \
    timeout 900 bash benchmarks/kv_compare.sh "${KV_ARGS[@]}" ||
    progress "  kv_compare.sh failed (exit $?; logs/exp7.txt, logs/exp7.err)"
  # Its markdown table as CSV.
  if [ -f "$OUT/exp7_ycsb.md" ]; then
    grep '^| ' "$OUT/exp7_ycsb.md" | grep -v '^| ---' |
      sed -e 's/^| //' -e 's/ |$//' -e 's/,/;/g' -e 's/ | /,/g' > "$OUT/exp7_ycsb.csv"
  fi
else
  progress "exp7: benchmarks/kv_compare.sh not available yet (branch jakiro); skipped"
  echo "not available: benchmarks/kv_compare.sh (branch jakiro) is not merged yet" > "$OUT/exp7_unavailable.txt"
fi

# --- Experiment 8: server cost vs connected clients (issue 15) -------------
if [ "$PROVIDER" = shm ]; then
  if [ "$MODE" = quick ]; then SC_MS=1,128,1024; SC_SEC=0.5; else SC_MS=1,8,16,128,1024,4096; SC_SEC=1; fi
  progress "exp8: scale_bench, M = $SC_MS connected clients, one server worker (${SC_SEC}s per point)"
  run_group "$OUT/exp8_scale.txt" "$OUT/logs/exp8.err" ""     "$BIN/scale_bench" --ms="$SC_MS" --seconds="$SC_SEC" --cycles=1000 --kills=50 ||
    progress "  scale_bench failed (exit $?; logs/exp8.err)"
  run_group "$OUT/exp8_scale.csv" "$OUT/logs/exp8_csv.err" ""     "$BIN/scale_bench" --ms="$SC_MS" --seconds="$SC_SEC" --csv ||
    progress "  scale_bench --csv failed (exit $?; logs/exp8_csv.err)"
  # What a load from a cold page costs on this host (memory only): the
  # floor under round robin's calls/s at large M (docs/rpc.md).
  run_group "$OUT/exp8_page_spread.txt" "$OUT/logs/exp8_pages.err" "" "$BIN/page_spread_bench" --loads=1000000 ||
    progress "  page_spread_bench failed (exit $?; logs/exp8_pages.err)"
fi

echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/meta.txt"
echo "seconds=$(($(date +%s) - T0))" >> "$OUT/meta.txt"
progress "plots and summary"
python3 benchmarks/report.py "$OUT" > "$OUT/logs/report.log" 2>&1 ||
  { tail -20 "$OUT/logs/report.log"; exit 1; }
progress "done in $(($(date +%s) - T0)) s: ${OUT#"$PWD"/}/summary.md"
sed -n '/^## Headline/,/^## /p' "$OUT/summary.md" | head -40
