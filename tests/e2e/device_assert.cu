// A device-side assert() that fails: the launch completes with cudaErrorAssert, the error is
// sticky for the context (as on NVIDIA hardware), and the process itself is unharmed.
#undef NDEBUG  // the point of this program is a failing assert
#include <cassert>

#include "e2e_check.h"

__global__ void checkPositive(const int* values, int n, int* visited) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(visited, 1);
    assert(values[i] > 0);
  }
}

int main() {
  Checker check("device_assert");
  const int n = 256;
  int host[n];
  for (int i = 0; i < n; ++i) host[i] = i == 77 ? -1 : i + 1;
  int *values, *visited;
  CHECK(cudaMalloc(&values, sizeof host));
  CHECK(cudaMalloc(&visited, sizeof(int)));
  CHECK(cudaMemset(visited, 0, sizeof(int)));
  CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));

  // A passing launch first: no error.
  host[77] = 78;
  CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
  checkPositive<<<n / 64, 64>>>(values, n, visited);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());

  host[77] = -1;
  CHECK(cudaMemcpy(values, host, sizeof host, cudaMemcpyHostToDevice));
  checkPositive<<<n / 64, 64>>>(values, n, visited);
  check.expect(cudaGetLastError() == cudaSuccess, "the launch itself succeeds");
  cudaError_t sync = cudaDeviceSynchronize();
  if (sync != cudaErrorAssert)
    std::fprintf(stderr, "cudaDeviceSynchronize: expected cudaErrorAssert, got %s\n",
                 cudaGetErrorName(sync));
  check.expect(sync == cudaErrorAssert, "synchronize reports the failed assert");
  int dummy = 0;
  cudaError_t after = cudaMemcpy(&dummy, visited, sizeof(int), cudaMemcpyDeviceToHost);
  check.expect(after == cudaErrorAssert, "the assert error is sticky");
  std::printf("device_assert: assert failure reported as %s\n", cudaGetErrorName(sync));
  return check.finish();
}
