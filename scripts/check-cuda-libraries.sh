#!/usr/bin/env bash
# rocuda ptx-check over the PTX inside every library of the CUDA toolkit (cuBLAS, cuBLASLt,
# cuSPARSE, cuSOLVER, cuRAND, cuDNN, NCCL...): PTX of real CUDA code that nvcc 13 produced and
# this project never saw. Not part of the test suite (a few minutes); the suite checks cuRAND.
#   scripts/check-cuda-libraries.sh [CUDA_LIB_DIR]   (default /usr/local/cuda/lib64)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rocuda=$root/build/bin/rocuda
dir=${1:-/usr/local/cuda/lib64}
[[ -x $rocuda ]] || { echo "build first: scripts/build.sh"; exit 2; }
failed=0 units=0
for lib in "$dir"/lib*.so.*; do
  [[ -L $lib ]] && continue
  out=$("$rocuda" ptx-check -v "$lib" 2>&1)
  status=$?
  if grep -q "no PTX in this file" <<< "$out"; then continue; fi
  n=$(grep -c ": OK (" <<< "$out")
  units=$((units + n))
  if [[ $status -ne 0 ]]; then
    failed=$((failed + 1))
    echo "$(basename "$lib"): FAILED"
    grep -v ": OK (" <<< "$out" | head -20
  else
    echo "$(basename "$lib"): $n units OK"
  fi
done
echo "$units units checked, $failed libraries with errors"
[[ $failed -eq 0 ]]
