// Half-precision math functions over every half input, against the correctly rounded result the
// CUDA Math API documents for them ("in round-to-nearest-even mode"): the scalar and the half2
// forms of exp, exp2, exp10, log, log2, log10, sin, cos, sqrt, rcp and rsqrt. cuda_fp16.hpp builds
// several of them from ex2/lg2.approx.f32 plus corrections for the hardware's error at a few
// inputs, so this also checks that those corrections land right on Rocuda.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "e2e_check.h"

enum Function { Exp, Exp2, Exp10, Log, Log2, Log10, Sin, Cos, Sqrt, Rcp, Rsqrt, kFunctions };
static const char* const kNames[kFunctions] = {"exp", "exp2", "exp10", "log", "log2", "log10",
                                               "sin", "cos",  "sqrt",  "rcp", "rsqrt"};

__device__ __half scalarOf(int f, __half a) {
  switch (f) {
    case Exp:
      return hexp(a);
    case Exp2:
      return hexp2(a);
    case Exp10:
      return hexp10(a);
    case Log:
      return hlog(a);
    case Log2:
      return hlog2(a);
    case Log10:
      return hlog10(a);
    case Sin:
      return hsin(a);
    case Cos:
      return hcos(a);
    case Sqrt:
      return hsqrt(a);
    case Rcp:
      return hrcp(a);
    default:
      return hrsqrt(a);
  }
}

__device__ __half2 pairOf(int f, __half2 a) {
  switch (f) {
    case Exp:
      return h2exp(a);
    case Exp2:
      return h2exp2(a);
    case Exp10:
      return h2exp10(a);
    case Log:
      return h2log(a);
    case Log2:
      return h2log2(a);
    case Log10:
      return h2log10(a);
    case Sin:
      return h2sin(a);
    case Cos:
      return h2cos(a);
    case Sqrt:
      return h2sqrt(a);
    case Rcp:
      return h2rcp(a);
    default:
      return h2rsqrt(a);
  }
}

// out[i] = f(half i); pairs[i] = f2(half i, half ~i): both lanes of the half2 form.
__global__ void everyInput(int f, uint16_t* out, uint32_t* pairs) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  __half a = __ushort_as_half(static_cast<uint16_t>(i));
  __half b = __ushort_as_half(static_cast<uint16_t>(~i));
  out[i] = __half_as_ushort(scalarOf(f, a));
  __half2 r = pairOf(f, __halves2half2(a, b));
  pairs[i] = __half_as_ushort(__low2half(r)) | (uint32_t{__half_as_ushort(__high2half(r))} << 16);
}

static float halfToFloat(uint16_t bits) {
  uint32_t sign = uint32_t{bits & 0x8000u} << 16, exponent = (bits >> 10) & 0x1f,
           mantissa = bits & 0x3ff;
  if (exponent == 0x1f) {
    uint32_t f = sign | 0x7f800000u | (mantissa << 13);
    float r;
    std::memcpy(&r, &f, 4);
    return r;
  }
  float magnitude = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -24)
                                  : std::ldexp(static_cast<float>(mantissa | 0x400),
                                               static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

// The half nearest to v (ties to even), from a long double: no double rounding through float.
static uint16_t nearestHalf(long double v) {
  if (std::isnan(static_cast<double>(v))) return 0x7fff;
  uint16_t sign = std::signbit(static_cast<double>(v)) ? 0x8000 : 0;
  long double m = std::fabs(v);
  if (m >= 65520.0L) return sign | 0x7c00;
  // The finite magnitudes are ordered like their bit patterns: binary search the neighbours.
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {
    uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (halfToFloat(mid) <= m)
      lo = mid;
    else
      hi = static_cast<uint16_t>(mid - 1);
  }
  uint16_t below = lo;
  if (halfToFloat(below) == m || below == 0x7bff) return sign | below;
  long double dBelow = m - halfToFloat(below), dAbove = halfToFloat(below + 1) - m;
  uint16_t r = dBelow < dAbove   ? below
               : dAbove < dBelow ? below + 1
                                 : (below & 1 ? below + 1 : below);
  return sign | r;
}

static long double exact(int f, long double x) {
  switch (f) {
    case Exp:
      return std::exp(x);
    case Exp2:
      return std::exp2(x);
    case Exp10:
      return std::pow(10.0L, x);
    case Log:
      return std::log(x);
    case Log2:
      return std::log2(x);
    case Log10:
      return std::log10(x);
    case Sin:
      return std::sin(x);
    case Cos:
      return std::cos(x);
    case Sqrt:
      return std::sqrt(x);
    case Rcp:
      return 1.0L / x;
    default:
      return 1.0L / std::sqrt(x);
  }
}

static bool sameResult(uint16_t got, uint16_t want) {
  bool gotNaN = (got & 0x7c00) == 0x7c00 && (got & 0x3ff);
  bool wantNaN = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
  return gotNaN || wantNaN ? gotNaN == wantNaN : got == want;
}

int main() {
  constexpr unsigned kInputs = 65536;
  uint16_t* out;
  uint32_t* pairs;
  CHECK(cudaMalloc(&out, kInputs * sizeof(uint16_t)));
  CHECK(cudaMalloc(&pairs, kInputs * sizeof(uint32_t)));
  int failures = 0;
  for (int f = 0; f < kFunctions; ++f) {
    everyInput<<<kInputs / 256, 256>>>(f, out, pairs);
    CHECK_LAUNCH();
    std::vector<uint16_t> scalar = download(out, kInputs);
    std::vector<uint32_t> pair = download(pairs, kInputs);
    int wrong = 0;
    for (unsigned i = 0; i < kInputs; ++i) {
      uint16_t inputs[2] = {static_cast<uint16_t>(i), static_cast<uint16_t>(~i)};
      uint16_t results[3] = {scalar[i], static_cast<uint16_t>(pair[i]),
                             static_cast<uint16_t>(pair[i] >> 16)};
      for (int k = 0; k < 3; ++k) {
        uint16_t input = inputs[k == 2 ? 1 : 0];
        uint16_t want = nearestHalf(exact(f, halfToFloat(input)));
        if (sameResult(results[k], want)) continue;
        if (++wrong <= 5)
          std::fprintf(stderr, "%s%s(0x%04x) = 0x%04x, want 0x%04x\n", k ? "h2" : "h", kNames[f],
                       input, results[k], want);
      }
    }
    if (wrong) std::fprintf(stderr, "%s: %d wrong results\n", kNames[f], wrong);
    failures += wrong;
  }
  CHECK(cudaFree(out));
  CHECK(cudaFree(pairs));
  if (failures) return 1;
  std::printf("half math: every input of 11 functions, scalar and half2, correctly rounded\n");
  return 0;
}
