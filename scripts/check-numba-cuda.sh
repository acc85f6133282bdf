#!/usr/bin/env bash
# numba-cuda's own test suite under Rocuda on the CPU device: thousands of kernels this project
# never saw (math, float16/bfloat16, atomics of every kind, warp intrinsics, cooperative groups,
# printf, shared and local arrays...), written by numba-cuda's authors with their own checks
# against NumPy. numba-cuda compiles Python to NVVM IR and LTO-IR, links through nvJitLink
# (Rocuda's, which hands LTO-IR to NVIDIA's nvJitLink for PTX) and launches through the driver
# API. Not part of the test suite (about 15 minutes, and it installs from PyPI).
#
#   scripts/check-numba-cuda.sh [MODULE...]   (default: every numba.cuda.tests.cudapy module)
#
# Pinned versions, in a virtual environment under build/numba-venv. One process per test module,
# each log in build/numba-cuda/<module>.log; the summary lists each module's unittest verdict.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rocuda=$root/build/bin/rocuda
venv=$root/build/numba-venv
logs=$root/build/numba-cuda
[[ -x $rocuda ]] || { echo "build first: scripts/build.sh"; exit 2; }
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv" || exit 2
  "$venv/bin/pip" install -q numba-cuda==0.30.4 "cuda-bindings==13.*" numpy filecheck \
    ml_dtypes pytest cffi || exit 2
fi
site=$("$venv/bin/python" -c 'import numba_cuda, os; print(os.path.dirname(numba_cuda.__file__))')
modules=("$@")
if [[ ${#modules[@]} -eq 0 ]]; then
  for f in "$site"/numba/cuda/tests/cudapy/test_*.py; do
    modules+=("cudapy.$(basename "$f" .py)")
  done
fi

mkdir -p "$logs"
: > "$logs/summary.txt"
failed=0
for m in "${modules[@]}"; do
  log=$logs/$m.log
  timeout 900 "$rocuda" run -- "$venv/bin/python" -m unittest "numba.cuda.tests.$m" > "$log" 2>&1
  status=$?
  verdict=$(tail -1 "$log")
  echo "$m: $verdict" | tee -a "$logs/summary.txt"
  [[ $status -eq 0 ]] || failed=$((failed + 1))
done
echo "${#modules[@]} modules, $failed not OK (logs in $logs)"
[[ $failed -eq 0 ]]
