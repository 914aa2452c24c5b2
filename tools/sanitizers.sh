#!/usr/bin/env bash
# The test suite under sanitizers (docs/fuzzing.md, "Sanitizers"):
#
#   1. --config=asan   every test (AddressSanitizer + LeakSanitizer)
#   2. --config=ubsan  every test (UndefinedBehaviorSanitizer, no recovery)
#   3. --config=tsan   the tests with concurrency (ThreadSanitizer)
#
#   tools/sanitizers.sh                 all three
#   tools/sanitizers.sh asan tsan       the named ones
#
# Budget (2 cores): each config is a cold build of ~3.5 min into its own
# output tree (.bazelrc --platform_suffix, so the three do not evict each
# other and a rerun is incremental), plus the tests: about 20 min for all
# three from cold. Trimmed: TSan runs only the tests where threads meet
# (single-threaded unit tests add build time and find nothing there); tests
# tagged manual (verbs on Soft-RoCE, the qemu VM smoke test) are not run
# here, tools/vm_suite.sh runs them without sanitizers.
# Exits non-zero if any config has a failing test or a sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."

FLAGS=(--keep_going)
if [ -n "${CI:-}" ]; then FLAGS+=(--config=ci); fi

# Threads meet here: client/server workers, the accept thread, channels used
# from several threads, the shm provider's liveness monitor, the YCSB client
# threads (start barrier, shared store, measurements, the insert counter), the
# tuner's calibration server, the in-process server fuzzer, and metrics
# (per-thread counters read by scrapes, the /metrics endpoint's threads).
TSAN_TESTS=(
  //tests:rpc_e2e_test
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
)

configs=("$@")
if [ ${#configs[@]} -eq 0 ]; then configs=(asan ubsan tsan); fi
failed=()
for c in "${configs[@]}"; do
  start=$SECONDS
  case "$c" in
    asan|ubsan) targets=(//...) ;;
    tsan) targets=("${TSAN_TESTS[@]}") ;;
    *) echo "sanitizers.sh: unknown config $c (asan, ubsan, tsan)" >&2; exit 2 ;;
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
