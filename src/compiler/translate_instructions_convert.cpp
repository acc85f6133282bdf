// cvt between every integer and float type: integer narrowing/widening with .sat, float<->float
// with .rn/.rz/.rm/.rp and the integral .rni/.rzi/.rmi/.rpi, float->int saturating (NaN rules
// of the ISA), int->float with directed rounding, .ftz, .sat, .relu, .satfinite, the
// f16x2/bf16x2 pair forms, tf32, and the fp8 pairs (e4m3x2, e5m2x2).
#include <llvm/IR/Intrinsics.h>

#include <cmath>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

llvm::Value* roundIntegral(FunctionTranslator& t, llvm::Value* v, const std::string& mode) {
  auto& B = t.b;
  if (mode == "rni") return B.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, v);
  if (mode == "rzi") return B.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, v);
  if (mode == "rmi") return B.CreateUnaryIntrinsic(llvm::Intrinsic::floor, v);
  if (mode == "rpi") return B.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, v);
  return v;
}

// The PTX integer types of a conversion: B* behave as unsigned.
bool signedInt(ScalarType type) { return ptx::isSignedInteger(type); }

llvm::Value* intToInt(FunctionTranslator& t, llvm::Value* a, ScalarType from, ScalarType to,
                      bool sat) {
  auto& B = t.b;
  auto* dst = llvm::cast<llvm::IntegerType>(t.bitsType(to));
  unsigned wa = a->getType()->getIntegerBitWidth(), wd = dst->getBitWidth();
  if (!sat) {
    if (wd < wa) return B.CreateTrunc(a, dst);
    if (wd > wa) return signedInt(from) ? B.CreateSExt(a, dst) : B.CreateZExt(a, dst);
    return a;
  }
  auto* i128 = B.getInt128Ty();
  llvm::Value* x = signedInt(from) ? B.CreateSExt(a, i128) : B.CreateZExt(a, i128);
  llvm::APInt lo =
      signedInt(to) ? llvm::APInt::getSignedMinValue(wd).sext(128) : llvm::APInt(128, 0);
  llvm::APInt hi = signedInt(to) ? llvm::APInt::getSignedMaxValue(wd).sext(128)
                                 : llvm::APInt::getMaxValue(wd).zext(128);
  x = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, x, llvm::ConstantInt::get(i128, lo));
  x = B.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, llvm::ConstantInt::get(i128, hi));
  return B.CreateTrunc(x, dst);
}

// Saturating; NaN gives 0, except from f64 or to a 64-bit integer, where it gives
// 1 << (width - 1) (PTX ISA, cvt: integer notes).
llvm::Value* floatToInt(FunctionTranslator& t, llvm::Value* a, ScalarType to,
                        const std::string& mode) {
  auto& B = t.b;
  bool fromDouble = a->getType()->isDoubleTy();
  if (a->getType()->isHalfTy() || a->getType()->isBFloatTy()) a = B.CreateFPExt(a, B.getFloatTy());
  a = roundIntegral(t, a, mode.empty() ? "rzi" : mode);
  auto* dst = llvm::cast<llvm::IntegerType>(t.bitsType(to));
  auto id = signedInt(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
  llvm::Value* r = B.CreateIntrinsic(id, {dst, a->getType()}, {a});
  if (!fromDouble && dst->getBitWidth() != 64) return r;  // fptosi_sat gives 0 for NaN
  auto* nanResult = llvm::ConstantInt::get(dst, llvm::APInt::getSignMask(dst->getBitWidth()));
  return B.CreateSelect(B.CreateFCmpUNO(a, a), nanResult, r);
}

// The sign (+1, -1 or 0, in r's type) of exact - r, where r is the integer a converted to
// float: r converted back in a's own width (saturating), with values at or beyond 2^width
// (2^(width-1) signed), which saturation would hide, known to lie above every a. No 128-bit
// conversion: the AMDGPU backend cannot select one.
llvm::Value* integerRoundingSign(FunctionTranslator& t, llvm::Value* a, ScalarType from,
                                 llvm::Value* r) {
  auto& B = t.b;
  bool s = signedInt(from);
  llvm::Type* ft = r->getType();
  unsigned width = a->getType()->getIntegerBitWidth();
  auto id = s ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
  llvm::Value* back = B.CreateIntrinsic(id, {a->getType(), ft}, {r});
  llvm::Value* beyond =
      B.CreateFCmpOGE(r, llvm::ConstantFP::get(ft, std::ldexp(1.0, static_cast<int>(s ? width - 1 : width))));
  llvm::Value* above = B.CreateAnd(B.CreateNot(beyond), s ? B.CreateICmpSGT(a, back) : B.CreateICmpUGT(a, back));
  llvm::Value* below = B.CreateOr(beyond, s ? B.CreateICmpSLT(a, back) : B.CreateICmpULT(a, back));
  return B.CreateSelect(above, llvm::ConstantFP::get(ft, 1.0),
                        B.CreateSelect(below, llvm::ConstantFP::get(ft, -1.0), llvm::ConstantFP::get(ft, 0.0)));
}

// An integer to f16 / bf16: rounded to odd in f32 first (truncated, last bit set when
// inexact), which the final f32 -> 16-bit rounding in any mode turns into the single correct
// rounding; converting through a nearest-rounded f32 would round twice.
llvm::Value* intToHalf(FunctionTranslator& t, llvm::Value* a, ScalarType from, llvm::Type* vt,
                       const std::string& mode) {
  auto& B = t.b;
  auto* f32 = B.getFloatTy();
  llvm::Value* nearest = signedInt(from) ? B.CreateSIToFP(a, f32) : B.CreateUIToFP(a, f32);
  llvm::Value* truncated = applyDirectedRounding(t, nearest, integerRoundingSign(t, a, from, nearest), "rz");
  llvm::Value* inexact = B.CreateFCmpONE(integerRoundingSign(t, a, from, truncated), llvm::ConstantFP::get(f32, 0.0));
  llvm::Value* bits = B.CreateBitCast(truncated, t.i32());
  llvm::Value* odd = B.CreateBitCast(B.CreateSelect(inexact, B.CreateOr(bits, 1), bits), f32);
  llvm::Value* r = B.CreateFPTrunc(odd, vt);
  if (mode != "rz" && mode != "rm" && mode != "rp") return r;
  return applyDirectedRounding(t, r, B.CreateFSub(odd, B.CreateFPExt(r, f32)), mode);  // exact
}

llvm::Value* intToFloat(FunctionTranslator& t, llvm::Value* a, ScalarType from, llvm::Type* vt,
                        const std::string& mode) {
  auto& B = t.b;
  if (vt->isHalfTy() || vt->isBFloatTy()) return intToHalf(t, a, from, vt, mode);
  llvm::Value* r = signedInt(from) ? B.CreateSIToFP(a, vt) : B.CreateUIToFP(a, vt);
  if (mode != "rz" && mode != "rm" && mode != "rp") return r;
  return applyDirectedRounding(t, r, integerRoundingSign(t, a, from, r), mode);
}

Result<llvm::Value*> floatToFloat(FunctionTranslator& t, const ptx::Instruction& inst,
                                  llvm::Value* a, llvm::Type* vt, const std::string& mode) {
  auto& B = t.b;
  llvm::Type* at = a->getType();
  if (at == vt) return roundIntegral(t, a, mode);
  if (at->getPrimitiveSizeInBits() < vt->getPrimitiveSizeInBits() ||
      (at->isHalfTy() && vt->isBFloatTy()) || (at->isBFloatTy() && vt->isHalfTy())) {
    if (at->getPrimitiveSizeInBits() == vt->getPrimitiveSizeInBits())
      return B.CreateFPTrunc(B.CreateFPExt(a, B.getFloatTy()), vt);
    llvm::Value* r = B.CreateFPExt(a, vt);
    return roundIntegral(t, r, mode);
  }
  llvm::Value* r = B.CreateFPTrunc(a, vt);
  if (mode == "rz" || mode == "rm" || mode == "rp") {
    llvm::Value* err = B.CreateFSub(a, B.CreateFPExt(r, at));  // exact, in the wider type
    r = applyDirectedRounding(t, r, err, mode);
  } else if (!mode.empty() && mode != "rn") {
    return t.unsupported(inst, "rounding ." + mode);
  }
  return r;
}

// .satfinite on an f16 / bf16 result: values beyond the largest finite one (infinities
// included) become that value with their sign; NaN stays NaN.
llvm::Value* saturateFinite(FunctionTranslator& t, llvm::Value* r) {
  auto& B = t.b;
  llvm::Type* ty = r->getType();
  auto* inf = llvm::ConstantFP::getInfinity(ty);
  auto* largest = llvm::ConstantFP::get(ty, llvm::APFloat::getLargest(ty->getFltSemantics()));
  llvm::Value* isInf = B.CreateFCmpOEQ(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, r), inf);
  return B.CreateSelect(isInf, B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, largest, r), r);
}

Result<llvm::Value*> convertScalar(FunctionTranslator& t, const ptx::Instruction& inst,
                                   const ptx::Operand& src, ScalarType to, ScalarType from) {
  std::string mode = roundingModifier(inst);
  bool sat = inst.hasModifier("sat"), ftz = inst.hasModifier("ftz");
  ROCUDA_VALUE(a, t.read(src, from));
  bool fromFloat = ptx::isFloat(from), toFloat = ptx::isFloat(to);
  llvm::Type* vt = t.valueType(to);
  if (!fromFloat && !toFloat) return intToInt(t, a, from, to, sat);
  if (ftz && a->getType()->isFloatTy()) a = flushSubnormal(t, a);  // .ftz is for f32 only
  llvm::Value* r = nullptr;
  if (fromFloat && !toFloat) return floatToInt(t, a, to, mode);
  if (!fromFloat) {
    r = intToFloat(t, a, from, vt, mode);
  } else {
    auto v = floatToFloat(t, inst, a, vt, mode);
    if (!v.ok()) return v;
    r = *v;
  }
  if (sat) r = saturateUnit(t, r);
  if (inst.hasModifier("relu")) r = reluOf(t, r);
  if (ftz && r->getType()->isFloatTy()) r = flushSubnormal(t, r);
  if (inst.hasModifier("satfinite")) r = saturateFinite(t, r);
  // A NaN converts to the canonical NaN of the destination, payload and sign dropped.
  if (fromFloat && r->getType()->isFPOrFPVectorTy())
    r = t.b.CreateSelect(t.b.CreateFCmpUNO(r, r), canonicalNaN(r->getType()), r);
  return r;
}

// The small floating-point formats of cvt (OCP FP8, and the OCP MX fp6/fp4 ones): e4m3 has no
// infinities and one NaN pattern per sign (S.1111.111); e5m2 is IEEE-like; e2m3, e3m2 and e2m1
// have neither infinities nor NaN (a NaN input converts to the largest positive value, as
// CUDA's cuda_fp6.hpp / cuda_fp4.hpp conversions define).
struct Minifloat {
  int mantissaBits;
  int exponentBits;
  bool hasInfinity;
  uint32_t largestBits;  // the largest finite magnitude's encoding
  double largest;
  bool hasNaN = true;
  int bits() const { return 1 + exponentBits + mantissaBits; }
};
constexpr Minifloat kE4M3{3, 4, false, 0x7e, 448.0};
constexpr Minifloat kE5M2{2, 5, true, 0x7b, 57344.0};
constexpr Minifloat kE2M3{3, 2, false, 0x1f, 7.5, false};
constexpr Minifloat kE3M2{2, 3, false, 0x1f, 28.0, false};
constexpr Minifloat kE2M1{1, 2, false, 0x7, 6.0, false};
constexpr uint32_t kMinifloatNaN = 0x7f;  // fp8's

// An f32 rounded to nearest even into the format with .satfinite (mandatory for these
// conversions): NaN gives the NaN pattern, magnitudes beyond the largest finite value give it.
// The magnitude is clamped first, then scaled by the quantum of its binade (exact) and rounded
// to an integer n: the encoding is ((e - emin) << mantissa) + n, carries included.
llvm::Value* toMinifloat(FunctionTranslator& t, llvm::Value* x, const Minifloat& f, bool relu) {
  auto& B = t.b;
  auto* f32 = B.getFloatTy();
  int bias = (1 << (f.exponentBits - 1)) - 1;
  int emin = 1 - bias;
  if (relu)  // negative results and -0 clamp to +0, as reluOf (NaN stays NaN)
    x = B.CreateSelect(B.CreateFCmpOLE(x, llvm::ConstantFP::get(f32, 0.0)),
                       llvm::ConstantFP::get(f32, 0.0), x);
  llvm::Value* sign = B.CreateShl(B.CreateLShr(B.CreateBitCast(x, t.i32()), 31),
                                  static_cast<uint64_t>(f.bits() - 1));
  llvm::Value* mag = B.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum, B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
      llvm::ConstantFP::get(f32, f.largest));
  llvm::Value* field = B.CreateLShr(B.CreateBitCast(mag, t.i32()), 23);
  llvm::Value* e = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, B.CreateSub(field, B.getInt32(127)),
                                           B.getInt32(emin));
  llvm::Value* scale = B.CreateIntrinsic(llvm::Intrinsic::ldexp, {f32, t.i32()},
                                         {llvm::ConstantFP::get(f32, 1.0),
                                          B.CreateSub(B.getInt32(f.mantissaBits), e)});
  llvm::Value* n = B.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, B.CreateFMul(mag, scale));
  llvm::Value* magnitude = B.CreateAdd(
      B.CreateShl(B.CreateSub(e, B.getInt32(emin)), f.mantissaBits), B.CreateFPToUI(n, t.i32()));
  magnitude = B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, magnitude, B.getInt32(f.largestBits));
  llvm::Value* nan = B.getInt32(f.hasNaN ? kMinifloatNaN : f.largestBits);
  return B.CreateSelect(B.CreateFCmpUNO(x, x), nan, B.CreateOr(sign, magnitude));
}

// The low f.bits() bits of `bits` (i32) in the format, widened to f16 (exactly).
llvm::Value* fromMinifloat(FunctionTranslator& t, llvm::Value* bits, const Minifloat& f) {
  auto& B = t.b;
  auto* f32 = B.getFloatTy();
  int bias = (1 << (f.exponentBits - 1)) - 1;
  uint32_t mantMask = (1u << f.mantissaBits) - 1, maxField = (1u << f.exponentBits) - 1;
  llvm::Value* field = B.CreateAnd(B.CreateLShr(bits, f.mantissaBits), maxField);
  llvm::Value* mant = B.CreateAnd(bits, mantMask);
  llvm::Value* subnormal = B.CreateICmpEQ(field, B.getInt32(0));
  llvm::Value* significand = B.CreateSelect(subnormal, mant, B.CreateOr(mant, 1u << f.mantissaBits));
  llvm::Value* exponent = B.CreateSub(B.CreateBinaryIntrinsic(llvm::Intrinsic::umax, field, B.getInt32(1)),
                                      B.getInt32(bias + f.mantissaBits));
  llvm::Value* v = B.CreateIntrinsic(llvm::Intrinsic::ldexp, {f32, t.i32()},
                                     {B.CreateUIToFP(significand, f32), exponent});
  llvm::Value* top = B.CreateICmpEQ(field, B.getInt32(maxField));
  if (f.hasInfinity)
    v = B.CreateSelect(B.CreateAnd(top, B.CreateICmpEQ(mant, B.getInt32(0))),
                       llvm::ConstantFP::getInfinity(f32), v);
  llvm::Value* negative = B.CreateICmpNE(B.CreateAnd(bits, 1u << (f.bits() - 1)), B.getInt32(0));
  v = B.CreateSelect(negative, B.CreateFNeg(v), v);
  llvm::Value* half = B.CreateFPTrunc(v, B.getHalfTy());
  if (!f.hasNaN) return half;
  // A NaN becomes the canonical half NaN, its sign dropped (0x7fff), as NVIDIA's conversion does.
  llvm::Value* isNaN = f.hasInfinity ? B.CreateAnd(top, B.CreateICmpNE(mant, B.getInt32(0)))
                                     : B.CreateAnd(top, B.CreateICmpEQ(mant, B.getInt32(mantMask)));
  return B.CreateSelect(isNaN, canonicalNaN(B.getHalfTy()), half);
}

// The format of a packed small-float type (e4m3x2 ... e2m1x2), or nullptr.
const Minifloat* minifloatOf(ScalarType type) {
  switch (type) {
    case ScalarType::E4M3x2:
      return &kE4M3;
    case ScalarType::E5M2x2:
      return &kE5M2;
    case ScalarType::E2M3x2:
      return &kE2M3;
    case ScalarType::E3M2x2:
      return &kE3M2;
    case ScalarType::E2M1x2:
      return &kE2M1;
    default:
      return nullptr;
  }
}

// cvt to and from the packed small floats. fp8 and fp6 pairs are a .b16 with one element per
// byte (fp6 in each byte's low 6 bits, the top two zero), e2m1x2 a .b8 with one per nibble:
// the upper slot holds the conversion of a (or of a's upper half), the lower that of b (or of
// a's lower half); widening to f16x2 fills d's upper half from the upper slot.
Status convertMinifloat(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType to,
                        ScalarType from) {
  auto& B = t.b;
  bool narrowing = minifloatOf(to) != nullptr;
  const Minifloat& f = *(narrowing ? minifloatOf(to) : minifloatOf(from));
  unsigned slot = f.bits() == 4 ? 4 : 8;
  ScalarType packed = slot == 4 ? ScalarType::B8 : ScalarType::B16;
  bool relu = inst.hasModifier("relu");
  if (roundingModifier(inst) != "rn") return t.invalid(inst, "needs .rn");
  if (narrowing) {
    if (!inst.hasModifier("satfinite")) return t.invalid(inst, ".satfinite is mandatory here");
    llvm::Value* hi = nullptr;
    llvm::Value* lo = nullptr;
    if (from == ScalarType::F32) {
      if (inst.operands().size() != 3) return t.invalid(inst, "expected d, a, b");
      ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::F32));
      ROCUDA_VALUE(b, t.read(inst.operands()[2], ScalarType::F32));
      hi = toMinifloat(t, a, f, relu);
      lo = toMinifloat(t, b, f, relu);
    } else if (from == ScalarType::F16x2 && f.bits() == 8) {
      if (inst.operands().size() != 2) return t.invalid(inst, "expected d, a");
      ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::F16x2));
      llvm::Value* wide = B.CreateFPExt(a, llvm::FixedVectorType::get(B.getFloatTy(), 2));
      hi = toMinifloat(t, B.CreateExtractElement(wide, uint64_t{1}), f, relu);
      lo = toMinifloat(t, B.CreateExtractElement(wide, uint64_t{0}), f, relu);
    } else {
      return t.unsupported(inst);
    }
    llvm::Value* d = B.CreateTrunc(B.CreateOr(B.CreateShl(hi, slot), lo), B.getIntNTy(2 * slot));
    return t.write(inst.operands()[0], d, packed);
  }
  if (to != ScalarType::F16x2 || inst.operands().size() != 2) return t.unsupported(inst);
  ROCUDA_VALUE(a, t.read(inst.operands()[1], packed));
  llvm::Value* bits = B.CreateZExt(a, t.i32());
  llvm::Value* hi = fromMinifloat(t, B.CreateLShr(bits, slot), f);
  llvm::Value* lo = fromMinifloat(t, B.CreateAnd(bits, (1u << slot) - 1), f);
  if (relu) {
    auto* zero = llvm::ConstantFP::get(B.getHalfTy(), 0.0);
    hi = B.CreateSelect(B.CreateFCmpOLE(hi, zero), zero, hi);  // -0 too, as reluOf
    lo = B.CreateSelect(B.CreateFCmpOLE(lo, zero), zero, lo);
  }
  llvm::Value* pair = llvm::PoisonValue::get(llvm::FixedVectorType::get(B.getHalfTy(), 2));
  pair = B.CreateInsertElement(pair, lo, uint64_t{0});
  pair = B.CreateInsertElement(pair, hi, uint64_t{1});
  return t.write(inst.operands()[0], pair, ScalarType::F16x2);
}

// cvt to and from ue8m0x2 (sm_100 family): unsigned power-of-two scale factors, a byte each
// holding a biased exponent (2^(e - 127)), 0xff being NaN; there is no zero, so zero converts to
// 2^-127. From f32 or bf16x2 with .rz (the magnitude's binade) or .rp (the smallest power of two
// not below the magnitude); the sign is ignored; a result beyond 2^127 or an infinity is 0xff,
// or 0xfe with .satfinite; NaN is 0xff. Widening to bf16x2 (.rn) is exact, 2^-127 being a bf16
// subnormal. These are the definitions of CUDA's cuda_fp8.hpp host conversions: f32 first
// rounds to bf16 in the same direction (magnitude upwards for .rp), then the bf16 exponent field
// is the result, one more for .rp when the bf16 is not a power of two.
llvm::Value* bf16ToUe8m0(FunctionTranslator& t, llvm::Value* bf16, bool up, bool satfinite) {
  auto& B = t.b;
  llvm::Value* magnitude = B.CreateAnd(bf16, 0x7fff);
  llvm::Value* e = B.CreateAnd(B.CreateLShr(bf16, 7), 0xff);
  if (up) {
    llvm::Value* inexact =
        B.CreateAnd(B.CreateICmpNE(B.CreateAnd(bf16, 0x7f), B.getInt32(0)),
                    B.CreateAnd(B.CreateICmpUGT(magnitude, B.getInt32(0x40)),      // above 2^-127
                                B.CreateICmpULT(magnitude, B.getInt32(0x7f80))));  // finite
    e = B.CreateAdd(e, B.CreateZExt(inexact, t.i32()));
  }
  if (satfinite)
    e = B.CreateSelect(B.CreateAnd(B.CreateICmpULE(magnitude, B.getInt32(0x7f80)),
                                   B.CreateICmpEQ(e, B.getInt32(0xff))),
                       B.getInt32(0xfe), e);
  return e;
}

// An f32 rounded to bf16 bits (i32) towards zero, or its magnitude upwards; NaN gives 0x7fff.
llvm::Value* f32ToBf16Directed(FunctionTranslator& t, llvm::Value* x, bool up) {
  auto& B = t.b;
  llvm::Value* bits = B.CreateBitCast(x, t.i32());
  if (up) bits = B.CreateAnd(bits, 0x7fffffff);
  llvm::Value* r = B.CreateLShr(bits, 16);
  if (up) {
    llvm::Value* inexact = B.CreateAnd(B.CreateICmpULT(bits, B.getInt32(0x7f800000)),
                                       B.CreateICmpNE(B.CreateAnd(bits, 0xffff), B.getInt32(0)));
    r = B.CreateAdd(r, B.CreateZExt(inexact, t.i32()));
  }
  return B.CreateSelect(B.CreateFCmpUNO(x, x), B.getInt32(0x7fff), r);
}

Status convertUe8m0(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType to,
                    ScalarType from) {
  auto& B = t.b;
  std::string mode = roundingModifier(inst);
  if (from == ScalarType::UE8M0x2) {
    if (to != ScalarType::BF16x2 || mode != "rn" || inst.operands().size() != 2)
      return t.invalid(inst, "expected cvt.rn.bf16x2.ue8m0x2 d, a");
    ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::B16));
    llvm::Value* bits = B.CreateZExt(a, t.i32());
    auto widen = [&](llvm::Value* e) {
      llvm::Value* r = B.CreateShl(e, 7);
      r = B.CreateSelect(B.CreateICmpEQ(e, B.getInt32(0)), B.getInt32(0x40), r);
      return B.CreateSelect(B.CreateICmpEQ(e, B.getInt32(0xff)), B.getInt32(0x7fff), r);
    };
    llvm::Value* lo = widen(B.CreateAnd(bits, 0xff));
    llvm::Value* hi = widen(B.CreateLShr(bits, 8));
    return t.write(inst.operands()[0], B.CreateOr(B.CreateShl(hi, 16), lo), ScalarType::B32);
  }
  if (mode != "rz" && mode != "rp") return t.invalid(inst, "needs .rz or .rp");
  if (inst.hasModifier("relu")) return t.invalid(inst, ".relu does not apply to ue8m0x2");
  bool up = mode == "rp", satfinite = inst.hasModifier("satfinite");
  llvm::Value* hi = nullptr;
  llvm::Value* lo = nullptr;
  if (from == ScalarType::F32) {
    if (inst.operands().size() != 3) return t.invalid(inst, "expected d, a, b");
    ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::F32));
    ROCUDA_VALUE(b, t.read(inst.operands()[2], ScalarType::F32));
    hi = bf16ToUe8m0(t, f32ToBf16Directed(t, a, up), up, satfinite);
    lo = bf16ToUe8m0(t, f32ToBf16Directed(t, b, up), up, satfinite);
  } else if (from == ScalarType::BF16x2) {
    if (inst.operands().size() != 2) return t.invalid(inst, "expected d, a");
    ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::B32));
    hi = bf16ToUe8m0(t, B.CreateLShr(a, 16), up, satfinite);
    lo = bf16ToUe8m0(t, B.CreateAnd(a, 0xffff), up, satfinite);
  } else {
    return t.unsupported(inst);
  }
  llvm::Value* d = B.CreateTrunc(B.CreateOr(B.CreateShl(hi, 8), lo), B.getInt16Ty());
  return t.write(inst.operands()[0], d, ScalarType::B16);
}

// cvt to tf32 from f32: the mantissa rounded to 10 bits (.rna ties away, .rn ties to even, .rz
// truncates), kept in an f32 container with the low 13 bits zero; NaN becomes the canonical
// NaN; .satfinite turns overflow into the largest finite tf32, .relu clamps negatives (and -0)
// to +0.
Status convertTf32(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() != 2) return t.invalid(inst, "expected d, a");
  std::string mode = roundingModifier(inst);
  if (mode != "rna" && mode != "rn" && mode != "rz") return t.invalid(inst, "needs .rna, .rn or .rz");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::F32));
  if (inst.hasModifier("relu")) a = reluOf(t, a);
  llvm::Value* bits = B.CreateBitCast(a, t.i32());
  llvm::Value* increment = B.getInt32(0);
  if (mode == "rna") increment = B.getInt32(0x1000);
  if (mode == "rn")  // half an ulp, less one unless the kept part is odd: ties to even
    increment = B.CreateAdd(B.getInt32(0xfff), B.CreateAnd(B.CreateLShr(bits, 13), 1));
  llvm::Value* rounded = B.CreateAnd(B.CreateAdd(bits, increment), B.getInt32(0xffffe000u));
  llvm::Value* notFinite =
      B.CreateFCmpUEQ(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a), llvm::ConstantFP::getInfinity(B.getFloatTy()));
  llvm::Value* isNaN = B.CreateFCmpUNO(a, a);
  llvm::Value* r = B.CreateSelect(notFinite, bits, rounded);  // infinities stay as they are
  r = B.CreateSelect(isNaN, B.getInt32(0x7fffffff), r);
  if (inst.hasModifier("satfinite")) {
    llvm::Value* overflow = B.CreateICmpUGE(B.CreateAnd(r, 0x7fffffff), B.getInt32(0x7f800000));
    llvm::Value* largest = B.CreateOr(B.CreateAnd(bits, 0x80000000u), B.getInt32(0x7f7fe000));
    r = B.CreateSelect(B.CreateAnd(overflow, B.CreateNot(isNaN)), largest, r);
  }
  return t.write(inst.operands()[0], r, ScalarType::B32);
}

bool supportedType(ScalarType type) {
  switch (type) {
    case ScalarType::B8:
    case ScalarType::B16:
    case ScalarType::B32:
    case ScalarType::B64:
    case ScalarType::U8:
    case ScalarType::U16:
    case ScalarType::U32:
    case ScalarType::U64:
    case ScalarType::S8:
    case ScalarType::S16:
    case ScalarType::S32:
    case ScalarType::S64:
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::F32:
    case ScalarType::F64:
      return true;
    default:
      return false;
  }
}

}  // namespace

llvm::Value* fp8ToHalf(FunctionTranslator& t, llvm::Value* bits, bool e5m2) {
  return fromMinifloat(t, bits, e5m2 ? kE5M2 : kE4M3);
}

// cvt.pack.sat.{u16,s16}.s32 d, a, b and cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d, a, b, c:
// a and b clamped to the narrow type, b's bits lowest and a's above them; with c, the bits left
// above come from c's lowest ones.
Status convertPack(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  const auto& types = inst.types();
  const auto& ops = inst.operands();
  if (!inst.hasModifier("sat") || types.size() < 2 || types[1] != ScalarType::S32)
    return t.unsupported(inst);
  struct Narrow {
    ScalarType type;
    unsigned bits;
    bool isSigned;
  };
  static constexpr Narrow narrows[] = {{ScalarType::U16, 16, false}, {ScalarType::S16, 16, true},
                                       {ScalarType::U8, 8, false},   {ScalarType::S8, 8, true},
                                       {ScalarType::U4, 4, false},   {ScalarType::S4, 4, true},
                                       {ScalarType::U2, 2, false},   {ScalarType::S2, 2, true}};
  const Narrow* narrow = nullptr;
  for (const Narrow& n : narrows)
    if (types[0] == n.type) narrow = &n;
  if (narrow == nullptr) return t.unsupported(inst);
  bool withC = narrow->bits < 16;
  if (withC != (types.size() == 3) || ops.size() != (withC ? 4u : 3u))
    return t.invalid(inst, withC ? "expected cvt.pack.sat.type.s32.b32 d, a, b, c"
                                 : "expected cvt.pack.sat.type.s32 d, a, b");
  int64_t low = narrow->isSigned ? -(int64_t{1} << (narrow->bits - 1)) : 0;
  int64_t high =
      narrow->isSigned ? (int64_t{1} << (narrow->bits - 1)) - 1 : (int64_t{1} << narrow->bits) - 1;
  auto saturated = [&](const ptx::Operand& op) -> Result<llvm::Value*> {
    ROCUDA_VALUE(v, t.read(op, ScalarType::S32));
    llvm::Value* clamped = B.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, B.getInt32(low)),
        B.getInt32(static_cast<uint32_t>(high)));
    return B.CreateAnd(clamped, B.getInt32((1u << narrow->bits) - 1));
  };
  ROCUDA_VALUE(a, saturated(ops[1]));
  ROCUDA_VALUE(b, saturated(ops[2]));
  llvm::Value* d = B.CreateOr(B.CreateShl(a, narrow->bits), b);
  if (withC) {
    ROCUDA_VALUE(c, t.read(ops[3], ScalarType::B32));
    d = B.CreateOr(d, B.CreateShl(c, 2 * narrow->bits));
  }
  return t.write(ops[0], d, ScalarType::B32);
}

Status translateConvertOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.opcode == ptx::Opcode::cvt_pack) return convertPack(t, inst);
  if (inst.opcode != ptx::Opcode::cvt || inst.types().size() != 2) return t.unsupported(inst);
  // Stochastic rounding (sm_100a) takes a third operand of random bits.
  if (inst.hasModifier("rs")) return t.unsupported(inst, "stochastic rounding (.rs)");
  ScalarType to = inst.types()[0], from = inst.types()[1];
  if (to == ScalarType::UE8M0x2 || from == ScalarType::UE8M0x2)
    return convertUe8m0(t, inst, to, from);
  if (minifloatOf(to) || minifloatOf(from)) return convertMinifloat(t, inst, to, from);
  if (to == ScalarType::TF32 && from == ScalarType::F32) return convertTf32(t, inst);
  bool halfResult = to == ScalarType::F16 || to == ScalarType::BF16 || to == ScalarType::F16x2 ||
                    to == ScalarType::BF16x2;
  if (inst.hasModifier("satfinite") && (!halfResult || from != ScalarType::F32))
    return t.unsupported(inst);
  if ((to == ScalarType::F16x2 || to == ScalarType::BF16x2) && from == ScalarType::F32) {
    // cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower.
    if (inst.operands().size() != 3) return t.invalid(inst, "expected d, a, b");
    ScalarType half = to == ScalarType::F16x2 ? ScalarType::F16 : ScalarType::BF16;
    ROCUDA_VALUE(hi, convertScalar(t, inst, inst.operands()[1], half, from));
    ROCUDA_VALUE(lo, convertScalar(t, inst, inst.operands()[2], half, from));
    auto& B = t.b;
    llvm::Value* h = B.CreateZExt(B.CreateBitCast(hi, B.getInt16Ty()), t.i32());
    llvm::Value* l = B.CreateZExt(B.CreateBitCast(lo, B.getInt16Ty()), t.i32());
    return t.write(inst.operands()[0], B.CreateOr(B.CreateShl(h, 16), l), ScalarType::B32);
  }
  if (!supportedType(to) || !supportedType(from)) return t.unsupported(inst);
  if (inst.operands().size() != 2) return t.invalid(inst, "expected d, a");
  ROCUDA_VALUE(r, convertScalar(t, inst, inst.operands()[1], to, from));
  return t.write(inst.operands()[0], r, to);
}

}  // namespace rocuda::compiler::detail
