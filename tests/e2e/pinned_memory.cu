// Page-locked host memory: cudaMallocHost and cudaHostAlloc buffers feed async copies on a
// stream, several rounds reusing the same buffers, then cudaFreeHost.
#include "e2e_check.h"

__global__ void scaleAdd(const unsigned* in, unsigned* out, int n, unsigned round) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2654435761u + round;
}

int main() {
  const int n = 1 << 18;
  const int rounds = 4;
  Checker check("pinned_memory");

  unsigned *hIn, *hOut, *hPortable;
  CHECK(cudaMallocHost(&hIn, n * sizeof(unsigned)));
  CHECK(cudaHostAlloc(&hOut, n * sizeof(unsigned), cudaHostAllocDefault));
  CHECK(cudaHostAlloc(&hPortable, n * sizeof(unsigned), cudaHostAllocPortable));
  unsigned *dIn, *dOut;
  CHECK(cudaMalloc(&dIn, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&dOut, n * sizeof(unsigned)));
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));

  for (unsigned round = 0; round < rounds; ++round) {
    for (int i = 0; i < n; ++i) hIn[i] = static_cast<unsigned>(i) ^ (round * 0x9E3779B9u);
    CHECK(cudaMemcpyAsync(dIn, hIn, n * sizeof(unsigned), cudaMemcpyHostToDevice, stream));
    scaleAdd<<<(n + 255) / 256, 256, 0, stream>>>(dIn, dOut, n, round);
    CHECK_LAUNCH();
    CHECK(cudaMemcpyAsync(hOut, dOut, n * sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; ++i) {
      unsigned in = static_cast<unsigned>(i) ^ (round * 0x9E3779B9u);
      check.eq("out", static_cast<long long>(round) * n + i, in * 2654435761u + round, hOut[i]);
    }
  }

  // Synchronous copies between two pinned buffers via the device.
  for (int i = 0; i < n; ++i) hPortable[i] = 0xDEAD0000u + static_cast<unsigned>(i % 65536);
  CHECK(cudaMemcpy(dIn, hPortable, n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(hOut, dIn, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) check.eq("roundtrip", i, hPortable[i], hOut[i]);

  // cudaHostGetFlags reports how the buffer was allocated.
  unsigned flags = 0xFFFFFFFFu;
  CHECK(cudaHostGetFlags(&flags, hPortable));
  check.expect((flags & cudaHostAllocPortable) != 0, "cudaHostGetFlags reports Portable");

  std::printf("pinned_memory: %d rounds of %d elements\n", rounds, n);
  CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeHost(hIn));
  CHECK(cudaFreeHost(hOut));
  CHECK(cudaFreeHost(hPortable));
  return check.finish();
}
