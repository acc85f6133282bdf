// cvt: integer <-> integer (with .sat and the register-width extension rules), float -> integer
// (integer rounding, clamping, the ISA's NaN results), integer -> float and float -> float in
// every rounding mode with .ftz / .sat / .satfinite, packing to f16x2 / bf16x2, tf32 and fp8;
// cvt.pack of saturated integers.
#include <algorithm>
#include <cmath>

#include "conformance.h"

namespace rocuda::compiler::conformance {
namespace {

struct IntType {
  std::string name;  // s8, u16, ...
  int bits;
  bool isSigned;
};

const IntType kIntTypes[] = {{"u8", 8, false},  {"s8", 8, true},   {"u16", 16, false}, {"s16", 16, true},
                             {"u32", 32, false}, {"s32", 32, true}, {"u64", 64, false}, {"s64", 64, true}};

Reg regFor(int bits) { return bits <= 16 ? Reg::B16 : bits == 32 ? Reg::B32 : Reg::B64; }
int regBitsFor(int bits) { return bits <= 16 ? 16 : bits; }

uint64_t mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

// The low `bits` of v read as the type's value (as a 128-bit integer).
__int128 valueOf(uint64_t v, const IntType& t) {
  v &= mask(t.bits);
  if (t.isSigned && t.bits < 64 && ((v >> (t.bits - 1)) & 1)) v |= ~mask(t.bits);
  return t.isSigned ? static_cast<__int128>(static_cast<int64_t>(v)) : static_cast<__int128>(v);
}

__int128 minOf(const IntType& t) { return t.isSigned ? -(static_cast<__int128>(1) << (t.bits - 1)) : 0; }
__int128 maxOf(const IntType& t) {
  return t.isSigned ? (static_cast<__int128>(1) << (t.bits - 1)) - 1 : (static_cast<__int128>(1) << t.bits) - 1;
}

// A destination value written to a register wider than its type: signed types sign-extend,
// the others zero-extend (PTX ISA, cvt notes).
uint64_t toRegister(__int128 value, const IntType& d) {
  uint64_t bits = static_cast<uint64_t>(value) & mask(d.bits);
  if (d.isSigned && d.bits < 64 && ((bits >> (d.bits - 1)) & 1)) bits |= ~mask(d.bits);
  return bits & mask(regBitsFor(d.bits));
}

std::vector<InstructionCase> intToIntCases() {
  std::vector<InstructionCase> v;
  for (const IntType& d : kIntTypes)
    for (const IntType& a : kIntTypes) {
      if (d.name == a.name) continue;
      Operand dop{regFor(d.bits), Values::Int}, aop{regFor(a.bits), Values::Int};
      v.push_back(unary("cvt_" + d.name + "_" + a.name, "cvt." + d.name + "." + a.name + " $d, $a;", dop, aop,
                        [=](const Inputs& in) { return toRegister(valueOf(in[0], a), d); }));
      // .sat only where the destination cannot hold every source value.
      if (minOf(d) <= minOf(a) && maxOf(d) >= maxOf(a)) continue;
      v.push_back(unary("cvt_sat_" + d.name + "_" + a.name, "cvt.sat." + d.name + "." + a.name + " $d, $a;",
                        dop, aop, [=](const Inputs& in) {
                          __int128 x = valueOf(in[0], a);
                          x = x < minOf(d) ? minOf(d) : x > maxOf(d) ? maxOf(d) : x;
                          return toRegister(x, d);
                        }));
    }
  return v;
}

struct FloatType {
  std::string name;
  const FloatFormat* format;
  Operand op;
  std::string version;  // the PTX ISA version that allows it
};

const FloatType kF16Type{"f16", &kHalf, kF16, "8.5"};
const FloatType kBF16Type{"bf16", &kBFloat16, kBF16, "8.5"};
const FloatType kF32Type{"f32", &kFloat32, kF32, "8.5"};
const FloatType kF64Type{"f64", &kFloat64, kF64, "8.5"};

constexpr Rounding kModes[] = {Rounding::Nearest, Rounding::Zero, Rounding::Down, Rounding::Up};

std::string integerRounding(Rounding r) { return std::string(roundingName(r)) + "i"; }

// Float to integer: rounded to an integral value, clamped to the range; NaN gives 0 unless the
// source is f64 or the destination 64-bit, which give 1 << (width - 1).
uint64_t floatToInt(uint64_t bits, const FloatType& a, const IntType& d, Rounding r, bool ftz) {
  if (ftz) bits = flushSubnormalBits(bits, *a.format);
  double x = decodeFloat(bits, *a.format);
  if (std::isnan(x)) {
    if (a.name != "f64" && d.bits != 64) return 0;
    return toRegister(static_cast<__int128>(1) << (d.bits - 1), d);
  }
  double n = roundIntegral(x, r);
  __int128 value;
  if (n <= static_cast<double>(minOf(d)))
    value = minOf(d);
  else if (n >= static_cast<double>(maxOf(d)))
    value = maxOf(d);
  else
    value = static_cast<__int128>(n);
  return toRegister(value, d);
}

std::vector<InstructionCase> floatToIntCases() {
  std::vector<InstructionCase> v;
  auto add = [&](const FloatType& a, const IntType& d, Rounding r, bool ftz) {
    std::string mods = "." + integerRounding(r) + (ftz ? ".ftz" : "");
    std::string inst = "cvt" + mods + "." + d.name + "." + a.name;
    std::string name = inst;
    for (char& ch : name)
      if (ch == '.') ch = '_';
    v.push_back(unary(name, inst + " $d, $a;", Operand{regFor(d.bits), Values::Int}, a.op,
                      [=](const Inputs& in) { return floatToInt(in[0], a, d, r, ftz); }));
    if (a.name == "bf16") v.back().version = "7.8";
  };
  for (const FloatType& a : {kF32Type, kF64Type, kF16Type})
    for (const IntType& d : kIntTypes)
      for (Rounding r : {Rounding::Nearest, Rounding::Zero}) add(a, d, r, false);
  for (Rounding r : {Rounding::Down, Rounding::Up}) {
    add(kF32Type, kIntTypes[5], r, false);
    add(kF64Type, kIntTypes[7], r, false);
    add(kF16Type, kIntTypes[3], r, false);
  }
  add(kBF16Type, kIntTypes[4], Rounding::Nearest, false);
  add(kF32Type, kIntTypes[5], Rounding::Zero, true);
  return v;
}

uint64_t intToFloat(uint64_t bits, const IntType& a, const FloatType& d, Rounding r) {
  uint64_t raw = static_cast<uint64_t>(valueOf(bits, a));
  if (d.name == "f64") return bitsOf(integerToF64(raw, a.isSigned || a.bits < 64, r));
  return encodeFloat(integerToOdd(raw, a.isSigned || a.bits < 64), *d.format, r);
}

std::vector<InstructionCase> intToFloatCases() {
  std::vector<InstructionCase> v;
  for (const FloatType& d : {kF32Type, kF64Type, kF16Type, kBF16Type})
    for (const IntType& a : kIntTypes) {
      if (a.bits == 8) continue;
      for (Rounding r : kModes) {
        if (d.name == "bf16" && r != Rounding::Nearest) continue;
        std::string inst = std::string("cvt.") + roundingName(r) + "." + d.name + "." + a.name;
        std::string name = inst;
        for (char& ch : name)
          if (ch == '.') ch = '_';
        v.push_back(unary(name, inst + " $d, $a;", d.op, Operand{regFor(a.bits), Values::Int},
                          [=](const Inputs& in) { return intToFloat(in[0], a, d, r); }));
        if (d.name == "bf16") v.back().version = "7.8";
      }
    }
  return v;
}

std::vector<InstructionCase> floatToFloatCases() {
  std::vector<InstructionCase> v;
  auto add = [&](const FloatType& d, const FloatType& a, std::string mods, std::function<uint64_t(uint64_t)> ref) {
    std::string inst = "cvt" + mods + "." + d.name + "." + a.name;
    std::string name = inst;
    for (char& ch : name)
      if (ch == '.') ch = '_';
    v.push_back(unary(name, inst + " $d, $a;", d.op, a.op, [=](const Inputs& in) { return ref(in[0]); }));
  };
  // Narrowing in every mode (bf16 from f32 in all four since sm_90).
  for (Rounding r : kModes) {
    std::string m = std::string(".") + roundingName(r);
    add(kF32Type, kF64Type, m, [=](uint64_t x) { return encodeFloat(asF64(x), kFloat32, r); });
    add(kF16Type, kF32Type, m, [=](uint64_t x) { return encodeFloat(decodeFloat(x, kFloat32), kHalf, r); });
    add(kBF16Type, kF32Type, m, [=](uint64_t x) { return encodeFloat(decodeFloat(x, kFloat32), kBFloat16, r); });
    add(kF16Type, kF64Type, m, [=](uint64_t x) { return encodeFloat(asF64(x), kHalf, r); });
  }
  add(kF32Type, kF64Type, ".rn.ftz", [](uint64_t x) { return encodeFloat(asF64(x), kFloat32, Rounding::Nearest, true); });
  add(kBF16Type, kF64Type, ".rn", [](uint64_t x) { return encodeFloat(asF64(x), kBFloat16, Rounding::Nearest); });
  add(kF16Type, kF32Type, ".rn.satfinite", [](uint64_t x) {
    return encodeFloat(decodeFloat(x, kFloat32), kHalf, Rounding::Nearest, false, true);
  });
  add(kF16Type, kF32Type, ".rn.sat", [](uint64_t x) {
    double d = decodeFloat(x, kFloat32);
    if (std::isnan(d) || d <= 0) return uint64_t{0};
    return encodeFloat(std::min(d, 1.0), kHalf, Rounding::Nearest);
  });
  // Widening is exact (every input of the 16-bit sources).
  add(kF32Type, kF16Type, "", [](uint64_t x) { return uint64_t{bitsOf(static_cast<float>(decodeFloat(x, kHalf)))}; });
  add(kF32Type, kBF16Type, "", [](uint64_t x) { return uint64_t{bitsOf(static_cast<float>(decodeFloat(x, kBFloat16)))}; });
  add(kF64Type, kF16Type, "", [](uint64_t x) { return bitsOf(decodeFloat(x, kHalf)); });
  add(kF64Type, kF32Type, "", [](uint64_t x) { return bitsOf(decodeFloat(x, kFloat32)); });
  add(kF32Type, kF16Type, ".ftz", [](uint64_t x) {
    return encodeFloat(decodeFloat(x, kHalf), kFloat32, Rounding::Nearest, true);
  });
  // Rounding to an integral value in the same type, and .sat.
  for (Rounding r : kModes) {
    std::string m = "." + integerRounding(r);
    add(kF32Type, kF32Type, m, [=](uint64_t x) { return encodeFloat(roundIntegral(decodeFloat(x, kFloat32), r), kFloat32, r); });
    add(kF64Type, kF64Type, m, [=](uint64_t x) { return bitsOf(roundIntegral(asF64(x), r)); });
    add(kF16Type, kF16Type, m, [=](uint64_t x) { return encodeFloat(roundIntegral(decodeFloat(x, kHalf), r), kHalf, r); });
  }
  add(kF32Type, kF32Type, ".sat", [](uint64_t x) {
    double d = decodeFloat(x, kFloat32);
    if (std::isnan(d) || d <= 0) return uint64_t{0};
    return uint64_t{bitsOf(static_cast<float>(std::min(d, 1.0)))};
  });
  add(kF32Type, kF32Type, ".ftz.sat", [](uint64_t x) {
    double d = decodeFloat(flushSubnormalBits(x, kFloat32), kFloat32);
    if (std::isnan(d) || d <= 0) return uint64_t{0};
    return uint64_t{bitsOf(static_cast<float>(std::min(d, 1.0)))};
  });
  return v;
}

// A byte pair of fp8 values where any NaN encoding matches any other.
bool sameFp8Pair(uint64_t got, uint64_t want, const FloatFormat& f) {
  for (int shift : {0, 8}) {
    uint64_t g = (got >> shift) & 0xff, w = (want >> shift) & 0xff;
    if (g != w && !(isNaNBits(g, f) && isNaNBits(w, f))) return false;
  }
  return true;
}

std::vector<InstructionCase> packedCases() {
  std::vector<InstructionCase> v;
  // Two f32 to one x2 register: a in the upper half, b in the lower.
  v.push_back(binary("cvt_rn_f16x2_f32", "cvt.rn.f16x2.f32 $d, $a, $b;", kF16x2, kF32, kF32, [](const Inputs& in) {
    return encodeFloat(decodeFloat(in[0], kFloat32), kHalf, Rounding::Nearest) << 16 |
           encodeFloat(decodeFloat(in[1], kFloat32), kHalf, Rounding::Nearest);
  }));
  v.push_back(binary("cvt_rz_bf16x2_f32", "cvt.rz.bf16x2.f32 $d, $a, $b;", kBF16x2, kF32, kF32, [](const Inputs& in) {
    return encodeFloat(decodeFloat(in[0], kFloat32), kBFloat16, Rounding::Zero) << 16 |
           encodeFloat(decodeFloat(in[1], kFloat32), kBFloat16, Rounding::Zero);
  }));
  v.push_back(binary("cvt_rn_satfinite_bf16x2_f32", "cvt.rn.satfinite.bf16x2.f32 $d, $a, $b;", kBF16x2, kF32, kF32,
                     [](const Inputs& in) {
                       return encodeFloat(decodeFloat(in[0], kFloat32), kBFloat16, Rounding::Nearest, false, true) << 16 |
                              encodeFloat(decodeFloat(in[1], kFloat32), kBFloat16, Rounding::Nearest, false, true);
                     }));
  // tf32: the f32 rounded to a 10-bit mantissa, kept in an f32 container.
  v.push_back(unary("cvt_rna_tf32_f32", "cvt.rna.tf32.f32 $d, $a;", kF32, kF32, [](const Inputs& in) {
    double x = decodeFloat(in[0], kFloat32);
    if (std::isnan(x)) return uint64_t{0x7fffffffu};
    return encodeFloat(x, kTf32, Rounding::NearestAway) << 13;
  }));
  // fp8 pairs from two f32: a in the upper byte.
  for (bool e4m3 : {true, false}) {
    const FloatFormat& f = e4m3 ? kE4M3 : kE5M2;
    std::string t = e4m3 ? "e4m3x2" : "e5m2x2";
    v.push_back(binary("cvt_rn_satfinite_" + t + "_f32", "cvt.rn.satfinite." + t + ".f32 $d, $a, $b;", kS16, kF32,
                       kF32, [&f](const Inputs& in) {
                         return encodeFloat(decodeFloat(in[0], kFloat32), f, Rounding::Nearest, false, true) << 8 |
                                encodeFloat(decodeFloat(in[1], kFloat32), f, Rounding::Nearest, false, true);
                       }));
    v.back().accept = [&f](uint64_t got, uint64_t want, const Inputs&) { return sameFp8Pair(got, want, f); };
    v.back().target = "sm_89";
    // And back: each byte of the pair widened to f16 (exact), upper byte to the upper half.
    v.push_back(unary("cvt_rn_f16x2_" + t, "cvt.rn.f16x2." + t + " $d, $a;", kF16x2, kS16, [&f](const Inputs& in) {
      return encodeFloat(decodeFloat(in[0] >> 8 & 0xff, f), kHalf, Rounding::Nearest) << 16 |
             encodeFloat(decodeFloat(in[0] & 0xff, f), kHalf, Rounding::Nearest);
    }));
    v.back().target = "sm_89";
  }
  // fp6 pairs (a .b16, one per byte's low 6 bits) and fp4 pairs (a .b8, one per nibble), PTX 8.6
  // on the sm_100f family: NaN-less formats, NaN converting to the largest positive value.
  struct Small {
    const FloatFormat* f;
    const char* name;
    unsigned slot;
  };
  for (Small small :
       {Small{&kE2M3, "e2m3x2", 8}, Small{&kE3M2, "e3m2x2", 8}, Small{&kE2M1, "e2m1x2", 4}}) {
    const FloatFormat& f = *small.f;
    unsigned slot = small.slot;
    Operand packed = kS16;  // the pair in a .b16 (e2m1x2: its low byte)
    for (bool relu : {false, true}) {
      std::string mods = relu ? ".relu" : "";
      std::string name =
          std::string("cvt_rn_satfinite") + (relu ? "_relu_" : "_") + small.name + "_f32";
      // e2m1x2 results are .b8: widened to the test's .b16 register.
      std::string body = slot == 4 ? "{ .reg .b8 q; cvt.rn.satfinite" + mods + "." + small.name +
                                         ".f32 q, $a, $b; cvt.u16.u8 $d, q; }"
                                   : "cvt.rn.satfinite" + mods + "." + std::string(small.name) +
                                         ".f32 $d, $a, $b;";
      v.push_back(binary(name, body, packed, kF32, kF32, [&f, slot, relu](const Inputs& in) {
        auto one = [&](uint64_t x) {
          double value = decodeFloat(x, kFloat32);
          // Negatives and -0 become +0, as every .relu (max with +0); NaN stays NaN, then
          // becomes +max.
          if (relu && value <= 0) value = 0;
          return encodeFloat(value, f, Rounding::Nearest, false, true);
        };
        return one(in[0]) << slot | one(in[1]);
      }));
      v.back().target = "sm_100f";
      v.back().version = "8.8";
    }
    // And back, exhaustively over the packed values.
    std::string name = std::string("cvt_rn_f16x2_") + small.name;
    std::string body = slot == 4 ? "{ .reg .b8 q; cvt.u8.u16 q, $a; cvt.rn.f16x2." +
                                       std::string(small.name) + " $d, q; }"
                                 : "cvt.rn.f16x2." + std::string(small.name) + " $d, $a;";
    v.push_back(unary(name, body, kF16x2, packed, [&f, slot](const Inputs& in) {
      uint64_t mask = (uint64_t{1} << formatBits(f)) - 1;
      uint64_t hi = in[0] >> slot & mask, lo = in[0] & mask;
      if (slot == 4) hi = in[0] >> 4 & 0xf;
      return encodeFloat(decodeFloat(hi, f), kHalf, Rounding::Nearest) << 16 |
             encodeFloat(decodeFloat(lo, f), kHalf, Rounding::Nearest);
    }));
    v.back().target = "sm_100f";
    v.back().version = "8.8";
  }
  // ue8m0x2: power-of-two scale factors, a biased exponent per byte (0xff NaN, no zero). From
  // f32 pairs and bf16x2 with .rz (floor of log2 |x|) or .rp (its ceiling); below 2^-127 (zero
  // included) the smallest scale; beyond 2^127 and infinities NaN, or the largest with .satfinite.
  auto ue8m0 = [](double x, bool up, bool satfinite) -> uint64_t {
    x = std::fabs(x);
    if (std::isnan(x)) return 0xff;
    if (std::isinf(x)) return satfinite ? 0xfe : 0xff;
    if (x == 0) return 0;
    int e = 0;
    double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
    int biased = e - 1 + (up && m != 0.5 ? 1 : 0) + 127;
    if (biased < 0) return 0;
    if (biased > 254) return satfinite ? 0xfe : 0xff;
    return static_cast<uint64_t>(biased);
  };
  for (bool up : {false, true}) {
    for (bool satfinite : {false, true}) {
      std::string mods = std::string(up ? ".rp" : ".rz") + (satfinite ? ".satfinite" : "");
      std::string name = std::string(up ? "rp" : "rz") + (satfinite ? "_satfinite" : "");
      v.push_back(binary("cvt_" + name + "_ue8m0x2_f32", "cvt" + mods + ".ue8m0x2.f32 $d, $a, $b;",
                         kS16, kF32, kF32, [=](const Inputs& in) {
                           return ue8m0(decodeFloat(in[0], kFloat32), up, satfinite) << 8 |
                                  ue8m0(decodeFloat(in[1], kFloat32), up, satfinite);
                         }));
      v.back().target = "sm_100f";
      v.back().version = "8.8";
      v.push_back(unary("cvt_" + name + "_ue8m0x2_bf16x2", "cvt" + mods + ".ue8m0x2.bf16x2 $d, $a;",
                        kS16, kBF16x2, [=](const Inputs& in) {
                          return ue8m0(decodeFloat(in[0] >> 16 & 0xffff, kBFloat16), up, satfinite)
                                     << 8 |
                                 ue8m0(decodeFloat(in[0] & 0xffff, kBFloat16), up, satfinite);
                        }));
      v.back().target = "sm_100f";
      v.back().version = "8.8";
    }
  }
  // And back, exhaustively: each scale exactly as a bf16 (2^-127 is a bf16 subnormal).
  v.push_back(unary("cvt_rn_bf16x2_ue8m0x2", "cvt.rn.bf16x2.ue8m0x2 $d, $a;", kBF16x2, kS16,
                    [](const Inputs& in) {
                      auto widen = [](uint64_t e) {
                        if (e == 0xff) return uint64_t{0x7fff};
                        return encodeFloat(std::ldexp(1.0, static_cast<int>(e) - 127), kBFloat16,
                                           Rounding::Nearest);
                      };
                      return widen(in[0] >> 8 & 0xff) << 16 | widen(in[0] & 0xff);
                    }));
  v.back().target = "sm_100f";
  v.back().version = "8.8";
  return v;
}

// cvt.pack.sat: a and b clamped to the narrow type's range, b in the lowest bits, a above it,
// and (narrower than 16 bits) c's low bits above both (the PTX ISA's pseudo-code).
std::vector<InstructionCase> integerPackCases() {
  std::vector<InstructionCase> v;
  for (unsigned bits : {16u, 8u, 4u, 2u})
    for (bool isSigned : {false, true}) {
      std::string type = std::string(isSigned ? "s" : "u") + std::to_string(bits);
      bool withC = bits < 16;
      std::string body =
          "cvt.pack.sat." + type + ".s32" + (withC ? ".b32 $d, $a, $b, $c;" : " $d, $a, $b;");
      Reference ref = [=](const Inputs& in) {
        int64_t low = isSigned ? -(int64_t{1} << (bits - 1)) : 0;
        int64_t high = isSigned ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
        auto sat = [&](uint64_t x) {
          int64_t value = static_cast<int32_t>(static_cast<uint32_t>(x));
          return static_cast<uint64_t>(std::clamp(value, low, high)) & ((uint64_t{1} << bits) - 1);
        };
        uint64_t d = sat(in[1]) | sat(in[0]) << bits;
        if (withC) d |= in[2] << (2 * bits);
        return d & 0xffffffffu;
      };
      InstructionCase c = withC ? ternary("cvt_pack_sat_" + type, body, kS32, kS32, kS32, kS32, ref)
                                : binary("cvt_pack_sat_" + type, body, kS32, kS32, kS32, ref);
      c.version = "6.5";
      c.target = "sm_75";  // the 4- and 2-bit forms need it, the others sm_72
      v.push_back(c);
    }
  return v;
}

INSTANTIATE_TEST_SUITE_P(ConvertIntToInt, Conformance, ::testing::ValuesIn(intToIntCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ConvertFloatToInt, Conformance, ::testing::ValuesIn(floatToIntCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ConvertIntToFloat, Conformance, ::testing::ValuesIn(intToFloatCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ConvertFloatToFloat, Conformance, ::testing::ValuesIn(floatToFloatCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ConvertPacked, Conformance, ::testing::ValuesIn(packedCases()), caseName);
INSTANTIATE_TEST_SUITE_P(ConvertIntegerPack, Conformance, ::testing::ValuesIn(integerPackCases()),
                         caseName);

}  // namespace
}  // namespace rocuda::compiler::conformance
