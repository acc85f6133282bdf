// f32 and f64 arithmetic in every rounding mode with .ftz and .sat, the approximate forms within
// the PTX ISA's stated error, min/max NaN and zero rules, abs/neg/copysign, testp.
#include <cmath>

#include "conformance.h"

namespace rocuda::compiler::conformance {
namespace {

constexpr Rounding kModes[] = {Rounding::Nearest, Rounding::Zero, Rounding::Down, Rounding::Up};

double f32In(uint64_t bits, bool ftz) {
  return decodeFloat(ftz ? flushSubnormalBits(bits, kFloat32) : bits, kFloat32);
}

// .sat: clamp to [0, 1]; NaN and -0 become +0.
uint64_t saturateF32(uint64_t bits) {
  double v = decodeFloat(bits, kFloat32);
  if (std::isnan(v) || v <= 0) return 0;
  if (v >= 1) return bitsOf(1.0f);
  return bits;
}

enum class Op { Add, Sub, Mul, Fma, Div, Sqrt, Rcp };

const char* opName(Op op) {
  switch (op) {
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    case Op::Fma: return "fma";
    case Op::Div: return "div";
    case Op::Sqrt: return "sqrt";
    case Op::Rcp: return "rcp";
  }
  return "";
}

int arity(Op op) { return op == Op::Fma ? 3 : (op == Op::Sqrt || op == Op::Rcp) ? 1 : 2; }

// The f32 instruction's exact result rounded once in mode r.
uint64_t f32Arith(Op op, const Inputs& in, Rounding r, bool ftz, bool sat) {
  double a = f32In(in[0], ftz), b = f32In(in[1], ftz), c = f32In(in[2], ftz);
  double exact = 0;
  switch (op) {
    case Op::Add: exact = addToOdd(a, b, r); break;
    case Op::Sub: exact = addToOdd(a, -b, r); break;
    case Op::Mul: exact = mulToOdd(a, b); break;
    case Op::Fma: exact = fmaToOdd(a, b, c, r); break;
    case Op::Div: exact = divToOdd(a, b); break;
    case Op::Sqrt: exact = sqrtToOdd(a); break;
    case Op::Rcp: exact = divToOdd(1.0, a); break;
  }
  uint64_t bits = encodeFloat(exact, kFloat32, r, ftz);
  return sat ? saturateF32(bits) : bits;
}

uint64_t f64Arith(Op op, const Inputs& in, Rounding r) {
  double a = asF64(in[0]), b = asF64(in[1]), c = asF64(in[2]);
  switch (op) {
    case Op::Add: return bitsOf(addF64(a, b, r));
    case Op::Sub: return bitsOf(addF64(a, -b, r));
    case Op::Mul: return bitsOf(mulF64(a, b, r));
    case Op::Fma: return bitsOf(fmaF64(a, b, c, r));
    case Op::Div: return bitsOf(divF64(a, b, r));
    case Op::Sqrt: return bitsOf(sqrtF64(a, r));
    case Op::Rcp: return bitsOf(divF64(1.0, a, r));
  }
  return 0;
}

std::string operandsText(int n) {
  return n == 1 ? " $d, $a;" : n == 2 ? " $d, $a, $b;" : " $d, $a, $b, $c;";
}

InstructionCase arithCase(Op op, bool f64, Rounding r, bool ftz, bool sat) {
  std::string mods = std::string(".") + roundingName(r) + (ftz ? ".ftz" : "") + (sat ? ".sat" : "");
  std::string name = std::string(opName(op)) + mods + (f64 ? ".f64" : ".f32");
  std::string body = name + operandsText(arity(op));
  for (char& ch : name)
    if (ch == '.') ch = '_';
  Operand t = f64 ? kF64 : kF32;
  InstructionCase c{name, body, t, {}, nullptr, {}};
  c.operands.assign(static_cast<size_t>(arity(op)), t);
  if (f64)
    c.reference = [=](const Inputs& in) { return f64Arith(op, in, r); };
  else
    c.reference = [=](const Inputs& in) { return f32Arith(op, in, r, ftz, sat); };
  return c;
}

std::vector<InstructionCase> roundedCases() {
  std::vector<InstructionCase> v;
  for (Op op : {Op::Add, Op::Sub, Op::Mul, Op::Fma})
    for (Rounding r : kModes) {
      v.push_back(arithCase(op, false, r, false, false));
      v.push_back(arithCase(op, false, r, true, false));
      v.push_back(arithCase(op, true, r, false, false));
    }
  for (Op op : {Op::Add, Op::Mul, Op::Fma}) {
    v.push_back(arithCase(op, false, Rounding::Nearest, false, true));
    v.push_back(arithCase(op, false, Rounding::Zero, true, true));
  }
  for (Op op : {Op::Div, Op::Sqrt, Op::Rcp})
    for (Rounding r : kModes) {
      v.push_back(arithCase(op, false, r, false, false));
      v.push_back(arithCase(op, true, r, false, false));
    }
  for (Op op : {Op::Div, Op::Sqrt, Op::Rcp}) v.push_back(arithCase(op, false, Rounding::Nearest, true, false));
  // mad.rn.f32 is fma.rn.f32.
  v.push_back(ternary("mad_rn_f32", "mad.rn.f32 $d, $a, $b, $c;", kF32, kF32, kF32, kF32,
                      [](const Inputs& in) { return f32Arith(Op::Fma, in, Rounding::Nearest, false, false); }));
  return v;
}

// A double-precision function of the (flushed) f32 input, as f32 bits for the acceptors.
Reference approxReference(double (*f)(double), bool ftz) {
  return [=](const Inputs& in) { return uint64_t{bitsOf(static_cast<float>(f(f32In(in[0], ftz))))}; };
}

double rcp(double x) { return 1 / x; }
double rsqrt(double x) { return 1 / std::sqrt(x); }

std::vector<InstructionCase> approxCases() {
  std::vector<InstructionCase> v;
  for (bool ftz : {false, true}) {
    std::string f = ftz ? ".ftz" : "", n = ftz ? "_ftz" : "";
    v.push_back(unary("rcp_approx" + n + "_f32", "rcp.approx" + f + ".f32 $d, $a;", kF32, kF32,
                      approxReference(rcp, ftz)));
    v.back().accept = withinUlpsF32(1.5, ftz);
    v.push_back(unary("sqrt_approx" + n + "_f32", "sqrt.approx" + f + ".f32 $d, $a;", kF32, kF32,
                      approxReference(static_cast<double (*)(double)>(std::sqrt), ftz)));
    v.back().accept = withinRelativeF32(std::ldexp(1.0, -23) * 1.5);
    v.push_back(unary("rsqrt_approx" + n + "_f32", "rsqrt.approx" + f + ".f32 $d, $a;", kF32, kF32,
                      approxReference(rsqrt, ftz)));
    v.back().accept = withinRelativeF32(std::ldexp(1.0, -22.9) * 1.5);
    v.push_back(unary("ex2_approx" + n + "_f32", "ex2.approx" + f + ".f32 $d, $a;", kF32, kF32,
                      approxReference(static_cast<double (*)(double)>(std::exp2), ftz)));
    v.back().accept = withinUlpsF32(2.5, ftz);
    v.push_back(unary("lg2_approx" + n + "_f32", "lg2.approx" + f + ".f32 $d, $a;", kF32, kF32,
                      approxReference(static_cast<double (*)(double)>(std::log2), ftz)));
    // 2^-22 absolute in (0.5, 2), 2^-22 relative elsewhere.
    v.back().accept = withinRelativeF32(std::ldexp(1.0, -22), std::ldexp(1.0, -22));
    for (std::string fn : {"sin", "cos"}) {
      double (*ref)(double) = fn == "sin" ? static_cast<double (*)(double)>(std::sin)
                                          : static_cast<double (*)(double)>(std::cos);
      v.push_back(unary(fn + "_approx" + n + "_f32", fn + ".approx" + f + ".f32 $d, $a;", kF32, kF32,
                        approxReference(ref, ftz)));
      // 2^-20.5 absolute in [-2pi, 2pi], 2^-14.7 in [-100pi, 100pi]; nothing promised beyond.
      v.back().accept = [=](uint64_t got, uint64_t want, const Inputs& in) {
        double x = f32In(in[0], ftz);
        float g = asF32(static_cast<uint32_t>(got)), w = asF32(static_cast<uint32_t>(want));
        if (std::isnan(x) || std::isinf(x)) return std::isnan(g);
        double bound = std::fabs(x) <= 2 * M_PI ? std::ldexp(1.0, -20.5)
                       : std::fabs(x) <= 100 * M_PI ? std::ldexp(1.0, -14.7)
                                                    : 2.0;
        return std::fabs(static_cast<double>(g) - w) <= bound + std::ldexp(1.0, -25);
      };
    }
  }
  v.push_back(unary("tanh_approx_f32", "tanh.approx.f32 $d, $a;", kF32, kF32,
                    approxReference(static_cast<double (*)(double)>(std::tanh), false)));
  v.back().accept = withinRelativeF32(std::ldexp(1.0, -11), std::ldexp(1.0, -126));
  v.back().target = "sm_75";
  v.back().version = "7.0";
  v.push_back(binary("div_full_f32", "div.full.f32 $d, $a, $b;", kF32, kF32, kF32, [](const Inputs& in) {
    return uint64_t{bitsOf(static_cast<float>(f32In(in[0], false) / f32In(in[1], false)))};
  }));
  v.back().accept = withinUlpsF32(2.5);
  v.push_back(binary(
      "div_approx_f32", "div.approx.f32 $d, $a, $b;", kF32, kF32, kF32, [](const Inputs& in) {
        double a = f32In(in[0], false), b = f32In(in[1], false);
        // a * (1/b) with the reciprocal flushed: a signed zero for |b| > 2^126 (NaN for infinite
        // a).
        if (std::fabs(b) > std::ldexp(1.0, 126)) {
          double r = a * std::copysign(0.0, b);
          return uint64_t{std::isnan(r) ? uint32_t{0x7fffffff} : bitsOf(static_cast<float>(r))};
        }
        return uint64_t{bitsOf(static_cast<float>(a / b))};
      }));
  // 2 ulp for |b| in [2^-126, 2^126]; exactly the flushed result above 2^126 (__fdividef's
  // documented zero and NaN); the ISA promises nothing below 2^-126.
  v.back().accept = [](uint64_t got, uint64_t want, const Inputs& in) {
    double b = std::fabs(f32In(in[1], false));
    if (b > std::ldexp(1.0, 126)) return got == want;
    if (b < std::ldexp(1.0, -126)) return true;
    return withinUlpsF32(2.5)(got, want, in);
  };
  v.push_back(unary("rcp_approx_ftz_f64", "rcp.approx.ftz.f64 $d, $a;", kF64, kF64, [](const Inputs& in) {
    double x = asF64(in[0]);
    if (std::fpclassify(x) == FP_SUBNORMAL) x = std::copysign(0.0, x);
    double r = 1 / x;  // .ftz flushes subnormal results too
    return bitsOf(std::fpclassify(r) == FP_SUBNORMAL ? std::copysign(0.0, r) : r);
  }));
  v.back().accept = [](uint64_t got, uint64_t want, const Inputs&) {
    double g = asF64(got), w = asF64(want);
    if (std::isnan(w) || std::isinf(w) || w == 0) return std::isnan(w) ? std::isnan(g) : (g == w || std::fabs(w) < 3e-308);
    return std::fabs(g - w) <= std::ldexp(std::fabs(w), -20);  // no bound stated: a coarse one
  };
  v.push_back(unary("rsqrt_approx_f64", "rsqrt.approx.f64 $d, $a;", kF64, kF64,
                    [](const Inputs& in) { return bitsOf(1 / std::sqrt(asF64(in[0]))); }));
  v.back().accept = withinUlpsF64(1 << 20);
  return v;
}

// Two-input min/max of bit patterns: one NaN gives the other operand, -0 < +0; `nan` (.NaN):
// any NaN gives NaN.
uint64_t minMaxOfTwo(bool isMax, uint64_t a, uint64_t b, const FloatFormat& f, bool nan) {
  uint64_t sign = uint64_t{1} << (formatBits(f) - 1);
  bool an = isNaNBits(a, f), bn = isNaNBits(b, f);
  if (an && bn) return f.nanBits;
  if (an || bn) return nan ? f.nanBits : (an ? b : a);
  double x = decodeFloat(a, f), y = decodeFloat(b, f);
  if (x == y && x == 0) {
    bool xNeg = (a & sign) != 0, yNeg = (b & sign) != 0;
    return isMax ? ((xNeg && yNeg) ? a : (xNeg ? b : a)) : ((xNeg || !yNeg) ? a : b);
  }
  return ((x < y) != isMax) ? a : b;
}

// min/max as the PTX ISA's pseudo-code: .ftz flushes inputs and result; .abs takes magnitudes
// (with .xorsign the result then gets the sign of a xor b, none when it is NaN); three inputs
// (`three`) fold as max(max(a, b), c).
uint64_t minMaxRef(bool isMax, const Inputs& in, const FloatFormat& f, bool ftz, bool nan,
                   bool xorsign, bool abs = false, bool three = false) {
  uint64_t sign = uint64_t{1} << (formatBits(f) - 1);
  uint64_t x[3];
  for (int i = 0; i < 3; ++i) {
    x[i] = ftz ? flushSubnormalBits(in[i], f) : in[i];
    if (abs || xorsign) x[i] &= ~sign;
  }
  uint64_t r = minMaxOfTwo(isMax, x[0], x[1], f, nan);
  if (three) r = minMaxOfTwo(isMax, r, x[2], f, nan);
  if (xorsign && !isNaNBits(r, f)) r = (r & ~sign) | ((in[0] ^ in[1]) & sign);
  return ftz ? flushSubnormalBits(r, f) : r;
}

std::vector<InstructionCase> minMaxCases() {
  std::vector<InstructionCase> v;
  for (bool isMax : {false, true})
    for (bool ftz : {false, true})
      for (bool nan : {false, true})
        for (bool xorsign : {false, true}) {
          std::string mods = std::string(ftz ? ".ftz" : "") + (nan ? ".NaN" : "") + (xorsign ? ".xorsign.abs" : "");
          std::string op = isMax ? "max" : "min";
          std::string name = op + mods + ".f32";
          std::string body = name + " $d, $a, $b;";
          for (char& ch : name)
            if (ch == '.') ch = '_';
          v.push_back(binary(name, body, kF32, kF32, kF32, [=](const Inputs& in) {
            return minMaxRef(isMax, in, kFloat32, ftz, nan, xorsign);
          }));
          if (nan || xorsign) v.back().target = "sm_86";
          if (xorsign) v.back().version = "7.2";
        }
  // Three inputs (PTX 8.8, sm_100): no .xorsign, .abs alone allowed.
  for (bool isMax : {false, true})
    for (bool ftz : {false, true})
      for (bool nan : {false, true})
        for (bool abs : {false, true}) {
          std::string op = isMax ? "max" : "min";
          std::string name = op + (ftz ? ".ftz" : "") + (nan ? ".NaN" : "") + (abs ? ".abs" : "") + ".f32";
          std::string body = name + " $d, $a, $b, $c;";
          name += "_3";
          for (char& ch : name)
            if (ch == '.') ch = '_';
          v.push_back(ternary(name, body, kF32, kF32, kF32, kF32, [=](const Inputs& in) {
            return minMaxRef(isMax, in, kFloat32, ftz, nan, false, abs, true);
          }));
          v.back().target = "sm_100";
          v.back().version = "8.8";
        }
  for (bool isMax : {false, true}) {
    std::string op = isMax ? "max" : "min";
    v.push_back(binary(op + "_f64", op + ".f64 $d, $a, $b;", kF64, kF64, kF64, [=](const Inputs& in) {
      return minMaxRef(isMax, in, kFloat64, false, false, false);
    }));
  }
  return v;
}

std::vector<InstructionCase> signAndClassCases() {
  std::vector<InstructionCase> v;
  v.push_back(unary("abs_f32", "abs.f32 $d, $a;", kF32, kF32,
                    [](const Inputs& in) { return in[0] & 0x7fffffffu; }));
  v.push_back(unary("abs_ftz_f32", "abs.ftz.f32 $d, $a;", kF32, kF32,
                    [](const Inputs& in) { return flushSubnormalBits(in[0], kFloat32) & 0x7fffffffu; }));
  v.push_back(unary("neg_f32", "neg.f32 $d, $a;", kF32, kF32,
                    [](const Inputs& in) { return (in[0] ^ 0x80000000u) & 0xffffffffu; }));
  v.push_back(unary("neg_ftz_f32", "neg.ftz.f32 $d, $a;", kF32, kF32, [](const Inputs& in) {
    return (flushSubnormalBits(in[0], kFloat32) ^ 0x80000000u) & 0xffffffffu;
  }));
  v.push_back(unary("abs_f64", "abs.f64 $d, $a;", kF64, kF64,
                    [](const Inputs& in) { return in[0] & 0x7fffffffffffffffull; }));
  v.push_back(unary("neg_f64", "neg.f64 $d, $a;", kF64, kF64,
                    [](const Inputs& in) { return in[0] ^ 0x8000000000000000ull; }));
  v.push_back(binary("copysign_f32", "copysign.f32 $d, $a, $b;", kF32, kF32, kF32, [](const Inputs& in) {
    return (in[1] & 0x7fffffffu) | (in[0] & 0x80000000u);
  }));
  v.push_back(binary("copysign_f64", "copysign.f64 $d, $a, $b;", kF64, kF64, kF64, [](const Inputs& in) {
    return (in[1] & 0x7fffffffffffffffull) | (in[0] & 0x8000000000000000ull);
  }));
  // testp: zero counts as normal (PTX ISA, testp).
  for (bool f64 : {false, true})
    for (std::string cls : {"finite", "infinite", "number", "notanumber", "normal", "subnormal"}) {
      const FloatFormat& f = f64 ? kFloat64 : kFloat32;
      v.push_back(unary("testp_" + cls + (f64 ? "_f64" : "_f32"),
                        "testp." + cls + (f64 ? ".f64" : ".f32") + " $d, $a;", kPred, f64 ? kF64 : kF32,
                        [=, &f](const Inputs& in) {
                          double x = decodeFloat(in[0], f);
                          bool r = cls == "finite"       ? std::isfinite(x)
                                   : cls == "infinite"   ? std::isinf(x)
                                   : cls == "number"     ? !std::isnan(x)
                                   : cls == "notanumber" ? std::isnan(x)
                                   : cls == "normal"     ? (std::isfinite(x) && !isSubnormalBits(in[0], f))
                                                         : isSubnormalBits(in[0], f);
                          return r ? 1u : 0u;
                        }));
    }
  return v;
}

INSTANTIATE_TEST_SUITE_P(FloatRounded, Conformance, ::testing::ValuesIn(roundedCases()), caseName);
INSTANTIATE_TEST_SUITE_P(FloatApproximate, Conformance, ::testing::ValuesIn(approxCases()), caseName);
INSTANTIATE_TEST_SUITE_P(FloatMinMax, Conformance, ::testing::ValuesIn(minMaxCases()), caseName);
INSTANTIATE_TEST_SUITE_P(FloatSignAndClass, Conformance, ::testing::ValuesIn(signAndClassCases()), caseName);

}  // namespace
}  // namespace rocuda::compiler::conformance
