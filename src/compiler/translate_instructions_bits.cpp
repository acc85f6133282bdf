// Logic and bit manipulation: and/or/xor/not/cnot, shl/shr (amounts >= width clamp), popc, clz,
// brev, bfe, bfi, bfind, fns, prmt, lop3, shf, bmsk, szext, dp4a/dp2a.
#include <llvm/IR/Intrinsics.h>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

llvm::Value* constant(llvm::Type* type, uint64_t value) {
  return llvm::ConstantInt::get(type, value);
}

Status shift(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  ROCUDA_VALUE(n, t.read(inst.operands()[2], ScalarType::U32));
  auto* ty = a->getType();
  unsigned w = ty->getIntegerBitWidth();
  llvm::Value* big = B.CreateICmpUGE(n, B.getInt32(w));
  llvm::Value* amount = B.CreateZExtOrTrunc(B.CreateSelect(big, B.getInt32(0), n), ty);
  llvm::Value* r = nullptr;
  if (inst.opcode == ptx::Opcode::shl) {
    r = B.CreateSelect(big, constant(ty, 0), B.CreateShl(a, amount));
  } else if (ptx::isSignedInteger(type)) {
    r = B.CreateAShr(a, B.CreateSelect(big, constant(ty, w - 1), amount));
  } else {
    r = B.CreateSelect(big, constant(ty, 0), B.CreateLShr(a, amount));
  }
  return t.write(inst.operands()[0], r, type);
}

// Mask of the low `len` bits (len may be >= width: all ones).
llvm::Value* lowMask(FunctionTranslator& t, llvm::Type* ty, llvm::Value* len) {
  auto& B = t.b;
  unsigned w = ty->getIntegerBitWidth();
  llvm::Value* l = B.CreateZExtOrTrunc(len, ty);
  llvm::Value* full = B.CreateICmpUGE(l, constant(ty, w));
  llvm::Value* safe = B.CreateSelect(full, constant(ty, 0), l);
  llvm::Value* m = B.CreateSub(B.CreateShl(constant(ty, 1), safe), constant(ty, 1));
  return B.CreateSelect(full, llvm::ConstantInt::getAllOnesValue(ty), m);
}

Status bfe(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  ROCUDA_VALUE(posIn, t.read(inst.operands()[2], ScalarType::U32));
  ROCUDA_VALUE(lenIn, t.read(inst.operands()[3], ScalarType::U32));
  auto* ty = a->getType();
  unsigned w = ty->getIntegerBitWidth();
  llvm::Value* pos = B.CreateAnd(posIn, 0xff);
  llvm::Value* len = B.CreateAnd(lenIn, 0xff);
  llvm::Value* posBig = B.CreateICmpUGE(pos, B.getInt32(w));
  llvm::Value* shifted = B.CreateSelect(
      posBig, constant(ty, 0),
      B.CreateLShr(a, B.CreateZExtOrTrunc(B.CreateSelect(posBig, B.getInt32(0), pos), ty)));
  // Bits actually taken from a: min(len, w - pos) (0 when pos >= w).
  llvm::Value* avail = B.CreateSelect(posBig, B.getInt32(0), B.CreateSub(B.getInt32(w), pos));
  llvm::Value* taken = B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, len, avail);
  llvm::Value* field = B.CreateAnd(shifted, lowMask(t, ty, taken));
  if (!ptx::isSignedInteger(type)) return t.write(inst.operands()[0], field, type);
  // Sign bit: a[min(pos + len - 1, msb)], replicated above the field; none when len is 0.
  llvm::Value* top = B.CreateSub(B.CreateAdd(pos, len), B.getInt32(1));
  top = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, top, B.getInt32(0));
  top = B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, top, B.getInt32(w - 1));
  llvm::Value* sbit = B.CreateTrunc(B.CreateLShr(a, B.CreateZExtOrTrunc(top, ty)), t.i1());
  sbit = B.CreateAnd(sbit, B.CreateICmpNE(len, B.getInt32(0)));
  llvm::Value* upper = B.CreateNot(lowMask(t, ty, taken));
  llvm::Value* r = B.CreateSelect(sbit, B.CreateOr(field, upper), field);
  return t.write(inst.operands()[0], r, type);
}

Status bfi(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  if (inst.operands().size() < 5) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  ROCUDA_VALUE(base, t.read(inst.operands()[2], type));
  ROCUDA_VALUE(posIn, t.read(inst.operands()[3], ScalarType::U32));
  ROCUDA_VALUE(lenIn, t.read(inst.operands()[4], ScalarType::U32));
  auto* ty = a->getType();
  unsigned w = ty->getIntegerBitWidth();
  llvm::Value* pos = B.CreateAnd(posIn, 0xff);
  llvm::Value* len = B.CreateAnd(lenIn, 0xff);
  llvm::Value* posBig = B.CreateICmpUGE(pos, B.getInt32(w));
  llvm::Value* p = B.CreateZExtOrTrunc(B.CreateSelect(posBig, B.getInt32(0), pos), ty);
  llvm::Value* mask = B.CreateShl(lowMask(t, ty, len), p);
  llvm::Value* merged =
      B.CreateOr(B.CreateAnd(base, B.CreateNot(mask)), B.CreateAnd(B.CreateShl(a, p), mask));
  return t.write(inst.operands()[0], B.CreateSelect(posBig, base, merged), type);
}

Status bfind(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
  auto* ty = a->getType();
  unsigned w = ty->getIntegerBitWidth();
  llvm::Value* x = a;
  if (ptx::isSignedInteger(type))
    x = B.CreateSelect(B.CreateICmpSLT(a, constant(ty, 0)), B.CreateNot(a), a);
  llvm::Value* lz =
      B.CreateTrunc(B.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, x, B.getTrue()), t.i32());
  llvm::Value* pos = inst.hasModifier("shiftamt") ? lz : B.CreateSub(B.getInt32(w - 1), lz);
  llvm::Value* none = B.CreateICmpEQ(x, constant(ty, 0));
  return t.write(inst.operands()[0], B.CreateSelect(none, B.getInt32(0xffffffffu), pos),
                 ScalarType::U32);
}

Status prmt(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() < 4) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::B32));
  ROCUDA_VALUE(bv, t.read(inst.operands()[2], ScalarType::B32));
  ROCUDA_VALUE(c, t.read(inst.operands()[3], ScalarType::B32));
  llvm::Value* bytes =
      B.CreateOr(B.CreateZExt(a, t.i64()), B.CreateShl(B.CreateZExt(bv, t.i64()), 32));
  std::string mode;
  for (const char* m : {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"})
    if (inst.hasModifier(m)) mode = m;
  llvm::Value* result = B.getInt32(0);
  llvm::Value* c2 = B.CreateAnd(c, 3);
  for (unsigned i = 0; i < 4; ++i) {
    llvm::Value* sel = nullptr;
    llvm::Value* replicate = nullptr;
    if (mode.empty()) {
      llvm::Value* nibble = B.CreateAnd(B.CreateLShr(c, 4 * i), 0xf);
      sel = B.CreateAnd(nibble, 7);
      replicate = B.CreateICmpNE(B.CreateAnd(nibble, 8), B.getInt32(0));
    } else if (mode == "f4e") {
      sel = B.CreateAnd(B.CreateAdd(c2, B.getInt32(i)), 7);
    } else if (mode == "b4e") {
      sel = B.CreateAnd(B.CreateSub(c2, B.getInt32(i)), 7);
    } else if (mode == "rc8") {
      sel = c2;
    } else if (mode == "ecl") {
      sel = B.CreateBinaryIntrinsic(llvm::Intrinsic::umax, c2, B.getInt32(i));
    } else if (mode == "ecr") {
      sel = B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, c2, B.getInt32(i));
    } else {  // rc16
      sel = B.CreateAdd(B.CreateShl(B.CreateAnd(c, 1), 1), B.getInt32(i & 1));
    }
    llvm::Value* byte =
        B.CreateAnd(B.CreateLShr(bytes, B.CreateZExt(B.CreateShl(sel, 3), t.i64())), 0xff);
    byte = B.CreateTrunc(byte, t.i32());
    if (replicate) {
      llvm::Value* sign = B.CreateICmpNE(B.CreateAnd(byte, 0x80), B.getInt32(0));
      byte = B.CreateSelect(replicate, B.CreateSelect(sign, B.getInt32(0xff), B.getInt32(0)), byte);
    }
    result = B.CreateOr(result, B.CreateShl(byte, 8 * i));
  }
  return t.write(inst.operands()[0], result, ScalarType::B32);
}

// lop3.b32 d, a, b, c, immLut; and (PTX 8.2) lop3.{or,and}.b32 d|p, a, b, c, immLut, q, which
// also sets p = (d != 0) or/and q.
Status lop3(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  const auto& ops = inst.operands();
  size_t first = inst.destinationPair ? 2 : 1;  // the operand a
  if (ops.size() != first + (inst.destinationPair ? 5 : 4) ||
      ops[first + 3].kind != ptx::Operand::Kind::Immediate)
    return t.invalid(inst, inst.destinationPair ? "expected d|p, a, b, c, immLut, q"
                                                : "expected d, a, b, c, immLut");
  std::string boolOp = inst.hasModifier("or") ? "or" : inst.hasModifier("and") ? "and" : "";
  if (inst.destinationPair == boolOp.empty())
    return t.invalid(inst, "the predicate destination and .or/.and go together");
  ROCUDA_VALUE(a, t.read(ops[first], type));
  ROCUDA_VALUE(bv, t.read(ops[first + 1], type));
  ROCUDA_VALUE(c, t.read(ops[first + 2], type));
  uint64_t lut = ops[first + 3].imm().bits & 0xff;
  llvm::Value* r = constant(a->getType(), 0);
  for (unsigned k = 0; k < 8; ++k) {
    if (!((lut >> k) & 1)) continue;
    llvm::Value* term =
        B.CreateAnd(B.CreateAnd((k & 4) ? a : B.CreateNot(a), (k & 2) ? bv : B.CreateNot(bv)),
                    (k & 1) ? c : B.CreateNot(c));
    r = B.CreateOr(r, term);
  }
  if (inst.destinationPair) {
    ROCUDA_VALUE(q, t.read(ops[first + 4], ScalarType::Pred));
    llvm::Value* nonzero = B.CreateICmpNE(r, constant(r->getType(), 0));
    llvm::Value* p = boolOp == "or" ? B.CreateOr(nonzero, q) : B.CreateAnd(nonzero, q);
    ROCUDA_TRY(t.write(ops[1], p, ScalarType::Pred));
  }
  return t.write(ops[0], r, type);
}

Status shf(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() < 4) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(lo, t.read(inst.operands()[1], ScalarType::B32));
  ROCUDA_VALUE(hi, t.read(inst.operands()[2], ScalarType::B32));
  ROCUDA_VALUE(n, t.read(inst.operands()[3], ScalarType::U32));
  bool left = inst.hasModifier("l");
  if (inst.hasModifier("wrap")) {
    llvm::Value* amount = B.CreateAnd(n, 31);
    auto id = left ? llvm::Intrinsic::fshl : llvm::Intrinsic::fshr;
    llvm::Value* r = B.CreateIntrinsic(id, {t.i32()}, {hi, lo, amount});
    return t.write(inst.operands()[0], r, ScalarType::B32);
  }
  // .clamp: amounts >= 32 shift a whole word.
  llvm::Value* big = B.CreateICmpUGE(n, B.getInt32(32));
  llvm::Value* amount = B.CreateSelect(big, B.getInt32(0), n);
  auto id = left ? llvm::Intrinsic::fshl : llvm::Intrinsic::fshr;
  llvm::Value* r = B.CreateIntrinsic(id, {t.i32()}, {hi, lo, amount});
  r = B.CreateSelect(big, left ? lo : hi, r);
  return t.write(inst.operands()[0], r, ScalarType::B32);
}

Status dp4a(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() < 4 || inst.types().size() < 2) return t.invalid(inst, "bad form");
  bool sa = ptx::isSignedInteger(inst.types()[0]), sb = ptx::isSignedInteger(inst.types()[1]);
  ScalarType ct = (sa || sb) ? ScalarType::S32 : ScalarType::U32;
  ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::B32));
  ROCUDA_VALUE(bv, t.read(inst.operands()[2], ScalarType::B32));
  ROCUDA_VALUE(c, t.read(inst.operands()[3], ct));
  bool two = inst.opcode == ptx::Opcode::dp2a;
  unsigned bBase = (two && inst.hasModifier("hi")) ? 2 : 0;
  auto part = [&](llvm::Value* v, unsigned index, unsigned bits, bool s) {
    llvm::Value* x = B.CreateTrunc(B.CreateLShr(v, index * bits), B.getIntNTy(bits));
    return s ? B.CreateSExt(x, t.i32()) : B.CreateZExt(x, t.i32());
  };
  llvm::Value* sum = c;
  for (unsigned i = 0; i < (two ? 2u : 4u); ++i) {
    llvm::Value* x = two ? part(a, i, 16, sa) : part(a, i, 8, sa);
    llvm::Value* y = part(bv, bBase + i, 8, sb);
    sum = B.CreateAdd(sum, B.CreateMul(x, y));
  }
  return t.write(inst.operands()[0], sum, ct);
}

// fns: the position of the offset-th set bit of mask counting up from base (offset > 0), down
// from it (offset < 0), or base itself when offset is 0 and its bit is set; else 0xffffffff.
// A downward search is an upward one in the bit-reversed mask. Unrolled over the 32 positions.
Status fns(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() != 4) return t.invalid(inst, "expected d, mask, base, offset");
  ROCUDA_VALUE(maskIn, t.read(inst.operands()[1], ScalarType::B32));
  ROCUDA_VALUE(baseIn, t.read(inst.operands()[2], ScalarType::U32));
  ROCUDA_VALUE(offset, t.read(inst.operands()[3], ScalarType::S32));
  llvm::Value* base = B.CreateAnd(baseIn, 31);  // base > 31 is undefined in the ISA
  llvm::Value* down = B.CreateICmpSLT(offset, B.getInt32(0));
  llvm::Value* mask = B.CreateSelect(
      down, B.CreateUnaryIntrinsic(llvm::Intrinsic::bitreverse, maskIn), maskIn);
  llvm::Value* start = B.CreateSelect(down, B.CreateSub(B.getInt32(31), base), base);
  llvm::Value* wanted = B.CreateSelect(down, B.CreateNeg(offset), offset);
  wanted = B.CreateSelect(B.CreateICmpEQ(offset, B.getInt32(0)), B.getInt32(1), wanted);
  // Only bits from start upwards count; offset 0 looks at the start bit alone.
  llvm::Value* window = B.CreateAnd(mask, B.CreateShl(B.getInt32(0xffffffffu), start));
  window = B.CreateSelect(B.CreateICmpEQ(offset, B.getInt32(0)),
                          B.CreateAnd(window, B.CreateShl(B.getInt32(1), start)), window);
  llvm::Value* count = B.getInt32(0);
  llvm::Value* found = B.getInt32(0xffffffffu);
  for (uint32_t i = 0; i < 32; ++i) {
    llvm::Value* bit = B.CreateTrunc(B.CreateLShr(window, i), t.i1());
    count = B.CreateAdd(count, B.CreateZExt(bit, t.i32()));
    llvm::Value* hit = B.CreateAnd(bit, B.CreateICmpEQ(count, wanted));
    found = B.CreateSelect(hit, B.getInt32(i), found);
  }
  llvm::Value* miss = B.CreateICmpEQ(found, B.getInt32(0xffffffffu));
  llvm::Value* position = B.CreateSelect(down, B.CreateSub(B.getInt32(31), found), found);
  return t.write(inst.operands()[0], B.CreateSelect(miss, found, position), ScalarType::B32);
}

Status bmsk(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() < 3) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(pos, t.read(inst.operands()[1], ScalarType::U32));
  ROCUDA_VALUE(len, t.read(inst.operands()[2], ScalarType::U32));
  if (inst.hasModifier("wrap")) {
    pos = B.CreateAnd(pos, 31);
    len = B.CreateAnd(len, 31);
  }
  llvm::Value* posBig = B.CreateICmpUGE(pos, B.getInt32(32));
  llvm::Value* m =
      B.CreateShl(lowMask(t, t.i32(), len), B.CreateSelect(posBig, B.getInt32(0), pos));
  return t.write(inst.operands()[0], B.CreateSelect(posBig, B.getInt32(0), m), ScalarType::B32);
}

Status szext(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type) {
  auto& B = t.b;
  if (inst.operands().size() < 3) return t.invalid(inst, "too few operands");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::B32));
  ROCUDA_VALUE(n, t.read(inst.operands()[2], ScalarType::U32));
  n = inst.hasModifier("wrap") ? B.CreateAnd(n, 31)
                               : B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, n, B.getInt32(32));
  llvm::Value* zero = B.CreateICmpEQ(n, B.getInt32(0));
  llvm::Value* sh = B.CreateSelect(zero, B.getInt32(0), B.CreateSub(B.getInt32(32), n));
  llvm::Value* up = B.CreateShl(a, sh);
  llvm::Value* r = ptx::isSignedInteger(type) ? B.CreateAShr(up, sh) : B.CreateLShr(up, sh);
  return t.write(inst.operands()[0], B.CreateSelect(zero, B.getInt32(0), r), type);
}

}  // namespace

Status translateBitOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.types().empty()) return t.invalid(inst, "missing type");
  ScalarType type = inst.types()[0];
  auto& B = t.b;
  size_t nops = inst.operands().size();
  if (nops < 2) return t.invalid(inst, "too few operands");
  if (ptx::isFloat(type) || type == ScalarType::B128)
    return t.invalid(inst, "needs an integer or bit type");
  switch (inst.opcode) {
    case ptx::Opcode::and_:
    case ptx::Opcode::or_:
    case ptx::Opcode::xor_: {
      if (nops < 3) return t.invalid(inst, "too few operands");
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
      llvm::Value* r = inst.opcode == ptx::Opcode::and_  ? B.CreateAnd(a, b)
                       : inst.opcode == ptx::Opcode::or_ ? B.CreateOr(a, b)
                                                         : B.CreateXor(a, b);
      return t.write(inst.operands()[0], r, type);
    }
    case ptx::Opcode::not_: {
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      return t.write(inst.operands()[0], B.CreateNot(a), type);
    }
    case ptx::Opcode::cnot: {
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      llvm::Value* z = B.CreateICmpEQ(a, constant(a->getType(), 0));
      return t.write(inst.operands()[0], B.CreateZExt(z, a->getType()), type);
    }
    case ptx::Opcode::shl:
    case ptx::Opcode::shr:
      if (nops < 3) return t.invalid(inst, "too few operands");
      return shift(t, inst, type);
    case ptx::Opcode::popc:
    case ptx::Opcode::clz: {
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      llvm::Value* r = inst.opcode == ptx::Opcode::popc
                           ? B.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, a)
                           : B.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, a, B.getFalse());
      return t.write(inst.operands()[0], B.CreateZExtOrTrunc(r, t.i32()), ScalarType::U32);
    }
    case ptx::Opcode::brev: {
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      return t.write(inst.operands()[0], B.CreateUnaryIntrinsic(llvm::Intrinsic::bitreverse, a),
                     type);
    }
    case ptx::Opcode::bfe:
      if (nops < 4) return t.invalid(inst, "too few operands");
      return bfe(t, inst, type);
    case ptx::Opcode::bfi:
      return bfi(t, inst, type);
    case ptx::Opcode::bfind:
      return bfind(t, inst, type);
    case ptx::Opcode::prmt:
      return prmt(t, inst);
    case ptx::Opcode::lop3:
      return lop3(t, inst, type);
    case ptx::Opcode::shf:
      return shf(t, inst);
    case ptx::Opcode::dp4a:
    case ptx::Opcode::dp2a:
      return dp4a(t, inst);
    case ptx::Opcode::bmsk:
      return bmsk(t, inst);
    case ptx::Opcode::fns:
      return fns(t, inst);
    case ptx::Opcode::szext:
      return szext(t, inst, type);
    default:
      return t.unsupported(inst);
  }
}

}  // namespace rocuda::compiler::detail
