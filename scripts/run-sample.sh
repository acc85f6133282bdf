#!/usr/bin/env bash
# The main job: build Rocuda and the bundled sample CUDA program (plain nvcc, default options),
# then run the unmodified program under Rocuda. Without an AMD GPU, the CPU device runs it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/build.sh"
exec "$root/build/bin/rocuda" run -- "$root/build/samples/vector_add" "$@"
