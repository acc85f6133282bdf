// Managed memory and pointer queries: cudaMallocManaged memory written by the host, updated by
// kernels and read back by the host directly after cudaDeviceSynchronize; cudaPointerGetAttributes
// classifies managed, device, pinned host and ordinary host pointers.
#include <vector>

#include "e2e_check.h"

__global__ void increment(int* data, int n, int by) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += by * (i % 5);
}

static void expectType(Checker& check, const char* what, const void* p, cudaMemoryType want) {
  cudaPointerAttributes attr;
  CHECK(cudaPointerGetAttributes(&attr, p));
  if (attr.type != want)
    std::fprintf(stderr, "%s: cudaPointerGetAttributes type %d, expected %d\n", what,
                 static_cast<int>(attr.type), static_cast<int>(want));
  check.expect(attr.type == want, what);
}

int main() {
  Checker check("managed_memory");
  const int n = 1 << 18;
  int* managed = nullptr;
  CHECK(cudaMallocManaged(&managed, n * sizeof(int)));
  for (int i = 0; i < n; ++i) managed[i] = i;  // host writes managed memory directly
  increment<<<(n + 255) / 256, 256>>>(managed, n, 2);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i) check.eq("after first kernel", i, i + 2 * (i % 5), managed[i]);
  for (int i = 0; i < n; i += 2) managed[i] = -i;  // host updates half, device sees it
  increment<<<(n + 255) / 256, 256>>>(managed, n, 1);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i) {
    int before = (i % 2 == 0) ? -i : i + 2 * (i % 5);
    check.eq("after second kernel", i, before + (i % 5), managed[i]);
  }

  // Managed memory works with cudaMemcpy too.
  std::vector<int> copy(n);
  CHECK(cudaMemcpy(copy.data(), managed, n * sizeof(int), cudaMemcpyDefault));
  for (int i = 0; i < n; i += 1021) check.eq("cudaMemcpy from managed", i, managed[i], copy[i]);

  int* device = nullptr;
  int* pinned = nullptr;
  CHECK(cudaMalloc(&device, 64));
  CHECK(cudaMallocHost(&pinned, 64));
  std::vector<int> pageable(16);
  expectType(check, "managed pointer is cudaMemoryTypeManaged", managed, cudaMemoryTypeManaged);
  expectType(check, "cudaMalloc pointer is cudaMemoryTypeDevice", device, cudaMemoryTypeDevice);
  expectType(check, "cudaMallocHost pointer is cudaMemoryTypeHost", pinned, cudaMemoryTypeHost);
  expectType(check, "malloc pointer is cudaMemoryTypeUnregistered", pageable.data(),
             cudaMemoryTypeUnregistered);

  std::printf("managed_memory: %d managed ints, two kernels, pointer attributes\n", n);
  CHECK(cudaFree(managed));
  CHECK(cudaFree(device));
  CHECK(cudaFreeHost(pinned));
  return check.finish();
}
