// Vector addition with a ragged last block: n is not a multiple of the block size, so the bounds
// check in the kernel matters; a guard region past n must stay untouched.
#include <cstring>
#include <vector>

#include "e2e_check.h"

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = (1 << 20) + 37;
  const int guard = 64;
  const unsigned sentinel = 0xA5A5A5A5u;
  std::vector<float> a(n), b(n);
  // Small multiples of 0.5: every sum is exact in float, so the comparison is exact.
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1024);
    b[i] = static_cast<float>(i % 77) * 0.5f - 10.0f;
  }

  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, n * sizeof(float)));
  CHECK(cudaMalloc(&db, n * sizeof(float)));
  CHECK(cudaMalloc(&dc, (n + guard) * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dc, 0xA5, (n + guard) * sizeof(float)));

  const int block = 256;
  const int grid = (n + block - 1) / block;
  vectorAdd<<<grid, block>>>(da, db, dc, n);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());

  std::vector<float> c(n + guard);
  CHECK(cudaMemcpy(c.data(), dc, (n + guard) * sizeof(float), cudaMemcpyDeviceToHost));

  Checker check("vector_add");
  for (int i = 0; i < n; ++i) check.eq("c", i, a[i] + b[i], c[i]);
  for (int i = n; i < n + guard; ++i) {
    unsigned bits;
    std::memcpy(&bits, &c[i], sizeof bits);
    check.eq("guard", i, sentinel, bits);
  }
  std::printf("vector_add: n=%d, %d blocks of %d threads\n", n, grid, block);
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  return check.finish();
}
