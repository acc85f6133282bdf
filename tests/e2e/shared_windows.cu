// The block's shared window as PTX addresses it: 32-bit shared addresses wrap modulo 2^32 (nvcc
// folds s[j + 1000] with a negative j into [&s + 4j + 4000], whose register part lies below the
// window), and sm_80's reserved shared memory (%reserved_smem_offset_*), where cooperative
// groups keep the scratch of tiles larger than a warp.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <vector>

#include "e2e_check.h"

namespace cg = cooperative_groups;

__global__ void negativeIndex(int* out, int j) {
  __shared__ int s[2048];
  for (int i = threadIdx.x; i < 2048; i += blockDim.x) s[i] = 1000 + i;
  __syncthreads();
  out[threadIdx.x] = s[j + 1000 + static_cast<int>(threadIdx.x)];
}

// The same wrap through each access kind, written out in PTX: a register 8192 bytes below the
// window plus offsets that bring it back.
__global__ void wrappedAccesses(int* out) {
  __shared__ int s[64];
  for (int i = threadIdx.x; i < 64; i += blockDim.x) s[i] = 1000 + i;
  __syncthreads();
  if (threadIdx.x != 0) return;
  unsigned below = static_cast<unsigned>(__cvta_generic_to_shared(s)) - 8192u;
  int loaded, old, a, b;
  asm volatile("ld.shared.u32 %0, [%1+8200];" : "=r"(loaded) : "r"(below));
  asm volatile("st.shared.u32 [%0+8204], %1;" ::"r"(below), "r"(777) : "memory");
  asm volatile("atom.shared.add.u32 %0, [%1+8212], 1;" : "=r"(old) : "r"(below) : "memory");
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2+8216];" : "=r"(a), "=r"(b) : "r"(below));
  out[0] = loaded;
  out[1] = s[3];
  out[2] = old;
  out[3] = s[5];
  out[4] = a;
  out[5] = b;
}

template <unsigned Size>
__global__ void largeTiles(int* sums, int* lasts, int* ranks) {
  __shared__ int marks[256];
  auto tile = cg::tiled_partition<Size>(cg::this_thread_block());
  int v = static_cast<int>(threadIdx.x);
  sums[threadIdx.x] = cg::reduce(tile, v, cg::plus<int>());
  lasts[threadIdx.x] = tile.shfl(v, Size - 1);
  marks[threadIdx.x] = v;
  tile.sync();
  // After the tile's barrier every member's mark is visible.
  unsigned first = threadIdx.x / Size * Size;
  int seen = 0;
  for (unsigned i = 0; i < Size; ++i) seen += marks[first + i] == static_cast<int>(first + i);
  ranks[threadIdx.x] = static_cast<int>(tile.thread_rank()) * 1000 + seen;
}

__global__ void reservedRegion(unsigned* out) {
  unsigned begin, end, cap, second;
  asm volatile("mov.u32 %0, %%reserved_smem_offset_begin;" : "=r"(begin));
  asm volatile("mov.u32 %0, %%reserved_smem_offset_end;" : "=r"(end));
  asm volatile("mov.u32 %0, %%reserved_smem_offset_cap;" : "=r"(cap));
  asm volatile("mov.u32 %0, %%reserved_smem_offset_1;" : "=r"(second));
  out[0] = begin;
  out[1] = end;
  out[2] = cap;
  out[3] = second;
}

int main() {
  Checker check("shared_windows");
  const int threads = 256;
  int* out = nullptr;
  CHECK(cudaMalloc(&out, 3 * threads * sizeof(int)));

  negativeIndex<<<2, threads>>>(out, -500);
  CHECK_LAUNCH();
  std::vector<int> got = download(out, threads);
  for (int t = 0; t < threads; ++t) check.eq("s[j + 1000]", t, 1500 + t, got[t]);

  wrappedAccesses<<<1, 32>>>(out);
  CHECK_LAUNCH();
  got = download(out, 6);
  const int wrapped[6] = {1002, 777, 1005, 1006, 1006, 1007};
  static const char* kinds[6] = {"ld", "st", "atom old", "atom result", "ld.v2 [0]", "ld.v2 [1]"};
  for (int i = 0; i < 6; ++i) check.eq(kinds[i], i, wrapped[i], got[i]);

  auto checkTiles = [&](unsigned size, const char* name) {
    std::vector<int> all = download(out, 3 * threads);
    for (int t = 0; t < threads; ++t) {
      int first = t / static_cast<int>(size) * static_cast<int>(size);
      int sum = static_cast<int>(size) * first + static_cast<int>(size * (size - 1) / 2);
      check.eq(name, t, sum, all[t]);
      check.eq(name, t, first + static_cast<int>(size) - 1, all[threads + t]);
      check.eq(name, t, (t - first) * 1000 + static_cast<int>(size), all[2 * threads + t]);
    }
  };
  largeTiles<64><<<3, threads>>>(out, out + threads, out + 2 * threads);
  CHECK_LAUNCH();
  checkTiles(64, "tiled_partition<64>");
  largeTiles<128><<<3, threads>>>(out, out + threads, out + 2 * threads);
  CHECK_LAUNCH();
  checkTiles(128, "tiled_partition<128>");

  int reserved = 0;
  CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
  reservedRegion<<<1, 1>>>(reinterpret_cast<unsigned*>(out));
  CHECK_LAUNCH();
  std::vector<unsigned> region = download(reinterpret_cast<unsigned*>(out), 4);
  check.eq("reserved size", 0, static_cast<unsigned>(reserved), region[2]);
  check.eq("reserved end", 0, region[0] + static_cast<unsigned>(reserved), region[1]);
  check.expect(region[3] >= region[0] && region[3] + 288 <= region[1],
               "%reserved_smem_offset_1 leaves cooperative groups' 288 bytes inside the region");

  // The region is the driver's, reserved for every block (cc 8.0+), not the kernel's: the
  // kernel reports its own static shared memory only, and occupancy counts the region for each
  // block as NVIDIA's occupancy calculator does (cuda_occupancy.h).
  cudaFuncAttributes attributes{};
  CHECK(cudaFuncGetAttributes(&attributes, reservedRegion));
  check.eq("reservedRegion sharedSizeBytes", 0, size_t{0}, attributes.sharedSizeBytes);
  CHECK(cudaFuncGetAttributes(&attributes, largeTiles<64>));
  check.eq("largeTiles<64> sharedSizeBytes", 0, sizeof(int) * 256, attributes.sharedSizeBytes);
  int perMultiprocessor = 0, blocks = 0;
  CHECK(cudaDeviceGetAttribute(&perMultiprocessor, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  const size_t dynamicBytes = 4 * 1024;  // 8 KB static: 12 KB a block, 13 KB with the region
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, negativeIndex, 32, dynamicBytes));
  size_t perBlock = sizeof(int) * 2048 + dynamicBytes + static_cast<size_t>(reserved);
  check.eq("blocks per multiprocessor with 12 KB of shared memory", 0,
           static_cast<int>(static_cast<size_t>(perMultiprocessor) / perBlock), blocks);

  CHECK(cudaFree(out));
  return check.finish();
}
