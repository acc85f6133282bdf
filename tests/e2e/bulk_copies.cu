// Bulk asynchronous copies (PTX cp.async.bulk, sm_90), as libcu++ emits them when a program is
// built for sm_90: cuda::memcpy_async of a 16-byte-aligned size into shared memory completing on
// a cuda::barrier, the explicit global-to-shared copy with barrier_arrive_tx, a shared-to-shared
// copy completing on a native mbarrier, and the shared-to-global copy of a bulk group
// (commit_group / wait_group_read) after fence.proxy.async; checked against host references.
#include <cooperative_groups.h>

#include <cuda/barrier>
#include <cuda/ptx>
#include <vector>

#include "e2e_check.h"

// A cuda::barrier in __shared__ is initialised by init(), not by its constructor.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace cg = cooperative_groups;
using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;

constexpr int kTile = 256;  // ints per block

__host__ __device__ inline int source(int i) { return i * 3 - 1000; }

// memcpy_async(group, ...) with aligned_size_t<16>: one bulk copy into shared memory that
// completes the barrier's transactions; the block then reads the tile back to front.
__global__ void memcpyAsyncTile(const int* in, int* out) {
  __shared__ alignas(16) int tile[kTile];
  __shared__ BlockBarrier barrier;
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&barrier, block.size());
  block.sync();
  cuda::memcpy_async(block, tile, in + blockIdx.x * kTile, cuda::aligned_size_t<16>(sizeof(tile)),
                     barrier);
  barrier.arrive_and_wait();
  out[blockIdx.x * kTile + threadIdx.x] = tile[kTile - 1 - threadIdx.x] + 1;
}

// Thread 0 issues two bulk copies (the halves of the tile, second half first) and arrives with
// their byte count as the expected transactions; everyone else arrives plainly.
__global__ void explicitTransactions(const int* in, int* out) {
  __shared__ alignas(16) int tile[kTile];
  __shared__ BlockBarrier barrier;
  if (threadIdx.x == 0) init(&barrier, blockDim.x);
  __syncthreads();
  BlockBarrier::arrival_token token;
  if (threadIdx.x == 0) {
    const int* base = in + blockIdx.x * kTile;
    constexpr unsigned half = kTile / 2 * sizeof(int);
    cuda::device::experimental::cp_async_bulk_global_to_shared(tile + kTile / 2, base + kTile / 2,
                                                               half, barrier);
    cuda::device::experimental::cp_async_bulk_global_to_shared(tile, base, half, barrier);
    token = cuda::device::barrier_arrive_tx(barrier, 1, 2 * half);
  } else {
    token = barrier.arrive();
  }
  barrier.wait(std::move(token));
  out[blockIdx.x * kTile + threadIdx.x] = tile[threadIdx.x] * 2;
}

// Shared to shared (.shared::cluster.shared::cta: the block's own while a cluster is one block)
// completing on a native mbarrier, then shared to global as a bulk group.
__global__ void sharedToSharedToGlobal(const int* in, int* out) {
  __shared__ alignas(16) int staging[kTile];
  __shared__ alignas(16) int tile[kTile];
  __shared__ alignas(8) uint64_t mbarrier;
  int t = threadIdx.x;
  staging[t] = in[blockIdx.x * kTile + t] ^ 0x55;
  if (t == 0) cuda::ptx::mbarrier_init(&mbarrier, 1);
  // The staging writes and the mbarrier's initialisation, made visible to the async proxy.
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  if (t == 0) {
    cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_shared, tile, staging,
                             sizeof(tile), &mbarrier);
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                         cuda::ptx::space_shared, &mbarrier, sizeof(tile));
  }
  while (!cuda::ptx::mbarrier_try_wait_parity(&mbarrier, 0)) {
  }
  tile[t] += t;  // each thread its own element, read back by the bulk store below
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  if (t == 0) {
    cuda::device::experimental::cp_async_bulk_shared_to_global(out + blockIdx.x * kTile, tile,
                                                               sizeof(tile));
    cuda::device::experimental::cp_async_bulk_commit_group();
    cuda::device::experimental::cp_async_bulk_wait_group_read<0>();
  }
}

int main() {
  Checker check("bulk_copies");
  const int blocks = 48, n = blocks * kTile;
  std::vector<int> host(n);
  for (int i = 0; i < n; ++i) host[i] = source(i);
  int* in = upload(host);
  int* out = nullptr;
  CHECK(cudaMalloc(&out, n * sizeof(int)));

  CHECK(cudaMemset(out, 0, n * sizeof(int)));
  memcpyAsyncTile<<<blocks, kTile>>>(in, out);
  CHECK_LAUNCH();
  std::vector<int> got = download(out, n);
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < kTile; ++t)
      check.eq("memcpy_async", b * kTile + t, source(b * kTile + kTile - 1 - t) + 1,
               got[b * kTile + t]);

  CHECK(cudaMemset(out, 0, n * sizeof(int)));
  explicitTransactions<<<blocks, kTile>>>(in, out);
  CHECK_LAUNCH();
  got = download(out, n);
  for (int i = 0; i < n; ++i) check.eq("cp_async_bulk_global_to_shared", i, source(i) * 2, got[i]);

  CHECK(cudaMemset(out, 0, n * sizeof(int)));
  sharedToSharedToGlobal<<<blocks, kTile>>>(in, out);
  CHECK_LAUNCH();
  got = download(out, n);
  for (int i = 0; i < n; ++i)
    check.eq("shared to shared to global", i, (source(i) ^ 0x55) + i % kTile, got[i]);

  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  std::printf("bulk_copies: %d blocks of %d ints through bulk copies\n", blocks, kTile);
  return check.finish();
}
