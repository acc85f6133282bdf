#!/usr/bin/env bash
# ROCUDA_DEVICES=hip,cpu on a machine without an AMD GPU: programs still run (on the CPU device)
# and the log explains why no AMD device is available.
set -u
rocuda=$1; shift
fail() { echo "FAIL: $*"; exit 1; }
log=$(mktemp /tmp/rocuda-hip-fallback.XXXXXX)
trap 'rm -f "$log"' EXIT
for program in "$@"; do
  : > "$log"
  ROCUDA_DEVICES=hip,cpu ROCUDA_LOG=$log "$rocuda" run -- "$program" >/dev/null ||
    fail "$program failed with ROCUDA_DEVICES=hip,cpu"
  grep -q "no AMD GPU available" "$log" || fail "$program: the log does not say why no AMD GPU is used"
  grep -q "device 0: Rocuda CPU" "$log" || fail "$program: the CPU device is not device 0"
done
echo "1 passed, 0 failed"
