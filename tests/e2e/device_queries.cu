// What device code asks of the driver through the device runtime library (relocatable device
// code linked with libcudadevrt): cudaGetDevice, cudaGetDeviceCount, cudaDeviceGetAttribute,
// cudaDeviceGetLimit, cudaDeviceGetCacheConfig, cudaFuncGetAttributes and
// cudaOccupancyMaxActiveBlocksPerMultiprocessor called in a kernel answer what the same calls
// answer on the host, limits set by the host included; an unknown attribute or device fails.
#include <vector>

#include "e2e_check.h"

// The kernel whose attributes and occupancy are asked for (shared memory and a block size
// bound, so that its answers are not the device's defaults).
__global__ void __launch_bounds__(256) target(float* out) {
  __shared__ float tile[300];
  tile[threadIdx.x % 300] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % 300];
}

__constant__ cudaDeviceAttr kDeviceAttributes[] = {cudaDevAttrMultiProcessorCount,
                                                   cudaDevAttrMaxThreadsPerBlock,
                                                   cudaDevAttrWarpSize,
                                                   cudaDevAttrMaxSharedMemoryPerBlock,
                                                   cudaDevAttrComputeCapabilityMajor,
                                                   cudaDevAttrComputeCapabilityMinor,
                                                   cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                                   cudaDevAttrMaxBlockDimX,
                                                   cudaDevAttrMaxGridDimY,
                                                   cudaDevAttrL2CacheSize};
constexpr int kAttributeCount = sizeof(kDeviceAttributes) / sizeof(kDeviceAttributes[0]);

// Slot layout of the answers.
enum Slot {
  kDevice,
  kDeviceCount,
  kStackLimit,
  kHeapLimit,
  kPrintfLimit,
  kCacheConfig,
  kSharedSize,
  kMaxThreads,
  kPtxVersion,
  kOccupancy,
  kUnknownAttribute,
  kUnknownDevice,
  kErrors,
  kAttributeValues,
  kSlots = kAttributeValues + kAttributeCount
};

__global__ void ask(long long* answers) {
  int errors = 0;
  int device = -1, count = -1;
  errors += cudaGetDevice(&device) != cudaSuccess;
  errors += cudaGetDeviceCount(&count) != cudaSuccess;
  answers[kDevice] = device;
  answers[kDeviceCount] = count;
  for (int i = 0; i < kAttributeCount; ++i) {
    int value = -1;
    errors += cudaDeviceGetAttribute(&value, kDeviceAttributes[i], device) != cudaSuccess;
    answers[kAttributeValues + i] = value;
  }
  size_t stack = 0, heap = 0, fifo = 0;
  errors += cudaDeviceGetLimit(&stack, cudaLimitStackSize) != cudaSuccess;
  errors += cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize) != cudaSuccess;
  errors += cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize) != cudaSuccess;
  answers[kStackLimit] = static_cast<long long>(stack);
  answers[kHeapLimit] = static_cast<long long>(heap);
  answers[kPrintfLimit] = static_cast<long long>(fifo);
  cudaFuncCache cache = cudaFuncCachePreferEqual;
  errors += cudaDeviceGetCacheConfig(&cache) != cudaSuccess;
  answers[kCacheConfig] = cache;
  cudaFuncAttributes attributes{};
  errors += cudaFuncGetAttributes(&attributes, target) != cudaSuccess;
  answers[kSharedSize] = static_cast<long long>(attributes.sharedSizeBytes);
  answers[kMaxThreads] = attributes.maxThreadsPerBlock;
  answers[kPtxVersion] = attributes.ptxVersion;
  int blocks = -1;
  errors += cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, target, 128, 0) != cudaSuccess;
  answers[kOccupancy] = blocks;
  int unused = 0;
  answers[kUnknownAttribute] =
      cudaDeviceGetAttribute(&unused, static_cast<cudaDeviceAttr>(100000), device);
  answers[kUnknownDevice] = cudaDeviceGetAttribute(&unused, cudaDevAttrWarpSize, count + 5);
  answers[kErrors] = errors;
}

int main() {
  Checker check("device_queries");
  CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16 << 20));
  CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
  long long* answers = nullptr;
  CHECK(cudaMalloc(&answers, kSlots * sizeof(long long)));
  ask<<<1, 1>>>(answers);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  std::vector<long long> got = download(answers, kSlots);

  int device = -1, count = -1;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaGetDeviceCount(&count));
  check.eq("errors", 0, 0LL, got[kErrors]);
  check.eq("device", 0, static_cast<long long>(device), got[kDevice]);
  check.eq("device count", 0, static_cast<long long>(count), got[kDeviceCount]);
  cudaDeviceAttr attributeList[kAttributeCount];
  CHECK(cudaMemcpyFromSymbol(attributeList, kDeviceAttributes, sizeof attributeList));
  for (int i = 0; i < kAttributeCount; ++i) {
    int value = -1;
    CHECK(cudaDeviceGetAttribute(&value, attributeList[i], device));
    check.eq("attribute", attributeList[i], static_cast<long long>(value),
             got[kAttributeValues + i]);
  }
  size_t stack = 0, heap = 0, fifo = 0;
  CHECK(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  CHECK(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  CHECK(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
  check.eq("stack limit", 0, 4096LL, got[kStackLimit]);
  check.eq("stack limit (host)", 0, static_cast<long long>(stack), got[kStackLimit]);
  check.eq("heap limit", 0, static_cast<long long>(heap), got[kHeapLimit]);
  check.eq("printf limit", 0, static_cast<long long>(fifo), got[kPrintfLimit]);
  cudaFuncCache cache{};
  CHECK(cudaDeviceGetCacheConfig(&cache));
  check.eq("cache config", 0, static_cast<long long>(cache), got[kCacheConfig]);
  cudaFuncAttributes attributes{};
  CHECK(cudaFuncGetAttributes(&attributes, target));
  check.eq("sharedSizeBytes", 0, static_cast<long long>(attributes.sharedSizeBytes),
           got[kSharedSize]);
  check.eq("sharedSizeBytes >= 1200", 0, 1LL, got[kSharedSize] >= 1200 ? 1LL : 0LL);
  check.eq("maxThreadsPerBlock", 0, static_cast<long long>(attributes.maxThreadsPerBlock),
           got[kMaxThreads]);
  check.eq("ptxVersion", 0, static_cast<long long>(attributes.ptxVersion), got[kPtxVersion]);
  int blocks = -1;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, target, 128, 0));
  check.eq("occupancy", 0, static_cast<long long>(blocks), got[kOccupancy]);
  check.expect(got[kUnknownAttribute] != cudaSuccess, "an unknown attribute fails");
  check.expect(got[kUnknownDevice] != cudaSuccess, "an unknown device fails");
  CHECK(cudaFree(answers));
  return check.finish();
}
