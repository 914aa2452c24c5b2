#!/usr/bin/env bash
# The ycsb binary end to end against the in-memory "basic" driver: argument
# parsing, property overrides, load + run in one process is not possible (each
# invocation is a new process), so each run loads what it reads with
# dataintegrity; the report format; exit codes for usage errors.
set -euo pipefail
YCSB=kvstore/ycsb/ycsb
W=kvstore/workloads
OUT="${TEST_TMPDIR:-/tmp}/ycsb_out.txt"
ERR="${TEST_TMPDIR:-/tmp}/ycsb_err.txt"

fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$OUT"; echo "--- stderr"; cat "$ERR"; exit 1; }

# Load phase with overrides and status lines.
"$YCSB" -load -db basic -P "$W/workloada" -p recordcount=500 \
  -p dataintegrity=true -threads 2 -s >"$OUT" 2>"$ERR" || fail "load exited $?"
grep -q '^\[OVERALL\], RunTime(ms), [0-9]*$' "$OUT" || fail "no RunTime line"
grep -q '^\[OVERALL\], Throughput(ops/sec), [0-9.E]*$' "$OUT" || fail "no Throughput"
grep -q '^\[INSERT\], Operations, 500$' "$OUT" || fail "not 500 inserts"
grep -q '^\[INSERT\], Return=OK, 500$' "$OUT" || fail "no Return=OK"
grep -q '^\[INSERT\], 99.9thPercentileLatency(us), [0-9]*$' "$OUT" || fail "no p99.9"
grep -q ' sec: .* operations; ' "$ERR" || fail "no status line"

# Unknown properties are reported, not fatal.
"$YCSB" -load -db basic -P "$W/workloadc" -p recordcount=10 -p recrdcount=3 \
  >"$OUT" 2>"$ERR" || fail "load with typo exited $?"
grep -q 'warning: -p: unknown property "recrdcount"' "$ERR" || fail "typo not reported"

# A malformed value names file and line; exit 2.
set +e
"$YCSB" -t -db basic -P "$W/workloada" -p fieldcount=x >"$OUT" 2>"$ERR"
rc=$?
set -e
[ "$rc" = 2 ] || fail "bad value exited $rc, want 2"
grep -q 'fieldcount: expected integer, got "x"' "$ERR" || fail "no value error"

# --rfrpc_profile is the property jakiro.profile; -p jakiro.profile wins.
"$YCSB" -load -db basic -P "$W/workloadc" -p recordcount=1 \
  --rfrpc_profile=/tmp/p1 --print_properties >"$OUT" 2>"$ERR" || fail "profile flag exited $?"
grep -q '^jakiro.profile=/tmp/p1  (--rfrpc_profile)$' "$ERR" || fail "--rfrpc_profile not a property"
"$YCSB" -load -db basic -P "$W/workloadc" -p recordcount=1 -p jakiro.profile=/tmp/p2 \
  --rfrpc_profile=/tmp/p1 --print_properties >"$OUT" 2>"$ERR" || fail "profile both exited $?"
grep -q '^jakiro.profile=/tmp/p2 ' "$ERR" || fail "-p jakiro.profile did not win"

# Usage errors: exit 2 with a message.
set +e
"$YCSB" -db basic >"$OUT" 2>"$ERR"; rc=$?
set -e
[ "$rc" = 2 ] || fail "missing phase exited $rc"
grep -q 'give -load (load phase) or -t (run)' "$ERR" || fail "no phase message"
# dotransactions gives the phase without -load/-t (as Java YCSB); it was
# accepted and ignored. A contradiction or a non-boolean is an error.
"$YCSB" -db basic -P "$W/workloadc" -p recordcount=20 -p dotransactions=false \
  >"$OUT" 2>"$ERR" || fail "dotransactions=false exited $?"
grep -q '^\[INSERT\], Operations, 20$' "$OUT" || fail "dotransactions=false did not load"
set +e
"$YCSB" -load -db basic -P "$W/workloadc" -p dotransactions=true >"$OUT" 2>"$ERR"; rc=$?
set -e
[ "$rc" = 2 ] || fail "dotransactions=true with -load exited $rc"
grep -q 'dotransactions=true (-p) contradicts -load' "$ERR" || fail "no contradiction message"
set +e
"$YCSB" -db basic -P "$W/workloadc" -p dotransactions=yes >"$OUT" 2>"$ERR"; rc=$?
set -e
[ "$rc" = 2 ] || fail "dotransactions=yes exited $rc"
grep -q 'dotransactions=yes (-p): expected true or false' "$ERR" || fail "no boolean message"
set +e
"$YCSB" -t -db nosuchdb -P "$W/workloada" >"$OUT" 2>"$ERR"; rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown db exited $rc"
grep -q 'unknown YCSB driver "nosuchdb"' "$ERR" || fail "no driver message"
set +e
"$YCSB" -t -threads zero >"$OUT" 2>"$ERR"; rc=$?
set -e
[ "$rc" = 2 ] || fail "bad -threads exited $rc"

# Configuration errors: exit 2 before the run header, naming the property.
expect_config_error() {  # expect_config_error MESSAGE ARGS...
  local want="$1"; shift
  set +e
  "$YCSB" "$@" >"$OUT" 2>"$ERR"; rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$* exited $rc, want 2"
  grep -qF -- "$want" "$ERR" || fail "$*: no \"$want\""
  if grep -q 'YCSB client (rfrpc)' "$ERR"; then fail "$*: the run started"; fi
}
expect_config_error 'threadcount 4294967296 is above 4096' \
  -load -db basic -P "$W/workloada" -p recordcount=10 -threads 4294967296
# Past what an int64_t holds: out of range, not "not an integer".
expect_config_error 'threadcount 99999999999999999999 is above 4096' \
  -load -db basic -P "$W/workloada" -p recordcount=10 -threads 99999999999999999999
expect_config_error 'recordcount 99999999999999999999 is above 9223372036854775807' \
  -load -db basic -P "$W/workloada" -p recordcount=99999999999999999999
expect_config_error 'exponential.percentile: expected number in [1, 100)' \
  -t -db basic -P "$W/workloada" -p recordcount=10 \
  -p requestdistribution=exponential -p exponential.percentile=500
expect_config_error 'hdrhistogram.percentiles: expected comma-separated percentiles in [0, 100], got "95,nan"' \
  -t -db basic -P "$W/workloada" -p recordcount=10 \
  -p hdrhistogram.percentiles=95,nan
expect_config_error 'recordcount: must be at least 1, got 0' \
  -load -db basic -P "$W/workloada" -p recordcount=0
expect_config_error 'insertstart (2000) is past recordcount (1000)' \
  -load -db basic -P "$W/workloada" -p recordcount=1000 -p insertstart=2000
expect_config_error 'keylength 99999999 is above 1024' \
  -load -db basic -P "$W/workloada" -p recordcount=10 -p keylength=99999999
expect_config_error 'exportfile: cannot write "/nonexistent_dir/out"' \
  -load -db basic -P "$W/workloada" -p recordcount=10 \
  -p exportfile=/nonexistent_dir/out
expect_config_error '"/dev/zero" is larger than' -load -db basic -P /dev/zero
# A flag-file line without a leading '-' names the programs the flags below
# it apply to: a typo'd one silently dropped them (here --list_drivers, and
# the load ran instead).
FLAGS_FILE="${TEST_TMPDIR:-/tmp}/ycsb_typo.flags"
printf 'list_drivers_typo\n--list_drivers\n' >"$FLAGS_FILE"
expect_config_error "ycsb_typo.flags:1: 'list_drivers_typo' is not a flag" \
  --flagfile="$FLAGS_FILE" -load -db basic -P "$W/workloadc" -p recordcount=1
printf 'ycs*\n--list_drivers\n' >"$FLAGS_FILE"
"$YCSB" --flagfile="$FLAGS_FILE" >"$OUT" 2>"$ERR" || fail "named flag file exited $?"
grep -qx basic "$OUT" || fail "flags under 'ycs*' not applied"
# Scans only against a driver whose keys have no order: every operation
# would be NOT_IMPLEMENTED and the run would exit 0 having done nothing.
# Refused before anything connects (no server listens at port 1).
expect_config_error 'scanproportion=1: driver "memcached" cannot scan' \
  -t -db memcached -P "$W/workloade" -p scanproportion=1 -p insertproportion=0 \
  -p memcached.hosts=127.0.0.1:1
expect_config_error 'scanproportion=1: driver "jakiro" cannot scan' \
  -t -db jakiro -P "$W/workloade" -p scanproportion=1 -p insertproportion=0 \
  -p jakiro.servers=/nonexistent/jakiro.sock
# Scans among other operations (workload E) run as in Java YCSB, each SCAN
# counted as NOT_IMPLEMENTED, with a warning; here the connect fails: exit 1.
set +e
"$YCSB" -t -db memcached -P "$W/workloade" -p memcached.hosts=127.0.0.1:1 \
  >"$OUT" 2>"$ERR"; rc=$?
set -e
[ "$rc" = 1 ] || fail "workload E on memcached exited $rc, want 1 (no server)"
grep -qF 'warning: scanproportion=0.95: driver "memcached" cannot scan' "$ERR" ||
  fail "no warning about workload E's scans"

# Run phase on an empty store with dataintegrity: every read is NOT_FOUND,
# verification fails, exit 1.
set +e
"$YCSB" -t -db basic -P "$W/workloadc" -p recordcount=100 -p operationcount=50 \
  -p dataintegrity=true >"$OUT" 2>"$ERR"; rc=$?
set -e
[ "$rc" = 1 ] || fail "integrity failure exited $rc, want 1"
grep -q '^\[VERIFY\], Return=ERROR, 50$' "$OUT" || fail "no VERIFY errors"
grep -q 'DATA INTEGRITY FAILURE' "$ERR" || fail "no integrity message"

# --list_drivers shows the built-in drivers.
"$YCSB" --list_drivers >"$OUT" 2>"$ERR" || fail "--list_drivers exited $?"
for d in basic memcached redis; do grep -qx "$d" "$OUT" || fail "no $d"; done

echo "ycsb_main_test: all checks passed"
