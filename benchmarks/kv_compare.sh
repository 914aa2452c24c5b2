#!/usr/bin/env bash
# Jakiro vs memcached vs Redis under the same YCSB workloads, on this machine.
#
#   bash benchmarks/kv_compare.sh [--seconds=N] [--records=N] [--repeat=N] [--out=FILE]
#        [--provider=shm|verbs] [--address=IP:0] [--outstanding=N]
#        [--batch_size=N] [--fetch_miss_target=T] [--no-setup]
#
# Workloads: the paper's record size (kvstore/workloads/paper_zipf: 16 B keys,
# one 32 B value, zipfian 0.99, 100 000 records) as YCSB-C (100% read) and
# YCSB-A (50% read, 50% update). Systems, each started and stopped here on
# loopback, one server thread, pinned to CPU 0 (the YCSB client to CPU 1):
#   Jakiro rf            remote fetching, 1 client thread
#   Jakiro server_reply  the server WRITEs results back, 1 client thread
#   Jakiro hybrid        rf switching to server_reply when slow, 1 thread
#   Jakiro rf batched    4 client threads (unpinned) sharing connections,
#                        fixed batches of up to 4 (N=4, T=20 us). YCSB
#                        threads are synchronous, so batches only form from
#                        concurrent threads (see calls/batch in the table).
#   Jakiro rf / server_reply pipelined
#                        1 client thread keeping --outstanding (default 16)
#                        operations in flight (-p outstanding=N), polling
#                        its calls itself (no progress thread)
#   Jakiro rf batched pipelined
#                        the same with fixed batches of --batch_size (default
#                        16, T=20 us) and 2 x batch_size in flight
#   memcached            libmemcached, ASCII protocol, memcached -t 1,
#                        synchronous (1 request on the wire per thread)
#   Redis                hiredis, redis-server (no persistence), synchronous
#   Redis pipelined      1 thread, --outstanding in flight (hiredis
#                        pipelining: commands buffered, replies in order)
# memcached stays synchronous (libmemcached has no natural pipelining of
# independent gets/sets), so pipelined Jakiro vs memcached is not like for
# like; the ratio lines say which is which.
# --fetch_miss_target=T passes -p jakiro.fetch_miss_target=T to every Jakiro
# row (rfrpc's ChannelOptions::fetch.delay_miss_target: where the adaptive
# first-fetch delay settles; higher trades READs per call for latency).
# Unset (the default), Jakiro runs with rfrpc's default; the output names T
# when it is set.
# Each run lasts --seconds (default 10; maxexecutiontime) after a load phase;
# with --repeat=N each configuration runs N times and the table keeps the run
# with the highest throughput (other work on a shared machine only slows runs
# down), printing every run's figure on stderr.
# Writes a markdown table (throughput, mean/p99 read latency) naming the
# provider, the CPU and the load average, to --out (default
# benchmarks/kv_compare_results.md) and stdout. Not a test: it prints what it
# measured; on a shared machine the numbers move with other work.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=10
REPEAT=1
RECORDS=100000
OUT=benchmarks/kv_compare_results.md
PROVIDER=shm
ADDRESS=
SETUP=1
OUTSTANDING=16
BATCH=16
MISS_TARGET=
for arg in "$@"; do
  case "$arg" in
    --seconds=*) SECS="${arg#*=}" ;;
    --records=*) RECORDS="${arg#*=}" ;;
    --repeat=*) REPEAT="${arg#*=}" ;;
    --out=*) OUT="${arg#*=}" ;;
    --provider=*) PROVIDER="${arg#*=}" ;;
    --address=*) ADDRESS="${arg#*=}" ;;
    --outstanding=*) OUTSTANDING="${arg#*=}" ;;
    --batch_size=*) BATCH="${arg#*=}" ;;
    --fetch_miss_target=*) MISS_TARGET="${arg#*=}" ;;
    --no-setup) SETUP=0 ;;
    -h|--help) sed -n "2,46p" "$0"; exit 0 ;;
    *) echo "kv_compare: unknown argument $arg" >&2; exit 2 ;;
  esac
done
if [ "$PROVIDER" = verbs ] && [ -z "$ADDRESS" ]; then
  ADDRESS="$(hostname -I | awk '{print $1}'):0"
fi

if [ "$SETUP" = 1 ]; then bash tools/setup.sh --peers; fi
# Optimized (-c opt: NDEBUG, no DCHECKs), as every benchmark here.
bazel build -c opt //kvstore/server:kvstore_server //kvstore/ycsb:ycsb
BIN="$(bazel info -c opt bazel-bin 2>/dev/null)"
SERVER="$BIN/kvstore/server/kvstore_server"
YCSB="$BIN/kvstore/ycsb/ycsb"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/kv_compare.XXXXXX")"
PIDS=()
cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

SRV_CPU=()
CLI_CPU=()
if [ "$(nproc)" -ge 2 ]; then SRV_CPU=(taskset -c 0); CLI_CPU=(taskset -c 1); fi
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_port() {  # wait_port PORT PID
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
stop() {  # stop PID: SIGTERM and wait
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  local keep=()
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

BASE=(-P kvstore/workloads/paper_zipf -p recordcount="$RECORDS")
C_ARGS=(-p readproportion=1 -p updateproportion=0)
A_ARGS=(-p readproportion=0.5 -p updateproportion=0.5)
RUN=(-p operationcount=1000000000 -p maxexecutiontime="$SECS")

ROWS=()
# measure_once NAME WORKLOAD THREADS YCSB-ARGS...: one run phase; sets
# LAST_ROW (a table row, empty if the run failed) and LAST_TPUT.
measure_once() {
  local name="$1" wl="$2" threads="$3"; shift 3
  local out="$WORK/run.out"
  LAST_ROW=
  LAST_TPUT=0
  echo "-- $name, YCSB-$wl, $threads thread(s)" >&2
  if ! "${CLI_CPU[@]}" timeout -k 5 $((SECS + 120)) "$YCSB" -t "${BASE[@]}" \
      "$@" "${RUN[@]}" -threads "$threads" >"$out" 2>"$WORK/run.err"; then
    echo "   ycsb failed:" >&2; grep -v "channel destroyed" "$WORK/run.err" | tail -5 >&2
    return
  fi
  local tput rmean rp99 ok total
  tput="$(sed -n 's/^\[OVERALL\], Throughput(ops\/sec), //p' "$out")"
  rmean="$(sed -n 's/^\[READ\], AverageLatency(us), //p' "$out")"
  rp99="$(sed -n 's/^\[READ\], 99thPercentileLatency(us), //p' "$out")"
  ok="$(grep -h '^\[\(READ\|UPDATE\)\], Return=OK, ' "$out" | awk -F', ' '{s+=$3} END {print s+0}')"
  total="$(grep -h '^\[\(READ\|UPDATE\)\], Return=' "$out" | awk -F', ' '{s+=$3} END {print s+0}')"
  local stats
  stats="$(grep '^jakiro client:' "$WORK/run.err" | sed 's/.*calls=[0-9]* //; s/ switches([^ ]*//; s/ fetches=[0-9]*//' || true)"
  printf -- "   %s ops/s, read mean %s us, p99 %s us, OK %s/%s %s\n" \
    "$(printf '%.0f' "$tput")" "$(printf '%.1f' "${rmean:-0}")" "${rp99:-?}" "$ok" "$total" "$stats" >&2
  LAST_ROW="| $name | $wl | $threads | $(printf '%.0f' "$tput") | $(printf '%.1f' "${rmean:-0}") | ${rp99:-} | $ok/$total | $stats |"
  LAST_TPUT="$tput"
}
load() {  # load NAME YCSB-ARGS...
  echo "-- $1: load $RECORDS records" >&2
  local name="$1"; shift
  "${CLI_CPU[@]}" timeout -k 5 600 "$YCSB" -load "${BASE[@]}" "$@" -threads 1 \
    >"$WORK/load.out" 2>"$WORK/load.err" || {
    echo "   load failed" >&2; tail -5 "$WORK/load.err" >&2; return 1; }
}

LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
CPU_MODEL="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"

# All three servers run side by side (an idle one sleeps), and the
# repetitions go round robin over every configuration, so a burst of other
# work on the machine does not land on one system only.
timeout -k 5 3600 "$SERVER" --provider="$PROVIDER" --address="$ADDRESS" \
  --workers=1 --kv_memory_mb=256 --rfrpc_pin_first_cpu=0 \
  --address_file="$WORK/jakiro.addr" >/dev/null 2>"$WORK/jakiro.log" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$WORK/jakiro.addr" ] && break; sleep 0.1; done
[ -s "$WORK/jakiro.addr" ] || { cat "$WORK/jakiro.log" >&2; exit 1; }
J=(-db jakiro -p jakiro.servers="$(cat "$WORK/jakiro.addr")" -p jakiro.provider="$PROVIDER"
   -p jakiro.print_stats=true)
if [ -n "$MISS_TARGET" ]; then J+=(-p jakiro.fetch_miss_target="$MISS_TARGET"); fi
MPORT="$(free_port)"
"${SRV_CPU[@]}" timeout -k 5 3600 memcached -u root -l 127.0.0.1 -p "$MPORT" -U 0 \
  -t 1 -m 512 >"$WORK/memcached.log" 2>&1 &
PIDS+=($!)
wait_port "$MPORT" $! || { echo "memcached did not start:" >&2; cat "$WORK/memcached.log" >&2; exit 1; }
M=(-db memcached -p memcached.hosts="127.0.0.1:$MPORT")
RPORT="$(free_port)"
"${SRV_CPU[@]}" timeout -k 5 3600 redis-server --port "$RPORT" --bind 127.0.0.1 \
  --save '' --appendonly no --protected-mode no >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
wait_port "$RPORT" $! || { echo "redis-server did not start:" >&2; cat "$WORK/redis.log" >&2; exit 1; }
R=(-db redis -p redis.port="$RPORT")

load jakiro "${J[@]}"
load memcached "${M[@]}"
load redis "${R[@]}"

# name|workload|threads|pinned|ycsb args (word-split)
CONFIGS=()
for wl in C A; do
  if [ "$wl" = C ]; then W="${C_ARGS[*]}"; else W="${A_ARGS[*]}"; fi
  CONFIGS+=("Jakiro rf|$wl|1|pin|${J[*]} -p jakiro.mode=rf $W")
  CONFIGS+=("Jakiro server_reply|$wl|1|pin|${J[*]} -p jakiro.mode=server_reply $W")
  CONFIGS+=("Jakiro hybrid|$wl|1|pin|${J[*]} -p jakiro.mode=hybrid $W")
  # Four threads pinned to one CPU starve each other's polling: unpinned.
  CONFIGS+=("Jakiro rf batched|$wl|4|nopin|${J[*]} -p jakiro.mode=rf -p jakiro.batch=fixed -p jakiro.batch_size=4 -p jakiro.batch_timeout_us=20 $W")
  P="-p outstanding=$OUTSTANDING"
  CONFIGS+=("Jakiro rf pipelined|$wl|1|pin|${J[*]} -p jakiro.mode=rf $P $W")
  CONFIGS+=("Jakiro server_reply pipelined|$wl|1|pin|${J[*]} -p jakiro.mode=server_reply $P $W")
  CONFIGS+=("Jakiro rf batched pipelined|$wl|1|pin|${J[*]} -p jakiro.mode=rf -p jakiro.batch=fixed -p jakiro.batch_size=$BATCH -p jakiro.batch_timeout_us=20 -p outstanding=$((2 * BATCH)) $W")
  CONFIGS+=("memcached|$wl|1|pin|${M[*]} $W")
  CONFIGS+=("Redis|$wl|1|pin|${R[*]} $W")
  CONFIGS+=("Redis pipelined|$wl|1|pin|${R[*]} $P $W")
done
declare -A BEST_ROW BEST_TPUT ALL_TPUT
PINNED=("${CLI_CPU[@]}")
for rep in $(seq 1 "$REPEAT"); do
  echo "== round $rep of $REPEAT" >&2
  for cfg in "${CONFIGS[@]}"; do
    IFS='|' read -r name wl threads pin args <<<"$cfg"
    if [ "$pin" = pin ]; then CLI_CPU=("${PINNED[@]}"); else CLI_CPU=(); fi
    # shellcheck disable=SC2086  # args is a word list without spaces inside words
    measure_once "$name" "$wl" "$threads" $args
    key="$name|$wl"
    ALL_TPUT[$key]="${ALL_TPUT[$key]:+${ALL_TPUT[$key]} }$(awk -v t="$LAST_TPUT" 'BEGIN { printf "%.1f", t / 1000 }')"
    if [ -n "$LAST_ROW" ] && awk -v a="$LAST_TPUT" -v b="${BEST_TPUT[$key]:--1}" 'BEGIN { exit !(a > b) }'; then
      BEST_TPUT[$key]="$LAST_TPUT"; BEST_ROW[$key]="$LAST_ROW"
      echo "$LAST_TPUT" >"$WORK/tput.$name.$wl"
    fi
  done
done
ROWS=()
for cfg in "${CONFIGS[@]}"; do
  IFS='|' read -r name wl threads _ _ <<<"$cfg"
  ROWS+=("${BEST_ROW[$name|$wl]:-| $name | $wl | $threads | failed | | | | |} ${ALL_TPUT[$name|$wl]:-} |")
done

LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
ratio() {  # ratio NAME_A NAME_B WL
  local a b
  a="$(cat "$WORK/tput.$1.$3" 2>/dev/null || echo 0)"
  b="$(cat "$WORK/tput.$2.$3" 2>/dev/null || echo 0)"
  awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.1fx", a / b; else print "n/a" }'
}
{
  echo "# Jakiro vs memcached vs Redis (YCSB, paper record size)"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), host: $(nproc) CPUs ($CPU_MODEL)"
  echo "- Jakiro provider: **$PROVIDER**; memcached and Redis over loopback TCP"
  echo "- load average (1/5/15 min) before: $LOAD_BEFORE, after: $LOAD_AFTER (shared machine)"
  echo "- workloads: kvstore/workloads/paper_zipf ($RECORDS records, 16 B keys, 32 B values, zipfian 0.99);"
  echo "  C = 100% read, A = 50% read / 50% update; ${SECS} s per run after one load; best of $REPEAT run(s)"
  echo "- one server thread pinned to CPU 0, YCSB pinned to CPU 1 (the batched run's 4 threads unpinned)"
  if [ -n "$MISS_TARGET" ]; then
    echo "- Jakiro rows with -p jakiro.fetch_miss_target=$MISS_TARGET (not rfrpc's default first-fetch delay target)"
  fi
  echo
  echo "- pipelined rows: 1 YCSB thread with $OUTSTANDING operations in flight (batched: $((2 * BATCH)), fixed batches of $BATCH, T = 20 us);"
  echo "  memcached (-t 1, libmemcached ASCII) is driven synchronously, 1 thread; Redis both ways"
  echo
  echo "| system | YCSB | client threads | ops/s (best) | read mean (us) | read p99 (us) | OK/ops | rfrpc client counters | every run (K ops/s) |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for r in "${ROWS[@]}"; do echo "$r"; done
  echo
  echo "Jakiro rf / memcached, 1 client thread, 1 server thread, both synchronous: C $(ratio 'Jakiro rf' memcached C), A $(ratio 'Jakiro rf' memcached A)."
  echo "Jakiro server_reply / memcached, both synchronous: C $(ratio 'Jakiro server_reply' memcached C), A $(ratio 'Jakiro server_reply' memcached A)."
  echo "Pipelined Jakiro / synchronous memcached (not like for like), 1 client thread: rf C $(ratio 'Jakiro rf pipelined' memcached C), A $(ratio 'Jakiro rf pipelined' memcached A); server_reply C $(ratio 'Jakiro server_reply pipelined' memcached C), A $(ratio 'Jakiro server_reply pipelined' memcached A); rf batched C $(ratio 'Jakiro rf batched pipelined' memcached C), A $(ratio 'Jakiro rf batched pipelined' memcached A)."
  echo "Jakiro rf / Redis: C $(ratio 'Jakiro rf' Redis C), A $(ratio 'Jakiro rf' Redis A)."
  echo "Pipelined, both sides ($OUTSTANDING in flight): Jakiro rf / Redis C $(ratio 'Jakiro rf pipelined' 'Redis pipelined' C), A $(ratio 'Jakiro rf pipelined' 'Redis pipelined' A)."
} | tee "$OUT"
