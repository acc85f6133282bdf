// Hand-written PTX through compileForHost + loadHostCode, checked against host references that
// follow the PTX ISA's definitions (edge values: shift >= width, division by zero, NaN rules...).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/neutral_ir.h"
#include "test_runtime.h"

namespace rocuda::compiler::test {
namespace {

const char* kIntPtx = R"(
.version 8.0
.target sm_75
.address_size 64

.visible .entry intEdge(.param .u64 out, .param .u32 pa, .param .u32 pb)
{
  .reg .pred %p<3>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [pa];
  ld.param.u32 %r2, [pb];
  shl.b32 %r3, %r1, %r2;        st.global.u32 [%rd1+0], %r3;
  shr.u32 %r3, %r1, %r2;        st.global.u32 [%rd1+4], %r3;
  shr.s32 %r3, %r1, %r2;        st.global.u32 [%rd1+8], %r3;
  div.u32 %r3, %r1, %r2;        st.global.u32 [%rd1+12], %r3;
  rem.u32 %r3, %r1, %r2;        st.global.u32 [%rd1+16], %r3;
  div.s32 %r3, %r1, %r2;        st.global.u32 [%rd1+20], %r3;
  rem.s32 %r3, %r1, %r2;        st.global.u32 [%rd1+24], %r3;
  mul.hi.u32 %r3, %r1, %r2;     st.global.u32 [%rd1+28], %r3;
  mul.hi.s32 %r3, %r1, %r2;     st.global.u32 [%rd1+32], %r3;
  min.s32 %r3, %r1, %r2;        st.global.u32 [%rd1+36], %r3;
  max.u32 %r3, %r1, %r2;        st.global.u32 [%rd1+40], %r3;
  bfe.u32 %r3, %r1, %r2, 8;     st.global.u32 [%rd1+44], %r3;
  bfe.s32 %r3, %r1, 4, %r2;     st.global.u32 [%rd1+48], %r3;
  bfind.u32 %r3, %r1;           st.global.u32 [%rd1+52], %r3;
  bfind.s32 %r3, %r1;           st.global.u32 [%rd1+56], %r3;
  bfind.shiftamt.u32 %r3, %r1;  st.global.u32 [%rd1+60], %r3;
  bfi.b32 %r3, %r1, 0xFFFFFFFF, %r2, 4;  st.global.u32 [%rd1+64], %r3;
  prmt.b32 %r3, %r1, %r2, 0x7531;        st.global.u32 [%rd1+68], %r3;
  prmt.b32.f4e %r3, %r1, %r2, %r2;       st.global.u32 [%rd1+72], %r3;
  lop3.b32 %r3, %r1, %r2, 0xF0F0F0F0, 0x96;  st.global.u32 [%rd1+76], %r3;
  shf.l.wrap.b32 %r3, %r1, %r2, %r2;     st.global.u32 [%rd1+80], %r3;
  shf.r.clamp.b32 %r3, %r1, %r2, %r2;    st.global.u32 [%rd1+84], %r3;
  mul24.hi.s32 %r3, %r1, %r2;            st.global.u32 [%rd1+88], %r3;
  sad.u32 %r3, %r1, %r2, 5;              st.global.u32 [%rd1+92], %r3;
  add.cc.u32 %r3, %r1, %r2;
  addc.u32 %r4, %r2, %r1;                st.global.v2.u32 [%rd1+96], {%r3, %r4};
  sub.cc.u32 %r3, %r1, %r2;
  subc.u32 %r4, %r2, %r1;                st.global.v2.u32 [%rd1+104], {%r3, %r4};
  popc.b32 %r3, %r1;                     st.global.u32 [%rd1+112], %r3;
  clz.b32 %r3, %r1;                      st.global.u32 [%rd1+116], %r3;
  brev.b32 %r3, %r1;                     st.global.u32 [%rd1+120], %r3;
  cnot.b32 %r3, %r1;                     st.global.u32 [%rd1+124], %r3;
  setp.lt.s32 %p1|%p2, %r1, %r2;
  selp.u32 %r3, 1, 0, %p1;
  selp.u32 %r4, 2, 0, %p2;
  @%p1 add.u32 %r4, %r4, 4;
  @!%p2 add.u32 %r4, %r4, 8;
  add.u32 %r3, %r3, %r4;                 st.global.u32 [%rd1+128], %r3;
  setp.hi.and.u32 %p1, %r1, %r2, %p2;
  selp.u32 %r3, 1, 0, %p1;               st.global.u32 [%rd1+132], %r3;
  slct.u32.s32 %r3, %r1, %r2, %r1;       st.global.u32 [%rd1+136], %r3;
  abs.s32 %r3, %r1;                      st.global.u32 [%rd1+140], %r3;
  neg.s32 %r3, %r2;                      st.global.u32 [%rd1+144], %r3;
  add.sat.s32 %r3, %r1, %r2;             st.global.u32 [%rd1+148], %r3;
  mad.lo.u32 %r3, %r1, %r2, 3;           st.global.u32 [%rd1+152], %r3;
  mad.hi.u32 %r3, %r1, %r2, 3;           st.global.u32 [%rd1+156], %r3;
  shl.b64 %rd2, %rd1, 0;
  mul.wide.u32 %rd3, %r1, %r2;           st.global.u64 [%rd2+160], %rd3;
  cvt.u64.u32 %rd3, %r2;
  mad.wide.s32 %rd3, %r1, %r2, %rd3;     st.global.u64 [%rd2+168], %rd3;
  mov.b64 %rd3, {%r1, %r2};
  shr.s64 %rd3, %rd3, %r2;               st.global.u64 [%rd2+176], %rd3;
  mov.b64 {%r5, %r6}, %rd3;
  xor.b32 %r5, %r5, %r6;                 st.global.u32 [%rd2+184], %r5;
  ret;
}
)";

uint32_t refShl(uint32_t a, uint32_t n) { return n >= 32 ? 0 : a << n; }
uint32_t refShrU(uint32_t a, uint32_t n) { return n >= 32 ? 0 : a >> n; }
uint32_t refShrS(int32_t a, uint32_t n) { return static_cast<uint32_t>(a >> (n >= 32 ? 31 : n)); }
uint32_t refDivU(uint32_t a, uint32_t b) { return b == 0 ? 0xffffffffu : a / b; }
uint32_t refRemU(uint32_t a, uint32_t b) { return b == 0 ? a : a % b; }
uint32_t refDivS(int32_t a, int32_t b) {
  if (b == 0) return 0xffffffffu;
  if (a == INT32_MIN && b == -1) return static_cast<uint32_t>(a);
  return static_cast<uint32_t>(a / b);
}
uint32_t refRemS(int32_t a, int32_t b) {
  if (b == 0) return static_cast<uint32_t>(a);
  if (a == INT32_MIN && b == -1) return 0;
  return static_cast<uint32_t>(a % b);
}
uint32_t refBfe(uint32_t a, uint32_t pos, uint32_t len, bool isSigned) {
  pos &= 0xff;
  len &= 0xff;
  uint32_t sbit = 0;
  if (isSigned && len != 0) {  // PTX: no sign bit for an empty field
    int top = std::min<int>(static_cast<int>(pos + len) - 1, 31);
    sbit = (a >> std::max(top, 0)) & 1;
  }
  uint32_t d = 0;
  for (uint32_t i = 0; i < 32; ++i) {
    uint32_t bit = (i < len && pos + i <= 31) ? (a >> (pos + i)) & 1 : sbit;
    d |= bit << i;
  }
  return d;
}
uint32_t refBfind(uint32_t a, bool isSigned, bool shiftAmt) {
  uint32_t x = (isSigned && static_cast<int32_t>(a) < 0) ? ~a : a;
  if (x == 0) return 0xffffffffu;
  int msb = 31 - __builtin_clz(x);
  return shiftAmt ? 31 - msb : msb;
}
uint32_t refBfi(uint32_t a, uint32_t b, uint32_t pos, uint32_t len) {
  pos &= 0xff;
  len &= 0xff;
  uint32_t f = b;
  for (uint32_t i = 0; i < len && pos + i <= 31; ++i)
    f = (f & ~(1u << (pos + i))) | (((a >> i) & 1) << (pos + i));
  return f;
}
uint32_t refPrmt(uint32_t a, uint32_t b, uint32_t c) {
  uint64_t bytes = a | (static_cast<uint64_t>(b) << 32);
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t sel = (c >> (4 * i)) & 0xf;
    uint32_t byte = (bytes >> ((sel & 7) * 8)) & 0xff;
    if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
    d |= byte << (8 * i);
  }
  return d;
}
uint32_t refF4e(uint32_t a, uint32_t b, uint32_t c) {
  uint64_t bytes = a | (static_cast<uint64_t>(b) << 32);
  uint32_t d = 0;
  for (uint32_t i = 0; i < 4; ++i) d |= ((bytes >> ((((c & 3) + i) & 7) * 8)) & 0xff) << (8 * i);
  return d;
}
uint32_t refShfLWrap(uint32_t lo, uint32_t hi, uint32_t n) {
  n &= 31;
  uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<uint32_t>((v << n) >> 32);
}
uint32_t refShfRClamp(uint32_t lo, uint32_t hi, uint32_t n) {
  n = std::min(n, 32u);
  uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<uint32_t>(v >> n);
}
uint32_t refMul24Hi(int32_t a, int32_t b) {
  int64_t x = (static_cast<int64_t>(a) << 40) >> 40, y = (static_cast<int64_t>(b) << 40) >> 40;
  return static_cast<uint32_t>(static_cast<uint64_t>(x * y) >> 16);
}

struct IntCase {
  uint32_t a, b;
};

class IntEdgeTest : public ::testing::TestWithParam<IntCase> {};

TEST_P(IntEdgeTest, MatchesPtxSemantics) {
  static std::unique_ptr<Loaded> loaded = compileAndLoad(kIntPtx, "int_edge");
  ASSERT_TRUE(loaded);
  uint32_t a = GetParam().a, b = GetParam().b;
  int32_t sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
  alignas(8) uint8_t out[192] = {};
  void* outPtr = out;
  ASSERT_TRUE(launch(*loaded, "intEdge", {}, {}, {&outPtr, &a, &b}));
  auto u32 = [&](int offset) {
    uint32_t v;
    std::memcpy(&v, out + offset, 4);
    return v;
  };
  auto u64 = [&](int offset) {
    uint64_t v;
    std::memcpy(&v, out + offset, 8);
    return v;
  };
  EXPECT_EQ(u32(0), refShl(a, b));
  EXPECT_EQ(u32(4), refShrU(a, b));
  EXPECT_EQ(u32(8), refShrS(sa, b));
  EXPECT_EQ(u32(12), refDivU(a, b));
  EXPECT_EQ(u32(16), refRemU(a, b));
  EXPECT_EQ(u32(20), refDivS(sa, sb));
  EXPECT_EQ(u32(24), refRemS(sa, sb));
  EXPECT_EQ(u32(28), static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32));
  EXPECT_EQ(u32(32), static_cast<uint32_t>((static_cast<int64_t>(sa) * sb) >> 32));
  EXPECT_EQ(u32(36), static_cast<uint32_t>(std::min(sa, sb)));
  EXPECT_EQ(u32(40), std::max(a, b));
  EXPECT_EQ(u32(44), refBfe(a, b, 8, false));
  EXPECT_EQ(u32(48), refBfe(a, 4, b, true));
  EXPECT_EQ(u32(52), refBfind(a, false, false));
  EXPECT_EQ(u32(56), refBfind(a, true, false));
  EXPECT_EQ(u32(60), refBfind(a, false, true));
  EXPECT_EQ(u32(64), refBfi(a, 0xffffffffu, b, 4));
  EXPECT_EQ(u32(68), refPrmt(a, b, 0x7531));
  EXPECT_EQ(u32(72), refF4e(a, b, b));
  EXPECT_EQ(u32(76), a ^ b ^ 0xF0F0F0F0u);
  EXPECT_EQ(u32(80), refShfLWrap(a, b, b));
  EXPECT_EQ(u32(84), refShfRClamp(a, b, b));
  EXPECT_EQ(u32(88), refMul24Hi(sa, sb));
  EXPECT_EQ(u32(92), (a > b ? a - b : b - a) + 5);
  uint64_t sum = (static_cast<uint64_t>(b) << 32 | a) + (static_cast<uint64_t>(a) << 32 | b);
  EXPECT_EQ(u64(96), sum);
  uint64_t diff = (static_cast<uint64_t>(b) << 32 | a) - (static_cast<uint64_t>(a) << 32 | b);
  EXPECT_EQ(u64(104), diff);
  EXPECT_EQ(u32(112), static_cast<uint32_t>(__builtin_popcount(a)));
  EXPECT_EQ(u32(116), a == 0 ? 32u : static_cast<uint32_t>(__builtin_clz(a)));
  uint32_t rev = 0;
  for (int i = 0; i < 32; ++i) rev |= ((a >> i) & 1) << (31 - i);
  EXPECT_EQ(u32(120), rev);
  EXPECT_EQ(u32(124), a == 0 ? 1u : 0u);
  bool lt = sa < sb;
  EXPECT_EQ(u32(128), (lt ? 1u : 0u) + (lt ? 0u : 2u) + (lt ? 4u : 0u) + (lt ? 8u : 0u));
  EXPECT_EQ(u32(132), (a > b && !lt) ? 1u : 0u);
  EXPECT_EQ(u32(136), sa >= 0 ? a : b);
  EXPECT_EQ(u32(140), static_cast<uint32_t>(sa < 0 ? 0u - a : a));
  EXPECT_EQ(u32(144), 0u - b);
  int64_t sat = static_cast<int64_t>(sa) + sb;
  sat = std::clamp<int64_t>(sat, INT32_MIN, INT32_MAX);
  EXPECT_EQ(u32(148), static_cast<uint32_t>(sat));
  EXPECT_EQ(u32(152), a * b + 3);
  EXPECT_EQ(u32(156), static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32) + 3);
  EXPECT_EQ(u64(160), static_cast<uint64_t>(a) * b);
  EXPECT_EQ(u64(168), static_cast<uint64_t>(static_cast<int64_t>(sa) * sb) + b);
  int64_t packed = static_cast<int64_t>(static_cast<uint64_t>(b) << 32 | a);
  uint64_t shifted = static_cast<uint64_t>(packed >> (b >= 64 ? 63 : b));
  EXPECT_EQ(u64(176), shifted);
  EXPECT_EQ(u32(184), static_cast<uint32_t>(shifted) ^ static_cast<uint32_t>(shifted >> 32));
}

INSTANTIATE_TEST_SUITE_P(
    EdgeValues, IntEdgeTest,
    ::testing::Values(IntCase{0x12345678u, 0}, IntCase{0x80000000u, 0xffffffffu},
                      IntCase{0xdeadbeefu, 31}, IntCase{0xdeadbeefu, 32}, IntCase{0xfedcba98u, 33},
                      IntCase{7, 200}, IntCase{0, 0}, IntCase{0x7fffffffu, 0x7fffffffu},
                      IntCase{0xffffff00u, 5}, IntCase{100, 7}, IntCase{0xfffffff9u, 3},
                      IntCase{0x00800001u, 0x00ffffffu}));

const char* kFloatPtx = R"(
.version 8.0
.target sm_80
.address_size 64

.visible .entry cvtModes(.param .u64 out, .param .f64 px, .param .f32 py, .param .s64 pz)
{
  .reg .f32 %f<8>;
  .reg .f64 %fd<4>;
  .reg .b32 %r<8>;
  .reg .b16 %rs<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.f64 %fd1, [px];
  ld.param.f32 %f1, [py];
  ld.param.s64 %rd2, [pz];
  cvt.rn.f32.f64 %f2, %fd1;   st.global.f32 [%rd1+0], %f2;
  cvt.rz.f32.f64 %f2, %fd1;   st.global.f32 [%rd1+4], %f2;
  cvt.rm.f32.f64 %f2, %fd1;   st.global.f32 [%rd1+8], %f2;
  cvt.rp.f32.f64 %f2, %fd1;   st.global.f32 [%rd1+12], %f2;
  cvt.rni.s32.f64 %r1, %fd1;  st.global.s32 [%rd1+16], %r1;
  cvt.rzi.s32.f64 %r1, %fd1;  st.global.s32 [%rd1+20], %r1;
  cvt.rmi.s32.f64 %r1, %fd1;  st.global.s32 [%rd1+24], %r1;
  cvt.rpi.s32.f64 %r1, %fd1;  st.global.s32 [%rd1+28], %r1;
  cvt.rzi.u8.f32 %r1, %f1;    st.global.u32 [%rd1+32], %r1;
  cvt.rni.s16.f32 %rs1, %f1;  cvt.s32.s16 %r1, %rs1;  st.global.s32 [%rd1+36], %r1;
  cvt.rn.f32.s64 %f2, %rd2;   st.global.f32 [%rd1+40], %f2;
  cvt.rz.f32.s64 %f2, %rd2;   st.global.f32 [%rd1+44], %f2;
  cvt.rm.f32.s64 %f2, %rd2;   st.global.f32 [%rd1+48], %f2;
  cvt.rp.f32.s64 %f2, %rd2;   st.global.f32 [%rd1+52], %f2;
  cvt.rni.f32.f32 %f2, %f1;   st.global.f32 [%rd1+56], %f2;
  cvt.rmi.f32.f32 %f2, %f1;   st.global.f32 [%rd1+60], %f2;
  cvt.sat.f32.f32 %f2, %f1;   st.global.f32 [%rd1+64], %f2;
  cvt.rn.f16.f32 %rs1, %f1;   cvt.u32.u16 %r1, %rs1;  st.global.u32 [%rd1+68], %r1;
  cvt.f32.f16 %f2, %rs1;      st.global.f32 [%rd1+72], %f2;
  cvt.rzi.s64.f32 %rd3, %f1;  st.global.s64 [%rd1+80], %rd3;
  cvt.rn.f64.u64 %fd2, %rd2;  st.global.f64 [%rd1+88], %fd2;
  cvt.sat.s8.s64 %rs2, %rd2;  cvt.s32.s8 %r1, %rs2;  st.global.s32 [%rd1+96], %r1;
  cvt.rpi.u32.f32 %r1, %f1;   st.global.u32 [%rd1+100], %r1;
  ret;
}

.visible .entry floatRules(.param .u64 out, .param .f32 pa, .param .f32 pb)
{
  .reg .pred %p<8>;
  .reg .f32 %f<8>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.param.f32 %f1, [pa];
  ld.param.f32 %f2, [pb];
  min.f32 %f3, %f1, %f2;       st.global.f32 [%rd1+0], %f3;
  max.f32 %f3, %f1, %f2;       st.global.f32 [%rd1+4], %f3;
  min.NaN.f32 %f3, %f1, %f2;   st.global.f32 [%rd1+8], %f3;
  copysign.f32 %f3, %f1, %f2;  st.global.f32 [%rd1+12], %f3;
  setp.lt.f32 %p1, %f1, %f2;   selp.u32 %r1, 1, 0, %p1;
  setp.ltu.f32 %p1, %f1, %f2;  selp.u32 %r2, 2, 0, %p1;
  setp.neu.f32 %p1, %f1, %f2;  selp.u32 %r3, 4, 0, %p1;
  setp.ne.f32 %p1, %f1, %f2;   selp.u32 %r4, 8, 0, %p1;
  setp.nan.f32 %p1, %f1, %f2;  selp.u32 %r5, 16, 0, %p1;
  setp.num.f32 %p1, %f1, %f2;  selp.u32 %r6, 32, 0, %p1;
  setp.geu.f32 %p1, %f1, %f2;  selp.u32 %r7, 64, 0, %p1;
  testp.finite.f32 %p1, %f1;   selp.u32 %r8, 128, 0, %p1;
  testp.subnormal.f32 %p1, %f1; selp.u32 %r9, 256, 0, %p1;
  or.b32 %r1, %r1, %r2;  or.b32 %r1, %r1, %r3;  or.b32 %r1, %r1, %r4;  or.b32 %r1, %r1, %r5;
  or.b32 %r1, %r1, %r6;  or.b32 %r1, %r1, %r7;  or.b32 %r1, %r1, %r8;  or.b32 %r1, %r1, %r9;
  st.global.u32 [%rd1+16], %r1;
  add.rz.f32 %f3, %f1, %f2;    st.global.f32 [%rd1+20], %f3;
  mul.rp.f32 %f3, %f1, %f2;    st.global.f32 [%rd1+24], %f3;
  div.rn.f32 %f3, %f1, %f2;    st.global.f32 [%rd1+28], %f3;
  add.ftz.f32 %f3, %f1, 0f00000000;  st.global.f32 [%rd1+32], %f3;
  fma.rn.f32 %f3, %f1, %f2, 0f3F800000;  st.global.f32 [%rd1+36], %f3;
  set.gtu.u32.f32 %r1, %f1, %f2;  st.global.u32 [%rd1+40], %r1;
  ret;
}
)";

template <class To, class From>
To convertWithMode(From x, int mode) {
  std::fesetround(mode);
  volatile From in = x;
  volatile To out = static_cast<To>(in);
  std::fesetround(FE_TONEAREST);
  return out;
}

// a + b or a * b in float arithmetic under a host rounding mode.
float opWithMode(float a, float b, int mode, bool multiply) {
  std::fesetround(mode);
  volatile float x = a, y = b;
  volatile float r = multiply ? x * y : x + y;
  std::fesetround(FE_TONEAREST);
  return r;
}

uint32_t floatBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// The bits the device gives a computed result: a NaN is NVIDIA's canonical NaN, whatever NaN
// the host computed (0xffc00000 for 0/0 on x86).
uint32_t resultBits(float f) { return std::isnan(f) ? 0x7fffffffu : floatBits(f); }

struct CvtCase {
  double x;
  float y;
  int64_t z;
};

class CvtTest : public ::testing::TestWithParam<CvtCase> {};

TEST_P(CvtTest, RoundingModes) {
  static std::unique_ptr<Loaded> loaded = compileAndLoad(kFloatPtx, "float_rules");
  ASSERT_TRUE(loaded);
  auto c = GetParam();
  alignas(8) uint8_t out[112] = {};
  void* outPtr = out;
  ASSERT_TRUE(launch(*loaded, "cvtModes", {}, {}, {&outPtr, &c.x, &c.y, &c.z}));
  auto f32 = [&](int o) {
    float v;
    std::memcpy(&v, out + o, 4);
    return v;
  };
  auto s32 = [&](int o) {
    int32_t v;
    std::memcpy(&v, out + o, 4);
    return v;
  };
  // A NaN result is NVIDIA's canonical NaN (0x7fffffff), whatever NaN the host computed.
  auto bitsEq = [&](int o, float want) {
    EXPECT_EQ(floatBits(f32(o)), resultBits(want)) << "offset " << o;
  };
  bitsEq(0, convertWithMode<float>(c.x, FE_TONEAREST));
  bitsEq(4, convertWithMode<float>(c.x, FE_TOWARDZERO));
  bitsEq(8, convertWithMode<float>(c.x, FE_DOWNWARD));
  bitsEq(12, convertWithMode<float>(c.x, FE_UPWARD));
  auto satInt = [](double v) -> int32_t {
    if (std::isnan(v)) return 0;
    return static_cast<int32_t>(std::clamp(v, -2147483648.0, 2147483647.0));
  };
  EXPECT_EQ(s32(16), satInt(std::nearbyint(c.x)));
  EXPECT_EQ(s32(20), satInt(std::trunc(c.x)));
  EXPECT_EQ(s32(24), satInt(std::floor(c.x)));
  EXPECT_EQ(s32(28), satInt(std::ceil(c.x)));
  float ty = std::trunc(c.y);
  EXPECT_EQ(static_cast<uint32_t>(s32(32)),
            std::isnan(c.y) ? 0u : static_cast<uint32_t>(std::clamp(ty, 0.0f, 255.0f)));
  EXPECT_EQ(s32(36), std::isnan(c.y) ? 0
                                     : static_cast<int32_t>(
                                           std::clamp(std::nearbyint(c.y), -32768.0f, 32767.0f)));
  bitsEq(40, convertWithMode<float>(c.z, FE_TONEAREST));
  bitsEq(44, convertWithMode<float>(c.z, FE_TOWARDZERO));
  bitsEq(48, convertWithMode<float>(c.z, FE_DOWNWARD));
  bitsEq(52, convertWithMode<float>(c.z, FE_UPWARD));
  bitsEq(56, std::nearbyint(c.y));
  bitsEq(60, std::floor(c.y));
  float sat = std::isnan(c.y) ? 0.0f : std::clamp(c.y, 0.0f, 1.0f);
  bitsEq(64, sat);
  _Float16 h = static_cast<_Float16>(c.y);
  uint16_t hb;
  std::memcpy(&hb, &h, 2);
  EXPECT_EQ(static_cast<uint32_t>(s32(68)), std::isnan(c.y) ? 0x7fffu : hb);
  if (!std::isnan(c.y)) bitsEq(72, static_cast<float>(h));
  int64_t s64;
  std::memcpy(&s64, out + 80, 8);
  int64_t want64 = INT64_MIN;  // NaN to a 64-bit integer: 1 << 63 (PTX ISA, cvt)
  if (!std::isnan(c.y)) {
    double tr = std::trunc(static_cast<double>(c.y));
    want64 = tr >= 9223372036854775807.0    ? INT64_MAX
             : tr <= -9223372036854775808.0 ? INT64_MIN
                                            : static_cast<int64_t>(tr);
  }
  EXPECT_EQ(s64, want64);
  double d;
  std::memcpy(&d, out + 88, 8);
  EXPECT_EQ(d, static_cast<double>(static_cast<uint64_t>(c.z)));
  EXPECT_EQ(s32(96), static_cast<int32_t>(std::clamp<int64_t>(c.z, -128, 127)));
  EXPECT_EQ(static_cast<uint32_t>(s32(100)),
            std::isnan(c.y) ? 0u
                            : static_cast<uint32_t>(std::clamp(std::ceil(static_cast<double>(c.y)),
                                                               0.0, 4294967295.0)));
}

INSTANTIATE_TEST_SUITE_P(
    Values, CvtTest,
    ::testing::Values(CvtCase{1.0000000596046448, 2.5f, (1LL << 53) + 1},
                      CvtCase{-1.0000000596046448, -2.5f, -((1LL << 40) + 3)},
                      CvtCase{3.5, 300.7f, 123456789}, CvtCase{-3.5, -0.4f, -(1LL << 62) - 12345},
                      CvtCase{1e300, 1e20f, INT64_MAX}, CvtCase{-1e-300, 0.5f, INT64_MIN},
                      CvtCase{2147483648.5, 1.00001f, 16777217},
                      CvtCase{0.1, std::numeric_limits<float>::quiet_NaN(), -16777217}));

struct FloatCase {
  float a, b;
};
class FloatRulesTest : public ::testing::TestWithParam<FloatCase> {};

TEST_P(FloatRulesTest, NaNAndCompareRules) {
  static std::unique_ptr<Loaded> loaded = compileAndLoad(kFloatPtx, "float_rules2");
  ASSERT_TRUE(loaded);
  auto c = GetParam();
  alignas(8) uint8_t out[48] = {};
  void* outPtr = out;
  ASSERT_TRUE(launch(*loaded, "floatRules", {}, {}, {&outPtr, &c.a, &c.b}));
  auto f32 = [&](int o) {
    float v;
    std::memcpy(&v, out + o, 4);
    return v;
  };
  bool an = std::isnan(c.a), bn = std::isnan(c.b);
  float mn = an ? c.b : bn ? c.a : std::fmin(c.a, c.b);
  float mx = an ? c.b : bn ? c.a : std::fmax(c.a, c.b);
  if (c.a == 0.0f && c.b == 0.0f) {  // PTX orders -0 below +0
    mn = (std::signbit(c.a) || std::signbit(c.b)) ? -0.0f : 0.0f;
    mx = (std::signbit(c.a) && std::signbit(c.b)) ? -0.0f : 0.0f;
  }
  if (!(an && bn)) {
    EXPECT_EQ(floatBits(f32(0)), floatBits(mn));
    EXPECT_EQ(floatBits(f32(4)), floatBits(mx));
  } else {
    EXPECT_TRUE(std::isnan(f32(0)));
  }
  if (an || bn)
    EXPECT_TRUE(std::isnan(f32(8)));
  else
    EXPECT_EQ(f32(8), std::fmin(c.a, c.b));
  EXPECT_EQ(floatBits(f32(12)), floatBits(std::copysign(c.b, c.a)));
  bool unord = an || bn;
  uint32_t flags = (c.a < c.b ? 1 : 0) | ((unord || c.a < c.b) ? 2 : 0) |
                   ((unord || c.a != c.b) ? 4 : 0) | ((!unord && c.a != c.b) ? 8 : 0) |
                   (unord ? 16 : 0) | (!unord ? 32 : 0) | ((unord || c.a >= c.b) ? 64 : 0) |
                   (std::isfinite(c.a) ? 128 : 0) |
                   (std::fpclassify(c.a) == FP_SUBNORMAL ? 256 : 0);
  uint32_t got;
  std::memcpy(&got, out + 16, 4);
  EXPECT_EQ(got, flags);
  if (!unord) {
    EXPECT_EQ(floatBits(f32(20)), floatBits(opWithMode(c.a, c.b, FE_TOWARDZERO, false)));
    EXPECT_EQ(floatBits(f32(24)), floatBits(opWithMode(c.a, c.b, FE_UPWARD, true)));
    EXPECT_EQ(floatBits(f32(28)), resultBits(c.a / c.b));
    float flushed = std::fpclassify(c.a) == FP_SUBNORMAL ? std::copysign(0.0f, c.a) : c.a;
    EXPECT_EQ(floatBits(f32(32)), resultBits(flushed + 0.0f));
    EXPECT_EQ(floatBits(f32(36)), resultBits(std::fma(c.a, c.b, 1.0f)));
  }
  uint32_t setv;
  std::memcpy(&setv, out + 40, 4);
  EXPECT_EQ(setv, (unord || c.a > c.b) ? 0xffffffffu : 0u);
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
INSTANTIATE_TEST_SUITE_P(Values, FloatRulesTest,
                         ::testing::Values(FloatCase{1.0f, 2.0f}, FloatCase{kNaN, 2.0f},
                                           FloatCase{-3.0f, kNaN}, FloatCase{kNaN, kNaN},
                                           FloatCase{0.1f, 3.0f}, FloatCase{-0.0f, 0.0f},
                                           FloatCase{1e-40f, -7.25f}, FloatCase{1e30f, 1e30f},
                                           FloatCase{std::numeric_limits<float>::infinity(), 1.0f},
                                           FloatCase{16777216.0f, 1.0f}, FloatCase{-1.0f, 3.0f}));

// Directed rounding with constant operands (the optimiser folds them): an exact zero sum of
// opposite signs is -0 rounding toward minus infinity and +0 in the other modes (IEEE 754 6.3).
TEST(CompilerFloat, DirectedRoundingOfConstantsKeepsTheSignOfZero) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry zeros(.param .u64 out)
{
  .reg .f32 %f<5>;
  .reg .f64 %fd<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  fma.rm.f32 %f1, 0f3F800000, 0fBF800000, 0f3F800000;
  add.rm.f32 %f2, 0f3F400000, 0fBF400000;
  sub.rm.f32 %f3, 0f3FC00000, 0f3FC00000;
  add.rp.f32 %f4, 0f3F400000, 0fBF400000;
  add.rm.f64 %fd1, 0d3FF0000000000000, 0dBFF0000000000000;
  st.global.f32 [%rd1], %f1;
  st.global.f32 [%rd1+4], %f2;
  st.global.f32 [%rd1+8], %f3;
  st.global.f32 [%rd1+12], %f4;
  st.global.f64 [%rd1+16], %fd1;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "rounded_zeros");
  ASSERT_TRUE(loaded);
  uint32_t out[6] = {1, 1, 1, 1, 1, 1};
  void* outPtr = out;
  ASSERT_TRUE(launch(*loaded, "zeros", {}, {}, {&outPtr}));
  EXPECT_EQ(out[0], 0x80000000u);  // fma.rm 1 * -1 + 1
  EXPECT_EQ(out[1], 0x80000000u);  // add.rm
  EXPECT_EQ(out[2], 0x80000000u);  // sub.rm
  EXPECT_EQ(out[3], 0x00000000u);  // add.rp: +0
  EXPECT_EQ(out[4], 0u);           // add.rm.f64: 0x8000000000000000
  EXPECT_EQ(out[5], 0x80000000u);
}

// .relu on the 8-bit float conversions clamps -0 to +0, as every other .relu form does.
TEST(CompilerFloat, MinifloatReluClampsNegativeZero) {
  const char* ptx = R"(.version 8.1
.target sm_89
.address_size 64
.visible .entry relu(.param .u64 out)
{
  .reg .b16 %h<3>;
  .reg .b32 %r<3>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.f32 %f1, 0f80000000;
  mov.f32 %f2, 0fC0000000;
  cvt.rn.satfinite.relu.e4m3x2.f32 %h1, %f1, %f2;
  cvt.rn.satfinite.relu.e5m2x2.f32 %h2, %f1, %f2;
  mov.b16 %h1, 0x8080;
  cvt.rn.relu.f16x2.e4m3x2 %r1, %h1;
  cvt.rn.satfinite.relu.e4m3x2.f32 %h1, %f1, %f2;
  st.global.u16 [%rd1], %h1;
  st.global.u16 [%rd1+2], %h2;
  st.global.u32 [%rd1+4], %r1;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "minifloat_relu");
  ASSERT_TRUE(loaded);
  uint16_t out[4] = {0xffff, 0xffff, 0xffff, 0xffff};
  void* outPtr = out;
  ASSERT_TRUE(launch(*loaded, "relu", {}, {}, {&outPtr}));
  EXPECT_EQ(out[0], 0u);  // e4m3x2 of (-0, -2)
  EXPECT_EQ(out[1], 0u);  // e5m2x2
  EXPECT_EQ(out[2], 0u);  // f16x2 of e4m3 -0, -0
  EXPECT_EQ(out[3], 0u);
}

// setmaxnreg (sm_90a: registers moved between warpgroups) has nothing to do on either target:
// the warp-specialised kernel around it runs.
TEST(CompilerContract, SetMaxNRegIsAccepted) {
  const char* ptx = R"(.version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  setmaxnreg.dec.sync.aligned.u32 40;
  setmaxnreg.inc.sync.aligned.u32 232;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  add.u32 %r2, %r1, 9;
  st.global.u32 [%rd3], %r2;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "setmaxnreg");
  ASSERT_TRUE(loaded);
  uint32_t out[128] = {};
  void* outPtr = out;
  ASSERT_TRUE(launch(*loaded, "k", {}, {128, 1, 1}, {&outPtr}));
  for (uint32_t t = 0; t < 128; ++t) EXPECT_EQ(out[t], t + 9) << t;
}

// A refused (unsupported, not invalid) instruction fails only the kernels that reach it, at
// launch: the module compiles, that kernel's code traps and its KernelInfo says why, naming the
// instruction and its line:column; the module's other kernels are whole.
TEST(CompilerErrors, UnsupportedInstructionFailsOnlyTheKernelsThatReachIt) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.func probe(.param .u64 p)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  isspacep.param %p1, %rd1;
  ret;
}
.visible .entry k(.param .u64 out)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  {
    .param .u64 a;
    st.param.u64 [a], %rd1;
    call.uni probe, (a);
  }
  ret;
}
.visible .entry plain(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  auto result = compileForHost(ptx, "unsupported", {});
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->info.kernels.size(), 2u);
  const std::string& why = result->info.kernels[0].unsupported;
  EXPECT_NE(why.find("isspacep"), std::string::npos) << why;
  EXPECT_NE(why.find("9:3"), std::string::npos) << why;
  EXPECT_NE(why.find("'probe'"), std::string::npos) << why;
  EXPECT_TRUE(result->info.kernels[1].unsupported.empty()) << result->info.kernels[1].unsupported;
  // The PTX front end's own translation still refuses it.
  auto strict = neutralIrText(ptx, "unsupported");
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.error().code, ErrorCode::UnsupportedPtx);
}

// A function that can exit the thread is called directly only: its callers test the exit flag it
// takes (a pointer call could not know to pass one).
TEST(CompilerErrors, AddressOfAFunctionThatExitsIsRefused) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.func leave()
{
  exit;
}
.visible .entry k(.param .u64 out)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, leave;
  st.global.u64 [%rd1], %rd2;
  ret;
}
)";
  auto result = compileForHost(ptx, "exit_pointer", {});
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->info.kernels.size(), 1u);
  const std::string& why = result->info.kernels[0].unsupported;
  EXPECT_NE(why.find("'leave', which can exit the thread"), std::string::npos) << why;
}

// The .v4 special registers read whole (mov.v4.u32 {a, b, c, d}, %tid) give .x, .y, .z and the
// unused fourth component, which reads 0 (as %tid.w does).
TEST(CompilerContract, SpecialRegisterVectorsAndTheirFourthComponent) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.y;
  mad.lo.u32 %r1, %r3, %r2, %r1;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.y;
  mul.lo.u32 %r2, %r2, %r4;
  mad.lo.u32 %r1, %r3, %r2, %r1;
  mul.wide.u32 %rd2, %r1, 68;
  add.u64 %rd1, %rd1, %rd2;
  mov.v4.u32 {%r4, %r5, %r6, %r7}, %tid;
  st.global.v4.u32 [%rd1], {%r4, %r5, %r6, %r7};
  mov.v4.u32 {%r4, %r5, %r6, %r7}, %ntid;
  st.global.v4.u32 [%rd1+16], {%r4, %r5, %r6, %r7};
  mov.v4.u32 {%r4, _, %r6, %r7}, %ctaid;
  st.global.v4.u32 [%rd1+32], {%r4, %r4, %r6, %r7};
  mov.v4.u32 {%r4, %r5, %r6, %r7}, %nctaid;
  st.global.v4.u32 [%rd1+48], {%r4, %r5, %r6, %r7};
  mov.u32 %r8, %tid.w;
  mov.u32 %r9, %nctaid.w;
  add.u32 %r8, %r8, %r9;
  add.u32 %r8, %r8, 5;
  st.global.u32 [%rd1+64], %r8;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "sreg_vectors");
  ASSERT_TRUE(loaded);
  constexpr int kThreads = 4 * 2, kBlocks = 3;
  std::vector<uint32_t> out(kThreads * kBlocks * 17, 0xdeadbeef);
  void* p = out.data();
  ASSERT_TRUE(launch(*loaded, "k", {kBlocks, 1, 1}, {4, 2, 1}, {&p}));
  for (int block = 0; block < kBlocks; ++block)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 4; ++x) {
        const uint32_t* r = &out[((block * kThreads) + y * 4 + x) * 17];
        std::vector<uint32_t> got(r, r + 17);
        std::vector<uint32_t> expected = {
            uint32_t(x),     uint32_t(y), 0, 0,       4, 2, 1, 0, uint32_t(block),
            uint32_t(block), 0,           0, kBlocks, 1, 1, 0, 5};
        EXPECT_EQ(got, expected) << "block " << block << " thread " << x << "," << y;
      }
}

// ld/st .b128 (PTX 8.3) move 16 bytes in every state space, including a .b128 parameter of a
// function and its return value; an ordered or .volatile 128-bit access is refused by name.
TEST(CompilerContract, Loads128BitValuesInEverySpace) {
  const char* ptx = R"(.version 8.3
.target sm_75
.address_size 64
.shared .align 16 .b8 buffer[32];
.func (.param .b128 r) swap_halves(.param .b128 a)
{
  .reg .b128 %q<2>;
  .reg .b64 %rd<3>;
  ld.param.b128 %q1, [a];
  mov.b128 {%rd1, %rd2}, %q1;
  mov.b128 %q1, {%rd2, %rd1};
  st.param.b128 [r], %q1;
  ret;
}
.visible .entry k(.param .u64 out, .param .u64 in)
{
  .reg .b128 %q<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.global.b128 %q1, [%rd2];
  st.shared.b128 [buffer+16], %q1;
  ld.shared.b128 %q2, [buffer+16];
  {
  .param .b128 p0;
  st.param.b128 [p0], %q2;
  .param .b128 rv;
  call.uni (rv), swap_halves, (p0);
  ld.param.b128 %q3, [rv];
  }
  st.global.b128 [%rd1], %q3;
  ld.global.nc.b128 %q1, [%rd2+16];
  st.b128 [%rd1+16], %q1;
  ldu.global.b128 %q1, [%rd2];
  st.global.b128 [%rd1+32], %q1;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "b128");
  ASSERT_TRUE(loaded);
  alignas(16)
      uint64_t in[4] = {0x0123456789abcdefull, 0xfedcba9876543210ull, 7, 0x8000000000000001ull};
  alignas(16) uint64_t out[6] = {};
  void* po = out;
  const void* pi = in;
  ASSERT_TRUE(launch(*loaded, "k", {}, {}, {&po, &pi}));
  EXPECT_EQ(out[0], in[1]);  // halves swapped by the function
  EXPECT_EQ(out[1], in[0]);
  EXPECT_EQ(out[2], in[2]);
  EXPECT_EQ(out[3], in[3]);
  EXPECT_EQ(out[4], in[0]);
  EXPECT_EQ(out[5], in[1]);

  const char* head =
      ".version 8.3\n.target sm_75\n.address_size 64\n"
      ".visible .entry k(.param .u64 p)\n{\n  .reg .b128 %q<2>;\n"
      "  .reg .b64 %rd<2>;\n";
  for (const char* body : {"  ld.relaxed.gpu.global.b128 %q1, [%rd1];\n",
                           "  st.volatile.global.b128 [%rd1], %q1;\n"}) {
    auto refused = compileForHost(std::string(head) + body + "  ret;\n}\n", "ordered128", {});
    ASSERT_TRUE(refused.ok()) << body;
    ASSERT_EQ(refused->info.kernels.size(), 1u);
    EXPECT_NE(refused->info.kernels[0].unsupported.find("128-bit"), std::string::npos)
        << refused->info.kernels[0].unsupported;
  }
}

// Video instructions compile (tests/unit/compiler/conformance/video_test.cpp runs them); a byte
// selector past the word (.b7 on a scalar source), vmad negating both the product and c, and
// .sat with .add on a SIMD form are invalid PTX, reported at the instruction.
TEST(CompilerErrors, BadVideoOperandsAreReported) {
  const char* head =
      ".version 8.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k()\n{\n  .reg .b32 %r<5>;\n";
  auto ok = compileForHost(std::string(head) + "  vadd.s32.u32.s32 %r1, %r2.b0, %r3.h1, %r4;\n" +
                               "  vmad.s32.u32.u32 %r1, -%r2, %r3, %r4;\n  ret;\n}\n",
                           "video", {});
  EXPECT_TRUE(ok.ok()) << (ok.ok() ? "" : ok.error().message);
  const char* bodies[] = {
      "  vadd.s32.u32.s32 %r1, %r2.b7, %r3, %r4;\n",
      "  vmad.s32.s32.s32 %r1, -%r2, %r3, -%r4;\n",
      "  vadd4.u32.u32.u32.sat.add %r1, %r2, %r3, %r4;\n",
  };
  for (const char* body : bodies) {
    auto result = compileForHost(std::string(head) + body + "  ret;\n}\n", "video", {});
    ASSERT_FALSE(result.ok()) << body;
    EXPECT_EQ(result.error().code, ErrorCode::InvalidPtx) << body << result.error().message;
    EXPECT_NE(result.error().message.find("7:3"), std::string::npos) << result.error().message;
  }
}

TEST(CompilerErrors, InvalidPtxGivesDiagnostics) {
  auto result = compileForHost(
      ".version 8.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry k() { bogus.u32 %r1; }\n",
      "bad", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::InvalidPtx);
  EXPECT_FALSE(result.error().message.empty());
}

TEST(CompilerErrors, MissingRuntimeSymbolIsInvalidImage) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %smid;
  st.global.u32 [%rd1], %r1;
  ret;
}
)";
  auto object = compileForHost(ptx, "missing", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  auto code = loadHostCode(*object, {});
  ASSERT_FALSE(code.ok());
  EXPECT_EQ(code.error().code, ErrorCode::InvalidImage);
  EXPECT_NE(code.error().message.find("__rocuda_sreg_smid"), std::string::npos)
      << code.error().message;
}

// An external function nobody provides: the error names it, and only it (the JIT's own lookup
// error would list every symbol of the module it could not materialise).
TEST(CompilerErrors, UnresolvedExternalIsNamedBriefly) {
  std::string ptx = ".version 8.0\n.target sm_75\n.address_size 64\n"
                    ".extern .func (.param .b64 r) NRT_Allocate(.param .b64 n);\n";
  for (int i = 0; i < 50; ++i)
    ptx += ".visible .global .align 4 .u32 counter_with_a_long_name_" + std::to_string(i) + ";\n";
  ptx += R"(.visible .entry k(.param .u64 out)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  {
    .param .b64 n;
    .param .b64 r;
    st.param.b64 [n], 16;
    call.uni (r), NRT_Allocate, (n);
    ld.param.b64 %rd2, [r];
  }
  st.global.u64 [%rd1], %rd2;
  ret;
}
)";
  // Refused as NVIDIA's JIT refuses it, naming the function and the call; nothing is compiled.
  auto object = compileForHost(ptx, "unresolved", {});
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.error().code, ErrorCode::InvalidPtx);
  EXPECT_NE(object.error().message.find("unresolved extern function 'NRT_Allocate'"),
            std::string::npos)
      << object.error().message;
  EXPECT_NE(object.error().message.find("at 63:5"), std::string::npos) << object.error().message;
  EXPECT_EQ(object.error().message.find("counter_with_a_long_name"), std::string::npos)
      << object.error().message;
  EXPECT_LT(object.error().message.size(), 600u) << object.error().message;
}

const char* kContractPtx = R"(.version 8.0
.target sm_75
.address_size 64
.shared .align 4 .b8 buf[64];
.visible .entry contract(.param .u64 out)
{
  .reg .b32 %r<5>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.global.u32 %r4, [%rd1];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %tid.x;
  add.u32 %r3, %r1, %r2;
  mov.u32 %r2, buf;
  st.shared.u32 [%r2+8], %r3;
  bar.sync 0;
  ld.shared.u32 %r3, [buf+8];
  add.u32 %r3, %r3, %r4;
  st.global.u32 [%rd1], %r3;
  ret;
}
)";

TEST(CompilerContract, DumpsNeutralAndHostIr) {
  auto dir = std::filesystem::temp_directory_path() / ("rocuda_dump_" + std::to_string(::getpid()));
  const char* keep = std::getenv("ROCUDA_FILECHECK_DUMP");
  if (keep) dir = keep;
  std::filesystem::create_directories(dir);
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  auto object = compileForHost(kContractPtx, "contract", {});
  ::unsetenv("ROCUDA_DUMP");
  ASSERT_TRUE(object.ok()) << object.error().message;
  ASSERT_EQ(object->info.kernels.size(), 1u);
  EXPECT_TRUE(object->info.kernels[0].usesBarriers);
  EXPECT_EQ(object->info.kernels[0].staticSharedBytes, 64u);
  EXPECT_EQ(object->info.kernels[0].paramBufferSize, 8u);
  EXPECT_EQ(object->info.kernels[0].cpuExecution, CpuExecution::Continuation);
  EXPECT_TRUE(object->info.kernels[0].cpuSlowPathReason.empty());
  std::string neutral = readFile((dir / "contract.ll").string());
  std::string host = readFile((dir / "contract.host.ll").string());
  EXPECT_NE(neutral.find("define void @contract(ptr"), std::string::npos) << neutral;
  EXPECT_NE(neutral.find("call ptr @__rocuda_shared_base()"), std::string::npos);
  // The optimiser merges the two %tid.x reads but keeps the barrier.
  EXPECT_NE(host.find("call void @__rocuda_barrier_sync(i32 0, i32 0)"), std::string::npos) << host;
  size_t first = host.find("call i32 @__rocuda_sreg_tid_x()");
  ASSERT_NE(first, std::string::npos) << host;
  EXPECT_EQ(host.find("call i32 @__rocuda_sreg_tid_x()", first + 1), std::string::npos) << host;
  if (!keep) std::filesystem::remove_all(dir);

  // And it runs: one thread, value 0 + 0 plus what `out` held.
  auto loaded = compileAndLoad(kContractPtx, "contract_run");
  ASSERT_TRUE(loaded);
  uint32_t out = 99;
  void* p = &out;
  ASSERT_TRUE(launch(*loaded, "contract", {}, {1, 1, 1}, {&p}));
  EXPECT_EQ(out, 99u);
}

// A stencil's shape: the border threads copy their input, the others store a computed value,
// both to out[i]. The two stores become one after the if/else before the block forms are built,
// so the work-item loop the vectorizer widens makes one (masked) store per vector, not two.
constexpr const char* kCopyOrComputePtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry copyOrCompute(.param .u64 out, .param .u64 in, .param .u32 n)
{
  .reg .pred %p<4>;
  .reg .f32 %f<4>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd2, %rd3;
  add.s64 %rd5, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  setp.eq.u32 %p2, %r2, 0;
  add.s32 %r3, %r1, -1;
  setp.eq.u32 %p3, %r2, %r3;
  or.pred %p2, %p2, %p3;
  @%p2 bra BORDER;
  ld.global.f32 %f2, [%rd4+4];
  ld.global.f32 %f3, [%rd4+-4];
  add.f32 %f2, %f2, %f3;
  fma.rn.f32 %f2, %f1, 0f3F000000, %f2;
  st.global.f32 [%rd5], %f2;
  bra.uni DONE;
BORDER:
  st.global.f32 [%rd5], %f1;
DONE:
  ret;
}
)";

// The block forms `ptx` compiles to (ROCUDA_DUMP's `<module>.block.ll`), or an empty string
// and a test failure when it does not compile.
std::string blockFormsOf(const char* ptx, const std::string& module) {
  auto dir = std::filesystem::temp_directory_path() /
             ("rocuda_" + module + "_" + std::to_string(::getpid()));
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  auto object = compileForHost(ptx, module, {});
  ::unsetenv("ROCUDA_DUMP");
  std::string block;
  if (object.ok())
    block = readFile((dir / (module + ".block.ll")).string());
  else
    ADD_FAILURE() << object.error().message;
  std::filesystem::remove_all(dir);
  return block;
}

TEST(CompilerBlockForms, IfElseStoresToOnePlaceBecomeOneStore) {
  std::string block = blockFormsOf(kCopyOrComputePtx, "sink");
  size_t start = block.find("define void @__rocuda_block_copyOrCompute(");
  ASSERT_NE(start, std::string::npos) << block;
  std::string body = block.substr(start, block.find("\n}\n", start) - start);
  // The copy is a float store like the computed value (f32 accesses keep their type)...
  EXPECT_EQ(body.find("store i32"), std::string::npos) << body;
  // ...and each vector loop (on hosts with masked stores; the loops may be unrolled into
  // several) makes one of them per vector.
  std::istringstream lines(body);
  std::string line, label;
  std::map<std::string, int> maskedStores;
  while (std::getline(lines, line)) {
    if (!line.empty() && line[0] != ' ' && line.find(':') != std::string::npos)
      label = line.substr(0, line.find(':'));
    if (line.find("@llvm.masked.store") != std::string::npos) ++maskedStores[label];
  }
  for (const auto& [vectorBlock, stores] : maskedStores)
    EXPECT_EQ(stores, 1) << vectorBlock << "\n" << body;

  // And the threads get what they should.
  auto loaded = compileAndLoad(kCopyOrComputePtx, "sink_run");
  ASSERT_TRUE(loaded);
  constexpr uint32_t kN = 77;
  std::vector<float> in(kN + 1), out(kN + 1, -1.0f);
  for (uint32_t i = 0; i < kN; ++i) in[i] = float(i * i % 13);
  float* outPointer = out.data();
  float* inPointer = in.data();
  uint32_t n = kN;
  ASSERT_TRUE(launch(*loaded, "copyOrCompute", {}, {96, 1, 1}, {&outPointer, &inPointer, &n}));
  for (uint32_t i = 0; i < kN; ++i) {
    float expected = i == 0 || i == kN - 1 ? in[i] : in[i] * 0.5f + (in[i + 1] + in[i - 1]);
    EXPECT_EQ(out[i], expected) << i;
  }
  EXPECT_EQ(out[kN], -1.0f);  // threads past n store nothing
}

// A reduction tree (`if (tid < s)` between barriers) and warp leaders' stores after a shfl
// (`if ((tid & 31) == 0)`), as nvcc compiles them: code that only some threads of a round reach.
constexpr const char* kPartialRoundsPtx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry treeSum(.param .u64 treeSum_param_0, .param .u64 treeSum_param_1)
{
  .reg .pred %p<5>;
  .reg .f32 %f<6>;
  .reg .b32 %r<14>;
  .reg .b64 %rd<9>;
  .shared .align 4 .b8 sums[1024];
  ld.param.u64 %rd2, [treeSum_param_0];
  ld.param.u64 %rd1, [treeSum_param_1];
  mov.u32 %r7, %ntid.x;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  mad.lo.s32 %r8, %r1, %r7, %r2;
  cvta.to.global.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r8, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  shl.b32 %r9, %r2, 2;
  mov.u32 %r10, sums;
  add.s32 %r3, %r10, %r9;
  st.shared.f32 [%r3], %f1;
  bar.sync 0;
  shr.u32 %r13, %r7, 1;
  setp.eq.s32 %p1, %r13, 0;
  @%p1 bra $L__BB0_4;
$L__BB0_1:
  setp.ge.u32 %p2, %r2, %r13;
  @%p2 bra $L__BB0_3;
  shl.b32 %r11, %r13, 2;
  add.s32 %r12, %r3, %r11;
  ld.shared.f32 %f2, [%r3];
  ld.shared.f32 %f3, [%r12];
  add.f32 %f4, %f3, %f2;
  st.shared.f32 [%r3], %f4;
$L__BB0_3:
  bar.sync 0;
  shr.u32 %r13, %r13, 1;
  setp.ne.s32 %p3, %r13, 0;
  @%p3 bra $L__BB0_1;
$L__BB0_4:
  setp.ne.s32 %p4, %r2, 0;
  @%p4 bra $L__BB0_6;
  ld.shared.f32 %f5, [sums];
  cvta.to.global.u64 %rd6, %rd1;
  mul.wide.u32 %rd7, %r1, 4;
  add.s64 %rd8, %rd6, %rd7;
  st.global.f32 [%rd8], %f5;
$L__BB0_6:
  ret;
}
.visible .entry warpLeaders(.param .u64 warpLeaders_param_0, .param .u64 warpLeaders_param_1)
{
  .reg .pred %p<4>;
  .reg .f32 %f<5>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<9>;
  .shared .align 4 .b8 warpSums[32];
  ld.param.u64 %rd2, [warpLeaders_param_0];
  ld.param.u64 %rd1, [warpLeaders_param_1];
  mov.u32 %r4, %ntid.x;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  mad.lo.s32 %r5, %r1, %r4, %r2;
  cvta.to.global.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r5, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f1, [%rd5];
  mov.b32 %r6, %f1;
  mov.u32 %r7, 31;
  mov.u32 %r8, 1;
  mov.u32 %r9, -1;
  shfl.sync.down.b32 %r3|%p1, %r6, %r8, %r7, %r9;
  and.b32 %r10, %r2, 31;
  setp.ne.s32 %p2, %r10, 0;
  @%p2 bra $L__BB1_2;
  shr.u32 %r11, %r2, 3;
  and.b32 %r12, %r11, 536870908;
  mov.u32 %r13, warpSums;
  add.s32 %r14, %r13, %r12;
  mov.b32 %f2, %r3;
  add.f32 %f3, %f1, %f2;
  st.shared.f32 [%r14], %f3;
$L__BB1_2:
  bar.sync 0;
  setp.gt.u32 %p3, %r2, 7;
  @%p3 bra $L__BB1_4;
  shl.b32 %r15, %r2, 2;
  mov.u32 %r16, warpSums;
  add.s32 %r17, %r16, %r15;
  ld.shared.f32 %f4, [%r17];
  shl.b32 %r18, %r1, 3;
  add.s32 %r19, %r18, %r2;
  cvta.to.global.u64 %rd6, %rd1;
  mul.wide.u32 %rd7, %r19, 4;
  add.s64 %rd8, %rd6, %rd7;
  st.global.f32 [%rd8], %f4;
$L__BB1_4:
  ret;
}
)";

// The addresses a round reads from the block context (the shared window, the warp-lane arrays)
// leave its work-item loop even when only some threads reach the code that uses them: inside
// the loop, the vectorizer turned each into a gather of one address in every vector
// (bench/cpu_device: the shared-memory reduction took 15 ms, 10 ms since). And a shuffle by a
// constant delta reads contiguous snapshots.
TEST(CompilerBlockForms, PartialRoundsReadTheContextOutsideTheirLoops) {
  std::string block = blockFormsOf(kPartialRoundsPtx, "partial");
  for (const char* round : {"@__rocuda_round_treeSum(", "@__rocuda_round_warpLeaders("}) {
    size_t start = block.find(round);
    ASSERT_NE(start, std::string::npos) << round << "\n" << block;
    std::string body = block.substr(start, block.find("\n}\n", start) - start);
    // The step is inlined without noalias scope markers, calls that touch memory as far as the
    // vectorizer knows, which made it check every pair of accesses at run time and take the
    // scalar loop (the shuffle rounds, SGEMM's).
    EXPECT_EQ(body.find("noalias.scope.decl"), std::string::npos) << body;
    // No vector of pointers is gathered (`llvm.masked.gather.v4p0.v4p0` and the like).
    std::regex pointerGather(R"(masked\.gather\.v[0-9]+p0\.v[0-9]+p0)");
    EXPECT_FALSE(std::regex_search(body, pointerGather)) << body;
    // A shfl down by a constant reads its neighbours' snapshots at affine indices: no gather.
    if (std::string(round).find("warpLeaders") != std::string::npos) {
      EXPECT_EQ(body.find("masked.gather"), std::string::npos) << body;
    }
  }

  // And the tree sums (this runtime runs threads, not rounds; the rounds of both kernels run in
  // the end-to-end programs reduction_shared and warp_shuffle).
  auto loaded = compileAndLoad(kPartialRoundsPtx, "partial_run");
  ASSERT_TRUE(loaded);
  constexpr uint32_t kBlocks = 3, kThreads = 256;
  std::vector<float> in(kBlocks * kThreads);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 7);
  std::vector<float> sums(kBlocks, -1.0f);
  float* inPointer = in.data();
  float* sumsPointer = sums.data();
  ASSERT_TRUE(
      launch(*loaded, "treeSum", {kBlocks, 1, 1}, {kThreads, 1, 1}, {&inPointer, &sumsPointer}));
  for (uint32_t b = 0; b < kBlocks; ++b) {
    float sum = 0;
    for (uint32_t t = 0; t < kThreads; ++t) sum += in[b * kThreads + t];
    EXPECT_EQ(sums[b], sum) << b;
  }
}

// The text of function `name` in an IR dump, or nothing.
std::string roundOf(const std::string& module, const std::string& name) {
  size_t start = module.find("@" + name + "(");
  if (start == std::string::npos) return std::string();
  return module.substr(start, module.find("\n}\n", start) - start);
}

// A warp leader's store after a shfl (`if ((tid & 31) == 0) warpSums[tid / 32] = v`), the
// round's only effect: its loop is unrolled by 32 (host_thread_ranges.cpp:
// unrollPeriodicThreadTests), one store per warp, where the vectorizer had tested every lane of
// every vector and branched to a store per lane (bench/cpu_device's warp-shuffle reduction:
// 3.5-4.7 -> 2.3-2.6 ms). e2e leader_lanes checks the stores for other periods and lanes and for
// blocks that are not a multiple of the period.
TEST(CompilerBlockForms, WarpLeadersStoreOncePerWarp) {
  std::string block = blockFormsOf(kPartialRoundsPtx, "leaders");
  std::string leaders = roundOf(block, "__rocuda_round_warpLeaders");
  ASSERT_FALSE(leaders.empty()) << block;
  EXPECT_FALSE(std::regex_search(leaders, std::regex(R"(extractelement <[0-9]+ x i1>)")))
      << leaders;
  EXPECT_EQ(leaders.find("pred.store"), std::string::npos) << leaders;
  EXPECT_EQ(leaders.find("masked.scatter"), std::string::npos) << leaders;
  // The unrolled loop steps by a warp.
  EXPECT_TRUE(std::regex_search(leaders, std::regex(R"(add nuw nsw i64 %[^ ]+, 32\n)"))) << leaders;
}

// An mbarrier's arrivals (cuda::barrier's arrive_and_wait, through a generic address as libcu++
// gives it) update the block's own shared memory: on the CPU device, whose block runs on one
// host thread, they are plain loads and stores, not a locked compare-and-swap per thread (a
// cuda::barrier matmul spent a fifth of its time in `lock cmpxchg`). e2e async_barriers checks
// the barriers' results.
constexpr const char* kMBarrierPtx = R"(
.version 8.0
.target sm_80
.address_size 64
.visible .entry arriveWait(.param .u64 out)
{
  .shared .align 8 .b64 bar;
  .reg .pred %p<3>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  setp.ne.s32 %p1, %r1, 0;
  @%p1 bra $L__INIT_DONE;
  mbarrier.init.shared.b64 [bar], %r2;
$L__INIT_DONE:
  bar.sync 0;
  mov.u64 %rd2, bar;
  cvta.shared.u64 %rd3, %rd2;
  mbarrier.arrive.b64 %rd4, [%rd3];
$L__WAIT:
  mbarrier.test_wait.b64 %p2, [%rd3], %rd4;
  @!%p2 bra $L__WAIT;
  cvta.to.global.u64 %rd5, %rd1;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd5, %rd5, %rd2;
  st.global.u32 [%rd5], %r1;
  ret;
}
)";

TEST(CompilerBlockForms, MBarrierArrivalsAreBlockPrivate) {
  std::string block = blockFormsOf(kMBarrierPtx, "mbarrier_private");
  ASSERT_NE(block.find("@__rocuda_round_arriveWait"), std::string::npos) << block;
  EXPECT_EQ(block.find("cmpxchg"), std::string::npos) << block;
}

// Appended to kPartialRoundsPtx: odd lanes wait at one __syncwarp, even lanes at another (as
// e2e round_codes does), so its first round ends with mixed codes.
constexpr const char* kOddEvenWaitsPtx = R"(
.visible .entry oddEven(.param .u64 oddEven_param_0)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [oddEven_param_0];
  mov.u32 %r1, %tid.x;
  and.b32 %r2, %r1, 1;
  setp.eq.s32 %p1, %r2, 0;
  @%p1 bra $L__EVEN;
  bar.warp.sync -1431655766;
  mov.u32 %r3, 1;
  bra.uni $L__JOIN;
$L__EVEN:
  bar.warp.sync 1431655765;
  mov.u32 %r3, 2;
$L__JOIN:
  bar.sync 0;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd2, %rd2, %rd3;
  st.global.u32 [%rd2], %r3;
  ret;
}
)";

// The round function the runtime calls runs from block barrier to block barrier (and shuffle
// to shuffle) by itself, copying the uniform slots (a tree's `s`) at each barrier; a memcheck build
// returns at every barrier, where the runtime counts it for the race check. e2e round_codes checks
// the codes of rounds that end mixed, as bytes and as i32.
TEST(CompilerBlockForms, RoundsGoOnFromBarrierToBarrier) {
  auto dir =
      std::filesystem::temp_directory_path() / ("rocuda_chain_" + std::to_string(::getpid()));
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  CompileOptions checked;
  checked.memcheck = true;
  std::string ptx = std::string(kPartialRoundsPtx) + kOddEvenWaitsPtx;
  auto object = compileForHost(ptx, "chained", {});
  auto checkedObject = compileForHost(ptx, "checked", checked);
  ::unsetenv("ROCUDA_DUMP");
  ASSERT_TRUE(object.ok()) << object.error().message;
  ASSERT_TRUE(checkedObject.ok()) << checkedObject.error().message;
  std::string block = readFile((dir / "chained.block.ll").string());
  std::string chain = roundOf(block, "__rocuda_round_treeSum");
  ASSERT_FALSE(chain.empty()) << block;
  // Its one round is inlined into that loop (no call, no prologue per barrier).
  EXPECT_EQ(block.find("@__rocuda_round_treeSum.one("), std::string::npos) << block;
  EXPECT_NE(chain.find("%resume = lshr i32"), std::string::npos) << chain;
  EXPECT_NE(chain.find("load volatile i32"), std::string::npos) << chain;  // the uniform copy
  // The runtime reads the threads' codes only after a round that ends with them mixed; every
  // round of the tree ends with one code (its barrier's, then the end), so none is stored (a
  // loop of stores per tree level, over the threads that do not add: 2.4-4.6 -> 1.6-2.4 ms in
  // bench/cpu_device's shared-memory reduction).
  const std::string& round = chain;
  std::regex byteCodeStore(R"(store (<[0-9]+ x )?i8)");
  EXPECT_FALSE(std::regex_search(round, byteCodeStore)) << round;
  // Odd and even lanes at two __syncwarp sites: that round stores its threads' codes as bytes
  // (a kernel with few waits), in loops, not as calls of the C library's memset (slower than the
  // loop for a block's few threads).
  std::string oddEven = roundOf(block, "__rocuda_round_oddEven");
  ASSERT_FALSE(oddEven.empty()) << block;
  EXPECT_TRUE(std::regex_search(oddEven, byteCodeStore)) << oddEven;
  EXPECT_EQ(block.find("llvm.memset"), std::string::npos) << block;
  // The first round prefetches the next block's input (host_prefetch.cpp: prefetchNextBlocks).
  EXPECT_NE(round.find("call void @llvm.prefetch"), std::string::npos) << round;
  // A kernel with shuffles completes them in the chain too: the lane arrays swap places.
  std::string leaders = roundOf(block, "__rocuda_round_warpLeaders");
  ASSERT_FALSE(leaders.empty()) << block;
  EXPECT_NE(leaders.find("\nshfl:"), std::string::npos) << leaders;
  std::string checkedBlock = readFile((dir / "checked.block.ll").string());
  std::filesystem::remove_all(dir);
  std::string single = roundOf(checkedBlock, "__rocuda_round_treeSum");
  ASSERT_FALSE(single.empty()) << checkedBlock;
  EXPECT_EQ(checkedBlock.find("__rocuda_round_treeSum.one"), std::string::npos);
  EXPECT_NE(single.find("switch i32"), std::string::npos) << single;
}

// A kernel without parameters: the optimiser drops the one round's unused parameters argument,
// and its codes argument is still found (by name), so that a round whose threads all reach the
// barrier stores no codes either (before, the fourth argument was taken for it).
TEST(CompilerBlockForms, RoundsOfAKernelWithoutParametersStoreNoCommonCodes) {
  const char* ptx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .entry noParameters()
{
  .shared .align 4 .b32 slots[256];
  .reg .b32 %r<6>;
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, slots;
  add.u32 %r4, %r3, %r2;
  st.shared.u32 [%r4], %r1;
  bar.sync 0;
  ld.shared.u32 %r5, [%r4];
  add.u32 %r5, %r5, 1;
  bar.sync 0;
  st.shared.u32 [%r4], %r5;
  ret;
}
)";
  auto dir =
      std::filesystem::temp_directory_path() / ("rocuda_no_params_" + std::to_string(::getpid()));
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  auto object = compileForHost(ptx, "noparams", {});
  ::unsetenv("ROCUDA_DUMP");
  ASSERT_TRUE(object.ok()) << object.error().message;
  std::string block = readFile((dir / "noparams.block.ll").string());
  std::filesystem::remove_all(dir);
  std::string round = roundOf(block, "__rocuda_round_noParameters");
  ASSERT_FALSE(round.empty()) << block;
  EXPECT_FALSE(std::regex_search(round, std::regex(R"(store (<[0-9]+ x )?i8)"))) << round;
}

// A tree round's `if (tid < s)` and the leader's `if (tid == 0)` split the rounds' work-item
// loops where their answers change (host_thread_ranges.cpp): the threads that pass add whole
// vectors, the others only record their next wait; no thread's work is masked (a 256-thread
// round at s = 4 ran 32 masked vectors; bench/cpu_device's shared-memory reduction took 9.7 ms,
// 6.6 ms since). The e2e program thread_ranges checks every kind of test against CUDA's answer.
TEST(CompilerBlockForms, ThreadIndexTestsSplitWorkItemLoops) {
  auto top =
      std::filesystem::temp_directory_path() / ("rocuda_ranges_" + std::to_string(::getpid()));
  auto dir = top / "made_by_the_dump";  // ROCUDA_DUMP creates a missing directory
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  auto object = compileForHost(kPartialRoundsPtx, "ranges", {});
  ::unsetenv("ROCUDA_DUMP");
  ASSERT_TRUE(object.ok()) << object.error().message;
  std::string block = readFile((dir / "ranges.block.ll").string());
  std::filesystem::remove_all(top);
  size_t start = block.find("@__rocuda_round_treeSum(");
  ASSERT_NE(start, std::string::npos) << block;
  std::string body = block.substr(start, block.find("\n}\n", start) - start);
  EXPECT_EQ(body.find("llvm.masked."), std::string::npos) << body;
  // The tree's adds are whole vectors.
  EXPECT_TRUE(std::regex_search(body, std::regex(R"(fadd <[0-9]+ x float>)"))) << body;
}

// bench/cpu_device's transpose as nvcc compiles it: each access tests its column (the global
// index, i64 once LLVM widens it) and its row (the same for a row of threads) with one `or`.
constexpr const char* kTransposePtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry transpose(.param .u64 inp, .param .u64 outp, .param .u32 width,
                          .param .u32 height)
{
  .reg .pred %p<25>;
  .reg .f32 %f<9>;
  .reg .b32 %r<35>;
  .reg .b64 %rd<21>;
  .shared .align 4 .b8 tile[4224];
  ld.param.u64 %rd4, [inp];
  ld.param.u64 %rd3, [outp];
  ld.param.u32 %r17, [width];
  ld.param.u32 %r18, [height];
  cvta.to.global.u64 %rd1, %rd4;
  mov.u32 %r19, %ctaid.x;
  shl.b32 %r1, %r19, 5;
  mov.u32 %r2, %tid.x;
  add.s32 %r3, %r1, %r2;
  mov.u32 %r20, %ctaid.y;
  shl.b32 %r4, %r20, 5;
  mov.u32 %r5, %tid.y;
  add.s32 %r6, %r4, %r5;
  setp.ge.s32 %p1, %r3, %r17;
  mov.u32 %r21, tile;
  mad.lo.s32 %r22, %r5, 132, %r21;
  shl.b32 %r23, %r2, 2;
  add.s32 %r7, %r22, %r23;
  setp.ge.s32 %p2, %r6, %r18;
  or.pred %p3, %p1, %p2;
  @%p3 bra ROW1;
  mad.lo.s32 %r24, %r6, %r17, %r3;
  mul.wide.s32 %rd5, %r24, 4;
  add.s64 %rd6, %rd1, %rd5;
  ld.global.f32 %f1, [%rd6];
  st.shared.f32 [%r7], %f1;
ROW1:
  add.s32 %r8, %r6, 8;
  setp.ge.s32 %p5, %r8, %r18;
  or.pred %p6, %p1, %p5;
  @%p6 bra ROW2;
  mad.lo.s32 %r25, %r8, %r17, %r3;
  mul.wide.s32 %rd7, %r25, 4;
  add.s64 %rd8, %rd1, %rd7;
  ld.global.f32 %f2, [%rd8];
  st.shared.f32 [%r7+1056], %f2;
ROW2:
  add.s32 %r9, %r6, 16;
  setp.ge.s32 %p8, %r9, %r18;
  or.pred %p9, %p1, %p8;
  @%p9 bra ROW3;
  mad.lo.s32 %r26, %r9, %r17, %r3;
  mul.wide.s32 %rd9, %r26, 4;
  add.s64 %rd10, %rd1, %rd9;
  ld.global.f32 %f3, [%rd10];
  st.shared.f32 [%r7+2112], %f3;
ROW3:
  add.s32 %r10, %r6, 24;
  setp.ge.s32 %p11, %r10, %r18;
  or.pred %p12, %p1, %p11;
  @%p12 bra LOADED;
  mad.lo.s32 %r27, %r10, %r17, %r3;
  mul.wide.s32 %rd11, %r27, 4;
  add.s64 %rd12, %rd1, %rd11;
  ld.global.f32 %f4, [%rd12];
  st.shared.f32 [%r7+3168], %f4;
LOADED:
  cvta.to.global.u64 %rd2, %rd3;
  bar.sync 0;
  add.s32 %r11, %r4, %r2;
  setp.ge.s32 %p13, %r11, %r18;
  add.s32 %r12, %r1, %r5;
  setp.ge.s32 %p14, %r12, %r17;
  mad.lo.s32 %r29, %r2, 132, %r21;
  shl.b32 %r30, %r5, 2;
  add.s32 %r13, %r29, %r30;
  or.pred %p15, %p13, %p14;
  @%p15 bra OUT1;
  ld.shared.f32 %f5, [%r13];
  mad.lo.s32 %r31, %r12, %r18, %r11;
  mul.wide.s32 %rd13, %r31, 4;
  add.s64 %rd14, %rd2, %rd13;
  st.global.f32 [%rd14], %f5;
OUT1:
  add.s32 %r14, %r12, 8;
  setp.ge.s32 %p17, %r14, %r17;
  or.pred %p18, %p13, %p17;
  @%p18 bra OUT2;
  ld.shared.f32 %f6, [%r13+32];
  mad.lo.s32 %r32, %r14, %r18, %r11;
  mul.wide.s32 %rd15, %r32, 4;
  add.s64 %rd16, %rd2, %rd15;
  st.global.f32 [%rd16], %f6;
OUT2:
  add.s32 %r15, %r12, 16;
  setp.ge.s32 %p20, %r15, %r17;
  or.pred %p21, %p13, %p20;
  @%p21 bra OUT3;
  ld.shared.f32 %f7, [%r13+64];
  mad.lo.s32 %r33, %r15, %r18, %r11;
  mul.wide.s32 %rd17, %r33, 4;
  add.s64 %rd18, %rd2, %rd17;
  st.global.f32 [%rd18], %f7;
OUT3:
  add.s32 %r16, %r12, 24;
  setp.ge.s32 %p23, %r16, %r17;
  or.pred %p24, %p13, %p23;
  @%p24 bra DONE;
  ld.shared.f32 %f8, [%r13+96];
  mad.lo.s32 %r34, %r16, %r18, %r11;
  mul.wide.s32 %rd19, %r34, 4;
  add.s64 %rd20, %rd2, %rd19;
  st.global.f32 [%rd20], %f8;
DONE:
  ret;
}
)";

// The transpose's row tests hold for a whole row of a 2-D block's threads or for none: each pass's
// work-item loop gets a copy with them answered (host_thread_ranges.cpp versionUniformTests) and
// its column test split away, so that every row's copy stores whole vectors (before, every row
// but the first was a masked vector: the transpose took 15 ms, 12.3-13.8 since). e2e uniform_tests
// checks the answers at the edges.
TEST(CompilerBlockForms, RowTestsGetAnUnmaskedCopy) {
  std::string block = blockFormsOf(kTransposePtx, "rows");
  std::string round = roundOf(block, "__rocuda_round_transpose");
  ASSERT_FALSE(round.empty()) << block;
  // Four rows loaded into the tile and four stored to `out`, as plain vector stores in the copies
  // (16 of them with this LLVM, unrolled; 8 when the second pass's column test, widened to i64,
  // was not split; 2 without the copies), besides the originals' masked ones.
  std::regex plainStore(R"(\n\s*store <[0-9]+ x float>)");
  auto stores = std::distance(std::sregex_iterator(round.begin(), round.end(), plainStore),
                              std::sregex_iterator());
  EXPECT_GE(stores, 16) << round;
}

// `if (i < n && in[i] == key) *flag = 1` as nvcc compiles it: a store to one address under a
// test each thread makes.
constexpr const char* kAnyEqualPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry anyEqual(.param .u64 inp, .param .u64 flagp, .param .f32 key, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .f32 %f<3>;
  .reg .b32 %r<7>;
  .reg .b64 %rd<7>;
  ld.param.u64 %rd1, [inp];
  ld.param.u64 %rd2, [flagp];
  ld.param.f32 %f1, [key];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r4, %r3, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  ld.global.f32 %f2, [%rd5];
  setp.neu.f32 %p2, %f2, %f1;
  @%p2 bra DONE;
  cvta.to.global.u64 %rd6, %rd2;
  mov.u32 %r6, 1;
  st.global.u32 [%rd6], %r6;
DONE:
  ret;
}
)";

// The vectorizer's predicated stores to one address become one store under an `or` of every
// lane's test, which x86 code generation would make a branch per lane; it is one
// llvm.vector.reduce.or (host_codegen.cpp: reduceLaneTests). Then the flag is set exactly when
// some element matches.
TEST(CompilerBlockForms, LaneTestsOfOneStoreAreOneReduction) {
  std::string forms = blockFormsOf(kAnyEqualPtx, "lane_tests");
  std::string block = roundOf(forms, "__rocuda_block_anyEqual");
  ASSERT_FALSE(block.empty()) << forms;
  EXPECT_NE(block.find("@llvm.vector.reduce.or.v"), std::string::npos) << block;
  EXPECT_FALSE(std::regex_search(block, std::regex(R"(extractelement <[0-9]+ x i1>)"))) << block;

  auto loaded = compileAndLoad(kAnyEqualPtx, "lane_tests_run");
  ASSERT_TRUE(loaded);
  constexpr int kCount = 1000;  // 4 blocks of 256, the last one partly past the end
  std::vector<float> in(kCount);
  for (int i = 0; i < kCount; ++i) in[i] = float(i);
  float* inPointer = in.data();
  int n = kCount;
  for (float key : {-1.0f, 0.0f, 255.0f, 513.0f, 999.0f, 1000.0f}) {
    int flag = 0;
    int* flagPointer = &flag;
    ASSERT_TRUE(
        launch(*loaded, "anyEqual", {4, 1, 1}, {256, 1, 1}, {&inPointer, &flagPointer, &key, &n}));
    EXPECT_EQ(flag, key >= 0.0f && key < kCount ? 1 : 0) << key;
  }
}

// sm_100's packed pairs of f32 (`add/sub/mul/fma.f32x2`): each element of a 64-bit register's
// pair (the first in the low half) with the instruction's rounding and .ftz.
constexpr const char* kPackedPairsPtx = R"(.version 8.8
.target sm_100
.address_size 64
.visible .entry pairs(.param .u64 in, .param .u64 out)
{
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.global.u64 %rd3, [%rd1];
  ld.global.u64 %rd4, [%rd1+8];
  ld.global.u64 %rd5, [%rd1+16];
  add.rn.f32x2 %rd6, %rd3, %rd4;
  sub.rz.f32x2 %rd7, %rd3, %rd4;
  add.rp.f32x2 %rd8, %rd3, %rd4;
  add.rm.f32x2 %rd9, %rd3, %rd4;
  mul.rn.ftz.f32x2 %rd10, %rd3, %rd4;
  fma.rn.f32x2 %rd11, %rd3, %rd4, %rd5;
  mul.f32x2 %rd12, %rd3, %rd4;
  st.global.u64 [%rd2], %rd6;
  st.global.u64 [%rd2+8], %rd7;
  st.global.u64 [%rd2+16], %rd8;
  st.global.u64 [%rd2+24], %rd9;
  st.global.u64 [%rd2+32], %rd10;
  st.global.u64 [%rd2+40], %rd11;
  st.global.u64 [%rd2+48], %rd12;
  ret;
}
)";

TEST(CompilerFloat, PackedF32PairsRoundEachElement) {
  auto loaded = compileAndLoad(kPackedPairsPtx, "pairs");
  ASSERT_TRUE(loaded);
  // a = {1, 1e-40 (subnormal)}, b = {1e-8, 3}, c = {0.25, -2}: the sums and differences are
  // inexact, so each directed rounding shows.
  float in[6] = {1.0f, 1e-40f, 1e-8f, 3.0f, 0.25f, -2.0f};
  float out[14];
  std::fill(std::begin(out), std::end(out), -1.0f);
  const float* inPointer = in;
  float* outPointer = out;
  ASSERT_TRUE(launch(*loaded, "pairs", {1, 1, 1}, {1, 1, 1}, {&inPointer, &outPointer}));
  const float want[14] = {1.0f + 1e-8f,
                          1e-40f + 3.0f,  // add.rn
                          std::nextafter(1.0f, 0.0f),
                          std::nextafter(-3.0f, 0.0f),  // sub.rz
                          std::nextafter(1.0f, 2.0f),
                          std::nextafter(3.0f, 4.0f),  // add.rp
                          1.0f,
                          3.0f,  // add.rm
                          1e-8f,
                          0.0f,  // mul.ftz: 1e-40 -> 0
                          std::fma(1.0f, 1e-8f, 0.25f),
                          std::fma(1e-40f, 3.0f, -2.0f),  // fma.rn
                          1e-8f,
                          1e-40f * 3.0f};  // mul keeps subnormals
  for (int i = 0; i < 14; ++i) EXPECT_EQ(out[i], want[i]) << "element " << i;
  EXPECT_FALSE(std::signbit(out[9]));
  EXPECT_NE(out[13], 0.0f);
}

// A 5-point stencil as nvcc compiles it: the border copies its input, `x == 0 || y == 0 ||
// x == width - 1 || y == height - 1`, x the global index in x.
constexpr const char* kStencilPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry stencil5(.param .u64 in, .param .u64 out, .param .u32 width, .param .u32 height)
{
  .reg .pred %p<11>;
  .reg .f32 %f<11>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<13>;
  ld.param.u64 %rd6, [in];
  ld.param.u64 %rd5, [out];
  ld.param.u32 %r3, [width];
  ld.param.u32 %r4, [height];
  cvta.to.global.u64 %rd1, %rd6;
  mov.u32 %r5, %ntid.x;
  mov.u32 %r6, %ctaid.x;
  mov.u32 %r7, %tid.x;
  mad.lo.s32 %r1, %r6, %r5, %r7;
  mov.u32 %r8, %ntid.y;
  mov.u32 %r9, %ctaid.y;
  mov.u32 %r10, %tid.y;
  mad.lo.s32 %r2, %r9, %r8, %r10;
  setp.ge.s32 %p1, %r1, %r3;
  setp.ge.s32 %p2, %r2, %r4;
  or.pred %p3, %p1, %p2;
  @%p3 bra DONE;
  mad.lo.s32 %r11, %r2, %r3, %r1;
  setp.eq.s32 %p4, %r2, 0;
  setp.eq.s32 %p5, %r1, 0;
  or.pred %p6, %p5, %p4;
  add.s32 %r12, %r3, -1;
  setp.eq.s32 %p7, %r1, %r12;
  or.pred %p8, %p6, %p7;
  add.s32 %r13, %r4, -1;
  setp.eq.s32 %p9, %r2, %r13;
  or.pred %p10, %p8, %p9;
  cvt.s64.s32 %rd2, %r11;
  mul.wide.s32 %rd7, %r11, 4;
  add.s64 %rd3, %rd1, %rd7;
  ld.global.f32 %f1, [%rd3];
  cvta.to.global.u64 %rd8, %rd5;
  add.s64 %rd4, %rd8, %rd7;
  @%p10 bra BORDER;
  bra.uni INTERIOR;
BORDER:
  st.global.f32 [%rd4], %f1;
  bra.uni DONE;
INTERIOR:
  cvt.u32.u64 %r14, %rd2;
  ld.global.f32 %f2, [%rd3+4];
  ld.global.f32 %f3, [%rd3+-4];
  add.f32 %f4, %f3, %f2;
  sub.s32 %r15, %r14, %r3;
  mul.wide.s32 %rd9, %r15, 4;
  add.s64 %rd10, %rd1, %rd9;
  ld.global.f32 %f5, [%rd10];
  add.f32 %f6, %f4, %f5;
  mul.wide.s32 %rd11, %r3, 4;
  add.s64 %rd12, %rd3, %rd11;
  ld.global.f32 %f7, [%rd12];
  add.f32 %f8, %f6, %f7;
  mul.f32 %f9, %f8, 0f3E000000;
  fma.rn.f32 %f10, %f1, 0f3F000000, %f9;
  st.global.f32 [%rd4], %f10;
DONE:
  ret;
}
)";

// bench/cpu_device's tiled SGEMM as nvcc compiles it: each pass over k loads a 16 x 16 tile of a
// and of b at an offset t the kernel carries across its barriers.
constexpr const char* kSgemmPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry sgemm_tiled(
  .param .u64 sgemm_tiled_param_0,
  .param .u64 sgemm_tiled_param_1,
  .param .u64 sgemm_tiled_param_2,
  .param .u32 sgemm_tiled_param_3,
  .param .u32 sgemm_tiled_param_4,
  .param .u32 sgemm_tiled_param_5
)
{
  .reg .pred %p<4>;
  .reg .f32 %f<57>;
  .reg .b32 %r<30>;
  .reg .b64 %rd<20>;
  .shared .align 4 .b8 _ZZ11sgemm_tiledE5tileA[1024];
  .shared .align 4 .b8 _ZZ11sgemm_tiledE5tileB[1024];
  ld.param.u64 %rd8, [sgemm_tiled_param_0];
  ld.param.u64 %rd9, [sgemm_tiled_param_1];
  ld.param.u64 %rd10, [sgemm_tiled_param_2];
  ld.param.u32 %r12, [sgemm_tiled_param_3];
  ld.param.u32 %r13, [sgemm_tiled_param_4];
  ld.param.u32 %r14, [sgemm_tiled_param_5];
  mov.u32 %r15, %ctaid.y;
  shl.b32 %r16, %r15, 4;
  mov.u32 %r1, %tid.y;
  add.s32 %r2, %r16, %r1;
  mov.u32 %r17, %ctaid.x;
  shl.b32 %r3, %r17, 4;
  mov.u32 %r4, %tid.x;
  setp.lt.s32 %p1, %r14, 1;
  mov.f32 %f56, 0f00000000;
  @%p1 bra $L__BB6_3;
  shl.b32 %r19, %r1, 6;
  mov.u32 %r20, _ZZ11sgemm_tiledE5tileA;
  add.s32 %r7, %r20, %r19;
  shl.b32 %r21, %r4, 2;
  add.s32 %r5, %r7, %r21;
  mov.u32 %r22, _ZZ11sgemm_tiledE5tileB;
  add.s32 %r23, %r22, %r19;
  add.s32 %r6, %r23, %r21;
  add.s32 %r8, %r22, %r21;
  mad.lo.s32 %r24, %r1, %r13, %r4;
  add.s32 %r25, %r24, %r3;
  cvta.to.global.u64 %rd11, %rd9;
  mul.wide.s32 %rd12, %r25, 4;
  add.s64 %rd19, %rd11, %rd12;
  shl.b32 %r26, %r13, 4;
  mul.wide.s32 %rd2, %r26, 4;
  mad.lo.s32 %r27, %r14, %r2, %r4;
  cvta.to.global.u64 %rd13, %rd8;
  mul.wide.s32 %rd14, %r27, 4;
  add.s64 %rd18, %rd13, %rd14;
  mov.f32 %f56, 0f00000000;
  mov.u32 %r29, 0;
$L__BB6_2:
  ld.global.f32 %f6, [%rd18];
  st.shared.f32 [%r5], %f6;
  ld.global.f32 %f7, [%rd19];
  st.shared.f32 [%r6], %f7;
  bar.sync 0;
  ld.shared.f32 %f8, [%r8];
  ld.shared.f32 %f9, [%r7];
  fma.rn.f32 %f10, %f9, %f8, %f56;
  ld.shared.f32 %f11, [%r8+64];
  ld.shared.f32 %f12, [%r7+4];
  fma.rn.f32 %f13, %f12, %f11, %f10;
  ld.shared.f32 %f14, [%r8+128];
  ld.shared.f32 %f15, [%r7+8];
  fma.rn.f32 %f16, %f15, %f14, %f13;
  ld.shared.f32 %f17, [%r8+192];
  ld.shared.f32 %f18, [%r7+12];
  fma.rn.f32 %f19, %f18, %f17, %f16;
  ld.shared.f32 %f20, [%r8+256];
  ld.shared.f32 %f21, [%r7+16];
  fma.rn.f32 %f22, %f21, %f20, %f19;
  ld.shared.f32 %f23, [%r8+320];
  ld.shared.f32 %f24, [%r7+20];
  fma.rn.f32 %f25, %f24, %f23, %f22;
  ld.shared.f32 %f26, [%r8+384];
  ld.shared.f32 %f27, [%r7+24];
  fma.rn.f32 %f28, %f27, %f26, %f25;
  ld.shared.f32 %f29, [%r8+448];
  ld.shared.f32 %f30, [%r7+28];
  fma.rn.f32 %f31, %f30, %f29, %f28;
  ld.shared.f32 %f32, [%r8+512];
  ld.shared.f32 %f33, [%r7+32];
  fma.rn.f32 %f34, %f33, %f32, %f31;
  ld.shared.f32 %f35, [%r8+576];
  ld.shared.f32 %f36, [%r7+36];
  fma.rn.f32 %f37, %f36, %f35, %f34;
  ld.shared.f32 %f38, [%r8+640];
  ld.shared.f32 %f39, [%r7+40];
  fma.rn.f32 %f40, %f39, %f38, %f37;
  ld.shared.f32 %f41, [%r8+704];
  ld.shared.f32 %f42, [%r7+44];
  fma.rn.f32 %f43, %f42, %f41, %f40;
  ld.shared.f32 %f44, [%r8+768];
  ld.shared.f32 %f45, [%r7+48];
  fma.rn.f32 %f46, %f45, %f44, %f43;
  ld.shared.f32 %f47, [%r8+832];
  ld.shared.f32 %f48, [%r7+52];
  fma.rn.f32 %f49, %f48, %f47, %f46;
  ld.shared.f32 %f50, [%r8+896];
  ld.shared.f32 %f51, [%r7+56];
  fma.rn.f32 %f52, %f51, %f50, %f49;
  ld.shared.f32 %f53, [%r8+960];
  ld.shared.f32 %f54, [%r7+60];
  fma.rn.f32 %f56, %f54, %f53, %f52;
  bar.sync 0;
  add.s64 %rd19, %rd19, %rd2;
  add.s64 %rd18, %rd18, 64;
  add.s32 %r29, %r29, 16;
  setp.lt.s32 %p2, %r29, %r14;
  @%p2 bra $L__BB6_2;
$L__BB6_3:
  setp.ge.s32 %p3, %r2, %r12;
  add.s32 %r11, %r3, %r4;
  @%p3 bra $L__BB6_5;
  mad.lo.s32 %r28, %r2, %r13, %r11;
  cvta.to.global.u64 %rd15, %rd10;
  mul.wide.s32 %rd16, %r28, 4;
  add.s64 %rd17, %rd15, %rd16;
  st.global.f32 [%rd17], %f56;
$L__BB6_5:
  ret;
}
)";

// Each row of a 2D block's threads prefetches the lines the same row of the next block reads
// and writes (host_prefetch.cpp: prefetchNextBlockRowsIn), in a block of its own that only 2D
// blocks enter: the transpose's rows of `in` and of `out` (for writing), in its rounds; the
// stencil's three rows of `in` (in[i - 1], in[i] and in[i + 1] one line pair) and its row of
// `out`, in its block loop, and not its row of `out` in its streaming form. Then the stencil
// runs, its last blocks prefetching past the arrays.
TEST(CompilerBlockForms, TwoDimensionalRowsPrefetchTheNextBlock) {
  auto prefetchesIn = [](const std::string& function) {
    // Per prefetch.row block: {reads, writes}.
    std::vector<std::pair<int, int>> rows;
    std::regex label(R"(\nprefetch\.row[0-9]*(\.i)?:)");  // .i: inlined into the round function
    for (auto it = std::sregex_iterator(function.begin(), function.end(), label);
         it != std::sregex_iterator(); ++it) {
      size_t start = it->position() + it->length();
      std::string body = function.substr(start, function.find("\n\n", start) - start);
      auto count = [&](const std::string& call) {
        int n = 0;
        for (size_t at = body.find(call); at != std::string::npos; at = body.find(call, at + 1))
          ++n;
        return n;
      };
      // Into the L2 cache (locality 2), the output's lines too, marked as for writing.
      int writes = count("i32 0, i32 2, i32 1), !rocuda.prefetch.for_writing");
      rows.push_back({count("i32 0, i32 2, i32 1)") - writes, writes});
    }
    return rows;
  };
  std::string transposeForms = blockFormsOf(kTransposePtx, "row_prefetch");
  std::string round = roundOf(transposeForms, "__rocuda_round_transpose");
  ASSERT_FALSE(round.empty()) << transposeForms;
  bool reads = false, writes = false;
  for (auto [read, write] : prefetchesIn(round)) {
    reads |= read > 0;
    writes |= write > 0;
  }
  EXPECT_TRUE(reads && writes) << round;

  std::string stencilForms = blockFormsOf(kStencilPtx, "row_prefetch_stencil");
  std::string block = roundOf(stencilForms, "__rocuda_block_stencil5");
  ASSERT_FALSE(block.empty()) << stencilForms;
  auto rows = prefetchesIn(block);
  ASSERT_FALSE(rows.empty()) << block;
  bool interior = false;
  for (auto [read, write] : rows) {
    EXPECT_LE(read, 6) << block;  // three rows at most, each its first and last line
    EXPECT_LE(write, 2) << block;
    interior |= read == 6 && write == 2;
  }
  EXPECT_TRUE(interior) << block;
  // The streaming form writes its output past the caches: it has no prefetches of it.
  std::string streaming = roundOf(stencilForms, "__rocuda_streaming_stencil5");
  ASSERT_FALSE(streaming.empty()) << stencilForms;
  EXPECT_NE(streaming.find("call void @llvm.prefetch"), std::string::npos) << streaming;
  EXPECT_EQ(streaming.find("rocuda.prefetch.for_writing"), std::string::npos) << streaming;

  // An address from a value the kernel carries across a wait is not prefetched: the next block
  // starts its passes at t = 0, not at this block's t. SGEMM's rows read ahead only in the first
  // pass (t = 0 there, a constant: b's row of the next block's tile) and write ahead c's row.
  std::string sgemmForms = blockFormsOf(kSgemmPtx, "row_prefetch_sgemm");
  std::string sgemm = roundOf(sgemmForms, "__rocuda_round_sgemm_tiled");
  ASSERT_FALSE(sgemm.empty()) << sgemmForms;
  int readingRows = 0, writingRows = 0;
  for (auto [read, write] : prefetchesIn(sgemm)) {
    readingRows += read > 0;
    writingRows += write > 0;
  }
  EXPECT_EQ(readingRows, 1) << sgemm;
  EXPECT_GE(writingRows, 1) << sgemm;

  auto loaded = compileAndLoad(kStencilPtx, "row_prefetch_run");
  ASSERT_TRUE(loaded);
  constexpr int kWidth = 96, kHeight = 40;  // 3 x 5 blocks of 32 x 8
  std::vector<float> in(kWidth * kHeight), out(in.size(), -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float((i * 7) % 13);
  float* inPointer = in.data();
  float* outPointer = out.data();
  int width = kWidth, height = kHeight;
  ASSERT_TRUE(launch(*loaded, "stencil5", {3, 5, 1}, {32, 8, 1},
                     {&inPointer, &outPointer, &width, &height}));
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      int i = y * kWidth + x;
      float want = in[i];
      if (x > 0 && y > 0 && x < kWidth - 1 && y < kHeight - 1)
        want = std::fma(in[i], 0.5f,
                        ((in[i - 1] + in[i + 1]) + in[i - kWidth] + in[i + kWidth]) * 0.125f);
      ASSERT_EQ(out[i], want) << x << "," << y;
    }
}

// The stencil's column tests are equality tests of the global index: true for at most one
// thread of a row, and for none in every block but a row's first and last. The row loop gets a
// copy with them answered, entered when neither value is among the row's indices
// (host_thread_ranges.cpp), whose neighbour loads are plain vectors, not masks (2 plain
// vector loads of floats in the block function before, the copy's 5 more since). It runs against
// a host reference on a grid of interior, edge and partial blocks.
TEST(CompilerBlockForms, EdgeColumnTestsGetAnUnmaskedCopy) {
  std::string block = blockFormsOf(kStencilPtx, "edges");
  std::string body = roundOf(block, "__rocuda_block_stencil5");
  ASSERT_FALSE(body.empty()) << block;
  std::regex plainLoad(R"(= load <[0-9]+ x float>)");
  auto loads = std::distance(std::sregex_iterator(body.begin(), body.end(), plainLoad),
                             std::sregex_iterator());
  EXPECT_GE(loads, 7) << body;

  auto loaded = compileAndLoad(kStencilPtx, "edges_run");
  ASSERT_TRUE(loaded);
  const int width = 101, height = 37;  // 4 x 5 blocks of 32 x 8: every kind of block
  std::vector<float> in(width * height), out(width * height, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 7) % 23);
  const float* inPointer = in.data();
  float* outPointer = out.data();
  ASSERT_TRUE(launch(*loaded, "stencil5", {4, 5, 1}, {32, 8, 1},
                     {&inPointer, &outPointer, &width, &height}));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      int i = y * width + x;
      float want = in[i];
      if (x != 0 && y != 0 && x != width - 1 && y != height - 1)
        want =
            std::fma(in[i], 0.5f, 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]));
      ASSERT_EQ(out[i], want) << "x " << x << " y " << y;
    }
}

// A grid-stride loop between two barriers, as nvcc compiles a shared-memory histogram's, and the
// same loop after a store of the thread's start (which the interchange must not run again).
constexpr const char* kStrideRoundsPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry histogram(.param .u64 data, .param .u64 bins, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b16 %rs<2>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b8 local[1024];
  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [bins];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  shl.b32 %r3, %r2, 2;
  mov.u32 %r4, local;
  add.s32 %r5, %r4, %r3;
  mov.u32 %r6, 0;
  st.shared.u32 [%r5], %r6;
  mov.u32 %r7, %ntid.x;
  bar.sync 0;
  mov.u32 %r8, %ctaid.x;
  mad.lo.s32 %r9, %r8, %r7, %r2;
  setp.ge.s32 %p1, %r9, %r1;
  @%p1 bra DONE;
  mov.u32 %r10, %nctaid.x;
  mul.lo.s32 %r11, %r10, %r7;
LOOP:
  cvt.s64.s32 %rd3, %r9;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u8 %rs1, [%rd4];
  mul.wide.u16 %r12, %rs1, 4;
  add.s32 %r13, %r4, %r12;
  atom.shared.add.u32 %r14, [%r13], 1;
  add.s32 %r9, %r9, %r11;
  setp.lt.s32 %p2, %r9, %r1;
  @%p2 bra LOOP;
DONE:
  bar.sync 0;
  ld.shared.u32 %r15, [%r5];
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd2, %rd5;
  red.global.add.u32 [%rd6], %r15;
  ret;
}
.visible .entry storesFirst(.param .u64 data, .param .u64 bins, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b16 %rs<2>;
  .reg .b32 %r<16>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b8 local2[1024];
  ld.param.u64 %rd1, [data];
  ld.param.u64 %rd2, [bins];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.u32 %r4, local2;
  mov.u32 %r7, %ntid.x;
  bar.sync 0;
  mov.u32 %r8, %ctaid.x;
  mad.lo.s32 %r9, %r8, %r7, %r2;
  mul.wide.u32 %rd5, %r2, 4;
  add.s64 %rd6, %rd2, %rd5;
  st.global.u32 [%rd6], %r9;
  setp.ge.s32 %p1, %r9, %r1;
  @%p1 bra DONE;
  mov.u32 %r10, %nctaid.x;
  mul.lo.s32 %r11, %r10, %r7;
LOOP:
  cvt.s64.s32 %rd3, %r9;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u8 %rs1, [%rd4];
  mul.wide.u16 %r12, %rs1, 4;
  add.s32 %r13, %r4, %r12;
  atom.shared.add.u32 %r14, [%r13], 1;
  add.s32 %r9, %r9, %r11;
  setp.lt.s32 %p2, %r9, %r1;
  @%p2 bra LOOP;
DONE:
  bar.sync 0;
  ret;
}
)";

// A round's work-item loop and the grid-stride loop in it are interchanged
// (host_stride_interchange.cpp): passes that take one iteration of every thread, so that the
// block reads consecutive bytes (bench/cpu_device's histogram: 12-40 ms, 4.1-4.6 ms since).
// Not where code before the loop has effects. e2e grid_stride_barriers checks the answers
// (this runtime runs threads, not rounds), including indices near the ends of their types' ranges.
TEST(CompilerBlockForms, StrideLoopsInRoundsAreInterchanged) {
  std::string block = blockFormsOf(kStrideRoundsPtx, "strides");
  std::string histogram = roundOf(block, "__rocuda_round_histogram");
  std::string storesFirst = roundOf(block, "__rocuda_round_storesFirst");
  ASSERT_FALSE(histogram.empty()) << block;
  ASSERT_FALSE(storesFirst.empty()) << block;
  EXPECT_TRUE(std::regex_search(histogram, std::regex(R"(%stride\.pass\.index(\.i)? = phi)")))
      << histogram;
  // Each pass prefetches the bytes the block reads a few passes ahead.
  EXPECT_NE(histogram.find("call void @llvm.prefetch"), std::string::npos) << histogram;
  // The bytes are addressed with the induction's exact 64-bit value, not by sign-extending its
  // 32-bit truncation per byte (`shl 32` + `ashr exact 32`: half the byte loop's instructions).
  EXPECT_EQ(histogram.find("ashr exact i64"), std::string::npos) << histogram;
  EXPECT_EQ(storesFirst.find("%stride.pass.index"), std::string::npos) << storesFirst;
}

// A block-wide shfl with constant operands, one whose source lane is a register, and a barrier.
constexpr const char* kShuffleSitesPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry shuffles(.param .u64 out)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  shfl.sync.down.b32 %r2, %r1, 4, 31, -1;
  and.b32 %r3, %r2, 7;
  shfl.sync.idx.b32 %r4, %r2, %r3, 31, 65535;
  bar.sync 0;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd2, %rd1, %rd2;
  st.global.u32 [%rd2], %r4;
  ret;
}
)";

// A warp collective's op and its constant operands belong to the wait (KernelInfo::
// cpuWarpSites), not to each lane's posts: the runtime supplies them when it needs a lane's
// request, and a round of a block-wide shfl stores one value per lane.
TEST(CompilerBlockForms, WarpCollectiveConstantsAreTheWaitSites) {
  auto object = compileForHost(kShuffleSitesPtx, "sites", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  ASSERT_EQ(object->info.kernels.size(), 1u);
  const KernelInfo& kernel = object->info.kernels[0];
  ASSERT_EQ(kernel.cpuExecution, CpuExecution::Continuation);
  ASSERT_EQ(kernel.cpuWarpSites.size(), 3u);
  using Site = WarpWaitSite;
  const Site& down = kernel.cpuWarpSites[0];
  EXPECT_EQ(down.op, 1);
  EXPECT_EQ(down.constants, Site::kMode | Site::kB | Site::kC | Site::kMask);
  EXPECT_EQ(down.mode, 1);  // PTX's shfl modes: up, down, bfly, idx
  EXPECT_EQ(down.b, 4);
  EXPECT_EQ(down.c, 31);
  EXPECT_EQ(down.mask, 0xffffffffu);
  const Site& indexed = kernel.cpuWarpSites[1];
  EXPECT_EQ(indexed.op, 1);
  EXPECT_EQ(indexed.constants, Site::kMode | Site::kC | Site::kMask);  // the lane is posted
  EXPECT_EQ(indexed.mode, 3);
  EXPECT_EQ(indexed.mask, 0xffffu);
  EXPECT_EQ(kernel.cpuWarpSites[2].op, -1);  // the barrier
}

// A tiled loop as nvcc writes it: the thread's address into `a` is an induction stepped by 64
// bytes a trip (strength-reduced), the loop waits at two barriers.
constexpr const char* kSteppedAddressPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry tiles(.param .u64 a, .param .u64 out, .param .u32 k)
{
  .reg .pred %p<2>;
  .reg .f32 %f<4>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b8 tile[1024];
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [k];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %ctaid.x;
  mad.lo.s32 %r4, %r3, %r1, %r2;
  cvta.to.global.u64 %rd3, %rd1;
  mul.wide.s32 %rd4, %r4, 4;
  add.s64 %rd5, %rd3, %rd4;
  mov.u32 %r5, tile;
  shl.b32 %r6, %r2, 2;
  add.s32 %r7, %r5, %r6;
  mov.f32 %f1, 0f00000000;
  mov.u32 %r8, 0;
$L_loop:
  ld.global.f32 %f2, [%rd5];
  st.shared.f32 [%r7], %f2;
  bar.sync 0;
  ld.shared.f32 %f3, [tile];
  add.f32 %f1, %f1, %f3;
  bar.sync 0;
  add.s64 %rd5, %rd5, 64;
  add.s32 %r8, %r8, 16;
  setp.lt.s32 %p1, %r8, %r1;
  @%p1 bra $L_loop;
  mov.u32 %r9, %ntid.x;
  mad.lo.s32 %r10, %r3, %r9, %r2;
  mul.wide.u32 %rd6, %r10, 4;
  add.s64 %rd7, %rd2, %rd6;
  st.global.f32 [%rd7], %f1;
  ret;
}
)";

// An induction of a loop that waits is its start plus a count of the trips times its step: the
// start is recomputed from the thread's indices after each wait and the count is block-uniform,
// so the loads are contiguous vectors, not gathers through pointers kept in the frames (SGEMM's
// tile loads: half its time on AMD Zen 5).
TEST(CompilerBlockForms, LoopsThatWaitCountTheirTrips) {
  std::string block = blockFormsOf(kSteppedAddressPtx, "trips");
  std::string round = roundOf(block, "__rocuda_round_tiles");
  ASSERT_FALSE(round.empty()) << block;
  EXPECT_EQ(round.find("masked.gather"), std::string::npos) << round;
  EXPECT_NE(round.find("load <8 x float>"), std::string::npos) << round;
  // The threads' frames keep the sum only: no 8-byte address per thread (the counts are in the
  // block-uniform slots).
  std::string body = roundOf(block, "__rocuda_step_tiles");
  ASSERT_FALSE(body.empty()) << block;
  EXPECT_FALSE(std::regex_search(body, std::regex(R"(store i64 [^,]+, ptr %frame)"))) << body;
  EXPECT_TRUE(std::regex_search(body, std::regex(R"(store i64 [^,]+, ptr %uniform)"))) << body;
}

// A tree reduction in shared memory as nvcc writes it (bench/cpu_device's reduce_shared):
// `for (s = blockDim.x / 2; s > 0; s >>= 1) { if (tid < s) sums[tid] += sums[tid + s];
// __syncthreads(); }`.
constexpr const char* kTreeReductionPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry tree(.param .u64 in, .param .u64 out)
{
  .reg .pred %p<4>;
  .reg .f32 %f<5>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<6>;
  .shared .align 4 .b8 sums[4096];
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %ntid.x;
  mov.u32 %r2, %tid.x;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  shl.b32 %r3, %r2, 2;
  mov.u32 %r4, sums;
  add.s32 %r5, %r4, %r3;
  st.shared.f32 [%r5], %f1;
  bar.sync 0;
  shr.u32 %r6, %r1, 1;
  setp.eq.s32 %p1, %r6, 0;
  @%p1 bra DONE;
LEVEL:
  setp.ge.u32 %p2, %r2, %r6;
  @%p2 bra WAIT;
  shl.b32 %r7, %r6, 2;
  add.s32 %r8, %r5, %r7;
  ld.shared.f32 %f2, [%r5];
  ld.shared.f32 %f3, [%r8];
  add.f32 %f4, %f3, %f2;
  st.shared.f32 [%r5], %f4;
WAIT:
  bar.sync 0;
  shr.u32 %r6, %r6, 1;
  setp.ne.s32 %p3, %r6, 0;
  @%p3 bra LEVEL;
DONE:
  setp.ne.s32 %p1, %r2, 0;
  @%p1 bra END;
  ld.shared.f32 %f2, [sums];
  st.global.f32 [%rd2], %f2;
END:
  ret;
}
)";

// The level `s` lives across the barrier in a block-uniform slot; its reloads keep the range the
// loop gives it (at most blockDim.x, 1,024), so the levels' loops over the threads need no checks
// that `tid + s` does not wrap (with any 32-bit `s` each level tested it before its vector loop).
TEST(CompilerBlockForms, ShrinkingLoopValuesKeepTheirRangeAcrossBarriers) {
  std::string block = blockFormsOf(kTreeReductionPtx, "tree");
  std::string step = roundOf(block, "__rocuda_step_tree");
  ASSERT_FALSE(step.empty()) << block;
  std::smatch reload;
  ASSERT_TRUE(std::regex_search(step, reload,
                                std::regex(R"(load i32, ptr %uniform[^\n]*!range (![0-9]+))")))
      << step;
  std::smatch bounds;
  ASSERT_TRUE(std::regex_search(block, bounds,
                                std::regex(reload[1].str() + R"( = !\{i32 0, i32 ([0-9]+)\})")))
      << block;
  EXPECT_LE(std::stoul(bounds[1].str()), 1025u) << reload[0];
  std::string round = roundOf(block, "__rocuda_round_tree");
  ASSERT_FALSE(round.empty()) << block;
  EXPECT_NE(round.find("<8 x float>"), std::string::npos) << round;
  EXPECT_EQ(round.find("scevcheck"), std::string::npos) << round;
  EXPECT_EQ(round.find("overflow"), std::string::npos) << round;
}

// Warp reductions as nvcc writes them: a float sum shuffled down by 16..1, a signed max over a
// butterfly of two steps, and a sum whose middle value is stored too (two chains).
constexpr const char* kShuffleChainsPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry chains(.param .u64 out)
{
  .reg .f32 %f<12>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  cvt.rn.f32.u32 %f1, %r1;
  mov.b32 %r2, %f1;
  shfl.sync.down.b32 %r3, %r2, 16, 31, -1;
  mov.b32 %f2, %r3;
  add.f32 %f3, %f1, %f2;
  mov.b32 %r4, %f3;
  shfl.sync.down.b32 %r5, %r4, 8, 31, -1;
  mov.b32 %f4, %r5;
  add.f32 %f5, %f3, %f4;
  mov.b32 %r6, %f5;
  shfl.sync.down.b32 %r7, %r6, 4, 31, -1;
  mov.b32 %f6, %r7;
  add.f32 %f7, %f5, %f6;
  mov.b32 %r8, %f7;
  shfl.sync.down.b32 %r9, %r8, 2, 31, -1;
  mov.b32 %f8, %r9;
  add.f32 %f9, %f7, %f8;
  mov.b32 %r10, %f9;
  shfl.sync.down.b32 %r11, %r10, 1, 31, -1;
  mov.b32 %f10, %r11;
  add.f32 %f11, %f9, %f10;
  shfl.sync.bfly.b32 %r12, %r1, 1, 31, -1;
  max.s32 %r13, %r1, %r12;
  shfl.sync.bfly.b32 %r14, %r13, 2, 31, -1;
  max.s32 %r15, %r13, %r14;
  shfl.sync.down.b32 %r16, %r1, 16, 31, -1;
  add.s32 %r17, %r1, %r16;
  shfl.sync.down.b32 %r18, %r17, 8, 31, -1;
  add.s32 %r19, %r17, %r18;
  shfl.sync.down.b32 %r20, %r19, 4, 31, -1;
  add.s32 %r21, %r19, %r20;
  shfl.sync.down.b32 %r22, %r21, 2, 31, -1;
  add.s32 %r23, %r21, %r22;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f11;
  st.global.u32 [%rd3+4], %r15;
  st.global.u32 [%rd3+8], %r23;
  st.global.u32 [%rd3+12], %r19;
  ret;
}
)";

// Each chain is one wait whose site holds its mode, schedule and combination (compiler.h).
TEST(CompilerBlockForms, ShuffleChainsAreOneWait) {
  auto object = compileForHost(kShuffleChainsPtx, "chains", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  ASSERT_EQ(object->info.kernels.size(), 1u);
  const KernelInfo& kernel = object->info.kernels[0];
  ASSERT_EQ(kernel.cpuExecution, CpuExecution::Continuation);
  using Op = ShuffleChainOp;
  struct Expected {
    int32_t mode;
    std::vector<uint32_t> offsets;
    Op op;
  };
  const Expected expected[] = {{1, {16, 8, 4, 2, 1}, Op::FAdd},
                               {2, {1, 2}, Op::SMax},
                               {1, {16, 8}, Op::Add},
                               {1, {4, 2}, Op::Add}};
  ASSERT_EQ(kernel.cpuWarpSites.size(), std::size(expected));
  for (size_t i = 0; i < std::size(expected); ++i) {
    const WarpWaitSite& site = kernel.cpuWarpSites[i];
    EXPECT_EQ(site.op, 10) << i;
    EXPECT_EQ(site.mode, expected[i].mode) << i;
    EXPECT_EQ(site.b, shuffleChainSchedule(expected[i].offsets.data(),
                                           static_cast<uint32_t>(expected[i].offsets.size())))
        << i;
    EXPECT_EQ(site.c, static_cast<int32_t>(expected[i].op)) << i;
    EXPECT_EQ(site.mask, 0xffffffffu) << i;
  }
}

// bench/cpu_device's warp-shuffle reduction as nvcc writes it: the value summed is a phi (two
// guarded loads), then a chain, a leader's store and a barrier.
constexpr const char* kPhiChainPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry phiChain(.param .u64 in, .param .u64 out, .param .u32 n)
{
  .reg .pred %p<4>;
  .reg .f32 %f<16>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b8 sums[32];
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x;
  mov.f32 %f1, 0f00000000;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra SKIP;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
SKIP:
  mov.b32 %r3, %f1;
  shfl.sync.down.b32 %r4, %r3, 16, 31, -1;
  mov.b32 %f2, %r4;
  add.f32 %f3, %f1, %f2;
  mov.b32 %r5, %f3;
  shfl.sync.down.b32 %r6, %r5, 8, 31, -1;
  mov.b32 %f4, %r6;
  add.f32 %f5, %f3, %f4;
  and.b32 %r7, %r2, 31;
  setp.ne.u32 %p2, %r7, 0;
  @%p2 bra DONE;
  shr.u32 %r8, %r2, 3;
  mov.u32 %r9, sums;
  add.s32 %r10, %r9, %r8;
  st.shared.f32 [%r10], %f5;
DONE:
  bar.sync 0;
  setp.ne.u32 %p3, %r2, 0;
  @%p3 bra END;
  ld.shared.f32 %f6, [sums];
  st.global.f32 [%rd2], %f6;
END:
  ret;
}
)";

// The chain's first value is read before the wait, never after it: no thread keeps a frame
// (what the rewrites left unused had kept the phi live across the wait, a frame slot stored
// per thread each block). The chain's loop over whole warps tests no lanes; a block ending
// inside a warp takes a separate step with the tests (CpuBlockForms.ShuffleChainsInWholeAnd
// ShortWarps runs both).
TEST(CompilerBlockForms, ShuffleChainsOfAPhiNeedNoFrame) {
  auto object = compileForHost(kPhiChainPtx, "phiChain", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  ASSERT_EQ(object->info.kernels.size(), 1u);
  EXPECT_EQ(object->info.kernels[0].cpuExecution, CpuExecution::Continuation);
  EXPECT_EQ(object->info.kernels[0].cpuFrameBytes, 0u);
  std::string block = blockFormsOf(kPhiChainPtx, "phiChain");
  std::string round = roundOf(block, "__rocuda_round_phiChain");
  ASSERT_FALSE(round.empty()) << block;
  size_t whole = round.find("\nshfl.chain.warp:");
  size_t partial = round.find("\nshfl.chain.partial:");
  ASSERT_NE(whole, std::string::npos) << round;
  ASSERT_NE(partial, std::string::npos) << round;
  std::string wholeLoop = round.substr(whole, round.find("\n\n", whole + 1) - whole);
  std::string partialStep = round.substr(partial, round.find("\n\n", partial + 1) - partial);
  EXPECT_EQ(wholeLoop.find("select"), std::string::npos) << wholeLoop;
  EXPECT_NE(partialStep.find("select"), std::string::npos) << partialStep;
}

// Chains whose result only lanes 0 read: under `%laneid == 0` (lane 0 of each warp), under
// `(%tid.x & 31) == 0` (lane 0 where blockDim.x is a multiple of 32), and under both a lane test
// and an unguarded store (every lane).
constexpr const char* kLaneZeroChainsPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry leaders(.param .u64 out)
{
  .reg .pred %p<3>;
  .reg .b32 %r<20>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %laneid;
  shfl.sync.down.b32 %r3, %r1, 2, 31, -1;
  add.s32 %r4, %r1, %r3;
  shfl.sync.down.b32 %r5, %r4, 1, 31, -1;
  add.s32 %r6, %r4, %r5;
  shfl.sync.bfly.b32 %r7, %r1, 1, 31, -1;
  max.s32 %r8, %r1, %r7;
  shfl.sync.bfly.b32 %r9, %r8, 2, 31, -1;
  max.s32 %r10, %r8, %r9;
  shfl.sync.down.b32 %r11, %r1, 4, 31, -1;
  or.b32 %r12, %r1, %r11;
  shfl.sync.down.b32 %r13, %r12, 2, 31, -1;
  or.b32 %r14, %r12, %r13;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3+8], %r14;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra NOT_LANE_ZERO;
  st.global.u32 [%rd3], %r6;
  st.global.u32 [%rd3+12], %r14;
NOT_LANE_ZERO:
  and.b32 %r15, %r1, 31;
  setp.eq.u32 %p2, %r15, 0;
  @!%p2 bra DONE;
  st.global.u32 [%rd3+4], %r10;
DONE:
  ret;
}
)";

// The chains' schedules say which threads read their results (compiler.h), so that the steps
// compute lane 0's alone there; CpuBlockForms and e2e warp_reduce_chains run them.
TEST(CompilerBlockForms, ShuffleChainsReadByLanesZeroSaySo) {
  auto object = compileForHost(kLaneZeroChainsPtx, "leaders", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  const KernelInfo& kernel = object->info.kernels[0];
  ASSERT_EQ(kernel.cpuWarpSites.size(), 3u);
  const uint32_t twoOne[] = {2, 1}, oneTwo[] = {1, 2}, fourTwo[] = {4, 2};
  EXPECT_EQ(kernel.cpuWarpSites[0].b,
            shuffleChainSchedule(twoOne, 2) | kShuffleChainReadByLaneZero);
  EXPECT_EQ(kernel.cpuWarpSites[1].b,
            shuffleChainSchedule(oneTwo, 2) | kShuffleChainReadByXLaneZero);
  EXPECT_EQ(kernel.cpuWarpSites[2].b, shuffleChainSchedule(fourTwo, 2));
  // The first chain's loop over whole warps stores lane 0's result, not a warp's.
  std::string round =
      roundOf(blockFormsOf(kLaneZeroChainsPtx, "leaders"), "__rocuda_round_leaders");
  size_t whole = round.find("\nshfl.chain.warp:");
  ASSERT_NE(whole, std::string::npos) << round;
  std::string wholeLoop = round.substr(whole, round.find("\n\n", whole + 1) - whole);
  EXPECT_NE(wholeLoop.find("store i32 "), std::string::npos) << wholeLoop;
  EXPECT_EQ(wholeLoop.find("store <32 x i32>"), std::string::npos) << wholeLoop;
}

// out[i] = in[i] * 2: a block function of loads and stores, which gets a streaming form whose
// vector stores are non-temporal; the ordinary form keeps ordinary stores.
constexpr const char* kDoublePtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry twice(.param .u64 in, .param .u64 out)
{
  .reg .f32 %f<3>;
  .reg .b32 %r<5>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  mul.wide.s32 %rd3, %r4, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.rn.f32 %f2, %f1, %f1;
  st.global.f32 [%rd5], %f2;
  ret;
}
)";

TEST(CompilerBlockForms, LoadsAndStoresGetAStreamingForm) {
  auto object = compileForHost(kDoublePtx, "twice", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  EXPECT_EQ(object->info.kernels[0].cpuStreamingStoreBytes, 4u);
  std::string block = blockFormsOf(kDoublePtx, "twice");
  std::string ordinary = roundOf(block, "__rocuda_block_twice");
  std::string streaming = roundOf(block, "__rocuda_streaming_twice");
  ASSERT_FALSE(ordinary.empty()) << block;
  ASSERT_FALSE(streaming.empty()) << block;
  EXPECT_EQ(ordinary.find("!nontemporal"), std::string::npos) << ordinary;
  EXPECT_TRUE(std::regex_search(streaming, std::regex(R"(store <\d+ x float> .*!nontemporal)")))
      << streaming;
}

// A grid-stride loop (`for (i = tid + ctaid * ntid; i < n; i += ntid * nctaid)`) and a loop with
// a constant step.
constexpr const char* kStrideLoopsPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry gridStride(.param .u64 y, .param .u64 x, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .f32 %f<4>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [y];
  ld.param.u64 %rd2, [x];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  mov.u32 %r6, %nctaid.x;
  mul.lo.s32 %r7, %r6, %r3;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
LOOP:
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  add.s64 %rd5, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  ld.global.f32 %f2, [%rd5];
  fma.rn.f32 %f3, %f1, 0f40000000, %f2;
  st.global.f32 [%rd5], %f3;
  add.s32 %r5, %r5, %r7;
  setp.lt.s32 %p2, %r5, %r1;
  @%p2 bra LOOP;
DONE:
  ret;
}
.visible .entry recordsStart(.param .u64 y, .param .u64 starts, .param .u32 n)
{
  .reg .pred %p<3>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [y];
  ld.param.u64 %rd2, [starts];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  mov.u32 %r6, %nctaid.x;
  mul.lo.s32 %r7, %r6, %r3;
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
LOOP:
  mul.wide.s32 %rd5, %r5, 4;
  add.s64 %rd6, %rd1, %rd5;
  st.global.u32 [%rd6], %r4;
  add.s32 %r5, %r5, %r7;
  setp.lt.s32 %p2, %r5, %r1;
  @%p2 bra LOOP;
DONE:
  ret;
}
.visible .entry constantStep(.param .u64 y, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [y];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, 0;
LOOP:
  mul.wide.s32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  add.s32 %r2, %r2, 8;
  setp.lt.s32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  ret;
}
)";

// A BlockLoop kernel's stride loop gets a lockstep form where its work-item loop cannot be
// interchanged with it (host_stride_interchange.cpp): recordsStart stores before its loop, code
// the passes would run again. gridStride's BlockLoop form is interchanged, which beats the
// lockstep form's rounds (a round per iteration): it has none.
TEST(CompilerBlockForms, StrideLoopsGetALockstepForm) {
  auto object = compileForHost(kStrideLoopsPtx, "stride", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  const KernelInfo* recordsStart = object->info.findKernel("recordsStart");
  const KernelInfo* gridStride = object->info.findKernel("gridStride");
  const KernelInfo* constantStep = object->info.findKernel("constantStep");
  ASSERT_NE(recordsStart, nullptr);
  ASSERT_NE(gridStride, nullptr);
  ASSERT_NE(constantStep, nullptr);
  EXPECT_EQ(recordsStart->cpuExecution, CpuExecution::BlockLoop);
  EXPECT_TRUE(recordsStart->cpuLockstep);
  // Its one stride loop is in no other loop: its iterations are counted in a block-uniform slot
  // and the index computed from the count and the start (countStrideIterations), which is
  // recomputed from the thread's indices after each wait: nothing is kept per thread.
  EXPECT_GT(recordsStart->cpuLockstepUniformFrameBytes, 0u);
  EXPECT_EQ(recordsStart->cpuLockstepFrameBytes, 0u);
  EXPECT_EQ(gridStride->cpuExecution, CpuExecution::BlockLoop);
  EXPECT_FALSE(gridStride->cpuLockstep);
  EXPECT_EQ(constantStep->cpuExecution, CpuExecution::BlockLoop);
  EXPECT_FALSE(constantStep->cpuLockstep);
  auto code = loadHostCode(*object, testRuntimeSymbols());
  ASSERT_TRUE(code.ok()) << code.error().message;
  EXPECT_NE((*code)->lookup(blockLoopSymbol("recordsStart")), nullptr);
  EXPECT_NE((*code)->lookup(roundSymbol(lockstepName("recordsStart"))), nullptr);
  EXPECT_NE((*code)->lookup(continuationSymbol(lockstepName("recordsStart"))), nullptr);
  EXPECT_NE((*code)->lookup(blockLoopSymbol("gridStride")), nullptr);
  EXPECT_EQ((*code)->lookup(roundSymbol(lockstepName("gridStride"))), nullptr);
  EXPECT_EQ((*code)->lookup(continuationSymbol(lockstepName("gridStride"))), nullptr);
  EXPECT_EQ((*code)->lookup(roundSymbol(lockstepName("constantStep"))), nullptr);
}

// A kernel that is one grid-stride loop gets a flat form (host_block_forms.cpp: buildFlatForm):
// its extent function gives the loop's iteration count for launches it suits, -1 for the others,
// and the flat function runs a range of the iterations.
TEST(CompilerBlockForms, GridStrideLoopsGetAFlatForm) {
  auto object = compileForHost(kStrideLoopsPtx, "flat", {});
  ASSERT_TRUE(object.ok()) << object.error().message;
  EXPECT_TRUE(object->info.findKernel("gridStride")->cpuFlat);
  EXPECT_FALSE(object->info.findKernel("constantStep")->cpuFlat);  // not the grid's stride
  auto code = loadHostCode(*object, testRuntimeSymbols());
  ASSERT_TRUE(code.ok()) << code.error().message;
  using Extent = int64_t (*)(void*, BlockContext*);
  using Flat = void (*)(void*, BlockContext*, int64_t, int64_t);
  auto extent = reinterpret_cast<Extent>((*code)->lookup(flatExtentSymbol("gridStride")));
  auto flat = reinterpret_cast<Flat>((*code)->lookup(flatSymbol("gridStride")));
  ASSERT_NE(extent, nullptr);
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ((*code)->lookup(flatSymbol("constantStep")), nullptr);

  struct Params {
    float* y;
    const float* x;
    int32_t n;
  } params{nullptr, nullptr, 5000};
  auto launchExtent = [&](std::array<uint32_t, 3> block, std::array<uint32_t, 3> grid) {
    BlockContext context{};
    for (int i = 0; i < 3; ++i) {
      context.ntid[i] = block[i];
      context.nctaid[i] = grid[i];
    }
    context.threadCount = block[0] * block[1] * block[2];
    return extent(&params, &context);
  };
  EXPECT_EQ(launchExtent({256, 1, 1}, {4, 1, 1}), 5000);
  EXPECT_EQ(launchExtent({32, 1, 1}, {1, 1, 1}), 5000);
  EXPECT_EQ(launchExtent({128, 2, 1}, {4, 1, 1}), -1);   // every row takes every index
  EXPECT_EQ(launchExtent({128, 1, 1}, {4, 2, 1}), -1);
  params.n = -7;
  EXPECT_EQ(launchExtent({256, 1, 1}, {4, 1, 1}), 0);
  params.n = INT32_MAX - 100;  // the last thread's index would wrap past n
  EXPECT_EQ(launchExtent({256, 1, 1}, {4, 1, 1}), -1);
  params.n = INT32_MAX - 1023;
  EXPECT_EQ(launchExtent({256, 1, 1}, {4, 1, 1}), INT32_MAX - 1023);

  // Iterations [100, 300) of y = 2x + y (no longer than the grid's 256 threads).
  constexpr int kN = 400;
  std::vector<float> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) {
    x[i] = float(i);
    y[i] = float(i % 7);
  }
  params = {y.data(), x.data(), kN};
  BlockContext context{};
  context.ntid[0] = 128;
  context.nctaid[0] = 2;
  context.ntid[1] = context.ntid[2] = context.nctaid[1] = context.nctaid[2] = 1;
  context.threadCount = 128;
  flat(&params, &context, 100, 300);
  for (int i = 0; i < kN; ++i)
    EXPECT_EQ(y[i], i >= 100 && i < 300 ? 2.0f * i + float(i % 7) : float(i % 7)) << i;
}

TEST(CompilerContract, BranchesLoopsAndLocalDepot) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry sumTo(.param .u64 out, .param .u32 n)
{
  .local .align 8 .b8 __local_depot0[16];
  .reg .b64 %SP;
  .reg .b64 %SPL;
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  mov.u64 %SPL, __local_depot0;
  cvta.local.u64 %SP, %SPL;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r5, WARP_SZ;
  sub.u32 %r2, %r5, 32;
  mov.u32 %r3, 0;
$L_loop:
  setp.ge.u32 %p1, %r3, %r1;
  @%p1 bra $L_done;
  add.u32 %r2, %r2, %r3;
  add.u32 %r3, %r3, 1;
  bra.uni $L_loop;
$L_done:
  add.u64 %rd2, %SP, 4;
  st.u32 [%rd2], %r2;
  ld.local.u32 %r4, [%SPL+4];
  st.global.u32 [%rd1], %r4;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "loop");
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->object.info.kernels[0].localBytesPerThread, 16u);
  EXPECT_FALSE(loaded->object.info.kernels[0].usesBarriers);
  for (uint32_t n : {0u, 1u, 10u, 1000u}) {
    uint32_t out = 0;
    void* p = &out;
    ASSERT_TRUE(launch(*loaded, "sumTo", {}, {}, {&p, &n}));
    EXPECT_EQ(out, n == 0 ? 0u : n * (n - 1) / 2);
  }
}

TEST(CompilerContract, MulAddWithoutRoundingFusesAsPtxasDoes) {
  // CuPy's float remainder, x - floor(x / y) * y, in nvcc's PTX: mul.f64 and sub.f64 with no
  // rounding modifier, which ptxas fuses into one fma. Unfused, 255.6 mod 1.2 is 0; fused (and
  // on NVIDIA GPUs, and in NumPy) it is 255.6 - 213 * 1.2 exactly. With .rn they stay apart.
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry remainders(.param .u64 out, .param .f64 x, .param .f64 y)
{
  .reg .f64 %fd<12>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.param.f64 %fd1, [x];
  ld.param.f64 %fd2, [y];
  div.rn.f64 %fd3, %fd1, %fd2;
  cvt.rmi.f64.f64 %fd4, %fd3;
  mul.f64 %fd5, %fd4, %fd2;
  sub.f64 %fd6, %fd1, %fd5;
  mul.rn.f64 %fd7, %fd4, %fd2;
  sub.f64 %fd8, %fd1, %fd7;
  mul.f64 %fd9, %fd4, %fd2;
  sub.rn.f64 %fd10, %fd1, %fd9;
  st.global.f64 [%rd1], %fd6;
  st.global.f64 [%rd1+8], %fd8;
  st.global.f64 [%rd1+16], %fd10;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "contract");
  ASSERT_TRUE(loaded);
  double out[3] = {-1, -1, -1}, x = 255.6, y = 1.2;
  void* p = out;
  ASSERT_TRUE(launch(*loaded, "remainders", {}, {}, {&p, &x, &y}));
  EXPECT_EQ(out[0], std::fma(-213.0, y, x));
  EXPECT_NE(out[0], 0.0);
  EXPECT_EQ(out[1], 0.0) << "mul.rn rounds its product";
  EXPECT_EQ(out[2], 0.0) << "sub.rn does not fuse";
}

const char* kHalfPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry halfs(.param .u64 out, .param .f32 px, .param .f64 py)
{
  .reg .f32 %f<4>;
  .reg .f64 %fd<2>;
  .reg .b16 %rs<8>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.param.f32 %f1, [px];
  ld.param.f64 %fd1, [py];
  cvt.rn.bf16.f32 %rs1, %f1;     st.global.u16 [%rd1+0], %rs1;
  cvt.rn.bf16.f64 %rs2, %fd1;    st.global.u16 [%rd1+2], %rs2;
  add.rn.bf16 %rs3, %rs1, %rs2;  st.global.u16 [%rd1+4], %rs3;
  cvt.rn.f16.f64 %rs4, %fd1;     st.global.u16 [%rd1+6], %rs4;
  add.f16 %rs5, %rs4, %rs4;      st.global.u16 [%rd1+8], %rs5;
  cvt.f32.bf16 %f2, %rs1;        st.global.f32 [%rd1+12], %f2;
  cvt.rn.bf16x2.f32 %r1, %f1, %f2;  st.global.u32 [%rd1+16], %r1;
  mov.b32 %r2, {%rs4, %rs5};
  fma.rn.f16x2 %r3, %r2, %r2, %r2;  st.global.u32 [%rd1+20], %r3;
  ret;
}
)";

uint16_t halfBits(_Float16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
_Float16 halfFromBits(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, 2);
  return h;
}
double bf16Value(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// Nearest-even bfloat16 of a double, by choosing between the two neighbours.
uint16_t refBf16(double d) {
  if (std::isnan(d)) return 0x7fc0;
  float fz = convertWithMode<float>(d, FE_TOWARDZERO);
  uint16_t lo = static_cast<uint16_t>(floatBits(fz) >> 16);
  uint16_t hi = static_cast<uint16_t>(lo + 1);
  if (bf16Value(lo) == d) return lo;
  double dl = std::fabs(d - bf16Value(lo)), dh = std::fabs(bf16Value(hi) - d);
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo & 1) ? hi : lo;
}

class HalfTest : public ::testing::TestWithParam<double> {};

TEST_P(HalfTest, Bf16AndF16Conversions) {
  static std::unique_ptr<Loaded> loaded = compileAndLoad(kHalfPtx, "halfs");
  ASSERT_TRUE(loaded);
  double y = GetParam();
  float x = static_cast<float>(y * 3.0);
  alignas(8) uint8_t out[24] = {};
  void* p = out;
  ASSERT_TRUE(launch(*loaded, "halfs", {}, {}, {&p, &x, &y}));
  auto u16 = [&](int o) {
    uint16_t v;
    std::memcpy(&v, out + o, 2);
    return v;
  };
  uint16_t bx = refBf16(x), by = refBf16(y);
  EXPECT_EQ(u16(0), bx);
  EXPECT_EQ(u16(2), by);
  EXPECT_EQ(u16(4),
            refBf16(static_cast<double>(static_cast<float>(bf16Value(bx) + bf16Value(by)))));
  _Float16 h = static_cast<_Float16>(y);
  EXPECT_EQ(u16(6), halfBits(h));
  EXPECT_EQ(u16(8), halfBits(static_cast<_Float16>(h + h)));
  float f2;
  std::memcpy(&f2, out + 12, 4);
  EXPECT_EQ(f2, static_cast<float>(bf16Value(bx)));
  uint32_t pair;
  std::memcpy(&pair, out + 16, 4);
  EXPECT_EQ(pair, (static_cast<uint32_t>(bx) << 16) | refBf16(f2));
  uint32_t fmas;
  std::memcpy(&fmas, out + 20, 4);
  _Float16 h2 = halfFromBits(halfBits(static_cast<_Float16>(h + h)));
  auto fmaHalf = [](_Float16 a) {
    return halfBits(static_cast<_Float16>(
        std::fma(static_cast<double>(a), static_cast<double>(a), static_cast<double>(a))));
  };
  EXPECT_EQ(fmas, (static_cast<uint32_t>(fmaHalf(h2)) << 16) | fmaHalf(h));
}

INSTANTIATE_TEST_SUITE_P(Values, HalfTest,
                         ::testing::Values(1.0, 1.00390625, 1.005859375, -3.14159, 1e-3, 65504.0,
                                           3.3961e38, 1.0 + 1.0 / 512 + 1e-12,
                                           1.0 + 1.0 / 256 + 1e-12, -0.0));

TEST(CompilerContract, SharedLayoutPerKernelAndAsyncCopy) {
  // Kernels a and b each use their own 1000-byte array; both call f, which uses `common`, and b
  // also uses dynamic shared memory. Arrays of different kernels may overlap.
  const char* ptx = R"(.version 8.0
.target sm_80
.address_size 64
.shared .align 4 .b8 onlyA[1000];
.shared .align 8 .b8 onlyB[1000];
.shared .align 4 .b8 common[16];
.extern .shared .align 16 .b8 dyn[];
.func (.param .b32 r) f(.param .b32 x)
{
  .reg .b32 %r<4>;
  ld.param.b32 %r1, [x];
  st.shared.u32 [common+4], %r1;
  ld.shared.u32 %r2, [common+4];
  add.u32 %r2, %r2, 1;
  st.param.b32 [r], %r2;
  ret;
}
.visible .entry a(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 41;
  st.shared.u32 [onlyA+996], %r1;
  ld.shared.u32 %r1, [onlyA+996];
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 rv;
  call.uni (rv), f, (p0);
  ld.param.b32 %r2, [rv];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
.visible .entry b(.param .u64 out, .param .u64 in)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [in];
  mov.u32 %r1, dyn;
  cp.async.ca.shared.global [%r1], [%rd2], 16;
  cp.async.cg.shared.global [%r1+16], [%rd2], 16, 4;
  cp.async.commit_group;
  cp.async.wait_group 0;
  ld.shared.v4.u32 {%r1, %r2, %r3, _}, [dyn];
  st.global.v2.u32 [%rd1], {%r1, %r3};
  ld.shared.u32 %r1, [dyn+16];
  ld.shared.u32 %r2, [dyn+20];
  st.global.v2.u32 [%rd1+8], {%r1, %r2};
  st.shared.u32 [onlyB], %r1;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "layout");
  ASSERT_TRUE(loaded);
  const KernelInfo* a = loaded->object.info.findKernel("a");
  const KernelInfo* b = loaded->object.info.findKernel("b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->staticSharedBytes, 1016u);  // onlyA + common, not onlyB
  EXPECT_EQ(b->staticSharedBytes, 1000u);  // onlyB only
  EXPECT_EQ(b->dynamicSharedOffset, 1008u);
  EXPECT_EQ(a->dynamicSharedOffset % 16, 0u);
  uint32_t out[4] = {};
  void* p = out;
  ASSERT_TRUE(launch(*loaded, "a", {}, {}, {&p}));
  EXPECT_EQ(out[0], 42u);
  const uint32_t in[4] = {7, 8, 9, 10};
  const void* pin = in;
  ASSERT_TRUE(launch(*loaded, "b", {}, {}, {&p, &pin}, 32));
  EXPECT_EQ(out[0], 7u);
  EXPECT_EQ(out[1], 9u);
  EXPECT_EQ(out[2], 7u);
  EXPECT_EQ(out[3], 0u);  // beyond src-size: zero-filled
}

TEST(CompilerContract, SizedExternSharedArrayIsStatic) {
  // LLVM's NVPTX back end (Taichi's SharedArray) declares a module-level shared array .extern
  // with its size: ptxas allocates it as static shared memory, and the launch asks for no
  // dynamic shared memory. The block reverses 64 values through it.
  const char* ptx = R"(.version 7.1
.target sm_80
.address_size 64
.extern .shared .align 8 .b8 sized[256];
.visible .entry reverse(.param .u64 data)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [data];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd1, %rd3;
  ld.u32 %r2, [%rd4];
  mov.u64 %rd5, sized;
  add.s64 %rd6, %rd5, %rd3;
  st.shared.u32 [%rd6], %r2;
  bar.sync 0;
  sub.s32 %r3, 63, %r1;
  mul.wide.u32 %rd7, %r3, 4;
  add.s64 %rd6, %rd5, %rd7;
  ld.shared.u32 %r2, [%rd6];
  st.u32 [%rd4], %r2;
  ret;
}
)";
  auto loaded = compileAndLoad(ptx, "sized_extern");
  ASSERT_TRUE(loaded);
  const KernelInfo* k = loaded->object.info.findKernel("reverse");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->staticSharedBytes, 256u);
  EXPECT_GE(k->dynamicSharedOffset, 256u);
  uint32_t values[64];
  for (uint32_t i = 0; i < 64; ++i) values[i] = i * 3;
  void* p = values;
  ASSERT_TRUE(launch(*loaded, "reverse", {}, {64, 1, 1}, {&p}));
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(values[i], (63 - i) * 3) << i;
}

// ROCUDA_MEMCHECK's instrumentation (the __rocuda_memcheck contract in compiler.h): one call
// before each access, with its size, kind and space, the PTX line and the .loc position; none
// without the option.
TEST(CompilerContract, MemcheckInstrumentsEveryAccess) {
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.file 1 "/src/k.cu"
.visible .entry k(.param .u64 p)
{
  .local .align 4 .b8 depot[32];
  .shared .align 4 .b8 tile[64];
  .reg .b32 %r<4>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [p];
  .loc 1 7 3
  ld.global.v2.u32 {%r1, %r2}, [%rd1];
  st.shared.u32 [tile+4], %r1;
  mov.u64 %rd2, depot;
  st.local.u32 [%rd2+8], %r2;
  atom.add.u32 %r3, [%rd1+8], %r1;
  ret;
}
)";
  auto dir = std::filesystem::temp_directory_path() /
             ("rocuda_memcheck_dump_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  CompileOptions options;
  options.memcheck = true;
  auto checked = compileForHost(ptx, "checked", options);
  auto plain = compileForHost(ptx, "plain", {});
  ::unsetenv("ROCUDA_DUMP");
  ASSERT_TRUE(checked.ok()) << checked.error().message;
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  std::string ir = readFile((dir / "checked.ll").string());
  std::string plainIr = readFile((dir / "plain.block.ll").string());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(plainIr.find("__rocuda_memcheck"), std::string::npos);
  EXPECT_NE(ir.find("c\"/src/k.cu:7\\00\""), std::string::npos) << ir;
  // (size, access = write | space << 1, PTX line): global read of the v2, shared write, local
  // write with the depot, generic atomic write (| 16).
  for (const char* call : {"i64 8, i32 2, i32 13,", "i64 4, i32 5, i32 14,",
                           "i64 4, i32 7, i32 16,", "i64 4, i32 17, i32 17,"}) {
    EXPECT_NE(ir.find(call), std::string::npos) << call << "\n" << ir;
  }
  EXPECT_NE(ir.find("i64 32)"), std::string::npos) << "the depot's size: " << ir;
}

// Warp-synchronous code without __syncwarp (host_warp_lockstep.cpp): each thread adds its left
// neighbour's value through volatile shared memory, lane 0 skipping the step. `modern` does the
// same with a __syncwarp, which orders the exchange itself.
constexpr const char* kLockstepPtx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry KERNEL(.param .u64 out)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<4>;
  .shared .align 4 .b8 s[128];
  mov.u32 %r1, %tid.x;
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, s;
  add.u32 %r4, %r3, %r2;
  st.volatile.shared.u32 [%r4], %r1;
  SYNC
  setp.lt.u32 %p1, %r1, 1;
  @%p1 bra SKIP;
  ld.volatile.shared.u32 %r5, [%r4+-4];
  ld.volatile.shared.u32 %r6, [%r4];
  add.u32 %r7, %r5, %r6;
  st.volatile.shared.u32 [%r4], %r7;
SKIP:
  ld.volatile.shared.u32 %r8, [%r4];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r8;
  ret;
}
)";

std::string lockstepModule(const std::string& kernel, const char* sync) {
  std::string ptx = kLockstepPtx;
  ptx.replace(ptx.find("KERNEL"), 6, kernel);
  ptx.replace(ptx.find("SYNC"), 4, sync);
  return ptx;
}

// The orders of the kernel's lockstep points in its optimised host IR, sorted; `storePoints`
// counts those marked as followed by stores.
std::vector<int> lockstepOrders(const std::string& ptx, const std::string& name, WarpLockstep mode,
                                int* storePoints = nullptr) {
  auto dir =
      std::filesystem::temp_directory_path() / ("rocuda_lockstep_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("ROCUDA_DUMP", dir.c_str(), 1);
  CompileOptions options;
  options.warpLockstep = mode;
  auto object = compileForHost(ptx, name, options);
  ::unsetenv("ROCUDA_DUMP");
  EXPECT_TRUE(object.ok()) << object.error().message;
  std::string host = readFile((dir / (name + ".host.ll")).string());
  std::filesystem::remove_all(dir);
  std::vector<int> orders;
  const std::string call = "call void @__rocuda_warp_lockstep(i32 ";
  for (size_t at = host.find(call); at != std::string::npos; at = host.find(call, at + 1)) {
    auto value = static_cast<uint32_t>(std::atoll(host.c_str() + at + call.size()));
    orders.push_back(static_cast<int>(value & ~kLockstepStorePoint));
    if (storePoints != nullptr && (value & kLockstepStorePoint) != 0) ++*storePoints;
  }
  std::sort(orders.begin(), orders.end());
  if (object.ok() && !orders.empty()) {
    EXPECT_TRUE(object->info.kernels.at(0).usesWarpCollectives) << host;  // they are waits
  }
  return orders;
}

TEST(CompilerWarpLockstep, VolatileSharedExchangesWaitForTheWarp) {
  // Before the first store (the lanes' earlier accesses are unknown), before the step's loads and
  // before its store, and where the lane that skipped the step joins the others: numbered in the
  // order the kernel reaches them (the join after the step).
  int storePoints = 0;
  std::vector<int> orders = lockstepOrders(lockstepModule("legacy", ""), "legacy",
                                           WarpLockstep::VolatileShared, &storePoints);
  EXPECT_EQ(orders, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(storePoints, 2);  // the stores' points; the loads' and the join's are not
  // A kernel that synchronises its warp itself, and the setting's `off`, get none.
  EXPECT_TRUE(lockstepOrders(lockstepModule("modern", "bar.warp.sync -1;"), "modern",
                             WarpLockstep::VolatileShared)
                  .empty());
  EXPECT_TRUE(lockstepOrders(lockstepModule("legacy", ""), "legacy", WarpLockstep::Off).empty());
  // Every access outside the thread's memory: the global store too (after the join's load,
  // which needs none: no store since the join).
  EXPECT_EQ(lockstepOrders(lockstepModule("legacy", ""), "legacy", WarpLockstep::AllMemory).size(),
            5u);
}

}  // namespace
}  // namespace rocuda::compiler::test
