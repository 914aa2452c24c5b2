#!/usr/bin/env bash
# The test suite under sanitizers (docs/fuzzing.md, "Sanitizers"):
#
#   1. --config=asan_ubsan  every test (AddressSanitizer + LeakSanitizer and
#                           UndefinedBehaviorSanitizer, no recovery) in one build
#   2. --config=tsan        the tests with concurrency (ThreadSanitizer)
#
#   tools/sanitizers.sh                 both
#   tools/sanitizers.sh asan tsan       the named ones (asan, ubsan, asan_ubsan, tsan)
#
# Budget (2 cores): each config is a cold build of ~3.5 min into its own
# output tree (.bazelrc --platform_suffix, so they do not evict each other
# and a rerun is incremental), plus the tests. asan and ubsan were two
# builds and two passes over //... (25 of CI's 56 min on 2026-12-01); one
# combined build finds what both did. Trimmed: TSan runs only the tests
# where threads meet (single-threaded unit tests add build time and find
# nothing there); tests tagged manual (verbs on Soft-RoCE, the qemu VM
# smoke test) are not run here, tools/vm_suite.sh runs them without
# sanitizers.
# Exits non-zero if any config has a failing test or a sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."

FLAGS=(--keep_going)
if [ -n "${CI:-}" ]; then FLAGS+=(--config=ci); fi

# Threads meet here: client/server workers, the accept thread, channels used
# from several threads, the shm provider's liveness monitor, the YCSB client
# threads (start barrier, shared store, measurements, the insert counter), the
# tuner's calibration server, the in-process server fuzzer, and metrics
# (per-thread counters read by scrapes, the /metrics endpoint's threads), and
# a channel growing its connections under concurrent callers (Jakiro's
# client across a server restart with more workers).
TSAN_TESTS=(
  //tests:rpc_e2e_test
  //tests:rpc_e2e_timed_test
  //tests:rpc_batch_e2e_test
  //tests:rpc_fault_test
  //transport/shm:shm_conformance_test
  //kvstore/ycsb:basic_db_test
  //kvstore/ycsb:client_test
  //kvstore/ycsb:generators_test
  //rpc/tuner:calibrator_test
  //rpc/tuner:online_test
  //fuzz:server_fuzzer_replay_test
  //tests:rpc_fault_injection_test
  //tests:rpc_isolation_test
  //codegen:generated_echo_e2e_test
  //tests:rpc_discovery_test
  //rpc:method_counters_test
  //tests:rpc_metrics_test
  //tests:rpc_async_test
  //examples/kv_cache:cache_test
  //kvstore/client:jakiro_client_test
)

configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then configs=(asan_ubsan tsan); fi
failed=()
for c in "${configs[@]}"; do
  start=$SECONDS
  case "$c" in
    asan|ubsan|asan_ubsan) targets=(//...) ;;
    tsan) targets=("${TSAN_TESTS[@]}") ;;
    *) echo "sanitizers.sh: unknown config $c (asan, ubsan, asan_ubsan, tsan)" >&2; exit 2 ;;
  esac
  echo "== bazel test --config=$c ${targets[*]}"
  if bazel test "${FLAGS[@]}" --config="$c" "${targets[@]}"; then
    echo "== $c: all tests passed ($((SECONDS - start)) s)"
  else
    echo "== $c: FAILED ($((SECONDS - start)) s)"
    failed+=("$c")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "sanitizers: failed under ${failed[*]}"
  exit 1
fi
echo "sanitizers: ${configs[*]} passed"
