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

int main() {
  Checker check("vector_atomics");
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
