// Device malloc and free: blocks a kernel allocates, fills and frees, blocks kept from one kernel
// to the next, and the heap's limit (cudaLimitMallocHeapSize): past it malloc returns NULL, as
// NVIDIA documents, and freed blocks make room again. Checked against host arithmetic.
#include <vector>

#include "e2e_check.h"

// Each thread allocates `ints` ints, fills them, sums them and frees them.
__global__ void allocateFillFree(int* sums, int ints) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int* block = static_cast<int*>(malloc(ints * sizeof(int)));
  if (block == nullptr) {
    sums[t] = -1;
    return;
  }
  for (int i = 0; i < ints; ++i) block[i] = t + i;
  int sum = 0;
  for (int i = 0; i < ints; ++i) sum += block[i];
  free(block);
  sums[t] = sum;
}

// Each thread tries to keep `bytes`; the pointers stay for the next kernel.
__global__ void keep(void** kept, size_t bytes) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  kept[t] = malloc(bytes);
  if (kept[t] != nullptr) *static_cast<int*>(kept[t]) = t;
}

// Checks and frees what keep() got; counts the blocks it had.
__global__ void checkAndRelease(void** kept, int* held, int* wrong) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (kept[t] == nullptr) return;
  atomicAdd(held, 1);
  if (*static_cast<int*>(kept[t]) != t) atomicAdd(wrong, 1);
  free(kept[t]);
}

int main() {
  Checker check("device_malloc");
  // The limit is set before any kernel that uses malloc runs (it cannot change afterwards).
  const size_t heap = size_t(1) << 20;
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap));
  size_t got = 0;
  CHECK(cudaDeviceGetLimit(&got, cudaLimitMallocHeapSize));
  check.eq("heap limit", 0, heap, got);

  const int threads = 256, ints = 100;
  int* sums = nullptr;
  CHECK(cudaMalloc(&sums, threads * sizeof(int)));
  allocateFillFree<<<2, threads / 2>>>(sums, ints);
  CHECK_LAUNCH();
  std::vector<int> s = download(sums, threads);
  for (int t = 0; t < threads; ++t) check.eq("sum", t, t * ints + ints * (ints - 1) / 2, s[t]);

  // 1024 blocks of 4 KiB cannot all fit a 1 MiB heap: some malloc calls return NULL.
  const int keepers = 1024;
  void** kept = nullptr;
  int *held = nullptr, *wrong = nullptr;
  CHECK(cudaMalloc(&kept, keepers * sizeof(void*)));
  CHECK(cudaMalloc(&held, sizeof(int)));
  CHECK(cudaMalloc(&wrong, sizeof(int)));
  for (int round = 0; round < 2; ++round) {  // the second round finds the first's blocks freed
    CHECK(cudaMemset(held, 0, sizeof(int)));
    CHECK(cudaMemset(wrong, 0, sizeof(int)));
    keep<<<keepers / 128, 128>>>(kept, 4096);
    CHECK_LAUNCH();
    checkAndRelease<<<keepers / 128, 128>>>(kept, held, wrong);
    CHECK_LAUNCH();
    int h = download(held, 1)[0];
    check.expect(h > 0 && h <= static_cast<int>(heap / 4096),
                 "some but at most heap/4096 blocks of 4 KiB were allocated");
    check.eq("blocks holding what their thread wrote", round, 0, download(wrong, 1)[0]);
  }
  // One block larger than the whole heap: NULL.
  keep<<<1, 1>>>(kept, size_t(64) << 20);
  CHECK_LAUNCH();
  check.expect(download(kept, 1)[0] == nullptr, "a 64 MiB block from a 1 MiB heap is NULL");

  CHECK(cudaFree(sums));
  CHECK(cudaFree(held));
  CHECK(cudaFree(wrong));

  // Blocks a kernel never frees fill the heap until the device is reset, which frees them.
  keep<<<keepers / 128, 128>>>(kept, 4096);
  CHECK_LAUNCH();
  CHECK(cudaDeviceReset());
  CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap));
  CHECK(cudaMalloc(&kept, keepers * sizeof(void*)));
  keep<<<keepers / 128, 128>>>(kept, 4096);
  CHECK_LAUNCH();
  std::vector<void*> after = download(kept, keepers);
  int allocated = 0;
  for (void* p : after) allocated += p != nullptr;
  check.expect(allocated > 0 && allocated <= static_cast<int>(heap / 4096),
               "after a reset the heap is empty again");
  CHECK(cudaFree(kept));
  return check.finish();
}
