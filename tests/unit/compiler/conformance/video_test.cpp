// Video instructions (PTX ISA 9.7.18): the SIMD forms (vadd2/4 ... vset2/4, with lane selectors,
// masks, .sat and .add) and the scalar forms (byte/half-word selectors, .sat, the secondary
// .add/.min/.max, merges into c, vshl/vshr, vset, vmad), against a reference written from the
// manual's pseudocode: sources extended to 33 bits, exact intermediate values, then clamping,
// the secondary operation or merge, and the low 32 bits.
#include <cstdlib>
#include <string>
#include <vector>

#include "conformance.h"

namespace rocuda::compiler::conformance {
namespace {

const Operand kR32{Reg::B32, Values::Int};

enum class Op { Add, Sub, Avg, AbsDiff, Min, Max, Lt, Ge, Ne, Shl, Shr };

int64_t extendField(uint64_t word, unsigned shift, unsigned width, bool sign) {
  uint64_t bits = (word >> shift) & ((uint64_t(1) << width) - 1);
  if (sign && (bits >> (width - 1)) != 0) return int64_t(bits) - (int64_t(1) << width);
  return int64_t(bits);
}

int64_t apply(Op op, int64_t a, int64_t b) {
  switch (op) {
    case Op::Add:
      return a + b;
    case Op::Sub:
      return a - b;
    case Op::Avg:
      return (a + b) >= 0 ? (a + b + 1) >> 1 : (a + b) >> 1;
    case Op::AbsDiff:
      return a > b ? a - b : b - a;
    case Op::Min:
      return a < b ? a : b;
    case Op::Max:
      return a > b ? a : b;
    case Op::Lt:
      return a < b;
    case Op::Ge:
      return a >= b;
    case Op::Ne:
      return a != b;
    default:
      return 0;
  }
}

bool isCompare(Op op) { return op == Op::Lt || op == Op::Ge || op == Op::Ne; }

int64_t clampTo(int64_t v, unsigned width, bool sign) {
  int64_t lo = sign ? -(int64_t(1) << (width - 1)) : 0;
  int64_t hi = sign ? (int64_t(1) << (width - 1)) - 1 : (int64_t(1) << width) - 1;
  return v < lo ? lo : v > hi ? hi : v;
}

// ---- SIMD ----

struct Simd {
  Op op;
  unsigned lanes;  // 2 or 4
  bool dSigned, aSigned, bSigned;
  bool sat = false, add = false;
  std::string asel = {}, bsel = {};  // digits, highest lane first; empty for the default
  std::string mask = {};             // lanes written; empty for all
};

uint64_t simdReference(const Simd& s, const Inputs& in) {
  unsigned width = 32 / s.lanes;
  uint64_t pair = (in[0] & 0xffffffffu) | ((in[1] & 0xffffffffu) << 32);
  uint32_t c = static_cast<uint32_t>(in[2]);
  std::string asel = s.asel.empty() ? (s.lanes == 2 ? "10" : "3210") : s.asel;
  std::string bsel = s.bsel.empty() ? (s.lanes == 2 ? "32" : "7654") : s.bsel;
  uint32_t d = s.add ? c : 0;
  for (unsigned i = 0; i < s.lanes; ++i) {
    uint32_t laneMask = ((uint32_t(1) << width) - 1) << (i * width);
    bool written = s.mask.empty() || s.mask.find(char('0' + i)) != std::string::npos;
    if (!written) {
      if (!s.add) d |= c & laneMask;
      continue;
    }
    unsigned pa = static_cast<unsigned>(asel[s.lanes - 1 - i] - '0');
    unsigned pb = static_cast<unsigned>(bsel[s.lanes - 1 - i] - '0');
    int64_t va = extendField(pair, pa * width, width, s.aSigned);
    int64_t vb = extendField(pair, pb * width, width, s.bSigned);
    int64_t t = apply(s.op, va, vb);
    if (s.sat && !isCompare(s.op)) t = clampTo(t, width, s.dSigned);
    if (s.add)
      d = static_cast<uint32_t>(d + static_cast<uint32_t>(t));
    else
      d |= (static_cast<uint32_t>(t) << (i * width)) & laneMask;
  }
  return d;
}

const char* name(Op op) {
  switch (op) {
    case Op::Add:
      return "vadd";
    case Op::Sub:
      return "vsub";
    case Op::Avg:
      return "vavrg";
    case Op::AbsDiff:
      return "vabsdiff";
    case Op::Min:
      return "vmin";
    case Op::Max:
      return "vmax";
    case Op::Shl:
      return "vshl";
    case Op::Shr:
      return "vshr";
    default:
      return "vset";
  }
}

const char* compareName(Op op) { return op == Op::Lt ? "lt" : op == Op::Ge ? "ge" : "ne"; }

std::string typeName(bool sign) { return sign ? "s32" : "u32"; }

InstructionCase simdCase(const Simd& s) {
  std::string mnemonic = std::string(name(s.op)) + std::to_string(s.lanes);
  std::string types =
      isCompare(s.op)
          ? "." + typeName(s.aSigned) + "." + typeName(s.bSigned) + "." + compareName(s.op)
          : "." + typeName(s.dSigned) + "." + typeName(s.aSigned) + "." + typeName(s.bSigned);
  std::string mods = std::string(s.sat ? ".sat" : "") + (s.add ? ".add" : "");
  char prefix = s.lanes == 2 ? 'h' : 'b';
  auto sel = [&](const std::string& digits) {
    return digits.empty() ? std::string() : "." + std::string(1, prefix) + digits;
  };
  std::string body = mnemonic + types + mods + " $d" + sel(s.mask) + ", $a" + sel(s.asel) + ", $b" +
                     sel(s.bsel) + ", $c;";
  std::string caseName =
      mnemonic + "_" + (isCompare(s.op) ? compareName(s.op) : "") + typeName(s.dSigned) +
      typeName(s.aSigned) + typeName(s.bSigned) + (s.sat ? "_sat" : "") + (s.add ? "_add" : "") +
      (s.asel.empty() ? "" : "_a" + s.asel) + (s.bsel.empty() ? "" : "_b" + s.bsel) +
      (s.mask.empty() ? "" : "_m" + s.mask);
  return ternary(caseName, body, kR32, kR32, kR32, kR32,
                 [s](const Inputs& in) { return simdReference(s, in); });
}

std::vector<InstructionCase> simdCases() {
  std::vector<InstructionCase> v;
  const Op ops[] = {Op::Add, Op::Sub, Op::Avg, Op::AbsDiff, Op::Min,
                    Op::Max, Op::Lt,  Op::Ge,  Op::Ne};
  for (unsigned lanes : {2u, 4u}) {
    for (Op op : ops) {
      // Plain (merge of every lane), with each sign combination, and saturated.
      v.push_back(simdCase({op, lanes, false, false, false}));
      v.push_back(simdCase({op, lanes, true, true, true}));
      v.push_back(simdCase({op, lanes, true, false, true}));
      if (!isCompare(op)) {
        v.push_back(simdCase({op, lanes, false, true, false, /*sat=*/true}));
        v.push_back(simdCase({op, lanes, true, true, false, /*sat=*/true}));
      }
      // The accumulating form (CUDA's __vsadu4 is vabsdiff4.add).
      v.push_back(simdCase({op, lanes, false, false, false, false, /*add=*/true}));
      v.push_back(simdCase({op, lanes, true, true, true, false, /*add=*/true}));
    }
    // Lane selectors from both sources, and partial masks.
    std::string a = lanes == 2 ? "21" : "5170";
    std::string b = lanes == 2 ? "03" : "2266";
    std::string mask = lanes == 2 ? "1" : "20";
    v.push_back(simdCase({Op::Add, lanes, true, true, false, true, false, a, b, mask}));
    v.push_back(simdCase({Op::AbsDiff, lanes, false, false, false, false, true, a, b, mask}));
    v.push_back(simdCase({Op::Max, lanes, true, false, true, false, false, b, a, ""}));
    v.push_back(simdCase({Op::Lt, lanes, false, true, false, false, false, "", a, mask}));
  }
  return v;
}

// ---- Scalar ----

struct Scalar {
  Op op;
  bool dSigned, aSigned, bSigned;
  std::string asel = {}, bsel = {};  // b0..b3, h0, h1, or empty for the word
  bool sat = false;
  std::string secondary = {};  // add, min, max, or empty
  std::string dsel = {};       // merge into c at this byte or half, or empty
  bool wrap = false;           // vshl / vshr: .wrap, else .clamp
};

int64_t scalarSource(uint64_t word, const std::string& sel, bool sign) {
  if (sel.empty()) return extendField(word, 0, 32, sign);
  unsigned width = sel[0] == 'b' ? 8 : 16;
  return extendField(word, static_cast<unsigned>(sel[1] - '0') * width, width, sign);
}

uint64_t scalarReference(const Scalar& s, const Inputs& in) {
  bool shift = s.op == Op::Shl || s.op == Op::Shr;
  int64_t ta = scalarSource(in[0], s.asel, s.aSigned);
  int64_t tb = scalarSource(in[1], s.bsel, shift ? false : s.bSigned);
  int64_t tmp;
  if (shift) {
    int64_t amount = s.wrap ? (tb & 31) : (tb > 32 ? 32 : tb);
    tmp =
        s.op == Op::Shl ? static_cast<int64_t>(static_cast<uint64_t>(ta) << amount) : ta >> amount;
    // A 34-bit result.
    tmp = static_cast<int64_t>(static_cast<uint64_t>(tmp) << 30) >> 30;
  } else {
    tmp = apply(s.op, ta, tb);
  }
  bool dSigned = isCompare(s.op) ? false : s.dSigned;
  if (s.sat && !isCompare(s.op)) {
    unsigned width = s.dsel.empty() ? 32 : s.dsel[0] == 'b' ? 8 : 16;
    tmp = clampTo(tmp, width, dSigned);
  }
  int64_t c = extendField(in[2], 0, 32, dSigned);
  int64_t d = tmp;
  if (s.secondary == "add") d = tmp + c;
  if (s.secondary == "min") d = tmp < c ? tmp : c;
  if (s.secondary == "max") d = tmp > c ? tmp : c;
  if (!s.dsel.empty()) {
    unsigned width = s.dsel[0] == 'b' ? 8 : 16;
    unsigned at = static_cast<unsigned>(s.dsel[1] - '0') * width;
    uint64_t mask = ((uint64_t(1) << width) - 1) << at;
    d = static_cast<int64_t>(((static_cast<uint64_t>(tmp) << at) & mask) |
                             (static_cast<uint64_t>(c) & ~mask));
  }
  return static_cast<uint64_t>(d) & 0xffffffffu;
}

InstructionCase scalarCase(const Scalar& s) {
  bool shift = s.op == Op::Shl || s.op == Op::Shr;
  std::string types =
      isCompare(s.op)
          ? "." + typeName(s.aSigned) + "." + typeName(s.bSigned) + "." + compareName(s.op)
          : "." + typeName(s.dSigned) + "." + typeName(s.aSigned) + "." +
                (shift ? std::string("u32") : typeName(s.bSigned));
  std::string mods = std::string(s.sat ? ".sat" : "") +
                     (shift ? (s.wrap ? ".wrap" : ".clamp") : "") +
                     (s.secondary.empty() ? "" : "." + s.secondary);
  bool usesC = !s.secondary.empty() || !s.dsel.empty();
  std::string body = std::string(name(s.op)) + types + mods + " $d" +
                     (s.dsel.empty() ? "" : "." + s.dsel) + ", $a" +
                     (s.asel.empty() ? "" : "." + s.asel) + ", $b" +
                     (s.bsel.empty() ? "" : "." + s.bsel) + (usesC ? ", $c;" : ";");
  std::string caseName =
      std::string(name(s.op)) + "_" +
      (isCompare(s.op) ? std::string(compareName(s.op)) + "_" : "") + typeName(s.dSigned) +
      typeName(s.aSigned) + typeName(s.bSigned) + (s.asel.empty() ? "" : "_" + s.asel) +
      (s.bsel.empty() ? "" : "_" + s.bsel) + (s.sat ? "_sat" : "") +
      (s.secondary.empty() ? "" : "_" + s.secondary) + (s.dsel.empty() ? "" : "_d" + s.dsel) +
      (shift ? (s.wrap ? "_wrap" : "_clamp") : "");
  Operand b = shift ? Operand{Reg::B32, Values::Amount} : kR32;
  return ternary(caseName, body, kR32, kR32, b, kR32,
                 [s](const Inputs& in) { return scalarReference(s, in); });
}

std::vector<InstructionCase> scalarCases() {
  std::vector<InstructionCase> v;
  for (Op op : {Op::Add, Op::Sub, Op::AbsDiff, Op::Min, Op::Max}) {
    v.push_back(scalarCase({op, false, false, false, "", ""}));
    v.push_back(scalarCase({op, true, true, true, "", "", /*sat=*/true}));
    v.push_back(scalarCase({op, false, true, false, "", "", /*sat=*/true}));
    v.push_back(scalarCase({op, true, false, true, "b1", "h1", true}));
    v.push_back(scalarCase({op, false, true, true, "h0", "b3", false, "add"}));
    v.push_back(scalarCase({op, true, true, false, "b2", "", true, "min"}));
    v.push_back(scalarCase({op, false, false, true, "", "h0", false, "max"}));
    v.push_back(scalarCase({op, true, true, true, "b0", "b2", true, "", "b1"}));
    v.push_back(scalarCase({op, false, false, false, "h1", "h0", true, "", "h1"}));
  }
  for (Op op : {Op::Shl, Op::Shr}) {
    for (bool wrap : {false, true}) {
      v.push_back(scalarCase({op, false, false, false, "", "", false, "", "", wrap}));
      v.push_back(scalarCase({op, true, true, false, "", "", true, "", "", wrap}));
      v.push_back(scalarCase({op, true, true, false, "h1", "b0", false, "add", "", wrap}));
      v.push_back(scalarCase({op, false, false, false, "b3", "", true, "", "h0", wrap}));
    }
  }
  for (Op op : {Op::Lt, Op::Ge, Op::Ne}) {
    v.push_back(scalarCase({op, false, true, false, "", ""}));
    v.push_back(scalarCase({op, false, false, true, "b3", "h1", false, "add"}));
    v.push_back(scalarCase({op, false, true, true, "h0", "", false, "", "b2"}));
  }
  return v;
}

// ---- vmad ----

struct Mad {
  bool dSigned, aSigned, bSigned;
  bool negA = false, negB = false, negC = false, plusOne = false, sat = false;
  unsigned scale = 0;  // 0, 7 or 15
  std::string asel = {}, bsel = {};
};

uint64_t madReference(const Mad& m, const Inputs& in) {
  bool negProduct = m.negA != m.negB;
  bool signedFinal = m.aSigned || m.bSigned || negProduct || m.negC;
  __int128 ta = scalarSource(in[0], m.asel, m.aSigned);
  __int128 tb = scalarSource(in[1], m.bsel, m.bSigned);
  __int128 c = signedFinal ? static_cast<__int128>(static_cast<int32_t>(in[2]))
                           : static_cast<__int128>(static_cast<uint32_t>(in[2]));
  __int128 product = ta * tb;
  if (negProduct) product = -product;
  if (m.negC) c = -c;
  __int128 sum = product + c + (m.plusOne ? 1 : 0);
  if (m.scale != 0) {
    if (signedFinal)
      sum >>= m.scale;
    else
      sum = static_cast<__int128>(static_cast<unsigned __int128>(sum) >> m.scale);
  }
  uint64_t low = static_cast<uint64_t>(sum);
  if (m.sat) {
    if (signedFinal) {
      int64_t s = static_cast<int64_t>(low);
      low = static_cast<uint64_t>(s < INT32_MIN ? INT32_MIN : s > INT32_MAX ? INT32_MAX : s);
    } else if (low > UINT32_MAX) {
      low = UINT32_MAX;
    }
  }
  return low & 0xffffffffu;
}

InstructionCase madCase(const Mad& m) {
  std::string body = "vmad." + typeName(m.dSigned) + "." + typeName(m.aSigned) + "." +
                     typeName(m.bSigned) + (m.plusOne ? ".po" : "") + (m.sat ? ".sat" : "") +
                     (m.scale == 7    ? ".shr7"
                      : m.scale == 15 ? ".shr15"
                                      : "") +
                     " $d, " + (m.negA ? "-" : "") + "$a" + (m.asel.empty() ? "" : "." + m.asel) +
                     ", " + (m.negB ? "-" : "") + "$b" + (m.bsel.empty() ? "" : "." + m.bsel) +
                     ", " + (m.negC ? "-" : "") + "$c;";
  std::string caseName = "vmad_" + typeName(m.dSigned) + typeName(m.aSigned) + typeName(m.bSigned) +
                         (m.negA ? "_nega" : "") + (m.negB ? "_negb" : "") +
                         (m.negC ? "_negc" : "") + (m.plusOne ? "_po" : "") +
                         (m.sat ? "_sat" : "") + (m.scale ? "_shr" + std::to_string(m.scale) : "") +
                         (m.asel.empty() ? "" : "_" + m.asel) +
                         (m.bsel.empty() ? "" : "_" + m.bsel);
  return ternary(caseName, body, kR32, kR32, kR32, kR32,
                 [m](const Inputs& in) { return madReference(m, in); });
}

std::vector<InstructionCase> madCases() {
  std::vector<InstructionCase> v;
  v.push_back(madCase({false, false, false}));
  v.push_back(madCase({false, false, false, false, false, false, false, /*sat=*/true}));
  v.push_back(madCase({true, true, true, false, false, false, false, true}));
  v.push_back(madCase({true, true, false, true, false, false, false, true}));
  v.push_back(madCase({true, false, false, false, false, true, false, true}));
  v.push_back(madCase({true, false, true, false, true, false}));
  v.push_back(madCase({false, false, false, false, false, false, true, false, 15, "h0", "h0"}));
  v.push_back(madCase({true, true, true, false, false, false, true, true, 7, "b1", "h1"}));
  v.push_back(madCase({true, true, false, false, false, true, false, false, 15}));
  return v;
}

INSTANTIATE_TEST_SUITE_P(VideoSimd, Conformance, ::testing::ValuesIn(simdCases()), caseName);
INSTANTIATE_TEST_SUITE_P(VideoScalar, Conformance, ::testing::ValuesIn(scalarCases()), caseName);
INSTANTIATE_TEST_SUITE_P(VideoMad, Conformance, ::testing::ValuesIn(madCases()), caseName);

}  // namespace
}  // namespace rocuda::compiler::conformance
