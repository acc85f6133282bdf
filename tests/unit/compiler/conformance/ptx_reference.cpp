#include "ptx_reference.h"

#include <cfenv>
#include <cmath>

namespace rocuda::compiler::conformance {

const FloatFormat kHalf{10, 5, true, 0x7fff};
const FloatFormat kBFloat16{7, 8, true, 0x7fff};
const FloatFormat kFloat32{23, 8, true, 0x7fffffff};
const FloatFormat kFloat64{52, 11, true, 0x7fffffffffffffffull};
const FloatFormat kTf32{10, 8, true, 0x3ffff};
const FloatFormat kE4M3{3, 4, false, 0x7f};
const FloatFormat kE5M2{2, 5, true, 0x7f};
const FloatFormat kE2M3{3, 2, false, 0x1f, false};
const FloatFormat kE3M2{2, 3, false, 0x1f, false};
const FloatFormat kE2M1{1, 2, false, 0x7, false};

const char* roundingName(Rounding r) {
  switch (r) {
    case Rounding::Nearest: return "rn";
    case Rounding::NearestAway: return "rna";
    case Rounding::Zero: return "rz";
    case Rounding::Down: return "rm";
    case Rounding::Up: return "rp";
  }
  return "?";
}

namespace {

int bias(const FloatFormat& f) { return (1 << (f.exponentBits - 1)) - 1; }
uint64_t mantissaMask(const FloatFormat& f) { return (uint64_t{1} << f.mantissaBits) - 1; }
uint64_t exponentField(uint64_t bits, const FloatFormat& f) {
  return (bits >> f.mantissaBits) & ((uint64_t{1} << f.exponentBits) - 1);
}
uint64_t maxExponentField(const FloatFormat& f) { return (uint64_t{1} << f.exponentBits) - 1; }
uint64_t signBit(const FloatFormat& f) { return uint64_t{1} << (f.mantissaBits + f.exponentBits); }

uint64_t maxFiniteBits(const FloatFormat& f) {
  if (f.hasInfinity) return ((maxExponentField(f) - 1) << f.mantissaBits) | mantissaMask(f);
  if (!f.hasNaN) return (maxExponentField(f) << f.mantissaBits) | mantissaMask(f);
  return (maxExponentField(f) << f.mantissaBits) | (mantissaMask(f) - 1);
}

int hostMode(Rounding r) {
  switch (r) {
    case Rounding::Zero: return FE_TOWARDZERO;
    case Rounding::Down: return FE_DOWNWARD;
    case Rounding::Up: return FE_UPWARD;
    default: return FE_TONEAREST;
  }
}

// Runs `op` with the host rounding mode set, restoring round-to-nearest.
template <class Op>
double inMode(Rounding r, Op op) {
  std::fesetround(hostMode(r));
  volatile double result = op();
  std::fesetround(FE_TONEAREST);
  return result;
}

// Runs `op` truncating and sets the last bit when it was inexact: round to odd.
template <class Op>
double toOdd(Op op) {
  std::fesetround(FE_TOWARDZERO);
  std::feclearexcept(FE_INEXACT);
  volatile double result = op();
  bool inexact = std::fetestexcept(FE_INEXACT) != 0;
  std::fesetround(FE_TONEAREST);
  double r = result;
  if (inexact && std::isfinite(r)) r = asF64(bitsOf(r) | 1);
  return r;
}

}  // namespace

int formatBits(const FloatFormat& f) { return 1 + f.exponentBits + f.mantissaBits; }

bool isNaNBits(uint64_t bits, const FloatFormat& f) {
  uint64_t mant = bits & mantissaMask(f);
  if (!f.hasNaN || exponentField(bits, f) != maxExponentField(f)) return false;
  return f.hasInfinity ? mant != 0 : mant == mantissaMask(f);
}

bool isSubnormalBits(uint64_t bits, const FloatFormat& f) {
  return exponentField(bits, f) == 0 && (bits & mantissaMask(f)) != 0;
}

uint64_t flushSubnormalBits(uint64_t bits, const FloatFormat& f) {
  return isSubnormalBits(bits, f) ? bits & signBit(f) : bits;
}

double decodeFloat(uint64_t bits, const FloatFormat& f) {
  bool negative = (bits & signBit(f)) != 0;
  uint64_t field = exponentField(bits, f);
  uint64_t mant = bits & mantissaMask(f);
  if (isNaNBits(bits, f)) return std::nan("");
  double v;
  if (field == maxExponentField(f) && f.hasInfinity)
    v = HUGE_VAL;
  else if (field == 0)
    v = std::ldexp(static_cast<double>(mant), 1 - bias(f) - f.mantissaBits);
  else
    v = std::ldexp(static_cast<double>(mant | (uint64_t{1} << f.mantissaBits)),
                   static_cast<int>(field) - bias(f) - f.mantissaBits);
  return negative ? -v : v;
}

uint64_t encodeFloat(double x, const FloatFormat& f, Rounding r, bool flushSubnormal,
                     bool satFinite) {
  if (std::isnan(x)) return f.nanBits;
  bool negative = std::signbit(x);
  uint64_t sign = negative ? signBit(f) : 0;
  uint64_t maxFinite = sign | maxFiniteBits(f);
  uint64_t infinity = f.hasInfinity ? sign | (maxExponentField(f) << f.mantissaBits) : f.nanBits;
  if (std::isinf(x)) return satFinite ? maxFinite : infinity;
  double ax = std::fabs(x);
  if (ax == 0) return sign;
  int emin = 1 - bias(f);
  int emax = static_cast<int>(f.hasInfinity ? maxExponentField(f) - 1 : maxExponentField(f)) -
             bias(f);
  int e;
  std::frexp(ax, &e);
  e -= 1;  // ax in [2^e, 2^(e+1))
  if (e < emin) e = emin;
  double scaled = std::ldexp(ax, f.mantissaBits - e);  // exact: a power-of-two scale
  double whole = std::floor(scaled);
  double frac = scaled - whole;
  bool odd = std::fmod(whole, 2.0) != 0;
  bool up = false;
  switch (r) {
    case Rounding::Nearest: up = frac > 0.5 || (frac == 0.5 && odd); break;
    case Rounding::NearestAway: up = frac >= 0.5; break;
    case Rounding::Zero: break;
    case Rounding::Down: up = frac > 0 && negative; break;
    case Rounding::Up: up = frac > 0 && !negative; break;
  }
  uint64_t m = static_cast<uint64_t>(whole) + (up ? 1 : 0);
  uint64_t implicit = uint64_t{1} << f.mantissaBits;
  if (m == implicit << 1) {
    m >>= 1;
    e += 1;
  }
  bool overflow =
      e > emax || (!f.hasInfinity && f.hasNaN && e == emax && m - implicit == mantissaMask(f));
  if (overflow) {
    if (satFinite) return maxFinite;
    bool toInfinity = r == Rounding::Nearest || r == Rounding::NearestAway ||
                      (r == Rounding::Up && !negative) || (r == Rounding::Down && negative);
    return toInfinity ? infinity : maxFinite;
  }
  uint64_t bits = m < implicit ? m : (static_cast<uint64_t>(e + bias(f)) << f.mantissaBits) |
                                         (m - implicit);
  if (flushSubnormal && isSubnormalBits(bits, f)) return sign;
  return sign | bits;
}

// The operands are read through volatiles inside the operation so that it is evaluated after
// the rounding mode changes.
double addToOdd(double a, double b, Rounding zeroMode) {
  volatile double x = a, y = b;
  double r = toOdd([&] { return x + y; });
  if (r == 0) r = inMode(zeroMode, [&] { return x + y; });
  return r;
}

double mulToOdd(double a, double b) {
  volatile double x = a, y = b;
  return toOdd([&] { return x * y; });
}

double fmaToOdd(double a, double b, double c, Rounding zeroMode) {
  volatile double x = a, y = b, z = c;
  double r = toOdd([&] { return std::fma(x, y, z); });
  if (r == 0) r = inMode(zeroMode, [&] { return std::fma(x, y, z); });
  return r;
}

double divToOdd(double a, double b) {
  volatile double x = a, y = b;
  return toOdd([&] { return x / y; });
}

double sqrtToOdd(double a) {
  volatile double x = a;
  return toOdd([&] { return std::sqrt(x); });
}

double addF64(double a, double b, Rounding r) {
  volatile double x = a, y = b;
  return inMode(r, [&] { return x + y; });
}
double mulF64(double a, double b, Rounding r) {
  volatile double x = a, y = b;
  return inMode(r, [&] { return x * y; });
}
double fmaF64(double a, double b, double c, Rounding r) {
  volatile double x = a, y = b, z = c;
  return inMode(r, [&] { return std::fma(x, y, z); });
}
double divF64(double a, double b, Rounding r) {
  volatile double x = a, y = b;
  return inMode(r, [&] { return x / y; });
}
double sqrtF64(double a, Rounding r) {
  volatile double x = a;
  return inMode(r, [&] { return std::sqrt(x); });
}

double integerToF64(uint64_t bits, bool isSigned, Rounding r) {
  // long double holds every 64-bit integer exactly; its conversion to double rounds in the mode.
  volatile long double exact = isSigned ? static_cast<long double>(static_cast<int64_t>(bits))
                                        : static_cast<long double>(bits);
  return inMode(r, [&] { return static_cast<double>(exact); });
}

double integerToOdd(uint64_t bits, bool isSigned) {
  bool negative = isSigned && static_cast<int64_t>(bits) < 0;
  uint64_t magnitude = negative ? 0 - bits : bits;
  int width = 64 - __builtin_clzll(magnitude | 1);
  double r;
  if (width <= 53) {
    r = static_cast<double>(magnitude);
  } else {
    int shift = width - 53;
    uint64_t kept = magnitude >> shift;
    if (magnitude & ((uint64_t{1} << shift) - 1)) kept |= 1;
    r = std::ldexp(static_cast<double>(kept), shift);
  }
  return negative ? -r : r;
}

double roundIntegral(double a, Rounding r) {
  switch (r) {
    case Rounding::Nearest: return std::nearbyint(a);
    case Rounding::NearestAway: return std::round(a);
    case Rounding::Zero: return std::trunc(a);
    case Rounding::Down: return std::floor(a);
    case Rounding::Up: return std::ceil(a);
  }
  return a;
}

}  // namespace rocuda::compiler::conformance
