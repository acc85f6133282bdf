// setp / set / selp / slct: every comparison operator on integer and float types, the .and /
// .or / .xor combining forms, and packed f16x2 / bf16x2 comparisons.
#include <cmath>

#include "conformance.h"

namespace rocuda::compiler::conformance {
namespace {

// A comparison of two decoded values by PTX operator name; NaNs are unordered.
bool compare(const std::string& op, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  if (op == "eq") return !unordered && a == b;
  if (op == "ne") return !unordered && a != b;
  if (op == "lt" || op == "lo") return !unordered && a < b;
  if (op == "le" || op == "ls") return !unordered && a <= b;
  if (op == "gt" || op == "hi") return !unordered && a > b;
  if (op == "ge" || op == "hs") return !unordered && a >= b;
  if (op == "equ") return unordered || a == b;
  if (op == "neu") return unordered || a != b;
  if (op == "ltu") return unordered || a < b;
  if (op == "leu") return unordered || a <= b;
  if (op == "gtu") return unordered || a > b;
  if (op == "geu") return unordered || a >= b;
  if (op == "num") return !unordered;
  if (op == "nan") return unordered;
  ADD_FAILURE() << "unknown comparison " << op;
  return false;
}

bool compareInt(const std::string& op, uint64_t a, uint64_t b, int width, bool isSigned) {
  if (isSigned) {
    int shift = 64 - width;
    int64_t x = static_cast<int64_t>(a << shift) >> shift, y = static_cast<int64_t>(b << shift) >> shift;
    if (op == "eq") return x == y;
    if (op == "ne") return x != y;
    if (op == "lt") return x < y;
    if (op == "le") return x <= y;
    if (op == "gt") return x > y;
    return x >= y;
  }
  uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  a &= mask;
  b &= mask;
  if (op == "eq") return a == b;
  if (op == "ne") return a != b;
  if (op == "lo" || op == "lt") return a < b;
  if (op == "ls" || op == "le") return a <= b;
  if (op == "hi" || op == "gt") return a > b;
  return a >= b;
}

const std::vector<std::string> kFloatOps = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                                            "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};

std::vector<InstructionCase> setpCases() {
  std::vector<InstructionCase> v;
  struct IntType {
    std::string name;
    Operand op;
    int width;
    bool isSigned;
  };
  for (const IntType& t : {IntType{"s32", kS32, 32, true}, IntType{"u32", kS32, 32, false},
                           IntType{"s64", kS64, 64, true}, IntType{"u64", kS64, 64, false},
                           IntType{"s16", kS16, 16, true}, IntType{"b16", kS16, 16, false}}) {
    std::vector<std::string> ops = t.isSigned ? std::vector<std::string>{"eq", "ne", "lt", "le", "gt", "ge"}
                                              : std::vector<std::string>{"eq", "ne", "lo", "ls", "hi", "hs"};
    if (t.name == "b16") ops = {"eq", "ne"};
    for (const std::string& op : ops)
      v.push_back(binary("setp_" + op + "_" + t.name, "setp." + op + "." + t.name + " $d, $a, $b;", kPred,
                         t.op, t.op, [=](const Inputs& x) {
                           return compareInt(op, x[0], x[1], t.width, t.isSigned) ? 1u : 0u;
                         }));
  }
  struct FloatType {
    std::string name;
    Operand op;
    const FloatFormat* format;
  };
  for (const FloatType& t : {FloatType{"f32", kF32, &kFloat32}, FloatType{"f64", kF64, &kFloat64},
                             FloatType{"f16", kF16, &kHalf}, FloatType{"bf16", kBF16, &kBFloat16}})
    for (const std::string& op : kFloatOps) {
      auto c = binary("setp_" + op + "_" + t.name, "setp." + op + "." + t.name + " $d, $a, $b;", kPred, t.op,
                      t.op, [=](const Inputs& x) {
                        return compare(op, decodeFloat(x[0], *t.format), decodeFloat(x[1], *t.format)) ? 1u
                                                                                                      : 0u;
                      });
      if (t.name == "bf16") c.version = "7.8";
      v.push_back(c);
    }
  // .ftz: subnormal inputs compare as zeros of their sign.
  v.push_back(binary("setp_lt_ftz_f32", "setp.lt.ftz.f32 $d, $a, $b;", kPred, kF32, kF32,
                     [](const Inputs& x) {
                       double a = decodeFloat(flushSubnormalBits(x[0], kFloat32), kFloat32);
                       double b = decodeFloat(flushSubnormalBits(x[1], kFloat32), kFloat32);
                       return compare("lt", a, b) ? 1u : 0u;
                     }));
  // The combining forms: p = (a op b) BOOL c, and the complement written to the second result.
  for (std::string combine : {"and", "or", "xor"})
    v.push_back(ternary("setp_gtu_" + combine + "_f32",
                        "setp.gtu." + combine + ".f32 %q0|%q1, $a, $b, !$c; selp.u32 %r0, 1, 0, %q0;"
                        " selp.u32 %r1, 2, 0, %q1; or.b32 %r0, %r0, %r1; setp.eq.u32 $d, %r0, 2;",
                        kPred, kF32, kF32, kPred, [=](const Inputs& x) {
                          bool cmp = compare("gtu", decodeFloat(x[0], kFloat32), decodeFloat(x[1], kFloat32));
                          bool c = x[2] == 0;  // !c
                          bool p = combine == "and" ? (cmp && c) : combine == "or" ? (cmp || c) : (cmp != c);
                          bool q = combine == "and" ? (!cmp && c) : combine == "or" ? (!cmp || c) : (!cmp != c);
                          return (!p && q) ? 1u : 0u;
                        }));
  // Packed comparisons: one predicate per half (low half first).
  for (std::string op : {"eq", "lt", "geu", "nan"}) {
    for (bool bf : {false, true}) {
      const FloatFormat& f = bf ? kBFloat16 : kHalf;
      std::string t = bf ? "bf16x2" : "f16x2";
      auto c = binary("setp_" + op + "_" + t,
                      "setp." + op + "." + t + " %q0|%q1, $a, $b; selp.u32 %r0, 1, 0, %q0;"
                      " selp.u32 %r1, 2, 0, %q1; or.b32 $d, %r0, %r1;",
                      kS32, bf ? kBF16x2 : kF16x2, bf ? kBF16x2 : kF16x2, [=, &f](const Inputs& x) {
                        bool lo = compare(op, decodeFloat(x[0] & 0xffff, f), decodeFloat(x[1] & 0xffff, f));
                        bool hi = compare(op, decodeFloat(x[0] >> 16 & 0xffff, f), decodeFloat(x[1] >> 16 & 0xffff, f));
                        return (lo ? 1u : 0u) | (hi ? 2u : 0u);
                      });
      if (bf) c.version = "7.8";
      v.push_back(c);
      auto s = binary("set_" + op + "_u32_" + t, "set." + op + ".u32." + t + " $d, $a, $b;", kS32,
                      bf ? kBF16x2 : kF16x2, bf ? kBF16x2 : kF16x2, [=, &f](const Inputs& x) {
                        bool lo = compare(op, decodeFloat(x[0] & 0xffff, f), decodeFloat(x[1] & 0xffff, f));
                        bool hi = compare(op, decodeFloat(x[0] >> 16 & 0xffff, f), decodeFloat(x[1] >> 16 & 0xffff, f));
                        return (lo ? 0xffffu : 0u) | (hi ? 0xffff0000u : 0u);
                      });
      if (bf) s.version = "7.8";
      v.push_back(s);
    }
  }
  return v;
}

std::vector<InstructionCase> setCases() {
  std::vector<InstructionCase> v;
  v.push_back(binary("set_gtu_u32_f32", "set.gtu.u32.f32 $d, $a, $b;", kS32, kF32, kF32, [](const Inputs& x) {
    return compare("gtu", decodeFloat(x[0], kFloat32), decodeFloat(x[1], kFloat32)) ? 0xffffffffu : 0u;
  }));
  v.push_back(binary("set_le_f32_s32", "set.le.f32.s32 $d, $a, $b;", kF32, kS32, kS32, [](const Inputs& x) {
    return compareInt("le", x[0], x[1], 32, true) ? 0x3f800000u : 0u;
  }));
  v.push_back(ternary("set_ne_or_s32_u64", "set.ne.or.s32.u64 $d, $a, $b, $c;", kS32, kS64, kS64, kPred,
                      [](const Inputs& x) { return (x[0] != x[1] || x[2]) ? 0xffffffffu : 0u; }));
  v.push_back(binary("set_lt_f16_f16", "set.lt.f16.f16 $d, $a, $b;", kS16, kF16, kF16, [](const Inputs& x) {
    return compare("lt", decodeFloat(x[0], kHalf), decodeFloat(x[1], kHalf)) ? 0x3c00u : 0u;
  }));
  v.push_back(ternary("selp_b64", "selp.b64 $d, $a, $b, $c;", kS64, kS64, kS64, kPred,
                      [](const Inputs& x) { return x[2] ? x[0] : x[1]; }));
  v.push_back(ternary("selp_b16", "selp.b16 $d, $a, $b, $c;", kS16, kS16, kS16, kPred,
                      [](const Inputs& x) { return x[2] ? x[0] : x[1]; }));
  v.push_back(ternary("slct_b32_s32", "slct.b32.s32 $d, $a, $b, $c;", kS32, kS32, kS32, kS32,
                      [](const Inputs& x) { return static_cast<int32_t>(x[2]) >= 0 ? x[0] : x[1]; }));
  // slct with an f32 selector: c >= 0 picks a (-0 counts as >= 0), a NaN selector picks b.
  v.push_back(ternary("slct_f32_f32", "slct.f32.f32 $d, $a, $b, $c;", kF32, kF32, kF32, kF32,
                      [](const Inputs& x) {
                        double c = decodeFloat(x[2], kFloat32);
                        return c >= 0 ? x[0] : x[1];
                      }));
  v.push_back(ternary("slct_ftz_s32_f32", "slct.ftz.s32.f32 $d, $a, $b, $c;", kS32, kS32, kS32, kF32,
                      [](const Inputs& x) {
                        double c = decodeFloat(flushSubnormalBits(x[2], kFloat32), kFloat32);
                        return c >= 0 ? x[0] : x[1];
                      }));
  return v;
}

INSTANTIATE_TEST_SUITE_P(Setp, Conformance, ::testing::ValuesIn(setpCases()), caseName);
INSTANTIATE_TEST_SUITE_P(SetSelect, Conformance, ::testing::ValuesIn(setCases()), caseName);

}  // namespace
}  // namespace rocuda::compiler::conformance
