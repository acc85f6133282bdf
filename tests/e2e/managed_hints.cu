// Managed memory hints and stream-level driver features through cudart: a __managed__ variable
// shared by host and kernels, cudaMemAdvise / cudaMemPrefetchAsync answered back by
// cudaMemRangeGetAttribute(s), stream attributes, and the driver's stream memory operations
// (cuStreamWriteValue32 / cuStreamWaitValue32 through cudaGetDriverEntryPointByVersion) ordering
// a kernel after a value the host sets.
#include <cuda.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "e2e_check.h"

__managed__ int gCounter = 7;

__global__ void addCounter(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += gCounter;
}

__global__ void copyFlag(const unsigned* flag, unsigned* out) { *out = *flag * 2; }

static void managedVariableAndHints(Checker& check) {
  const int n = 4096;
  int* data = nullptr;
  CHECK(cudaMallocManaged(&data, n * sizeof(int)));
  for (int i = 0; i < n; ++i) data[i] = i;
  gCounter = 100;  // the host writes the __managed__ variable; the kernel reads it
  addCounter<<<n / 256, 256>>>(data, n);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i) check.eq("data + managed counter", i, i + 100, data[i]);

  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaMemLocation onDevice{cudaMemLocationTypeDevice, device};
  CHECK(cudaMemAdvise(data, n * sizeof(int), cudaMemAdviseSetReadMostly, onDevice));
  CHECK(cudaMemAdvise(data, n * sizeof(int) / 2, cudaMemAdviseSetPreferredLocation, onDevice));
  int readMostly = -1, preferredWhole = -1, preferredHalf = -1;
  CHECK(cudaMemRangeGetAttribute(&readMostly, 4, cudaMemRangeAttributeReadMostly, data,
                                 n * sizeof(int)));
  CHECK(cudaMemRangeGetAttribute(&preferredWhole, 4, cudaMemRangeAttributePreferredLocation, data,
                                 n * sizeof(int)));
  CHECK(cudaMemRangeGetAttribute(&preferredHalf, 4, cudaMemRangeAttributePreferredLocation, data,
                                 n * sizeof(int) / 2));
  check.eq("read mostly", 0, 1, readMostly);
  check.eq("preferred location of the whole range", 0, static_cast<int>(cudaInvalidDeviceId),
           preferredWhole);
  check.eq("preferred location of the first half", 0, device, preferredHalf);

  cudaMemLocation onHost{cudaMemLocationTypeHost, 0};
  CHECK(cudaMemPrefetchAsync(data, n * sizeof(int), onHost, 0, 0));
  CHECK(cudaStreamSynchronize(0));
  int last = -5;
  CHECK(cudaMemRangeGetAttribute(&last, 4, cudaMemRangeAttributeLastPrefetchLocation, data,
                                 n * sizeof(int)));
  check.eq("last prefetch location", 0, static_cast<int>(cudaCpuDeviceId), last);
  CHECK(cudaFree(data));

  // The __managed__ variable is managed memory to every API that takes managed memory.
  cudaPointerAttributes attributes{};
  CHECK(cudaPointerGetAttributes(&attributes, &gCounter));
  check.eq("__managed__ variable's memory type", 0, static_cast<int>(cudaMemoryTypeManaged),
           static_cast<int>(attributes.type));
  check.expect(attributes.hostPointer == &gCounter, "__managed__ variable's host pointer");
  CHECK(cudaMemAdvise(&gCounter, sizeof(int), cudaMemAdviseSetReadMostly, onDevice));
  readMostly = -1;
  CHECK(cudaMemRangeGetAttribute(&readMostly, 4, cudaMemRangeAttributeReadMostly, &gCounter,
                                 sizeof(int)));
  check.eq("__managed__ variable read mostly", 0, 1, readMostly);
  CHECK(cudaMemPrefetchAsync(&gCounter, sizeof(int), onDevice, 0, 0));
  CHECK(cudaStreamAttachMemAsync(0, &gCounter, 0, cudaMemAttachGlobal));
  CHECK(cudaStreamSynchronize(0));
  // It belongs to its module: freeing it is an error, and it stays usable.
  check.expect(cudaFree(&gCounter) == cudaErrorInvalidValue, "cudaFree of a __managed__ variable");
  cudaGetLastError();
  gCounter = 3;
  CHECK(cudaMallocManaged(&data, sizeof(int)));
  data[0] = 1;
  addCounter<<<1, 32>>>(data, 1);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  check.eq("__managed__ variable after the hints", 0, 4, data[0]);
  CHECK(cudaFree(data));
}

static void streamAttributesAndMemoryOperations(Checker& check) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaStreamAttrValue value{};
  value.syncPolicy = cudaSyncPolicySpin;
  CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &value));
  cudaStreamAttrValue back{};
  CHECK(cudaStreamGetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &back));
  check.eq("synchronization policy", 0, static_cast<int>(cudaSyncPolicySpin),
           static_cast<int>(back.syncPolicy));

  using MemOp = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned);
  auto waitValue = driverEntry<MemOp>("cuStreamWaitValue32");
  auto writeValue = driverEntry<MemOp>("cuStreamWriteValue32");
  unsigned* words = nullptr;  // [0] gate, [1] value, [2] kernel output
  CHECK(cudaMallocHost(&words, 4 * sizeof(unsigned)));
  words[0] = words[1] = words[2] = 0;
  auto at = [&](int i) { return reinterpret_cast<CUdeviceptr>(&words[i]); };
  if (waitValue(stream, at(0), 1, CU_STREAM_WAIT_VALUE_EQ) != CUDA_SUCCESS ||
      writeValue(stream, at(1), 21, 0) != CUDA_SUCCESS) {
    std::fprintf(stderr, "stream memory operation refused\n");
    std::exit(2);
  }
  copyFlag<<<1, 1, 0, stream>>>(&words[1], &words[2]);
  CHECK_LAUNCH();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  check.expect(cudaStreamQuery(stream) == cudaErrorNotReady, "work waits for the gate");
  check.eq("kernel has not run", 0, 0u, reinterpret_cast<std::atomic<unsigned>*>(&words[2])->load());
  reinterpret_cast<std::atomic<unsigned>*>(&words[0])->store(1);  // open the gate
  CHECK(cudaStreamSynchronize(stream));
  check.eq("kernel after the written value", 0, 42u, words[2]);
  CHECK(cudaFreeHost(words));
  CHECK(cudaStreamDestroy(stream));
}

int main() {
  Checker check("managed_hints");
  managedVariableAndHints(check);
  streamAttributesAndMemoryOperations(check);
  std::printf("managed_hints: __managed__ variable, advice and prefetch queries, stream "
              "attributes, stream memory operations\n");
  return check.finish();
}
