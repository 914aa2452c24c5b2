#!/usr/bin/env bash
# Jakiro end to end: kvstore_server processes and the ycsb binary.
#
#   0. --kv_memory_mb too large to express in bytes, an unknown flag in a
#      --flagfile: exit 2.
#   1. One server (2 workers): ycsb load + run of workload A with
#      dataintegrity=true in each mode (rf, server_reply, hybrid), with
#      request batching and pipelined (outstanding=16, unbatched and batched);
#      every operation must return OK and every read verify.
#   2. Two servers: --servers=a,b (jakiro.servers); both must hold records.
#   3. SIGTERM: each server exits 0, logs "stopped", leaves no process.
#   4. (shm) A server SIGKILLed under a run: ycsb stops within seconds, says
#      the database is unreachable and exits 1.
#   5. (shm) A server whose stderr pipe closed serves and stops with exit 0
#      (it died of SIGPIPE at its next log line).
#   6. A server restarted at its address with another --workers under a
#      run (1 worker, then 2, 4 s apart): ycsb with unavailablestop=0 rides
#      out the gap and exits 0, no operation fails FAILED_PRECONDITION (the
#      client routes by the new count and resends what the change
#      misrouted), and both of the new server's partitions get the run's
#      inserts (the new store is empty: its reads and updates are NOT_FOUND).
#
# Provider and addresses come from the environment so the Soft-RoCE VM runs
# the same script over verbs (tools/kvstore_vm_test.sh):
#   RFRPC_TEST_PROVIDER  shm (default) | verbs
#   RFRPC_TEST_ADDRESS   listen address of server 1 (default: empty, the
#                        provider picks one); server 2 uses RFRPC_TEST_ADDRESS2
#                        (verbs: give ip:port for both, e.g. 10.11.0.1:7001).
#   RFRPC_TEST_RECORDS, RFRPC_TEST_OPS  sizes (defaults 2000, 6000).
#   RFRPC_TEST_RESTART_RUN  seconds part 6's run lasts (default 10; it must
#                        outlast the restart: 1 s, the stop, 4 s, the start).
#   RFRPC_TEST_BIN       folder holding kvstore/server/kvstore_server and
#                        kvstore/ycsb/ycsb (default: the runfiles root).
set -uo pipefail

BIN="${RFRPC_TEST_BIN:-.}"
SERVER="$BIN/kvstore/server/kvstore_server"
YCSB="$BIN/kvstore/ycsb/ycsb"
W="${RFRPC_TEST_WORKLOADS:-$BIN/kvstore/workloads}"
PROVIDER="${RFRPC_TEST_PROVIDER:-shm}"
TMP="$(mktemp -d "${TEST_TMPDIR:-/tmp}/kvstore_e2e.XXXXXX")"
# Empty: the shm provider picks a fresh socket ($TEST_TMPDIR paths are often
# longer than a Unix socket path may be).
ADDR1="${RFRPC_TEST_ADDRESS:-}"
ADDR2="${RFRPC_TEST_ADDRESS2:-}"
RECORDS="${RFRPC_TEST_RECORDS:-2000}"
OPS="${RFRPC_TEST_OPS:-6000}"
PIDS=()

cleanup() {
  # Only the script itself: a child forked from it (the watcher, between
  # fork and exec) that is killed runs this trap too, and must not remove
  # $TMP under the script.
  [ "$BASHPID" = "$$" ] || return 0
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  for f in "$TMP"/*.out "$TMP"/*.err; do
    [ -f "$f" ] && { echo "--- $f"; tail -40 "$f"; }
  done
  exit 1
}

# start_server NAME ADDRESS WORKERS: starts it, waits for its address file.
start_server() {
  local name="$1" addr="$2" workers="$3"
  # -k 30: a sanitizer build's exit (LeakSanitizer's scan) can take seconds
  # on a loaded 2-core host; stop_server dumps the stacks of one that has
  # not exited after 15 s.
  timeout -k 30 300 "$SERVER" --provider="$PROVIDER" --address="$addr" \
    --workers="$workers" --kv_memory_mb=16 --address_file="$TMP/$name.addr" \
    --rfrpc_idle_spin_rounds=200 \
    >"$TMP/$name.out" 2>"$TMP/$name.err" &
  PIDS+=($!)
  eval "PID_$name=$!"
  for _ in $(seq 1 300); do
    [ -s "$TMP/$name.addr" ] && break
    kill -0 "$!" 2>/dev/null || fail "$name exited at start"
    sleep 0.1
  done
  [ -s "$TMP/$name.addr" ] || fail "$name did not come up"
  grep -q "^listening on " "$TMP/$name.out" || fail "$name printed no 'listening on'"
}

# check_report FILE OP COUNT: OP ran COUNT times, all OK.
check_ok() {
  local file="$1" op="$2"
  grep -q "^\[$op\], Return=OK, " "$file" || fail "$file: no [$op] Return=OK"
  local bad
  bad="$(grep "^\[$op\], Return=" "$file" | grep -v 'Return=OK' || true)"
  [ -z "$bad" ] || fail "$file: [$op] non-OK returns: $bad"
}

ycsb() {  # ycsb NAME PHASE ARGS...: runs it, asserts exit 0 and the report.
  local name="$1"; shift
  # Defaults first: later -p arguments override earlier ones.
  "$YCSB" -p jakiro.provider="$PROVIDER" -p jakiro.connect_retry_ms=5000 \
    -p jakiro.timeout_ms=20000 \
    -p dataintegrity=true -p recordcount="$RECORDS" -p operationcount="$OPS" \
    "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || fail "ycsb $name exited $?"
  grep -q '^\[OVERALL\], RunTime(ms), [0-9]*$' "$TMP/$name.out" || fail "$name: no RunTime"
  grep -q '^\[OVERALL\], Throughput(ops/sec), [0-9.E]*$' "$TMP/$name.out" || fail "$name: no Throughput"
  echo "ok: $name: $(grep '^\[OVERALL\], Throughput' "$TMP/$name.out")"
}

stop_server() {  # stop_server NAME: SIGTERM, exit 0, nothing left.
  local name="$1" pid
  pid="$(eval echo "\$PID_$name")"
  # The timeout wrapper forwards SIGTERM to the server.
  kill -TERM "$pid" || fail "$name: already gone"
  # If it is still there after 15 s, record where each of its threads is.
  # It ends on its own once the server is gone (killing a just-forked
  # child makes it run this script's EXIT trap: see cleanup).
  bash -c '
    for _ in $(seq 150); do
      pgrep -f -- "--address_file=$1" >/dev/null || exit 0
      sleep 0.1
    done
    for p in $(pgrep -f -- "--address_file=$1"); do
      echo "--- $2 (pid $p) still running 15 s after SIGTERM; threads:"
      for t in /proc/"$p"/task/*; do
        echo "$t: $(cat "$t/comm" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
      done
      command -v gdb >/dev/null &&
        timeout 20 gdb -p "$p" -batch -ex "thread apply all bt" 2>&1 | tail -200
    done >>"$3"' watcher "$TMP/$name.addr" "$name" "$TMP/$name.err" &
  local watcher=$!
  local rc=0
  wait "$pid" || rc=$?
  wait "$watcher" 2>/dev/null || true
  [ "$rc" = 0 ] || fail "$name exited $rc after SIGTERM"
  grep -q "kvstore_server: stopped" "$TMP/$name.err" || fail "$name: no 'stopped'"
  if pgrep -f -- "--address_file=$TMP/$name.addr" >/dev/null; then
    fail "$name: a process is left after SIGTERM"
  fi
  echo "ok: $name stopped on SIGTERM, exit 0, no process left"
}

[ -x "$SERVER" ] || fail "no $SERVER"
[ -x "$YCSB" ] || fail "no $YCSB"
echo "provider: $PROVIDER"

# refused NAME PATTERN FLAGS...: kvstore_server with FLAGS exits 2 at start
# and its stderr matches PATTERN.
refused() {
  local name="$1" pattern="$2" rc=0
  shift 2
  "$SERVER" --provider="$PROVIDER" --address="$ADDR1" "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
  [ "$rc" = 2 ] || fail "$name ($*): exit $rc, want 2"
  grep -q -- "$pattern" "$TMP/$name.err" || fail "$name ($*): no '$pattern'"
}

# 0. Bad start-up settings are refused with exit 2 and a message:
# a store size that would wrap (MiB to bytes);
refused big "kv_memory_mb=17592186044417 is above .*the largest partition" \
  --kv_memory_mb=17592186044417
# an unknown flag in a --flagfile, as on the command line (gflags alone
# ignores it);
printf -- '--workers=1\n--totally_bogus=1\n' >"$TMP/bad.flags"
refused flagfile "bad.flags:2: unknown flag --totally_bogus" \
  --flagfile="$TMP/bad.flags"
# fewer connections than workers (no Jakiro client could connect);
refused maxconn "rfrpc_max_connections=1 is below --workers=2" \
  --workers=2 --rfrpc_max_connections=1
# a flag file that includes itself (gflags alone recursed until a
# segmentation fault).
printf -- '--flagfile=%s\n' "$TMP/loop.flags" >"$TMP/loop.flags"
refused loop "loop.flags includes itself" --flagfile="$TMP/loop.flags"

# 1. One server, every mode.
start_server s1 "$ADDR1" 2
A1="$(cat "$TMP/s1.addr")"
ycsb load1 -load -db jakiro -P "$W/workloada" -p jakiro.servers="$A1" -threads 2
check_ok "$TMP/load1.out" INSERT
grep -q "^\[INSERT\], Operations, $RECORDS$" "$TMP/load1.out" || fail "load1: not $RECORDS inserts"
for mode in rf server_reply hybrid; do
  ycsb "run_$mode" -t -db jakiro -P "$W/workloada" -p jakiro.servers="$A1" \
    -p jakiro.mode="$mode" -threads 2
  for op in READ UPDATE VERIFY; do check_ok "$TMP/run_$mode.out" "$op"; done
done
ycsb run_batched -t -db jakiro -P "$W/workloadc" -p jakiro.servers="$A1" \
  -p jakiro.mode=rf -p jakiro.batch=fixed -p jakiro.batch_size=4 \
  -p jakiro.batch_timeout_us=50 -threads 4
for op in READ VERIFY; do check_ok "$TMP/run_batched.out" "$op"; done
# Pipelined: 2 threads with 16 operations in flight each, unbatched and in
# fixed batches of 8; every operation issued completes once, OK and verified.
for b in off fixed; do
  ycsb "run_pipelined_$b" -t -db jakiro -P "$W/workloada" -p jakiro.servers="$A1" \
    -p jakiro.mode=rf -p outstanding=16 -p jakiro.batch="$b" -p jakiro.batch_size=8 \
    -p jakiro.batch_timeout_us=50 -threads 2
  for op in READ UPDATE VERIFY; do check_ok "$TMP/run_pipelined_$b.out" "$op"; done
  grep -q "2 thread(s), 16 operation(s) in flight per thread" "$TMP/run_pipelined_$b.err" ||
    fail "run_pipelined_$b: no pipelined run header"
  n="$(grep -h '^\[\(READ\|UPDATE\)\], Return=OK, ' "$TMP/run_pipelined_$b.out" | awk -F', ' '{s+=$3} END {print s+0}')"
  [ "$n" = "$OPS" ] || fail "run_pipelined_$b: $n operations returned, not $OPS"
done
# A YCSB scan is NOT_IMPLEMENTED on Jakiro and counted as failed.
ycsb run_scan -t -db jakiro -P "$W/workloade" -p jakiro.servers="$A1" \
  -p operationcount=200
grep -q '^\[SCAN\], Return=NOT_IMPLEMENTED, ' "$TMP/run_scan.out" || fail "scan not NOT_IMPLEMENTED"

# 2. Two servers, keys spread by consistent hashing.
start_server s2 "$ADDR2" 1
A2="$(cat "$TMP/s2.addr")"
# The same keys again: server 1 keeps all of the first load, server 2 gets
# its share of the ring.
ycsb load2 -load -db jakiro -P "$W/workloadc" -p jakiro.servers="$A1,$A2" \
  -threads 2
check_ok "$TMP/load2.out" INSERT
ycsb run2 -t -db jakiro -P "$W/workloadc" -p jakiro.servers="$A1,$A2" \
  -threads 2
for op in READ VERIFY; do check_ok "$TMP/run2.out" "$op"; done

# 3. SIGTERM; then check what each server stored.
stop_server s1
stop_server s2
items() {  # Sum of the partitions' item counts a server logged at exit.
  sed -n 's/.*partition [0-9]*: items=\([0-9]*\) .*/\1/p' "$1" | awk '{s+=$1} END {print s+0}'
}
I1="$(items "$TMP/s1.err")"
I2="$(items "$TMP/s2.err")"
echo "items: server 1 $I1, server 2 $I2"
# Server 1 holds every record of the first load (the second overwrote its
# share) and workload E's few inserts; server 2 about half of the second load.
[ "$I1" -ge "$RECORDS" ] || fail "server 1 holds $I1 records, want >= $RECORDS"
[ "$I2" -gt $((RECORDS / 4)) ] || fail "server 2 holds only $I2 records of $RECORDS"
[ "$I2" -lt $((RECORDS * 3 / 4)) ] || fail "server 2 holds $I2 records of $RECORDS"

# 4. A server that dies under a run: ycsb stops within seconds and exits 1,
# saying why, instead of counting failed operations to the end with exit 0.
# shm only: over verbs a dead peer shows after the QP's retry timeouts.
if [ "$PROVIDER" = shm ]; then
  start_server s3 "" 1
  A3="$(cat "$TMP/s3.addr")"
  ycsb load3 -load -db jakiro -P "$W/workloadc" -p jakiro.servers="$A3" -threads 1
  # operationcount=0: until maxexecutiontime, unless something stops it.
  "$YCSB" -t -db jakiro -P "$W/workloadc" -p jakiro.servers="$A3" \
    -p jakiro.provider=shm -p recordcount="$RECORDS" -p operationcount=0 \
    -p maxexecutiontime=60 -threads 2 >"$TMP/died.out" 2>"$TMP/died.err" &
  YPID=$!
  PIDS+=($YPID)
  sleep 1
  pkill -KILL -f -- "--address_file=$TMP/s3.addr"
  T0=$SECONDS
  rc=0
  wait "$YPID" || rc=$?
  took=$((SECONDS - T0))
  [ "$rc" = 1 ] || fail "ycsb exited $rc after its server died, want 1"
  grep -q "the database is unreachable" "$TMP/died.err" ||
    fail "died: ycsb did not say the database is unreachable"
  [ "$took" -lt 30 ] || fail "ycsb took ${took} s to stop after its server died"
  echo "ok: ycsb stopped ${took} s after its server died, exit 1"

  # 5. The reader of its stderr takes one byte and goes.
  timeout -k 30 120 "$SERVER" --provider=shm --address= --workers=1 \
    --kv_memory_mb=16 --address_file="$TMP/s5.addr" --rfrpc_idle_spin_rounds=200 \
    >"$TMP/s5.out" 2> >(head -c 1 >/dev/null) &
  S5=$!
  PIDS+=($S5)
  for _ in $(seq 1 300); do
    [ -s "$TMP/s5.addr" ] && break
    kill -0 "$S5" 2>/dev/null || fail "s5 exited at start"
    sleep 0.1
  done
  [ -s "$TMP/s5.addr" ] || fail "s5 did not come up"
  sleep 0.5
  ycsb load5 -load -db jakiro -P "$W/workloadc" -p jakiro.servers="$(cat "$TMP/s5.addr")" \
    -threads 1
  check_ok "$TMP/load5.out" INSERT
  kill -TERM "$S5"
  rc=0
  wait "$S5" || rc=$?
  [ "$rc" = 0 ] || fail "s5 (stderr pipe closed) exited $rc after SIGTERM (141: SIGPIPE)"
  echo "ok: a server whose stderr pipe closed served and stopped with exit 0"
fi

# 6. A server restarted at its address with another --workers under a run.
if [ "$PROVIDER" = shm ]; then
  ADDR6="$(mktemp -u /tmp/kv6.XXXXXX).sock"
else
  ADDR6="${ADDR1%:*}:7016"
fi
RUN6="${RFRPC_TEST_RESTART_RUN:-10}"
start_server s6 "$ADDR6" 1
A6="$(cat "$TMP/s6.addr")"
ycsb load6 -load -db jakiro -P "$W/workloada" -p jakiro.servers="$A6" -threads 1
"$YCSB" -t -db jakiro -P "$W/workloada" -p jakiro.servers="$A6" \
  -p jakiro.provider="$PROVIDER" -p jakiro.timeout_ms=20000 \
  -p recordcount="$RECORDS" -p operationcount=0 -p maxexecutiontime="$RUN6" \
  -p updateproportion=0.4 -p insertproportion=0.1 \
  -p unavailablestop=0 -threads 2 >"$TMP/restart.out" 2>"$TMP/restart.err" &
YPID=$!
PIDS+=($YPID)
sleep 1
stop_server s6
# Longer than the 3 s after which ycsb would otherwise give up.
sleep 4
rm -f "$TMP/s6.addr"
start_server s6 "$ADDR6" 2
kill -0 "$YPID" 2>/dev/null || fail "restart: ycsb ended before the server came back"
rc=0
wait "$YPID" || rc=$?
[ "$rc" = 0 ] || fail "ycsb across a restart with another --workers exited $rc"
# OK; NOT_FOUND from the new, empty store; SERVICE_UNAVAILABLE in the gap.
# A call misrouted by the old count fails FAILED_PRECONDITION, which YCSB
# reports as UNEXPECTED_STATE.
bad="$(grep "Return=" "$TMP/restart.out" |
  grep -v -e "Return=OK," -e "Return=NOT_FOUND," -e "Return=SERVICE_UNAVAILABLE," || true)"
[ -z "$bad" ] || fail "restart: unexpected returns: $bad ($(grep 'that failed' "$TMP/restart.err" | head -3))"
for op in READ UPDATE INSERT; do
  grep -q "^\[$op\], Return=OK, " "$TMP/restart.out" || fail "restart: no [$op] Return=OK"
done
stop_server s6
parts="$(sed -n 's/.*partition \([0-9]*\): items=\([0-9]*\) .*/\1:\2/p' "$TMP/s6.err" | tr '\n' ' ')"
echo "restart: the 2-worker server's partitions (partition:items): $parts"
for w in 0 1; do
  n="$(sed -n "s/.*partition $w: items=\([0-9]*\) .*/\1/p" "$TMP/s6.err")"
  [ "${n:-0}" -gt 0 ] || fail "restart: partition $w of the 2-worker server got no inserts"
done
echo "ok: ycsb rode out a restart from 1 to 2 workers: exit 0, every return OK, NOT_FOUND or SERVICE_UNAVAILABLE"
echo "PASS"
