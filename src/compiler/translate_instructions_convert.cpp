// cvt between every integer and float type: integer narrowing/widening with .sat, float<->float
// with .rn/.rz/.rm/.rp and the integral .rni/.rzi/.rmi/.rpi, float->int saturating (NaN -> 0),
// int->float with directed rounding, .ftz, .sat, .relu and the f16x2/bf16x2 pair forms.
#include <llvm/IR/Intrinsics.h>

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

llvm::Value* saturateUnit(FunctionTranslator& t, llvm::Value* v) {
  auto& B = t.b;
  v = B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, v, llvm::ConstantFP::get(v->getType(), 0.0));
  return B.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, v,
                                 llvm::ConstantFP::get(v->getType(), 1.0));
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

llvm::Value* floatToInt(FunctionTranslator& t, llvm::Value* a, ScalarType to,
                        const std::string& mode) {
  auto& B = t.b;
  if (a->getType()->isHalfTy() || a->getType()->isBFloatTy()) a = B.CreateFPExt(a, B.getFloatTy());
  a = roundIntegral(t, a, mode.empty() ? "rzi" : mode);
  auto* dst = t.bitsType(to);
  auto id = signedInt(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
  return B.CreateIntrinsic(id, {dst, a->getType()}, {a});
}

llvm::Value* intToFloat(FunctionTranslator& t, llvm::Value* a, ScalarType from, llvm::Type* vt,
                        const std::string& mode) {
  auto& B = t.b;
  bool s = signedInt(from);
  llvm::Value* r = s ? B.CreateSIToFP(a, vt) : B.CreateUIToFP(a, vt);
  if (mode != "rz" && mode != "rm" && mode != "rp") return r;
  if (!vt->isFloatTy() && !vt->isDoubleTy()) return r;  // half: rare; nearest
  // Compare the rounded value with the exact integer in 128 bits to find the error's sign.
  auto* i128 = B.getInt128Ty();
  llvm::Value* exact = s ? B.CreateSExt(a, i128) : B.CreateZExt(a, i128);
  llvm::Value* back = B.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {i128, vt}, {r});
  llvm::Value* err =
      B.CreateSelect(B.CreateICmpSGT(exact, back), llvm::ConstantFP::get(vt, 1.0),
                     B.CreateSelect(B.CreateICmpSLT(exact, back), llvm::ConstantFP::get(vt, -1.0),
                                    llvm::ConstantFP::get(vt, 0.0)));
  return applyDirectedRounding(t, r, err, mode);
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
    llvm::Value* err = B.CreateFSub(a, B.CreateFPExt(r, at));
    llvm::Value* errT = B.CreateFPTrunc(err, vt);
    // errT may round to zero for tiny errors: keep only its sign, as +-1.
    errT = B.CreateSelect(
        B.CreateFCmpOGT(err, llvm::ConstantFP::get(at, 0.0)), llvm::ConstantFP::get(vt, 1.0),
        B.CreateSelect(B.CreateFCmpOLT(err, llvm::ConstantFP::get(at, 0.0)),
                       llvm::ConstantFP::get(vt, -1.0), llvm::ConstantFP::get(vt, 0.0)));
    r = applyDirectedRounding(t, r, errT, mode);
  } else if (!mode.empty() && mode != "rn") {
    return t.unsupported(inst, "rounding ." + mode);
  }
  return r;
}

Result<llvm::Value*> convertScalar(FunctionTranslator& t, const ptx::Instruction& inst,
                                   const ptx::Operand& src, ScalarType to, ScalarType from) {
  auto& B = t.b;
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
  if (inst.hasModifier("relu"))
    r = B.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, r, llvm::ConstantFP::get(vt, 0.0));
  if (ftz && r->getType()->isFloatTy()) r = flushSubnormal(t, r);
  return r;
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

Status translateConvertOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.opcode != ptx::Opcode::cvt || inst.types().size() != 2) return t.unsupported(inst);
  ScalarType to = inst.types()[0], from = inst.types()[1];
  if (inst.hasModifier("satfinite")) return t.unsupported(inst);
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
