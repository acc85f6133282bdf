// Per-thread local arrays with data-dependent indexing (kept in .local memory), a per-thread
// insertion sort, and a kernel using 48 KiB of dynamic shared memory (extern __shared__ sized by
// the launch's third parameter) to reverse blocks of data.
#include <vector>

#include "e2e_check.h"

constexpr int kLocal = 64;
constexpr int kSort = 24;

__global__ void localArrays(const int* in, int* scattered, int* sorted, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int local[kLocal];
  int seed = in[i];
  for (int k = 0; k < kLocal; ++k) local[k] = seed * (k + 1) - k * k;
  // Data-dependent indices: the compiler cannot keep the array in registers.
  int acc = 0;
  for (int k = 0; k < kLocal; ++k) {
    int idx = (seed + k * 13) & (kLocal - 1);
    local[idx] += k;
    acc += local[(idx * 7 + 3) & (kLocal - 1)];
  }
  scattered[i] = acc;

  int keys[kSort];
  for (int k = 0; k < kSort; ++k) keys[k] = (seed * (k + 3) + k * 1000003) % 997;
  for (int k = 1; k < kSort; ++k) {
    int key = keys[k], j = k - 1;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      --j;
    }
    keys[j + 1] = key;
  }
  unsigned checksum = 0;  // unsigned: wraps without overflow
  for (int k = 0; k < kSort; ++k) checksum = checksum * 31u + static_cast<unsigned>(keys[k]);
  sorted[i] = static_cast<int>(checksum + static_cast<unsigned>(keys[seed & 15]));
}

__global__ void reverseBlocks(const int* in, int* out, int perBlock) {
  extern __shared__ int staging[];
  const int* src = in + static_cast<size_t>(blockIdx.x) * perBlock;
  for (int k = threadIdx.x; k < perBlock; k += blockDim.x) staging[k] = src[k];
  __syncthreads();
  int* dst = out + static_cast<size_t>(blockIdx.x) * perBlock;
  for (int k = threadIdx.x; k < perBlock; k += blockDim.x) dst[k] = staging[perBlock - 1 - k];
}

static void hostLocal(int seed, int& scattered, int& sorted) {
  int local[kLocal];
  for (int k = 0; k < kLocal; ++k) local[k] = seed * (k + 1) - k * k;
  int acc = 0;
  for (int k = 0; k < kLocal; ++k) {
    int idx = (seed + k * 13) & (kLocal - 1);
    local[idx] += k;
    acc += local[(idx * 7 + 3) & (kLocal - 1)];
  }
  scattered = acc;
  int keys[kSort];
  for (int k = 0; k < kSort; ++k) keys[k] = (seed * (k + 3) + k * 1000003) % 997;
  for (int k = 1; k < kSort; ++k) {
    int key = keys[k], j = k - 1;
    while (j >= 0 && keys[j] > key) {
      keys[j + 1] = keys[j];
      --j;
    }
    keys[j + 1] = key;
  }
  unsigned checksum = 0;  // unsigned: wraps without overflow
  for (int k = 0; k < kSort; ++k) checksum = checksum * 31u + static_cast<unsigned>(keys[k]);
  sorted = static_cast<int>(checksum + static_cast<unsigned>(keys[seed & 15]));
}

int main() {
  Checker check("local_memory");
  const int n = 1 << 15;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = (i * 37) % 5003;  // small: no overflow in the arithmetic
  int *dIn, *dScattered, *dSorted;
  CHECK(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK(cudaMalloc(&dScattered, n * sizeof(int)));
  CHECK(cudaMalloc(&dSorted, n * sizeof(int)));
  CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  localArrays<<<n / 128, 128>>>(dIn, dScattered, dSorted, n);
  CHECK_LAUNCH();
  std::vector<int> scattered(n), sorted(n);
  CHECK(cudaMemcpy(scattered.data(), dScattered, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sorted.data(), dSorted, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    int s, t;
    hostLocal(in[i], s, t);
    check.eq("scattered local array", i, s, scattered[i]);
    check.eq("sorted local array", i, t, sorted[i]);
  }

  // 48 KiB of dynamic shared memory per block: the default per-block limit without opt-in.
  const int perBlock = 48 * 1024 / sizeof(int);
  const int blocks = 24;
  const int total = perBlock * blocks;
  std::vector<int> data(total);
  for (int i = 0; i < total; ++i) data[i] = i ^ 0x5A5A;
  int *dData, *dRev;
  CHECK(cudaMalloc(&dData, total * sizeof(int)));
  CHECK(cudaMalloc(&dRev, total * sizeof(int)));
  CHECK(cudaMemcpy(dData, data.data(), total * sizeof(int), cudaMemcpyHostToDevice));
  reverseBlocks<<<blocks, 256, perBlock * sizeof(int)>>>(dData, dRev, perBlock);
  CHECK_LAUNCH();
  std::vector<int> rev(total);
  CHECK(cudaMemcpy(rev.data(), dRev, total * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b)
    for (int k = 0; k < perBlock; ++k)
      check.eq("reversed", b * perBlock + k, data[b * perBlock + perBlock - 1 - k],
               rev[b * perBlock + k]);

  std::printf("local_memory: %d threads with %d-int local arrays, %d blocks x %zu bytes shared\n",
              n, kLocal, blocks, perBlock * sizeof(int));
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dScattered));
  CHECK(cudaFree(dSorted));
  CHECK(cudaFree(dData));
  CHECK(cudaFree(dRev));
  return check.finish();
}
