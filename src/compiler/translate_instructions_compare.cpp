// Comparisons and selection: setp (all compare ops, ordered and unordered, with .and/.or/.xor
// combining and the p|q form), set, selp and slct.
#include <llvm/IR/Intrinsics.h>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

const char* const kCompareOps[] = {"eq", "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
                                   "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};

std::string compareOp(const ptx::Instruction& inst) {
  for (const auto& m : inst.modifiers())
    for (const char* op : kCompareOps)
      if (m == op) return std::string(m);
  return "";
}

std::string boolOp(const ptx::Instruction& inst) {
  for (const char* op : {"and", "or", "xor"})
    if (inst.hasModifier(op)) return op;
  return "";
}

Result<llvm::Value*> compare(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType type,
                             const ptx::Operand& aOp, const ptx::Operand& bOp) {
  auto& B = t.b;
  std::string op = compareOp(inst);
  if (op.empty()) return t.invalid(inst, "missing comparison operator");
  ROCUDA_VALUE(a, t.read(aOp, type));
  ROCUDA_VALUE(b, t.read(bOp, type));
  if (ptx::isFloat(type)) {
    if (inst.hasModifier("ftz")) {
      a = flushSubnormal(t, a);
      b = flushSubnormal(t, b);
    }
    using P = llvm::CmpInst::Predicate;
    P pred;
    if (op == "eq")
      pred = P::FCMP_OEQ;
    else if (op == "ne")
      pred = P::FCMP_ONE;
    else if (op == "lt")
      pred = P::FCMP_OLT;
    else if (op == "le")
      pred = P::FCMP_OLE;
    else if (op == "gt")
      pred = P::FCMP_OGT;
    else if (op == "ge")
      pred = P::FCMP_OGE;
    else if (op == "equ")
      pred = P::FCMP_UEQ;
    else if (op == "neu")
      pred = P::FCMP_UNE;
    else if (op == "ltu")
      pred = P::FCMP_ULT;
    else if (op == "leu")
      pred = P::FCMP_ULE;
    else if (op == "gtu")
      pred = P::FCMP_UGT;
    else if (op == "geu")
      pred = P::FCMP_UGE;
    else if (op == "num")
      pred = P::FCMP_ORD;
    else if (op == "nan")
      pred = P::FCMP_UNO;
    else
      return t.invalid(inst, "comparison '" + op + "' on a floating-point type");
    return B.CreateFCmp(pred, a, b);
  }
  bool isSigned = ptx::isSignedInteger(type);
  using P = llvm::CmpInst::Predicate;
  P pred;
  if (op == "eq")
    pred = P::ICMP_EQ;
  else if (op == "ne")
    pred = P::ICMP_NE;
  else if (op == "lt")
    pred = isSigned ? P::ICMP_SLT : P::ICMP_ULT;
  else if (op == "le")
    pred = isSigned ? P::ICMP_SLE : P::ICMP_ULE;
  else if (op == "gt")
    pred = isSigned ? P::ICMP_SGT : P::ICMP_UGT;
  else if (op == "ge")
    pred = isSigned ? P::ICMP_SGE : P::ICMP_UGE;
  else if (op == "lo")
    pred = P::ICMP_ULT;
  else if (op == "ls")
    pred = P::ICMP_ULE;
  else if (op == "hi")
    pred = P::ICMP_UGT;
  else if (op == "hs")
    pred = P::ICMP_UGE;
  else
    return t.invalid(inst, "comparison '" + op + "' on an integer type");
  return B.CreateICmp(pred, a, b);
}

llvm::Value* combine(FunctionTranslator& t, const std::string& op, llvm::Value* x, llvm::Value* c) {
  if (op == "and") return t.b.CreateAnd(x, c);
  if (op == "or") return t.b.CreateOr(x, c);
  if (op == "xor") return t.b.CreateXor(x, c);
  return x;
}

// f16x2 / bf16x2 comparisons compare each half: setp writes the low half's predicate to p and
// the high half's to q (each combined with c); set writes each half of d (all ones or 1.0).
Status packedResult(FunctionTranslator& t, const ptx::Instruction& inst, bool isSet, bool twoDest,
                    const std::string& bop, llvm::Value* cmp, llvm::Value* c) {
  auto& B = t.b;
  if (isSet) {
    llvm::Value* p = c ? combine(t, bop, cmp, B.CreateVectorSplat(2, c)) : cmp;
    ScalarType dtype = inst.types()[0];
    llvm::Type* vt = t.valueType(dtype);
    if (vt->isVectorTy())  // set.*.f16x2.f16x2: 1.0 or 0.0 per half
      return t.write(inst.operands()[0],
                     B.CreateSelect(p, llvm::ConstantFP::get(vt, 1.0), llvm::ConstantFP::get(vt, 0.0)),
                     dtype);
    auto* halves = llvm::FixedVectorType::get(B.getInt16Ty(), 2);
    llvm::Value* r = B.CreateSelect(p, llvm::ConstantInt::getAllOnesValue(halves),
                                    llvm::ConstantInt::get(halves, 0));
    return t.write(inst.operands()[0], B.CreateBitCast(r, t.i32()), dtype);
  }
  if (!twoDest) return t.invalid(inst, "a packed comparison writes two predicates (p|q)");
  llvm::Value* lo = B.CreateExtractElement(cmp, uint64_t{0});
  llvm::Value* hi = B.CreateExtractElement(cmp, uint64_t{1});
  ROCUDA_TRY(t.write(inst.operands()[0], c ? combine(t, bop, lo, c) : lo, ScalarType::Pred));
  return t.write(inst.operands()[1], c ? combine(t, bop, hi, c) : hi, ScalarType::Pred);
}

Status setp(FunctionTranslator& t, const ptx::Instruction& inst, bool isSet) {
  auto& B = t.b;
  std::string bop = boolOp(inst);
  size_t n = inst.operands().size();
  size_t base = bop.empty() ? 3 : 4;
  bool twoDest = !isSet && n == base + 1;
  if (n != base && !twoDest) return t.invalid(inst, "wrong number of operands");
  size_t first = twoDest ? 2 : 1;
  ScalarType type = isSet ? inst.types().back() : inst.types()[0];
  ROCUDA_VALUE(cmp, compare(t, inst, type, inst.operands()[first], inst.operands()[first + 1]));
  llvm::Value* c = nullptr;
  if (!bop.empty()) {
    auto cv = t.read(inst.operands()[first + 2], ScalarType::Pred);
    if (!cv.ok()) return cv.error();
    c = *cv;
  }
  if (cmp->getType()->isVectorTy()) return packedResult(t, inst, isSet, twoDest, bop, cmp, c);
  llvm::Value* p = c ? combine(t, bop, cmp, c) : cmp;
  if (isSet) {
    ScalarType dtype = inst.types()[0];
    llvm::Type* vt = t.valueType(dtype);
    llvm::Value* r =
        vt->isFloatingPointTy()
            ? B.CreateSelect(p, llvm::ConstantFP::get(vt, 1.0), llvm::ConstantFP::get(vt, 0.0))
            : B.CreateSelect(p, llvm::ConstantInt::getAllOnesValue(vt),
                             llvm::ConstantInt::get(vt, 0));
    return t.write(inst.operands()[0], r, dtype);
  }
  ROCUDA_TRY(t.write(inst.operands()[0], p, ScalarType::Pred));
  if (twoDest) {
    llvm::Value* q = c ? combine(t, bop, B.CreateNot(cmp), c) : B.CreateNot(cmp);
    ROCUDA_TRY(t.write(inst.operands()[1], q, ScalarType::Pred));
  }
  return Status::success();
}

}  // namespace

Status translateCompareOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.types().empty()) return t.invalid(inst, "missing type");
  auto& B = t.b;
  switch (inst.opcode) {
    case ptx::Opcode::setp:
      return setp(t, inst, false);
    case ptx::Opcode::set:
      if (inst.types().size() < 2) return t.invalid(inst, "set needs a destination and source type");
      return setp(t, inst, true);
    case ptx::Opcode::selp: {
      if (inst.operands().size() != 4) return t.invalid(inst, "wrong number of operands");
      ScalarType type = inst.types()[0];
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
      ROCUDA_VALUE(c, t.read(inst.operands()[3], ScalarType::Pred));
      return t.write(inst.operands()[0], B.CreateSelect(c, a, b), type);
    }
    case ptx::Opcode::slct: {
      if (inst.operands().size() != 4 || inst.types().size() < 2) return t.invalid(inst, "wrong form");
      ScalarType type = inst.types()[0], ctype = inst.types()[1];
      ROCUDA_VALUE(a, t.read(inst.operands()[1], type));
      ROCUDA_VALUE(b, t.read(inst.operands()[2], type));
      ROCUDA_VALUE(c, t.read(inst.operands()[3], ctype));
      llvm::Value* cond = nullptr;
      if (ptx::isFloat(ctype)) {
        if (inst.hasModifier("ftz")) c = flushSubnormal(t, c);
        cond = B.CreateFCmpOGE(c, llvm::ConstantFP::get(c->getType(), 0.0));
      } else {
        cond = B.CreateICmpSGE(c, llvm::ConstantInt::get(c->getType(), 0));
      }
      return t.write(inst.operands()[0], B.CreateSelect(cond, a, b), type);
    }
    default:
      return t.unsupported(inst);
  }
}

}  // namespace rocuda::compiler::detail
