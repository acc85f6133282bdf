// NaN bit patterns. The CUDA C++ Programming Guide (floating-point standard) documents that an
// operation producing a NaN in single precision yields the one canonical NaN, 0x7fffffff: no
// payload is passed on and no sign is set (the host generates 0xffc00000, which printf shows as
// "-nan"). Half and bfloat16 results likewise give 0x7fff. A NaN that is only moved (loaded and
// stored, selected, a constant) keeps its bits. Each kernel runs many threads, so the CPU
// device's vectorized block functions are exercised along with the scalar paths.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "e2e_check.h"

constexpr int kOuts = 9;
constexpr uint32_t kCanonical = 0x7fffffffu;
constexpr uint32_t kConstantNaN = 0x7fc00005u;

__global__ void singleOps(const float* a, const float* b, uint32_t* out, float* sums, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  uint32_t* o = out + i * kOuts;
  o[0] = __float_as_uint(x * y);
  o[1] = __float_as_uint(x + y);
  o[2] = __float_as_uint(x / y);
  o[3] = __float_as_uint(sqrtf(x));
  o[4] = __float_as_uint(fmaf(x, y, 1.0f));
  // Moved, not computed, on odd elements: the loaded bits pass unchanged.
  float mixed = (i & 1) ? x : x - y;
  o[5] = __float_as_uint(mixed);
  // A NaN constant keeps its bits beside a computed value.
  float constant = (i % 3 == 0) ? __uint_as_float(kConstantNaN) : x * 2.0f;
  o[6] = __float_as_uint(constant);
  o[7] = __float_as_uint(-(x * y) * 0.5f);
  o[8] = __float_as_uint(x);
  // A loop accumulator: every term passes through; the sum is stored once.
  float sum = 0.0f;
  for (int k = 0; k < 8; ++k) sum += a[(i + k) % n] * 0.5f;
  sums[i] = sum;
}

// Warp shuffles move bits: a computed NaN another lane stores is canonical, a loaded one passes
// unchanged, and a sum of shuffled values is a computed result again. Every lane runs.
constexpr int kShuffleOuts = 4;
__global__ void shuffledOps(const float* a, const float* b, uint32_t* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = a[i], y = b[i];
  float sum = x + y;
  float mixed = (i & 1) ? x : sum;
  uint32_t* o = out + i * kShuffleOuts;
  o[0] = __float_as_uint(__shfl_down_sync(0xffffffffu, sum, 1));
  o[1] = __float_as_uint(__shfl_xor_sync(0xffffffffu, mixed, 2));
  o[2] = __float_as_uint(mixed + __shfl_down_sync(0xffffffffu, mixed, 16));
  o[3] = __float_as_uint(__shfl_down_sync(0xffffffffu, x, 3));
}

__global__ void halfOps(const __half* a, const __half* b, const __nv_bfloat16* c,
                        const __nv_bfloat16* d, uint16_t* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 pair = __hmul2(__halves2half2(a[i], b[i]), __halves2half2(b[i], a[i]));
  out[i * 5 + 0] = __half_as_ushort(__hmul(a[i], b[i]));
  out[i * 5 + 1] = __half_as_ushort(__low2half(pair));
  out[i * 5 + 2] = __half_as_ushort(__high2half(pair));
  out[i * 5 + 3] = __bfloat16_as_ushort(__hadd(c[i], d[i]));
  out[i * 5 + 4] = __half_as_ushort(a[i]);
}

static float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
static uint32_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}
// What the device stores for a computed single-precision result.
static uint32_t deviceBits(float f) { return std::isnan(f) ? kCanonical : floatBits(f); }

int main() {
  Checker check("nan_results");
  const int n = 4096;
  // Inputs cycle through numbers, zeros, infinities, and NaNs with payloads and either sign.
  const uint32_t special[] = {0x00000000u, 0x7f800000u, 0xff800000u, 0x7fa00001u,
                              0xffc00123u, 0x7fc00000u, 0xbf800000u, 0x80000000u};
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = (i % 5 == 0) ? bitsToFloat(special[(i / 5) % 8]) : static_cast<float>(i % 17) - 8.0f;
    b[i] = (i % 7 == 0) ? bitsToFloat(special[(i / 7 + 3) % 8]) : static_cast<float>(i % 13) - 6.0f;
  }
  float* dA = upload(a);
  float* dB = upload(b);
  uint32_t* dOut;
  float* dSums;
  CHECK(cudaMalloc(&dOut, n * kOuts * sizeof(uint32_t)));
  CHECK(cudaMalloc(&dSums, n * sizeof(float)));
  singleOps<<<n / 256, 256>>>(dA, dB, dOut, dSums, n);
  CHECK_LAUNCH();
  std::vector<uint32_t> out = download(dOut, n * kOuts);
  std::vector<float> sums = download(dSums, n);
  int nans = 0;
  for (int i = 0; i < n; ++i) {
    float x = a[i], y = b[i];
    const uint32_t* o = &out[i * kOuts];
    // Volatile keeps the host compiler from contracting or folding these.
    volatile float vx = x, vy = y;
    float product = vx * vy;
    check.eq("mul", i, deviceBits(product), o[0]);
    check.eq("add", i, deviceBits(vx + vy), o[1]);
    check.eq("div", i, deviceBits(vx / vy), o[2]);
    check.eq("sqrtf", i, deviceBits(std::sqrt(x)), o[3]);
    check.eq("fmaf", i, deviceBits(std::fma(x, y, 1.0f)), o[4]);
    check.eq("moved or computed", i, (i & 1) ? floatBits(x) : deviceBits(vx - vy), o[5]);
    check.eq("constant or computed", i, (i % 3 == 0) ? kConstantNaN : deviceBits(vx * 2.0f), o[6]);
    // Negation flips the sign of the canonical NaN it is given; the product that follows
    // generates the canonical NaN again.
    check.eq("negated product", i, deviceBits(-product * 0.5f), o[7]);
    check.eq("loaded", i, floatBits(x), o[8]);
    float sum = 0.0f;
    for (int k = 0; k < 8; ++k) sum += a[(i + k) % n] * 0.5f;
    check.eq("accumulated", i, deviceBits(sum), floatBits(sums[i]));
    nans += std::isnan(product);
  }
  check.expect(nans > 100, "the inputs produce NaN products");

  uint32_t* dShuffled;
  CHECK(cudaMalloc(&dShuffled, n * kShuffleOuts * sizeof(uint32_t)));
  shuffledOps<<<n / 256, 256>>>(dA, dB, dShuffled);
  CHECK_LAUNCH();
  std::vector<uint32_t> shuffled = download(dShuffled, n * kShuffleOuts);
  auto sumOf = [&](int j) {
    volatile float vx = a[j], vy = b[j];
    return vx + vy;
  };
  // What `mixed` holds in thread j: the loaded bits on odd threads, else the computed sum.
  auto mixedBits = [&](int j) { return (j & 1) ? floatBits(a[j]) : deviceBits(sumOf(j)); };
  // shfl.down's source: `delta` lanes up, or the lane itself past the warp's end.
  auto down = [](int j, int delta) { return (j & 31) + delta < 32 ? j + delta : j; };
  for (int i = 0; i < n; ++i) {
    const uint32_t* o = &shuffled[i * kShuffleOuts];
    check.eq("shuffled sum", i, deviceBits(sumOf(down(i, 1))), o[0]);
    check.eq("shuffled, moved or computed", i, mixedBits(i ^ 2), o[1]);
    volatile float own = bitsToFloat(mixedBits(i)), other = bitsToFloat(mixedBits(down(i, 16)));
    check.eq("sum of shuffled", i, deviceBits(own + other), o[2]);
    check.eq("shuffled load", i, floatBits(a[down(i, 3)]), o[3]);
  }
  CHECK(cudaFree(dShuffled));

  std::vector<__half> ha(n), hb(n);
  std::vector<__nv_bfloat16> bc(n), bd(n);
  const uint16_t halfSpecial[] = {0x0000, 0x7c00, 0xfc00, 0x7d01, 0xfe23, 0x3c00};
  const uint16_t bf16Special[] = {0x0000, 0x7f80, 0xff80, 0x7fa1, 0xffc3, 0x3f80};
  for (int i = 0; i < n; ++i) {
    ha[i] = __ushort_as_half(halfSpecial[i % 6]);
    hb[i] = __ushort_as_half(halfSpecial[(i / 6) % 6]);
    bc[i] = __ushort_as_bfloat16(bf16Special[i % 6]);
    bd[i] = __ushort_as_bfloat16(bf16Special[(i / 6) % 6]);
  }
  __half* dHa = upload(ha);
  __half* dHb = upload(hb);
  __nv_bfloat16* dBc = upload(bc);
  __nv_bfloat16* dBd = upload(bd);
  uint16_t* dHalfOut;
  CHECK(cudaMalloc(&dHalfOut, n * 5 * sizeof(uint16_t)));
  halfOps<<<n / 256, 256>>>(dHa, dHb, dBc, dBd, dHalfOut, n);
  CHECK_LAUNCH();
  std::vector<uint16_t> halfOut = download(dHalfOut, n * 5);
  for (int i = 0; i < n; ++i) {
    // Half products and bf16 sums of these inputs are exact in single precision.
    float x = __half2float(ha[i]), y = __half2float(hb[i]);
    float p = x * y;
    uint16_t expectHalf = std::isnan(p) ? 0x7fff : __half_as_ushort(__float2half(p));
    check.eq("__hmul", i, expectHalf, halfOut[i * 5 + 0]);
    check.eq("__hmul2 low", i, expectHalf, halfOut[i * 5 + 1]);
    check.eq("__hmul2 high", i, expectHalf, halfOut[i * 5 + 2]);
    float s = __bfloat162float(bc[i]) + __bfloat162float(bd[i]);
    uint16_t expectBf16 = std::isnan(s) ? 0x7fff : __bfloat16_as_ushort(__float2bfloat16(s));
    check.eq("bf16 __hadd", i, expectBf16, halfOut[i * 5 + 3]);
    check.eq("half loaded", i, halfSpecial[i % 6], halfOut[i * 5 + 4]);
  }

  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dOut));
  CHECK(cudaFree(dSums));
  CHECK(cudaFree(dHa));
  CHECK(cudaFree(dHb));
  CHECK(cudaFree(dBc));
  CHECK(cudaFree(dBd));
  CHECK(cudaFree(dHalfOut));
  return check.finish();
}
