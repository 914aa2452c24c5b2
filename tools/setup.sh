#!/usr/bin/env bash
# Installs every Debian package rfrpc's build, tests and demo need. Idempotent:
# runs `apt-get update` and `apt-get install` only when something is missing.
# Usage: tools/setup.sh [--vm] [--peers] [--bench]   (as root, or with sudo available)
set -euo pipefail

PACKAGES=(
  # Build.
  bazel-bootstrap bazel-rules-java g++ python3
  protobuf-compiler libprotobuf-dev libprotoc-dev
  libabsl-dev libgflags-dev libgoogle-glog-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # Metrics: prometheus-cpp (core + pull) for //rpc:metrics and the binaries'
  # /metrics endpoint; prometheus for promtool, which
  # //tests:kvstore_metrics_e2e_test checks the scraped text with.
  prometheus-cpp-dev prometheus curl
  # RDMA verbs (the shm provider needs none of it at run time).
  libibverbs-dev rdma-core ibverbs-providers ibverbs-utils
)
# Extra groups, requested by the scripts that need them.
if [[ " $* " == *" --vm "* ]]; then
  PACKAGES+=(qemu-system-x86 busybox-static cpio kmod perftest xz-utils iproute2 util-linux)
fi
if [[ " $* " == *" --fuzz "* ]]; then
  # tools/fuzz.sh: libFuzzer is clang's (the runtime is in libclang-rt-14-dev).
  PACKAGES+=(clang-14 libclang-rt-14-dev)
fi
if [[ " $* " == *" --peers "* ]]; then
  PACKAGES+=(memcached redis-server libmemcached-dev libhiredis-dev)
fi
# benchmarks/run_all.sh: the gRPC peer (C++ 1.51 and its protoc plugin) and the plots.
if [[ " $* " == *" --bench "* ]]; then
  PACKAGES+=(libgrpc++-dev protobuf-compiler-grpc gnuplot-nox)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Wait for a concurrent apt/dpkg (another script or session) instead of failing.
APT_LOCK=(-o DPkg::Lock::Timeout=600)
$SUDO apt-get "${APT_LOCK[@]}" update -qq
$SUDO apt-get "${APT_LOCK[@]}" install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
