// Device code for the fatbin reader tests (compiled by nvcc at build time, never run).
__global__ void addOne(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += 1;
}
__global__ void scale(float* p, float f) { p[threadIdx.x] *= f; }
