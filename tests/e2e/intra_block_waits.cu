// Threads of one block that wait for one another without a barrier: a thread spins on memory
// that a later thread of its block writes (a shared flag, a global flag, a block-scope
// cuda::std::latch, cuda::atomic wait/notify). On a GPU every thread makes progress; the CPU
// device must give the writer a turn while the waiter spins (these programs hung when a block's
// threads ran one after another).
#include <cuda/atomic>
#include <cuda/latch>
#include <cuda/std/latch>
#include <new>
#include <vector>

#include "e2e_check.h"

// Thread 0 waits for the block's last thread to publish a value through a shared flag.
__global__ void sharedFlag(int* out) {
  __shared__ volatile int flag;
  __shared__ int value;
  unsigned last = blockDim.x - 1;
  if (threadIdx.x == 0) flag = 0;
  __syncthreads();
  if (threadIdx.x == last) {
    value = 1000 + blockIdx.x;
    __threadfence_block();
    flag = 1;
  }
  if (threadIdx.x == 0) {
    while (flag == 0) {
    }
    out[blockIdx.x] = value;
  }
}

// The same through global memory, in a kernel without barriers: thread 0 of each block waits
// for its block's last thread.
__global__ void globalFlag(volatile int* flags, int* out) {
  unsigned last = blockDim.x - 1;
  if (threadIdx.x == last) {
    out[blockIdx.x] = 2000 + blockIdx.x;
    __threadfence();
    flags[blockIdx.x] = 1;
  }
  if (threadIdx.x == 0) {
    while (flags[blockIdx.x] == 0) {
    }
    out[gridDim.x + blockIdx.x] = out[blockIdx.x] + 1;
  }
}

// The same polled with atomics that change nothing (atomicAdd(p, 0), atomicOr(p, 0)).
__global__ void atomicPolls(int* flags, int* out) {
  unsigned last = blockDim.x - 1;
  if (threadIdx.x == last) {
    out[blockIdx.x] = 4000 + blockIdx.x;
    atomicExch(&flags[blockIdx.x], 1);
  }
  if (threadIdx.x == 0) {
    while (atomicAdd(&flags[blockIdx.x], 0) == 0) {
    }
    out[gridDim.x + blockIdx.x] = out[blockIdx.x] + 1;
  }
  if (threadIdx.x == 1) {
    while (atomicOr(&flags[blockIdx.x], 0) == 0) {
    }
    out[2 * gridDim.x + blockIdx.x] = out[blockIdx.x] + 2;
  }
}

// Every thread arrives at a block-scope latch in shared memory and waits for all the others.
__global__ void blockLatch(int* out) {
  using Latch = cuda::std::latch;
  __shared__ alignas(Latch) unsigned char storage[sizeof(Latch)];
  __shared__ int arrived;
  Latch* latch = reinterpret_cast<Latch*>(storage);
  if (threadIdx.x == 0) {
    new (latch) Latch(blockDim.x);
    arrived = 0;
  }
  __syncthreads();
  atomicAdd(&arrived, 1);
  latch->arrive_and_wait();
  // Past the latch every thread of the block has arrived.
  out[blockIdx.x * blockDim.x + threadIdx.x] = arrived;
}

// The same through a pointer that thread 0 keeps in shared memory for the block (libcu++'s
// block-scope latch placed in shared storage): the wait is still on shared memory.
__global__ void latchThroughSharedPointer(int* out) {
  using Latch = cuda::latch<cuda::thread_scope_block>;
  __shared__ Latch* latch;
  __shared__ alignas(Latch) unsigned char storage[sizeof(Latch)];
  __shared__ int arrived;
  if (threadIdx.x == 0) {
    latch = new (storage) Latch(blockDim.x);
    arrived = 0;
  }
  __syncthreads();
  atomicAdd(&arrived, 1);
  latch->arrive_and_wait();
  out[blockIdx.x * blockDim.x + threadIdx.x] = arrived;
}

// A countdown whose pointer the wait re-reads from shared memory on every poll (as libcu++'s
// latch::try_wait loop compiles): the loop reads two places, but waits for one.
__global__ void countdownThroughRereadPointer(int* out) {
  __shared__ long long* counter;
  __shared__ long long remaining;
  if (threadIdx.x == 0) {
    remaining = blockDim.x;
    counter = &remaining;
  }
  __syncthreads();
  cuda::atomic_ref<long long, cuda::thread_scope_block>(*counter).fetch_sub(
      1, cuda::std::memory_order_release);
  while (cuda::atomic_ref<long long, cuda::thread_scope_block>(**(long long* volatile*)&counter)
             .load(cuda::std::memory_order_acquire) != 0) {
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = 5000 + static_cast<int>(remaining);
}

// Thread 0 waits (cuda::atomic::wait) for a block-scope atomic the last thread stores and
// notifies.
__global__ void atomicWaitNotify(int* out) {
  using Atomic = cuda::atomic<int, cuda::thread_scope_block>;
  __shared__ alignas(Atomic) unsigned char storage[sizeof(Atomic)];
  Atomic* signal = reinterpret_cast<Atomic*>(storage);
  if (threadIdx.x == 0) new (signal) Atomic(0);
  __syncthreads();
  if (threadIdx.x == blockDim.x - 1) {
    signal->store(3000 + blockIdx.x, cuda::memory_order_release);
    signal->notify_all();
  }
  if (threadIdx.x == 0) {
    signal->wait(0, cuda::memory_order_acquire);
    out[blockIdx.x] = signal->load(cuda::memory_order_acquire);
  }
}

// A ticket queue in shared memory: each thread waits for its turn, which the thread before it
// gives; turns go in reverse thread order, so every waiter waits for a later thread.
__global__ void reverseTurns(int* order) {
  __shared__ volatile unsigned turn;
  __shared__ volatile unsigned position;
  if (threadIdx.x == 0) {
    turn = blockDim.x - 1;
    position = 0;
  }
  __syncthreads();
  while (turn != threadIdx.x) {
  }
  order[blockIdx.x * blockDim.x + position] = threadIdx.x;
  position = position + 1;
  __threadfence_block();
  turn = threadIdx.x - 1;
}

int main() {
  Checker check("intra_block_waits");
  const int blocks = 6, threads = 128;
  int* out = nullptr;
  int* flags = nullptr;
  CHECK(cudaMalloc(&out, blocks * threads * sizeof(int)));
  CHECK(cudaMalloc(&flags, blocks * sizeof(int)));

  sharedFlag<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  std::vector<int> got = download(out, blocks);
  for (int b = 0; b < blocks; ++b) check.eq("shared flag", b, 1000 + b, got[b]);

  CHECK(cudaMemset(flags, 0, blocks * sizeof(int)));
  globalFlag<<<blocks, threads>>>(flags, out);
  CHECK_LAUNCH();
  got = download(out, 2 * blocks);
  for (int b = 0; b < blocks; ++b) check.eq("global flag", b, 2001 + b, got[blocks + b]);

  CHECK(cudaMemset(flags, 0, blocks * sizeof(int)));
  atomicPolls<<<blocks, threads>>>(flags, out);
  CHECK_LAUNCH();
  got = download(out, 3 * blocks);
  for (int b = 0; b < blocks; ++b) {
    check.eq("atomicAdd(flag, 0) poll", b, 4001 + b, got[blocks + b]);
    check.eq("atomicOr(flag, 0) poll", b, 4002 + b, got[2 * blocks + b]);
  }

  blockLatch<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  got = download(out, blocks * threads);
  for (int i = 0; i < blocks * threads; ++i) check.eq("latch", i, threads, got[i]);

  latchThroughSharedPointer<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  got = download(out, blocks * threads);
  for (int i = 0; i < blocks * threads; ++i)
    check.eq("latch through a shared pointer", i, threads, got[i]);

  countdownThroughRereadPointer<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  got = download(out, blocks * threads);
  for (int i = 0; i < blocks * threads; ++i)
    check.eq("countdown through a re-read pointer", i, 5000, got[i]);

  atomicWaitNotify<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  got = download(out, blocks);
  for (int b = 0; b < blocks; ++b) check.eq("atomic wait", b, 3000 + b, got[b]);

  reverseTurns<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  got = download(out, blocks * threads);
  for (int b = 0; b < blocks; ++b)
    for (int p = 0; p < threads; ++p)
      check.eq("reverse turns", b * threads + p, threads - 1 - p, got[b * threads + p]);

  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(out));
  CHECK(cudaFree(flags));
  return check.finish();
}
