#!/usr/bin/env bash
# The README's demo: Jakiro, the key-value store on rfrpc, under YCSB.
#
#   bash tools/demo.sh                      # shm provider (any Linux host)
#   bash tools/demo.sh --provider=verbs     # an RDMA host (or Soft-RoCE):
#       listens on --address (default: this host's first IPv4 address, port 0)
#
# Installs what is missing (tools/setup.sh), builds kvstore_server and ycsb,
# starts one kvstore_server in the background and runs YCSB against it:
# load, then workload A (50/50 read/update) and workload C (read only) for
# about --seconds each, with a status line every second and dataintegrity=true
# (every value read is checked). Prints the YCSB summaries, stops the server
# with SIGTERM and leaves no process behind, even on failure or Ctrl-C.
# The server serves Prometheus metrics (docs/observability.md) on a free
# local port: the demo prints where, and shows a few of them (and of the last
# YCSB run's client metrics) at the end.
#
# Options: --provider=shm|verbs  --address=ADDR  --seconds=N (default 10)
#          --records=N (default 50000)  --mode=rf|server_reply|hybrid
#          (default hybrid)  --no-setup (skip tools/setup.sh)
# On 2+ CPUs the server's worker is pinned to CPU 0 and the YCSB client to
# CPU 1, so the busy-polling pair does not share a core.
set -euo pipefail
cd "$(dirname "$0")/.."

PROVIDER=shm
ADDRESS=
SECONDS_PER_RUN=10
RECORDS=50000
MODE=hybrid
SETUP=1
for arg in "$@"; do
  case "$arg" in
    --provider=*) PROVIDER="${arg#*=}" ;;
    --address=*) ADDRESS="${arg#*=}" ;;
    --seconds=*) SECONDS_PER_RUN="${arg#*=}" ;;
    --records=*) RECORDS="${arg#*=}" ;;
    --mode=*) MODE="${arg#*=}" ;;
    --no-setup) SETUP=0 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "demo: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done
case "$PROVIDER" in
  shm) ;;
  verbs)
    if [ -z "$ADDRESS" ]; then
      ip="$(hostname -I 2>/dev/null | awk '{print $1}')"
      [ -n "$ip" ] || { echo "demo: no IPv4 address; pass --address=IP:PORT" >&2; exit 2; }
      ADDRESS="$ip:0"
    fi ;;
  *) echo "demo: --provider must be shm or verbs" >&2; exit 2 ;;
esac

# ycsb links libmemcached and hiredis (its other drivers): --peers.
if [ "$SETUP" = 1 ]; then bash tools/setup.sh --peers; fi

echo "== building kvstore_server and ycsb"
bazel build //kvstore/server:kvstore_server //kvstore/ycsb:ycsb
SERVER=bazel-bin/kvstore/server/kvstore_server
YCSB=bazel-bin/kvstore/ycsb/ycsb

WORK="$(mktemp -d "${TMPDIR:-/tmp}/jakiro-demo.XXXXXX")"
SERVER_PID=
YCSB_PID=
cleanup() {
  local rc=$?
  if [ -n "$YCSB_PID" ]; then
    kill -TERM "$YCSB_PID" 2>/dev/null || true
    wait "$YCSB_PID" 2>/dev/null || true
  fi
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

SERVER_CPU=()
CLIENT_CPU=()
if [ "$(nproc)" -ge 2 ]; then
  SERVER_CPU=(--rfrpc_pin_first_cpu=0)
  CLIENT_CPU=(taskset -c 1)
fi

# Runs for at most 3 runs + start-up; `timeout` bounds it even if this script
# is killed with SIGKILL and cannot clean up.
LIMIT=$((SECONDS_PER_RUN * 3 + 300))
echo "== starting kvstore_server (provider $PROVIDER, 1 worker)"
timeout -k 5 "$LIMIT" "$SERVER" --provider="$PROVIDER" --address="$ADDRESS" \
  --workers=1 --kv_memory_mb=256 --address_file="$WORK/address" \
  --rfrpc_metrics_port=-1 --rfrpc_metrics_host=127.0.0.1 \
  "${SERVER_CPU[@]}" 2>"$WORK/server.log" >"$WORK/server.out" &
SERVER_PID=$!
for _ in $(seq 1 300); do
  [ -s "$WORK/address" ] && break
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "demo: kvstore_server failed to start:" >&2
    cat "$WORK/server.log" >&2
    exit 1
  fi
  sleep 0.1
done
[ -s "$WORK/address" ] || { echo "demo: kvstore_server did not come up" >&2; exit 1; }
ADDR="$(cat "$WORK/address")"
grep -v "^W" "$WORK/server.log" | sed 's/^/[server] /' || true
cat "$WORK/server.out"
METRICS_URL="$(sed -n 's/^metrics on //p' "$WORK/server.out")"
echo "== Prometheus metrics of the server: $METRICS_URL (while the demo runs;"
echo "   e.g. curl -s $METRICS_URL | grep ^rfrpc_)"

YCSB_ARGS=(-db jakiro -p jakiro.servers="$ADDR" -p jakiro.provider="$PROVIDER"
  -p jakiro.mode="$MODE" -p jakiro.print_stats=true
  -p recordcount="$RECORDS" -p dataintegrity=true -threads 1 -s)

run() {  # run TITLE YCSB-ARGS...
  local title="$1"; shift
  echo
  echo "== $title"
  # In the background so that a signal to this script is handled at once
  # (bash runs traps only between foreground commands); stderr (status lines)
  # and stdout (the summary) as one stream, minus rfrpc's shutdown warnings.
  "${CLIENT_CPU[@]}" timeout -k 5 "$((SECONDS_PER_RUN + 120))" "$YCSB" "$@" \
    "${YCSB_ARGS[@]}" > >(grep --line-buffered -v -e "channel destroyed") 2>&1 &
  YCSB_PID=$!
  local rc=0
  wait "$YCSB_PID" || rc=$?
  YCSB_PID=
  sleep 0.2  # Let the filter print the last lines.
  if [ "$rc" != 0 ]; then echo "demo: ycsb exited $rc" >&2; exit 1; fi
}
run "YCSB load: $RECORDS records (workload A's 10 fields x 100 B)" \
  -load -P kvstore/workloads/workloada
run "YCSB workload A (50% read, 50% update, zipfian) for ${SECONDS_PER_RUN} s" \
  -t -P kvstore/workloads/workloada -p operationcount=100000000 \
  -p maxexecutiontime="$SECONDS_PER_RUN"
run "YCSB workload C (100% read, zipfian) for ${SECONDS_PER_RUN} s" \
  -t -P kvstore/workloads/workloadc -p operationcount=100000000 \
  -p maxexecutiontime="$SECONDS_PER_RUN" --rfrpc_metrics_file="$WORK/ycsb_c.prom"

echo
# The server label is the one address of this demo: left out below.
NO_SERVER_LABEL='s/,server="[^"]*"//; s/server="[^"]*",//; s/server="[^"]*"//; s/{}//'
echo "== a few metrics: the server's, from $METRICS_URL"
if curl -sSf --max-time 10 "$METRICS_URL" -o "$WORK/server.prom"; then
  grep -E '^(rfrpc_server_calls_total|rfrpc_server_call_failures_total|rfrpc_server_handler_seconds_count|rfrpc_server_connections_accepted_total|rfrpc_server_reply_writes_total|rfrpc_jakiro_(items|hits_total|misses_total|evictions_total))' \
    "$WORK/server.prom" | sed "$NO_SERVER_LABEL" | head -20
else
  echo "demo: could not scrape $METRICS_URL" >&2
fi
echo "== and the last YCSB run's client metrics (--rfrpc_metrics_file)"
grep -E '^(rfrpc_client_calls_total|rfrpc_client_results_total|rfrpc_client_mode_switches_total|rfrpc_client_fetches_per_call_(count|sum))' \
  "$WORK/ycsb_c.prom" | sed "$NO_SERVER_LABEL" | head -10 || true

echo
echo "== stopping kvstore_server (SIGTERM)"
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
sed -n 's/^I.*kvstore_server_main.cc:[0-9]*\] /[server] /p' "$WORK/server.log" | tail -5
if [ "$rc" != 0 ]; then echo "demo: kvstore_server exited $rc" >&2; exit 1; fi
echo "demo: OK (provider $PROVIDER)"
