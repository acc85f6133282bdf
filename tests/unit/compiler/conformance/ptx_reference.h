// Host references for the PTX ISA's arithmetic, written from the manual's definitions: float
// formats decoded to and correctly rounded from double, and double arithmetic rounded to odd so
// that one more rounding to any narrower format is the correctly rounded result of the exact
// operation. Compiled with -frounding-math: it changes the host rounding mode.
#pragma once

#include <cstdint>
#include <cstring>

namespace rocuda::compiler::conformance {

enum class Rounding { Nearest, NearestAway, Zero, Down, Up };

// PTX's rounding modifiers: rn, rna, rz, rm, rp (and the integer forms rni, rzi, rmi, rpi).
const char* roundingName(Rounding r);

struct FloatFormat {
  int mantissaBits;
  int exponentBits;
  bool hasInfinity;  // e4m3 has none: its all-ones exponent is a normal binade except S.1111.111
  uint64_t
      nanBits;  // the canonical NaN NVIDIA hardware writes (NaN-less formats: what NaN becomes)
  bool hasNaN = true;  // the fp6/fp4 formats have neither NaN nor infinities
};

extern const FloatFormat kHalf;      // f16
extern const FloatFormat kBFloat16;  // bf16
extern const FloatFormat kFloat32;   // f32
extern const FloatFormat kFloat64;   // f64
extern const FloatFormat kTf32;      // tf32 (kept in a 32-bit container, low 13 bits zero)
extern const FloatFormat kE4M3;      // e4m3 (fp8, no infinities)
extern const FloatFormat kE5M2;      // e5m2 (fp8)
extern const FloatFormat kE2M3;      // e2m3 (fp6: no infinities, no NaN; NaN converts to +max)
extern const FloatFormat kE3M2;      // e3m2 (fp6, likewise)
extern const FloatFormat kE2M1;      // e2m1 (fp4, likewise)

int formatBits(const FloatFormat& f);
double decodeFloat(uint64_t bits, const FloatFormat& f);
bool isNaNBits(uint64_t bits, const FloatFormat& f);
bool isSubnormalBits(uint64_t bits, const FloatFormat& f);
// .ftz on an input: a subnormal becomes zero of the same sign.
uint64_t flushSubnormalBits(uint64_t bits, const FloatFormat& f);

// `x` rounded once to `f` (x must be exact or rounded to odd). NaN gives the canonical NaN.
// flushSubnormal: a subnormal result becomes zero of the same sign (.ftz); satFinite: results
// beyond the largest finite value, infinities included, become that value (.satfinite).
uint64_t encodeFloat(double x, const FloatFormat& f, Rounding r, bool flushSubnormal = false,
                     bool satFinite = false);

// Double arithmetic rounded to odd. Exact zeros carry the sign IEEE gives them under `zeroMode`.
double addToOdd(double a, double b, Rounding zeroMode);
double mulToOdd(double a, double b);
double fmaToOdd(double a, double b, double c, Rounding zeroMode);
double divToOdd(double a, double b);
double sqrtToOdd(double a);

// Double arithmetic in a rounding mode (the f64 instructions).
double addF64(double a, double b, Rounding r);
double mulF64(double a, double b, Rounding r);
double fmaF64(double a, double b, double c, Rounding r);
double divF64(double a, double b, Rounding r);
double sqrtF64(double a, Rounding r);
// A 64-bit integer (its bits and signedness) converted to double in a rounding mode.
double integerToF64(uint64_t bits, bool isSigned, Rounding r);
// The same integer rounded to odd in double: exact for one more rounding to f32 or narrower.
double integerToOdd(uint64_t bits, bool isSigned);
// A double rounded to an integral value in a mode (cvt.rni / rzi / rmi / rpi).
double roundIntegral(double a, Rounding r);

inline float asF32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
inline double asF64(uint64_t b) {
  double f;
  std::memcpy(&f, &b, 8);
  return f;
}
inline uint64_t bitsOf(double f) {
  uint64_t b;
  std::memcpy(&b, &f, 8);
  return b;
}

}  // namespace rocuda::compiler::conformance
