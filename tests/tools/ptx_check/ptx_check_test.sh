#!/usr/bin/env bash
# rocuda ptx-check, one case per run: ptx_check_test.sh ROCUDA CASE [ARG...]
set -u
rocuda=$1
test_case=$2
shift 2
fail() { echo "FAIL ($test_case): $*"; exit 1; }

# Runs ptx-check with the given arguments; sets out (stdout and stderr) and status.
check() {
  out=$("$rocuda" ptx-check "$@" 2>&1)
  status=$?
}

# Valid PTX: nothing printed, exit 0; with -v one OK line per program.
expect_valid() {
  local file=$1 name=$2
  check "$file"
  [[ $status -eq 0 ]] || fail "exit status $status, expected 0; output: $out"
  [[ -z $out ]] || fail "printed '$out' for a valid file"
  check -v "$file"
  [[ $status -eq 0 ]] || fail "-v: exit status $status"
  local pattern="^${name}: OK \(([0-9]+) functions, ([0-9]+) instructions\)$"
  local line count=0
  while IFS= read -r line; do
    [[ $line =~ $pattern ]] || fail "-v: unexpected line '$line'"
    # kernels.cu defines saxpy, hello and scale (maybe inlined): at least the two kernels.
    (( BASH_REMATCH[1] >= 2 && BASH_REMATCH[2] >= 5 )) || fail "-v: counts too small: '$line'"
    count=$((count + 1))
  done <<< "$out"
  [[ $count -ge 1 ]] || fail "-v: no OK line"
}

case $test_case in
  two_errors)
    # Exact output, both errors, with a relative path as given.
    cd "$1" || fail "no directory $1"
    check two_errors.ptx
    [[ $status -eq 1 ]] || fail "exit status $status, expected 1"
    expected=$(cat two_errors.expected)
    [[ $out == "$expected" ]] || fail "output differs:"$'\n'"$out"$'\n'"expected:"$'\n'"$expected"
    # Errors in one file do not hide a valid one, and the status stays 1.
    check -v two_errors.ptx reject/../two_errors.ptx
    [[ $status -eq 1 ]] || fail "two files: exit status $status"
    [[ $(grep -c ': error: ' <<< "$out") -eq 4 ]] || fail "two files: expected 4 errors: $out"
    ;;
  translate)
    # Valid PTX that Rocuda cannot run: only --translate reports it, naming the kernel, the
    # instruction as written, its PTX position and its CUDA source line.
    cd "$1" || fail "no directory $1"
    check unsupported.ptx
    [[ $status -eq 0 && -z $out ]] || fail "without --translate: $status $out"
    check --translate unsupported.ptx
    [[ $status -eq 1 ]] || fail "exit status $status, expected 1"
    expected="unsupported.ptx: error: kernel 'k' cannot run: unsupported PTX instruction"
    expected+=" 'multimem.red.relaxed.gpu.global.add.u32' at 16:3 (kern.cu:42)"
    expected+=" in function 'k'"
    [[ $out == "$expected" ]] || fail "output differs:"$'\n'"$out"$'\n'"expected:"$'\n'"$expected"
    check -t -v two_errors.ptx
    [[ $status -eq 1 ]] || fail "invalid PTX with -t: exit status $status"
    ;;
  missing_file)
    check /no/such/file.ptx
    [[ $status -eq 2 ]] || fail "exit status $status, expected 2"
    [[ $out == "rocuda ptx-check: cannot read '/no/such/file.ptx': No such file or directory" ]] ||
      fail "message: $out"
    dir=$(mktemp -d)
    check "$dir"
    rmdir "$dir"
    [[ $status -eq 2 && $out == *"cannot read '$dir'"* ]] || fail "directory: $status $out"
    ;;
  usage)
    check
    [[ $status -eq 2 && $out == *"no input files"* ]] || fail "no files: $status $out"
    check --frobnicate x.ptx
    [[ $status -eq 2 && $out == *"unknown option '--frobnicate'"* ]] || fail "option: $status $out"
    check --help
    [[ $status -eq 0 && $out == *"usage: rocuda ptx-check"* ]] || fail "--help: $status $out"
    ;;
  rejects)
    # Malformed inputs (some found by fuzzing): exit 1 with a diagnostic, never a crash.
    dir=$1
    n=0
    for file in "$dir"/*; do
      check "$file"
      [[ $status -eq 1 ]] || fail "$file: exit status $status, expected 1; output: ${out:0:500}"
      [[ $out == *": error: "* ]] || fail "$file: no error message"
      n=$((n + 1))
    done
    # Binary junk and an empty file are refused with a message, too.
    tmp=$(mktemp -d)
    printf '\x01\x02\x00\x03junk' > "$tmp/junk.bin"
    : > "$tmp/empty.ptx"
    check "$tmp/junk.bin"
    [[ $status -eq 1 && $out == *"not PTX text, an ELF file or a fatbin"* ]] || fail "junk: $out"
    check "$tmp/empty.ptx"
    [[ $status -eq 1 && $out == *"empty file"* ]] || fail "empty: $out"
    rm -r "$tmp"
    [[ $n -ge 1 ]] || fail "no inputs in $dir"
    ;;
  valid_ptx)
    expect_valid "$1" "$(printf '%s' "$1" | sed 's/[][\.*^$()+?{}|]/\\&/g')"
    ;;
  executable|fatbin)
    # PTX inside (zstd-compressed by default in an executable): one program per unit.
    escaped=$(printf '%s' "$1" | sed 's/[][\.*^$()+?{}|]/\\&/g')
    expect_valid "$1" "$escaped \(PTX compute_[0-9]+\)"
    # --extract writes each program found as NAME.compute_XX.ptx, the same text -v checked.
    dir=$(mktemp -d)
    check --extract "$dir/out" "$1"
    [[ $status -eq 0 && -z $out ]] || fail "--extract: status $status: $out"
    extracted=("$dir"/out/"$(basename "$1")".compute_*.ptx)
    [[ -f ${extracted[0]} ]] || fail "--extract wrote nothing: $(ls "$dir"/out)"
    grep -q '^\.entry\|^\.visible \.entry' "${extracted[0]}" || fail "--extract: no kernel in the PTX"
    check -v "${extracted[0]}"
    [[ $status -eq 0 && $out == *": OK ("* ]] || fail "extracted PTX does not check: $out"
    check --extract
    [[ $status -eq 2 && $out == *"--extract needs a directory"* ]] || fail "--extract alone: $out"
    rm -r "$dir"
    # A truncated copy is an error with a message, not a crash.
    tmp=$(mktemp)
    head -c $(( $(stat -c %s "$1") / 2 )) "$1" > "$tmp"
    check "$tmp"
    rm -f "$tmp"
    [[ $status -eq 1 && $out == *": error: "* ]] || fail "truncated: status $status: $out"
    ;;
  library)
    # A CUDA library of NVIDIA's (PTX of real CUDA code, not written for these tests): every
    # unit of PTX inside parses and checks.
    check "$1"
    [[ $status -eq 0 && -z $out ]] || fail "exit status $status: $(printf '%s' "$out" | head -5)"
    check -v "$1"
    units=$(grep -c ": OK (" <<< "$out")
    [[ $status -eq 0 && $units -ge 1 ]] || fail "-v: $units units, status $status"
    ;;
  sass_only)
    check "$1"
    [[ $status -eq 1 ]] || fail "exit status $status, expected 1"
    [[ $out == "$1: error: no PTX in this file: it carries only SASS (sm_75)"* ]] ||
      fail "message: $out"
    ;;
  *)
    fail "unknown case"
    ;;
esac
echo "1 passed, 0 failed"
