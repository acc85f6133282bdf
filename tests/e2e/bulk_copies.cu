// Bulk asynchronous copies (PTX cp.async.bulk, sm_90), as libcu++ emits them when a program is
// built for sm_90: cuda::memcpy_async of a 16-byte-aligned size into shared memory completing on
// a cuda::barrier, the explicit global-to-shared copy with barrier_arrive_tx, a shared-to-shared
// copy completing on a native mbarrier, and the shared-to-global copy of a bulk group
// (commit_group / wait_group_read) after fence.proxy.async; and bulk reductions
// (cp.reduce.async.bulk) of shared arrays into global arrays every block reduces into at once and
// into the block's own shared memory; checked against host references.
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
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

// The values block `b`'s thread `t` contributes to each bulk reduction.
__host__ __device__ inline unsigned addend(int b, int t) { return b * 1000u + t; }
__host__ __device__ inline float floatAddend(int b, int t) { return float(b - t); }
__host__ __device__ inline int minCandidate(int b, int t) {
  return (b * 7919 + t * 104729) % 2001 - 1000;
}
__host__ __device__ inline unsigned incLimit(int t) { return t % 5 + 3; }
__host__ __device__ inline unsigned bit(int b, int t) { return 1u << ((b + t) % 32); }
// At most 3 per block: sums of 48 blocks stay integers bf16 holds exactly (up to 256).
__host__ __device__ inline float smallInteger(int b, int t) { return float(t % 3 + b % 2); }
__host__ __device__ inline float maxCandidate(int b, int t) {
  return float((b * 37 + t * 11) % 101 - 50);
}

struct ReductionTargets {
  unsigned* sums;
  float* floatSums;
  int* mins;
  unsigned* counters;
  unsigned* bits;
  __nv_bfloat16* bf16Sums;
  __half* halfMaxes;
};

// Every block stages kTile values of each type in shared memory, and thread 0 reduces each array
// into the same global array as every other block, one bulk reduction per array: the elements'
// updates must be atomic. The results do not depend on the blocks' order (integers; floats that
// hold small integers exactly; inc whose limit is the same in every block).
__global__ void bulkReduceToGlobal(ReductionTargets to) {
  __shared__ alignas(16) unsigned sums[kTile];
  __shared__ alignas(16) float floats[kTile];
  __shared__ alignas(16) int mins[kTile];
  __shared__ alignas(16) unsigned limits[kTile];
  __shared__ alignas(16) unsigned bits[kTile];
  __shared__ alignas(16) __nv_bfloat16 bf16s[kTile];
  __shared__ alignas(16) __half halves[kTile];
  int b = blockIdx.x, t = threadIdx.x;
  sums[t] = addend(b, t);
  floats[t] = floatAddend(b, t);
  mins[t] = minCandidate(b, t);
  limits[t] = incLimit(t);
  bits[t] = bit(b, t);
  bf16s[t] = __float2bfloat16(smallInteger(b, t));
  halves[t] = __float2half(maxCandidate(b, t));
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  if (t == 0) {
    using namespace cuda::ptx;
    cp_reduce_async_bulk(space_global, space_shared, op_add, to.sums, sums, sizeof(sums));
    cp_reduce_async_bulk(space_global, space_shared, op_add, to.floatSums, floats, sizeof(floats));
    cp_reduce_async_bulk(space_global, space_shared, op_min, to.mins, mins, sizeof(mins));
    cp_reduce_async_bulk(space_global, space_shared, op_inc, to.counters, limits, sizeof(limits));
    cp_reduce_async_bulk(space_global, space_shared, op_xor_op, to.bits, bits, sizeof(bits));
    cp_reduce_async_bulk(space_global, space_shared, op_add, to.bf16Sums, bf16s, sizeof(bf16s));
    cp_reduce_async_bulk(space_global, space_shared, op_max, to.halfMaxes, halves, sizeof(halves));
    cuda::device::experimental::cp_async_bulk_commit_group();
    cuda::device::experimental::cp_async_bulk_wait_group_read<0>();
  }
}

// A reduction into the block's own shared memory (.shared::cluster) that completes on an
// mbarrier: total[t] = t + in[t].
__global__ void bulkReduceIntoShared(const int* in, int* out) {
  __shared__ alignas(16) unsigned staging[kTile];
  __shared__ alignas(16) unsigned total[kTile];
  __shared__ alignas(8) uint64_t mbarrier;
  int t = threadIdx.x;
  staging[t] = unsigned(in[blockIdx.x * kTile + t]);
  total[t] = t;
  if (t == 0) cuda::ptx::mbarrier_init(&mbarrier, 1);
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
  __syncthreads();
  if (t == 0) {
    cuda::ptx::cp_reduce_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_shared,
                                    cuda::ptx::op_add, total, staging, sizeof(total), &mbarrier);
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                         cuda::ptx::space_shared, &mbarrier, sizeof(total));
  }
  while (!cuda::ptx::mbarrier_try_wait_parity(&mbarrier, 0)) {
  }
  out[blockIdx.x * kTile + t] = int(total[t]);
}

void checkBulkReductions(Checker& check, int blocks) {
  ReductionTargets to{};
  CHECK(cudaMalloc(&to.sums, kTile * sizeof(unsigned)));
  CHECK(cudaMalloc(&to.floatSums, kTile * sizeof(float)));
  CHECK(cudaMalloc(&to.counters, kTile * sizeof(unsigned)));
  CHECK(cudaMalloc(&to.bits, kTile * sizeof(unsigned)));
  CHECK(cudaMalloc(&to.bf16Sums, kTile * sizeof(__nv_bfloat16)));
  for (void* zeroed : {static_cast<void*>(to.sums), static_cast<void*>(to.floatSums),
                       static_cast<void*>(to.counters), static_cast<void*>(to.bits)})
    CHECK(cudaMemset(zeroed, 0, kTile * 4));
  CHECK(cudaMemset(to.bf16Sums, 0, kTile * sizeof(__nv_bfloat16)));
  to.mins = upload(std::vector<int>(kTile, INT_MAX));
  to.halfMaxes = upload(std::vector<__half>(kTile, __float2half(-1000.0f)));
  bulkReduceToGlobal<<<blocks, kTile>>>(to);
  CHECK_LAUNCH();
  std::vector<unsigned> sums = download(to.sums, kTile), counters = download(to.counters, kTile),
                        bits = download(to.bits, kTile);
  std::vector<float> floatSums = download(to.floatSums, kTile);
  std::vector<int> mins = download(to.mins, kTile);
  std::vector<__nv_bfloat16> bf16Sums = download(to.bf16Sums, kTile);
  std::vector<__half> halfMaxes = download(to.halfMaxes, kTile);
  for (int t = 0; t < kTile; ++t) {
    unsigned sum = 0, counter = 0, xorOfBits = 0;
    float floatSum = 0, bf16Sum = 0, halfMax = -1000;
    int least = INT_MAX;
    for (int b = 0; b < blocks; ++b) {
      sum += addend(b, t);
      floatSum += floatAddend(b, t);
      least = std::min(least, minCandidate(b, t));
      counter = counter >= incLimit(t) ? 0 : counter + 1;  // PTX's inc
      xorOfBits ^= bit(b, t);
      bf16Sum += smallInteger(b, t);
      halfMax = std::max(halfMax, maxCandidate(b, t));
    }
    check.eq("bulk add.u32", t, sum, sums[t]);
    check.eq("bulk add.f32", t, floatSum, floatSums[t]);
    check.eq("bulk min.s32", t, least, mins[t]);
    check.eq("bulk inc.u32", t, counter, counters[t]);
    check.eq("bulk xor.b32", t, xorOfBits, bits[t]);
    check.eq("bulk add.noftz.bf16", t, bf16Sum, __bfloat162float(bf16Sums[t]));
    check.eq("bulk max.f16", t, halfMax, __half2float(halfMaxes[t]));
  }
  for (void* p :
       {static_cast<void*>(to.sums), static_cast<void*>(to.floatSums), static_cast<void*>(to.mins),
        static_cast<void*>(to.counters), static_cast<void*>(to.bits),
        static_cast<void*>(to.bf16Sums), static_cast<void*>(to.halfMaxes)})
    CHECK(cudaFree(p));
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

  CHECK(cudaMemset(out, 0, n * sizeof(int)));
  bulkReduceIntoShared<<<blocks, kTile>>>(in, out);
  CHECK_LAUNCH();
  got = download(out, n);
  for (int i = 0; i < n; ++i)
    check.eq("bulk reduction into shared", i, int(unsigned(source(i)) + unsigned(i % kTile)),
             got[i]);

  checkBulkReductions(check, blocks);

  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  std::printf("bulk_copies: %d blocks of %d ints through bulk copies and bulk reductions\n", blocks,
              kTile);
  return check.finish();
}
