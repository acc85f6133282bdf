// Vector atomics (sm_90): atomicAdd on float2 and float4 in global memory, which nvcc emits as
// atom.global.add.v2.f32 / .v4.f32, from many blocks into the same few vectors; each element's
// addition is atomic. Checked against host sums (small integers: exact in any order) and the
// old values each thread saw.
#include <algorithm>
#include <vector>

#include "e2e_check.h"

constexpr int kSlots = 4;

__host__ __device__ inline float addend(int i, int lane) { return float((i * 7 + lane * 3) % 11); }

__global__ void accumulate(float2* pairs, float4* quads, float2* oldPairs, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float2 old = atomicAdd(&pairs[i % kSlots], make_float2(addend(i, 0), addend(i, 1)));
  atomicAdd(&quads[i % kSlots],
            make_float4(addend(i, 0), addend(i, 1), addend(i, 2), addend(i, 3)));
  oldPairs[i] = old;
}

// Two corners of the vector forms. atom.add.v2.f32 without .noftz flushes subnormal inputs and
// results on global memory, as the scalar form does ("atom.add.f32 operation without .noftz
// flushes subnormal inputs and results to sign-preserving zero on global memory"). The f16x2
// min/max "implement the exact same floating-point instructions as the non-atomic min and max",
// which order -0 below +0.
__global__ void vectorCorners(float2* subnormals, unsigned* halves, unsigned* olds) {
  atomicAdd(subnormals, make_float2(1e-40f, -1e-40f));
  unsigned o0, o1;
  asm volatile("atom.global.min.noftz.v2.f16x2 {%0, %1}, [%2], {%3, %4};"
               : "=r"(o0), "=r"(o1)
               : "l"(halves), "r"(0x80000000u), "r"(0x00008000u)
               : "memory");
  olds[0] = o0;
  olds[1] = o1;
  asm volatile("atom.global.max.noftz.v2.f16x2 {%0, %1}, [%2], {%3, %4};"
               : "=r"(o0), "=r"(o1)
               : "l"(halves + 2), "r"(0x80000000u), "r"(0x00008000u)
               : "memory");
}

int main() {
  Checker check("vector_atomics");
  {
    float2* subnormals = upload(std::vector<float2>{make_float2(1e-40f, -1e-40f)});
    // Each word holds two halves: low -0 (0x8000) and high +0, then the other way round.
    unsigned* halves =
        upload(std::vector<unsigned>{0x00008000u, 0x80000000u, 0x00008000u, 0x80000000u});
    unsigned* olds = upload(std::vector<unsigned>(2, 0));
    vectorCorners<<<1, 1>>>(subnormals, halves, olds);
    CHECK_LAUNCH();
    float2 sum = download(subnormals, 1)[0];
    check.eq("flushed float2 sum x (bits)", 0, 0u, reinterpret_cast<unsigned&>(sum.x));
    check.eq("flushed float2 sum y (bits)", 0, 0x80000000u, reinterpret_cast<unsigned&>(sum.y));
    std::vector<unsigned> h = download(halves, 4), o = download(olds, 2);
    check.eq("f16x2 min of signed zeros", 0, 0x80008000u, h[0]);
    check.eq("f16x2 min of signed zeros", 1, 0x80008000u, h[1]);
    check.eq("f16x2 max of signed zeros", 2, 0x00000000u, h[2]);
    check.eq("f16x2 max of signed zeros", 3, 0x00000000u, h[3]);
    check.eq("old value", 0, 0x00008000u, o[0]);
    check.eq("old value", 1, 0x80000000u, o[1]);
    for (void* p :
         {static_cast<void*>(subnormals), static_cast<void*>(halves), static_cast<void*>(olds)})
      CHECK(cudaFree(p));
  }
  const int n = 6000, threads = 256, blocks = (n + threads - 1) / threads;
  float2* pairs = upload(std::vector<float2>(kSlots, make_float2(0, 0)));
  float4* quads = upload(std::vector<float4>(kSlots, make_float4(0, 0, 0, 0)));
  float2* oldPairs = nullptr;
  CHECK(cudaMalloc(&oldPairs, n * sizeof(float2)));
  accumulate<<<blocks, threads>>>(pairs, quads, oldPairs, n);
  CHECK_LAUNCH();
  std::vector<float2> gotPairs = download(pairs, kSlots), olds = download(oldPairs, n);
  std::vector<float4> gotQuads = download(quads, kSlots);
  for (int s = 0; s < kSlots; ++s) {
    float want[4] = {0, 0, 0, 0};
    for (int i = s; i < n; i += kSlots)
      for (int lane = 0; lane < 4; ++lane) want[lane] += addend(i, lane);
    check.eq("float2 x", s, want[0], gotPairs[s].x);
    check.eq("float2 y", s, want[1], gotPairs[s].y);
    check.eq("float4 x", s, want[0], gotQuads[s].x);
    check.eq("float4 y", s, want[1], gotQuads[s].y);
    check.eq("float4 z", s, want[2], gotQuads[s].z);
    check.eq("float4 w", s, want[3], gotQuads[s].w);
  }
  // Every old x a thread saw is a partial sum of its slot, and all of them are distinct: no two
  // additions saw the same value (the addends of x are never all 0 in a row here).
  for (int s = 0; s < kSlots; ++s) {
    std::vector<float> seen;
    for (int i = s; i < n; i += kSlots) seen.push_back(olds[i].x);
    std::sort(seen.begin(), seen.end());
    int repeats = 0;
    for (size_t k = 1; k < seen.size(); ++k) repeats += seen[k] == seen[k - 1] ? 1 : 0;
    int zeros = 0;  // addends of 0 legitimately repeat a partial sum
    for (int i = s; i < n; i += kSlots) zeros += addend(i, 0) == 0 ? 1 : 0;
    check.eq("repeated old values beyond zero addends", s, true, repeats <= zeros);
  }
  for (void* p :
       {static_cast<void*>(pairs), static_cast<void*>(quads), static_cast<void*>(oldPairs)})
    CHECK(cudaFree(p));
  std::printf("vector_atomics: %d float2 and float4 atomic additions into %d slots\n", n, kSlots);
  return check.finish();
}
