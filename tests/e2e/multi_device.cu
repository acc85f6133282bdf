// Several devices in one program (on the CPU device: ROCUDA_DEVICES=cpu,cpu, the test
// e2e.multi_device.two_cpus): an ordinary <<<>>> launch on each device (cudart launches a
// library's kernel, context-independent, in each device's context), each device's identity
// (distinct UUIDs, PCI bus ids that find their device again), and a copy between two devices'
// memories that waits for work still running on the source device (CUDA C++ Programming Guide,
// peer-to-peer memory copy: it "does not start until all commands previously issued to either
// device have completed"), and peer access (a kernel reading and adding to another device's
// memory) where the devices have it. With one device only the first part runs; `--devices N`
// requires N.
#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "e2e_check.h"

__global__ void fill(int* out, int base) { out[threadIdx.x] = base + threadIdx.x; }

// Reads another device's memory directly (peer access) and adds to it atomically.
__global__ void addFromPeer(const int* peer, int* out, int* peerCounter) {
  out[threadIdx.x] = 2 * peer[threadIdx.x];
  atomicAdd(peerCounter, 1);
}

// Thread 0 waits for the host to set `flag`, then the block writes `out`.
__global__ void waitThenFill(volatile int* flag, int* out, int base) {
  if (threadIdx.x == 0)
    while (*flag == 0) {
    }
  __syncthreads();
  out[threadIdx.x] = base + threadIdx.x;
}

// Virtual memory of device 0 mapped once and given to both devices in one cuMemSetAccess (device
// 1 as device 0's peer): a kernel on device 1 writes it, one on device 0 reads it back.
void peerMappedMemory(Checker& check, int n) {
  auto granularityOf =
      driverEntry<CUresult (*)(size_t*, const CUmemAllocationProp*,
                               CUmemAllocationGranularity_flags)>("cuMemGetAllocationGranularity");
  auto create =
      driverEntry<CUresult (*)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                               unsigned long long)>("cuMemCreate");
  auto reserve =
      driverEntry<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
          "cuMemAddressReserve");
  auto map = driverEntry<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                      unsigned long long)>("cuMemMap");
  auto setAccess = driverEntry<CUresult (*)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t)>(
      "cuMemSetAccess");
  auto getAccess =
      driverEntry<CUresult (*)(unsigned long long*, const CUmemLocation*, CUdeviceptr)>(
          "cuMemGetAccess");
  auto unmap = driverEntry<CUresult (*)(CUdeviceptr, size_t)>("cuMemUnmap");
  auto release = driverEntry<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  auto addressFree = driverEntry<CUresult (*)(CUdeviceptr, size_t)>("cuMemAddressFree");
  auto attribute =
      driverEntry<CUresult (*)(int*, CUdevice_attribute, CUdevice)>("cuDeviceGetAttribute");
  int vmm = 0;
  check.eq("cuDeviceGetAttribute", 0, int(CUDA_SUCCESS),
           int(attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0)));
  if (vmm == 0) return;
  CHECK(cudaSetDevice(0));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  size_t granularity = 0;
  check.eq("cuMemGetAllocationGranularity", 0, int(CUDA_SUCCESS),
           int(granularityOf(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)));
  size_t bytes = (n * sizeof(int) + granularity - 1) / granularity * granularity;
  CUmemGenericAllocationHandle handle = 0;
  CUdeviceptr base = 0;
  check.eq("cuMemCreate", 0, int(CUDA_SUCCESS), int(create(&handle, bytes, &prop, 0)));
  check.eq("cuMemAddressReserve", 0, int(CUDA_SUCCESS), int(reserve(&base, bytes, 0, 0, 0)));
  check.eq("cuMemMap", 0, int(CUDA_SUCCESS), int(map(base, bytes, 0, handle, 0)));
  CUmemAccessDesc access[2] = {};
  for (int d = 0; d < 2; ++d) {
    access[d].location = {CU_MEM_LOCATION_TYPE_DEVICE, d};
    access[d].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  check.eq("cuMemSetAccess for both devices", 0, int(CUDA_SUCCESS),
           int(setAccess(base, bytes, access, 2)));
  CUmemLocation peerLocation = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
  unsigned long long flags = 0;
  check.eq("cuMemGetAccess", 0, int(CUDA_SUCCESS), int(getAccess(&flags, &peerLocation, base)));
  check.eq("the peer's access", 0, int(CU_MEM_ACCESS_FLAGS_PROT_READWRITE), int(flags));
  int* shared = reinterpret_cast<int*>(base);
  CHECK(cudaSetDevice(1));
  fill<<<1, n>>>(shared, 500);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaSetDevice(0));
  int* out = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  addFromPeer<<<1, n>>>(shared, out, out);  // doubles what device 1 wrote (out[0] counts too)
  CHECK_LAUNCH();
  std::vector<int> got = download(out, n);
  for (int i = 1; i < n; ++i)
    check.eq("mapped memory written by the peer", i, 2 * (500 + i), got[i]);
  CHECK(cudaFree(out));
  check.eq("cuMemUnmap", 0, int(CUDA_SUCCESS), int(unmap(base, bytes)));
  check.eq("cuMemRelease", 0, int(CUDA_SUCCESS), int(release(handle)));
  check.eq("cuMemAddressFree", 0, int(CUDA_SUCCESS), int(addressFree(base, bytes)));
}

int main(int argc, char** argv) {
  Checker check("multi_device");
  int required = 1;
  if (argc == 3 && std::strcmp(argv[1], "--devices") == 0) required = std::atoi(argv[2]);
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  check.eq("enough devices", 0, 1, count >= required ? 1 : 0);
  constexpr int n = 64;

  std::vector<cudaUUID_t> uuids(count);
  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    int* out = nullptr;
    CHECK(cudaMalloc(&out, n * sizeof(int)));
    fill<<<1, n>>>(out, 100 * (d + 1));
    CHECK_LAUNCH();
    std::vector<int> got = download(out, n);
    for (int i = 0; i < n; ++i)
      check.eq("fill on each device", d * n + i, 100 * (d + 1) + i, got[i]);
    CHECK(cudaFree(out));
    cudaDeviceProp prop{};
    CHECK(cudaGetDeviceProperties(&prop, d));
    uuids[d] = prop.uuid;
    char bus[32] = {};
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, d));
    int found = -1;
    CHECK(cudaDeviceGetByPCIBusId(&found, bus));
    check.eq("device found by its PCI bus id", d, d, found);
    for (int other = 0; other < d; ++other)
      check.eq("distinct UUIDs", d * count + other, 1,
               std::memcmp(&uuids[d], &uuids[other], sizeof(cudaUUID_t)) != 0 ? 1 : 0);
  }

  if (count >= 2) {
    int *source = nullptr, *destination = nullptr;
    int* flag = nullptr;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&source, n * sizeof(int)));
    CHECK(cudaMemset(source, 0, n * sizeof(int)));
    CHECK(cudaHostAlloc(&flag, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&destination, n * sizeof(int)));
    CHECK(cudaDeviceSynchronize());
    const char* names[] = {"cudaMemcpy", "cudaMemcpyAsync (NULL stream)", "cudaMemcpyPeer"};
    for (int variant = 0; variant < 3; ++variant) {
      int base = 1000 * (variant + 1);
      *reinterpret_cast<volatile int*>(flag) = 0;
      CHECK(cudaSetDevice(0));
      waitThenFill<<<1, n>>>(flag, source, base);
      CHECK_LAUNCH();
      std::thread release([flag] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        reinterpret_cast<std::atomic<int>*>(flag)->store(1);
      });
      CHECK(cudaSetDevice(1));
      CHECK(cudaMemset(destination, 0xff, n * sizeof(int)));
      if (variant == 0)
        CHECK(cudaMemcpy(destination, source, n * sizeof(int), cudaMemcpyDefault));
      else if (variant == 1)
        CHECK(cudaMemcpyAsync(destination, source, n * sizeof(int), cudaMemcpyDefault, 0));
      else
        CHECK(cudaMemcpyPeer(destination, 1, source, 0, n * sizeof(int)));
      std::vector<int> got = download(destination, n);
      release.join();
      for (int i = 0; i < n; ++i) check.eq(names[variant], i, base + i, got[i]);
      CHECK(cudaSetDevice(0));
      CHECK(cudaDeviceSynchronize());
    }
    CHECK(cudaFree(source));
    CHECK(cudaFreeHost(flag));
    CHECK(cudaSetDevice(1));
    CHECK(cudaFree(destination));

    // Peer access, where the devices have it (two CPU devices do; GPUs as their link allows):
    // a kernel on device 1 reads device 0's memory and adds to a counter there.
    int canAccess = -1, sameDevice = -1;
    CHECK(cudaDeviceCanAccessPeer(&canAccess, 1, 0));
    CHECK(cudaDeviceCanAccessPeer(&sameDevice, 0, 0));
    check.eq("a device is not its own peer", 0, 0, sameDevice);
    int attribute = -1;
    CHECK(cudaDeviceGetP2PAttribute(&attribute, cudaDevP2PAttrAccessSupported, 1, 0));
    check.eq("P2P access attribute", 0, canAccess, attribute);
    if (canAccess == 1) {
      int *peerData = nullptr, *counter = nullptr, *out = nullptr;
      CHECK(cudaSetDevice(0));
      CHECK(cudaMalloc(&peerData, n * sizeof(int)));
      CHECK(cudaMalloc(&counter, sizeof(int)));
      fill<<<1, n>>>(peerData, 7);
      CHECK_LAUNCH();
      CHECK(cudaMemset(counter, 0, sizeof(int)));
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaSetDevice(1));
      CHECK(cudaMalloc(&out, n * sizeof(int)));
      CHECK(cudaDeviceEnablePeerAccess(0, 0));
      check.eq("enabling twice", 0, int(cudaErrorPeerAccessAlreadyEnabled),
               int(cudaDeviceEnablePeerAccess(0, 0)));
      cudaGetLastError();
      addFromPeer<<<1, n>>>(peerData, out, counter);
      CHECK_LAUNCH();
      std::vector<int> got = download(out, n);
      for (int i = 0; i < n; ++i)
        check.eq("kernel reading a peer's memory", i, 2 * (7 + i), got[i]);
      int total = 0;
      CHECK(cudaMemcpy(&total, counter, sizeof total, cudaMemcpyDefault));
      check.eq("atomics on a peer's memory", 0, n, total);
      CHECK(cudaDeviceDisablePeerAccess(0));
      check.eq("disabling twice", 0, int(cudaErrorPeerAccessNotEnabled),
               int(cudaDeviceDisablePeerAccess(0)));
      cudaGetLastError();
      CHECK(cudaFree(out));
      // A device reset forgets the peers its context enabled: enabling again succeeds.
      CHECK(cudaDeviceEnablePeerAccess(0, 0));
      CHECK(cudaDeviceReset());
      CHECK(cudaSetDevice(1));
      CHECK(cudaDeviceEnablePeerAccess(0, 0));
      peerMappedMemory(check, n);
      CHECK(cudaSetDevice(1));
      CHECK(cudaDeviceDisablePeerAccess(0));
      CHECK(cudaSetDevice(0));
      CHECK(cudaFree(peerData));
      CHECK(cudaFree(counter));
    }
  }
  return check.finish();
}
