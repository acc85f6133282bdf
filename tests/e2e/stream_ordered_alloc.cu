// Stream-ordered allocation: cudaMallocAsync / cudaFreeAsync on several streams, the device's
// default pool and its attributes, a created pool with cudaMallocFromPoolAsync.
#include <vector>

#include "e2e_check.h"

__global__ void iota(int* out, int n, int base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = base + i;
}

__global__ void addInto(int* out, const int* a, const int* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

int main() {
  Checker check("stream_ordered_alloc");
  const int n = 50000;
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));

  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  cudaMemPool_t current;
  CHECK(cudaDeviceGetMemPool(&current, 0));
  check.expect(pool == current, "the default pool is the current pool");
  unsigned long long threshold = 1 << 20;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  unsigned long long readBack = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &readBack));
  check.eq("release threshold", 0, threshold, readBack);

  int *a, *b, *sum;
  CHECK(cudaMallocAsync(&a, n * sizeof(int), s1));
  CHECK(cudaMallocAsync(&b, n * sizeof(int), s2));
  iota<<<(n + 255) / 256, 256, 0, s1>>>(a, n, 1000);
  iota<<<(n + 255) / 256, 256, 0, s2>>>(b, n, -7);
  unsigned long long used = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  check.expect(used >= 2ull * n * sizeof(int), "the pool counts both allocations");

  cudaEvent_t bReady;
  CHECK(cudaEventCreate(&bReady));
  CHECK(cudaEventRecord(bReady, s2));
  CHECK(cudaStreamWaitEvent(s1, bReady, 0));
  CHECK(cudaMallocAsync(&sum, n * sizeof(int), s1));
  addInto<<<(n + 255) / 256, 256, 0, s1>>>(sum, a, b, n);
  CHECK_LAUNCH();
  CHECK(cudaFreeAsync(a, s1));
  CHECK(cudaFreeAsync(b, s1));  // after the kernel that reads it, in s1's order
  std::vector<int> host(n);
  CHECK(cudaMemcpyAsync(host.data(), sum, n * sizeof(int), cudaMemcpyDeviceToHost, s1));
  CHECK(cudaFreeAsync(sum, s1));
  CHECK(cudaStreamSynchronize(s1));
  for (int i = 0; i < n; ++i) check.eq("sum", i, 1000 + i + (-7 + i), host[i]);
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  check.eq("pool empty after the frees", 0, 0ull, used);
  unsigned long long high = 0;
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high));
  check.expect(high >= 3ull * n * sizeof(int), "high-water mark saw all three allocations");
  CHECK(cudaMemPoolTrimTo(pool, 0));

  // With a release threshold, freed memory stays reserved by the pool across synchronisations,
  // for the next allocations, until it is trimmed.
  unsigned long long keepAll = ~0ull, reserved = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keepAll));
  int* kept;
  CHECK(cudaMallocAsync(&kept, 1 << 20, s1));
  CHECK(cudaFreeAsync(kept, s1));
  CHECK(cudaStreamSynchronize(s1));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  check.expect(reserved >= (1u << 20), "freed memory stays reserved under the threshold");
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  check.eq("nothing in use", 0, 0ull, used);
  CHECK(cudaMemPoolTrimTo(pool, 0));
  CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  check.eq("trimmed to nothing", 0, 0ull, reserved);
  unsigned long long releaseAll = 0;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &releaseAll));

  // A pool of our own.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t own;
  CHECK(cudaMemPoolCreate(&own, &props));
  int* c;
  CHECK(cudaMallocFromPoolAsync(&c, n * sizeof(int), own, s2));
  iota<<<(n + 255) / 256, 256, 0, s2>>>(c, n, 5);
  CHECK(cudaMemcpyAsync(host.data(), c, n * sizeof(int), cudaMemcpyDeviceToHost, s2));
  CHECK(cudaFreeAsync(c, s2));
  CHECK(cudaStreamSynchronize(s2));
  for (int i = 0; i < n; i += 97) check.eq("own pool", i, 5 + i, host[i]);
  CHECK(cudaMemPoolDestroy(own));

  // A pool of page-locked host memory (CUDA 12.2's host pools): the device may use it once
  // granted, the host reads the kernel's results in place after the stream's work.
  int hostPools = 0;
  CHECK(cudaDeviceGetAttribute(&hostPools, cudaDevAttrHostMemoryPoolsSupported, 0));
  if (hostPools != 0) {
    cudaMemPoolProps hostProps = {};
    hostProps.allocType = cudaMemAllocationTypePinned;
    hostProps.location.type = cudaMemLocationTypeHost;
    cudaMemPool_t hostPool;
    CHECK(cudaMemPoolCreate(&hostPool, &hostProps));
    cudaMemAccessDesc access = {};
    access.location.type = cudaMemLocationTypeDevice;
    access.location.id = 0;
    access.flags = cudaMemAccessFlagsProtReadWrite;
    CHECK(cudaMemPoolSetAccess(hostPool, &access, 1));
    int* inHost;
    CHECK(cudaMallocFromPoolAsync(&inHost, n * sizeof(int), hostPool, s2));
    iota<<<(n + 255) / 256, 256, 0, s2>>>(inHost, n, 11);
    CHECK(cudaStreamSynchronize(s2));
    cudaPointerAttributes attributes;
    CHECK(cudaPointerGetAttributes(&attributes, inHost));
    check.expect(attributes.type == cudaMemoryTypeHost, "a host pool's memory is host memory");
    for (int i = 0; i < n; i += 97) check.eq("host pool", i, 11 + i, inHost[i]);
    CHECK(cudaFreeAsync(inHost, s2));
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaMemPoolDestroy(hostPool));
  }

  // Freeing something that is not an allocation is refused.
  int notDevice = 0;
  check.expect(cudaFreeAsync(&notDevice, s1) != cudaSuccess, "cudaFreeAsync of a host pointer fails");
  (void)cudaGetLastError();

  CHECK(cudaEventDestroy(bReady));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
  std::printf("stream_ordered_alloc: %d ints through the default and a created pool\n", n);
  return check.finish();
}
