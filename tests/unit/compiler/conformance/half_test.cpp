// f16 / bf16 arithmetic, scalar and packed (x2): add/sub/mul/fma with .ftz and .sat, neg/abs
// (every input), tanh.approx within its documented error.
#include <cmath>

#include "conformance.h"

namespace rocuda::compiler::conformance {
namespace {

enum class HalfOp { Add, Sub, Mul, Fma };

// One half-precision operation on the low 16 bits of each input, rounded to nearest even.
uint64_t halfArith(HalfOp op, uint64_t a, uint64_t b, uint64_t c, const FloatFormat& f, bool ftz,
                   bool sat) {
  auto in = [&](uint64_t v) { return decodeFloat(ftz ? flushSubnormalBits(v & 0xffff, f) : v & 0xffff, f); };
  double x = in(a), y = in(b), z = in(c), exact = 0;
  switch (op) {
    case HalfOp::Add: exact = addToOdd(x, y, Rounding::Nearest); break;
    case HalfOp::Sub: exact = addToOdd(x, -y, Rounding::Nearest); break;
    case HalfOp::Mul: exact = mulToOdd(x, y); break;
    case HalfOp::Fma: exact = fmaToOdd(x, y, z, Rounding::Nearest); break;
  }
  uint64_t r = encodeFloat(exact, f, Rounding::Nearest, ftz);
  if (sat) {
    double v = decodeFloat(r, f);
    if (std::isnan(v) || v <= 0) return 0;
    if (v >= 1) return encodeFloat(1.0, f, Rounding::Nearest);
  }
  return r;
}

uint64_t packedArith(HalfOp op, const Inputs& in, const FloatFormat& f, bool ftz, bool sat) {
  uint64_t lo = halfArith(op, in[0], in[1], in[2], f, ftz, sat);
  uint64_t hi = halfArith(op, in[0] >> 16, in[1] >> 16, in[2] >> 16, f, ftz, sat);
  return lo | hi << 16;
}

std::vector<InstructionCase> halfArithmeticCases() {
  std::vector<InstructionCase> v;
  struct Kind {
    std::string type;
    const FloatFormat* format;
    bool packed;
  };
  const char* names[] = {"add", "sub", "mul", "fma"};
  for (const Kind& k : {Kind{"f16", &kHalf, false}, Kind{"f16x2", &kHalf, true},
                        Kind{"bf16", &kBFloat16, false}, Kind{"bf16x2", &kBFloat16, true}})
    for (HalfOp op : {HalfOp::Add, HalfOp::Sub, HalfOp::Mul, HalfOp::Fma}) {
      bool bf = k.format == &kBFloat16;
      // bf16 takes neither .ftz nor .sat; f16 takes both.
      std::vector<std::pair<bool, bool>> variants = {{false, false}};
      if (!bf) variants = {{false, false}, {true, false}, {false, true}};
      for (auto [ftz, sat] : variants) {
        std::string mods = std::string(".rn") + (ftz ? ".ftz" : "") + (sat ? ".sat" : "");
        std::string opName = names[static_cast<int>(op)];
        std::string inst = opName + mods + "." + k.type;
        std::string name = inst;
        for (char& ch : name)
          if (ch == '.') ch = '_';
        Operand t = k.packed ? (bf ? kBF16x2 : kF16x2) : (bf ? kBF16 : kF16);
        int n = op == HalfOp::Fma ? 3 : 2;
        std::string body = inst + (n == 3 ? " $d, $a, $b, $c;" : " $d, $a, $b;");
        const FloatFormat* f = k.format;
        bool packed = k.packed;
        InstructionCase c{name, body, t, std::vector<Operand>(static_cast<size_t>(n), t),
                          [=](const Inputs& in) {
                            return packed ? packedArith(op, in, *f, ftz, sat)
                                          : halfArith(op, in[0], in[1], in[2], *f, ftz, sat);
                          },
                          {}};
        if (bf) c.version = "7.8";
        v.push_back(c);
      }
    }
  return v;
}

// tanh.approx on each 16-bit lane: the correctly rounded tanh, and an acceptor that allows the
// approximation's error (PTX ISA: a maximum relative error of 2^-10.987 for f16; bf16 has fewer
// bits, so a relative 2^-8).
uint64_t tanhLanes(const Inputs& in, const FloatFormat& f, int lanes) {
  uint64_t r = 0;
  for (int lane = 0; lane < lanes; ++lane) {
    double x = decodeFloat((in[0] >> (16 * lane)) & 0xffff, f);
    r |= encodeFloat(std::tanh(x), f, Rounding::Nearest) << (16 * lane);
  }
  return r;
}

Acceptor tanhWithin(const FloatFormat& f, int lanes, double relative) {
  return [=, &f](uint64_t got, uint64_t want, const Inputs&) {
    for (int lane = 0; lane < lanes; ++lane) {
      double g = decodeFloat((got >> (16 * lane)) & 0xffff, f);
      double w = decodeFloat((want >> (16 * lane)) & 0xffff, f);
      if (std::isnan(w) != std::isnan(g)) return false;
      if (!std::isnan(w) && std::fabs(g - w) > relative * std::fabs(w) + std::ldexp(1.0, -24))
        return false;
    }
    return true;
  };
}

std::vector<InstructionCase> halfUnaryCases() {
  std::vector<InstructionCase> v;
  for (bool bf : {false, true})
    for (int lanes : {1, 2}) {
      const FloatFormat& f = bf ? kBFloat16 : kHalf;
      std::string t = std::string(bf ? "bf16" : "f16") + (lanes == 2 ? "x2" : "");
      Operand op = bf ? (lanes == 2 ? kBF16x2 : kBF16) : (lanes == 2 ? kF16x2 : kF16);
      v.push_back(unary("tanh_approx_" + t, "tanh.approx." + t + " $d, $a;", op, op,
                        [&f, lanes](const Inputs& in) { return tanhLanes(in, f, lanes); }));
      v.back().accept = tanhWithin(f, lanes, bf ? std::ldexp(1.0, -8) : std::ldexp(1.0, -10.987));
      v.back().version = "7.8";
    }
  for (bool bf : {false, true}) {
    std::string t = bf ? "bf16" : "f16";
    Operand op = bf ? kBF16 : kF16;
    v.push_back(unary("neg_" + t, "neg." + t + " $d, $a;", op, op, [](const Inputs& in) { return in[0] ^ 0x8000; }));
    v.push_back(unary("abs_" + t, "abs." + t + " $d, $a;", op, op, [](const Inputs& in) { return in[0] & 0x7fff; }));
    if (bf) {
      v[v.size() - 2].version = "7.8";
      v.back().version = "7.8";
    }
  }
  return v;
}

// atom on f16x2 / bf16x2 in shared memory: each thread owns a slot holding a, adds (or takes the
// min / max with) b, and returns the old value xor the new one (old must be a).
std::vector<InstructionCase> packedAtomicCases() {
  std::vector<InstructionCase> v;
  for (bool bf : {false, true})
    for (std::string op : {"add.noftz", "min", "max"}) {
      const FloatFormat& f = bf ? kBFloat16 : kHalf;
      std::string t = bf ? "bf16x2" : "f16x2";
      std::string name = "atom_shared_" + op + "_" + t;
      for (char& ch : name)
        if (ch == '.') ch = '_';
      std::string body =
          "mov.u32 %r0, %tid.x; shl.b32 %r0, %r0, 2; mov.u32 %r1, slots; add.u32 %r1, %r1, %r0;"
          " st.shared.b32 [%r1], $a; atom.shared." + op + "." + t + " %r2, [%r1], $b;"
          " ld.shared.b32 %r3, [%r1]; xor.b32 %r2, %r2, $a; setp.eq.u32 %q0, %r2, 0;"
          " selp.b32 $d, %r3, 0x7e007e00, %q0;";
      InstructionCase c = binary(name, body, bf ? kBF16x2 : kF16x2, bf ? kBF16x2 : kF16x2, bf ? kBF16x2 : kF16x2,
                                 [=, &f](const Inputs& in) {
                                   if (op == "add.noftz") return packedArith(HalfOp::Add, in, f, false, false);
                                   uint64_t r = 0;
                                   for (int shift : {0, 16}) {
                                     uint64_t a = (in[0] >> shift) & 0xffff, b = (in[1] >> shift) & 0xffff;
                                     bool an = isNaNBits(a, f), bn = isNaNBits(b, f);
                                     double x = decodeFloat(a, f), y = decodeFloat(b, f);
                                     uint64_t pick = an ? b : bn ? a : ((x < y) == (op == "min") ? a : b);
                                     r |= pick << shift;
                                   }
                                   return r;
                                 });
      c.declarations = "  .shared .align 4 .b32 slots[256];\n";
      if (op != "add.noftz") {
        // Equal zeros of opposite sign may come back as either (minNum / maxNum).
        c.accept = [&f](uint64_t got, uint64_t want, const Inputs&) {
          for (int shift : {0, 16}) {
            uint64_t g = (got >> shift) & 0xffff, w = (want >> shift) & 0xffff;
            bool same = g == w || (isNaNBits(g, f) && isNaNBits(w, f)) || ((g | w) & 0x7fff) == 0;
            if (!same) return false;
          }
          return true;
        };
      }
      if (bf || op != "add.noftz") c.version = "8.1";
      v.push_back(c);
    }
  return v;
}

// min/max .NaN on packed halves and fma .relu, each lane bit for bit: a NaN lane gives the
// canonical NaN (0x7fff) whatever the other lane holds; .relu clamps negatives to +0.
std::vector<InstructionCase> halfNaNCases() {
  std::vector<InstructionCase> v;
  for (bool bf : {false, true})
    for (bool isMax : {false, true}) {
      const FloatFormat& f = bf ? kBFloat16 : kHalf;
      std::string t = bf ? "bf16x2" : "f16x2";
      std::string op = isMax ? "max" : "min";
      v.push_back(binary(op + "_NaN_" + t, op + ".NaN." + t + " $d, $a, $b;", bf ? kBF16x2 : kF16x2,
                         bf ? kBF16x2 : kF16x2, bf ? kBF16x2 : kF16x2, [=, &f](const Inputs& in) {
                           uint64_t r = 0;
                           for (int shift : {0, 16}) {
                             uint64_t a = (in[0] >> shift) & 0xffff, b = (in[1] >> shift) & 0xffff;
                             uint64_t pick = f.nanBits;
                             if (!isNaNBits(a, f) && !isNaNBits(b, f)) {
                               double x = decodeFloat(a, f), y = decodeFloat(b, f);
                               if (x == y && x == 0)
                                 pick = isMax ? (a & b) : (a | b);  // -0 below +0
                               else
                                 pick = ((x < y) != isMax) ? a : b;
                             }
                             r |= pick << shift;
                           }
                           return r;
                         }));
    }
  for (bool bf : {false, true}) {
    const FloatFormat& f = bf ? kBFloat16 : kHalf;
    std::string t = bf ? "bf16" : "f16";
    v.push_back(ternary("fma_rn_relu_" + t, "fma.rn.relu." + t + " $d, $a, $b, $c;",
                        bf ? kBF16 : kF16, bf ? kBF16 : kF16, bf ? kBF16 : kF16, bf ? kBF16 : kF16,
                        [&f](const Inputs& in) {
                          uint64_t r = halfArith(HalfOp::Fma, in[0], in[1], in[2], f, false, false);
                          if (isNaNBits(r, f)) return f.nanBits;
                          return decodeFloat(r, f) <= 0 ? uint64_t{0} : r;  // -0 too
                        }));
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(PackedAtomics, Conformance, ::testing::ValuesIn(packedAtomicCases()), caseName);
INSTANTIATE_TEST_SUITE_P(HalfArithmetic, Conformance, ::testing::ValuesIn(halfArithmeticCases()), caseName);
INSTANTIATE_TEST_SUITE_P(HalfUnary, Conformance, ::testing::ValuesIn(halfUnaryCases()), caseName);
INSTANTIATE_TEST_SUITE_P(HalfNaN, Conformance, ::testing::ValuesIn(halfNaNCases()), caseName);

}  // namespace
}  // namespace rocuda::compiler::conformance
