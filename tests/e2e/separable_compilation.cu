// Separable compilation (-rdc=true, CMake's CUDA_SEPARABLE_COMPILATION): the kernels here call a
// __device__ function, read a __device__ variable and a __constant__ table, and use a
// function-pointer table that separable_compilation_device.cu defines. NVIDIA's nvlink links the
// two translation units; Rocuda links their PTX when the program's image is loaded. Checked
// against the same arithmetic on the host.
#include <vector>

#include "e2e_check.h"
#include "separable_compilation.h"

__global__ void applyAcrossUnits(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = in[i];
  out[i] = scaleAndOffset(x) + kTable[i % kTableSize] + operations[i % kOperations](x);
  atomicAdd(&launchCount, 1);
}

int main() {
  Checker check("separable_compilation");
  const int n = 1000;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = i * 7 - 300;
  int *dIn = upload(in), *dOut = nullptr;
  CHECK(cudaMalloc(&dOut, n * sizeof(int)));
  int table[kTableSize];
  for (int k = 0; k < kTableSize; ++k) table[k] = k * k - 5;
  CHECK(cudaMemcpyToSymbol(kTable, table, sizeof table));
  int offset = 11;
  CHECK(cudaMemcpyToSymbol(deviceOffset, &offset, sizeof offset));
  applyAcrossUnits<<<(n + 127) / 128, 128>>>(dIn, dOut, n);
  CHECK_LAUNCH();
  std::vector<int> out = download(dOut, n);
  for (int i = 0; i < n; ++i) {
    int x = in[i];
    int operation = i % kOperations == 0 ? x + 1 : i % kOperations == 1 ? x * 2 : -x;
    check.eq("out", i, 3 * x + offset + table[i % kTableSize] + operation, out[i]);
  }
  int count = 0;
  CHECK(cudaMemcpyFromSymbol(&count, launchCount, sizeof count));
  check.eq("launchCount (a variable of the other unit)", 0, n, count);
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
  return check.finish();
}
