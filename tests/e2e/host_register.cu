// cudaHostRegister / cudaHostUnregister on the application's own memory: async copies from and
// to it, kernels reading it through cudaHostGetDevicePointer, and the documented errors.
#include <vector>

#include "e2e_check.h"

__global__ void doubleInto(int* out, const int* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2 * in[i];
}

int main() {
  Checker check("host_register");
  const int n = 1 << 16;
  std::vector<int> input(n), output(n, 0);
  for (int i = 0; i < n; ++i) input[i] = i * 3 - 5;
  CHECK(cudaHostRegister(input.data(), n * sizeof(int), cudaHostRegisterDefault));
  CHECK(cudaHostRegister(output.data(), n * sizeof(int), cudaHostRegisterMapped));
  check.expect(cudaHostRegister(input.data(), n * sizeof(int), 0) ==
                   cudaErrorHostMemoryAlreadyRegistered,
               "registering twice is refused");
  (void)cudaGetLastError();

  cudaPointerAttributes attributes;
  CHECK(cudaPointerGetAttributes(&attributes, input.data()));
  check.expect(attributes.type == cudaMemoryTypeHost, "registered memory is host memory");

  int *dIn, *dOut;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaMemcpyAsync(dIn, input.data(), n * sizeof(int), cudaMemcpyHostToDevice, stream));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dOut), output.data(), 0));
  doubleInto<<<(n + 255) / 256, 256, 0, stream>>>(dOut, dIn, n);  // writes host memory directly
  CHECK_LAUNCH();
  CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i) check.eq("mapped output", i, 2 * input[i], output[i]);

  CHECK(cudaHostUnregister(input.data()));
  CHECK(cudaHostUnregister(output.data()));
  check.expect(cudaHostUnregister(input.data()) == cudaErrorHostMemoryNotRegistered,
               "unregistering twice is refused");
  (void)cudaGetLastError();
  CHECK(cudaFree(dIn));
  CHECK(cudaStreamDestroy(stream));
  std::printf("host_register: %d ints through registered memory\n", n);
  return check.finish();
}
