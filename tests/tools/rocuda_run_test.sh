#!/usr/bin/env bash
# rocuda run: arguments, standard streams and exit status pass through; the library directory
# comes first in the loader path and Rocuda's nvJitLink and NVRTC are preloaded; a missing program
# gets a clear message.
set -u
rocuda=$1
fail() { echo "FAIL: $*"; exit 1; }

out=$("$rocuda" run -- /bin/sh -c 'echo "args:$1,$2"; echo "err" >&2; exit 7' sh "a b" c 2>/tmp/rocuda-run-err.$$)
status=$?
[[ $status -eq 7 ]] || fail "exit status $status, expected 7"
[[ $out == "args:a b,c" ]] || fail "stdout '$out'"
[[ $(cat /tmp/rocuda-run-err.$$) == "err" ]] || fail "stderr not passed through"
rm -f /tmp/rocuda-run-err.$$

input=$(echo "from stdin" | "$rocuda" run -- cat)
[[ $input == "from stdin" ]] || fail "stdin not passed through"

libdir=$(cd "$(dirname "$rocuda")/../lib" && pwd)
path=$("$rocuda" run sh -c 'echo $LD_LIBRARY_PATH')
[[ $path == "$libdir"* ]] || fail "LD_LIBRARY_PATH '$path' does not start with $libdir"
# Rocuda's nvJitLink and NVRTC are preloaded, before any preload the caller had.
preload=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 "$rocuda" run sh -c 'echo $LD_PRELOAD')
expected="$libdir/libnvJitLink.so.13:$libdir/libnvrtc.so.13:/lib/x86_64-linux-gnu/libm.so.6"
[[ $preload == "$expected" ]] ||
  fail "LD_PRELOAD '$preload'"

# Triton's ptxas is the stand-in next to rocuda unless the caller chose one; the stand-in answers
# --version as a CUDA 13.0 ptxas and "assembles" PTX into itself, NUL-terminated.
standin=$(cd "$(dirname "$rocuda")" && pwd)/rocuda-ptxas
chosen=$(env -u TRITON_PTXAS_PATH "$rocuda" run sh -c 'echo $TRITON_PTXAS_PATH')
[[ $chosen == "$standin" ]] || fail "TRITON_PTXAS_PATH '$chosen', expected $standin"
kept=$(TRITON_PTXAS_PATH=/opt/mine "$rocuda" run sh -c 'echo $TRITON_PTXAS_PATH')
[[ $kept == /opt/mine ]] || fail "a chosen TRITON_PTXAS_PATH was replaced: '$kept'"
[[ $("$standin" --version) == *"release 13.0"* ]] || fail "rocuda-ptxas --version"
work=$(mktemp -d)
printf '.version 9.0\n.target sm_86\n.address_size 64\n' > "$work/k.ptx"
"$standin" -lineinfo -v --gpu-name=sm_86 "$work/k.ptx" -o "$work/k.cubin" ||
  fail "rocuda-ptxas failed"
cmp -s <(printf '.version 9.0\n.target sm_86\n.address_size 64\n\0') "$work/k.cubin" ||
  fail "rocuda-ptxas output is not the PTX"
"$standin" -o "$work/x.cubin" 2>/dev/null && fail "rocuda-ptxas without input succeeded"
rm -rf "$work"

message=$("$rocuda" run -- ./no-such-program-here 2>&1)
status=$?
[[ $status -eq 127 ]] || fail "missing program: exit status $status, expected 127"
[[ $message == *"cannot run './no-such-program-here'"* ]] || fail "missing program message: $message"
echo "1 passed, 0 failed"
