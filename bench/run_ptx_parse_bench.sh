#!/usr/bin/env bash
# Rocuda's PTX parse+check against NVIDIA's ptxas -O0 on the same file, in the same run.
#   run_ptx_parse_bench.sh BENCH FILE.ptx [PTXAS] [ITERATIONS]
# Goals: parse+check >= 20x faster than ptxas -O0; AST heap <= 4x the text size.
set -euo pipefail
bench=$1
ptx=$2
ptxas=${3:-/usr/local/cuda/bin/ptxas}
iterations=${4:-10}
arch=$(grep -m1 -o 'sm_[0-9]*a\?' "$ptx" || echo sm_90)

out=$("$bench" "$ptx" "$iterations")
echo "$out" | grep -v '^[a-z_]*='
value() { echo "$out" | sed -n "s/^$1=//p"; }

# ptxas: best of three, wall and CPU (user + sys) from bash's time.
best_wall=; best_cpu=
for _ in 1 2 3; do
  TIMEFORMAT='%R %U %S'
  times=$( { time "$ptxas" -O0 -arch="$arch" "$ptx" -o /dev/null >/dev/null 2>&1; } 2>&1 )
  read -r real user sys <<< "$times"
  cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')
  if [[ -z $best_wall ]] || awk -v a="$real" -v b="$best_wall" 'BEGIN { exit !(a < b) }'; then
    best_wall=$real
  fi
  if [[ -z $best_cpu ]] || awk -v a="$cpu" -v b="$best_cpu" 'BEGIN { exit !(a < b) }'; then
    best_cpu=$cpu
  fi
done

awk -v pw="$(value parse_best_wall_s)" -v pc="$(value parse_cpu_s)" -v xw="$best_wall" \
    -v xc="$best_cpu" -v ratio="$(value ast_ratio)" -v arch="$arch" 'BEGIN {
  printf "ptxas -O0 -arch=%s (best of 3): %.3f s wall, %.3f s CPU\n", arch, xw, xc
  printf "rocuda parse+check: %.3f s wall (best), %.3f s CPU (median)\n", pw, pc
  printf "speed-up over ptxas -O0: %.1fx wall, %.1fx CPU (goal >= 20x): %s\n", xw / pw, xc / pc,
         (xc / pc >= 20 ? "met" : "NOT met")
  printf "AST memory / text size: %.2fx (goal <= 4x): %s\n", ratio,
         (ratio <= 4 ? "met" : "NOT met")
}'
