#!/usr/bin/env bash
# Configure and build Rocuda into build/ (incrementally; ccache keeps rebuilds cheap).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/install-deps.sh"
export PATH="$PATH:/usr/local/cuda/bin"
if [[ ! -f "$root/build/build.ninja" ]]; then
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif (($#)); then
  cmake "$root/build" "$@"
fi
cmake --build "$root/build" -j "$(nproc)"
