#!/usr/bin/env bash
# Install what the CPU-device benchmark (bench/cpu_device, scripts/run-cpu-bench.sh) needs beyond
# the normal build: PoCL, the OpenCL ICD loader and headers. Never needed by the library or the
# test suite. Idempotent: does nothing when everything is present. OpenMP comes with g++ (libgomp).
set -euo pipefail

packages=(
  pocl-opencl-icd        # PoCL's CPU device, the OpenCL peer of Rocuda's CPU device
  ocl-icd-opencl-dev     # libOpenCL.so (the ICD loader) to link against
  opencl-c-headers       # CL/cl.h
  opencl-clhpp-headers   # CL/opencl.hpp (not used yet; for C++ wrappers)
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
