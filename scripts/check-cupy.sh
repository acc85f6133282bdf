#!/usr/bin/env bash
# CuPy's own test suite under Rocuda on the CPU device: NumPy-compatible array code whose kernels
# CuPy generates and compiles at run time with NVRTC (Rocuda's libnvrtc hands them back as PTX),
# plus CuPy's prebuilt CUB and Thrust kernels, each test checked by CuPy's authors against NumPy.
# Not part of the test suite (it installs from PyPI and runs for a long time).
#
#   scripts/check-cupy.sh [TEST_PATH...]   (default: the directories listed below)
#
# TEST_PATH is relative to CuPy's tests/ (e.g. cupy_tests/math_tests/test_arithmetic.py). Pinned
# versions in a virtual environment under build/cupy-venv; the tests come from the matching
# source distribution. One pytest process per path, each log in build/cupy/<path>.log; the
# summary gives each path's pytest verdict. cuBLAS, cuRAND, cuSOLVER and cuSPARSE calls reach
# NVIDIA's libraries, which hold only SASS: those tests fail with CUDA errors. NVIDIA's cuFFT
# carries PTX and runs (cupy_tests/fft_tests), but for the transform sizes whose kernels it
# ships only as SASS.
# The first reduction (a.sum()) loads CuPy's CUB module, one PTX of 383 functions, which the CPU
# device compiles whole: over 35 minutes on 2 cores the first time, nothing once cached. Each
# path gets ROCUDA_CUPY_TIMEOUT seconds (default 3600).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rocuda=$root/build/bin/rocuda
venv=$root/build/cupy-venv
logs=$root/build/cupy
version=14.2.0
[[ -x $rocuda ]] || { echo "build first: scripts/build.sh"; exit 2; }
export CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}

if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv" || exit 2
  "$venv/bin/pip" install -q "cupy-cuda13x==$version" pytest || exit 2
fi
sources=$venv/cupy-$version
if [[ ! -d $sources/tests ]]; then
  # pip cannot fetch an sdist without building it: take the archive from the package index.
  "$venv/bin/python" - "$version" "$venv" <<'EOF' || exit 2
import re, sys, tarfile, urllib.request
version, venv = sys.argv[1], sys.argv[2]
index = urllib.request.urlopen("https://pypi.org/simple/cupy/").read().decode()
url = re.search(r'href="([^"#]*cupy-%s\.tar\.gz)' % re.escape(version), index).group(1)
archive = venv + "/cupy-%s.tar.gz" % version
urllib.request.urlretrieve(url, archive)
with tarfile.open(archive) as tar:
    members = [m for m in tar.getmembers() if m.name.startswith("cupy-%s/tests/" % version)]
    # The "data" filter (Python 3.11.4 and later) refuses unsafe paths; older Pythons go without.
    extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    tar.extractall(venv, members=members, **extra)
EOF
fi

paths=("$@")
if [[ ${#paths[@]} -eq 0 ]]; then
  paths=(cupy_tests/math_tests cupy_tests/core_tests/test_elementwise.py
         cupy_tests/core_tests/test_reduction.py cupy_tests/core_tests/test_raw.py
         cupy_tests/sorting_tests cupy_tests/statistics_tests cupy_tests/logic_tests
         cupy_tests/binary_tests cupy_tests/creation_tests cupy_tests/manipulation_tests
         cupy_tests/indexing_tests)
fi

mkdir -p "$logs"
: > "$logs/summary.txt"
failed=0
for p in "${paths[@]}"; do
  log=$logs/${p//\//_}.log
  # CuPy's tests marked slow (reductions of arrays over 2^31 elements: 17 GB of host memory
  # here) are left out, as CuPy's own per-change CI leaves them out.
  (cd "$sources" && timeout "${ROCUDA_CUPY_TIMEOUT:-3600}" "$rocuda" run -- "$venv/bin/python" -m pytest -q \
     -p no:cacheprovider -m "not slow" "tests/$p") > "$log" 2>&1
  status=$?
  verdict=$(tail -1 "$log")
  echo "$p: $verdict" | tee -a "$logs/summary.txt"
  [[ $status -eq 0 ]] || failed=$((failed + 1))
done
echo "${#paths[@]} paths, $failed not OK (logs in $logs)"
[[ $failed -eq 0 ]]
