#!/usr/bin/env bash
# Prometheus metrics end to end: kvstore_server with a metrics port, YCSB
# runs with known outcomes, /metrics scraped over HTTP (curl), checked by
# `promtool check metrics` and against what the runs did:
#
#   1. load R/2 of R records                  -> Put calls = R/2, all OK
#   2. read OPS keys uniformly from all R     -> Get calls = OPS; NOT_FOUND
#                                                failures = the misses YCSB
#                                                reports = Jakiro's misses
#   3. K updates with values over the         -> Put failures with code
#      server's --kv_max_value_bytes             RESOURCE_EXHAUSTED = K
#                                                (YCSB: [UPDATE] Return=ERROR)
#
# The client side (ycsb --rfrpc_metrics_file, written when the run ends) must
# pass promtool and count the same calls. Ports are ephemeral
# (--rfrpc_metrics_port=-1: the server prints where it serves). First, the
# example alert rules of docs/observability.md must pass `promtool check
# rules` and fire (only) when the server-reply share rises.
#
#   RFRPC_TEST_BIN  folder holding kvstore/server/kvstore_server and
#                   kvstore/ycsb/ycsb (default: the runfiles root).
set -uo pipefail

BIN="${RFRPC_TEST_BIN:-.}"
SERVER="$BIN/kvstore/server/kvstore_server"
YCSB="$BIN/kvstore/ycsb/ycsb"
W="$BIN/kvstore/workloads"
DOC="${RFRPC_TEST_DOC:-docs/observability.md}"
TMP="$(mktemp -d "${TEST_TMPDIR:-/tmp}/kvstore_metrics.XXXXXX")"
R=2000        # Records of the key space; half are loaded.
OPS=4000      # Reads in step 2.
K=300         # Oversized updates in step 3.
MAX_VALUE=4096
PID=

cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  for f in "$TMP"/*.out "$TMP"/*.err; do
    [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; }
  done
  exit 1
}

# metric FILE NAME [LABEL=\"VALUE\"...]: the sum of the samples of NAME whose
# labels include every one given; "none" if there is no such sample.
metric() {
  local file="$1" name="$2"; shift 2
  awk -v n="$name" -v want="$*" '
    BEGIN { c = split(want, w, " ") }
    /^#/ { next }
    {
      m = $1; sub(/\{.*/, "", m)
      if (m != n) next
      for (i = 1; i <= c; i++) if (index($1, w[i]) == 0) next
      s += $NF; found = 1
    }
    END { if (found) printf "%.0f\n", s; else print "none" }' "$file"
}

expect() {  # expect WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: got $2, want $3"
  echo "ok: $1 = $3"
}

returns() {  # returns FILE OP NAME: YCSB's count of OP with Return=NAME.
  local n
  n="$(grep "^\[$2\], Return=$3, " "$1" | awk -F', ' '{print $3}')"
  echo "${n:-0}"
}

ycsb() {  # ycsb NAME ARGS...: runs it; exit status not checked here.
  local name="$1"; shift
  "$YCSB" -db jakiro -p jakiro.servers="$ADDR" -p jakiro.connect_retry_ms=5000 \
    -p jakiro.timeout_ms=20000 -p recordcount="$R" -p fieldcount=1 \
    -p fieldlength=100 -threads 2 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
}

scrape() {  # scrape FILE: GET /metrics, then promtool must accept it.
  curl -sSf --max-time 10 "$URL" -o "$1" || fail "curl $URL failed"
  promtool check metrics <"$1" >"$1.lint" 2>&1 || {
    cat "$1.lint"; fail "promtool check metrics rejected $1"; }
}

[ -x "$SERVER" ] || fail "no $SERVER"

# Bad endpoints are refused at start, not at exit: a metrics file in a
# missing folder, a host that is no address.
rc=0
"$SERVER" --provider=shm --address= --rfrpc_metrics_port=0 \
  --rfrpc_metrics_file=/nonexistent-rfrpc-dir/m.prom >"$TMP/badfile.out" \
  2>"$TMP/badfile.err" || rc=$?
[ "$rc" = 2 ] || fail "--rfrpc_metrics_file in a missing folder: exit $rc, want 2"
grep -q "is not a directory this process can write to" "$TMP/badfile.err" ||
  fail "--rfrpc_metrics_file in a missing folder: no error"
rc=0
"$SERVER" --provider=shm --address= --rfrpc_metrics_port=-1 \
  --rfrpc_metrics_host=999.1.1.1 >"$TMP/badhost.out" 2>"$TMP/badhost.err" ||
  rc=$?
[ "$rc" = 2 ] || fail "--rfrpc_metrics_host=999.1.1.1: exit $rc, want 2"
grep -q "is not an IPv4 address" "$TMP/badhost.err" ||
  fail "--rfrpc_metrics_host=999.1.1.1: no error"
echo "ok: a bad metrics file or host is refused at start"
[ -x "$YCSB" ] || fail "no $YCSB"
command -v promtool >/dev/null || fail "no promtool (Debian package prometheus; tools/setup.sh)"
command -v curl >/dev/null || fail "no curl (tools/setup.sh)"

# 0. The documented alert: the yaml block that holds "groups:".
[ -f "$DOC" ] || fail "no $DOC"
awk '/^```yaml$/ { inb = 1; buf = ""; next }
     /^```$/ && inb { inb = 0; if (buf ~ /groups:/) printf "%s", buf; next }
     inb { buf = buf $0 "\n" }' "$DOC" >"$TMP/rules.yml"
grep -q "alert: RfrpcServerReplyShareRising" "$TMP/rules.yml" ||
  fail "no RfrpcServerReplyShareRising rule in $DOC"
promtool check rules "$TMP/rules.yml" >"$TMP/rules.out" 2>&1 || {
  cat "$TMP/rules.out"; fail "promtool check rules rejected the documented rules"; }
# A day at 10% server-reply, then 90%: silent before, firing 30 min after.
cat >"$TMP/rules_test.yml" <<'YAML'
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'rfrpc_client_results_total{mode="server_reply",server="kv1"}'
        values: '0+10x1500 15090+90x60'
      - series: 'rfrpc_client_results_total{mode="remote_fetch",server="kv1"}'
        values: '0+90x1500 135010+10x60'
    alert_rule_test:
      - eval_time: 1500m
        alertname: RfrpcServerReplyShareRising
        exp_alerts: []
      - eval_time: 1530m
        alertname: RfrpcServerReplyShareRising
        exp_alerts:
          - exp_labels: {severity: warning, server: kv1}
            exp_annotations:
              summary: "kv1: 90% of results by server-reply"
              description: "Clients of kv1 fall back to server-reply: results take longer than R fetches. Check rfrpc_server_handler_seconds and the server's CPU."
YAML
(cd "$TMP" && promtool test rules rules_test.yml) >"$TMP/rules_test.out" 2>&1 || {
  cat "$TMP/rules_test.out"; fail "the documented alert does not fire as it should"; }
echo "ok: the documented alert rules pass promtool check and test rules"

timeout -k 5 300 "$SERVER" --workers=2 --kv_memory_mb=16 \
  --kv_max_value_bytes="$MAX_VALUE" --address_file="$TMP/addr" \
  --rfrpc_metrics_port=-1 --rfrpc_metrics_host=127.0.0.1 \
  --rfrpc_idle_spin_rounds=200 \
  >"$TMP/server.out" 2>"$TMP/server.err" &
PID=$!
for _ in $(seq 1 300); do
  [ -s "$TMP/addr" ] && break
  kill -0 "$PID" 2>/dev/null || fail "server exited at start"
  sleep 0.1
done
[ -s "$TMP/addr" ] || fail "server did not come up"
ADDR="$(cat "$TMP/addr")"
URL="$(sed -n 's/^metrics on //p' "$TMP/server.out")"
case "$URL" in
  http://127.0.0.1:[0-9]*/metrics) echo "ok: server metrics on $URL" ;;
  *) fail "server printed no 'metrics on http://127.0.0.1:PORT/metrics' ($URL)" ;;
esac

# Before any call: the server's methods at 0, and it lints.
scrape "$TMP/m0.prom"
expect "Get calls before any" \
  "$(metric "$TMP/m0.prom" rfrpc_server_calls_total 'method="/rfrpc.kv.Jakiro/Get"')" 0

# 1. Load half the key space.
ycsb load -load -P "$W/workloadc" -p insertcount=$((R / 2)) ||
  fail "ycsb load exited $?"
expect "load: YCSB INSERT OK" "$(returns "$TMP/load.out" INSERT OK)" $((R / 2))

# 2. Uniform reads over all of it; about half miss. The client serves its
# metrics while it runs and writes the final ones at the end.
ycsb read -t -P "$W/workloadc" -p operationcount="$OPS" \
  -p requestdistribution=uniform --rfrpc_metrics_port=-1 \
  --rfrpc_metrics_host=127.0.0.1 --rfrpc_metrics_file="$TMP/client.prom" ||
  fail "ycsb read exited $?"
grep -q '^metrics on http://127.0.0.1:[0-9]*/metrics$' "$TMP/read.err" ||
  fail "ycsb printed no 'metrics on'"
READ_OK="$(returns "$TMP/read.out" READ OK)"
READ_NF="$(returns "$TMP/read.out" READ NOT_FOUND)"
expect "read: YCSB READ OK + NOT_FOUND" $((READ_OK + READ_NF)) "$OPS"
[ "$READ_NF" -gt 0 ] && [ "$READ_OK" -gt 0 ] ||
  fail "read: want hits and misses, got $READ_OK OK and $READ_NF NOT_FOUND"

# 3. Updates the server must refuse: values over --kv_max_value_bytes.
ycsb big -t -P "$W/workloadc" -p operationcount="$K" -p readproportion=0 \
  -p updateproportion=1 -p writeallfields=true \
  -p fieldlength=$((MAX_VALUE + 1000)) || true  # Failed updates: exit 1.
expect "big: YCSB UPDATE ERROR" "$(returns "$TMP/big.out" UPDATE ERROR)" "$K"

# The server's view.
S="$TMP/m1.prom"
scrape "$S"
GET='method="/rfrpc.kv.Jakiro/Get"'
PUT='method="/rfrpc.kv.Jakiro/Put"'
expect "server Put calls" "$(metric "$S" rfrpc_server_calls_total "$PUT")" $((R / 2 + K))
expect "server Put RESOURCE_EXHAUSTED" \
  "$(metric "$S" rfrpc_server_call_failures_total "$PUT" 'code="RESOURCE_EXHAUSTED"')" "$K"
expect "server Get calls" "$(metric "$S" rfrpc_server_calls_total "$GET")" "$OPS"
expect "server Get NOT_FOUND" \
  "$(metric "$S" rfrpc_server_call_failures_total "$GET" 'code="NOT_FOUND"')" "$READ_NF"
expect "server failures, every method and code" \
  "$(metric "$S" rfrpc_server_call_failures_total)" $((READ_NF + K))
expect "server Get handler time samples" \
  "$(metric "$S" rfrpc_server_handler_seconds_count "$GET")" "$OPS"
expect "server Get handler time, +Inf bucket" \
  "$(metric "$S" rfrpc_server_handler_seconds_bucket "$GET" 'le="+Inf"')" "$OPS"
expect "server Get OK result sizes" \
  "$(metric "$S" rfrpc_server_result_bytes_count "$GET")" "$READ_OK"
expect "server Delete calls" \
  "$(metric "$S" rfrpc_server_calls_total 'method="/rfrpc.kv.Jakiro/Delete"')" 0
# Three runs of 2 threads, each with a connection per server worker (2).
expect "server connections accepted" \
  "$(metric "$S" rfrpc_server_connections_accepted_total)" 12
expect "server connections rejected" \
  "$(metric "$S" rfrpc_server_connections_rejected_total)" 0
expect "server bad requests" "$(metric "$S" rfrpc_server_bad_requests_total)" 0
expect "jakiro items" "$(metric "$S" rfrpc_jakiro_items)" $((R / 2))
expect "jakiro puts" "$(metric "$S" rfrpc_jakiro_puts_total)" $((R / 2))
expect "jakiro hits" "$(metric "$S" rfrpc_jakiro_hits_total)" "$READ_OK"
expect "jakiro misses" "$(metric "$S" rfrpc_jakiro_misses_total)" "$READ_NF"
expect "jakiro partitions" "$(grep -c '^rfrpc_jakiro_items{' "$S")" 2
expect "jakiro evictions" "$(metric "$S" rfrpc_jakiro_evictions_total)" 0

# The client's view of step 2.
C="$TMP/client.prom"
[ -s "$C" ] || fail "ycsb wrote no $C"
promtool check metrics <"$C" >"$C.lint" 2>&1 || {
  cat "$C.lint"; fail "promtool check metrics rejected $C"; }
echo "ok: promtool accepts the client's metrics"
expect "client Get calls" "$(metric "$C" rfrpc_client_calls_total "$GET")" "$OPS"
expect "client Get NOT_FOUND" \
  "$(metric "$C" rfrpc_client_call_failures_total "$GET" 'code="NOT_FOUND"')" "$READ_NF"
expect "client Get latency samples" \
  "$(metric "$C" rfrpc_client_call_duration_seconds_count "$GET")" "$OPS"
expect "client results, both modes" "$(metric "$C" rfrpc_client_results_total)" "$OPS"
expect "client timeouts" "$(metric "$C" rfrpc_client_call_timeouts_total)" 0

# SIGTERM: exit 0.
kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
PID=
[ "$rc" = 0 ] || fail "server exited $rc after SIGTERM"
echo "PASS"
