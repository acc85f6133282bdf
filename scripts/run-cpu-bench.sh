#!/usr/bin/env bash
# Configure a build with the benchmarks on, build the CPU-device benchmark (and Rocuda's
# libcuda.so.1, which it loads by path), and run it. Arguments go to the benchmark:
#   scripts/run-cpu-bench.sh            full sizes (a few minutes on 2 cores)
#   scripts/run-cpu-bench.sh --quick    tiny sizes, one repetition: checks every variant
#   scripts/run-cpu-bench.sh --only SGEMM --reps 3
# The build directory is build-bench/ (ROCUDA_BENCH_BUILD_DIR overrides it). The table is printed
# in Markdown (docs/performance.md, "The CPU device").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${ROCUDA_BENCH_BUILD_DIR:-$root/build-bench}

"$root/scripts/install-deps.sh"
"$root/scripts/install-bench-deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
# RelWithDebInfo: the build type the project is tested in. Tests are not needed here.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DROCUDA_BUILD_BENCHMARKS=ON -DROCUDA_BUILD_TESTS=OFF -DROCUDA_BUILD_CUDA_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target cpu_device_bench
exec "$build/bin/cpu_device_bench" "$@"
