#!/usr/bin/env bash
# llama.cpp's own operator tests (test-backend-ops) under Rocuda on the CPU device: ggml's CUDA
# backend, built by nvcc as llama.cpp builds it (PTX for sm_80 in the binary, the driver API
# linked directly, its VMM memory pool, CUDA graphs), checked op by op against ggml's CPU backend
# by llama.cpp's authors' own tolerances. The quantized matrix multiplications (MMQ: mma.sync
# m16n8k32 s8 and ldmatrix) and the vector ones (MMVQ) are the heart of LLM inference.
# Not part of the test suite: the nvcc build of ggml-cuda takes about 45 minutes on 2 cores
# (once; ccache keeps it), the first run compiles every module it loads (code cache keeps them).
#
#   scripts/check-llama-cpp.sh [OPS] [QUANT_TYPES]
#     OPS          test-backend-ops -o list (default: the element-wise, normalisation, rope,
#                  softmax, copy, reduction and pooling ops below)
#     QUANT_TYPES  a regex of MUL_MAT's type_a (default q4_0|q8_0|q4_K); "none" skips MUL_MAT
#
# Operations that call cuBLAS (SSM_SCAN, f16/f32 MUL_MAT, OUT_PROD) reach NVIDIA's cuBLAS, which
# holds only SASS, and fail with CUDA errors: they are not in the default list. Logs in
# build/llama-cpp/.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rocuda=$root/build/bin/rocuda
work=$root/build/llama-cpp
version=0.3.36
[[ -x $rocuda ]] || { echo "build first: scripts/build.sh"; exit 2; }
cuda=${CUDA_PATH:-/usr/local/cuda}
ops=${1:-ABS,ACC,ADD,ADD1,ARANGE,ARGMAX,ARGSORT,CLAMP,CONCAT,CONT,COS,COUNT_EQUAL,CPY,CROSS_ENTROPY_LOSS,CUMSUM,DIAG,DIV,DUP,ELU,EXP,FILL,FLOOR,GEGLU,GELU,GELU_ERF,GET_ROWS,GLU,GROUP_NORM,HARDSIGMOID,HARDSWISH,IM2COL,L2_NORM,LEAKY_RELU,LOG,MEAN,MUL,NEG,NORM,OPT_STEP_ADAMW,PAD,PAD_REFLECT_1D,POOL_2D,REGLU,RELU,REPEAT,RMS_NORM,ROLL,ROPE,ROUND,SCALE,SET,SET_ROWS,SGN,SIGMOID,SILU,SIN,SOFTPLUS,SOFT_MAX,SQR,SQRT,SSM_CONV,STEP,SUB,SUM,SUM_ROWS,SWIGLU,TANH,TIMESTEP_EMBEDDING,TOP_K,TRUNC,UPSCALE,RWKV_WKV6,GATED_LINEAR_ATTN}
quants=${2:-q4_0|q8_0|q4_K}
mkdir -p "$work"

# llama.cpp's sources, as vendored by llama-cpp-python's source distribution on PyPI.
src=$work/llama_cpp_python-$version/vendor/llama.cpp
if [[ ! -d $src ]]; then
  python3 -m pip download -q --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$version" ||
    exit 2
  tar -xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work" || exit 2
fi

# ggml's CUDA backend as PTX for sm_80 only (Rocuda compiles PTX), with the MMQ kernels forced
# for quantized types; flash attention is left out to halve the build.
bin=$work/build/bin
if [[ ! -x $bin/test-backend-ops ]]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache
                                            -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCMAKE_CUDA_ARCHITECTURES=80-virtual \
    -DGGML_CUDA_FA=OFF -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_FORCE_MMQ=ON -DGGML_NATIVE=OFF \
    -DLLAMA_BUILD_TESTS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$root/build/lib" "${launcher[@]}" \
    > "$work/configure.log" 2>&1 || { echo "configure failed: $work/configure.log"; exit 2; }
  ninja -C "$work/build" test-backend-ops > "$work/build.log" 2>&1 ||
    { echo "build failed: $work/build.log"; exit 2; }
fi

failed=0
run() {  # NAME ARGS...: one test-backend-ops run, its verdict line in the summary
  local name=$1
  shift
  "$rocuda" run -- "$bin/test-backend-ops" -b CUDA0 "$@" > "$work/$name.log" 2>&1
  local status=$?
  local verdict
  verdict=$(grep -E "tests passed" "$work/$name.log" | tail -1 | sed 's/^ *//')
  echo "$name: ${verdict:-no verdict} (exit $status)" | tee -a "$work/summary.txt"
  ((status == 0)) || failed=1
}
: > "$work/summary.txt"
run ops -o "$ops"
[[ $quants == none ]] || run mul_mat -o MUL_MAT -p "type_a=($quants),"
echo "logs in $work"
exit $failed
