// Floating-point arithmetic: add/sub/mul/fma/mad/div/rcp/sqrt (IEEE, with .rz/.rm/.rp computed
// from an exact error term), the approximate transcendental forms, min/max with PTX NaN rules,
// abs/neg/copysign/testp, and .ftz (flush f32 subnormal inputs and results to signed zero).
#include <llvm/IR/Intrinsics.h>

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
// (exact - r). Shared with conversions.
llvm::Value* applyDirectedRounding(FunctionTranslator& t, llvm::Value* r, llvm::Value* err,
                                   const std::string& mode) {
  auto& B = t.b;
  auto* zero = llvm::ConstantFP::get(r->getType(), 0.0);
  llvm::Value* above = B.CreateFCmpOGT(err, zero);  // exact > r
  llvm::Value* below = B.CreateFCmpOLT(err, zero);  // exact < r
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

Result<llvm::Value*> arith(FunctionTranslator& t, const ptx::Instruction& inst, llvm::Value* a,
                           llvm::Value* b, llvm::Value* c) {
  auto& B = t.b;
  std::string mode = roundingModifier(inst);
  bool directed = isDirected(mode);
  bool scalar = a->getType()->isFloatTy() || a->getType()->isDoubleTy();
  if (directed && !scalar) return t.unsupported(inst, "directed rounding on this type");
  llvm::Value* r = nullptr;
  llvm::Value* err = nullptr;
  switch (inst.opcode) {
    case ptx::Opcode::add:
    case ptx::Opcode::sub: {
      llvm::Value* y = inst.opcode == ptx::Opcode::sub ? B.CreateFNeg(b) : b;
      r = B.CreateFAdd(a, y);
      if (directed) {  // TwoSum: the exact error of the rounded sum
        llvm::Value* bb = B.CreateFSub(r, a);
        err = B.CreateFAdd(B.CreateFSub(a, B.CreateFSub(r, bb)), B.CreateFSub(y, bb));
      }
      break;
    }
    case ptx::Opcode::mul:
      r = B.CreateFMul(a, b);
      if (directed) err = fmaOf(t, a, b, B.CreateFNeg(r));
      break;
    case ptx::Opcode::fma:
    case ptx::Opcode::mad:
      r = fmaOf(t, a, b, c);
      if (directed) {
        if (!a->getType()->isFloatTy()) return t.unsupported(inst, "directed rounding of fma.f64");
        // In double, a*b is exact and p + c = s + e exactly (TwoSum); s - r is exact too.
        auto* d = B.getDoubleTy();
        llvm::Value* p = B.CreateFMul(B.CreateFPExt(a, d), B.CreateFPExt(b, d));
        llvm::Value* cd = B.CreateFPExt(c, d);
        llvm::Value* sum = B.CreateFAdd(p, cd);
        llvm::Value* bb = B.CreateFSub(sum, p);
        llvm::Value* e = B.CreateFAdd(B.CreateFSub(p, B.CreateFSub(sum, bb)), B.CreateFSub(cd, bb));
        llvm::Value* diff = B.CreateFAdd(B.CreateFSub(sum, B.CreateFPExt(r, d)), e);
        auto* zero = llvm::ConstantFP::get(d, 0.0);
        auto* ft = a->getType();
        err = B.CreateSelect(
            B.CreateFCmpOGT(diff, zero), llvm::ConstantFP::get(ft, 1.0),
            B.CreateSelect(B.CreateFCmpOLT(diff, zero), llvm::ConstantFP::get(ft, -1.0),
                           llvm::ConstantFP::get(ft, 0.0)));
      }
      break;
    case ptx::Opcode::div:
      r = B.CreateFDiv(a, b);
      if (directed) {
        llvm::Value* rem = fmaOf(t, B.CreateFNeg(r), b, a);
        err = B.CreateSelect(B.CreateFCmpOLT(b, llvm::ConstantFP::get(b->getType(), 0.0)),
                             B.CreateFNeg(rem), rem);
      }
      break;
    default:
      return t.unsupported(inst);
  }
  if (directed) r = applyDirectedRounding(t, r, err, mode);
  return r;
}

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
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a);
      if (isDirected(mode)) r = applyDirectedRounding(t, r, fmaOf(t, B.CreateFNeg(r), r, a), mode);
      break;
    case ptx::Opcode::rsqrt:
      r = B.CreateFDiv(one, B.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a));
      break;
    case ptx::Opcode::rcp:
      r = B.CreateFDiv(one, a);
      if (isDirected(mode)) {
        llvm::Value* rem = fmaOf(t, B.CreateFNeg(r), a, one);
        llvm::Value* err = B.CreateSelect(B.CreateFCmpOLT(a, llvm::ConstantFP::get(ty, 0.0)),
                                          B.CreateFNeg(rem), rem);
        r = applyDirectedRounding(t, r, err, mode);
      }
      break;
    case ptx::Opcode::sin:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::sin, a);
      break;
    case ptx::Opcode::cos:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::cos, a);
      break;
    case ptx::Opcode::ex2:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::exp2, a);
      break;
    case ptx::Opcode::lg2:
      r = B.CreateUnaryIntrinsic(llvm::Intrinsic::log2, a);
      break;
    case ptx::Opcode::tanh: {
      llvm::Value* x = a;
      llvm::Type* work = ty->isDoubleTy() ? ty : B.getFloatTy();
      if (ty->getScalarType() != work) {
        if (ty->isVectorTy()) return t.unsupported(inst);
        x = B.CreateFPExt(a, work);
      }
      r = B.CreateCall(t.mt.libmFunction(work->isDoubleTy() ? "tanh" : "tanhf", work, 1), {x});
      if (work != ty) r = B.CreateFPTrunc(r, ty);
      break;
    }
    default:
      return t.unsupported(inst);
  }
  if (ftz) r = flushSubnormalF32(t, r);
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
  else if (inst.hasModifier("normal"))
    r = B.CreateAnd(B.CreateFCmpOGE(mag, minNormal), B.CreateFCmpOLT(mag, inf));
  else if (inst.hasModifier("subnormal"))
    r = B.CreateAnd(B.CreateFCmpOLT(mag, minNormal),
                    B.CreateFCmpONE(mag, llvm::ConstantFP::get(ty, 0.0)));
  else
    return t.unsupported(inst);
  return t.write(inst.operands()[0], r, ScalarType::Pred);
}

// min/max: a NaN input yields the other (both NaN: NaN), -0 < +0; .NaN propagates NaNs.
Status minMax(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  if (inst.operands().size() != 3) return t.unsupported(inst, "three-input min/max");
  if (inst.hasModifier("xorsign")) return t.unsupported(inst);
  bool ftz = inst.hasModifier("ftz");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
  if (ftz) {
    a = flushSubnormalF32(t, a);
    b = flushSubnormalF32(t, b);
  }
  bool propagateNaN = inst.hasModifier("NaN");
  bool isMin = inst.opcode == ptx::Opcode::min;
  auto id = propagateNaN ? (isMin ? llvm::Intrinsic::minimum : llvm::Intrinsic::maximum)
                         : (isMin ? llvm::Intrinsic::minnum : llvm::Intrinsic::maxnum);
  llvm::Value* r = B.CreateBinaryIntrinsic(id, a, b);
  if (!propagateNaN && !a->getType()->isVectorTy()) {
    // minnum may return either zero for (-0, +0); PTX orders -0 below +0.
    auto* it = B.getIntNTy(static_cast<unsigned>(a->getType()->getPrimitiveSizeInBits()));
    llvm::Value* ai = B.CreateBitCast(a, it);
    llvm::Value* bi = B.CreateBitCast(b, it);
    llvm::Value* zeros =
        B.CreateBitCast(isMin ? B.CreateOr(ai, bi) : B.CreateAnd(ai, bi), a->getType());
    auto* zero = llvm::ConstantFP::get(a->getType(), 0.0);
    llvm::Value* bothZero = B.CreateAnd(B.CreateFCmpOEQ(a, zero), B.CreateFCmpOEQ(b, zero));
    r = B.CreateSelect(bothZero, zeros, r);
  }
  if (ftz) r = flushSubnormalF32(t, r);
  return t.write(inst.operands()[0], r, type);
}

}  // namespace

Status translateFloatOp(FunctionTranslator& t, const ptx::Instruction& inst) {
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
    if (v.ok() && ftz) return flushSubnormalF32(t, *v);
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
      ROCUDA_VALUE(a, operand(1));
      ROCUDA_VALUE(b, operand(2));
      llvm::Value* c = nullptr;
      if (three) {
        auto cv = operand(3);
        if (!cv.ok()) return cv.error();
        c = *cv;
      }
      ROCUDA_VALUE(r, arith(t, inst, a, b, c));
      if (inst.hasModifier("sat")) {
        auto* zero = llvm::ConstantFP::get(r->getType(), 0.0);
        // NaN saturates to 0: maxnum(NaN, 0) = 0.
        r = B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, r, zero);
        r = B.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, r,
                                    llvm::ConstantFP::get(r->getType(), 1.0));
      }
      if (inst.hasModifier("relu"))
        r = B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, r,
                                    llvm::ConstantFP::get(r->getType(), 0.0));
      if (ftz) r = flushSubnormalF32(t, r);
      return t.write(inst.operands()[0], r, type);
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

llvm::Value* flushSubnormalF32(FunctionTranslator& t, llvm::Value* v) {
  auto& B = t.b;
  if (!v->getType()->isFloatTy()) return v;
  llvm::Value* mag = B.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  llvm::Value* tiny = B.CreateFCmpOLT(mag, llvm::ConstantFP::get(v->getType(), 1.17549435e-38));
  llvm::Value* zero = B.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                              llvm::ConstantFP::get(v->getType(), 0.0), v);
  return B.CreateSelect(tiny, zero, v);
}

}  // namespace rocuda::compiler::detail
