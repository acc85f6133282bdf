#!/usr/bin/env bash
# PyCUDA's own driver tests under Rocuda on the CPU device. PyCUDA links libcuda.so.1 directly
# and calls the driver API, the pre-CUDA-4.0 part included (cuParamSet*, texture references,
# cuCtxAttach): a real driver-API client this project never saw. Its SourceModule asks nvcc for
# a cubin, which holds only SASS: those tests fail with CUDA_ERROR_NO_BINARY_FOR_GPU and the
# rebuild hint; the ones that compile to PTX (DynamicModule, dynamic parallelism) run. Not part
# of the test suite (it builds PyCUDA from its PyPI source, a few minutes).
#
#   scripts/check-pycuda.sh [PYTEST ARGS...]   (default: test_driver.py)
#
# Pinned version, in a virtual environment under build/pycuda-venv; the log in
# build/pycuda/test_driver.log.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rocuda=$root/build/bin/rocuda
venv=$root/build/pycuda-venv
work=$root/build/pycuda
version=2026.1
cuda=${CUDA_HOME:-/usr/local/cuda}
[[ -x $rocuda ]] || { echo "build first: scripts/build.sh"; exit 2; }
mkdir -p "$work"

if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import pycuda' 2>/dev/null; then
  python3 -m venv "$venv" || exit 2
  "$venv/bin/pip" install -q numpy pytools platformdirs mako pytest setuptools wheel || exit 2
  # PyCUDA is published as source only; its sdist's address comes from PyPI's JSON API.
  "$venv/bin/python" -c '
import json, sys, urllib.request
project = json.load(urllib.request.urlopen("https://pypi.org/pypi/pycuda/json"))
url = next(u["url"] for u in project["releases"][sys.argv[1]] if u["packagetype"] == "sdist")
urllib.request.urlretrieve(url, sys.argv[2])
' "$version" "$work/pycuda-$version.tar.gz" || exit 2
  tar xzf "$work/pycuda-$version.tar.gz" -C "$work" || exit 2
  (cd "$work/pycuda-$version" &&
   "$venv/bin/python" configure.py --cuda-root="$cuda" --cudadrv-lib-dir="$cuda/lib64/stubs" &&
   "$venv/bin/pip" install -q --no-build-isolation .) > "$work/build.log" 2>&1 ||
    { echo "PyCUDA did not build: $work/build.log"; exit 2; }
fi

args=("$@")
[[ ${#args[@]} -eq 0 ]] && args=(test_driver.py)
cd "$work/pycuda-$version/test" || exit 2
LD_LIBRARY_PATH=$cuda/lib64 PYCUDA_DISABLE_CACHE=1 timeout 1800 \
  "$rocuda" run -- "$venv/bin/python" -m pytest -q "${args[@]}" > "$work/test_driver.log" 2>&1
status=$?
tail -1 "$work/test_driver.log"
echo "log: $work/test_driver.log"
exit $status
