#!/usr/bin/env bash
# libFuzzer harnesses (fuzz/, docs/fuzzing.md) for every parser of bytes that
# arrive from a peer or a file.
#
#   tools/fuzz.sh build              build every fuzzer with clang (Debian
#                                    clang-14) and -fsanitize=fuzzer,address,
#                                    undefined, against the system libraries
#   tools/fuzz.sh run [SECONDS]      build, then run each fuzzer SECONDS
#                                    (default 60) from its seed corpus; prints
#                                    executions, exec/s and "no crash" per
#                                    fuzzer; non-zero exit on any crash, leak,
#                                    sanitizer report, timeout or OOM
#   tools/fuzz.sh run SECONDS NAME.. the same for the named fuzzers only
#   tools/fuzz.sh list               the fuzzers' names
#
# Output (binaries, growing corpora, crash artifacts) goes to $RFRPC_FUZZ_DIR
# (default .fuzz/ in the checkout, git-ignored). A crash leaves its input in
# $RFRPC_FUZZ_DIR/artifacts/NAME/; reproduce with
#   .fuzz/bin/NAME .fuzz/artifacts/NAME/crash-...
# and, once fixed, copy it to fuzz/regressions/NAME/ so that
# //fuzz:NAME_replay_test keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${RFRPC_FUZZ_DIR:-$ROOT/.fuzz}
CXX=${CXX_FUZZ:-clang++-14}
FUZZERS=(handshake_fuzzer request_slot_fuzzer response_fuzzer server_fuzzer
         ycsb_properties_fuzzer tuner_profile_fuzzer)

# Largest input per fuzzer: enough for every format's interesting sizes
# (a request slot of 4 KiB, a handshake frame well past typical hellos).
max_len() {
  case "$1" in
    handshake_fuzzer) echo 16384 ;;
    request_slot_fuzzer|response_fuzzer|server_fuzzer) echo 4200 ;;
    *) echo 4096 ;;
  esac
}

PROTOS=(transport/handshake.proto rpc/rpc_handshake.proto
        tests/test_service.proto rpc/tuner/profile.proto)
LIB_SRCS=(
  base/clock.cc
  transport/transport.cc transport/bootstrap.cc transport/auth_token.cc
  rpc/service.cc rpc/slot_codec.cc rpc/batch_format.cc rpc/batch_policy.cc
  rpc/options.cc rpc/hybrid_policy.cc rpc/channel.cc rpc/client_connection.cc
  rpc/server.cc rpc/server_worker.cc rpc/work_finder.cc rpc/run_delay.cc
  rpc/call_stats.cc rpc/method_counters.cc rpc/stats_registry.cc
  rpc/channel_stats.cc rpc/client_context.cc
  rpc/client_connection_setup.cc rpc/server_worker_async.cc
  rpc/server_call.cc rpc/handler_pool.cc rpc/result_parts.cc
  rpc/tuner/profile.cc
  kvstore/ycsb/properties.cc
  fuzz/fuzz_service.cc
)
# Linked whole (they register the provider at load time).
SHM_SRCS=(transport/shm/shm_completion_queue.cc transport/shm/shm_datapath.cc
          transport/shm/shm_provider.cc transport/shm/shm_segment.cc
          transport/liveness_monitor.cc)
LIBS=(-lprotobuf -lglog -lgflags
      $(grep -o '"-labsl_[a-z_0-9]*"' third_party/BUILD | tr -d '"') -lpthread)
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=all)
CXXFLAGS=(-std=c++17 -O1 -g -fno-omit-frame-pointer "${SAN[@]}"
          -I"$ROOT" -I"$OUT/gen" -Wno-deprecated-declarations)

build() {
  if [ "$CXX" = clang++-14 ]; then bash tools/setup.sh --fuzz >/dev/null; fi
  command -v "$CXX" >/dev/null || {
    echo "fuzz.sh: $CXX not found (apt-get install clang-14)" >&2; exit 1; }
  mkdir -p "$OUT/gen" "$OUT/obj" "$OUT/bin"
  # protoc's C++ output, regenerated when a .proto changes.
  local p
  for p in "${PROTOS[@]}"; do
    local h="$OUT/gen/${p%.proto}.pb.h"
    if [ ! -f "$h" ] || [ "$p" -nt "$h" ]; then
      protoc -I. --cpp_out="$OUT/gen" "$p"
    fi
  done
  # Compile each library source once (instrumented for coverage), in
  # parallel; a source is rebuilt when it or any project header is newer.
  local newest_hdr
  newest_hdr=$(find rpc transport kvstore fuzz "$OUT/gen" -name '*.h' -newer "$OUT/obj" 2>/dev/null | head -1 || true)
  local srcs=("${LIB_SRCS[@]}" "${SHM_SRCS[@]}")
  for p in "${PROTOS[@]}"; do srcs+=("$OUT/gen/${p%.proto}.pb.cc"); done
  local todo=()
  for p in "${srcs[@]}"; do
    local o="$OUT/obj/$(echo "${p#$OUT/gen/}" | tr / _).o"
    if [ ! -f "$o" ] || [ "$p" -nt "$o" ] || [ -n "$newest_hdr" ]; then todo+=("$p"); fi
  done
  if [ ${#todo[@]} -gt 0 ]; then
    echo "fuzz.sh: compiling ${#todo[@]} sources with $CXX"
    printf '%s\n' "${todo[@]}" | OUT="$OUT" CXX="$CXX" xargs -P "$(nproc)" -I{} \
      bash -c 'o="$OUT/obj/$(echo "{}" | sed "s|^$OUT/gen/||" | tr / _).o"; '"$CXX"' '"${CXXFLAGS[*]}"' -fsanitize=fuzzer-no-link -c "{}" -o "$o"'
  fi
  touch "$OUT/obj"
  rm -f "$OUT/libfuzzcore.a"
  ar rcs "$OUT/libfuzzcore.a" $(for p in "${LIB_SRCS[@]}"; do echo "$OUT/obj/$(echo "$p" | tr / _).o"; done) \
    $(for p in "${PROTOS[@]}"; do echo "$OUT/obj/$(echo "${p%.proto}.pb.cc" | tr / _).o"; done)
  local shm_objs=()
  for p in "${SHM_SRCS[@]}"; do shm_objs+=("$OUT/obj/$(echo "$p" | tr / _).o"); done
  local f pids=()
  for f in "${FUZZERS[@]}"; do
    local extra=()
    if [ "$f" = server_fuzzer ]; then extra=("${shm_objs[@]}"); fi
    "$CXX" "${CXXFLAGS[@]}" -fsanitize=fuzzer "fuzz/$f.cc" "${extra[@]}" \
      "$OUT/libfuzzcore.a" "${LIBS[@]}" -o "$OUT/bin/$f" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  echo "fuzz.sh: built ${#FUZZERS[@]} fuzzers in $OUT/bin"
}

run_one() {
  local f=$1 secs=$2
  local corpus="$OUT/corpus/$f" art="$OUT/artifacts/$f/" log="$OUT/logs/$f.log"
  mkdir -p "$corpus" "$art" "$OUT/logs"
  local rc=0
  # -timeout: one input running longer than 10 s is a hang; -rss_limit_mb
  # and -malloc_limit_mb make runaway allocation a finding. Leak detection is
  # on (libFuzzer's default with ASan).
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  GLOG_minloglevel=2 \
  "$OUT/bin/$f" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -max_len="$(max_len "$f")" -print_final_stats=1 \
    -artifact_prefix="$art" "$corpus" "fuzz/corpus/$f" >"$log" 2>&1 || rc=$?
  local execs rate
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  if [ "$rc" -ne 0 ] || grep -q -e 'ERROR: AddressSanitizer' -e 'ERROR: LeakSanitizer' \
       -e 'runtime error:' -e 'ERROR: libFuzzer' "$log"; then
    echo "FAIL $f: exit $rc after ${execs} executions; log $log; last lines:"
    tail -n 40 "$log" | sed 's/^/    /'
    return 1
  fi
  printf '%-24s %10s executions %8s exec/s  %s corpus files  no crash\n' \
    "$f" "$execs" "$rate" "$(ls "$corpus" | wc -l)"
}

cmd=${1:-run}
case "$cmd" in
  build) build ;;
  list) printf '%s\n' "${FUZZERS[@]}" ;;
  run)
    secs=${2:-60}
    shift $(( $# >= 2 ? 2 : $# ))
    names=("$@")
    if [ ${#names[@]} -eq 0 ]; then names=("${FUZZERS[@]}"); fi
    build
    echo "== fuzzing ${#names[@]} parsers, ${secs} s each"
    failed=0
    for f in "${names[@]}"; do run_one "$f" "$secs" || failed=$((failed + 1)); done
    passed=$(( ${#names[@]} - failed ))
    echo "fuzz: ${passed} passed, ${failed} failed"
    [ "$failed" -eq 0 ]
    ;;
  *) sed -n '2,22p' "$0"; exit 2 ;;
esac
