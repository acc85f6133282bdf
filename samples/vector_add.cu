// Rocuda sample: SAXPY (y = a * x + y) on one million elements. An ordinary CUDA program, built
// with nvcc and run unmodified: `rocuda run -- ./rocuda_sample_vector_add`.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t err = (call);                                                   \
    if (err != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(err));                                    \
      std::exit(2);                                                             \
    }                                                                           \
  } while (0)

__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 1 << 20;
  const float a = 2.5f;

  int device = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaGetDeviceProperties(&prop, device));
  std::printf("Device %d: %s (compute capability %d.%d, %d multiprocessors)\n", device, prop.name,
              prop.major, prop.minor, prop.multiProcessorCount);

  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.001f;
    y[i] = static_cast<float>(i % 7);
  }

  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int block = 256;
  const int grid = (n + block - 1) / block;
  CHECK(cudaEventRecord(start));
  saxpy<<<grid, block>>>(n, a, dx, dy);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));

  std::vector<float> result(n);
  CHECK(cudaMemcpy(result.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));

  // The device may fuse a * x + y into one rounding (fma); the host rounds twice. Either way the
  // result is within one ulp of the exact value, so allow a few ulps of the largest magnitude.
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    float expected = a * x[i] + y[i];
    if (std::fabs(result[i] - expected) > 1e-5f * (1.0f + std::fabs(expected))) {
      if (mismatches < 5)
        std::fprintf(stderr, "  y[%d] = %g, expected %g\n", i, result[i], expected);
      ++mismatches;
    }
  }

  std::printf("SAXPY on %d elements (%d blocks of %d threads): kernel time %.3f ms\n", n, grid,
              block, ms);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  if (mismatches != 0) {
    std::printf("Result verified against the host: FAILED (%d mismatches)\n", mismatches);
    return 1;
  }
  std::printf("Result verified against the host: PASSED\n");
  return 0;
}
