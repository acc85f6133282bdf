#!/usr/bin/env bash
# rocuda info: lists the CPU device with its CUDA-facing and native identity, and says why no
# AMD GPU is in use (no GPU on the machines this suite runs on); --json is valid JSON.
set -u
rocuda=$1
fail() { echo "FAIL: $*"; exit 1; }
text=$("$rocuda" info) || fail "rocuda info exited $?"
[[ $text == *"Device 0: Rocuda CPU"* ]] || fail "no CPU device in: $text"
[[ $text == *"compute capability 8.6"* ]] || fail "no compute capability in: $text"
[[ $text == *"AMD GPUs: "* ]] || fail "no AMD status in: $text"
ROCUDA_CC=7.5 "$rocuda" info | grep -q "compute capability 7.5" || fail "ROCUDA_CC not honoured"
"$rocuda" info --json | python3 -c '
import json, sys
info = json.load(sys.stdin)
cpu = [d for d in info["devices"] if d["backend"] == "cpu"]
assert cpu, "no cpu device"
assert cpu[0]["warp_size"] == 32 and cpu[0]["multiprocessors"] >= 1
assert info["amd"]["in_use"] is False and info["amd"]["reason"], "AMD status without a reason"
' || fail "rocuda info --json"
"$rocuda" info --bogus 2>/dev/null && fail "unknown option accepted"
# ROCUDA_LOG=info means "log", not a file named info: stderr, with a warning.
dir=$(mktemp -d /tmp/rocuda-log-level.XXXXXX)
trap 'rm -rf "$dir"' EXIT
(cd "$dir" && ROCUDA_LOG=info "$rocuda" info >/dev/null 2>"$dir/err") || fail "rocuda info with ROCUDA_LOG=info"
grep -q "ROCUDA_LOG=info is not a level" "$dir/err" || fail "no warning for ROCUDA_LOG=info: $(cat "$dir/err")"
[[ -e $dir/info ]] && fail "ROCUDA_LOG=info wrote a file named info"
echo "1 passed, 0 failed"
