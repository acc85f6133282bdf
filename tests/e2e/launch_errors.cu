// Recoverable errors: invalid launch configurations, absurd allocations, freeing pointers that
// cudaMalloc did not return, an invalid copy direction and device number. Each must be reported
// (not crash), must not be sticky, and the context must keep working afterwards. The same bad
// configuration launched through the driver API directly (links libcuda) is the driver's
// CUDA_ERROR_INVALID_VALUE, as NVIDIA's driver reports it, and leaves the runtime's error alone.
#include <cuda.h>

#include <vector>

#include "e2e_check.h"

__global__ void fill(int* out, int n, int value) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = value + i;
}

// Records `got` against `want`, printing both error names on a mismatch.
static void expectError(Checker& check, const char* what, cudaError_t want, cudaError_t got) {
  if (want != got)
    std::fprintf(stderr, "%s: expected %s (%d), got %s (%d)\n", what, cudaGetErrorName(want),
                 static_cast<int>(want), cudaGetErrorName(got), static_cast<int>(got));
  check.expect(want == got, what);
}

// A launch configuration the device cannot run: cudaErrorInvalidConfiguration, as on NVIDIA's
// stack, and not sticky.
static void expectConfigurationError(Checker& check, const char* what, cudaError_t got) {
  expectError(check, what, cudaErrorInvalidConfiguration, got);
}

int main() {
  Checker check("launch_errors");
  const int n = 4096;
  int* d;
  CHECK(cudaMalloc(&d, n * sizeof(int)));

  // Too many threads per block.
  fill<<<1, 2048>>>(d, n, 0);
  expectConfigurationError(check, "block of 2048 threads", cudaGetLastError());
  expectError(check, "error cleared by cudaGetLastError", cudaSuccess, cudaGetLastError());

  // blockDim.z above 64, and an empty grid.
  fill<<<1, dim3(1, 1, 65)>>>(d, n, 0);
  expectConfigurationError(check, "blockDim.z = 65", cudaGetLastError());
  fill<<<0, 32>>>(d, n, 0);
  expectConfigurationError(check, "grid of 0 blocks", cudaGetLastError());

  fill<<<dim3(1, 65536, 1), 32>>>(d, n, 0);
  expectConfigurationError(check, "gridDim.y = 65536", cudaGetLastError());

  // The driver API called directly, between runtime calls, on the runtime's own kernel handle.
  cudaFunction_t function = nullptr;
  CHECK(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(fill)));
  int value = 0;
  void* params[] = {&d, const_cast<int*>(&n), &value};
  CUresult direct = cuLaunchKernel(reinterpret_cast<CUfunction>(function), 1, 1, 1, 1025, 1, 1, 0,
                                   nullptr, params, nullptr);
  check.expect(direct == CUDA_ERROR_INVALID_VALUE,
               "cuLaunchKernel with 1025 threads is CUDA_ERROR_INVALID_VALUE");
  if (direct != CUDA_ERROR_INVALID_VALUE)
    std::fprintf(stderr, "cuLaunchKernel with 1025 threads: got %d\n", static_cast<int>(direct));
  expectError(check, "a driver error leaves the runtime's error alone", cudaSuccess,
              cudaPeekAtLastError());
  direct = cuLaunchKernel(reinterpret_cast<CUfunction>(function), 0, 1, 1, 32, 1, 1, 0, nullptr,
                          params, nullptr);
  check.expect(direct == CUDA_ERROR_INVALID_VALUE,
               "cuLaunchKernel with an empty grid is CUDA_ERROR_INVALID_VALUE");

  // cudaPeekAtLastError does not clear; cudaGetLastError does.
  fill<<<1, 4096>>>(d, n, 0);
  expectConfigurationError(check, "peek after bad launch", cudaPeekAtLastError());
  expectConfigurationError(check, "get after peek", cudaGetLastError());
  expectError(check, "cleared after get", cudaSuccess, cudaPeekAtLastError());

  // An absurd allocation fails cleanly.
  void* huge = nullptr;
  expectError(check, "cudaMalloc(1 EiB)", cudaErrorMemoryAllocation,
              cudaMalloc(&huge, static_cast<size_t>(1) << 60));
  (void)cudaGetLastError();

  // Freeing memory that cudaMalloc did not return is an error (the exact code varies).
  std::vector<int> hostBuffer(16);
  cudaError_t freeHost = cudaFree(hostBuffer.data());
  check.expect(freeHost != cudaSuccess, "cudaFree of a host pointer fails");
  (void)cudaGetLastError();
  cudaError_t freeInterior = cudaFree(d + 1);
  check.expect(freeInterior != cudaSuccess, "cudaFree of an interior device pointer fails");
  (void)cudaGetLastError();
  CHECK(cudaFree(nullptr));  // freeing null is defined as a no-op

  // Invalid copy direction and device number.
  expectError(check, "cudaMemcpy with kind 42", cudaErrorInvalidMemcpyDirection,
              cudaMemcpy(d, hostBuffer.data(), 16, static_cast<cudaMemcpyKind>(42)));
  (void)cudaGetLastError();
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  expectError(check, "cudaSetDevice(count + 5)", cudaErrorInvalidDevice, cudaSetDevice(count + 5));
  (void)cudaGetLastError();
  check.expect(cudaGetErrorString(cudaErrorInvalidConfiguration) != nullptr,
               "cudaGetErrorString is non-null");

  // The context still works: a valid launch and a round trip.
  fill<<<n / 128, 128>>>(d, n, 1000);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  std::vector<int> out(n);
  CHECK(cudaMemcpy(out.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) check.eq("after errors", i, 1000 + i, out[i]);
  int* d2;
  CHECK(cudaMalloc(&d2, 1 << 20));
  CHECK(cudaFree(d2));
  CHECK(cudaFree(d));
  std::printf("launch_errors: errors reported, context still usable\n");
  return check.finish();
}
