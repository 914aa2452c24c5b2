#!/usr/bin/env bash
# Instructions per batched call outside protobuf, client and server (issue
# 16's "<= 250 per side" figure): callgrind on batch_bench, rf, fixed N, one
# client thread issuing each call from the previous call's callback.
# Instruction counts do not depend on the machine's load, so two builds can
# be compared run against run (the same binary gives the same figures within
# a few instructions).
#
#   tools/batch_instructions.sh [N] [seconds]      (defaults: 32, 2)
#
# Builds //benchmarks:batch_bench (-c opt). Prints, per call:
#   client  call   CallAsync, less ByteSizeLong and serializing the request
#           result CompletePart, less parsing the response
#           deliver Deliver, less the benchmark's callback (which issues the
#                  next call: counted in "call")
#           loop   RunFinished (RunCallbacks for a round that finished
#                  calls), less Deliver: per-method counts, the latencies
#                  the sizer is fed. Rounds that finish nothing are
#                  progress rounds (an inline check since 2026-12-02;
#                  before, their prologues counted here, ~150 a call)
#   server  ServeBatch per entry, less parsing, the handler, serializing
#           and clearing the messages
# Progress rounds (polling, READs) are left out: under valgrind the server
# runs much slower than natively, so their count says nothing of a native run.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-32}
SECONDS_RUN=${2:-2}
bazel build -c opt //benchmarks:batch_bench >/dev/null 2>&1
BIN=bazel-out/k8-opt/bin/benchmarks/batch_bench
OUT=$(mktemp -d)
# KEEP=1 keeps the profiles (their directory is printed).
if [ "${KEEP:-0}" = 1 ]; then echo "profiles in $OUT"; else trap 'rm -rf "$OUT"' EXIT; fi
valgrind --tool=callgrind --separate-threads=yes \
  --callgrind-out-file="$OUT/cg" "$BIN" --modes=rf --batch_sizes="$N" \
  --baseline=false --adaptive=false --auto_limits_us= \
  --seconds="$SECONDS_RUN" --warmup_seconds=0.1 --pin=false \
  >"$OUT/log" 2>&1
grep -E "^(provider|shm) " "$OUT/log" || true

# Inclusive cost of the function whose name matches $2 in profile $1 (the
# summary rows only; 0 if absent).
cost() {
  callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$1" 2>/dev/null |
    awk -v pat="$2" '
      /^-+$/ { sect++ }
      $0 ~ pat && $0 !~ /=>/ {
        n = $1; gsub(",", "", n); if (n + 0 > best) best = n + 0 }
      END { print best + 0 }'
}
# Number of calls of the function matching $2 in profile $1: the sum of
# the call counts on the annotated call sites ("=> ... (12,345x)").
calls() {
  callgrind_annotate --inclusive=yes --auto=yes --threshold=100 "$1" 2>/dev/null |
    awk -v pat="$2" '$0 ~ /=>/ && $0 ~ pat {
      if (match($0, /\([0-9,]+x\)/)) {
        k = substr($0, RSTART + 1, RLENGTH - 3); gsub(",", "", k); s += k } }
      END { print s + 0 }'
}

# Rows of the functions themselves (not of code inlined into them, nor of
# thread entry points whose template arguments name them).
CALL_ASYNC="rpc/channel.cc:rfrpc::[(]anonymous namespace[)]::ChannelImpl::CallAsync[(]"
SERVE_BATCH="rpc/server_worker.cc:rfrpc::internal::ServerWorker::ServeBatch[(]"
# The client thread: the one whose callbacks issued most calls (the main
# thread issues the first window); the server thread: the one that served.
client="" server="" best=0
for f in "$OUT"/cg-*; do
  c=$(cost "$f" "$CALL_ASYNC")
  if [ "$c" -gt "$best" ]; then best=$c; client=$f; fi
  if [ -z "$server" ] && [ "$(cost "$f" "$SERVE_BATCH")" -gt 0 ]; then
    server=$f
  fi
done
if [ -z "$client" ] || [ -z "$server" ]; then
  echo "batch_instructions: no client or server thread profile"; cat "$OUT/log"; exit 1
fi

n_calls=$(calls "$client" "ChannelImpl::Deliver[(]")
call=$(cost "$client" "$CALL_ASYNC")
bsl=$(cost "$client" "TestRequest::ByteSizeLong")
ser=$(cost "$client" "MessageLite::SerializeWithCachedSizesToArray")
part=$(cost "$client" "rpc/client_connection.cc:rfrpc::internal::ClientConnection::CompletePart[(]")
parse=$(cost "$client" "MessageLite::ParseFromArray")
deliver=$(cost "$client" "rpc/channel.cc:rfrpc::[(]anonymous namespace[)]::ChannelImpl::Deliver")
# The whole callback (its std::function dispatch included), as Deliver
# calls it.
callback=$(cost "$client" "_Function_handler<void [(]absl::debian3::Status[)], rfrpc::[(]anonymous namespace[)]::Client::Issue")
run_cb=$(cost "$client" "rpc/channel.cc:rfrpc::[(]anonymous namespace[)]::ChannelImpl::RunFinished[(]")

entries=$(calls "$server" "TestService::Echo[(]")
serve=$(cost "$server" "$SERVE_BATCH")
s_parse=$(cost "$server" "MessageLite::ParseFromArray")
s_echo=$(cost "$server" "tests/test_service.cc:rfrpc::testing::TestService::Echo")
s_ser=$(cost "$server" "MessageLite::SerializeWithCachedSizesToArray")
s_bsl=$(cost "$server" "test_service.pb.cc:rfrpc::testing::TestResponse::ByteSizeLong")
s_clr1=$(cost "$server" "test_service.pb.cc:rfrpc::testing::TestRequest::Clear")
s_clr2=$(cost "$server" "test_service.pb.cc:rfrpc::testing::TestResponse::Clear")

# The client's progress rounds, for what they are: under valgrind their
# count per call says nothing of a native run (see above), the cost of one
# round a little (it mixes empty and busy rounds). UpdateNeedsDriver, which
# every round ends with, inclusive.
PROGRESS="rpc/client_connection.cc:rfrpc::internal::ClientConnection::Progress[(]"
rounds=$(calls "$client" "ClientConnection::Progress[(]")
progress=$(cost "$client" "$PROGRESS")
update=$(cost "$client" "rpc/client_connection.cc:rfrpc::internal::ClientConnection::UpdateNeedsDriver[(]")
awk -v r="$rounds" -v p="$progress" -v u="$update" -v n="$n_calls" 'BEGIN {
  if (r > 0) printf "  client progress: %d rounds (%.1f a call), %.0f instructions a round, UpdateNeedsDriver %.0f of them (inclusive)\n", r, r / n, p / r, u / r
}'

awk -v n="$n_calls" -v call="$call" -v bsl="$bsl" -v ser="$ser" \
    -v part="$part" -v parse="$parse" -v deliver="$deliver" -v cb="$callback" \
    -v run_cb="$run_cb" -v e="$entries" -v serve="$serve" -v sp="$s_parse" \
    -v se="$s_echo" -v ss="$s_ser" -v sb="$s_bsl" -v c1="$s_clr1" -v c2="$s_clr2" \
    -v batch="$N" 'BEGIN {
  if (n <= 0 || e <= 0) { print "batch_instructions: no calls counted"; exit 1 }
  c_call = (call - bsl - ser) / n
  c_result = (part - parse) / n
  c_deliver = (deliver - cb) / n
  c_loop = (run_cb - deliver) / n
  s_own = (serve - sp - se - ss - sb - c1 - c2) / e
  printf "batch_instructions: rf, fixed N=%d, shm, callgrind, %d calls, %d served entries\n", batch, n, e
  printf "  client per call: call %.0f + result %.0f + deliver %.0f + loop %.0f = %.0f (outside protobuf; progress rounds not counted)\n",
         c_call, c_result, c_deliver, c_loop, c_call + c_result + c_deliver + c_loop
  printf "  server per entry: %.0f (ServeBatch outside protobuf and the handler)\n", s_own
}'
