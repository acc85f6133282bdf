#!/usr/bin/env bash
# PTX-to-code-object compile time of Rocuda's AMD code generator against NVIDIA's ptxas -O3
# compiling the same PTX for sm_90, in the same run (best of N wall times each).
#   run_amdgpu_compile_bench.sh ROCUDA PTXAS [--targets gfx1100,gfx90a] [--runs N] [--jobs N]
#                               FILE.ptx...
# Rocuda compiles a large module's kernels in partitions on every core (--jobs N: N threads;
# --jobs 1 compiles each module on one thread, as ptxas does).
# Goal (issue 6): rocuda / ptxas <= 1.0 for every module. ptxas is given -arch=sm_90 whatever the
# module's .target, as the goal says; a module ptxas refuses for sm_90 is reported and skipped.
set -euo pipefail
rocuda=$1
ptxas=$2
shift 2
targets=gfx1100,gfx90a
runs=3
jobs=()
files=()
while (($#)); do
  case $1 in
    --targets) targets=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=(--jobs "$2"); shift 2 ;;
    *) files+=("$1"); shift ;;
  esac
done
((${#files[@]})) || { echo "usage: $0 ROCUDA PTXAS [--targets LIST] [--runs N] [--jobs N] FILE.ptx..." >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Best wall time of `runs` runs of the command; empty if it fails.
best_of() {
  local best= t
  for ((i = 0; i < runs; i++)); do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>"$work/err" || return 1
    end=$(date +%s.%N)
    t=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$t; fi
  done
  echo "$best"
}

printf '%-28s %9s %9s' module "KiB" "ptxas-O3"
IFS=, read -ra target_list <<<"$targets"
for t in "${target_list[@]}"; do printf ' %10s %7s' "$t" ratio; done
echo
worst=0
for file in "${files[@]}"; do
  name=$(basename "$file" .ptx)
  kib=$(( $(stat -c %s "$file") / 1024 ))
  if ! reference=$(best_of "$ptxas" -O3 -arch=sm_90 "$file" -o "$work/ref.cubin"); then
    printf '%-28s %9s  ptxas -O3 -arch=sm_90 refused it: %s\n' "$name" "$kib" "$(head -c 200 "$work/err")"
    continue
  fi
  printf '%-28s %9s %9s' "$name" "$kib" "$reference"
  for t in "${target_list[@]}"; do
    if ! ours=$(best_of "$rocuda" compile "$file" --target "$t" "${jobs[@]}" -o "$work/out.co"); then
      printf ' %10s %7s' failed -
      echo; echo "  $t: $(head -c 300 "$work/err")"
      continue
    fi
    ratio=$(awk -v a="$ours" -v b="$reference" 'BEGIN { printf "%.2f", a / b }')
    worst=$(awk -v a="$ratio" -v b="$worst" 'BEGIN { print (a > b ? a : b) }')
    printf ' %10s %7s' "$ours" "$ratio"
  done
  echo
done
awk -v w="$worst" 'BEGIN { printf "worst ratio rocuda / ptxas -O3: %.2f (goal <= 1.0): %s\n", w,
                           (w <= 1.0 ? "met" : "NOT met") }'
