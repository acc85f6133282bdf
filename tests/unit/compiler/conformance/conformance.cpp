#include "conformance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <sstream>

#include "test_runtime.h"

namespace rocuda::compiler::conformance {
namespace {

constexpr size_t kRandomInputs = 100000;
constexpr size_t kMaxEdgeCombinations = 40000;
constexpr uint64_t kUnwritten = 0xa5a5a5a5a5a5a5a5ull;

int regBits(Reg r) {
  switch (r) {
    case Reg::B16: return 16;
    case Reg::B32: return 32;
    case Reg::B64: return 64;
    case Reg::Pred: return 1;
  }
  return 64;
}

uint64_t widthMask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

const FloatFormat* scalarFormat(const Operand& o) {
  switch (o.values) {
    case Values::F16:
    case Values::F16x2: return &kHalf;
    case Values::BF16:
    case Values::BF16x2: return &kBFloat16;
    case Values::F32: return &kFloat32;
    case Values::F64: return &kFloat64;
    default: return nullptr;
  }
}

bool isPacked(const Operand& o) { return o.values == Values::F16x2 || o.values == Values::BF16x2; }

// Bits of the operand's values that an exhaustive run must enumerate (0: never exhaustive).
int valueBits(const Operand& o) {
  if (o.values == Values::Amount) return 0;
  return regBits(o.reg);
}

std::vector<uint64_t> floatEdges(const FloatFormat& f) {
  int bits = formatBits(f);
  uint64_t sign = uint64_t{1} << (bits - 1);
  uint64_t expOne = uint64_t{1} << f.mantissaBits;  // the lowest bit of the exponent field
  uint64_t mantMask = expOne - 1;
  uint64_t maxField = (uint64_t{1} << f.exponentBits) - 1;
  auto enc = [&](double v) { return encodeFloat(v, f, Rounding::Nearest); };
  std::vector<uint64_t> positive = {
      0,
      1,                                   // smallest subnormal
      mantMask,                            // largest subnormal
      expOne,                              // smallest normal
      expOne | 1,
      enc(1.0),
      enc(1.0) + 1,                        // 1 + ulp
      enc(1.0) - 1,                        // 1 - ulp/2
      enc(0.5),
      enc(1.5),
      enc(2.0),
      enc(3.0),
      enc(0.1),
      enc(1.0 / 3.0),
      enc(10.0),
      enc(3.14159265358979),
      ((maxField - 1) << f.mantissaBits) | mantMask,  // largest finite
      maxField << f.mantissaBits,                      // infinity
      f.nanBits & ~sign,                               // canonical NaN
      (maxField << f.mantissaBits) | 1,                // signalling NaN
  };
  std::vector<uint64_t> all;
  for (uint64_t p : positive) {
    all.push_back(p);
    all.push_back(p | sign);
  }
  return all;
}

std::vector<uint64_t> edgeValues(const Operand& o) {
  std::vector<uint64_t> values;
  int bits = regBits(o.reg);
  switch (o.values) {
    case Values::Pred: return {0, 1};
    case Values::Amount:
      return {0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 0x80000000u,
              0xffffffffu};
    case Values::Int: {
      const uint64_t raw[] = {0,
                              1,
                              2,
                              3,
                              5,
                              7,
                              8,
                              15,
                              16,
                              31,
                              32,
                              33,
                              63,
                              64,
                              0x7f,
                              0x80,
                              0xff,
                              0x100,
                              0x7fff,
                              0x8000,
                              0x8001,
                              0xffff,
                              0x10000,
                              0x7fffff,
                              0x800000,
                              0x7fffffff,
                              0x80000000,
                              0x80000001,
                              0xfffffffe,
                              0xffffffff,
                              0x100000000ull,
                              0x7fffffffffffffffull,
                              0x8000000000000000ull,
                              0x8000000000000001ull,
                              ~uint64_t{1},
                              ~uint64_t{0},
                              0x0123456789abcdefull,
                              0xfedcba9876543210ull};
      std::set<uint64_t> unique;
      for (uint64_t v : raw) unique.insert(v & widthMask(bits));
      // Small negatives of this width.
      for (uint64_t k = 1; k <= 3; ++k) unique.insert((~uint64_t{0} - k + 1) & widthMask(bits));
      return {unique.begin(), unique.end()};
    }
    default: break;
  }
  const FloatFormat* f = scalarFormat(o);
  std::vector<uint64_t> scalar = floatEdges(*f);
  if (!isPacked(o)) return scalar;
  // Pairs: the same edge in both halves, and each edge beside 1.0 / NaN / -0.
  uint64_t one = encodeFloat(1.0, *f, Rounding::Nearest);
  for (uint64_t e : scalar) {
    values.push_back(e | e << 16);
    values.push_back(e | one << 16);
    values.push_back(one | e << 16);
  }
  return values;
}

uint64_t randomFloat(const FloatFormat& f, std::mt19937_64& rng) {
  int bits = formatBits(f);
  uint64_t sign = (rng() & 1) ? uint64_t{1} << (bits - 1) : 0;
  uint64_t mant = rng() & ((uint64_t{1} << f.mantissaBits) - 1);
  int maxField = (1 << f.exponentBits) - 1;
  int bias = (1 << (f.exponentBits - 1)) - 1;
  switch (rng() % 5) {
    case 0: return rng() & widthMask(bits);  // any pattern, NaNs included
    case 1: {                                 // magnitudes near 1
      int field = std::clamp(bias + static_cast<int>(rng() % 25) - 12, 1, maxField - 1);
      return sign | static_cast<uint64_t>(field) << f.mantissaBits | mant;
    }
    case 2: {  // small multiples of 1/8
      double v = static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000) / 8.0;
      return encodeFloat(v, f, Rounding::Nearest);
    }
    case 3: {  // the bottom of the range: subnormals and the first normal binades
      int field = static_cast<int>(rng() % 4);
      return sign | static_cast<uint64_t>(field) << f.mantissaBits | mant;
    }
    default: {  // any finite exponent
      int field = static_cast<int>(rng() % static_cast<uint64_t>(maxField));
      return sign | static_cast<uint64_t>(field) << f.mantissaBits | mant;
    }
  }
}

uint64_t randomValue(const Operand& o, std::mt19937_64& rng) {
  int bits = regBits(o.reg);
  switch (o.values) {
    case Values::Pred: return rng() & 1;
    case Values::Amount: return (rng() % 8 == 0) ? rng() & 0xffffffffu : rng() % 72;
    case Values::Int:
      switch (rng() % 4) {
        case 0: return (static_cast<uint64_t>(static_cast<int64_t>(rng() % 1025) - 512)) &
                       widthMask(bits);
        case 1: {  // near a power of two
          uint64_t p = uint64_t{1} << (rng() % static_cast<uint64_t>(bits));
          return (p + (rng() % 3) - 1) & widthMask(bits);
        }
        default: return rng() & widthMask(bits);
      }
    default: break;
  }
  const FloatFormat* f = scalarFormat(o);
  if (!isPacked(o)) return randomFloat(*f, rng);
  return randomFloat(*f, rng) | randomFloat(*f, rng) << 16;
}

// Operand b or c close to operand a of the same kind: equal, negated, or a few ulps away, so
// that compares see ties and subtraction sees cancellation.
uint64_t nearValue(const Operand& o, uint64_t a, std::mt19937_64& rng) {
  int bits = regBits(o.reg);
  switch (rng() % 3) {
    case 0: return a;
    case 1:
      if (scalarFormat(o) && !isPacked(o)) return a ^ (uint64_t{1} << (bits - 1));
      return (0 - a) & widthMask(bits);
    default: return (a + (rng() % 5) - 2) & widthMask(bits);
  }
}

std::vector<Inputs> makeInputs(const InstructionCase& c) {
  std::vector<Inputs> inputs;
  const auto& ops = c.operands;
  int total = 0;
  bool exhaustive = true;
  for (const auto& o : ops) {
    int b = valueBits(o);
    if (b == 0) exhaustive = false;
    total += b;
  }
  if (exhaustive && total <= 16) {
    for (uint64_t v = 0; v < (uint64_t{1} << total); ++v) {
      Inputs in{};
      uint64_t rest = v;
      for (size_t k = 0; k < ops.size(); ++k) {
        int b = valueBits(ops[k]);
        in[k] = rest & widthMask(b);
        rest >>= b;
      }
      inputs.push_back(in);
    }
    return inputs;
  }
  std::mt19937_64 rng(0x5eed0000u + std::hash<std::string>{}(c.name));
  std::vector<std::vector<uint64_t>> edges;
  for (const auto& o : ops) edges.push_back(edgeValues(o));
  // Every combination of the edge values of the first two operands (the third an edge value
  // at random), as far as the budget allows.
  size_t combos = 1;
  for (size_t k = 0; k < std::min<size_t>(ops.size(), 2); ++k) combos *= edges[k].size();
  if (combos <= kMaxEdgeCombinations) {
    for (size_t i = 0; i < combos; ++i) {
      Inputs in{};
      size_t rest = i;
      for (size_t k = 0; k < ops.size(); ++k) {
        if (k < 2) {
          in[k] = edges[k][rest % edges[k].size()];
          rest /= edges[k].size();
        } else {
          in[k] = edges[k][rng() % edges[k].size()];
        }
      }
      inputs.push_back(in);
    }
  }
  for (size_t i = 0; i < kRandomInputs; ++i) {
    Inputs in{};
    for (size_t k = 0; k < ops.size(); ++k) {
      uint64_t pick = rng() % 100;
      if (k > 0 && pick < 10 && ops[k].values == ops[0].values && ops[k].reg == ops[0].reg)
        in[k] = nearValue(ops[k], in[0], rng);
      else if (pick < 25)
        in[k] = edges[k][rng() % edges[k].size()];
      else
        in[k] = randomValue(ops[k], rng);
    }
    inputs.push_back(in);
  }
  return inputs;
}

const char* regType(Reg r) {
  switch (r) {
    case Reg::B16: return ".b16";
    case Reg::B32: return ".b32";
    case Reg::B64: return ".b64";
    case Reg::Pred: return ".pred";
  }
  return ".b64";
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

bool sameFloat(uint64_t got, uint64_t want, const FloatFormat& f) {
  if (isNaNBits(got, f) && isNaNBits(want, f)) return true;
  return got == want;
}

bool defaultAccept(const InstructionCase& c, uint64_t got, uint64_t want) {
  const FloatFormat* f = scalarFormat(c.result);
  if (!f) return got == want;
  if (!isPacked(c.result)) return sameFloat(got, want, *f);
  return sameFloat(got & 0xffff, want & 0xffff, *f) && sameFloat(got >> 16, want >> 16, *f);
}

std::string describe(const Operand& o, uint64_t v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  std::string s = buf;
  const FloatFormat* f = scalarFormat(o);
  if (f && !isPacked(o)) {
    std::snprintf(buf, sizeof buf, " (%.9g)", decodeFloat(v, *f));
    s += buf;
  } else if (f) {
    std::snprintf(buf, sizeof buf, " (%.6g, %.6g)", decodeFloat(v & 0xffff, *f),
                  decodeFloat(v >> 16, *f));
    s += buf;
  }
  return s;
}

}  // namespace

InstructionCase unary(std::string name, std::string body, Operand d, Operand a, Reference ref) {
  return {std::move(name), std::move(body), d, {a}, std::move(ref), {}};
}
InstructionCase binary(std::string name, std::string body, Operand d, Operand a, Operand b,
                       Reference ref) {
  return {std::move(name), std::move(body), d, {a, b}, std::move(ref), {}};
}
InstructionCase ternary(std::string name, std::string body, Operand d, Operand a, Operand b,
                        Operand c, Reference ref) {
  return {std::move(name), std::move(body), d, {a, b, c}, std::move(ref), {}};
}

namespace {

double ulpOf(double want, int mantissaBits, int minExponent) {
  int e;
  std::frexp(want, &e);
  return std::ldexp(1.0, std::max(e - 1, minExponent) - mantissaBits);
}

}  // namespace

Acceptor withinUlpsF32(double ulps, bool flushSubnormals) {
  return [=](uint64_t got, uint64_t want, const Inputs&) {
    float g = asF32(static_cast<uint32_t>(got)), w = asF32(static_cast<uint32_t>(want));
    if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
    if (std::isinf(w) || std::isinf(g)) return g == w;
    if (flushSubnormals && std::fabs(w) < 1.17549435e-38f) return std::fabs(g) <= 1.17549435e-38f;
    return std::fabs(static_cast<double>(g) - w) <= ulps * ulpOf(w, 23, -126);
  };
}

Acceptor withinRelativeF32(double relative, double absolute) {
  return [=](uint64_t got, uint64_t want, const Inputs&) {
    float g = asF32(static_cast<uint32_t>(got)), w = asF32(static_cast<uint32_t>(want));
    if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
    if (std::isinf(w) || std::isinf(g)) return g == w;
    double err = std::fabs(static_cast<double>(g) - w);
    return err <= relative * std::fabs(static_cast<double>(w)) || err <= absolute;
  };
}

Acceptor withinUlpsF64(double ulps) {
  return [=](uint64_t got, uint64_t want, const Inputs&) {
    double g = asF64(got), w = asF64(want);
    if (std::isnan(w) || std::isnan(g)) return std::isnan(w) && std::isnan(g);
    if (std::isinf(w) || std::isinf(g)) return g == w;
    return std::fabs(g - w) <= ulps * ulpOf(w, 52, -1022);
  };
}

std::string kernelSource(const InstructionCase& c) {
  std::ostringstream k;
  k << ".version " << c.version << "\n.target " << c.target << "\n.address_size 64\n\n"
    << ".visible .entry conformance(.param .u64 p0, .param .u64 p1, .param .u64 p2,\n"
    << "    .param .u64 pd, .param .u32 pn)\n{\n"
    << "  .reg .pred %guard;\n  .reg .b32 %idx<4>;\n  .reg .b64 %addr<8>;\n  .reg .b32 %pin<4>;\n"
    << "  .reg .pred %q<8>;\n  .reg .b16 %h<8>;\n  .reg .b32 %r<8>;\n  .reg .b64 %l<8>;\n"
    << "  .reg .f32 %f<8>;\n  .reg .f64 %fd<8>;\n" << c.declarations;
  for (size_t i = 0; i < c.operands.size(); ++i)
    k << "  .reg " << regType(c.operands[i].reg) << " %in" << i << ";\n";
  k << "  .reg " << regType(c.result.reg) << " %out;\n"
    << "  mov.u32 %idx1, %ctaid.x;\n  mov.u32 %idx2, %ntid.x;\n  mov.u32 %idx3, %tid.x;\n"
    << "  mad.lo.u32 %idx1, %idx1, %idx2, %idx3;\n  ld.param.u32 %idx2, [pn];\n"
    << "  setp.ge.u32 %guard, %idx1, %idx2;\n  @%guard bra DONE;\n"
    << "  mul.wide.u32 %addr0, %idx1, 8;\n";
  for (size_t i = 0; i < c.operands.size(); ++i) {
    k << "  ld.param.u64 %addr" << i + 1 << ", [p" << i << "];\n"
      << "  add.s64 %addr" << i + 1 << ", %addr" << i + 1 << ", %addr0;\n";
    if (c.operands[i].reg == Reg::Pred)
      k << "  ld.global.u32 %pin" << i << ", [%addr" << i + 1 << "];\n"
        << "  setp.ne.u32 %in" << i << ", %pin" << i << ", 0;\n";
    else
      k << "  ld.global" << regType(c.operands[i].reg) << " %in" << i << ", [%addr" << i + 1
        << "];\n";
  }
  std::string body = c.body;
  body = replaceAll(body, "$d", "%out");
  body = replaceAll(body, "$a", "%in0");
  body = replaceAll(body, "$b", "%in1");
  body = replaceAll(body, "$c", "%in2");
  k << "  " << body << "\n"
    << "  ld.param.u64 %addr4, [pd];\n  add.s64 %addr4, %addr4, %addr0;\n";
  if (c.result.reg == Reg::Pred)
    k << "  selp.u32 %pin3, 1, 0, %out;\n  st.global.u32 [%addr4], %pin3;\n";
  else
    k << "  st.global" << regType(c.result.reg) << " [%addr4], %out;\n";
  k << "DONE:\n  ret;\n}\n";
  return k.str();
}

std::string caseName(const ::testing::TestParamInfo<InstructionCase>& info) {
  return info.param.name;
}

TEST_P(Conformance, MatchesReference) {
  const InstructionCase& c = GetParam();
  std::string source = kernelSource(c);
  auto loaded = test::compileAndLoad(source, c.name);
  ASSERT_TRUE(loaded) << source;
  std::vector<Inputs> inputs = makeInputs(c);
  size_t n = inputs.size();
  std::vector<uint64_t> columns[3];
  for (auto& col : columns) col.resize(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < 3; ++k) columns[k][i] = inputs[i][k];
  std::vector<uint64_t> out(n, kUnwritten);
  void* p[3] = {columns[0].data(), columns[1].data(), columns[2].data()};
  void* pd = out.data();
  uint32_t count = static_cast<uint32_t>(n);
  constexpr uint32_t kBlock = 256;
  ASSERT_TRUE(test::launch(*loaded, "conformance", {static_cast<uint32_t>((n + kBlock - 1) / kBlock)},
                           {kBlock}, {&p[0], &p[1], &p[2], &pd, &count}));
  uint64_t mask = c.result.reg == Reg::Pred ? 0xffffffffu : widthMask(regBits(c.result.reg));
  size_t mismatches = 0;
  std::ostringstream report;
  for (size_t i = 0; i < n; ++i) {
    uint64_t got = out[i] & mask;
    uint64_t want = c.reference(inputs[i]) & mask;
    bool ok = c.accept ? c.accept(got, want, inputs[i]) : defaultAccept(c, got, want);
    if (ok) continue;
    if (++mismatches <= 12) {
      report << "\n  ";
      const char* names[] = {"a", "b", "c"};
      for (size_t k = 0; k < c.operands.size(); ++k)
        report << names[k] << "=" << describe(c.operands[k], inputs[i][k]) << " ";
      report << "-> got " << describe(c.result, got) << ", want " << describe(c.result, want);
    }
  }
  EXPECT_EQ(mismatches, 0u) << c.body << ": " << mismatches << " of " << n
                            << " inputs differ from the reference" << report.str();
}

}  // namespace rocuda::compiler::conformance
