#!/usr/bin/env bash
# The rfrpc experiments of benchmarks/run_all.sh (1-5, rfrpc's side of 6, and 9),
# as one script so the same commands run on the host (shm) and inside the
# Soft-RoCE VM (verbs). rfrpc servers are in-process in the bench binaries.
#
#   benchmarks/rfrpc_experiments.sh BIN_DIR OUT_DIR PROVIDER quick|full [--emit]
#
# BIN_DIR holds the built benchmark binaries (bazel-bin/benchmarks). Writes
# expN_*.csv and logs/ into OUT_DIR. --emit prints every file afterwards
# between "=== FILE name" / "=== END" lines (the VM's writes vanish with it,
# so run_all.sh collects them from its stdout). Progress lines go to stderr.
set -uo pipefail
BIN=$1 OUT=$2 PROVIDER=$3 MODE=$4 EMIT=${5:-}
mkdir -p "$OUT/logs"
T0=$(date +%s)
step() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*" >&2; }

P=(--provider="$PROVIDER")
LISTEN=()
if [ "$PROVIDER" = verbs ]; then
  # rdma_cm cannot use 127.0.0.1: listen on the guest's eth0.
  IP=${RFRPC_VM_IP:-10.11.0.1/24}
  P+=(--address="${IP%/*}:0")
  LISTEN=(--listen="${IP%/*}:0")
fi

if [ "$MODE" = full ]; then
  SEC=2; WARM=0.3; IT=200000; REP=3
  SIZES=8,16,32,64,128,256,512,1024,2048,4096,8192
  STIMES=0,1,2,3,4,5,6,7,8,9,10,11,12
  WORKERS="1 2 3 4 6"; CONNS="4 8 16"; CDF_SEC=4
  BSIZES=2,4,8,12,16,24,32,48,64,96; LIMITS=10,20,50,100,200,500
  ESIZES=32,256,1024,4096
elif [ "$PROVIDER" = verbs ]; then
  # qemu TCG: everything is ~100x slower; keep the VM run short.
  SEC=0.3; WARM=0.1; IT=2000; REP=1
  SIZES=8,64,512,4096,8192
  STIMES=0,2,4,8,12
  WORKERS="1 2"; CONNS="4"; CDF_SEC=0.5
  BSIZES=2,8,32,96; LIMITS=200,1000
  ESIZES=32,1024
else
  SEC=0.4; WARM=0.1; IT=30000; REP=2
  SIZES=8,64,256,1024,4096,8192
  STIMES=0,1,2,4,6,8,10,12
  WORKERS="1 2 3 4"; CONNS="4 8"; CDF_SEC=1
  BSIZES=2,4,8,16,24,32,48,64,96; LIMITS=20,50,100,200
  ESIZES=32,1024
fi
# Each point is the best of REP runs: other work on a shared machine only
# ever slows a run down.
R=(--seconds="$SEC" --warmup_seconds="$WARM" --repeats="$REP")

# csv_append FILE: stdin's CSV (comment lines dropped) appended to FILE,
# without its header when FILE already has one.
csv_append() {
  if [ -s "$1" ]; then grep -v '^#' | tail -n +2 >> "$1"; else grep -v '^#' > "$1"; fi
}
# run NAME CMD...: runs CMD with a time limit, stderr to logs/NAME.err.
run() {
  local name=$1
  shift
  # --foreground: stay in our process group, so run_all.sh's trap reaches
  # the benchmark too.
  timeout --foreground 600 "$@" 2> "$OUT/logs/$name.err"
  local rc=$?
  [ $rc = 0 ] || step "  $name failed (exit $rc; see logs/$name.err)"
  return $rc
}

step "exp1 (Fig. 1): transport WRITE/READ latency, ops/s, out-bound vs in-bound, sizes $SIZES"
run exp1 "$BIN/transport_bench" "--provider=$PROVIDER" "${LISTEN[@]}" --iters="$IT" \
  --sizes="$SIZES" --clients=8 --lat_csv="$OUT/exp1_transport_latency.csv" \
  --rtt_csv="$OUT/exp1_roundtrip.csv" --fig1_csv="$OUT/exp1_fig1_inbound_outbound.csv" \
  > "$OUT/logs/exp1.txt"

step "exp2 (Fig. 9): rf / server_reply / hybrid vs server time $STIMES us"
run exp2 "$BIN/rpc_bench" "${P[@]}" "${R[@]}" --modes=rf,server_reply,hybrid --sizes=32 \
  --server_time_us="$STIMES" --threads=1 --workers=1 --csv --label=fig9 \
  | csv_append "$OUT/exp2_fig9_server_time.csv"

step "exp3 (Fig. 7): throughput vs server threads ($WORKERS), 2 client threads"
rm -f "$OUT/exp3_fig7_server_threads.csv"
for w in $WORKERS; do
  run "exp3_w$w" "$BIN/rpc_bench" "${P[@]}" "${R[@]}" --modes=rf,server_reply,hybrid \
    --sizes=32 --threads=2 --workers="$w" --connections=0 --pin=false --csv --label=fig7 \
    | csv_append "$OUT/exp3_fig7_server_threads.csv"
done

step "exp3 (Figs. 11/12): multi-connection-per-thread vs thread-per-connection ($CONNS client connections)"
rm -f "$OUT/exp3_fig11_12_connections.csv"
for c in $CONNS; do
  for layout in multi_conn_per_thread thread_per_connection; do
    w=2
    [ "$layout" = thread_per_connection ] && w=$c
    run "exp3_c${c}_$layout" "$BIN/rpc_bench" "${P[@]}" "${R[@]}" --modes=rf,server_reply \
      --sizes=32 --threads="$c" --workers="$w" --connections=1 --pin=false --csv \
      --label="$layout" | csv_append "$OUT/exp3_fig11_12_connections.csv"
  done
done

step "exp4 (Fig. 8): latency CDF of rf, server_reply, hybrid (1 client thread, ${CDF_SEC}s each)"
echo "label,latency_us,fraction" > "$OUT/exp4_fig8_latency_cdf.csv"
run exp4 "$BIN/rpc_bench" "${P[@]}" --seconds="$CDF_SEC" --warmup_seconds="$WARM" --repeats="$REP" \
  --modes=rf,server_reply,hybrid --sizes=32 --threads=1 --workers=1 --csv --label=fig8 \
  --cdf_csv="$OUT/exp4_fig8_latency_cdf.csv" | csv_append "$OUT/exp4_fig8_points.csv"

step "exp5 (Figs. 13/14): batch sizes $BSIZES (rf, server_reply), auto at $LIMITS us, adaptive"
run exp5 "$BIN/batch_bench" "${P[@]}" "${R[@]}" --modes=rf,server_reply \
  --batch_sizes="$BSIZES" --auto_limits_us="$LIMITS" --csv > "$OUT/logs/exp5.txt"
grep -v '^#' "$OUT/logs/exp5.txt" > "$OUT/exp5_fig13_14_batch.csv"
grep '^# ' "$OUT/logs/exp5.txt" | grep -v '^# batch_bench' | sed 's/^# //' \
  > "$OUT/exp5_checks.txt"

step "exp6: rfrpc echo (generated Echo stub), threads 1 and 2, sizes $ESIZES"
rm -f "$OUT/exp6_rfrpc_side.csv"
for t in 1 2; do
  run "exp6_rfrpc_t$t" "$BIN/rfrpc_echo_bench" "${P[@]}" "${R[@]}" --threads="$t" \
    --sizes="$ESIZES" --csv | csv_append "$OUT/exp6_rfrpc_side.csv"
done
echo "$SEC $ESIZES $REP" > "$OUT/logs/exp6_params"

# Fig. 10's breakdown (the paper: "unsignal" and "inline" together ~30% more
# throughput): each step adds one datapath optimization. The per-call
# columns (wqes, doorbells, inline, signaled) are the transport's counts.
step "exp9 (Fig. 10): datapath breakdown: basic, +inline, +unsignaled, +post lists (rf, 32 B, 1 and 2 threads)"
rm -f "$OUT/exp9_fig10_datapath.csv"
exp9_steps=(
  "basic --rfrpc_max_inline=0 --rfrpc_signal_every=1 --rfrpc_post_lists=false"
  "inline --rfrpc_max_inline=128 --rfrpc_signal_every=1 --rfrpc_post_lists=false"
  "unsignaled --rfrpc_max_inline=128 --rfrpc_signal_every=16 --rfrpc_post_lists=false"
  "post_lists --rfrpc_max_inline=128 --rfrpc_signal_every=16 --rfrpc_post_lists=true"
)
for t in 1 2; do
  for s in "${exp9_steps[@]}"; do
    read -r label flags <<< "$s"
    # shellcheck disable=SC2086
    run "exp9_${label}_t$t" "$BIN/rpc_bench" "${P[@]}" "${R[@]}" --modes=rf --sizes=32 \
      --threads="$t" --workers=1 --connections=1 --pin=false --csv --label="$label" $flags \
      | csv_append "$OUT/exp9_fig10_datapath.csv"
  done
done
step "rfrpc experiments done"

if [ "$EMIT" = --emit ]; then
  for f in "$OUT"/*.csv "$OUT"/*.txt "$OUT"/logs/*; do
    [ -f "$f" ] || continue
    echo "=== FILE ${f#"$OUT"/}"
    cat "$f"
    echo "=== END"
  done
fi
exit 0
