// Integer, bit-manipulation, logic and shift instructions against references written from the
// PTX ISA's definitions.
#include <algorithm>
#include <bit>

#include "conformance.h"

namespace rocuda::compiler::conformance {
namespace {

int16_t s16(uint64_t v) { return static_cast<int16_t>(static_cast<uint16_t>(v)); }
int32_t s32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }
int64_t s64(uint64_t v) { return static_cast<int64_t>(v); }
uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }
uint64_t of(int64_t v) { return static_cast<uint64_t>(v); }

int64_t clampS32(int64_t v) { return std::clamp<int64_t>(v, INT32_MIN, INT32_MAX); }

uint64_t mulHiU64(uint64_t a, uint64_t b) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
}
uint64_t mulHiS64(uint64_t a, uint64_t b) {
  return static_cast<uint64_t>((static_cast<__int128>(s64(a)) * s64(b)) >> 64);
}

// Division by zero is machine-specific in the PTX ISA; these are NVIDIA's results, which the
// translator reproduces: quotient all ones (signed: -1 for a >= 0, 1 for a < 0 is not what the
// hardware does either: it is -1), remainder the dividend.
uint64_t divU(uint64_t a, uint64_t b, uint64_t mask) { return b == 0 ? mask : a / b; }
uint64_t remU(uint64_t a, uint64_t b) { return b == 0 ? a : a % b; }
uint64_t divS32(uint64_t a, uint64_t b) {
  if (u32(b) == 0) return 0xffffffffu;
  if (s32(a) == INT32_MIN && s32(b) == -1) return 0x80000000u;
  return u32(static_cast<uint32_t>(s32(a) / s32(b)));
}
uint64_t remS32(uint64_t a, uint64_t b) {
  if (u32(b) == 0) return a;
  if (s32(a) == INT32_MIN && s32(b) == -1) return 0;
  return static_cast<uint32_t>(s32(a) % s32(b));
}
uint64_t divS64(uint64_t a, uint64_t b) {
  if (b == 0) return ~uint64_t{0};
  if (s64(a) == INT64_MIN && s64(b) == -1) return a;
  return of(s64(a) / s64(b));
}
uint64_t remS64(uint64_t a, uint64_t b) {
  if (b == 0) return a;
  if (s64(a) == INT64_MIN && s64(b) == -1) return 0;
  return of(s64(a) % s64(b));
}

// bfe: PTX ISA pseudo-code, msb = len == 0 ? 0 : min(pos + len - 1, width - 1) for the sign.
uint64_t bfe(uint64_t a, uint64_t pos, uint64_t len, int width, bool isSigned) {
  pos &= 0xff;
  len &= 0xff;
  uint64_t sbit = 0;
  if (isSigned) {
    int top = static_cast<int>(std::min<uint64_t>(pos + len - 1, width - 1));
    sbit = (len == 0) ? 0 : (a >> (pos >= static_cast<uint64_t>(width) ? width - 1 : top)) & 1;
  }
  uint64_t d = 0;
  for (int i = 0; i < width; ++i) {
    uint64_t bit = (static_cast<uint64_t>(i) < len && pos + i <= static_cast<uint64_t>(width - 1))
                       ? (a >> (pos + i)) & 1
                       : sbit;
    d |= bit << i;
  }
  return d;
}

uint64_t bfi(uint64_t a, uint64_t b, uint64_t pos, uint64_t len, int width) {
  pos &= 0xff;
  len &= 0xff;
  uint64_t d = b;
  for (uint64_t i = 0; i < len && pos + i < static_cast<uint64_t>(width); ++i) {
    uint64_t bit = uint64_t{1} << (pos + i);
    d = (d & ~bit) | (((a >> i) & 1) << (pos + i));
  }
  return d;
}

uint64_t bfind(uint64_t a, int width, bool isSigned, bool shiftAmount) {
  uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  a &= mask;
  if (isSigned && ((a >> (width - 1)) & 1)) a = ~a & mask;
  if (a == 0) return 0xffffffffu;
  int msb = 63 - std::countl_zero(a);
  return static_cast<uint32_t>(shiftAmount ? width - 1 - msb : msb);
}

// fns: the bit position of the n-th set bit of the mask, counting from base (n negative:
// downwards), or 0xffffffff. PTX ISA pseudo-code.
uint64_t fns(uint32_t mask, uint32_t base, int32_t offset) {
  if (offset == 0) return (mask >> base) & 1 ? base : 0xffffffffu;
  int32_t count = 0;
  if (offset > 0) {
    for (int32_t i = static_cast<int32_t>(base); i < 32; ++i)
      if ((mask >> i) & 1 && ++count == offset) return static_cast<uint32_t>(i);
  } else {
    for (int32_t i = static_cast<int32_t>(base); i >= 0; --i)
      if ((mask >> i) & 1 && ++count == -offset) return static_cast<uint32_t>(i);
  }
  return 0xffffffffu;
}

uint64_t prmtByte(uint64_t a, uint64_t b, uint32_t sel) {
  uint64_t bytes = (b & 0xffffffffu) << 32 | (a & 0xffffffffu);
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t s = (sel >> (4 * i)) & 0xf;
    uint32_t byte = static_cast<uint32_t>(bytes >> (8 * (s & 7))) & 0xff;
    if (s & 8) byte = (byte & 0x80) ? 0xff : 0;  // replicate the sign
    d |= byte << (8 * i);
  }
  return d;
}

uint64_t prmtMode(uint64_t a, uint64_t b, uint32_t c, const std::string& mode) {
  uint64_t bytes = (b & 0xffffffffu) << 32 | (a & 0xffffffffu);
  auto byte = [&](uint32_t i) { return static_cast<uint32_t>(bytes >> (8 * (i & 7))) & 0xff; };
  uint32_t n = c & 3;
  uint32_t sel[4];
  if (mode == "f4e") {
    for (uint32_t i = 0; i < 4; ++i) sel[i] = (n + i) & 7;
  } else if (mode == "b4e") {
    for (uint32_t i = 0; i < 4; ++i) sel[i] = (n + 8 - i) & 7;
  } else if (mode == "rc8") {
    for (uint32_t i = 0; i < 4; ++i) sel[i] = n;
  } else if (mode == "ecl") {
    for (uint32_t i = 0; i < 4; ++i) sel[i] = std::max(i, n);
  } else if (mode == "ecr") {
    for (uint32_t i = 0; i < 4; ++i) sel[i] = std::min(i, n);
  } else {  // rc16
    uint32_t lo = (n & 1) * 2;
    sel[0] = lo;
    sel[1] = lo + 1;
    sel[2] = lo;
    sel[3] = lo + 1;
  }
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) d |= byte(sel[i]) << (8 * i);
  return d;
}

uint64_t lop3(uint64_t a, uint64_t b, uint64_t c, uint32_t lut, int width) {
  uint64_t d = 0;
  for (int i = 0; i < width; ++i) {
    uint32_t index = static_cast<uint32_t>(((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1));
    d |= static_cast<uint64_t>((lut >> index) & 1) << i;
  }
  return d;
}

uint64_t dp4a(uint64_t a, uint64_t b, uint64_t c, bool aSigned, bool bSigned) {
  int64_t sum = (aSigned || bSigned) ? static_cast<int64_t>(s32(c)) : static_cast<int64_t>(u32(c));
  for (int i = 0; i < 4; ++i) {
    uint32_t ab = (u32(a) >> (8 * i)) & 0xff, bb = (u32(b) >> (8 * i)) & 0xff;
    int64_t x = aSigned ? static_cast<int8_t>(ab) : static_cast<int64_t>(ab);
    int64_t y = bSigned ? static_cast<int8_t>(bb) : static_cast<int64_t>(bb);
    sum += x * y;
  }
  return static_cast<uint32_t>(sum);
}

uint64_t dp2a(uint64_t a, uint64_t b, uint64_t c, bool aSigned, bool bSigned, bool hi) {
  int64_t sum = (aSigned || bSigned) ? static_cast<int64_t>(s32(c)) : static_cast<int64_t>(u32(c));
  for (int i = 0; i < 2; ++i) {
    uint32_t ah = (u32(a) >> (16 * i)) & 0xffff;
    uint32_t bb = (u32(b) >> (8 * (i + (hi ? 2 : 0)))) & 0xff;
    int64_t x = aSigned ? static_cast<int16_t>(ah) : static_cast<int64_t>(ah);
    int64_t y = bSigned ? static_cast<int8_t>(bb) : static_cast<int64_t>(bb);
    sum += x * y;
  }
  return static_cast<uint32_t>(sum);
}

// A packed .s16x2/.u16x2 reference: `lane` applied to both halves of the 32-bit operands.
template <class Lane>
Reference perHalf(Lane lane) {
  return [lane](const Inputs& x) {
    uint64_t r = 0;
    for (int h = 0; h < 2; ++h) {
      auto a = static_cast<uint16_t>(x[0] >> (16 * h)), b = static_cast<uint16_t>(x[1] >> (16 * h));
      r |= uint64_t{static_cast<uint16_t>(lane(a, b))} << (16 * h);
    }
    return r;
  };
}

std::vector<InstructionCase> packedHalfCases() {
  using u16 = uint16_t;
  auto s16 = [](u16 v) { return static_cast<int16_t>(v); };
  std::vector<InstructionCase> v;
  v.push_back(binary("add_s16x2", "add.s16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([](u16 a, u16 b) { return a + b; })));
  v.push_back(binary("sub_u16x2", "sub.u16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([](u16 a, u16 b) { return a - b; })));
  v.push_back(binary("min_s16x2", "min.s16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([=](u16 a, u16 b) { return std::min(s16(a), s16(b)); })));
  v.push_back(binary("max_s16x2", "max.s16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([=](u16 a, u16 b) { return std::max(s16(a), s16(b)); })));
  v.push_back(binary("min_u16x2", "min.u16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([](u16 a, u16 b) { return std::min(a, b); })));
  v.push_back(binary("max_u16x2", "max.u16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([](u16 a, u16 b) { return std::max(a, b); })));
  v.push_back(binary("max_relu_s16x2", "max.relu.s16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([=](u16 a, u16 b) {
                       return std::max<int>({s16(a), s16(b), 0});
                     })));
  v.push_back(binary("min_relu_s16x2", "min.relu.s16x2 $d, $a, $b;", kS32, kS32, kS32,
                     perHalf([=](u16 a, u16 b) {
                       return std::max<int>(std::min(s16(a), s16(b)), 0);
                     })));
  return v;
}

std::vector<InstructionCase> arithmeticCases() {
  std::vector<InstructionCase> v;
  v.push_back(binary("add_s32", "add.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return x[0] + x[1]; }));
  v.push_back(binary("add_sat_s32", "add.sat.s32 $d, $a, $b;", kS32, kS32, kS32, [](const Inputs& x) {
    return of(clampS32(int64_t{s32(x[0])} + s32(x[1])));
  }));
  v.push_back(binary("sub_sat_s32", "sub.sat.s32 $d, $a, $b;", kS32, kS32, kS32, [](const Inputs& x) {
    return of(clampS32(int64_t{s32(x[0])} - s32(x[1])));
  }));
  v.push_back(binary("sub_s64", "sub.s64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return x[0] - x[1]; }));
  v.push_back(binary("add_u16", "add.u16 $d, $a, $b;", kS16, kS16, kS16,
                     [](const Inputs& x) { return x[0] + x[1]; }));
  v.push_back(binary("mul_lo_s32", "mul.lo.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return x[0] * x[1]; }));
  v.push_back(binary("mul_hi_s32", "mul.hi.s32 $d, $a, $b;", kS32, kS32, kS32, [](const Inputs& x) {
    return of((int64_t{s32(x[0])} * s32(x[1])) >> 32);
  }));
  v.push_back(binary("mul_hi_u32", "mul.hi.u32 $d, $a, $b;", kS32, kS32, kS32, [](const Inputs& x) {
    return (uint64_t{u32(x[0])} * u32(x[1])) >> 32;
  }));
  v.push_back(binary("mul_wide_s32", "mul.wide.s32 $d, $a, $b;", kS64, kS32, kS32,
                     [](const Inputs& x) { return of(int64_t{s32(x[0])} * s32(x[1])); }));
  v.push_back(binary("mul_wide_u32", "mul.wide.u32 $d, $a, $b;", kS64, kS32, kS32,
                     [](const Inputs& x) { return uint64_t{u32(x[0])} * u32(x[1]); }));
  v.push_back(binary("mul_wide_s16", "mul.wide.s16 $d, $a, $b;", kS32, kS16, kS16,
                     [](const Inputs& x) { return of(int32_t{s16(x[0])} * s16(x[1])); }));
  v.push_back(binary("mul_hi_s16", "mul.hi.s16 $d, $a, $b;", kS16, kS16, kS16,
                     [](const Inputs& x) { return of((int32_t{s16(x[0])} * s16(x[1])) >> 16); }));
  v.push_back(binary("mul_lo_s64", "mul.lo.s64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return x[0] * x[1]; }));
  v.push_back(binary("mul_hi_u64", "mul.hi.u64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return mulHiU64(x[0], x[1]); }));
  v.push_back(binary("mul_hi_s64", "mul.hi.s64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return mulHiS64(x[0], x[1]); }));
  v.push_back(ternary("mad_lo_s32", "mad.lo.s32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32,
                      [](const Inputs& x) { return x[0] * x[1] + x[2]; }));
  v.push_back(ternary("mad_hi_u32", "mad.hi.u32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32,
                      [](const Inputs& x) {
                        return ((uint64_t{u32(x[0])} * u32(x[1])) >> 32) + x[2];
                      }));
  v.push_back(ternary("mad_hi_sat_s32", "mad.hi.sat.s32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32,
                      [](const Inputs& x) {
                        int64_t hi = (int64_t{s32(x[0])} * s32(x[1])) >> 32;
                        return of(clampS32(hi + s32(x[2])));
                      }));
  v.push_back(ternary("mad_wide_s32", "mad.wide.s32 $d, $a, $b, $c;", kS64, kS32, kS32, kS64,
                      [](const Inputs& x) { return of(int64_t{s32(x[0])} * s32(x[1])) + x[2]; }));
  v.push_back(ternary("mad_hi_u64", "mad.hi.u64 $d, $a, $b, $c;", kS64, kS64, kS64, kS64,
                      [](const Inputs& x) { return mulHiU64(x[0], x[1]) + x[2]; }));
  auto s24 = [](uint64_t v) { return static_cast<int64_t>(static_cast<int32_t>(u32(v) << 8) >> 8); };
  v.push_back(binary("mul24_lo_s32", "mul24.lo.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [=](const Inputs& x) { return of(s24(x[0]) * s24(x[1])); }));
  v.push_back(binary("mul24_hi_s32", "mul24.hi.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [=](const Inputs& x) { return of((s24(x[0]) * s24(x[1])) >> 16); }));
  v.push_back(binary("mul24_hi_u32", "mul24.hi.u32 $d, $a, $b;", kS32, kS32, kS32, [](const Inputs& x) {
    return ((uint64_t{u32(x[0]) & 0xffffff} * (u32(x[1]) & 0xffffff)) >> 16);
  }));
  v.push_back(ternary("mad24_lo_u32", "mad24.lo.u32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32,
                      [](const Inputs& x) {
                        return uint64_t{u32(x[0]) & 0xffffff} * (u32(x[1]) & 0xffffff) + x[2];
                      }));
  // d = t<47..16> + c of the 48-bit product of sign-extended 24-bit inputs; .sat clamps the
  // 32-bit signed addition.
  auto mad24HiS32 = [](const Inputs& x, bool saturate) {
    int64_t a = static_cast<int64_t>(static_cast<uint64_t>(u32(x[0]) & 0xffffff) << 40) >> 40;
    int64_t b = static_cast<int64_t>(static_cast<uint64_t>(u32(x[1]) & 0xffffff) << 40) >> 40;
    int64_t hi = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(a * b) >> 16));
    int64_t sum = hi + s32(x[2]);
    return saturate ? of(clampS32(sum)) : of(static_cast<int32_t>(static_cast<uint32_t>(sum)));
  };
  v.push_back(ternary("mad24_hi_s32", "mad24.hi.s32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32,
                      [=](const Inputs& x) { return mad24HiS32(x, false); }));
  v.push_back(ternary("mad24_hi_sat_s32", "mad24.hi.sat.s32 $d, $a, $b, $c;", kS32, kS32, kS32,
                      kS32, [=](const Inputs& x) { return mad24HiS32(x, true); }));
  v.push_back(ternary("sad_s32", "sad.s32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32, [](const Inputs& x) {
    int64_t a = s32(x[0]), b = s32(x[1]);
    return of(a < b ? b - a : a - b) + x[2];
  }));
  v.push_back(ternary("sad_u32", "sad.u32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32, [](const Inputs& x) {
    uint32_t a = u32(x[0]), b = u32(x[1]);
    return uint64_t{a < b ? b - a : a - b} + x[2];
  }));
  v.push_back(binary("div_u32", "div.u32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return divU(u32(x[0]), u32(x[1]), 0xffffffffu); }));
  v.push_back(binary("rem_u32", "rem.u32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return remU(u32(x[0]), u32(x[1])); }));
  v.push_back(binary("div_s32", "div.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return divS32(x[0], x[1]); }));
  v.push_back(binary("rem_s32", "rem.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return remS32(x[0], x[1]); }));
  v.push_back(binary("div_u64", "div.u64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return divU(x[0], x[1], ~uint64_t{0}); }));
  v.push_back(binary("rem_u64", "rem.u64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return remU(x[0], x[1]); }));
  v.push_back(binary("div_s64", "div.s64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return divS64(x[0], x[1]); }));
  v.push_back(binary("rem_s64", "rem.s64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return remS64(x[0], x[1]); }));
  v.push_back(unary("abs_s16", "abs.s16 $d, $a;", kS16, kS16, [](const Inputs& x) {
    return of(s16(x[0]) < 0 ? -int32_t{s16(x[0])} : s16(x[0]));
  }));
  v.push_back(unary("abs_s32", "abs.s32 $d, $a;", kS32, kS32,
                    [](const Inputs& x) { return s32(x[0]) < 0 ? 0 - x[0] : x[0]; }));
  v.push_back(unary("neg_s64", "neg.s64 $d, $a;", kS64, kS64, [](const Inputs& x) { return 0 - x[0]; }));
  v.push_back(binary("min_s32", "min.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return of(std::min(s32(x[0]), s32(x[1]))); }));
  v.push_back(binary("max_u32", "max.u32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return uint64_t{std::max(u32(x[0]), u32(x[1]))}; }));
  v.push_back(binary("min_u16", "min.u16 $d, $a, $b;", kS16, kS16, kS16, [](const Inputs& x) {
    return std::min(x[0] & 0xffff, x[1] & 0xffff);
  }));
  v.push_back(binary("max_s64", "max.s64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return of(std::max(s64(x[0]), s64(x[1]))); }));
  v.push_back(binary("max_relu_s32", "max.relu.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return of(std::max({s32(x[0]), s32(x[1]), 0})); }));
  v.push_back(binary("min_relu_s32", "min.relu.s32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return of(std::max(std::min(s32(x[0]), s32(x[1])), 0)); }));
  return v;
}

std::vector<InstructionCase> carryCases() {
  std::vector<InstructionCase> v;
  // 64-bit sums and differences built from 32-bit carry chains; the carry out lands in bit 0 of
  // the result's high word through addc with zero operands.
  v.push_back(binary("add_cc_addc_u32",
                     "mov.b64 {%r0, %r1}, $a; mov.b64 {%r2, %r3}, $b;"
                     " add.cc.u32 %r4, %r0, %r2; addc.cc.u32 %r5, %r1, %r3; addc.u32 %r6, 0, 0;"
                     " mov.b64 $d, {%r4, %r5}; xor.b32 %r6, %r6, %r6;",
                     kS64, kS64, kS64, [](const Inputs& x) { return x[0] + x[1]; }));
  v.push_back(binary("carry_out_u32",
                     "mov.b64 {%r0, %r1}, $a; mov.b64 {%r2, %r3}, $b;"
                     " add.cc.u32 %r4, %r0, %r2; addc.cc.u32 %r5, %r1, %r3; addc.u32 %r6, 0, 0;"
                     " mov.b32 $d, %r6;",
                     kS32, kS64, kS64, [](const Inputs& x) {
                       unsigned __int128 s = static_cast<unsigned __int128>(x[0]) + x[1];
                       return static_cast<uint64_t>(s >> 64);
                     }));
  v.push_back(binary("sub_cc_subc_u32",
                     "mov.b64 {%r0, %r1}, $a; mov.b64 {%r2, %r3}, $b;"
                     " sub.cc.u32 %r4, %r0, %r2; subc.u32 %r5, %r1, %r3; mov.b64 $d, {%r4, %r5};",
                     kS64, kS64, kS64, [](const Inputs& x) { return x[0] - x[1]; }));
  v.push_back(binary("borrow_out_u32",
                     "mov.b64 {%r0, %r1}, $a; mov.b64 {%r2, %r3}, $b;"
                     " sub.cc.u32 %r4, %r0, %r2; subc.cc.u32 %r5, %r1, %r3; subc.u32 %r6, 0, 0;"
                     " mov.b32 $d, %r6;",
                     kS32, kS64, kS64,
                     [](const Inputs& x) { return x[0] < x[1] ? uint64_t{0xffffffffu} : 0; }));
  // The flag a subtraction leaves is the carry of a + ~b + 1 (1: nothing borrowed), which addc
  // reads as such: nvcc's 128-bit division tests a sub.cc/subc.cc chain with `addc 0, 0`.
  v.push_back(binary("sub_cc_then_addc_u32",
                     "mov.b64 {%r0, %r1}, $a; mov.b64 {%r2, %r3}, $b;"
                     " sub.cc.u32 %r4, %r0, %r2; subc.cc.u32 %r5, %r1, %r3; addc.u32 %r6, 0, 0;"
                     " mov.b32 $d, %r6;",
                     kS32, kS64, kS64, [](const Inputs& x) { return x[0] < x[1] ? 0u : 1u; }));
  // ... and a subc after an add.cc computes a + ~b + CF: a - b when the addition carried.
  v.push_back(binary("add_cc_then_subc_u32",
                     "mov.b64 {%r0, %r1}, $a; mov.b64 {%r2, %r3}, $b;"
                     " add.cc.u32 %r4, %r0, %r2; subc.u32 %r5, %r1, %r3; mov.b32 $d, %r5;",
                     kS32, kS64, kS64, [](const Inputs& x) {
                       bool carried = uint64_t{u32(x[0])} + u32(x[1]) > 0xffffffffu;
                       return uint64_t{u32((x[0] >> 32) - (x[1] >> 32) - (carried ? 0 : 1))};
                     }));
  v.push_back(ternary("mad_cc_madc_u32",
                      "mov.b64 {%r2, %r3}, $c; mad.lo.cc.u32 %r4, $a, $b, %r2;"
                      " madc.hi.u32 %r5, $a, $b, %r3; mov.b64 $d, {%r4, %r5};",
                      kS64, kS32, kS32, kS64,
                      [](const Inputs& x) { return uint64_t{u32(x[0])} * u32(x[1]) + x[2]; }));
  v.push_back(binary("add_cc_s64", "add.cc.s64 %l0, $a, $b; addc.u32 $d, 0, 0;", kS32, kS64, kS64,
                     [](const Inputs& x) { return x[0] + x[1] < x[0] ? 1u : 0u; }));
  return v;
}

std::vector<InstructionCase> bitCases() {
  std::vector<InstructionCase> v;
  v.push_back(unary("popc_b32", "popc.b32 $d, $a;", kS32, kS32,
                    [](const Inputs& x) { return uint64_t(std::popcount(u32(x[0]))); }));
  v.push_back(unary("popc_b64", "popc.b64 $d, $a;", kS32, kS64,
                    [](const Inputs& x) { return uint64_t(std::popcount(x[0])); }));
  v.push_back(unary("clz_b32", "clz.b32 $d, $a;", kS32, kS32,
                    [](const Inputs& x) { return uint64_t(std::countl_zero(u32(x[0]))); }));
  v.push_back(unary("clz_b64", "clz.b64 $d, $a;", kS32, kS64,
                    [](const Inputs& x) { return uint64_t(std::countl_zero(x[0])); }));
  v.push_back(unary("brev_b32", "brev.b32 $d, $a;", kS32, kS32, [](const Inputs& x) {
    uint32_t r = 0;
    for (int i = 0; i < 32; ++i) r |= ((u32(x[0]) >> i) & 1) << (31 - i);
    return uint64_t{r};
  }));
  v.push_back(unary("brev_b64", "brev.b64 $d, $a;", kS64, kS64, [](const Inputs& x) {
    uint64_t r = 0;
    for (int i = 0; i < 64; ++i) r |= ((x[0] >> i) & 1) << (63 - i);
    return r;
  }));
  for (bool isSigned : {false, true})
    for (bool shift : {false, true})
      for (int width : {32, 64}) {
        std::string t = std::string(isSigned ? "s" : "u") + std::to_string(width);
        std::string name = "bfind_" + std::string(shift ? "shiftamt_" : "") + t;
        std::string body = "bfind" + std::string(shift ? ".shiftamt." : ".") + t + " $d, $a;";
        v.push_back(unary(name, body, kS32, width == 32 ? kS32 : kS64, [=](const Inputs& x) {
          return bfind(x[0], width, isSigned, shift);
        }));
      }
  v.push_back(ternary("fns_b32", "fns.b32 $d, $a, $b, $c;", kS32, kS32, kAmount32, kS32,
                      [](const Inputs& x) {
                        return fns(u32(x[0]), u32(x[1]) & 31, s32(x[2]) % 40);
                      }));
  // base must be <= 31 (undefined beyond); offsets in -39..39 so that hits are common.
  v.back().body = "and.b32 %r1, $b, 31; rem.s32 %r0, $c, 40; fns.b32 $d, $a, %r1, %r0;";
  for (bool isSigned : {false, true})
    for (int width : {32, 64}) {
      std::string t = std::string(isSigned ? "s" : "u") + std::to_string(width);
      v.push_back(ternary("bfe_" + t, "bfe." + t + " $d, $a, $b, $c;", width == 32 ? kS32 : kS64,
                          width == 32 ? kS32 : kS64, kAmount32, kAmount32, [=](const Inputs& x) {
                            return bfe(x[0], x[1], x[2], width, isSigned);
                          }));
    }
  for (int width : {32, 64}) {
    std::string t = "b" + std::to_string(width);
    Operand op = width == 32 ? kS32 : kS64;
    v.push_back(ternary("bfi_" + t, "shr.b32 %r0, $c, 8; bfi." + t + " $d, $a, $b, $c, %r0;", op,
                        op, op, kS32, [=](const Inputs& x) {
                          return bfi(x[0], x[1], u32(x[2]), u32(x[2]) >> 8, width);
                        }));
  }
  for (bool clamp : {false, true})
    for (bool isSigned : {false, true}) {
      std::string name = std::string("szext_") + (clamp ? "clamp_" : "wrap_") + (isSigned ? "s32" : "u32");
      std::string body = std::string("szext.") + (clamp ? "clamp." : "wrap.") + (isSigned ? "s32" : "u32") +
                         " $d, $a, $b;";
      v.push_back(binary(name, body, kS32, kS32, kAmount32, [=](const Inputs& x) {
        uint32_t n = u32(x[1]);
        n = clamp ? std::min(n, 32u) : n & 31;
        if (n >= 32) return uint64_t{u32(x[0])};
        uint32_t mask = n == 0 ? 0 : (0xffffffffu >> (32 - n));
        uint32_t v32 = u32(x[0]) & mask;
        if (isSigned && n > 0 && ((v32 >> (n - 1)) & 1)) v32 |= ~mask;
        if (n == 0) v32 = 0;
        return uint64_t{v32};
      }));
      v.back().version = "7.8";
    }
  for (bool clamp : {false, true}) {
    v.push_back(binary(std::string("bmsk_") + (clamp ? "clamp" : "wrap"),
                       std::string("bmsk.") + (clamp ? "clamp" : "wrap") + ".b32 $d, $a, $b;", kS32,
                       kAmount32, kAmount32, [=](const Inputs& x) {
                         uint32_t a = u32(x[0]), b = u32(x[1]);
                         if (clamp) {
                           a = std::min(a, 32u);
                           b = std::min(b, 32u);
                         } else {
                           a &= 31;
                           b &= 31;
                         }
                         uint64_t len = std::min<uint64_t>(b, 32 - std::min(a, 32u));
                         uint64_t m = ((uint64_t{1} << len) - 1) << a;
                         return m & 0xffffffffu;
                       }));
    v.back().version = "7.8";
  }
  for (bool aS : {false, true})
    for (bool bS : {false, true}) {
      std::string at = aS ? "s32" : "u32", bt = bS ? "s32" : "u32";
      v.push_back(ternary("dp4a_" + at + "_" + bt, "dp4a." + at + "." + bt + " $d, $a, $b, $c;", kS32,
                          kS32, kS32, kS32, [=](const Inputs& x) { return dp4a(x[0], x[1], x[2], aS, bS); }));
      for (bool hi : {false, true})
        v.push_back(ternary(std::string("dp2a_") + (hi ? "hi_" : "lo_") + at + "_" + bt,
                            std::string("dp2a.") + (hi ? "hi." : "lo.") + at + "." + bt + " $d, $a, $b, $c;",
                            kS32, kS32, kS32, kS32,
                            [=](const Inputs& x) { return dp2a(x[0], x[1], x[2], aS, bS, hi); }));
    }
  return v;
}

std::vector<InstructionCase> logicCases() {
  std::vector<InstructionCase> v;
  v.push_back(binary("and_b32", "and.b32 $d, $a, $b;", kS32, kS32, kS32,
                     [](const Inputs& x) { return x[0] & x[1]; }));
  v.push_back(binary("or_b64", "or.b64 $d, $a, $b;", kS64, kS64, kS64,
                     [](const Inputs& x) { return x[0] | x[1]; }));
  v.push_back(binary("xor_b16", "xor.b16 $d, $a, $b;", kS16, kS16, kS16,
                     [](const Inputs& x) { return x[0] ^ x[1]; }));
  v.push_back(unary("not_b16", "not.b16 $d, $a;", kS16, kS16, [](const Inputs& x) { return ~x[0]; }));
  v.push_back(unary("cnot_b16", "cnot.b16 $d, $a;", kS16, kS16,
                    [](const Inputs& x) { return (x[0] & 0xffff) == 0 ? 1u : 0u; }));
  v.push_back(unary("cnot_b32", "cnot.b32 $d, $a;", kS32, kS32,
                    [](const Inputs& x) { return u32(x[0]) == 0 ? 1u : 0u; }));
  v.push_back(ternary("xor_pred", "xor.pred %q0, $a, $b; and.pred $d, %q0, !$c;", kPred, kPred, kPred,
                      kPred, [](const Inputs& x) { return (x[0] ^ x[1]) & (x[2] ^ 1); }));
  v.push_back(binary("or_not_pred", "not.pred %q0, $a; or.pred $d, %q0, $b;", kPred, kPred, kPred,
                     [](const Inputs& x) { return (x[0] ^ 1) | x[1]; }));
  for (uint32_t lut : {0x96u, 0xe8u, 0x1eu, 0xcau, 0x00u, 0xffu, 0x6au, 0x5bu})
    v.push_back(ternary("lop3_" + std::to_string(lut),
                        "lop3.b32 $d, $a, $b, $c, " + std::to_string(lut) + ";", kS32, kS32, kS32,
                        kS32, [=](const Inputs& x) { return lop3(x[0], x[1], x[2], lut, 32); }));
  // The predicate form (PTX 8.2): p = (d != 0) or/and q, with d as above; q = (c & 1) here, and
  // both halves of the pair are checked, the value through an xor folded into the result.
  for (uint32_t lut : {0x80u, 0x3cu, 0x00u, 0xfeu})
    for (std::string bop : {"or", "and"})
      v.push_back(ternary("lop3_" + bop + "_pred_" + std::to_string(lut),
                          "and.b32 %r0, $c, 1; setp.ne.b32 %q0, %r0, 0; lop3." + bop +
                              ".b32 %r1|%q1, $a, $b, $c, " + std::to_string(lut) + ", " +
                              (bop == "or" ? "%q0" : "!%q0") +
                              "; selp.b32 %r2, 0x80000000, 0, %q1; xor.b32 $d, %r1, %r2;",
                          kS32, kS32, kS32, kS32, [=](const Inputs& x) -> uint64_t {
                            uint32_t d = static_cast<uint32_t>(lop3(x[0], x[1], x[2], lut, 32));
                            bool q = (x[2] & 1) != 0;
                            bool p = bop == "or" ? (d != 0 || q) : (d != 0 && !q);
                            return d ^ (p ? 0x80000000u : 0u);
                          }));
  for (std::string t : {"b16", "b32", "b64"}) {
    Operand op = t == "b16" ? kS16 : t == "b32" ? kS32 : kS64;
    int width = t == "b16" ? 16 : t == "b32" ? 32 : 64;
    v.push_back(binary("shl_" + t, "shl." + t + " $d, $a, $b;", op, op, kAmount32, [=](const Inputs& x) {
      return u32(x[1]) >= static_cast<uint32_t>(width) ? 0 : x[0] << u32(x[1]);
    }));
    std::string u = "u" + t.substr(1), s = "s" + t.substr(1);
    v.push_back(binary("shr_" + u, "shr." + u + " $d, $a, $b;", op, op, kAmount32, [=](const Inputs& x) {
      uint64_t a = x[0] & (width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1);
      return u32(x[1]) >= static_cast<uint32_t>(width) ? 0 : a >> u32(x[1]);
    }));
    v.push_back(binary("shr_" + s, "shr." + s + " $d, $a, $b;", op, op, kAmount32, [=](const Inputs& x) {
      int64_t a = width == 16 ? s16(x[0]) : width == 32 ? s32(x[0]) : s64(x[0]);
      uint32_t n = std::min<uint32_t>(u32(x[1]), static_cast<uint32_t>(width - 1));
      return of(a >> n);
    }));
  }
  for (bool left : {false, true})
    for (bool clamp : {false, true}) {
      std::string name = std::string("shf_") + (left ? "l_" : "r_") + (clamp ? "clamp" : "wrap");
      std::string body = std::string("shf.") + (left ? "l." : "r.") + (clamp ? "clamp" : "wrap") +
                         ".b32 $d, $a, $b, $c;";
      v.push_back(ternary(name, body, kS32, kS32, kS32, kAmount32, [=](const Inputs& x) {
        uint32_t n = clamp ? std::min(u32(x[2]), 32u) : u32(x[2]) & 31;
        uint64_t pair = uint64_t{u32(x[1])} << 32 | u32(x[0]);  // b:a
        if (left) return static_cast<uint64_t>(static_cast<uint32_t>((pair << n) >> 32));
        return static_cast<uint64_t>(static_cast<uint32_t>(pair >> n));
      }));
    }
  v.push_back(ternary("prmt_b32", "prmt.b32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32,
                      [](const Inputs& x) { return prmtByte(x[0], x[1], u32(x[2])); }));
  for (std::string mode : {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"})
    v.push_back(ternary("prmt_" + mode, "prmt.b32." + mode + " $d, $a, $b, $c;", kS32, kS32, kS32,
                        kAmount32, [=](const Inputs& x) { return prmtMode(x[0], x[1], u32(x[2]), mode); }));
  return v;
}

INSTANTIATE_TEST_SUITE_P(IntegerArithmetic, Conformance, ::testing::ValuesIn(arithmeticCases()), caseName);
INSTANTIATE_TEST_SUITE_P(PackedHalves, Conformance, ::testing::ValuesIn(packedHalfCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ExtendedPrecision, Conformance, ::testing::ValuesIn(carryCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Bits, Conformance, ::testing::ValuesIn(bitCases()), caseName);
INSTANTIATE_TEST_SUITE_P(LogicAndShifts, Conformance, ::testing::ValuesIn(logicCases()), caseName);

}  // namespace
}  // namespace rocuda::compiler::conformance
