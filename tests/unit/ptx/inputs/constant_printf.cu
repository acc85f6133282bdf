// Constant memory, global initialised data and device printf.
#include <cstdio>

__constant__ float coefficients[16];
__constant__ int table[4] = {1, 2, 3, 4};
__device__ float globalScale = 2.0f;
__device__ const char* names[2] = {"alpha", "beta"};
__device__ __managed__ int managedCounter;

__global__ void polynomial(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0.0f;
  for (int k = 0; k < 16; ++k) acc = acc * x[i] + coefficients[k];
  y[i] = acc * globalScale + table[i & 3];
  managedCounter = i;
  if (i == 0) printf("n=%d first=%f name=%s %lld\n", n, y[0], names[n & 1], (long long)n);
}
