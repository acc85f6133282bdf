// Warp reductions by shuffles, the way CUDA code writes them (`v = v OP __shfl_down_sync(~0u, v,
// offset)` for offsets 16..1, or butterflies with __shfl_xor_sync), over float sums, integer
// sums, signed max, unsigned min, and, or and xor; chains whose middle value is used elsewhere,
// longer than five steps, with offsets that are not powers of two; block reductions whose
// last warp reduces alone (`if (warp == 0)`), in a loop; and sums that only lanes 0, or threads
// whose threadIdx.x is a multiple of 32, read, in 2D blocks. Every lane's value is checked against
// the same steps done on the host, bit for bit: float sums over NaNs (quiet, with payloads,
// negative), infinities, denormals and -0, whose NaN results are PTX's canonical NaN.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "e2e_check.h"

constexpr int kKinds = 11;
constexpr int kBlock = 256;
constexpr int kBlocks = 6;
constexpr int kTotal = kBlock * kBlocks;
constexpr unsigned kAll = 0xffffffffu;

__device__ __host__ inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

// Float inputs: ordinary values, with NaNs, infinities, denormals, -0 and huge values in some
// warps (warp w of block b: (b * 8 + w) % 6 says which).
__host__ inline float floatInput(int g) {
  uint32_t h = mix(static_cast<uint32_t>(g) * 2654435761u + 17);
  float v = static_cast<float>(static_cast<int>(h % 2001) - 1000) * 0.125f;
  int warpKind = (g / 32) % 6;
  int lane = g % 32;
  uint32_t bits = 0;
  if (warpKind == 1 && lane == 7) bits = 0x7fc00001u;   // a quiet NaN, payload 1
  if (warpKind == 2 && lane == 30) bits = 0xffc00000u;  // a negative NaN
  if (warpKind == 3 && lane % 9 == 0) bits = lane == 9 ? 0xff800000u : 0x7f800000u;  // -inf, inf
  if (warpKind == 4) bits = lane % 2 ? 0x00000005u : 0x80000000u;  // denormals and -0
  if (warpKind == 5) v = (lane % 2 ? 3.0e38f : 2.5e38f);           // sums overflow to inf
  if (bits != 0) std::memcpy(&v, &bits, sizeof v);
  return v;
}

__host__ inline int intInput(int g) { return static_cast<int>(mix(static_cast<uint32_t>(g) + 5)); }

__device__ inline uint32_t bitsOf(float f) { return __float_as_uint(f); }
__device__ inline uint32_t bitsOf(int i) { return static_cast<uint32_t>(i); }
__device__ inline uint32_t bitsOf(unsigned u) { return u; }

struct Sum {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Max {
  __device__ int operator()(int a, int b) const { return max(a, b); }
};
struct Min {
  __device__ unsigned operator()(unsigned a, unsigned b) const { return min(a, b); }
};
struct And {
  __device__ unsigned operator()(unsigned a, unsigned b) const { return a & b; }
};
struct Or {
  __device__ unsigned operator()(unsigned a, unsigned b) const { return a | b; }
};
struct Xor {
  __device__ unsigned operator()(unsigned a, unsigned b) const { return a ^ b; }
};

template <typename T, typename Op>
__device__ T reduceDown(T v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_down_sync(kAll, v, offset));
  return v;
}

template <typename T, typename Op>
__device__ T reduceXor(T v, Op op) {
#pragma unroll
  for (int mask = 1; mask < 32; mask <<= 1) v = op(v, __shfl_xor_sync(kAll, v, mask));
  return v;
}

__global__ void chains(const float* floats, const int* ints, uint32_t* out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  float f = floats[g];
  int i = ints[g];
  unsigned u = static_cast<unsigned>(i);
  uint32_t results[kKinds];
  results[0] = bitsOf(reduceDown(f, Sum()));
  results[1] = bitsOf(reduceXor(f, Sum()));
  results[2] = bitsOf(reduceDown(i, Sum()));
  results[3] = bitsOf(reduceXor(i, Max()));
  results[4] = bitsOf(reduceDown(u, Min()));
  results[5] = bitsOf(reduceXor(u, And()));
  results[6] = bitsOf(reduceDown(u >> 7, Or()));
  results[7] = bitsOf(reduceXor(u, Xor()));
  // A middle value used after the chain: the chain must end there.
  int v = i >> 8;
  v += __shfl_down_sync(kAll, v, 16);
  v += __shfl_down_sync(kAll, v, 8);
  int middle = v;
  v += __shfl_down_sync(kAll, v, 4);
  v += __shfl_down_sync(kAll, v, 2);
  v += __shfl_down_sync(kAll, v, 1);
  results[8] = bitsOf(v * 3 + middle);
  // Seven steps, offsets not all powers of two.
  float w = f * 0.5f;
  const int offsets[7] = {16, 8, 4, 2, 1, 3, 5};
#pragma unroll
  for (int k = 0; k < 7; ++k) w += __shfl_down_sync(kAll, w, offsets[k]);
  results[9] = bitsOf(w);
  // A butterfly by odd masks, then a plain shuffle of the result.
  int x = i & 0xffff;
  x += __shfl_xor_sync(kAll, x, 7);
  x += __shfl_xor_sync(kAll, x, 19);
  x += __shfl_xor_sync(kAll, x, 1);
  results[10] = bitsOf(__shfl_sync(kAll, x, (threadIdx.x * 5) % 32));
  for (int k = 0; k < kKinds; ++k) out[k * kTotal + g] = results[k];
}

// Block sums: each warp's sum, then the first warp's sum of those, `rounds` times over
// different data (the chain inside a loop, the last warp alone after the barrier).
__global__ void blockSums(const float* in, float* sums, int rounds) {
  __shared__ float warpSums[32];
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int warps = blockDim.x / 32;
  for (int r = 0; r < rounds; ++r) {
    float v = in[(r * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x];
    v = reduceDown(v, Sum());
    if (lane == 0) warpSums[warp] = v;
    __syncthreads();
    if (warp == 0) {
      v = lane < warps ? warpSums[lane] : 0.0f;
      v = reduceDown(v, Sum());
      if (lane == 0) sums[r * gridDim.x + blockIdx.x] = v;
    }
    __syncthreads();
  }
}

// Warp sums that only some threads read: those whose threadIdx.x is a multiple of 32, and each
// warp's %laneid 0. In 2D blocks whose rows are whole warps the first are lanes 0 as well; in
// rows of 16 or 48 threads some of them are lane 16 and read their own lane's sum.
__global__ void xLaneZeroSums(const float* in, float* xLaneZeros, float* laneZeros) {
  int g = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  float v = reduceDown(in[g], Sum());
  if (threadIdx.x % 32 == 0) xLaneZeros[g] = v;
  float w = reduceDown(in[g] * 2.0f, Sum());
  unsigned lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  if (lane == 0) laneZeros[g / 32] = w;
}

// The host's steps, as PTX defines shfl.down/bfly with clamp 31 and a full warp.
uint32_t floatBits(float f) {
  if (f != f) return 0x7fffffffu;  // PTX's canonical NaN
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

template <typename T, typename Op>
void hostSteps(std::vector<T>& warp, bool down, const std::vector<int>& offsets, Op op) {
  for (int offset : offsets) {
    std::vector<T> next(32);
    for (int l = 0; l < 32; ++l) {
      int source = down ? l + offset : l ^ offset;
      next[l] = op(warp[l], source <= 31 ? warp[source] : warp[l]);
    }
    warp = next;
  }
}

const std::vector<int> kDown = {16, 8, 4, 2, 1};
const std::vector<int> kButterfly = {1, 2, 4, 8, 16};

int main() {
  std::vector<float> floats(kTotal);
  std::vector<int> ints(kTotal);
  for (int g = 0; g < kTotal; ++g) {
    floats[g] = floatInput(g);
    ints[g] = intInput(g);
  }
  float* dFloats = upload(floats);
  int* dInts = upload(ints);
  uint32_t* dOut = nullptr;
  CHECK(cudaMalloc(&dOut, sizeof(uint32_t) * kKinds * kTotal));
  chains<<<kBlocks, kBlock>>>(dFloats, dInts, dOut);
  CHECK_LAUNCH();
  CHECK(cudaDeviceSynchronize());
  std::vector<uint32_t> out = download(dOut, static_cast<size_t>(kKinds) * kTotal);

  Checker check("warp_reduce_chains");
  auto fsum = [](float a, float b) { return a + b; };
  auto isum = [](uint32_t a, uint32_t b) { return a + b; };
  for (int first = 0; first < kTotal; first += 32) {
    std::vector<float> f(floats.begin() + first, floats.begin() + first + 32);
    std::vector<uint32_t> u(32);
    for (int l = 0; l < 32; ++l) u[l] = static_cast<uint32_t>(ints[first + l]);
    std::vector<std::vector<uint32_t>> expected(kKinds, std::vector<uint32_t>(32));
    auto asBits = [](const std::vector<float>& v) {
      std::vector<uint32_t> bits(32);
      for (int l = 0; l < 32; ++l) bits[l] = floatBits(v[l]);
      return bits;
    };
    std::vector<float> down = f, butterfly = f;
    hostSteps(down, true, kDown, fsum);
    hostSteps(butterfly, false, kButterfly, fsum);
    expected[0] = asBits(down);
    expected[1] = asBits(butterfly);
    std::vector<uint32_t> w = u;
    hostSteps(w, true, kDown, isum);
    expected[2] = w;
    w = u;
    hostSteps(w, false, kButterfly, [](uint32_t a, uint32_t b) {
      return static_cast<uint32_t>(std::max(static_cast<int32_t>(a), static_cast<int32_t>(b)));
    });
    expected[3] = w;
    w = u;
    hostSteps(w, true, kDown, [](uint32_t a, uint32_t b) { return std::min(a, b); });
    expected[4] = w;
    w = u;
    hostSteps(w, false, kButterfly, [](uint32_t a, uint32_t b) { return a & b; });
    expected[5] = w;
    for (int l = 0; l < 32; ++l) w[l] = u[l] >> 7;
    hostSteps(w, true, kDown, [](uint32_t a, uint32_t b) { return a | b; });
    expected[6] = w;
    w = u;
    hostSteps(w, false, kButterfly, [](uint32_t a, uint32_t b) { return a ^ b; });
    expected[7] = w;
    for (int l = 0; l < 32; ++l) w[l] = static_cast<uint32_t>(static_cast<int32_t>(u[l]) >> 8);
    hostSteps(w, true, {16, 8}, isum);
    std::vector<uint32_t> middle = w;
    hostSteps(w, true, {4, 2, 1}, isum);
    for (int l = 0; l < 32; ++l) expected[8][l] = w[l] * 3 + middle[l];
    std::vector<float> seven(32);
    for (int l = 0; l < 32; ++l) seven[l] = f[l] * 0.5f;
    hostSteps(seven, true, {16, 8, 4, 2, 1, 3, 5}, fsum);
    expected[9] = asBits(seven);
    for (int l = 0; l < 32; ++l) w[l] = u[l] & 0xffff;
    hostSteps(w, false, {7, 19, 1}, isum);
    for (int l = 0; l < 32; ++l) expected[10][l] = w[((first + l) % kBlock * 5) % 32];
    for (int k = 0; k < kKinds; ++k)
      for (int l = 0; l < 32; ++l)
        check.eq("chain kind", static_cast<long long>(k) * kTotal + first + l, expected[k][l],
                 out[k * kTotal + first + l]);
  }

  // Block sums at 256 and 1,024 threads, 5 rounds each.
  for (int threads : {256, 1024}) {
    const int blocks = 7, rounds = 5;
    std::vector<float> in(static_cast<size_t>(rounds) * blocks * threads);
    for (size_t j = 0; j < in.size(); ++j)
      in[j] =
          static_cast<float>(static_cast<int>(mix(static_cast<uint32_t>(j)) % 4001) - 2000) / 64.0f;
    float* dIn = upload(in);
    float* dSums = nullptr;
    CHECK(cudaMalloc(&dSums, sizeof(float) * rounds * blocks));
    blockSums<<<blocks, threads>>>(dIn, dSums, rounds);
    CHECK_LAUNCH();
    CHECK(cudaDeviceSynchronize());
    std::vector<float> sums = download(dSums, static_cast<size_t>(rounds) * blocks);
    for (int r = 0; r < rounds; ++r)
      for (int b = 0; b < blocks; ++b) {
        std::vector<float> warpSums(32, 0.0f);
        for (int wp = 0; wp < threads / 32; ++wp) {
          size_t at = (static_cast<size_t>(r) * blocks + b) * threads + wp * 32;
          std::vector<float> lanes(in.begin() + at, in.begin() + at + 32);
          hostSteps(lanes, true, kDown, fsum);
          warpSums[wp] = lanes[0];
        }
        hostSteps(warpSums, true, kDown, fsum);
        check.eq("block sum bits", static_cast<long long>(r) * blocks + b, floatBits(warpSums[0]),
                 floatBits(sums[r * blocks + b]));
      }
    CHECK(cudaFree(dIn));
    CHECK(cudaFree(dSums));
  }

  // threadIdx.x % 32 == 0 and lanes 0 in blocks of 16x8, 48x4 and 64x2 threads.
  for (dim3 shape : {dim3(16, 8), dim3(48, 4), dim3(64, 2)}) {
    const int blocks = 5, threads = static_cast<int>(shape.x * shape.y), total = blocks * threads;
    std::vector<float> in(total);
    for (int j = 0; j < total; ++j)
      in[j] =
          static_cast<float>(static_cast<int>(mix(static_cast<uint32_t>(j) + 99) % 2001) - 1000) /
          32.0f;
    float* dIn = upload(in);
    const float kUnwritten = -12345.0f;
    std::vector<float> unwritten(total, kUnwritten);
    float* dXLaneZeros = upload(unwritten);
    float* dLaneZeros = upload(std::vector<float>(total / 32, kUnwritten));
    xLaneZeroSums<<<blocks, shape>>>(dIn, dXLaneZeros, dLaneZeros);
    CHECK_LAUNCH();
    std::vector<float> xLaneZeros = download(dXLaneZeros, total);
    std::vector<float> laneZeros = download(dLaneZeros, total / 32);
    for (int first = 0; first < total; first += 32) {
      std::vector<float> sums(in.begin() + first, in.begin() + first + 32), doubled(32);
      for (int l = 0; l < 32; ++l) doubled[l] = sums[l] * 2.0f;
      hostSteps(sums, true, kDown, fsum);
      hostSteps(doubled, true, kDown, fsum);
      for (int l = 0; l < 32; ++l) {
        int g = first + l;
        bool read = (g % threads) % static_cast<int>(shape.x) % 32 == 0;
        check.eq("threadIdx.x % 32 == 0 sum", shape.x * 100000LL + g,
                 floatBits(read ? sums[l] : kUnwritten), floatBits(xLaneZeros[g]));
      }
      check.eq("lane 0 sum", shape.x * 100000LL + first, floatBits(doubled[0]),
               floatBits(laneZeros[first / 32]));
    }
    CHECK(cudaFree(dIn));
    CHECK(cudaFree(dXLaneZeros));
    CHECK(cudaFree(dLaneZeros));
  }
  CHECK(cudaFree(dFloats));
  CHECK(cudaFree(dInts));
  CHECK(cudaFree(dOut));
  return check.finish();
}
