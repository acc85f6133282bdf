// CUDA's SIMD-in-a-word intrinsics (__vabsdiffu4, __vsadu4, __vadd4, __vaddss2, __vavgu4,
// __vcmpgeu4, __vmaxs2, ...): nvcc implements some with PTX video instructions (vabsdiff4) and the
// rest with integer arithmetic; every result is checked against a host reference written from
// the CUDA Math API's description of each intrinsic, over random words and edge values.
#include <cstdint>
#include <random>
#include <vector>

#include "e2e_check.h"

constexpr int kFunctions = 24;

__global__ void simd(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  unsigned* o = out + size_t(i) * kFunctions;
  o[0] = __vabsdiffu4(x, y);
  o[1] = __vsadu4(x, y);
  o[2] = __vabsdiffs4(x, y);
  o[3] = __vsads4(x, y);
  o[4] = __vabsdiffu2(x, y);
  o[5] = __vsadu2(x, y);
  o[6] = __vadd4(x, y);
  o[7] = __vaddss4(x, y);
  o[8] = __vaddus4(x, y);
  o[9] = __vsub4(x, y);
  o[10] = __vsubss4(x, y);
  o[11] = __vavgu4(x, y);
  o[12] = __vhaddu4(x, y);
  o[13] = __vcmpgeu4(x, y);
  o[14] = __vcmpeq4(x, y);
  o[15] = __vmaxs4(x, y);
  o[16] = __vminu4(x, y);
  o[17] = __vseteq4(x, y);
  o[18] = __vadd2(x, y);
  o[19] = __vaddss2(x, y);
  o[20] = __vavgs2(x, y);
  o[21] = __vmaxs2(x, y);
  o[22] = __vcmpgtu2(x, y);
  o[23] = __vabsss4(x);
}

// ---- Host references, lane by lane ----
unsigned lane(unsigned w, int i, int width) { return (w >> (i * width)) & ((1u << width) - 1); }
int slane(unsigned w, int i, int width) {
  int v = static_cast<int>(lane(w, i, width));
  return v >= (1 << (width - 1)) ? v - (1 << width) : v;
}
template <class F>
unsigned perLane(unsigned x, unsigned y, int width, F f) {
  unsigned r = 0;
  for (int i = 0; i < 32 / width; ++i)
    r |= (static_cast<unsigned>(f(x, y, i)) & ((1u << width) - 1)) << (i * width);
  return r;
}
int clampInt(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
int iabs(int v) { return v < 0 ? -v : v; }

std::vector<unsigned> reference(unsigned x, unsigned y) {
  std::vector<unsigned> r(kFunctions);
  auto u8 = [](unsigned w, int i) { return static_cast<int>(lane(w, i, 8)); };
  auto s8 = [](unsigned w, int i) { return slane(w, i, 8); };
  auto u16 = [](unsigned w, int i) { return static_cast<int>(lane(w, i, 16)); };
  auto s16 = [](unsigned w, int i) { return slane(w, i, 16); };
  r[0] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) { return iabs(u8(a, i) - u8(b, i)); });
  r[1] = 0;
  for (int i = 0; i < 4; ++i) r[1] += iabs(u8(x, i) - u8(y, i));
  r[2] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) { return iabs(s8(a, i) - s8(b, i)); });
  r[3] = 0;
  for (int i = 0; i < 4; ++i) r[3] += iabs(s8(x, i) - s8(y, i));
  r[4] =
      perLane(x, y, 16, [&](unsigned a, unsigned b, int i) { return iabs(u16(a, i) - u16(b, i)); });
  r[5] = 0;
  for (int i = 0; i < 2; ++i) r[5] += iabs(u16(x, i) - u16(y, i));
  r[6] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) { return u8(a, i) + u8(b, i); });
  r[7] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) {
    return clampInt(s8(a, i) + s8(b, i), -128, 127);
  });
  r[8] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) {
    return clampInt(u8(a, i) + u8(b, i), 0, 255);
  });
  r[9] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) { return u8(a, i) - u8(b, i); });
  r[10] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) {
    return clampInt(s8(a, i) - s8(b, i), -128, 127);
  });
  r[11] = perLane(x, y, 8,
                  [&](unsigned a, unsigned b, int i) { return (u8(a, i) + u8(b, i) + 1) >> 1; });
  r[12] =
      perLane(x, y, 8, [&](unsigned a, unsigned b, int i) { return (u8(a, i) + u8(b, i)) >> 1; });
  r[13] = perLane(x, y, 8,
                  [&](unsigned a, unsigned b, int i) { return u8(a, i) >= u8(b, i) ? 0xff : 0; });
  r[14] = perLane(x, y, 8,
                  [&](unsigned a, unsigned b, int i) { return u8(a, i) == u8(b, i) ? 0xff : 0; });
  r[15] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) {
    return s8(a, i) > s8(b, i) ? s8(a, i) : s8(b, i);
  });
  r[16] = perLane(x, y, 8, [&](unsigned a, unsigned b, int i) {
    return u8(a, i) < u8(b, i) ? u8(a, i) : u8(b, i);
  });
  r[17] =
      perLane(x, y, 8, [&](unsigned a, unsigned b, int i) { return u8(a, i) == u8(b, i) ? 1 : 0; });
  r[18] = perLane(x, y, 16, [&](unsigned a, unsigned b, int i) { return u16(a, i) + u16(b, i); });
  r[19] = perLane(x, y, 16, [&](unsigned a, unsigned b, int i) {
    return clampInt(s16(a, i) + s16(b, i), -32768, 32767);
  });
  // __vavgs2: the signed rounded average, (a + b + 1) >> 1 for a non-negative sum and
  // (a + b) >> 1 otherwise (vavrg2's rounding).
  r[20] = perLane(x, y, 16, [&](unsigned a, unsigned b, int i) {
    int sum = s16(a, i) + s16(b, i);
    return sum >= 0 ? (sum + 1) >> 1 : sum >> 1;
  });
  r[21] = perLane(x, y, 16, [&](unsigned a, unsigned b, int i) {
    return s16(a, i) > s16(b, i) ? s16(a, i) : s16(b, i);
  });
  r[22] = perLane(
      x, y, 16, [&](unsigned a, unsigned b, int i) { return u16(a, i) > u16(b, i) ? 0xffff : 0; });
  r[23] = perLane(x, y, 8,
                  [&](unsigned a, unsigned, int i) { return clampInt(iabs(s8(a, i)), 0, 127); });
  return r;
}

int main() {
  Checker check("simd_intrinsics");
  const unsigned edges[] = {0u,          0xffffffffu, 0x80808080u, 0x7f7f7f7fu, 0x01010101u,
                            0xff00ff00u, 0x00ff00ffu, 0x80007fffu, 0x7fff8000u, 0x12345678u};
  std::vector<unsigned> a, b;
  for (unsigned x : edges)
    for (unsigned y : edges) {
      a.push_back(x);
      b.push_back(y);
    }
  std::mt19937 rng(20261203);
  while (a.size() < 20000) {
    a.push_back(rng());
    b.push_back(rng());
  }
  int n = static_cast<int>(a.size());
  unsigned* da = upload(a);
  unsigned* db = upload(b);
  unsigned* dout = nullptr;
  CHECK(cudaMalloc(&dout, size_t(n) * kFunctions * sizeof(unsigned)));
  simd<<<(n + 127) / 128, 128>>>(da, db, dout, n);
  CHECK_LAUNCH();
  std::vector<unsigned> out = download(dout, size_t(n) * kFunctions);
  const char* names[kFunctions] = {
      "__vabsdiffu4", "__vsadu4",   "__vabsdiffs4", "__vsads4", "__vabsdiffu2", "__vsadu2",
      "__vadd4",      "__vaddss4",  "__vaddus4",    "__vsub4",  "__vsubss4",    "__vavgu4",
      "__vhaddu4",    "__vcmpgeu4", "__vcmpeq4",    "__vmaxs4", "__vminu4",     "__vseteq4",
      "__vadd2",      "__vaddss2",  "__vavgs2",     "__vmaxs2", "__vcmpgtu2",   "__vabsss4"};
  for (int i = 0; i < n; ++i) {
    std::vector<unsigned> want = reference(a[i], b[i]);
    for (int f = 0; f < kFunctions; ++f)
      check.eq(names[f], i, want[f], out[size_t(i) * kFunctions + f]);
  }
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dout));
  std::printf("simd_intrinsics: %d intrinsics over %d word pairs\n", kFunctions, n);
  return check.finish();
}
