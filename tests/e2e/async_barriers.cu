// Asynchronous barriers (cuda::barrier, PTX mbarrier, sm_80): phases of arrive_and_wait with
// shared-memory exchanges between them, split arrive / wait with work in between,
// arrive_and_drop, a producer warp and consumer warps handing tiles over through two barriers
// (full / empty), cuda::memcpy_async completing on a barrier, and the release/acquire kind:
// cuda::std::barrier and a flag in shared memory; checked against host references.
#include <cooperative_groups.h>

#include <cuda/atomic>
#include <cuda/barrier>
#include <cuda/std/barrier>
#include <new>
#include <vector>

#include "e2e_check.h"

// A cuda::barrier in __shared__ is initialised by init(), not by its constructor.
#pragma nv_diag_suppress static_var_with_dynamic_init

namespace cg = cooperative_groups;
using BlockBarrier = cuda::barrier<cuda::thread_scope_block>;

constexpr int kPhases = 5;

__host__ __device__ inline int seed(int block, int thread) { return block * 1000 + thread * 7 + 3; }

// Each phase every thread adds its right neighbour's value from the phase before; the barrier's
// phases alternate parity, so five phases use both.
__global__ void phases(int* out) {
  __shared__ BlockBarrier barrier;
  __shared__ int values[2][96];
  int t = threadIdx.x, n = blockDim.x;
  if (t == 0) init(&barrier, n);
  values[0][t] = seed(blockIdx.x, t);
  __syncthreads();
  for (int p = 0; p < kPhases; ++p) {
    int next = values[p % 2][t] + values[p % 2][(t + 1) % n];
    barrier.arrive_and_wait();  // everyone has read phase p's values
    values[(p + 1) % 2][t] = next;
    barrier.arrive_and_wait();  // everyone has written phase p + 1's
  }
  out[blockIdx.x * n + t] = values[kPhases % 2][t];
}

// arrive, independent work, then wait on the token; after the first phase the odd threads
// drop out and the even ones go on with a barrier that expects only them.
__global__ void splitAndDrop(int* out, int* drops) {
  __shared__ BlockBarrier barrier;
  __shared__ int slots[128];
  int t = threadIdx.x, n = blockDim.x;
  if (t == 0) init(&barrier, n);
  __syncthreads();
  slots[t] = seed(blockIdx.x, t);
  BlockBarrier::arrival_token token = barrier.arrive();
  int own = 0;
  for (int i = 0; i < 100; ++i) own += (t * i) % 13;  // work while the others arrive
  barrier.wait(std::move(token));
  int mirrored = slots[n - 1 - t];
  if (t % 2 == 1) {
    barrier.arrive_and_drop();
    out[blockIdx.x * n + t] = mirrored + own;
    return;
  }
  barrier.arrive_and_wait();  // phase 2: the odd threads' drops count as their arrivals
  slots[t] = mirrored;
  barrier.arrive_and_wait();  // phase 3: the even threads only
  out[blockIdx.x * n + t] = slots[(t + 2) % n] + own;
  if (t == 0) drops[blockIdx.x] = 1;
}

// Raw mbarriers in the parity style (as CUTLASS pipelines use them): warp 0 produces kTiles
// tiles of 32 values into a two-slot ring, warps 1..3 consume each tile. full[s]: the tile in
// slot s is ready (the producer's 32 arrivals); empty[s]: slot s may be overwritten (the 96
// consumers' arrivals). The producer never arrives on empty, so it waits by parity.
constexpr int kTiles = 6;

__device__ inline unsigned sharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ inline void mbarrierInit(unsigned long long* bar, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(sharedAddress(bar)), "r"(count)
               : "memory");
}
__device__ inline void mbarrierArrive(unsigned long long* bar) {
  asm volatile(
      "{\n .reg .b64 state;\n mbarrier.arrive.shared.b64 state, [%0];\n}" ::"r"(sharedAddress(bar))
      : "memory");
}
__device__ inline void mbarrierWaitParity(unsigned long long* bar, unsigned parity) {
  asm volatile(
      "{\n .reg .pred done;\n WAIT:\n mbarrier.test_wait.parity.shared.b64 done, [%0], %1;\n"
      " @!done bra WAIT;\n}" ::"r"(sharedAddress(bar)),
      "r"(parity)
      : "memory");
}

__global__ void producerConsumer(int* out) {
  __shared__ unsigned long long full[2], empty[2];
  __shared__ int ring[2][32];
  int t = threadIdx.x;
  if (t == 0)
    for (int s = 0; s < 2; ++s) {
      mbarrierInit(&full[s], 32);
      mbarrierInit(&empty[s], 96);
    }
  __syncthreads();
  if (t < 32) {
    for (int tile = 0; tile < kTiles; ++tile) {
      int s = tile % 2, use = tile / 2;
      if (use > 0) mbarrierWaitParity(&empty[s], (use - 1) & 1);  // its last use was read
      ring[s][t] = seed(blockIdx.x, t) * (tile + 1);
      mbarrierArrive(&full[s]);
    }
    return;
  }
  int c = t - 32, sum = 0;
  for (int tile = 0; tile < kTiles; ++tile) {
    int s = tile % 2, use = tile / 2;
    mbarrierWaitParity(&full[s], use & 1);
    sum += ring[s][c % 32] * (c / 32 + 1);
    mbarrierArrive(&empty[s]);
  }
  out[blockIdx.x * 96 + c] = sum;
}

// cuda::memcpy_async by the whole block into shared memory, completing on a barrier.
constexpr int kCopied = 256;
__global__ void copyAsync(const int* in, int* out) {
  __shared__ BlockBarrier barrier;
  __shared__ int tile[kCopied];
  auto block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&barrier, block.size());
  block.sync();
  cuda::memcpy_async(block, tile, in + blockIdx.x * kCopied, sizeof(int) * kCopied, barrier);
  barrier.arrive_and_wait();
  for (int i = threadIdx.x; i < kCopied; i += blockDim.x)
    out[blockIdx.x * kCopied + i] = tile[kCopied - 1 - i] * 2;
}

// cp.async with the ignore-src predicate: threads with an odd index ignore the source, and zeros
// land in their shared words ("zeros will be copied to destination").
__global__ void copyIgnoringSource(const int* in, int* out) {
  __shared__ int tile[128];
  tile[threadIdx.x] = -7;
  __syncthreads();
  unsigned destination = static_cast<unsigned>(__cvta_generic_to_shared(&tile[threadIdx.x]));
  int ignore = threadIdx.x & 1;
  asm volatile(
      "{ .reg .pred p; setp.ne.b32 p, %2, 0;\n"
      "  cp.async.ca.shared.global [%0], [%1], 4, p; }\n"
      "cp.async.wait_all;\n" ::"r"(destination),
      "l"(in + threadIdx.x), "r"(ignore)
      : "memory");
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x];
}

// cuda::std::barrier (an atomic counter, arrive with release, wait with acquire) between a
// warp's writes and another warp's reads of shared memory, over several phases.
__global__ void stdBarrierExchange(int* out) {
  using StdBarrier = cuda::std::barrier<>;
  __shared__ alignas(StdBarrier) unsigned char storage[sizeof(StdBarrier)];
  __shared__ int data[64];
  auto* barrier = reinterpret_cast<StdBarrier*>(storage);
  int t = threadIdx.x;
  if (t == 0) new (barrier) StdBarrier(64);
  __syncthreads();
  int value = seed(blockIdx.x, t);
  for (int p = 0; p < 3; ++p) {
    data[t] = value;
    barrier->arrive_and_wait();  // the writes before the reads
    value += data[63 - t];
    barrier->arrive_and_wait();  // the reads before the next writes
  }
  out[blockIdx.x * 64 + t] = value;
}

// Warp 0 writes, then releases a flag; warp 1 acquires it, then reads.
__global__ void releaseAcquireFlag(int* out) {
  __shared__ int data[32];
  __shared__ int flag;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  cuda::atomic_ref<int, cuda::thread_scope_block> ready(flag);
  if (threadIdx.x < 32) {
    data[threadIdx.x] = seed(blockIdx.x, threadIdx.x);
    __syncwarp();
    if (threadIdx.x == 0) ready.store(1, cuda::std::memory_order_release);
  } else {
    while (ready.load(cuda::std::memory_order_acquire) == 0) {
    }
    out[blockIdx.x * 32 + threadIdx.x - 32] = data[threadIdx.x - 32] * 3;
  }
}

int main() {
  Checker check("async_barriers");
  const int blocks = 3;

  {  // phases: 96 threads
    const int n = 96;
    int* d = nullptr;
    CHECK(cudaMalloc(&d, blocks * n * sizeof(int)));
    phases<<<blocks, n>>>(d);
    CHECK_LAUNCH();
    std::vector<int> got(blocks * n);
    CHECK(cudaMemcpy(got.data(), d, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b) {
      std::vector<int> v(n);
      for (int t = 0; t < n; ++t) v[t] = seed(b, t);
      for (int p = 0; p < kPhases; ++p) {
        std::vector<int> next(n);
        for (int t = 0; t < n; ++t) next[t] = v[t] + v[(t + 1) % n];
        v = next;
      }
      for (int t = 0; t < n; ++t) check.eq("phases", b * n + t, v[t], got[b * n + t]);
    }
    CHECK(cudaFree(d));
  }

  {  // split arrive / wait and arrive_and_drop: 128 threads
    const int n = 128;
    int *d = nullptr, *drops = nullptr;
    CHECK(cudaMalloc(&d, blocks * n * sizeof(int)));
    CHECK(cudaMalloc(&drops, blocks * sizeof(int)));
    CHECK(cudaMemset(drops, 0, blocks * sizeof(int)));
    splitAndDrop<<<blocks, n>>>(d, drops);
    CHECK_LAUNCH();
    std::vector<int> got(blocks * n), dropped(blocks);
    CHECK(cudaMemcpy(got.data(), d, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(dropped.data(), drops, blocks * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b) {
      check.eq("reached the last phase", b, 1, dropped[b]);
      std::vector<int> mirrored(n);
      for (int t = 0; t < n; ++t) mirrored[t] = seed(b, n - 1 - t);
      for (int t = 0; t < n; ++t) {
        int own = 0;
        for (int i = 0; i < 100; ++i) own += (t * i) % 13;
        // Even threads read slot (t + 2) % n, which an even thread wrote in phase 2.
        int expected = t % 2 == 1 ? mirrored[t] + own : mirrored[(t + 2) % n] + own;
        check.eq("splitAndDrop", b * n + t, expected, got[b * n + t]);
      }
    }
    CHECK(cudaFree(d));
    CHECK(cudaFree(drops));
  }

  {  // producer / consumer: 128 threads, one producer warp
    int* d = nullptr;
    CHECK(cudaMalloc(&d, blocks * 96 * sizeof(int)));
    producerConsumer<<<blocks, 128>>>(d);
    CHECK_LAUNCH();
    std::vector<int> got(blocks * 96);
    CHECK(cudaMemcpy(got.data(), d, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b)
      for (int c = 0; c < 96; ++c) {
        int sum = 0;
        for (int tile = 0; tile < kTiles; ++tile)
          sum += seed(b, c % 32) * (tile + 1) * (c / 32 + 1);
        check.eq("producerConsumer", b * 96 + c, sum, got[b * 96 + c]);
      }
    CHECK(cudaFree(d));
  }

  {  // memcpy_async: 128 threads copy 256 values
    std::vector<int> in(blocks * kCopied);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 37 % 1001) - 500;
    int *dIn = nullptr, *dOut = nullptr;
    CHECK(cudaMalloc(&dIn, in.size() * sizeof(int)));
    CHECK(cudaMalloc(&dOut, in.size() * sizeof(int)));
    CHECK(cudaMemcpy(dIn, in.data(), in.size() * sizeof(int), cudaMemcpyHostToDevice));
    copyAsync<<<blocks, 128>>>(dIn, dOut);
    CHECK_LAUNCH();
    std::vector<int> got(in.size());
    CHECK(cudaMemcpy(got.data(), dOut, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; ++b)
      for (int i = 0; i < kCopied; ++i)
        check.eq("copyAsync", b * kCopied + i, in[b * kCopied + kCopied - 1 - i] * 2,
                 got[b * kCopied + i]);
    CHECK(cudaFree(dIn));
    CHECK(cudaFree(dOut));
  }
  {  // cp.async ignore-src: 128 threads
    std::vector<int> in(128);
    for (int i = 0; i < 128; ++i) in[i] = 1000 + i;
    int* dIn = upload(in);
    int* dOut = nullptr;
    CHECK(cudaMalloc(&dOut, 128 * sizeof(int)));
    copyIgnoringSource<<<1, 128>>>(dIn, dOut);
    CHECK_LAUNCH();
    std::vector<int> got = download(dOut, 128);
    for (int t = 0; t < 128; ++t) check.eq("cp.async ignore-src", t, t % 2 ? 0 : 1000 + t, got[t]);
    CHECK(cudaFree(dIn));
    CHECK(cudaFree(dOut));
  }
  {  // cuda::std::barrier: 64 threads
    int* d = nullptr;
    CHECK(cudaMalloc(&d, blocks * 64 * sizeof(int)));
    stdBarrierExchange<<<blocks, 64>>>(d);
    CHECK_LAUNCH();
    std::vector<int> got = download(d, blocks * 64);
    for (int b = 0; b < blocks; ++b) {
      std::vector<int> v(64);
      for (int t = 0; t < 64; ++t) v[t] = seed(b, t);
      for (int p = 0; p < 3; ++p) {
        std::vector<int> next(64);
        for (int t = 0; t < 64; ++t) next[t] = v[t] + v[63 - t];
        v = next;
      }
      for (int t = 0; t < 64; ++t)
        check.eq("stdBarrierExchange", b * 64 + t, v[t], got[b * 64 + t]);
    }
    CHECK(cudaFree(d));
  }
  {  // release/acquire flag: 64 threads
    int* d = nullptr;
    CHECK(cudaMalloc(&d, blocks * 32 * sizeof(int)));
    releaseAcquireFlag<<<blocks, 64>>>(d);
    CHECK_LAUNCH();
    std::vector<int> got = download(d, blocks * 32);
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < 32; ++t)
        check.eq("releaseAcquireFlag", b * 32 + t, seed(b, t) * 3, got[b * 32 + t]);
    CHECK(cudaFree(d));
  }
  CHECK(cudaDeviceSynchronize());
  return check.finish();
}
