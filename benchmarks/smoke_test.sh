#!/usr/bin/env bash
# Smoke test of every benchmark binary: each runs with tiny parameters, exits
# 0 and writes well-formed CSV (a header, then at least one row with as many
# fields). Asserts nothing about time: figures from a smoke run mean nothing.
#
# Run: bazel test //benchmarks:smoke_test
set -uo pipefail

R="${TEST_SRCDIR:-$PWD/..}/${TEST_WORKSPACE:-rfrpc}/benchmarks"
TMP=$(mktemp -d /tmp/rfrpc-bench-smoke.XXXXXX)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; fail=$((fail + 1)); }

# check_csv NAME FILE: non-comment lines are a header and >= 1 row, all with
# the header's field count.
check_csv() {
  local name=$1 file=$2 why
  why=$(grep -v '^#' "$file" | awk -F, '
    NF == 0 { next }
    n == 0 { n = NF; if (NF < 2) { print "header has " NF " fields"; exit } ; next }
    { rows++; if (NF != n) { print "row " rows " has " NF " fields, header " n; exit } }
    END { if (n > 0 && rows == 0) print "no rows"; if (n == 0) print "no header" }')
  if [ -n "$why" ]; then bad "$name csv" "$why"; sed -n 1,5p "$file"; else ok "$name csv"; fi
}

# run NAME OUT CMD...: CMD must exit 0 within 120 s; stdout to OUT.
run() {
  local name=$1 out=$2
  shift 2
  local rc=0
  timeout 120 "$@" > "$out" 2> "$out.err" || rc=$?
  if [ "$rc" = 0 ]; then
    ok "$name runs"
    return 0
  fi
  bad "$name runs" "exit $rc"
  tail -20 "$out.err"
  return 1
}

run rpc_bench "$TMP/rpc.csv" "$R/rpc_bench" --modes=rf,server_reply,hybrid \
  --sizes=8 --server_time_us=0,1 --seconds=0.05 --warmup_seconds=0.01 --csv \
  --cdf_csv="$TMP/cdf.csv" --label=smoke &&
  { check_csv rpc_bench "$TMP/rpc.csv"
    { echo "label,latency_us,fraction"; cat "$TMP/cdf.csv"; } > "$TMP/cdf2.csv"
    check_csv rpc_bench_cdf "$TMP/cdf2.csv"; }

run rpc_bench_conns "$TMP/rpc2.csv" "$R/rpc_bench" --modes=rf --threads=2 \
  --workers=2 --connections=1 --pin=false --seconds=0.05 \
  --warmup_seconds=0.01 --csv && check_csv rpc_bench_conns "$TMP/rpc2.csv"

run batch_bench "$TMP/batch.csv" "$R/batch_bench" --batch_sizes=2,8 \
  --auto_limits_us=200 --seconds=0.05 --warmup_seconds=0.02 --csv &&
  check_csv batch_bench "$TMP/batch.csv"

# Empty --batch_sizes and --auto_limits_us skip their points: the baseline
# alone runs.
run batch_bench_baseline "$TMP/batch_base.csv" "$R/batch_bench" --modes=rf \
  --batch_sizes= --auto_limits_us= --adaptive=false --seconds=0.05 \
  --warmup_seconds=0.01 --final_rounds=0 --csv &&
  check_csv batch_bench_baseline "$TMP/batch_base.csv"

# Sync mode prints a table and its target lines: it must run and reach them.
run batch_bench_sync "$TMP/batch_sync.txt" "$R/batch_bench" --sweep=false \
  --sync_threads=1,2 --sync_rounds=1 --sync_seconds=0.05 \
  --sync_warmup_seconds=0.01 &&
  if [ "$(grep -c '^# target' "$TMP/batch_sync.txt")" -eq 4 ]; then
    ok "batch_bench_sync targets"
  else
    bad "batch_bench_sync targets" "expected 4 target lines"
    cat "$TMP/batch_sync.txt"
  fi

# Memory only: a tiny chase must print its table.
run page_spread_bench "$TMP/pages.txt" "$R/page_spread_bench" --pages=16,64 \
  --loads=20000 --rounds=1 &&
  if [ "$(grep -c '^ *[0-9]' "$TMP/pages.txt")" -eq 4 ]; then
    ok "page_spread_bench rows"
  else
    bad "page_spread_bench rows" "expected 4 rows"
    cat "$TMP/pages.txt"
  fi

# A --listen address given: each section's listener takes it in turn (fig1
# failed ALREADY_EXISTS while the other sections' listener still held it).
run transport_bench "$TMP/transport.txt" "$R/transport_bench" --iters=300 \
  --sizes=8,4096 --clients=2 --lat_csv="$TMP/lat.csv" --rtt_csv="$TMP/rtt.csv" \
  --fig1_csv="$TMP/fig1.csv" --listen="$(mktemp -u /tmp/rfrpc-tb.XXXXXX).sock" &&
  for f in lat rtt fig1; do check_csv "transport_bench_$f" "$TMP/$f.csv"; done

run rfrpc_echo_bench "$TMP/echo.csv" "$R/rfrpc_echo_bench" --sizes=8,1024 \
  --seconds=0.05 --warmup_seconds=0.01 --csv && check_csv rfrpc_echo_bench "$TMP/echo.csv"

run tuner_bench "$TMP/tuner.txt" "$R/tuner_bench" --seconds=0.05 \
  --warmup_seconds=0.01 --sample_calls=100 --repeats=1

run async_bench "$TMP/async.txt" "$R/async_bench" --rounds=1 --seconds=0.05 \
  --slow_ms=1 --pin=false

run scale_bench "$TMP/scale.csv" "$R/scale_bench" --ms=1,8 --seconds=0.05 \
  --idle_seconds=0.05 --floor=false --pin=false --csv &&
  check_csv scale_bench "$TMP/scale.csv"

# gRPC: a server on a Unix socket, one client point.
"$R/grpc_echo" --role=server --listen="unix:$TMP/grpc.sock" --max_seconds=100 \
  > "$TMP/grpc_server.out" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do grep -q LISTENING "$TMP/grpc_server.out" && break; sleep 0.1; done
if grep -q LISTENING "$TMP/grpc_server.out"; then
  ok "grpc_echo server listens"
  run grpc_echo "$TMP/grpc.csv" "$R/grpc_echo" --role=client \
    --target="unix:$TMP/grpc.sock" --sizes=8 --seconds=0.05 --warmup_seconds=0.01 --csv &&
    check_csv grpc_echo "$TMP/grpc.csv"
else
  bad "grpc_echo server listens" "$(cat "$TMP/grpc_server.out")"
fi
kill "$SERVER_PID" 2>/dev/null
if wait "$SERVER_PID"; then ok "grpc_echo server stops on SIGTERM"; else bad "grpc_echo server stop" "exit $?"; fi
SERVER_PID=

# bad_flag NAME FLAG [MORE...]: a bad FLAG (with the other flags MORE): exit
# status 2 and one line naming FLAG, no CHECK failure, and no listen socket
# left behind. Each runs with its own short $TEST_TMPDIR, where shm puts its
# socket files (under Bazel's long one it falls back to abstract names).
bad_flag() {
  local name=$1 flag=$2 err status dir left
  shift 2
  dir=$(mktemp -d "$TMP/bad.XXXXXX")
  err=$(TEST_TMPDIR="$dir" timeout 60 "$R/$name" "$flag" "$@" 2>&1 >/dev/null)
  status=$?
  left=$(find "$dir" -type s)
  if [ "$status" = 2 ] && grep -q -- "${flag%%=*}" <<<"$err" &&
     ! grep -q 'Check failure' <<<"$err" && [ -z "$left" ]; then
    ok "$name $flag${*:+ $*} is refused"
  else
    bad "$name $flag${*:+ $*}" "exit $status: $err${left:+ (left behind: $left)}"
  fi
}
bad_flag rpc_bench --threads=0
bad_flag rpc_bench --sizes=-5
bad_flag batch_bench --depth=0
bad_flag batch_bench --sizer_window=-1
bad_flag async_bench --size=-1
bad_flag rfrpc_echo_bench --seconds=0
bad_flag tuner_bench --sample_calls=0
bad_flag transport_bench --iters=0
bad_flag scale_bench --ms=-5
bad_flag scale_bench --phases=bogus
bad_flag scale_bench --block_ms=1
bad_flag scale_bench --async_window=0
bad_flag rpc_bench --seconds=inf
bad_flag batch_bench --warmup_seconds=1e300
bad_flag batch_bench --issuer_refill=nan
bad_flag batch_bench --sizer_trace_csv=/nonexistent_dir/x.csv
bad_flag async_bench --parts=bogus
bad_flag transport_bench --sections=bogus
bad_flag page_spread_bench --chains=0
bad_flag page_spread_bench --pages=x
bad_flag rfrpc_echo_bench --sizes=,,
bad_flag scale_bench --role=bogus
bad_flag grpc_echo --threads=-1
bad_flag grpc_echo --seconds=nan
# Found after the server started (the first channel): exit 2 with the
# socket left in /tmp, naming batching.max_outstanding, not --pipeline.
bad_flag batch_bench --pipeline=100000
bad_flag batch_bench --sync_batch_size=5000 --sweep=false --sync_threads=1
# A --rfrpc_* channel flag was first read after the server started.
bad_flag batch_bench --rfrpc_fetch_size=1
bad_flag rfrpc_echo_bench --rfrpc_fetch_size=1
# Limits of ServerOptions: the message named the field, not the flag.
bad_flag rpc_bench --workers=2000
bad_flag rfrpc_echo_bench --workers=2000
bad_flag scale_bench --workers=2000
bad_flag async_bench --blocking_threads=100000
# bench::ParseInts named no flag.
bad_flag scale_bench --ms=1,x
# bad_flag_says NAME PATTERN FLAG [MORE...]: bad_flag, and the message has
# PATTERN (grep -F).
bad_flag_says() {
  local name=$1 pattern=$2 err
  shift 2
  bad_flag "$name" "$@"
  err=$(TEST_TMPDIR="$TMP" timeout 60 "$R/$name" "$@" 2>&1 >/dev/null)
  if grep -qF -- "$pattern" <<<"$err"; then
    ok "$name $* says \"$pattern\""
  else
    bad "$name $*: no \"$pattern\"" "$err"
  fi
}
# Past what an int holds: out of range, not "not an integer".
bad_flag_says scale_bench '"99999999999" is out of range [-2147483648, 2147483647]' \
  --ms=1,99999999999
bad_flag_says rpc_bench '"99999999999" is out of range: must be in [0, 1000000]' \
  --sizes=99999999999
bad_flag_says grpc_echo '"99999999999" is out of range: must be in [0, ' \
  --sizes=99999999999
# --connections past the server's max_connections opened connections until
# the process ran out of file descriptors ("Too many open files").
bad_flag_says rpc_bench \
  "--threads=1 x --connections=1000000000: 1000000000 connections, above the server's max_connections 16384" \
  --connections=1000000000
bad_flag_says rpc_bench "20000 connections, above the server's max_connections 16384" \
  --connections=5000 --threads=4
# Ports gRPC would take modulo 65536 or replace with a random one.
bad_flag grpc_echo --listen=127.0.0.1:99999 --role=server --max_seconds=1
bad_flag grpc_echo --listen=127.0.0.1:abc --role=server --max_seconds=1
bad_flag grpc_echo --target=127.0.0.1:70000 --seconds=0.05
# Empty lists where something must run (--auto_limits_us= and --batch_sizes=
# still skip their points).
bad_flag batch_bench --modes=, --seconds=0.05 --warmup_seconds=0.01 \
  --final_rounds=0
bad_flag batch_bench --auto_rules=, --batch_sizes=2 --seconds=0.05 \
  --warmup_seconds=0.01 --final_rounds=0
bad_flag batch_bench --sync_points=, --sweep=false --sync_threads=1
bad_flag batch_bench --sweep=false

echo "benchmark smoke: $pass passed, $fail failed"
[ "$fail" = 0 ]
