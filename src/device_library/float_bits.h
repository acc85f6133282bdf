// Conversions between float and the 16-bit floating-point formats, for the device library (no
// standard library: builtins only). Rounding is to nearest even, as the hardware's conversions.
#pragma once

#include <stdint.h>

namespace rocuda::device_library {

inline float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = __builtin_ldexpf(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa == 0 ? __builtin_inff() : __builtin_nanf("");
  else
    magnitude =
        __builtin_ldexpf(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

inline uint16_t floatToHalf(float f) {
  uint32_t bits;
  __builtin_memcpy(&bits, &f, 4);
  uint32_t sign = (bits >> 16) & 0x8000;
  float a = __builtin_fabsf(f);
  if (__builtin_isnan(f)) return static_cast<uint16_t>(sign | 0x7e00);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00);
  if (a < 6.103515625e-05f)  // subnormal half: units of 2^-24, round to nearest even
    return static_cast<uint16_t>(sign |
                                 static_cast<uint32_t>(__builtin_nearbyintf(a * 16777216.0f)));
  int exponent;
  float fraction =
      __builtin_frexpf(a, &exponent);  // a = fraction * 2^exponent, fraction in [0.5, 1)
  uint32_t mantissa =
      static_cast<uint32_t>(__builtin_nearbyintf((fraction * 2.0f - 1.0f) * 1024.0f));
  uint32_t e = static_cast<uint32_t>(exponent - 1 + 15);
  if (mantissa == 1024) {
    mantissa = 0;
    ++e;
  }
  return static_cast<uint16_t>(sign | (e << 10) | mantissa);
}

inline float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBfloat16(float f) {
  uint32_t bits;
  __builtin_memcpy(&bits, &f, 4);
  if (__builtin_isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stays a NaN
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace rocuda::device_library
