// Soft-float helpers that LLVM's host code generator may call but that an older libgcc lacks
// (bfloat16 truncations arrived in GCC 13). The loader defines them for every host object.
#include "compiler/host_builtins.h"

#include <cmath>
#include <cstring>

namespace rocuda::compiler::detail {
namespace {

// Round-to-nearest-even of a float's bits to bfloat16; NaNs stay (quiet) NaNs.
uint16_t bf16FromFloatBits(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

// LLVM passes and returns bfloat in an SSE register, as it does _Float16.
_Float16 asHalfRegister(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return h;
}

extern "C" _Float16 rocudaTruncSfBf2(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return asHalfRegister(bf16FromFloatBits(u));
}

extern "C" _Float16 rocudaTruncDfBf2(double d) {
  float f = static_cast<float>(d);
  if (std::isfinite(f) && static_cast<double>(f) != d) {
    // Round to odd on the way to float, so that the final rounding to bf16 is exact RNE.
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u |= 1;
    std::memcpy(&f, &u, 4);
  }
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return asHalfRegister(bf16FromFloatBits(u));
}

}  // namespace

RuntimeSymbols hostBuiltins() {
  return {{"__truncsfbf2", reinterpret_cast<void*>(&rocudaTruncSfBf2)},
          {"__truncdfbf2", reinterpret_cast<void*>(&rocudaTruncDfBf2)}};
}

}  // namespace rocuda::compiler::detail
