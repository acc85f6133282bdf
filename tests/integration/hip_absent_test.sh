#!/usr/bin/env bash
# ROCUDA_DEVICES=hip,cpu on a machine with no HIP runtime at all: programs run on the CPU device
# and the log says the HIP runtime was not found, with the paths tried. Where Debian's
# libamdhip64 is installed, it is hidden in a private mount namespace (the file replaced by an
# empty one), which needs root; elsewhere the machine already is such a machine.
set -u
rocuda=$1; shift
fail() { echo "FAIL: $*"; exit 1; }
log=$(mktemp /tmp/rocuda-hip-absent.XXXXXX)
trap 'rm -f "$log"' EXIT
installed=$(ls /usr/lib/*/libamdhip64.so* /opt/rocm/lib/libamdhip64.so* 2>/dev/null)
hide=""
if [[ -n $installed ]]; then
  if ! unshare -m --propagation private true 2>/dev/null; then
    echo "SKIP: libamdhip64 is installed and cannot be hidden (unshare -m needs root)"
    exit 77
  fi
  for file in $installed; do hide+="mount --bind /dev/null $file && "; done
fi
for program in "$@"; do
  : > "$log"
  command="${hide}ROCUDA_DEVICES=hip,cpu ROCUDA_LOG=$log $rocuda run -- $program >/dev/null"
  if [[ -n $hide ]]; then
    unshare -m --propagation private bash -c "$command" || fail "$program failed without HIP"
  else
    bash -c "$command" || fail "$program failed without HIP"
  fi
  grep -q "no AMD GPU available: the HIP runtime (libamdhip64) was not found" "$log" ||
    fail "$program: the log does not say the HIP runtime is missing: $(cat "$log")"
  grep -q "tried: " "$log" || fail "$program: the log does not list the paths tried"
  grep -q "device 0: Rocuda CPU" "$log" || fail "$program: the CPU device is not device 0"
done
echo "1 passed, 0 failed"
