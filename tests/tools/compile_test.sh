#!/usr/bin/env bash
# rocuda compile: PTX to AMD GPU code objects for a wave32 and a wave64 target; clear errors for
# a bad target and for PTX the AMD backend cannot lower; printf and malloc compile; --target
# neutral writes the target-neutral IR, and reports bad PTX by file:line:column; --jobs takes a
# positive number; the translation units of an -rdc=true executable (when given: a program of two
# units, one launching kernels from the device, both linking libcudadevrt) become one code object.
set -u
rocuda=$1 inputs=$2 readelf=$3 separable=${4:-} launching=${5:-}
fail() { echo "FAIL: $*"; exit 1; }
out=$(mktemp -d /tmp/rocuda-compile-test.XXXXXX)
trap 'rm -rf "$out"' EXIT
for target in gfx1100 gfx90a:sramecc+:xnack-; do
  "$rocuda" compile "$inputs/saxpy.ptx" --target "$target" -o "$out/saxpy.co" ||
    fail "compile for $target exited $?"
  notes=$("$readelf" --notes "$out/saxpy.co")
  gfx=${target%%:*}
  [[ $notes == *"amdgcn-amd-amdhsa--$gfx"* ]] || fail "$target: wrong or missing target note"
  [[ $notes == *".name:           saxpy"* ]] || fail "$target: no saxpy kernel in the metadata"
  want=32; [[ $gfx == gfx90a ]] && want=64
  [[ $notes == *".wavefront_size: $want"* ]] || fail "$target: wavefront size is not $want"
done
message=$("$rocuda" compile "$inputs/saxpy.ptx" --target gfx803 2>&1)
[[ $? -eq 2 && -n $message ]] || fail "an unsupported target is not refused with a message"
"$rocuda" compile "$inputs/printf.ptx" --target gfx1100 -o "$out/p.co" ||
  fail "PTX calling vprintf did not compile"
symbols=$("$readelf" --symbols "$out/p.co")
[[ $symbols == *"__rocuda_printf_buffer"* ]] || fail "a printing code object has no printf buffer symbol"
"$rocuda" compile "$inputs/malloc.ptx" --target gfx1100 -o "$out/m.co" ||
  fail "PTX calling malloc did not compile"
symbols=$("$readelf" --symbols "$out/m.co")
[[ $symbols == *"__rocuda_device_heap"* ]] || fail "a code object calling malloc has no heap symbol"
# A 128-bit atomic: AMD GPUs have none.
printf '.version 8.3\n.target sm_90\n.address_size 64\n.visible .entry k(.param .u64 p)\n{\n  .reg .b64 %%rd<2>;\n  .reg .b128 %%q<3>;\n  ld.param.u64 %%rd1, [p];\n  mov.b128 %%q1, {%%rd1, %%rd1};\n  atom.global.exch.b128 %%q2, [%%rd1], %%q1;\n  ret;\n}\n' \
  > "$out/wide.ptx"
message=$("$rocuda" compile "$out/wide.ptx" --target gfx1100 -o "$out/w.co" 2>&1)
[[ $? -eq 1 ]] || fail "PTX with a 128-bit atomic did not fail"
[[ $message == *"128-bit atomics"* ]] || fail "the error does not name 128-bit atomics: $message"
"$rocuda" compile "$inputs/saxpy.ptx" --target neutral -o "$out/saxpy.ll" ||
  fail "--target neutral exited $?"
ir=$(<"$out/saxpy.ll")
[[ $ir == *"define void @saxpy(ptr"* ]] || fail "--target neutral: no saxpy in the IR"
[[ $ir != *amdgpu* ]] || fail "--target neutral: the IR is the AMD lowering's"
"$rocuda" compile "$inputs/saxpy.ptx" --target neutral --emit asm -o - >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "--target neutral --emit asm is not refused"
printf '.version 7.0\n.target sm_75\n.address_size 64\n.visible .entry k()\n{\n  frob.u32 %%r1;\n}\n' \
  > "$out/bad.ptx"
message=$("$rocuda" compile "$out/bad.ptx" --target neutral -o - 2>&1)
[[ $? -eq 1 && $message == *"bad.ptx:6:"* ]] || fail "bad PTX is not reported by line: $message"
"$rocuda" compile "$inputs/saxpy.ptx" --target gfx1100 --jobs 1 -o "$out/one.co" ||
  fail "--jobs 1 exited $?"
for bad in 0 x -1; do
  "$rocuda" compile "$inputs/saxpy.ptx" --target gfx1100 --jobs "$bad" -o "$out/bad.co" 2>/dev/null
  [[ $? -eq 2 ]] || fail "--jobs $bad is not a usage error"
done
for program in "$separable:_Z16applyAcrossUnitsPKiPii" "$launching:_Z6parentPi"; do
  binary=${program%%:*} kernel=${program#*:}
  [[ -n $binary ]] || continue
  rm -f "$out/rdc.co"*
  "$rocuda" compile "$binary" --target gfx1100 -o "$out/rdc.co" ||
    fail "the -rdc program $binary did not compile"
  [[ ! -e $out/rdc.co.2 ]] || fail "$binary: its units were compiled apart"
  notes=$("$readelf" --notes "$out/rdc.co")
  [[ $notes == *".name:           $kernel"* ]] || fail "$binary: no $kernel in the code object"
done
echo "1 passed, 0 failed"
