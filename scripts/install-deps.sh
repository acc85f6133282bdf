#!/usr/bin/env bash
# Install what building and testing Rocuda needs, from Debian 12's packages. Idempotent: does
# nothing when everything is present. The CUDA toolkit (nvcc) is expected at /usr/local/cuda; it
# is only used to build the test programs, never at run time.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ pkg-config python3
  llvm-19-dev liblld-19-dev clang-19 llvm-19-tools
  libzstd-dev liblz4-dev libgtest-dev
  libamdhip64-5  # the real HIP runtime: the HIP backend is tested loading it on machines without a GPU
  # OpenGL interop tests: a headless EGL context on Mesa's llvmpipe (libcuda itself never links GL)
  libegl-dev libgl-dev libopengl-dev libegl-mesa0 libgl1-mesa-dri
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done

if ((${#missing[@]})); then
  echo "rocuda: installing ${missing[*]}"
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v nvcc >/dev/null && [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "rocuda: warning: nvcc not found (expected /usr/local/cuda/bin/nvcc); the CUDA test programs" \
       "and the sample cannot be built" >&2
fi
