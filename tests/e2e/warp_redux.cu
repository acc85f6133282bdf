// Warp reductions (__reduce_*_sync, PTX redux.sync: sm_80 and later, so this program is built
// for compute_80 PTX only) under the full mask, the 8 lanes of a 200-thread block's last warp,
// and the odd lanes of a diverged branch; checked against host reductions.
#include <vector>

#include "e2e_check.h"

constexpr int kOps = 7;

__device__ __host__ inline unsigned valueOf(int block, int thread) {
  unsigned high = thread % 5 == 0 ? 0x80000000u : 0u;  // some negative as int
  return static_cast<unsigned>(block * 7919 + thread * 104729) ^ high;
}

__device__ inline unsigned existingLanes() {
  int base = threadIdx.x / 32 * 32;
  int lanes = min(32, static_cast<int>(blockDim.x) - base);
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
}

__global__ void reductions(unsigned* out, int total) {
#if __CUDA_ARCH__ >= 800
  int t = threadIdx.x, lane = t % 32;
  unsigned* o = out + blockIdx.x * blockDim.x + t;
  unsigned v = valueOf(blockIdx.x, t);
  unsigned mask = existingLanes();
  if (lane % 2 == 1) mask &= 0xaaaaaaaau;  // odd lanes reduce among themselves only
  else mask &= 0x55555555u;
  if (lane % 2 == 1) {
    o[0 * total] = __reduce_add_sync(mask, v);
    o[1 * total] = __reduce_min_sync(mask, v);
    o[2 * total] = __reduce_max_sync(mask, v);
    o[3 * total] = static_cast<unsigned>(__reduce_min_sync(mask, static_cast<int>(v)));
  } else {
    o[0 * total] = __reduce_add_sync(mask, v);
    o[1 * total] = __reduce_min_sync(mask, v);
    o[2 * total] = __reduce_max_sync(mask, v);
    o[3 * total] = static_cast<unsigned>(__reduce_max_sync(mask, static_cast<int>(v)));
  }
  unsigned full = existingLanes();
  o[4 * total] = __reduce_and_sync(full, v | 0x00ff0000u);
  o[5 * total] = __reduce_or_sync(full, v & 0x0f0f0f0fu);
  o[6 * total] = __reduce_xor_sync(full, v);
#endif
}

int main() {
  Checker check("warp_redux");
  const int blocks = 5;
  for (int threads : {256, 200}) {
    int total = blocks * threads;
    unsigned* out;
    CHECK(cudaMalloc(&out, kOps * total * sizeof(unsigned)));
    CHECK(cudaMemset(out, 0, kOps * total * sizeof(unsigned)));
    reductions<<<blocks, threads>>>(out, total);
    CHECK_LAUNCH();
    std::vector<unsigned> got(kOps * total);
    CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(out));
    for (int b = 0; b < blocks; ++b) {
      for (int t = 0; t < threads; ++t) {
        int base = t / 32 * 32, lanes = std::min(32, threads - base), parity = t % 2;
        unsigned sum = 0, umin = ~0u, umax = 0, andAll = ~0u, orAll = 0, xorAll = 0;
        int smin = 0x7fffffff, smax = -0x7fffffff - 1;
        for (int l = 0; l < lanes; ++l) {
          unsigned v = valueOf(b, base + l);
          andAll &= v | 0x00ff0000u;
          orAll |= v & 0x0f0f0f0fu;
          xorAll ^= v;
          if (l % 2 != parity) continue;
          sum += v;
          umin = std::min(umin, v);
          umax = std::max(umax, v);
          smin = std::min(smin, static_cast<int>(v));
          smax = std::max(smax, static_cast<int>(v));
        }
        unsigned expected[kOps] = {sum, umin, umax,
                                   static_cast<unsigned>(parity == 1 ? smin : smax),
                                   andAll, orAll, xorAll};
        static const char* names[kOps] = {"add", "minU", "maxU", "minMaxS", "and", "or", "xor"};
        int g = b * threads + t;
        for (int k = 0; k < kOps; ++k) check.eq(names[k], g, expected[k], got[k * total + g]);
      }
    }
  }
  std::printf("warp_redux: add/min/max/and/or/xor over full, partial and diverged masks\n");
  return check.finish();
}
