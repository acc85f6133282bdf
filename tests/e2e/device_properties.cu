// Device enumeration and properties: count, name, limits, attributes agree with the property
// struct, device selection, driver/runtime versions, memory info; plus a tiny kernel that
// reports its launch shape and warpSize.
#include <cstring>

#include "e2e_check.h"

__global__ void shape(int* out) {
  if (blockIdx.x == 1 && threadIdx.x == 3) {
    out[0] = gridDim.x;
    out[1] = blockDim.x;
    out[2] = warpSize;
  }
}

int main() {
  Checker check("device_properties");
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  check.expect(count >= 1, "cudaGetDeviceCount >= 1");
  CHECK(cudaSetDevice(0));
  int current = -1;
  CHECK(cudaGetDevice(&current));
  check.eq("cudaGetDevice", 0, 0, current);

  cudaDeviceProp prop;
  std::memset(&prop, 0, sizeof prop);
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device 0: \"%s\", compute capability %d.%d, %d multiprocessors, %.1f MiB\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount,
              static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0));
  check.expect(std::strlen(prop.name) > 0, "name is non-empty");
  check.eq("warpSize", 0, 32, prop.warpSize);
  check.eq("maxThreadsPerBlock", 0, 1024, prop.maxThreadsPerBlock);
  check.eq("maxThreadsDim.x", 0, 1024, prop.maxThreadsDim[0]);
  check.eq("maxThreadsDim.y", 0, 1024, prop.maxThreadsDim[1]);
  check.eq("maxThreadsDim.z", 0, 64, prop.maxThreadsDim[2]);
  check.expect(prop.maxGridSize[0] >= 2147483647, "maxGridSize.x >= 2^31-1");
  check.expect(prop.maxGridSize[1] >= 65535, "maxGridSize.y >= 65535");
  check.expect(prop.maxGridSize[2] >= 65535, "maxGridSize.z >= 65535");
  check.expect(prop.multiProcessorCount >= 1, "multiProcessorCount >= 1");
  check.expect(prop.totalGlobalMem > 0, "totalGlobalMem > 0");
  check.expect(prop.sharedMemPerBlock >= 48 * 1024, "sharedMemPerBlock >= 48 KiB");
  check.expect(prop.major >= 7, "compute capability major >= 7");
  check.expect(prop.minor >= 0 && prop.minor <= 9, "compute capability minor in 0..9");

  // Texture and surface limits, stream-ordered allocation and host registration: every
  // device that runs this suite offers them.
  check.expect(prop.maxTexture1D > 0 && prop.maxTexture2D[0] > 0 && prop.maxTexture2D[1] > 0,
               "texture limits are reported");
  check.expect(prop.maxTexture3D[2] > 0 && prop.maxTexture2DLayered[2] > 0,
               "3D and layered texture limits are reported");
  check.expect(prop.maxSurface2D[0] > 0 && prop.maxSurface2D[1] > 0, "surface limits");
  check.eq("memoryPoolsSupported", 0, 1, prop.memoryPoolsSupported);
  check.eq("hostRegisterSupported", 0, 1, prop.hostRegisterSupported);

  // Attributes must agree with the property struct.
  struct {
    cudaDeviceAttr attr;
    int expected;
    const char* name;
  } attrs[] = {
      {cudaDevAttrWarpSize, prop.warpSize, "cudaDevAttrWarpSize"},
      {cudaDevAttrMaxThreadsPerBlock, prop.maxThreadsPerBlock, "cudaDevAttrMaxThreadsPerBlock"},
      {cudaDevAttrMultiProcessorCount, prop.multiProcessorCount, "cudaDevAttrMultiProcessorCount"},
      {cudaDevAttrComputeCapabilityMajor, prop.major, "cudaDevAttrComputeCapabilityMajor"},
      {cudaDevAttrComputeCapabilityMinor, prop.minor, "cudaDevAttrComputeCapabilityMinor"},
      {cudaDevAttrMaxBlockDimX, prop.maxThreadsDim[0], "cudaDevAttrMaxBlockDimX"},
      {cudaDevAttrMaxBlockDimZ, prop.maxThreadsDim[2], "cudaDevAttrMaxBlockDimZ"},
      {cudaDevAttrMaxGridDimX, prop.maxGridSize[0], "cudaDevAttrMaxGridDimX"},
      {cudaDevAttrMaxSharedMemoryPerBlock, static_cast<int>(prop.sharedMemPerBlock),
       "cudaDevAttrMaxSharedMemoryPerBlock"},
      {cudaDevAttrMaxTexture2DWidth, prop.maxTexture2D[0], "cudaDevAttrMaxTexture2DWidth"},
      {cudaDevAttrMaxSurface2DLayeredLayers, prop.maxSurface2DLayered[2],
       "cudaDevAttrMaxSurface2DLayeredLayers"},
      {cudaDevAttrMemoryPoolsSupported, prop.memoryPoolsSupported,
       "cudaDevAttrMemoryPoolsSupported"},
  };
  for (const auto& a : attrs) {
    int value = -1;
    CHECK(cudaDeviceGetAttribute(&value, a.attr, 0));
    if (value != a.expected) {
      std::fprintf(stderr, "%s: attribute %d, property %d\n", a.name, value, a.expected);
      check.expect(false, "attribute agrees with cudaDeviceProp");
    }
  }

  // An out-of-range device is an error, not a crash; the error is not sticky.
  int dummy = 0;
  check.eq("cudaDeviceGetAttribute(bad device)", 0, static_cast<int>(cudaErrorInvalidDevice),
           static_cast<int>(cudaDeviceGetAttribute(&dummy, cudaDevAttrWarpSize, count)));
  check.eq("cudaSetDevice(count)", 0, static_cast<int>(cudaErrorInvalidDevice),
           static_cast<int>(cudaSetDevice(count)));
  (void)cudaGetLastError();
  CHECK(cudaGetDevice(&current));
  check.eq("device after failed cudaSetDevice", 0, 0, current);

  int driverVersion = 0, runtimeVersion = 0;
  CHECK(cudaDriverGetVersion(&driverVersion));
  CHECK(cudaRuntimeGetVersion(&runtimeVersion));
  std::printf("driver version %d, runtime version %d\n", driverVersion, runtimeVersion);
  check.expect(driverVersion >= 13000, "cudaDriverGetVersion >= 13000");
  check.expect(runtimeVersion >= 13000, "cudaRuntimeGetVersion >= 13000");

  size_t freeBytes = 0, totalBytes = 0;
  CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  std::printf("memory: %zu free of %zu bytes\n", freeBytes, totalBytes);
  check.expect(totalBytes > 0, "cudaMemGetInfo total > 0");
  check.expect(freeBytes <= totalBytes, "cudaMemGetInfo free <= total");
  // An allocation is gone from the free memory at once, before anything touches it (2 GB, so
  // that other processes' memory moving meanwhile cannot hide it).
  const size_t big = size_t{2} << 30;
  if (freeBytes > 2 * big) {
    void* untouched = nullptr;
    CHECK(cudaMalloc(&untouched, big));
    size_t freeAfter = 0;
    CHECK(cudaMemGetInfo(&freeAfter, &totalBytes));
    check.expect(freeAfter + big / 2 <= freeBytes,
                 "cudaMemGetInfo's free memory drops by an untouched allocation");
    CHECK(cudaFree(untouched));
  }

  int* dOut;
  CHECK(cudaMalloc(&dOut, 3 * sizeof(int)));
  CHECK(cudaMemset(dOut, 0, 3 * sizeof(int)));
  shape<<<5, 96>>>(dOut);
  CHECK_LAUNCH();
  int out[3] = {0, 0, 0};
  CHECK(cudaMemcpy(out, dOut, sizeof out, cudaMemcpyDeviceToHost));
  check.eq("gridDim.x", 0, 5, out[0]);
  check.eq("blockDim.x", 0, 96, out[1]);
  check.eq("warpSize (device)", 0, 32, out[2]);
  CHECK(cudaFree(dOut));
  return check.finish();
}
