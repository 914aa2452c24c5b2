#!/usr/bin/env bash
# The README's demo command. Until the Jakiro + YCSB issue lands this runs a
# placeholder that proves the toolchain (flags, logging, protobuf).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
bazel build //tools:demo_placeholder
bazel-bin/tools/demo_placeholder --greeting=rfrpc
