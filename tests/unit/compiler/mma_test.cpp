// mma.sync over a whole warp: fragments laid out per the PTX ISA's "Matrix Fragments for mma"
// tables (written out again here, independently of the translator), multiplied, and every
// element of D compared with a host reference. Values are small multiples of 1/4 (integers for
// f16 accumulators) so that every sum is exact and the comparison can be bit for bit; the integer
// forms (s8/u8, s4/u4 and b1 into s32) take every value of their types and accumulators near the
// s32 limits, wrapping or, with .satfinite, clamping; fp8 (e4m3, e5m2) inputs take exact values.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>

#include "conformance/ptx_reference.h"
#include "test_runtime.h"

namespace rocuda::compiler::test {
namespace {

using conformance::decodeFloat;
using conformance::encodeFloat;
using conformance::FloatFormat;
using conformance::Rounding;

struct MmaCase {
  std::string name;
  std::string shape;  // m16n8k16, m16n8k8, m8n8k4, m16n8k32, m8n8k16, m16n8k64, m16n8k256...
  std::string dType, aType;
  int m, k;
  std::string bType = "";  // the integer forms may mix s8 and u8, fp8 e4m3 and e5m2; empty: aType
  bool satfinite = false;
  std::string bitOp = "";  // b1: "and" or "xor" (the population count of A op B)
  const std::string& b() const { return bType.empty() ? aType : bType; }
  bool integer() const { return dType == "s32"; }
  // The 8-, 4- and 1-bit forms: a register holds a run of consecutive k.
  bool packedRuns() const { return integer() || aType == "e4m3" || aType == "e5m2"; }
};

std::ostream& operator<<(std::ostream& os, const MmaCase& c) { return os << c.name; }

int elementBits(const std::string& type) {
  if (type == "s8" || type == "u8" || type == "e4m3" || type == "e5m2") return 8;
  if (type == "s4" || type == "u4") return 4;
  if (type == "b1") return 1;
  return type == "f16" || type == "bf16" ? 16 : type == "f64" ? 64 : 32;
}
int registerBits(const std::string& type) { return type == "f64" ? 64 : 32; }
int perRegister(const std::string& type) { return registerBits(type) / elementBits(type); }

// Fragment element i of `lane`: (row, column) in A (m x k), B (k x 8) or C/D (m x 8).
std::pair<int, int> fragmentPosition(const MmaCase& c, char matrix, int lane, int i) {
  int g = lane >> 2, t = lane % 4;
  if (matrix == 'C') {
    if (c.m == 8) return {g, 2 * t + i};
    return {g + 8 * (i / 2), 2 * t + (i % 2)};
  }
  if (c.packedRuns()) {
    // p elements per register: the tables of m8n8k16 / m16n8k16 / m16n8k32 (s8), m8n8k32 /
    // m16n8k32 / m16n8k64 (s4) and m8n8k128 / m16n8k128 / m16n8k256 (b1) with p = 4, 8, 32.
    int p = perRegister(c.aType);
    if (c.m == 8) return matrix == 'A' ? std::pair{g, p * t + i} : std::pair{p * t + i, g};
    if (c.k == 4 * p) return matrix == 'A' ? std::pair{g + 8 * (i / p), p * t + i % p} : std::pair{p * t + i, g};
    if (matrix == 'A') return {g + 8 * ((i / p) % 2), p * t + i % p + 4 * p * (i / (2 * p))};
    return {p * t + i % p + 4 * p * (i / p), g};
  }
  if (c.aType == "f64" && c.m == 8) return matrix == 'A' ? std::pair{g, t} : std::pair{t, g};
  if (c.aType == "tf32" || c.aType == "f64") {  // m16n8k16 (f64), m16n8k8 and m16n8k4
    if (matrix == 'A') return {g + 8 * (i % 2), t + 4 * (i / 2)};
    return {t + 4 * i, g};
  }
  if (c.k == 16) {
    if (matrix == 'A') return {g + 8 * ((i / 2) % 2), 2 * t + (i % 2) + 8 * (i / 4)};
    return {2 * t + (i % 2) + 8 * (i / 2), g};
  }
  if (matrix == 'A') return {g + 8 * (i / 2), 2 * t + (i % 2)};
  return {2 * t + i, g};
}

uint64_t encode(double v, const std::string& type) {
  if (type == "s8" || type == "u8") return static_cast<uint64_t>(static_cast<int64_t>(v)) & 0xff;
  if (type == "s4" || type == "u4") return static_cast<uint64_t>(static_cast<int64_t>(v)) & 0xf;
  if (type == "b1") return static_cast<uint64_t>(v) & 1;
  if (type == "e4m3") return encodeFloat(v, conformance::kE4M3, Rounding::Nearest);
  if (type == "e5m2") return encodeFloat(v, conformance::kE5M2, Rounding::Nearest);
  if (type == "s32") return static_cast<uint32_t>(static_cast<int32_t>(static_cast<int64_t>(v)));
  if (type == "f16") return encodeFloat(v, conformance::kHalf, Rounding::Nearest);
  if (type == "bf16") return encodeFloat(v, conformance::kBFloat16, Rounding::Nearest);
  if (type == "f64") return conformance::bitsOf(v);
  return conformance::bitsOf(static_cast<float>(v));  // f32 and tf32
}

// Packs a matrix's fragments: registers[lane][r], elements low half first.
std::vector<uint64_t> pack(const MmaCase& c, char matrix, const std::string& type, int elements,
                           const std::vector<double>& values, int columns) {
  int per = perRegister(type), regs = elements / per;
  std::vector<uint64_t> out(32 * static_cast<size_t>(regs));
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < elements; ++i) {
      auto [row, col] = fragmentPosition(c, matrix, lane, i);
      uint64_t bits = encode(values[static_cast<size_t>(row * columns + col)], type);
      out[static_cast<size_t>(lane * regs + i / per)] |= bits << (elementBits(type) * (i % per));
    }
  return out;
}

std::string kernel(const MmaCase& c, int aRegs, int bRegs, int cRegs, int dRegs) {
  std::string cType = c.dType;
  auto regName = [](char m, int i) { return std::string("%") + m + std::to_string(i); };
  auto list = [&](char m, int n) {
    std::string s = "{";
    for (int i = 0; i < n; ++i) s += (i ? ", " : "") + regName(m, i);
    return s + "}";
  };
  std::ostringstream k;
  int aw = registerBits(c.aType), cw = registerBits(c.dType);
  k << ".version 8.7\n.target sm_90\n.address_size 64\n"
    << ".visible .entry mma_test(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd)\n{\n"
    << "  .reg .b32 %lane;\n  .reg .b64 %p<12>;\n"
    << "  .reg .b" << aw << " %a<" << aRegs << ">;\n  .reg .b" << aw << " %b<" << bRegs << ">;\n"
    << "  .reg .b" << cw << " %c<" << cRegs << ">;\n  .reg .b" << cw << " %d<" << dRegs << ">;\n"
    << "  mov.u32 %lane, %tid.x;\n";
  auto loads = [&](const char* param, char m, int n, int width, int base) {
    k << "  ld.param.u64 %p" << base << ", [" << param << "];\n"
      << "  mul.wide.u32 %p" << base + 1 << ", %lane, " << n * width / 8 << ";\n"
      << "  add.s64 %p" << base << ", %p" << base << ", %p" << base + 1 << ";\n";
    for (int i = 0; i < n; ++i)
      k << "  ld.global.b" << width << " " << regName(m, i) << ", [%p" << base << "+" << i * width / 8 << "];\n";
  };
  loads("pa", 'a', aRegs, aw, 0);
  loads("pb", 'b', bRegs, aw, 2);
  loads("pc", 'c', cRegs, cw, 4);
  k << "  mma.sync.aligned." << c.shape << ".row.col." << (c.satfinite ? "satfinite." : "") << c.dType << "."
    << c.aType << "." << c.b() << "."
    << cType << (c.bitOp.empty() ? "" : "." + c.bitOp + ".popc") << " " << list('d', dRegs) << ", " << list('a', aRegs) << ", " << list('b', bRegs) << ", "
    << list('c', cRegs) << ";\n";
  k << "  ld.param.u64 %p6, [pd];\n  mul.wide.u32 %p7, %lane, " << dRegs * cw / 8 << ";\n"
    << "  add.s64 %p6, %p6, %p7;\n";
  for (int i = 0; i < dRegs; ++i)
    k << "  st.global.b" << cw << " [%p6+" << i * cw / 8 << "], " << regName('d', i) << ";\n";
  k << "  ret;\n}\n";
  return k.str();
}

class MmaTest : public ::testing::TestWithParam<MmaCase> {};

TEST_P(MmaTest, MatchesHostProduct) {
  const MmaCase& c = GetParam();
  const int n = 8;
  int aElements = c.m * c.k / 32, bElements = c.k * n / 32, cElements = c.m * n / 32;
  int aRegs = aElements / perRegister(c.aType), bRegs = bElements / perRegister(c.b());
  int cRegs = cElements / perRegister(c.dType);
  std::string source = kernel(c, aRegs, bRegs, cRegs, cRegs);
  auto loaded = compileAndLoad(source, c.name);
  ASSERT_TRUE(loaded) << source;
  std::mt19937 rng(7);
  bool halfAccumulator = c.dType == "f16";
  auto value = [&](int range) {
    int v = static_cast<int>(rng() % static_cast<uint32_t>(2 * range + 1)) - range;
    return halfAccumulator ? static_cast<double>(v % 4) : v / 4.0;  // exact in every type used
  };
  // fp8 inputs with a float accumulator: values exact in both e4m3 and e5m2.
  bool fp8 = c.aType == "e4m3" || c.aType == "e5m2";
  const double fp8Values[] = {0, 0.25, -0.25, 0.5, -0.5, 0.75, -0.75, 1, -1, 1.5, -1.5, 2, -2, 3, -3};
  auto input = [&]() { return fp8 && !halfAccumulator ? fp8Values[rng() % 15] : value(12); };
  for (int round = 0; round < 4; ++round) {
    std::vector<double> A(static_cast<size_t>(c.m * c.k)), B(static_cast<size_t>(c.k * n)),
        C(static_cast<size_t>(c.m * n));
    for (double& v : A) v = input();
    for (double& v : B) v = input();
    for (double& v : C) v = value(40);
    std::vector<uint64_t> a = pack(c, 'A', c.aType, aElements, A, c.k);
    std::vector<uint64_t> b = pack(c, 'B', c.b(), bElements, B, n);
    std::vector<uint64_t> cc = pack(c, 'C', c.dType, cElements, C, n);
    // Registers of 32 bits are stored as 32-bit words.
    auto words = [&](const std::vector<uint64_t>& regs, const std::string& type) {
      std::vector<uint8_t> bytes(regs.size() * static_cast<size_t>(registerBits(type) / 8));
      for (size_t i = 0; i < regs.size(); ++i)
        std::memcpy(bytes.data() + i * static_cast<size_t>(registerBits(type) / 8), &regs[i],
                    static_cast<size_t>(registerBits(type) / 8));
      return bytes;
    };
    std::vector<uint8_t> aBytes = words(a, c.aType), bBytes = words(b, c.b()), cBytes = words(cc, c.dType);
    std::vector<uint8_t> dBytes(cBytes.size(), 0xcd);
    void* pa = aBytes.data();
    void* pb = bBytes.data();
    void* pc = cBytes.data();
    void* pd = dBytes.data();
    ASSERT_TRUE(launch(*loaded, "mma_test", {}, {32}, {&pa, &pb, &pc, &pd}));
    int failures = 0;
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < cElements; ++i) {
        auto [row, col] = fragmentPosition(c, 'C', lane, i);
        double want = C[static_cast<size_t>(row * n + col)];
        for (int k = 0; k < c.k; ++k)
          want += A[static_cast<size_t>(row * c.k + k)] * B[static_cast<size_t>(k * n + col)];
        int per = perRegister(c.dType), bits = elementBits(c.dType);
        uint64_t reg = 0;
        int bytes = registerBits(c.dType) / 8;
        std::memcpy(&reg, dBytes.data() + static_cast<size_t>((lane * cRegs + i / per) * bytes),
                    static_cast<size_t>(bytes));
        uint64_t got = (reg >> (bits * (i % per))) & (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
        if (got != encode(want, c.dType) && ++failures <= 5)
          ADD_FAILURE() << c.name << ": D[" << row << "][" << col << "] (lane " << lane << ", element " << i
                        << ") is 0x" << std::hex << got << ", want 0x" << encode(want, c.dType) << std::dec
                        << " (" << want << ")";
      }
    ASSERT_EQ(failures, 0);
  }
}

// The integer forms: A and B over every byte value of their types, C over values near the s32
// limits so that sums leave the range; the reference sums exactly, then wraps or clamps.
class IntegerMmaTest : public ::testing::TestWithParam<MmaCase> {};

TEST_P(IntegerMmaTest, MatchesHostProduct) {
  const MmaCase& c = GetParam();
  const int n = 8;
  int aElements = c.m * c.k / 32, bElements = c.k * n / 32, cElements = c.m * n / 32;
  int aRegs = aElements / perRegister(c.aType), bRegs = bElements / perRegister(c.b());
  int cRegs = cElements;
  std::string source = kernel(c, aRegs, bRegs, cRegs, cRegs);
  auto loaded = compileAndLoad(source, c.name);
  ASSERT_TRUE(loaded) << source;
  std::mt19937 rng(11);
  auto byte = [&](const std::string& type) {  // any value of the type
    int bits = elementBits(type);
    int v = static_cast<int>(rng() % (1u << bits));
    return static_cast<double>(type[0] == 's' ? v - (1 << (bits - 1)) : v);
  };
  for (int round = 0; round < 6; ++round) {
    std::vector<double> A(static_cast<size_t>(c.m * c.k)), B(static_cast<size_t>(c.k * n)),
        C(static_cast<size_t>(c.m * n));
    for (double& v : A) v = byte(c.aType);
    for (double& v : B) v = byte(c.b());
    for (size_t i = 0; i < C.size(); ++i) {  // small, or within 2^21 of either limit
      int64_t near = static_cast<int64_t>(rng() % (1u << 21));
      C[i] = static_cast<double>(round < 2    ? static_cast<int64_t>(rng() % 2001) - 1000
                                 : i % 2 == 0 ? INT32_MAX - near
                                              : INT32_MIN + near);
    }
    auto bytesOf = [](const std::vector<uint64_t>& regs) {
      std::vector<uint32_t> words(regs.begin(), regs.end());
      return words;
    };
    std::vector<uint32_t> a = bytesOf(pack(c, 'A', c.aType, aElements, A, c.k));
    std::vector<uint32_t> b = bytesOf(pack(c, 'B', c.b(), bElements, B, n));
    std::vector<uint32_t> cc = bytesOf(pack(c, 'C', "s32", cElements, C, n));
    std::vector<uint32_t> d(cc.size(), 0xcdcdcdcd);
    void* pa = a.data();
    void* pb = b.data();
    void* pc = cc.data();
    void* pd = d.data();
    ASSERT_TRUE(launch(*loaded, "mma_test", {}, {32}, {&pa, &pb, &pc, &pd}));
    int failures = 0;
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < cElements; ++i) {
        auto [row, col] = fragmentPosition(c, 'C', lane, i);
        int64_t sum = static_cast<int64_t>(C[static_cast<size_t>(row * n + col)]);
        for (int k = 0; k < c.k; ++k) {
          auto x = static_cast<int64_t>(A[static_cast<size_t>(row * c.k + k)]);
          auto y = static_cast<int64_t>(B[static_cast<size_t>(k * n + col)]);
          sum += c.bitOp == "and" ? (x & y) : c.bitOp == "xor" ? (x ^ y) : x * y;
        }
        if (c.satfinite) sum = std::min<int64_t>(std::max<int64_t>(sum, INT32_MIN), INT32_MAX);
        auto want = static_cast<uint32_t>(sum);  // wraps without .satfinite
        uint32_t got = d[static_cast<size_t>(lane * cRegs + i)];
        if (got != want && ++failures <= 5)
          ADD_FAILURE() << c.name << ": D[" << row << "][" << col << "] (lane " << lane
                        << ", element " << i << ") is " << static_cast<int32_t>(got) << ", want "
                        << static_cast<int32_t>(want);
      }
    ASSERT_EQ(failures, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, IntegerMmaTest,
    ::testing::Values(MmaCase{"m16n8k32_s8_s8", "m16n8k32", "s32", "s8", 16, 32},
                      MmaCase{"m16n8k32_u8_s8_satfinite", "m16n8k32", "s32", "u8", 16, 32, "s8", true},
                      MmaCase{"m16n8k16_s8_u8", "m16n8k16", "s32", "s8", 16, 16, "u8"},
                      MmaCase{"m16n8k16_u8_u8_satfinite", "m16n8k16", "s32", "u8", 16, 16, "", true},
                      MmaCase{"m8n8k16_s8_s8", "m8n8k16", "s32", "s8", 8, 16},
                      MmaCase{"m8n8k16_s8_s8_satfinite", "m8n8k16", "s32", "s8", 8, 16, "", true},
                      MmaCase{"m8n8k32_s4_u4", "m8n8k32", "s32", "s4", 8, 32, "u4"},
                      MmaCase{"m16n8k32_u4_u4_satfinite", "m16n8k32", "s32", "u4", 16, 32, "", true},
                      MmaCase{"m16n8k64_s4_s4", "m16n8k64", "s32", "s4", 16, 64},
                      MmaCase{"m16n8k64_s4_s4_satfinite", "m16n8k64", "s32", "s4", 16, 64, "", true},
                      MmaCase{"m8n8k128_b1_xor", "m8n8k128", "s32", "b1", 8, 128, "", false, "xor"},
                      MmaCase{"m16n8k128_b1_and", "m16n8k128", "s32", "b1", 16, 128, "", false, "and"},
                      MmaCase{"m16n8k256_b1_xor", "m16n8k256", "s32", "b1", 16, 256, "", false, "xor"}),
    [](const ::testing::TestParamInfo<MmaCase>& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Shapes, MmaTest,
    ::testing::Values(MmaCase{"m16n8k16_f32_f16", "m16n8k16", "f32", "f16", 16, 16},
                      MmaCase{"m16n8k16_f32_bf16", "m16n8k16", "f32", "bf16", 16, 16},
                      MmaCase{"m16n8k16_f16_f16", "m16n8k16", "f16", "f16", 16, 16},
                      MmaCase{"m16n8k8_f32_f16", "m16n8k8", "f32", "f16", 16, 8},
                      MmaCase{"m16n8k8_f32_bf16", "m16n8k8", "f32", "bf16", 16, 8},
                      MmaCase{"m16n8k8_f32_tf32", "m16n8k8", "f32", "tf32", 16, 8},
                      MmaCase{"m8n8k4_f64_f64", "m8n8k4", "f64", "f64", 8, 4},
                      MmaCase{"m16n8k4_f32_tf32", "m16n8k4", "f32", "tf32", 16, 4},
                      MmaCase{"m16n8k4_f64_f64", "m16n8k4", "f64", "f64", 16, 4},
                      MmaCase{"m16n8k8_f64_f64", "m16n8k8", "f64", "f64", 16, 8},
                      MmaCase{"m16n8k16_f64_f64", "m16n8k16", "f64", "f64", 16, 16},
                      MmaCase{"m16n8k32_f32_e4m3", "m16n8k32", "f32", "e4m3", 16, 32},
                      MmaCase{"m16n8k32_f32_e4m3_e5m2", "m16n8k32", "f32", "e4m3", 16, 32, "e5m2"},
                      MmaCase{"m16n8k32_f16_e5m2", "m16n8k32", "f16", "e5m2", 16, 32},
                      MmaCase{"m16n8k16_f32_e5m2_e4m3", "m16n8k16", "f32", "e5m2", 16, 16, "e4m3"}),
    [](const ::testing::TestParamInfo<MmaCase>& info) { return info.param.name; });

// mma.m8n8k4 with f16 inputs: four 8x8x4 products, one per quad pair (lanes 4q..4q+3 and
// 16+4q..16+4q+3), in every combination of A and B layouts and accumulator types. Positions per
// the PTX ISA's "Matrix Fragments for mma.m8n8k4 with .f16" formulas (t = lane % 4, h = lane / 16).
struct QuadPairCase {
  bool aRow, bRow;
  std::string dType, cType;
  std::string name() const {
    return std::string(aRow ? "row" : "col") + "_" + (bRow ? "row" : "col") + "_" + dType + "_" +
           cType;
  }
};

std::pair<int, int> quadPairPosition(const QuadPairCase& c, char matrix, const std::string& type,
                                     int lane, int i) {
  int t = lane % 4, h = lane / 16;
  switch (matrix) {
    case 'A':
      return c.aRow ? std::pair{t + 4 * h, i} : std::pair{i + 4 * h, t};
    case 'B':
      return c.bRow ? std::pair{t, i + 4 * h} : std::pair{i, t + 4 * h};
    default:  // C and D: by the accumulator's type
      if (type == "f16") return {t + 4 * h, i};
      return {(lane & 1) + (i & 2) + 4 * h, (i & 4) + (lane & 2) + (i & 1)};
  }
}

class QuadPairMmaTest : public ::testing::TestWithParam<QuadPairCase> {};

TEST_P(QuadPairMmaTest, MatchesFourHostProducts) {
  const QuadPairCase& c = GetParam();
  int cRegs = c.cType == "f16" ? 4 : 8, dRegs = c.dType == "f16" ? 4 : 8;
  auto list = [](char m, int n) {
    std::string s = "{";
    for (int i = 0; i < n; ++i) s += (i ? ", %" : "%") + std::string(1, m) + std::to_string(i);
    return s + "}";
  };
  std::ostringstream k;
  k << ".version 8.7\n.target sm_75\n.address_size 64\n"
    << ".visible .entry quad_pairs(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 "
       "pd)\n{\n"
    << "  .reg .b32 %lane, %a<2>, %b<2>, %c<8>, %d<8>;\n  .reg .b64 %p<8>;\n"
    << "  mov.u32 %lane, %laneid;\n";
  auto loads = [&](const char* param, char m, int n, int base) {
    k << "  ld.param.u64 %p" << base << ", [" << param << "];\n  mul.wide.u32 %p" << base + 1
      << ", %lane, " << 4 * n << ";\n  add.s64 %p" << base << ", %p" << base << ", %p" << base + 1
      << ";\n";
    for (int i = 0; i < n; ++i)
      k << "  ld.global.b32 %" << m << i << ", [%p" << base << "+" << 4 * i << "];\n";
  };
  loads("pa", 'a', 2, 0);
  loads("pb", 'b', 2, 2);
  loads("pc", 'c', cRegs, 4);
  k << "  mma.sync.aligned.m8n8k4." << (c.aRow ? "row" : "col") << "." << (c.bRow ? "row" : "col")
    << "." << c.dType << ".f16.f16." << c.cType << " " << list('d', dRegs) << ", " << list('a', 2)
    << ", " << list('b', 2) << ", " << list('c', cRegs) << ";\n";
  k << "  ld.param.u64 %p6, [pd];\n  mul.wide.u32 %p7, %lane, " << 4 * dRegs
    << ";\n  add.s64 %p6, %p6, %p7;\n";
  for (int i = 0; i < dRegs; ++i) k << "  st.global.b32 [%p6+" << 4 * i << "], %d" << i << ";\n";
  k << "  ret;\n}\n";
  std::string source = k.str();
  auto loaded = compileAndLoad(source, "quad_pairs");
  ASSERT_TRUE(loaded) << source;

  std::mt19937 rng(11);
  auto value = [&](int range) {  // small integers: every sum exact, even in f16
    return static_cast<double>(static_cast<int>(rng() % static_cast<uint32_t>(2 * range + 1)) -
                               range);
  };
  // Four independent problems, one per quad pair q: A[q] 8x4, B[q] 4x8, C[q] 8x8.
  std::vector<double> A(4 * 32), B(4 * 32), C(4 * 64);
  for (double& v : A) v = value(6);
  for (double& v : B) v = value(6);
  for (double& v : C) v = value(40);
  auto half = [](double v) {
    return static_cast<uint32_t>(encodeFloat(v, conformance::kHalf, Rounding::Nearest));
  };
  auto accumulatorBits = [&](double v, const std::string& type) {
    return type == "f16" ? half(v) : conformance::bitsOf(static_cast<float>(v));
  };
  std::vector<uint32_t> a(32 * 2), b(32 * 2), cc(32 * static_cast<size_t>(cRegs)),
      d(32 * static_cast<size_t>(dRegs), 0xcdcdcdcdu);
  for (int lane = 0; lane < 32; ++lane) {
    int q = (lane / 4) % 4;
    for (int i = 0; i < 4; ++i) {
      auto [ar, ak] = quadPairPosition(c, 'A', "f16", lane, i);
      a[static_cast<size_t>(lane * 2 + i / 2)] |= half(A[static_cast<size_t>(q * 32 + ar * 4 + ak)])
                                                  << (16 * (i % 2));
      auto [bk, bn] = quadPairPosition(c, 'B', "f16", lane, i);
      b[static_cast<size_t>(lane * 2 + i / 2)] |= half(B[static_cast<size_t>(q * 32 + bk * 8 + bn)])
                                                  << (16 * (i % 2));
    }
    for (int i = 0; i < 8; ++i) {
      auto [row, col] = quadPairPosition(c, 'C', c.cType, lane, i);
      uint32_t bits = accumulatorBits(C[static_cast<size_t>(q * 64 + row * 8 + col)], c.cType);
      if (c.cType == "f16")
        cc[static_cast<size_t>(lane * cRegs + i / 2)] |= bits << (16 * (i % 2));
      else
        cc[static_cast<size_t>(lane * cRegs + i)] = bits;
    }
  }
  void* pa = a.data();
  void* pb = b.data();
  void* pc = cc.data();
  void* pd = d.data();
  ASSERT_TRUE(launch(*loaded, "quad_pairs", {}, {32}, {&pa, &pb, &pc, &pd}));
  int failures = 0;
  for (int lane = 0; lane < 32; ++lane) {
    int q = (lane / 4) % 4;
    for (int i = 0; i < 8; ++i) {
      // D's element i sits where C's element i does.
      auto [row, col] = quadPairPosition(c, 'C', c.cType, lane, i);
      double want = C[static_cast<size_t>(q * 64 + row * 8 + col)];
      for (int kk = 0; kk < 4; ++kk)
        want += A[static_cast<size_t>(q * 32 + row * 4 + kk)] *
                B[static_cast<size_t>(q * 32 + kk * 8 + col)];
      uint32_t got =
          c.dType == "f16"
              ? (d[static_cast<size_t>(lane * dRegs + i / 2)] >> (16 * (i % 2))) & 0xffffu
              : d[static_cast<size_t>(lane * dRegs + i)];
      if (got != accumulatorBits(want, c.dType) && ++failures <= 5)
        ADD_FAILURE() << c.name() << ": lane " << lane << " element " << i << " (D[" << q << "]["
                      << row << "][" << col << "]) is 0x" << std::hex << got << ", want 0x"
                      << accumulatorBits(want, c.dType) << std::dec << " (" << want << ")";
    }
  }
  EXPECT_EQ(failures, 0);
}

std::vector<QuadPairCase> quadPairCases() {
  std::vector<QuadPairCase> cases;
  for (bool aRow : {true, false})
    for (bool bRow : {true, false})
      for (const char* dType : {"f32", "f16"})
        for (const char* cType : {"f32", "f16"}) cases.push_back({aRow, bRow, dType, cType});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Volta, QuadPairMmaTest, ::testing::ValuesIn(quadPairCases()),
                         [](const ::testing::TestParamInfo<QuadPairCase>& info) {
                           return info.param.name();
                         });

}  // namespace
}  // namespace rocuda::compiler::test

namespace rocuda::compiler::test {
namespace {

// ldmatrix / stmatrix on four 8x8 b16 matrices in shared memory with padded rows (24 bytes): lane
// L owns row L % 8 of matrix L / 8 (it copies it in and gives its address). movmatrix transposes
// the fragments ldmatrix loaded, which must give what ldmatrix .trans loads.
const char* kMatrixPtx = R"(
.version 8.5
.target sm_90
.address_size 64
.visible .entry ldmatrix_test(.param .u64 pin, .param .u64 pout)
{
  .shared .align 16 .b8 tiles[768];
  .reg .b32 %lane, %m, %r, %off, %v<4>, %x<4>, %t<4>, %w<4>, %mv<4>;
  .reg .b64 %p<6>;
  .reg .b32 %s<2>;
  mov.u32 %lane, %laneid;
  shr.u32 %m, %lane, 3;
  and.b32 %r, %lane, 7;
  mad.lo.u32 %off, %m, 192, 0;
  mad.lo.u32 %off, %r, 24, %off;
  mov.u32 %s0, tiles;
  add.u32 %s1, %s0, %off;
  ld.param.u64 %p0, [pin];
  mul.wide.u32 %p1, %lane, 16;
  add.s64 %p0, %p0, %p1;
  ld.global.v4.b32 {%v0, %v1, %v2, %v3}, [%p0];
  st.shared.v2.b32 [%s1], {%v0, %v1};
  st.shared.v2.b32 [%s1+8], {%v2, %v3};
  bar.warp.sync 0xffffffff;
  ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%x0, %x1, %x2, %x3}, [%s1];
  ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%t0, %t1, %t2, %t3}, [%s1];
  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%w0, %w1}, [%s1];
  movmatrix.sync.aligned.m8n8.trans.b16 %mv0, %x0;
  movmatrix.sync.aligned.m8n8.trans.b16 %mv1, %x1;
  movmatrix.sync.aligned.m8n8.trans.b16 %mv2, %x2;
  movmatrix.sync.aligned.m8n8.trans.b16 %mv3, %x3;
  ld.param.u64 %p2, [pout];
  mul.wide.u32 %p3, %lane, 64;
  add.s64 %p2, %p2, %p3;
  st.global.v4.b32 [%p2], {%x0, %x1, %x2, %x3};
  st.global.v4.b32 [%p2+16], {%t0, %t1, %t2, %t3};
  st.global.v2.b32 [%p2+32], {%w0, %w1};
  st.global.v4.b32 [%p2+48], {%mv0, %mv1, %mv2, %mv3};
  // stmatrix back into the tiles (.trans), then every lane reads its row again.
  bar.warp.sync 0xffffffff;
  stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%s1], {%x0, %x1, %x2, %x3};
  bar.warp.sync 0xffffffff;
  ld.shared.v2.b32 {%v0, %v1}, [%s1];
  st.global.v2.b32 [%p2+40], {%v0, %v1};
  ret;
}
)";

TEST(MatrixLoadStore, LdmatrixStmatrixAndMovmatrixFollowTheFragmentLayout) {
  auto loaded = compileAndLoad(kMatrixPtx, "ldmatrix");
  ASSERT_TRUE(loaded);
  // M[j][r][c] = a distinct 16-bit value; lane 8j + r's 16 input bytes are row r of matrix j.
  auto value = [](int j, int r, int c) { return static_cast<uint16_t>(0x1000 * (j + 1) + 16 * r + c); };
  std::vector<uint16_t> in(32 * 8);
  for (int lane = 0; lane < 32; ++lane)
    for (int c = 0; c < 8; ++c) in[static_cast<size_t>(lane * 8 + c)] = value(lane / 8, lane % 8, c);
  std::vector<uint32_t> out(32 * 16, 0xdeadbeef);
  void* pin = in.data();
  void* pout = out.data();
  ASSERT_TRUE(launch(*loaded, "ldmatrix_test", {}, {32}, {&pin, &pout}));
  auto pack = [](uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | static_cast<uint32_t>(hi) << 16; };
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane / 4, t = lane % 4;
    const uint32_t* o = out.data() + lane * 16;
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(o[j], pack(value(j, g, 2 * t), value(j, g, 2 * t + 1))) << "lane " << lane << " matrix " << j;
      EXPECT_EQ(o[4 + j], pack(value(j, 2 * t, g), value(j, 2 * t + 1, g)))
          << ".trans lane " << lane << " matrix " << j;
      EXPECT_EQ(o[12 + j], pack(value(j, 2 * t, g), value(j, 2 * t + 1, g)))
          << "movmatrix lane " << lane << " matrix " << j;
    }
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(o[8 + j], pack(value(j, g, 2 * t), value(j, g, 2 * t + 1))) << ".x2 lane " << lane;
    // stmatrix.trans of the non-transposed fragments writes each matrix transposed: row r of
    // matrix j now holds column r.
    int j = lane / 8, r = lane % 8;
    for (int c = 0; c < 4; ++c)
      EXPECT_EQ(o[10 + c / 2] >> (16 * (c % 2)) & 0xffff, value(j, c, r)) << "stmatrix lane " << lane;
  }
}

}  // namespace
}  // namespace rocuda::compiler::test
