// Warp shuffles (__shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync) at widths 32,
// 16 and 8, and shuffle-based block reductions over int and float, in blocks of 256 threads and
// of 200 (whose last warp has 8 lanes); checked against the same shuffles done on the host.
// Reading a lane that is absent is undefined in CUDA, so those results are not checked.
#include <vector>

#include "e2e_check.h"

constexpr int kKinds = 12;  // idx, up, down, xor at widths 32, 16, 8
__device__ __host__ inline int widthOf(int w) { return 32 >> w; }  // 32, 16, 8

__device__ __host__ inline int valueOf(int block, int thread) {
  return block * 1000 + thread * 3 + 1;
}
__device__ __host__ inline int idxSource(int lane, int width) { return (lane * 7 + 3) % width; }
__device__ __host__ inline int delta(int kind) { return 1 + kind % 5; }  // 1..5
__device__ __host__ inline int xorMask(int width) { return width / 2 + 1; }  // 17, 9, 5

// The lanes of this thread's warp that exist in the block.
__device__ inline unsigned existingLanes() {
  int base = threadIdx.x / 32 * 32;
  int lanes = min(32, static_cast<int>(blockDim.x) - base);
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
}

__global__ void shuffles(int* out, int total) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int v = valueOf(blockIdx.x, threadIdx.x);
  unsigned mask = existingLanes();
  int lane = threadIdx.x % 32;
  for (int w = 0; w < 3; ++w) {
    int width = widthOf(w);
    int k = w * 4;
    out[(k + 0) * total + g] = __shfl_sync(mask, v, idxSource(lane % width, width), width);
    out[(k + 1) * total + g] = __shfl_up_sync(mask, v, delta(k + 1), width);
    out[(k + 2) * total + g] = __shfl_down_sync(mask, v, delta(k + 2), width);
    out[(k + 3) * total + g] = __shfl_xor_sync(mask, v, xorMask(width) % width, width);
  }
}

// The classic reduction: shuffle down within each warp, then the warps' sums through shared.
template <typename T>
__device__ T blockSum(T v, T* partial) {
  unsigned mask = existingLanes();
  int lanes = __popc(mask);
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int offset = 16; offset > 0; offset /= 2) {
    T other = __shfl_down_sync(mask, v, offset);
    if (lane + offset < lanes) v += other;  // only lanes that exist contribute
  }
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  int warps = (blockDim.x + 31) / 32;
  T sum = 0;
  if (warp == 0) {
    v = lane < warps ? partial[lane] : T(0);
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    sum = v;
  }
  return sum;
}

__global__ void reduce(int* intSums, float* floatSums) {
  __shared__ int intPartial[32];
  __shared__ float floatPartial[32];
  int t = threadIdx.x;
  int i = blockSum<int>(valueOf(blockIdx.x, t) % 97 - 40, intPartial);
  float f = blockSum<float>(static_cast<float>(t % 13) * 0.5f - 2.25f, floatPartial);
  if (t == 0) {
    intSums[blockIdx.x] = i;
    floatSums[blockIdx.x] = f;
  }
}

// The source lane of each kind as CUDA defines it, or -1 when the own value is kept.
int hostSource(int kind, int lane) {
  int width = widthOf(kind / 4);
  int base = lane / width * width, inSeg = lane % width;
  switch (kind % 4) {
    case 0: return base + idxSource(inSeg, width);
    case 1: return inSeg >= delta(kind) ? lane - delta(kind) : lane;
    case 2: return inSeg + delta(kind) < width ? lane + delta(kind) : lane;
    default: return base + (inSeg ^ (xorMask(width) % width));
  }
}

void checkShuffles(Checker& check, int blocks, int threads) {
  int total = blocks * threads;
  int* out;
  CHECK(cudaMalloc(&out, kKinds * total * sizeof(int)));
  CHECK(cudaMemset(out, 0xff, kKinds * total * sizeof(int)));
  shuffles<<<blocks, threads>>>(out, total);
  CHECK_LAUNCH();
  std::vector<int> got(kKinds * total);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(out));
  static const char* names[kKinds] = {"idx32", "up32", "down32", "xor32", "idx16", "up16",
                                      "down16", "xor16", "idx8", "up8", "down8", "xor8"};
  for (int k = 0; k < kKinds; ++k) {
    for (int b = 0; b < blocks; ++b) {
      for (int t = 0; t < threads; ++t) {
        int source = t / 32 * 32 + hostSource(k, t % 32);
        if (source >= threads) continue;  // an absent lane: undefined
        int g = b * threads + t;
        check.eq(names[k], g, valueOf(b, source), got[k * total + g]);
      }
    }
  }
}

void checkReduction(Checker& check, int blocks, int threads) {
  int* intSums;
  float* floatSums;
  CHECK(cudaMalloc(&intSums, blocks * sizeof(int)));
  CHECK(cudaMalloc(&floatSums, blocks * sizeof(float)));
  reduce<<<blocks, threads>>>(intSums, floatSums);
  CHECK_LAUNCH();
  std::vector<int> gotInt(blocks);
  std::vector<float> gotFloat(blocks);
  CHECK(cudaMemcpy(gotInt.data(), intSums, blocks * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(gotFloat.data(), floatSums, blocks * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(intSums));
  CHECK(cudaFree(floatSums));
  for (int b = 0; b < blocks; ++b) {
    int i = 0;
    float f = 0;  // halves and quarters: every partial sum is exact in float
    for (int t = 0; t < threads; ++t) {
      i += valueOf(b, t) % 97 - 40;
      f += static_cast<float>(t % 13) * 0.5f - 2.25f;
    }
    check.eq(threads == 256 ? "intSum256" : "intSum200", b, i, gotInt[b]);
    check.eq(threads == 256 ? "floatSum256" : "floatSum200", b, f, gotFloat[b]);
  }
}

int main() {
  Checker check("warp_shuffle");
  checkShuffles(check, 5, 256);
  checkShuffles(check, 4, 200);
  checkReduction(check, 9, 256);
  checkReduction(check, 7, 200);
  std::printf("warp_shuffle: %d shuffle kinds, reductions over 256- and 200-thread blocks\n",
              kKinds);
  return check.finish();
}
