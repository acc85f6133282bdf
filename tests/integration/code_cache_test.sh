#!/usr/bin/env bash
# The code cache: a first run fills it, a second run compiles nothing, a corrupt entry is
# detected and rebuilt, ROCUDA_CACHE=0 writes nothing.
set -u
rocuda=$1 program=$2
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d /tmp/rocuda-cache-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT

ROCUDA_CACHE_DIR=$dir/cache ROCUDA_LOG=$dir/log1 "$rocuda" run -- "$program" >/dev/null ||
  fail "first run failed"
entries=$(find "$dir/cache" -name '*.bin' | wc -l)
((entries >= 1)) || fail "first run stored no cache entry"
grep -q "compiling PTX module" "$dir/log1" || fail "first run did not compile"

ROCUDA_CACHE_DIR=$dir/cache ROCUDA_LOG=$dir/log2 "$rocuda" run -- "$program" >/dev/null ||
  fail "second run failed"
grep -q "code cache hit" "$dir/log2" || fail "second run had no cache hit"
! grep -q "compiling PTX module" "$dir/log2" || fail "second run compiled again"

for entry in $(find "$dir/cache" -name '*.bin'); do
  head -c 100 "$entry" > "$entry.cut" && mv "$entry.cut" "$entry"
done
ROCUDA_CACHE_DIR=$dir/cache ROCUDA_LOG=$dir/log3 "$rocuda" run -- "$program" >/dev/null ||
  fail "run with a truncated cache entry failed"
grep -q "is corrupt" "$dir/log3" || fail "truncated entry not reported"
grep -q "compiling PTX module" "$dir/log3" || fail "truncated entry not rebuilt"

ROCUDA_CACHE=0 ROCUDA_CACHE_DIR=$dir/off "$rocuda" run -- "$program" >/dev/null ||
  fail "run with the cache off failed"
[[ ! -e $dir/off ]] || fail "ROCUDA_CACHE=0 still wrote to the cache"
echo "1 passed, 0 failed"
