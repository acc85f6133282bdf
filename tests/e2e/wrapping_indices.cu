// Gathers through wrapping indices, out[t] = in[(t * K) % 256] for a block of 256 threads: on
// the CPU device a block's threads run as one vectorised loop, where LLVM 19's vectoriser once
// loaded such an index as a fixed stride past the wrap (llvm-project issue 156849), so threads
// read in[260] for in[4]. Global and shared memory, four element types, against the host.
#include <cstdint>
#include <vector>

#include "e2e_check.h"

constexpr int kThreads = 256;

template <typename T, int K>
__global__ void gatherGlobal(const T* in, T* out) {
  out[threadIdx.x] = in[(threadIdx.x * K) % kThreads];
}

// The same through shared memory filled with a block-dependent pattern; two arrays so that a
// read past the wrap lands on the wrong one.
template <int K>
__global__ void gatherShared(int* out) {
  __shared__ int s[2][kThreads];
  s[0][threadIdx.x] = threadIdx.x + 1000 * blockIdx.x;
  s[1][threadIdx.x] = -1;
  __syncthreads();
  out[blockIdx.x * kThreads + threadIdx.x] = s[0][(threadIdx.x * K) % kThreads];
}

template <typename T, int K>
void checkGlobal(Checker& check, const char* name) {
  std::vector<T> in(2 * kThreads);
  for (int i = 0; i < 2 * kThreads; ++i) in[i] = static_cast<T>(i % 97 + (i >= kThreads ? 50 : 0));
  T *dIn = upload(in), *dOut;
  CHECK(cudaMalloc(&dOut, kThreads * sizeof(T)));
  gatherGlobal<T, K><<<1, kThreads>>>(dIn, dOut);
  CHECK_LAUNCH();
  std::vector<T> out = download(dOut, kThreads);
  for (int t = 0; t < kThreads; ++t)
    check.eq(name, t, static_cast<double>(in[(t * K) % kThreads]), static_cast<double>(out[t]));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
}

template <int K>
void checkShared(Checker& check, const char* name) {
  constexpr int kBlocks = 3;
  int* dOut;
  CHECK(cudaMalloc(&dOut, kBlocks * kThreads * sizeof(int)));
  gatherShared<K><<<kBlocks, kThreads>>>(dOut);
  CHECK_LAUNCH();
  std::vector<int> out = download(dOut, kBlocks * kThreads);
  for (int b = 0; b < kBlocks; ++b)
    for (int t = 0; t < kThreads; ++t)
      check.eq(name, b * kThreads + t, (t * K) % kThreads + 1000 * b, out[b * kThreads + t]);
  CHECK(cudaFree(dOut));
}

int main() {
  Checker check("wrapping_indices");
  checkGlobal<int, 3>(check, "int, K=3");
  checkGlobal<int, 5>(check, "int, K=5");
  checkGlobal<int, 7>(check, "int, K=7");
  checkGlobal<int8_t, 5>(check, "char, K=5");
  checkGlobal<int16_t, 5>(check, "short, K=5");
  checkGlobal<double, 5>(check, "double, K=5");
  checkShared<5>(check, "shared, K=5");
  return check.finish();
}
