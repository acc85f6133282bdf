// Atomics of every common flavour.
__device__ unsigned long long counter64;
__device__ int lock;

__global__ void atomics(int* i, unsigned* u, float* f, double* d, unsigned long long* ull) {
  atomicAdd(i, 1);
  atomicSub(i + 1, 2);
  atomicExch(i + 2, 3);
  atomicMin(i + 3, -4);
  atomicMax(u, 5u);
  atomicInc(u + 1, 100u);
  atomicDec(u + 2, 100u);
  atomicAnd(i + 4, 0xff);
  atomicOr(i + 5, 0x100);
  atomicXor(i + 6, 0x3);
  atomicCAS(i + 7, 0, 1);
  atomicAdd(f, 1.5f);
  atomicAdd(d, 2.5);
  atomicAdd(ull, 1ull);
  atomicCAS(ull + 1, 0ull, 7ull);
  atomicAdd(&counter64, 1ull);
  atomicAdd_block(i + 8, 1);
  atomicAdd_system(i + 9, 1);
  while (atomicCAS(&lock, 0, 1) != 0) {
  }
  __threadfence();
  atomicExch(&lock, 0);
}

__device__ double atomicMulDouble(double* address, double factor) {
  auto* bits = reinterpret_cast<unsigned long long*>(address);
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    old = atomicCAS(bits, assumed, __double_as_longlong(factor * __longlong_as_double(assumed)));
  } while (assumed != old);
  return __longlong_as_double(old);
}

__global__ void casLoop(double* d) { atomicMulDouble(d, 1.01); }
