#!/usr/bin/env bash
# rfrpc_tune's command line refuses what it cannot use before doing any
# work: an --out it cannot write fails at once (not after a calibration of
# minutes), and select's numeric flags are checked.
#
# Run: bazel test //tools:rfrpc_tune_cli_test
set -uo pipefail
T="${TEST_SRCDIR:-$PWD/..}/${TEST_WORKSPACE:-rfrpc}/tools/rfrpc_tune"
pass=0
fail=0
# expect NAME STATUS PATTERN CMD...: CMD exits STATUS within 10 s and its
# stderr matches PATTERN.
expect() {
  local name=$1 want=$2 pattern=$3 err status
  shift 3
  err=$(timeout 10 "$T" "$@" 2>&1 >/dev/null)
  status=$?
  if [ "$status" = "$want" ] && grep -q -- "$pattern" <<<"$err"; then
    echo "PASS $name"
    pass=$((pass + 1))
  else
    echo "FAIL $name: exit $status: $err"
    fail=$((fail + 1))
  fi
}
expect "calibrate refuses an unwritable --out at once" 1 \
  "cannot write /nonexistent/dir/p.prof.tmp" \
  calibrate --out=/nonexistent/dir/p.prof
expect "calibrate needs --out" 1 "calibrate needs --out" calibrate
mkdir -p "${TEST_TMPDIR:-/tmp}/tune_out_dir"
expect "calibrate refuses a directory as --out at once" 1 "is a directory" \
  calibrate --out="${TEST_TMPDIR:-/tmp}/tune_out_dir"
expect "select checks --server_time_ns" 1 "server_time_ns >= 0 (got -5)" \
  select --profile=unused --server_time_ns=-5 --sizes=32
expect "select refuses an infinite --server_time_ns" 1 "server_time_ns >= 0 (got inf)" \
  select --profile=unused --server_time_ns=inf --sizes=32
expect "select checks --rows" 1 "rows >= 1 (got 0)" \
  select --profile=unused --rows=0 --sizes=32
expect "select names a missing profile" 1 "cannot open profile /nonexistent" \
  select --profile=/nonexistent --sizes=32
expect "select names an unknown --provider as such" 1 \
  "--provider=foo: not a provider" \
  select --profile=/nonexistent --provider=foo --sizes=32
# A profile made on shm (by hand: one I(R, F) point); --provider=auto is
# the provider it opens on this host (shm: no RDMA device), so it is taken.
cat >"${TEST_TMPDIR:-/tmp}/tune_mini.prof" <<'PROFILE'
format_version: 1
provider: "shm"
low_size: 32
high_size: 32
fetch_step: 64
max_retries: 1
throughput {
  server_time_ns: 0
  points { retries: 1 fetch_size: 32 ops_per_sec: 1000000 }
}
PROFILE
expect "select --provider=auto takes the profile of the provider auto opens" 0 \
  "" select --profile="${TEST_TMPDIR:-/tmp}/tune_mini.prof" --sizes=16 --provider=auto
# verbs is linked: no device is the error, not an unknown provider.
expect "calibrate on verbs without a device says so" 1 "no RDMA device found" \
  calibrate --out="${TEST_TMPDIR:-/tmp}/tune_verbs.prof" --provider=verbs
printf -- '--totally_bogus=1\n' >"${TEST_TMPDIR:-/tmp}/tune_bad.flags"
expect "an unknown flag in a --flagfile" 2 "unknown flag --totally_bogus" \
  --flagfile="${TEST_TMPDIR:-/tmp}/tune_bad.flags" select --sizes=32
expect "a flag of another subcommand" 2 "--out is a flag of calibrate, not of select" \
  select --profile=/nonexistent --sizes=32 --out=/tmp/x
expect "an unknown subcommand" 2 "unknown subcommand" bogus
echo "rfrpc_tune cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
