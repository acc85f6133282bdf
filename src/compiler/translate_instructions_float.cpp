// Floating-point arithmetic: add/sub/mul/fma/mad/div/rcp/sqrt (IEEE; .rz/.rm/.rp in the target's
// dynamic rounding mode, see roundedHelper), the approximate transcendental forms, min/max with
// PTX NaN rules, abs/neg/copysign/testp, and .ftz (flush subnormal inputs and results to signed
// zero). A mul and an add/sub without rounding modifiers fuse into an fma, as ptxas fuses them.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

// The next representable value above x (x finite or -inf).
llvm::Value* nextUp(FunctionTranslator& t, llvm::Value* x) {
  auto& B = t.b;
  auto* it = B.getIntNTy(static_cast<unsigned>(x->getType()->getPrimitiveSizeInBits()));
  llvm::Value* bits = B.CreateBitCast(x, it);
  llvm::Value* up = B.CreateSelect(B.CreateFCmpOGT(x, llvm::ConstantFP::get(x->getType(), 0.0)),
                                   B.CreateAdd(bits, llvm::ConstantInt::get(it, 1)),
                                   B.CreateSub(bits, llvm::ConstantInt::get(it, 1)));
  llvm::Value* isZero = B.CreateFCmpOEQ(x, llvm::ConstantFP::get(x->getType(), 0.0));
  up = B.CreateSelect(isZero, llvm::ConstantInt::get(it, 1), up);
  return B.CreateBitCast(up, x->getType());
}

llvm::Value* nextDown(FunctionTranslator& t, llvm::Value* x) {
  return t.b.CreateFNeg(nextUp(t, t.b.CreateFNeg(x)));
}

}  // namespace

// Round-to-nearest result `r` moved one step to honour a directed mode; `err` has the sign of
// (exact - r), in r's type or a wider one (only its sign counts). Shared with conversions.
llvm::Value* applyDirectedRounding(FunctionTranslator& t, llvm::Value* r, llvm::Value* err,
                                   const std::string& mode) {
  auto& B = t.b;
  auto* zero = llvm::ConstantFP::get(r->getType(), 0.0);
  auto* errZero = llvm::ConstantFP::get(err->getType(), 0.0);
  llvm::Value* above = B.CreateFCmpOGT(err, errZero);  // exact > r
  llvm::Value* below = B.CreateFCmpOLT(err, errZero);  // exact < r
  if (mode == "rp" || mode == "rpi") return B.CreateSelect(above, nextUp(t, r), r);
  if (mode == "rm" || mode == "rmi") return B.CreateSelect(below, nextDown(t, r), r);
  if (mode == "rz" || mode == "rzi") {
    llvm::Value* pos = B.CreateFCmpOGT(r, zero);
    llvm::Value* neg = B.CreateFCmpOLT(r, zero);
    r = B.CreateSelect(B.CreateAnd(pos, below), nextDown(t, r), r);
    return B.CreateSelect(B.CreateAnd(neg, above), nextUp(t, r), r);
  }
  return r;
}

namespace {

bool isDirected(const std::string& mode) { return mode == "rz" || mode == "rm" || mode == "rp"; }

llvm::Value* fmaOf(FunctionTranslator& t, llvm::Value* a, llvm::Value* b, llvm::Value* c) {
  return t.b.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, b, c});
}

// llvm.set.rounding's encoding of a PTX rounding modifier.
int llvmRoundingMode(const std::string& mode) {
  if (mode == "rz") return 0;
  if (mode == "rp") return 2;
  if (mode == "rm") return 3;
  return 1;
}

// The same mode as constrained operations name it.
llvm::RoundingMode constrainedRounding(const std::string& mode) {
  if (mode == "rz") return llvm::RoundingMode::TowardZero;
  if (mode == "rp") return llvm::RoundingMode::TowardPositive;
  if (mode == "rm") return llvm::RoundingMode::TowardNegative;
  return llvm::RoundingMode::NearestTiesToEven;
}

enum class RoundedOp { Add, Mul, Fma, Div, Sqrt };

// .rz/.rm/.rp arithmetic runs in a small helper per operation, mode and type: it switches the
// target's dynamic rounding mode around one constrained operation and restores it, so the
// hardware rounds exactly (overflow, subnormal results and signed zeros included). The helper
// is strictfp and never inlined, so no ordinary floating-point code runs under a changed mode.
// The operation names its mode rather than "dynamic": where its operands are constants (every
// call passes the same ones) LLVM folds it, and only the named mode gives an exact zero its
// sign (1 + -1 is -0 rounding toward minus infinity).
llvm::Function* roundedHelper(FunctionTranslator& t, RoundedOp op, const std::string& mode,
                              llvm::Type* type) {
  static const char* const kNames[] = {"add", "mul", "fma", "div", "sqrt"};
  std::string name = std::string("__rocuda_rounded_") + kNames[static_cast<int>(op)] + "_" + mode +
                     (type->isDoubleTy() ? "_f64" : "_f32");
  llvm::Module& m = t.mt.module();
  if (auto* existing = m.getFunction(name)) return existing;
  unsigned arity = op == RoundedOp::Fma ? 3 : op == RoundedOp::Sqrt ? 1 : 2;
  std::vector<llvm::Type*> params(arity, type);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(type, params, false),
                                    llvm::Function::InternalLinkage, name, m);
  fn->addFnAttr(llvm::Attribute::StrictFP);
  fn->addFnAttr(llvm::Attribute::NoInline);
  fn->setDoesNotThrow();
  fn->setWillReturn();
  llvm::IRBuilder<> B(llvm::BasicBlock::Create(m.getContext(), "entry", fn));
  B.setIsFPConstrained(true);
  B.setDefaultConstrainedRounding(constrainedRounding(mode));
  B.setDefaultConstrainedExcept(llvm::fp::ebIgnore);
  llvm::Value* saved = B.CreateIntrinsic(llvm::Intrinsic::get_rounding, {}, {});
  B.CreateIntrinsic(llvm::Intrinsic::set_rounding, {}, {B.getInt32(llvmRoundingMode(mode))});
  llvm::Value* a = fn->getArg(0);
  llvm::Value* r = nullptr;
  switch (op) {
    case RoundedOp::Add: r = B.CreateFAdd(a, fn->getArg(1)); break;
    case RoundedOp::Mul: r = B.CreateFMul(a, fn->getArg(1)); break;
    case RoundedOp::Div: r = B.CreateFDiv(a, fn->getArg(1)); break;
    case RoundedOp::Fma:
      r = B.CreateConstrainedFPCall(
          llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::experimental_constrained_fma, {type}),
          {a, fn->getArg(1), fn->getArg(2)});
      break;
    case RoundedOp::Sqrt:
      r = B.CreateConstrainedFPCall(
          llvm::Intrinsic::getDeclaration(&m, llvm::Intrinsic::experimental_constrained_sqrt, {type}),
          {a});
      break;
  }
  B.CreateIntrinsic(llvm::Intrinsic::set_rounding, {}, {saved});
  B.CreateRet(r);
  return fn;
}

// f32 division and square root in a directed mode: computed in double, where the exact
// remainder tells on which side of the double result the exact value lies; then that double is
// rounded to f32 in the mode. Exact for every f32 input (no double underflow is possible), and
// needs no strict division or square root, which the AMDGPU backend cannot select.
llvm::Value* divSqrtF32ViaDouble(FunctionTranslator& t, RoundedOp op, const std::string& mode,
                                 llvm::Value* a, llvm::Value* b) {
  auto& B = t.b;
  auto* d = B.getDoubleTy();
  auto* zero = llvm::ConstantFP::get(d, 0.0);
  llvm::Value* x = B.CreateFPExt(a, d);
  llvm::Value* s = nullptr;
  llvm::Value* err = nullptr;  // has the sign of (exact - s)
  if (op == RoundedOp::Sqrt) {
    s = B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    err = fmaOf(t, B.CreateFNeg(s), s, x);
  } else {
    llvm::Value* y = B.CreateFPExt(b, d);
    s = B.CreateFDiv(x, y);
    llvm::Value* rem = fmaOf(t, B.CreateFNeg(s), y, x);
    err = B.CreateSelect(B.CreateFCmpOLT(y, zero), B.CreateFNeg(rem), rem);
  }
  llvm::Value* r = B.CreateFPTrunc(s, a->getType());
  llvm::Value* diff = B.CreateFSub(s, B.CreateFPExt(r, d));  // exact
  llvm::Value* side = B.CreateSelect(B.CreateFCmpONE(diff, zero), diff, err);
  return applyDirectedRounding(t, r, side, mode);
}

llvm::Value* rounded(FunctionTranslator& t, RoundedOp op, const std::string& mode,
                     std::vector<llvm::Value*> args) {
  bool divOrSqrt = op == RoundedOp::Div || op == RoundedOp::Sqrt;
  if (divOrSqrt && args[0]->getType()->isFloatTy())
    return divSqrtF32ViaDouble(t, op, mode, args[0], args.size() > 1 ? args[1] : nullptr);
  llvm::Function* helper = roundedHelper(t, op, mode, args[0]->getType());
  return t.b.CreateCall(helper, args);
}

// `element`, or a vector of it when `like` is a vector: a type of the same shape.
llvm::Type* shapedLike(llvm::Type* like, llvm::Type* element) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(like))
    return llvm::FixedVectorType::get(element, vt->getNumElements());
  return element;
}

// The integer type of v's width, vector shaped like v.
llvm::Type* bitsTypeOf(llvm::Value* v) {
  llvm::Type* ty = v->getType();
  return shapedLike(ty, llvm::Type::getIntNTy(ty->getContext(), ty->getScalarSizeInBits()));
}

// `r`, the rounded-to-nearest value of an exact result whose error `err` (exact - r, in r's or
// a wider type: only its sign and zeroness count) is known, rounded to odd instead: truncated
// toward zero, last bit set if inexact.
llvm::Value* roundedToOdd(FunctionTranslator& t, llvm::Value* r, llvm::Value* err) {
  auto& B = t.b;
  auto* zero = llvm::ConstantFP::get(r->getType(), 0.0);
  auto* errZero = llvm::ConstantFP::get(err->getType(), 0.0);
  llvm::Type* it = bitsTypeOf(r);
  llvm::Value* bits = B.CreateBitCast(r, it);
  // r moved away from zero when the error points back towards it: step its magnitude down.
  llvm::Value* away =
      B.CreateOr(B.CreateAnd(B.CreateFCmpOGT(r, zero), B.CreateFCmpOLT(err, errZero)),
                 B.CreateAnd(B.CreateFCmpOLT(r, zero), B.CreateFCmpOGT(err, errZero)));
  bits = B.CreateSelect(away, B.CreateSub(bits, llvm::ConstantInt::get(it, 1)), bits);
  llvm::Value* inexact = B.CreateFCmpONE(err, errZero);
  bits = B.CreateSelect(inexact, B.CreateOr(bits, llvm::ConstantInt::get(it, 1)), bits);
  return B.CreateBitCast(bits, r->getType());
}

// fma on f16 / bf16 (and their x2 forms) rounded once: a*b is exact in double and TwoSum gives
// the exact error of adding c; the double is rounded to odd, then to odd again in f32, and only
// the last step rounds to nearest. An f32 fma followed by a rounding to 16 bits would round
// twice and miss the nearest value now and then.
llvm::Value* fmaHalfOnce(FunctionTranslator& t, llvm::Value* a, llvm::Value* b, llvm::Value* c) {
  auto& B = t.b;
  llvm::Type* ty = a->getType();
  llvm::Type* d = shapedLike(ty, B.getDoubleTy());
  llvm::Type* f = shapedLike(ty, B.getFloatTy());
  llvm::Value* product = B.CreateFMul(B.CreateFPExt(a, d), B.CreateFPExt(b, d));  // exact
  llvm::Value* addend = B.CreateFPExt(c, d);
  llvm::Value* sum = B.CreateFAdd(product, addend);
  llvm::Value* bb = B.CreateFSub(sum, product);
  llvm::Value* err = B.CreateFAdd(B.CreateFSub(product, B.CreateFSub(sum, bb)),
                                  B.CreateFSub(addend, bb));
  llvm::Value* odd = roundedToOdd(t, sum, err);
  llvm::Value* narrow = B.CreateFPTrunc(odd, f);
  llvm::Value* narrowErr = B.CreateFSub(odd, B.CreateFPExt(narrow, d));  // exact (or NaN)
  llvm::Value* narrowOdd = roundedToOdd(t, narrow, narrowErr);
  return B.CreateFPTrunc(narrowOdd, ty);
}

Result<llvm::Value*> arith(FunctionTranslator& t, const ptx::Instruction& inst, llvm::Value* a,
                           llvm::Value* b, llvm::Value* c) {
  auto& B = t.b;
  std::string mode = roundingModifier(inst);
  bool directed = isDirected(mode);
  bool scalar = a->getType()->isFloatTy() || a->getType()->isDoubleTy();
  if (directed && !scalar) return t.unsupported(inst, "directed rounding on this type");
  switch (inst.opcode) {
    case ptx::Opcode::add:
    case ptx::Opcode::sub: {
      llvm::Value* y = inst.opcode == ptx::Opcode::sub ? B.CreateFNeg(b) : b;
      return directed ? rounded(t, RoundedOp::Add, mode, {a, y}) : B.CreateFAdd(a, y);
    }
    case ptx::Opcode::mul:
      return directed ? rounded(t, RoundedOp::Mul, mode, {a, b}) : B.CreateFMul(a, b);
    case ptx::Opcode::fma:
    case ptx::Opcode::mad:
      if (directed) return rounded(t, RoundedOp::Fma, mode, {a, b, c});
      if (!scalar) return fmaHalfOnce(t, a, b, c);  // f16, bf16 and their x2 forms
      return fmaOf(t, a, b, c);
    case ptx::Opcode::div: {
      if (directed) return rounded(t, RoundedOp::Div, mode, {a, b});
      llvm::Value* quotient = B.CreateFDiv(a, b);
      if (!inst.hasModifier("approx") || !a->getType()->isFloatTy()) return quotient;
      // div.approx.f32 is a * (1/b) with the reciprocal flushed: for |b| > 2^126 the result is
      // a signed zero, and NaN for an infinite a (__fdividef's documented behaviour).
      llvm::Value* huge = B.CreateFCmpOGT(B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, b),
                                          llvm::ConstantFP::get(b->getType(), 0x1p126));
      llvm::Value* flushed =
          B.CreateFMul(a, B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                                  llvm::ConstantFP::get(b->getType(), 0.0), b));
      flushed =
          B.CreateSelect(B.CreateFCmpUNO(flushed, flushed), canonicalNaN(b->getType()), flushed);
      return B.CreateSelect(huge, flushed, quotient);
    }
    default:
      return t.unsupported(inst);
  }
}

namespace {

// ex2.approx.f32 and lg2.approx.f32 are approximations on NVIDIA hardware, and cuda_fp16.hpp's
// half-precision exp, exp2, exp10, log and log10 compensate for the hardware's error at the few
// half inputs where it would make their result differ from the correctly rounded one the Math
// API documents (its special-case `fma.rn.f16 r, p, ulp, r` fixes and hexp2's nudge by 2^-24).
// Rocuda's exp2/log2 are accurate, so at exactly those arguments the compensation would make
// the half result one ulp wrong. These are the hardware's values there, as far as the half
// result can tell them: derived from the header's corrections as the nearest float to the
// accurate result that makes each header function correctly rounded for all 65,536 inputs
// (e2e half_math checks every input). Every other argument keeps the accurate result; these
// values too are within the error PTX documents for the instructions.
struct HardwareApproximation {
  uint32_t argument;
  uint32_t result;
};
constexpr HardwareApproximation kEx2HardwareValues[] = {
    {0x3f8158fb, 0x4000f000}, {0xb9b8c000, 0x3f7feffe}, {0xbbc49dda, 0x3f7ef000},
    {0xbbf30000, 0x3f7eaffe}, {0xbc10b624, 0x3f7e6fff}, {0xbd993953, 0x3f731000},
    {0xbdeae000, 0x3f6c6ffe}, {0xc0717899, 0x3d95d000}, {0xc088f743, 0x3d52d000},
};
constexpr HardwareApproximation kLg2HardwareValues[] = {
    {0x3ac1a000, 0xc1167230}, {0x3b26a000, 0xc109e9a1}, {0x3baf0000, 0xc0f18fad},
    {0x3f7fc000, 0xbab8c151}, {0x3f816000, 0x3c7c8fd3}, {0x40448000, 0x3fcf2741},
    {0x440a2000, 0x4111c1dd},
};

llvm::Value* withHardwareValues(FunctionTranslator& t, llvm::Value* argument, llvm::Value* result,
                                llvm::ArrayRef<HardwareApproximation> values) {
  auto& B = t.b;
  llvm::Value* argumentBits = B.CreateBitCast(argument, B.getInt32Ty());
  llvm::Value* bits = B.CreateBitCast(result, B.getInt32Ty());
  for (const HardwareApproximation& v : values)
    bits = B.CreateSelect(B.CreateICmpEQ(argumentBits, B.getInt32(v.argument)),
                          B.getInt32(v.result), bits);
  return B.CreateBitCast(bits, result->getType());
}

}  // namespace

Status unaryMath(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type,
                 llvm::Value* a) {
  auto& B = t.b;
  llvm::Type* ty = a->getType();
  bool ftz = inst.hasModifier("ftz");
  llvm::Value* r = nullptr;
  std::string mode = roundingModifier(inst);
  auto one = llvm::ConstantFP::get(ty, 1.0);
  switch (inst.opcode) {
    case ptx::Opcode::abs:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
      break;
    case ptx::Opcode::neg:
      r = B.CreateFNeg(a);
      break;
    case ptx::Opcode::sqrt:
      r = isDirected(mode) ? rounded(t, RoundedOp::Sqrt, mode, {a})
                           : B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
      break;
    case ptx::Opcode::rsqrt:
      r = B.CreateFDiv(one, B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a));
      break;
    case ptx::Opcode::rcp:
      r = isDirected(mode) ? rounded(t, RoundedOp::Div, mode, {one, a}) : B.CreateFDiv(one, a);
      break;
    case ptx::Opcode::sin:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::sin, a);
      break;
    case ptx::Opcode::cos:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::cos, a);
      break;
    case ptx::Opcode::ex2:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::exp2, a);
      if (ty->isFloatTy()) r = withHardwareValues(t, a, r, kEx2HardwareValues);
      break;
    case ptx::Opcode::lg2:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::log2, a);
      if (ty->isFloatTy()) r = withHardwareValues(t, a, r, kLg2HardwareValues);
      break;
    case ptx::Opcode::tanh: {
      // f16, bf16 and each half of their x2 forms through f32 (at least as precise as the
      // approximation's documented error).
      llvm::Type* work = ty->isDoubleTy() ? ty : B.getFloatTy();
      auto tanhOf = [&](llvm::Value* x) -> llvm::Value* {
        llvm::Type* xTy = x->getType();
        if (xTy != work) x = B.CreateFPExt(x, work);
        llvm::Value* y =
            B.CreateCall(t.mt.libmFunction(work->isDoubleTy() ? "tanh" : "tanhf", work, 1), {x});
        return xTy != work ? B.CreateFPTrunc(y, xTy) : y;
      };
      if (auto* vector = llvm::dyn_cast<llvm::FixedVectorType>(ty)) {
        r = llvm::PoisonValue::get(ty);
        for (unsigned i = 0; i < vector->getNumElements(); ++i)
          r = B.CreateInsertElement(r, tanhOf(B.CreateExtractElement(a, i)), i);
      } else {
        r = tanhOf(a);
      }
      break;
    }
    default:
      return t.unsupported(inst);
  }
  if (ftz) r = flushSubnormal(t, r);
  return t.write(inst.operands()[0], r, type);
}

Status testp(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  llvm::Type* ty = a->getType();
  llvm::Value* mag = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a);
  auto inf = llvm::ConstantFP::getInfinity(ty);
  auto minNormal =
      llvm::ConstantFP::get(ty, llvm::APFloat::getSmallestNormalized(ty->getFltSemantics()));
  llvm::Value* r = nullptr;
  if (inst.hasModifier("finite"))
    r = B.CreateFCmpOLT(mag, inf);
  else if (inst.hasModifier("infinite"))
    r = B.CreateFCmpOEQ(mag, inf);
  else if (inst.hasModifier("number"))
    r = B.CreateFCmpORD(a, a);
  else if (inst.hasModifier("notanumber"))
    r = B.CreateFCmpUNO(a, a);
  else if (inst.hasModifier("normal"))  // the ISA counts +-0 as normal
    r = B.CreateAnd(B.CreateOr(B.CreateFCmpOGE(mag, minNormal),
                               B.CreateFCmpOEQ(mag, llvm::ConstantFP::get(ty, 0.0))),
                    B.CreateFCmpOLT(mag, inf));
  else if (inst.hasModifier("subnormal"))
    r = B.CreateAnd(B.CreateFCmpOLT(mag, minNormal),
                    B.CreateFCmpONE(mag, llvm::ConstantFP::get(ty, 0.0)));
  else
    return t.unsupported(inst);
  return t.write(inst.operands()[0], r, ScalarType::Pred);
}

// min/max of two inputs, or of three (f32, sm_100): .abs compares magnitudes, .xorsign.abs (two
// inputs only) signs the result with sign(a) ^ sign(b) unless it is NaN.
Status minMax(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  size_t inputs = inst.operands().size() - 1;
  if (inputs != 2 && inputs != 3) return t.invalid(inst, "min/max takes two or three inputs");
  bool xorsign = inst.hasModifier("xorsign");
  bool abs = inst.hasModifier("abs");
  if (xorsign && !abs) return t.invalid(inst, ".xorsign needs .abs");
  if (inputs == 3 && (xorsign || type != ScalarType::F32))
    return t.invalid(inst, "three-input min/max is .f32 without .xorsign");
  bool ftz = inst.hasModifier("ftz");
  std::vector<llvm::Value*> in;
  for (size_t i = 1; i <= inputs; ++i) {
    ROCUDA_VALUE(v, t.read(inst.operands()[i], type));
    in.push_back(ftz ? flushSubnormal(t, v) : v);
  }
  llvm::Value* signs = nullptr;
  if (xorsign) {
    llvm::Type* bitsType = bitsTypeOf(in[0]);
    signs = B.CreateXor(B.CreateBitCast(in[0], bitsType), B.CreateBitCast(in[1], bitsType));
  }
  if (abs)
    for (llvm::Value*& v : in) v = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  bool isMin = inst.opcode == ptx::Opcode::min;
  bool propagateNaN = inst.hasModifier("NaN");
  llvm::Value* r = minMaxOfTwo(t, isMin, propagateNaN, in[0], in[1]);
  if (inputs == 3) r = minMaxOfTwo(t, isMin, propagateNaN, r, in[2]);
  if (xorsign) {
    llvm::Type* bitsType = signs->getType();
    auto* signMask = llvm::ConstantInt::get(
        bitsType, llvm::APInt::getSignMask(bitsType->getScalarSizeInBits()));
    llvm::Value* magnitude = B.CreateBitCast(r, bitsType);
    llvm::Value* withSign = B.CreateOr(magnitude, B.CreateAnd(signs, signMask));
    r = B.CreateSelect(B.CreateFCmpUNO(r, r), r, B.CreateBitCast(withSign, r->getType()));
  }
  if (ftz) r = flushSubnormal(t, r);
  return t.write(inst.operands()[0], r, type);
}

}  // namespace

// PTX min/max of two values, element by element: -0 orders below +0; a NaN input yields the
// other input (both NaN: the canonical NaN), or with .NaN the canonical NaN. Compares and
// selects rather than LLVM's minnum/maximum, which leave the zeros' order and the NaN's bits
// open (and whose x86 lowering of <2 x half> maximum lost a NaN in one lane).
llvm::Value* minMaxOfTwo(FunctionTranslator& t, bool isMin, bool propagateNaN, llvm::Value* a,
                         llvm::Value* b) {
  auto& B = t.b;
  llvm::Type* ty = a->getType();
  llvm::Value* aWins = isMin ? B.CreateFCmpOLT(a, b) : B.CreateFCmpOGT(a, b);
  llvm::Value* r = B.CreateSelect(aWins, a, b);
  llvm::Type* it = bitsTypeOf(a);
  llvm::Value* ai = B.CreateBitCast(a, it);
  llvm::Value* bi = B.CreateBitCast(b, it);
  llvm::Value* zeros = B.CreateBitCast(isMin ? B.CreateOr(ai, bi) : B.CreateAnd(ai, bi), ty);
  auto* zero = llvm::ConstantFP::get(ty, 0.0);
  llvm::Value* bothZero = B.CreateAnd(B.CreateFCmpOEQ(a, zero), B.CreateFCmpOEQ(b, zero));
  r = B.CreateSelect(bothZero, zeros, r);
  llvm::Value* aNaN = B.CreateFCmpUNO(a, a);
  llvm::Value* bNaN = B.CreateFCmpUNO(b, b);
  llvm::Constant* nan = canonicalNaN(ty);
  if (propagateNaN) return B.CreateSelect(B.CreateOr(aNaN, bNaN), nan, r);
  return B.CreateSelect(aNaN, B.CreateSelect(bNaN, nan, b), B.CreateSelect(bNaN, a, r));
}

namespace {

// The contractible product (FunctionTranslator::ContractibleProduct) operand `op` names, if any:
// made in the current block, of the same type and .ftz as the add that reads it.
const FunctionTranslator::ContractibleProduct* findProduct(FunctionTranslator& t,
                                                           const ptx::Operand& op, ScalarType type,
                                                           bool ftz) {
  if (op.kind != ptx::Operand::Kind::Register || !op.component().empty()) return nullptr;
  auto it = t.contractibleProducts.find(op.reg());
  if (it == t.contractibleProducts.end()) return nullptr;
  const auto& product = it->second;
  if (product.block != t.b.GetInsertBlock() || product.type != type || product.ftz != ftz)
    return nullptr;
  return &product;
}

// An add/sub's first operand that is a contractible product, else its second, else none.
const FunctionTranslator::ContractibleProduct* productOperand(FunctionTranslator& t,
                                                              const ptx::Instruction& inst,
                                                              ScalarType type, bool ftz) {
  if (const auto* product = findProduct(t, inst.operands()[1], type, ftz)) return product;
  return findProduct(t, inst.operands()[2], type, ftz);
}

// add/sub of `product` (operand 1 when `first`, else 2) and `other` as one fma: a*b + c,
// a*b - c, or c - a*b.
Status fuseProduct(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type,
                   const FunctionTranslator::ContractibleProduct& product, bool first,
                   llvm::Value* other) {
  auto& B = t.b;
  bool sub = inst.opcode == ptx::Opcode::sub;
  llvm::Value* a = sub && !first ? B.CreateFNeg(product.a) : product.a;
  llvm::Value* c = sub && first ? B.CreateFNeg(other) : other;
  bool scalar = a->getType()->isFloatTy() || a->getType()->isDoubleTy();
  llvm::Value* r = scalar ? fmaOf(t, a, product.b, c) : fmaHalfOnce(t, a, product.b, c);
  if (product.ftz) r = flushSubnormal(t, r);
  return t.write(inst.operands()[0], r, type);
}

}  // namespace

namespace {

// add/sub/mul/fma.f32x2 (sm_100): each 64-bit operand holds two f32, the first element in the
// low half; the operation (with its rounding and .ftz) applies to each pair of elements.
Status packedF32Pair(FunctionTranslator& t, const ptx::Instruction& inst) {
  bool three = inst.opcode == ptx::Opcode::fma;
  if (!three && inst.opcode != ptx::Opcode::add && inst.opcode != ptx::Opcode::sub &&
      inst.opcode != ptx::Opcode::mul)
    return t.unsupported(inst, "this packed .f32x2 operation");
  if (inst.operands().size() != (three ? 4u : 3u))
    return t.invalid(inst, three ? "expected d, a, b, c" : "expected d, a, b");
  auto& B = t.b;
  bool ftz = inst.hasModifier("ftz");
  llvm::Value* pairs[3] = {nullptr, nullptr, nullptr};
  for (size_t i = 1; i < inst.operands().size(); ++i) {
    ROCUDA_VALUE(v, t.read(inst.operands()[i], ScalarType::B64));
    pairs[i - 1] = v;
  }
  auto element = [&](llvm::Value* pair, unsigned half) -> llvm::Value* {
    if (pair == nullptr) return nullptr;
    llvm::Value* bits = B.CreateTrunc(B.CreateLShr(pair, 32 * half), B.getInt32Ty());
    llvm::Value* v = B.CreateBitCast(bits, B.getFloatTy());
    return ftz ? flushSubnormal(t, v) : v;
  };
  llvm::Value* result = B.getInt64(0);
  for (unsigned half = 0; half < 2; ++half) {
    ROCUDA_VALUE(r, arith(t, inst, element(pairs[0], half), element(pairs[1], half),
                          element(pairs[2], half)));
    if (ftz) r = flushSubnormal(t, r);
    llvm::Value* bits = B.CreateZExt(B.CreateBitCast(r, B.getInt32Ty()), B.getInt64Ty());
    result = B.CreateOr(result, B.CreateShl(bits, 32 * half));
  }
  return t.write(inst.operands()[0], result, ScalarType::B64);
}

}  // namespace

Status translateFloatOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.hasModifier("f32x2")) return packedF32Pair(t, inst);
  if (inst.types().empty()) return t.invalid(inst, "missing type");
  ScalarType type = inst.types()[0];
  if (inst.operands().size() < 2) return t.invalid(inst, "too few operands");
  if (inst.opcode == ptx::Opcode::testp) return testp(t, inst, type);
  if (!ptx::isFloat(type) || type == ScalarType::TF32 || scalarTypeSize(type) == 1)
    return t.unsupported(inst);
  auto& B = t.b;
  bool ftz = inst.hasModifier("ftz");
  auto operand = [&](size_t i) -> Result<llvm::Value*> {
    auto v = t.read(inst.operands()[i], type);
    if (v.ok() && ftz) return flushSubnormal(t, *v);
    return v;
  };
  switch (inst.opcode) {
    case ptx::Opcode::add:
    case ptx::Opcode::sub:
    case ptx::Opcode::mul:
    case ptx::Opcode::div:
    case ptx::Opcode::fma:
    case ptx::Opcode::mad: {
      bool three = inst.opcode == ptx::Opcode::fma || inst.opcode == ptx::Opcode::mad;
      if (inst.operands().size() < (three ? 4u : 3u)) return t.invalid(inst, "too few operands");
      bool contractible =
          roundingModifier(inst).empty() && !inst.hasModifier("sat") && !inst.hasModifier("relu");
      if (contractible && (inst.opcode == ptx::Opcode::add || inst.opcode == ptx::Opcode::sub))
        if (const auto* product = productOperand(t, inst, type, ftz)) {
          bool first = product == findProduct(t, inst.operands()[1], type, ftz);
          ROCUDA_VALUE(other, operand(first ? 2 : 1));
          return fuseProduct(t, inst, type, *product, first, other);
        }
      ROCUDA_VALUE(a, operand(1));
      ROCUDA_VALUE(b, operand(2));
      llvm::Value* c = nullptr;
      if (three) {
        auto cv = operand(3);
        if (!cv.ok()) return cv.error();
        c = *cv;
      }
      ROCUDA_VALUE(r, arith(t, inst, a, b, c));
      if (inst.hasModifier("sat")) r = saturateUnit(t, r);
      if (inst.hasModifier("relu")) r = reluOf(t, r);
      if (ftz) r = flushSubnormal(t, r);
      ROCUDA_TRY(t.write(inst.operands()[0], r, type));
      if (contractible && inst.opcode == ptx::Opcode::mul &&
          inst.operands()[0].kind == ptx::Operand::Kind::Register &&
          inst.operands()[0].reg() < t.registerMentions.size() &&
          t.registerMentions[inst.operands()[0].reg()] == 2)
        t.contractibleProducts[inst.operands()[0].reg()] = {a, b, B.GetInsertBlock(), type, ftz};
      return Status::success();
    }
    case ptx::Opcode::min:
    case ptx::Opcode::max:
      return minMax(t, inst, type);
    case ptx::Opcode::copysign: {
      if (inst.operands().size() < 3) return t.invalid(inst, "too few operands");
      ROCUDA_VALUE(a, operand(1));
      ROCUDA_VALUE(b, operand(2));
      // PTX: d = b with the sign of a.
      return t.write(inst.operands()[0], B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b, a),
                     type);
    }
    default: {
      ROCUDA_VALUE(a, operand(1));
      return unaryMath(t, inst, type, a);
    }
  }
}

// The flush itself: |v| below the smallest normal becomes a zero with v's sign.
llvm::Value* flushBelowNormal(llvm::IRBuilder<>& B, llvm::Value* v) {
  llvm::Type* element = v->getType()->getScalarType();
  llvm::Value* mag = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  auto* minNormal = llvm::ConstantFP::get(
      v->getType(), llvm::APFloat::getSmallestNormalized(element->getFltSemantics()));
  llvm::Value* tiny = B.CreateFCmpOLT(mag, minNormal);
  llvm::Value* zero = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                              llvm::ConstantFP::get(v->getType(), 0.0), v);
  return B.CreateSelect(tiny, zero, v);
}

namespace {

// float __rocuda_flush_f32(float), defined on first use (always inlined).
llvm::Function* flushF32Function(FunctionTranslator& t) {
  llvm::Module& module = t.mt.module();
  const char* name = "__rocuda_flush_f32";
  if (llvm::Function* existing = module.getFunction(name)) return existing;
  auto* f32 = t.b.getFloatTy();
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(f32, {f32}, false),
                                    llvm::GlobalValue::InternalLinkage, name, module);
  fn->addFnAttr(llvm::Attribute::AlwaysInline);
  fn->setDoesNotThrow();
  fn->setDoesNotAccessMemory();
  fn->addFnAttr(llvm::Attribute::Speculatable);
  fn->addFnAttr(llvm::Attribute::WillReturn);
  llvm::IRBuilder<> B(llvm::BasicBlock::Create(t.ctx(), "entry", fn));
  B.CreateRet(flushBelowNormal(B, fn->getArg(0)));
  return fn;
}

}  // namespace

llvm::Constant* canonicalNaN(llvm::Type* ty) {
  unsigned width = ty->getScalarSizeInBits();
  llvm::Type* intTy = shapedLike(ty, llvm::Type::getIntNTy(ty->getContext(), width));
  return llvm::ConstantExpr::getBitCast(
      llvm::ConstantInt::get(intTy, llvm::APInt::getSignedMaxValue(width)), ty);
}

llvm::Value* saturateUnit(FunctionTranslator& t, llvm::Value* v) {
  auto& B = t.b;
  auto* zero = llvm::ConstantFP::get(v->getType(), 0.0);
  auto* one = llvm::ConstantFP::get(v->getType(), 1.0);
  llvm::Value* r = B.CreateSelect(B.CreateFCmpOLE(v, zero), zero, v);  // -0 too: [+0.0, 1.0]
  r = B.CreateSelect(B.CreateFCmpOGT(r, one), one, r);
  return B.CreateSelect(B.CreateFCmpUNO(v, v), zero, r);
}

llvm::Value* reluOf(FunctionTranslator& t, llvm::Value* v) {
  auto& B = t.b;
  auto* zero = llvm::ConstantFP::get(v->getType(), 0.0);
  // max(v, +0) as the hardware's min/max order zeros: -0 becomes +0 too.
  llvm::Value* clamped = B.CreateSelect(B.CreateFCmpOLE(v, zero), zero, v);
  return B.CreateSelect(B.CreateFCmpUNO(v, v), canonicalNaN(v->getType()), clamped);
}

llvm::Value* flushSubnormal(FunctionTranslator& t, llvm::Value* v) {
  llvm::Type* element = v->getType()->getScalarType();
  if (!element->isFloatingPointTy()) return v;
  if (v->getType()->isFloatTy()) return t.b.CreateCall(flushF32Function(t), {v});
  return flushBelowNormal(t.b, v);
}

bool keepsF32Subnormals(const ptx::Instruction& inst) {
  using ptx::Opcode;
  auto types = inst.types();
  if (std::find(types.begin(), types.end(), ScalarType::F32) == types.end()) return false;
  if (inst.hasModifier("ftz")) return false;
  switch (inst.opcode) {
    // Bits moved, not computed; atom/red .add.f32 flush by definition.
    case Opcode::mov:
    case Opcode::ld:
    case Opcode::ldu:
    case Opcode::st:
    case Opcode::selp:
    case Opcode::shfl:
    case Opcode::atom:
    case Opcode::red:
    case Opcode::tex:
    case Opcode::tld4:
    case Opcode::suld:
    case Opcode::sust:
      return false;
    case Opcode::wmma:  // fragments loaded and stored; wmma.mma computes
      return inst.hasModifier("mma");
    case Opcode::cvt: {
      if (types.size() != 2) return true;
      ScalarType to = types[0], from = types[1];
      // Integers and f16 widen to f32 values that are never subnormal.
      if (to == ScalarType::F32) return !(ptx::isInteger(from) || from == ScalarType::F16);
      // Rounded to nearest or towards zero, an f32 subnormal becomes the same zero in an integer
      // or a narrower float (not bf16 or tf32, which have f32's exponent range).
      bool towardsZeroOrNearest = !inst.hasModifier("rp") && !inst.hasModifier("rm") &&
                                  !inst.hasModifier("rpi") && !inst.hasModifier("rmi");
      bool narrower = ptx::isInteger(to) || to == ScalarType::F16 || to == ScalarType::F16x2 ||
                      to == ScalarType::E4M3x2 || to == ScalarType::E5M2x2;
      return !(narrower && towardsZeroOrNearest);
    }
    default:
      return true;
  }
}

}  // namespace rocuda::compiler::detail
