#!/usr/bin/env bash
# The whole test suite: unit tests, compiler tests, ABI checks and the end-to-end CUDA programs
# (each built by nvcc with static and with shared cudart, run under `rocuda run`).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc)" "$@"
