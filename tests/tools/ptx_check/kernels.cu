// Input for the ptx-check tests: compiled with nvcc to PTX, an executable, a fatbin and a
// SASS-only binary at build time.
#include <cstdio>

__device__ float scale(float x, float factor) { return x * factor; }

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale(x[i], a) + y[i];
}

__global__ void hello(int value) {
  if (threadIdx.x == 0) printf("value %d\n", value);
}

int main() {
  saxpy<<<1, 32>>>(0, 2.0f, nullptr, nullptr);
  hello<<<1, 1>>>(7);
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : 1;
}
