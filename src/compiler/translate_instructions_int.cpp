// Integer arithmetic: add/sub (with carry), mul/mad (.lo/.hi/.wide), div/rem, abs/neg/min/max,
// mul24/mad24 and sad. PTX integer arithmetic never traps: division by zero yields a value.
#include <llvm/IR/Intrinsics.h>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

ScalarType widenedType(ScalarType type) {
  switch (type) {
    case ScalarType::U16:
      return ScalarType::U32;
    case ScalarType::S16:
      return ScalarType::S32;
    case ScalarType::B16:
      return ScalarType::B32;
    case ScalarType::U32:
      return ScalarType::U64;
    case ScalarType::S32:
      return ScalarType::S64;
    case ScalarType::B32:
      return ScalarType::B64;
    case ScalarType::U64:
    case ScalarType::S64:
    case ScalarType::B64:
      return ScalarType::B128;
    default:
      return type;
  }
}

namespace {

// The high half of the full product of a and b (each W bits).
llvm::Value* mulHigh(FunctionTranslator& t, llvm::Value* a, llvm::Value* b, bool isSigned) {
  unsigned w = a->getType()->getIntegerBitWidth();
  auto* wide = t.b.getIntNTy(2 * w);
  auto ext = [&](llvm::Value* v) {
    return isSigned ? t.b.CreateSExt(v, wide) : t.b.CreateZExt(v, wide);
  };
  llvm::Value* p = t.b.CreateMul(ext(a), ext(b));
  return t.b.CreateTrunc(t.b.CreateLShr(p, w), a->getType());
}

// Adds with carry in/out through the function's carry flag.
llvm::Value* addCarry(FunctionTranslator& t, llvm::Value* a, llvm::Value* b, bool carryIn,
                      bool carryOut) {
  auto& B = t.b;
  llvm::Value* carry = B.getFalse();
  llvm::Value* sum = a;
  auto step = [&](llvm::Value* x) {
    auto* r = B.CreateBinaryIntrinsic(llvm::Intrinsic::uadd_with_overflow, sum, x);
    sum = B.CreateExtractValue(r, 0);
    carry = B.CreateOr(carry, B.CreateExtractValue(r, 1));
  };
  step(b);
  if (carryIn) {
    llvm::Value* cf = B.CreateLoad(t.i1(), t.carryFlag());
    step(B.CreateZExt(cf, a->getType()));
  }
  if (carryOut) B.CreateStore(carry, t.carryFlag());
  return sum;
}

// sub.cc / subc: the hardware's subtraction is a + ~b + 1 (sub.cc) or a + ~b + CF (subc), and the
// carry flag it leaves is that sum's carry, i.e. 1 when nothing was borrowed. The ISA describes
// the same chains as a - (b + borrow); the two agree wherever subtractions follow subtractions,
// and the carry is what addc then reads (nvcc's own 128-bit division tests the flag of a
// sub.cc/subc.cc chain with `addc 0, 0`), and what subc reads after an add.cc.
llvm::Value* subCarry(FunctionTranslator& t, llvm::Value* a, llvm::Value* b, bool carryIn,
                      bool carryOut) {
  auto& B = t.b;
  llvm::Value* carry = B.getFalse();
  llvm::Value* sum = a;
  auto step = [&](llvm::Value* x) {
    auto* r = B.CreateBinaryIntrinsic(llvm::Intrinsic::uadd_with_overflow, sum, x);
    sum = B.CreateExtractValue(r, 0);
    carry = B.CreateOr(carry, B.CreateExtractValue(r, 1));
  };
  step(B.CreateNot(b));
  step(carryIn ? B.CreateZExt(B.CreateLoad(t.i1(), t.carryFlag()), a->getType())
               : llvm::ConstantInt::get(a->getType(), 1));
  if (carryOut) B.CreateStore(carry, t.carryFlag());
  return sum;
}

// Division that never traps: x/0 gives all ones (unsigned) or -1/+1-like values; MIN/-1 = MIN.
llvm::Value* safeDivRem(FunctionTranslator& t, llvm::Value* a, llvm::Value* b, bool isSigned,
                        bool isRem) {
  auto& B = t.b;
  auto* type = a->getType();
  auto* zero = llvm::ConstantInt::get(type, 0);
  auto* one = llvm::ConstantInt::get(type, 1);
  llvm::Value* byZero = B.CreateICmpEQ(b, zero);
  llvm::Value* bad = byZero;
  llvm::Value* overflow = B.getFalse();
  if (isSigned) {
    unsigned w = type->getIntegerBitWidth();
    overflow = B.CreateAnd(
        B.CreateICmpEQ(a, llvm::ConstantInt::get(type, llvm::APInt::getSignedMinValue(w))),
        B.CreateICmpEQ(b, llvm::ConstantInt::getAllOnesValue(type)));
    bad = B.CreateOr(bad, overflow);
  }
  llvm::Value* divisor = B.CreateSelect(bad, one, b);
  llvm::Value* r = isRem ? (isSigned ? B.CreateSRem(a, divisor) : B.CreateURem(a, divisor))
                         : (isSigned ? B.CreateSDiv(a, divisor) : B.CreateUDiv(a, divisor));
  if (isRem) {
    // x % 0 = x (as the hardware does); MIN % -1 = 0 (divisor 1 already gives 0).
    return B.CreateSelect(byZero, a, r);
  }
  // x / 0 = all ones; MIN / -1 = MIN (divisor 1 already gives a).
  return B.CreateSelect(byZero, llvm::ConstantInt::getAllOnesValue(type), r);
}

Status mulOrMad(FunctionTranslator& t, const ptx::Instruction& inst, bool mad, bool carryIn) {
  ScalarType type = inst.types()[0];
  bool isSigned = ptx::isSignedInteger(type);
  bool wide = inst.hasModifier("wide"), hi = inst.hasModifier("hi");
  size_t need = mad ? 4 : 3;
  if (inst.operands().size() < need) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
  ScalarType resultType = type;
  llvm::Value* r = nullptr;
  if (wide) {
    resultType = widenedType(type);
    auto* wt = t.bitsType(resultType);
    auto ext = [&](llvm::Value* v) {
      return isSigned ? t.b.CreateSExt(v, wt) : t.b.CreateZExt(v, wt);
    };
    r = t.b.CreateMul(ext(a), ext(b));
  } else if (hi) {
    r = mulHigh(t, a, b, isSigned);
  } else {
    r = t.b.CreateMul(a, b);
  }
  if (mad) {
    ROCUDA_VALUE(c, t.read(inst.operands()[3], resultType));
    if (inst.hasModifier("sat")) {
      if (type != ScalarType::S32 || !hi) return t.unsupported(inst);
      r = t.b.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, r, c);
    } else if (inst.hasModifier("cc") || carryIn) {
      r = addCarry(t, r, c, carryIn, inst.hasModifier("cc"));
    } else {
      r = t.b.CreateAdd(r, c);
    }
  }
  return t.write(inst.operands()[0], r, resultType);
}

Status mul24(FunctionTranslator& t, const ptx::Instruction& inst, bool mad) {
  ScalarType type = inst.types()[0];
  bool isSigned = ptx::isSignedInteger(type);
  if (inst.operands().size() < (mad ? 4u : 3u)) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
  auto* i64 = t.i64();
  auto ext24 = [&](llvm::Value* v) {
    llvm::Value* x = t.b.CreateShl(t.b.CreateZExt(v, i64), 40);
    return isSigned ? t.b.CreateAShr(x, 40) : t.b.CreateLShr(x, 40);
  };
  llvm::Value* p = t.b.CreateMul(ext24(a), ext24(b));  // 48-bit product
  llvm::Value* r = inst.hasModifier("hi") ? t.b.CreateTrunc(t.b.CreateLShr(p, 16), t.i32())
                                          : t.b.CreateTrunc(p, t.i32());
  if (mad) {
    ROCUDA_VALUE(c, t.read(inst.operands()[3], type));
    // ".sat limits result of 32-bit signed addition to MININT..MAXINT": .hi .s32 only.
    bool saturate = inst.hasModifier("sat") && isSigned && inst.hasModifier("hi");
    r = saturate ? t.b.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, r, c) : t.b.CreateAdd(r, c);
  }
  return t.write(inst.operands()[0], r, type);
}

Status simpleBinary(FunctionTranslator& t, const ptx::Instruction& inst) {
  ScalarType type = inst.types()[0];
  bool isSigned = ptx::isSignedInteger(type);
  if (inst.operands().size() < 3) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
  auto& B = t.b;
  bool cc = inst.hasModifier("cc");
  llvm::Value* r = nullptr;
  switch (inst.opcode) {
    case ptx::Opcode::add:
      if (inst.hasModifier("sat"))
        r = B.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, a, b);
      else
        r = cc ? addCarry(t, a, b, false, true) : B.CreateAdd(a, b);
      break;
    case ptx::Opcode::addc:
      r = addCarry(t, a, b, true, cc);
      break;
    case ptx::Opcode::sub:
      if (inst.hasModifier("sat"))
        r = B.CreateBinaryIntrinsic(llvm::Intrinsic::ssub_sat, a, b);
      else
        r = cc ? subCarry(t, a, b, false, true) : B.CreateSub(a, b);
      break;
    case ptx::Opcode::subc:
      r = subCarry(t, a, b, true, cc);
      break;
    case ptx::Opcode::div:
      r = safeDivRem(t, a, b, isSigned, false);
      break;
    case ptx::Opcode::rem:
      r = safeDivRem(t, a, b, isSigned, true);
      break;
    case ptx::Opcode::min:
      r = B.CreateBinaryIntrinsic(isSigned ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a, b);
      break;
    case ptx::Opcode::max:
      r = B.CreateBinaryIntrinsic(isSigned ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a, b);
      break;
    default:
      return t.unsupported(inst);
  }
  if (inst.hasModifier("relu"))
    r = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, r, llvm::ConstantInt::get(r->getType(), 0));
  return t.write(inst.operands()[0], r, type);
}

// add/sub/min/max{.relu} on .s16x2 / .u16x2: two independent 16-bit lanes of a 32-bit
// register, wrapping (add/sub) or compared as signed/unsigned halves.
Status packedHalves(FunctionTranslator& t, const ptx::Instruction& inst) {
  ScalarType type = inst.types()[0];
  bool isSigned = type == ScalarType::S16x2;
  bool relu = inst.hasModifier("relu");
  bool minMax = inst.opcode == ptx::Opcode::min || inst.opcode == ptx::Opcode::max;
  if ((inst.opcode != ptx::Opcode::add && inst.opcode != ptx::Opcode::sub && !minMax) ||
      inst.hasModifier("sat") || inst.hasModifier("cc") || (relu && !(minMax && isSigned)))
    return t.unsupported(inst);
  if (inst.operands().size() != 3) return t.invalid(inst, "expected d, a, b");
  auto& B = t.b;
  auto* lanes = llvm::FixedVectorType::get(B.getInt16Ty(), 2);
  ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::B32));
  ROCUDA_VALUE(b, t.read(inst.operands()[2], ScalarType::B32));
  llvm::Value* x = B.CreateBitCast(a, lanes);
  llvm::Value* y = B.CreateBitCast(b, lanes);
  llvm::Value* r = nullptr;
  switch (inst.opcode) {
    case ptx::Opcode::add:
      r = B.CreateAdd(x, y);
      break;
    case ptx::Opcode::sub:
      r = B.CreateSub(x, y);
      break;
    case ptx::Opcode::min:
      r = B.CreateBinaryIntrinsic(isSigned ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, x, y);
      break;
    default:
      r = B.CreateBinaryIntrinsic(isSigned ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, x, y);
      break;
  }
  if (relu)
    r = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, r, llvm::Constant::getNullValue(lanes));
  return t.write(inst.operands()[0], B.CreateBitCast(r, B.getInt32Ty()), ScalarType::B32);
}

}  // namespace

Status translateIntegerOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.types().empty()) return t.invalid(inst, "missing type");
  ScalarType type = inst.types()[0];
  if (type == ScalarType::S16x2 || type == ScalarType::U16x2) return packedHalves(t, inst);
  if (type == ScalarType::Pred || type == ScalarType::B128 || ptx::isFloat(type))
    return t.invalid(inst, "needs an integer type");
  if (inst.vectorWidth > 1 || inst.types().size() > 1) return t.unsupported(inst);
  auto& B = t.b;
  switch (inst.opcode) {
    case ptx::Opcode::mul:
      return mulOrMad(t, inst, false, false);
    case ptx::Opcode::mad:
      return mulOrMad(t, inst, true, false);
    case ptx::Opcode::madc:
      return mulOrMad(t, inst, true, true);
    case ptx::Opcode::mul24:
      return mul24(t, inst, false);
    case ptx::Opcode::mad24:
      return mul24(t, inst, true);
    case ptx::Opcode::abs:
    case ptx::Opcode::neg: {
      if (inst.operands().size() < 2) return t.invalid(inst, "too few operands");
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      llvm::Value* neg = B.CreateSub(llvm::ConstantInt::get(a->getType(), 0), a);
      llvm::Value* r = neg;
      if (inst.opcode == ptx::Opcode::abs)
        r = B.CreateSelect(B.CreateICmpSLT(a, llvm::ConstantInt::get(a->getType(), 0)), neg, a);
      return t.write(inst.operands()[0], r, type);
    }
    case ptx::Opcode::sad: {
      if (inst.operands().size() < 4) return t.invalid(inst, "too few operands");
      bool isSigned = ptx::isSignedInteger(type);
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
      ROCUDA_VALUE(c, t.read(inst.operands()[3], type));
      llvm::Value* less = isSigned ? B.CreateICmpSLT(a, b) : B.CreateICmpULT(a, b);
      llvm::Value* diff = B.CreateSelect(less, B.CreateSub(b, a), B.CreateSub(a, b));
      return t.write(inst.operands()[0], B.CreateAdd(c, diff), type);
    }
    default:
      return simpleBinary(t, inst);
  }
}

}  // namespace rocuda::compiler::detail
