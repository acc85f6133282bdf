// atom / red on global, shared and generic addresses as LLVM atomics. inc/dec map to LLVM's
// uinc_wrap/udec_wrap, which are exactly PTX's wrap rules; 16-bit float and f16x2/bf16x2
// arithmetic is a compare-and-swap loop on the raw bits. cp.reduce.async.bulk is the same
// reductions, one per element of an array.
#include <llvm/IR/Intrinsics.h>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

// A compare-and-swap's ordering when it fails: the acquire part of `order`, if any.
llvm::AtomicOrdering failureOrdering(llvm::AtomicOrdering order) {
  return order == llvm::AtomicOrdering::AcquireRelease || order == llvm::AtomicOrdering::Acquire
             ? llvm::AtomicOrdering::Acquire
             : llvm::AtomicOrdering::Monotonic;
}

llvm::AtomicOrdering semantics(const ptx::Instruction& inst) {
  if (inst.hasModifier("acq_rel")) return llvm::AtomicOrdering::AcquireRelease;
  if (inst.hasModifier("acquire")) return llvm::AtomicOrdering::Acquire;
  if (inst.hasModifier("release")) return llvm::AtomicOrdering::Release;
  return llvm::AtomicOrdering::Monotonic;  // PTX default: .relaxed
}

bool rmwOp(const ptx::Instruction& inst, ScalarType type, llvm::AtomicRMWInst::BinOp& op) {
  using Op = llvm::AtomicRMWInst::BinOp;
  bool isFloat = ptx::isFloat(type), isSigned = ptx::isSignedInteger(type);
  struct Entry {
    const char* name;
    Op intOp;
    Op floatOp;
    bool floatOk;
  };
  const Entry table[] = {
      {"add", Op::Add, Op::FAdd, true},
      {"exch", Op::Xchg, Op::Xchg, true},
      {"and", Op::And, Op::And, false},
      {"or", Op::Or, Op::Or, false},
      {"xor", Op::Xor, Op::Xor, false},
      {"inc", Op::UIncWrap, Op::UIncWrap, false},
      {"dec", Op::UDecWrap, Op::UDecWrap, false},
      {"min", isSigned ? Op::Min : Op::UMin, Op::FMin, false},
      {"max", isSigned ? Op::Max : Op::UMax, Op::FMax, false},
  };
  // min/max exist for the 16-bit float types (scalar and x2) only.
  bool halfFloat = type == ScalarType::F16 || type == ScalarType::BF16 ||
                   type == ScalarType::F16x2 || type == ScalarType::BF16x2;
  for (const auto& e : table) {
    if (!inst.hasModifier(e.name)) continue;
    bool minMax = e.floatOp == Op::FMin || e.floatOp == Op::FMax;
    if (isFloat && !e.floatOk && !(minMax && halfFloat)) return false;
    op = isFloat ? e.floatOp : e.intOp;
    return true;
  }
  return false;
}

// f16 / bf16 / f16x2 / bf16x2 add, min and max as a compare-and-swap loop on the raw bits.
// LLVM's own expansion of such an atomicrmw compares values that went through f32 conversions;
// a NaN whose bits change on the way (a signalling NaN becomes quiet) never compares equal again
// and the loop would never end.
llvm::Value* halfFloatRmw(FunctionTranslator& t, const ptx::Instruction& inst, llvm::Value* ptr,
                          llvm::AtomicRMWInst::BinOp op, llvm::Value* val,
                          llvm::AtomicOrdering order, const char* defaultScope) {
  auto& B = t.b;
  llvm::Type* valueType = val->getType();
  auto* bits = B.getIntNTy(static_cast<unsigned>(valueType->getPrimitiveSizeInBits()));
  llvm::Align align(bits->getBitWidth() / 8);
  llvm::Function* fn = B.GetInsertBlock()->getParent();
  auto* initial = B.CreateAlignedLoad(bits, ptr, align);
  initial->setAtomic(llvm::AtomicOrdering::Monotonic);
  markSpace(*initial, inst);
  markBlockPrivate(*initial, inst);
  llvm::BasicBlock* before = B.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(fn->getContext(), "atom.retry", fn);
  auto* done = llvm::BasicBlock::Create(fn->getContext(), "atom.done", fn);
  B.CreateBr(loop);
  B.SetInsertPoint(loop);
  llvm::PHINode* expected = B.CreatePHI(bits, 2);
  expected->addIncoming(initial, before);
  llvm::Value* current = B.CreateBitCast(expected, valueType);
  // min/max as the non-atomic instructions order them (-0 below +0), which minnum leaves open.
  llvm::Value* updated =
      op == llvm::AtomicRMWInst::FAdd
          ? B.CreateFAdd(current, val)
          : minMaxOfTwo(t, op == llvm::AtomicRMWInst::FMin, /*propagateNaN=*/false, current, val);
  auto* x = B.CreateAtomicCmpXchg(ptr, expected, B.CreateBitCast(updated, bits), align, order,
                                  failureOrdering(order));
  markScope(*x, inst, defaultScope);
  markSpace(*x, inst);
  markBlockPrivate(*x, inst);
  llvm::Value* seen = B.CreateExtractValue(x, 0);
  expected->addIncoming(seen, loop);
  B.CreateCondBr(B.CreateExtractValue(x, 1), done, loop);
  B.SetInsertPoint(done);
  return B.CreateBitCast(seen, valueType);
}

bool leavesMemoryAsItWas(const llvm::AtomicRMWInst& rmw) {
  auto* constant = llvm::dyn_cast<llvm::ConstantInt>(rmw.getValOperand());
  if (constant == nullptr) return false;
  switch (rmw.getOperation()) {
    case llvm::AtomicRMWInst::Add:
    case llvm::AtomicRMWInst::Sub:
    case llvm::AtomicRMWInst::Or:
    case llvm::AtomicRMWInst::Xor:
    case llvm::AtomicRMWInst::UMax:
      return constant->isZero();
    case llvm::AtomicRMWInst::And:
    case llvm::AtomicRMWInst::UMin:
      return constant->isMinusOne();
    default:
      return false;
  }
}

// One atomic read-modify-write of `val` at `ptr` (atom, red, and each element of their vector
// forms and of cp.reduce.async.bulk), marked with the instruction's space and its scope
// (`defaultScope` when it names none); 16-bit float arithmetic through halfFloatRmw.
llvm::Value* atomicUpdate(FunctionTranslator& t, const ptx::Instruction& inst, llvm::Value* ptr,
                          llvm::AtomicRMWInst::BinOp op, llvm::Value* val,
                          llvm::AtomicOrdering order, const char* defaultScope) {
  llvm::Type* element = val->getType()->getScalarType();
  if ((element->isHalfTy() || element->isBFloatTy()) && op != llvm::AtomicRMWInst::Xchg)
    return halfFloatRmw(t, inst, ptr, op, val, order, defaultScope);
  unsigned size = static_cast<unsigned>(val->getType()->getPrimitiveSizeInBits() / 8);
  auto* rmw = t.b.CreateAtomicRMW(op, ptr, val, llvm::MaybeAlign(size), order);
  markScope(*rmw, inst, defaultScope);
  markSpace(*rmw, inst);
  markBlockPrivate(*rmw, inst);
  return rmw;
}

}  // namespace

void markScope(llvm::Instruction& access, const ptx::Instruction& inst, const char* defaultScope) {
  const char* scope = defaultScope;
  for (const char* name : {"cta", "cluster", "gpu", "sys"})
    if (inst.hasModifier(name)) scope = name;
  if (inst.hasModifier("gl")) scope = "gpu";  // membar.gl
  if (scope) setStringMetadata(access, kScopeMetadata, scope);
}

namespace {

// "atom.add.f32 operation without .noftz flushes subnormal inputs and results to sign-preserving
// zero on global memory" (scalar .f32 has no .noftz; the .v2/.v4 forms may name it): marked for
// the targets, which flush where the address turns out to be global (host_atomics.cpp).
void markFlushedSum(const ptx::Instruction& inst, ScalarType type, llvm::AtomicRMWInst::BinOp op,
                    llvm::Value* old) {
  if (op != llvm::AtomicRMWInst::FAdd || type != ScalarType::F32 || inst.hasModifier("noftz") ||
      (inst.space != ptx::StateSpace::Global && inst.space != ptx::StateSpace::None))
    return;
  setStringMetadata(*llvm::cast<llvm::Instruction>(old), kFlushedSumMetadata,
                    inst.space == ptx::StateSpace::Global ? "global" : "generic");
}

// atom / red with a vector type (sm_90: atom.global.add.v2.f32 is atomicAdd(float2*), and the
// .v2/.v4/.v8 16-bit float forms): one atomic operation per element, each atomic on its own
// (the PTX ISA promises no atomicity across the vector), the old values in the destination's
// elements.
Status vectorAtomic(FunctionTranslator& t, const ptx::Instruction& inst, size_t first) {
  auto& B = t.b;
  ScalarType type = inst.types()[0];
  llvm::AtomicRMWInst::BinOp op;
  if (inst.hasModifier("cas") || inst.hasModifier("exch") || !ptx::isFloat(type) ||
      !rmwOp(inst, type, op))
    return t.unsupported(inst);
  Result<size_t> operandCount = operandsBeforeCachePolicy(t, inst);
  if (!operandCount.ok()) return operandCount.error();
  if (*operandCount != first + 2) return t.invalid(inst, "wrong operands");
  const ptx::Operand& values = inst.operands()[first + 1];
  if (values.kind != ptx::Operand::Kind::Vector || values.elements().size() != inst.vectorWidth)
    return t.invalid(inst, "expected a vector of " + std::to_string(inst.vectorWidth) + " values");
  if (first == 1 && (inst.operands()[0].kind != ptx::Operand::Kind::Vector ||
                     inst.operands()[0].elements().size() != inst.vectorWidth))
    return t.invalid(inst, "expected a vector destination");
  ROCUDA_VALUE(ptr, t.address(inst.operands()[first], inst.space));
  unsigned size = ptx::scalarTypeSize(type);
  llvm::AtomicOrdering order = semantics(inst);
  t.checkAccess(inst, ptr, uint64_t(size) * inst.vectorWidth, /*write=*/true, inst.space,
                /*atomic=*/true, llvm::isAcquireOrStronger(order));
  for (size_t i = 0; i < inst.vectorWidth; ++i) {
    ROCUDA_VALUE(val, t.read(values.elements()[i], type));
    llvm::Value* p = B.CreateConstGEP1_64(t.i8(), ptr, i * size);
    llvm::Value* old = atomicUpdate(t, inst, p, op, val, order, "gpu");
    markFlushedSum(inst, type, op, old);
    if (first == 1) ROCUDA_TRY(t.write(inst.operands()[0].elements()[i], old, type));
  }
  return Status::success();
}

}  // namespace

Status translateAtomicOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.types().size() != 1) return t.unsupported(inst);
  if (inst.vectorWidth != 1) return vectorAtomic(t, inst, inst.opcode == ptx::Opcode::red ? 0 : 1);
  ScalarType type = inst.types()[0];
  // 128-bit atomics (sm_90: atomicExch / atomicCAS on 16-byte types) exchange or compare and
  // swap only.
  if (type == ScalarType::B128 && !inst.hasModifier("cas") && !inst.hasModifier("exch"))
    return t.unsupported(inst);
  // f16x2 / bf16x2 take add.noftz, min and max (both halves at once, see halfFloatRmw).
  bool packed = type == ScalarType::F16x2 || type == ScalarType::BF16x2;
  if (packed && (inst.hasModifier("cas") || inst.hasModifier("exch"))) return t.unsupported(inst);
  unsigned size = ptx::scalarTypeSize(type);
  if (type == ScalarType::Pred || (size != 2 && size != 4 && size != 8 && size != 16))
    return t.invalid(inst, "atomics need a 16-, 32-, 64- or 128-bit type");
  // red.async (sm_90): into the shared memory of a block of the cluster (the block itself, as
  // clusters are one block here), whose mbarrier then sees the element's bytes complete.
  bool async = inst.opcode == ptx::Opcode::red_async;
  bool isRed = inst.opcode == ptx::Opcode::red || async;
  size_t first = isRed ? 0 : 1;
  bool cas = inst.hasModifier("cas");
  if (async && !inst.hasModifier("mbarrier::complete_tx::bytes"))
    return t.unsupported(inst, "red.async to global memory (sm_100)");
  Result<size_t> operandCount = operandsBeforeCachePolicy(t, inst);
  if (!operandCount.ok()) return operandCount.error();
  if (*operandCount != first + (cas ? 3 : 2) + (async ? 1 : 0))
    return t.invalid(inst, "wrong operands");
  ROCUDA_VALUE(ptr,
               t.address(inst.operands()[first], async ? ptx::StateSpace::Shared : inst.space));
  llvm::AtomicOrdering order = semantics(inst);
  t.checkAccess(inst, ptr, size, /*write=*/true, inst.space, /*atomic=*/true,
                llvm::isAcquireOrStronger(order));
  llvm::Value* old = nullptr;
  if (cas) {
    ScalarType bits = ptx::bitTypeOfSize(size);
    ROCUDA_VALUE(cmp, t.read(inst.operands()[first + 1], bits));
    ROCUDA_VALUE(val, t.read(inst.operands()[first + 2], bits));
    auto* x = B.CreateAtomicCmpXchg(ptr, cmp, val, llvm::MaybeAlign(size), order,
                                    failureOrdering(order));
    markScope(*x, inst, "gpu");  // PTX's default scope for atom and red
    markSpace(*x, inst);
    markBlockPrivate(*x, inst);
    // Spin locks retry a compare-and-swap until another thread releases the lock.
    markPollableAccess(*x, inst.space);
    old = B.CreateExtractValue(x, 0);
  } else {
    llvm::AtomicRMWInst::BinOp op;
    if (!rmwOp(inst, type, op)) return t.unsupported(inst);
    ScalarType operandType = type;
    if (op == llvm::AtomicRMWInst::Xchg && ptx::isFloat(type))
      operandType = ptx::bitTypeOfSize(size);
    ROCUDA_VALUE(val, t.read(inst.operands()[first + 1], operandType));
    old = atomicUpdate(t, inst, ptr, op, val, order, "gpu");  // PTX's default scope
    markFlushedSum(inst, type, op, old);
    // An update that leaves memory as it was (atomicAdd(p, 0), atomicOr(p, 0)) only reads it:
    // retried in a loop it polls, like a load (a spin-wait on a flag).
    if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(old); rmw && leavesMemoryAsItWas(*rmw))
      markPollableAccess(*rmw, inst.space);
  }
  if (async) {
    ROCUDA_VALUE(mbarrier, t.address(inst.operands()[first + 2], ptx::StateSpace::Shared));
    completeMBarrierTransactions(t, mbarrier, B.getInt32(size));
  }
  if (isRed) return Status::success();
  return t.write(inst.operands()[0], old, type);
}

Status emitBulkReduction(FunctionTranslator& t, const ptx::Instruction& inst, llvm::Value* dst,
                         llvm::Value* src, llvm::Value* bytes) {
  auto& B = t.b;
  if (inst.types().size() != 1) return t.invalid(inst, "expected one element type");
  ScalarType type = inst.types()[0];
  bool halfFloat = type == ScalarType::F16 || type == ScalarType::BF16;
  // 16-bit float addition exists only as .add.noftz (the sum is not flushed, as in red.add.f16).
  if (halfFloat && inst.hasModifier("add") != inst.hasModifier("noftz"))
    return t.invalid(inst, ".f16 and .bf16 reductions take .add.noftz, .min or .max");
  unsigned size = ptx::scalarTypeSize(type);
  bool toGlobal = inst.space == ptx::StateSpace::Global;
  llvm::AtomicRMWInst::BinOp op;
  if ((size != 2 && size != 4 && size != 8) || !rmwOp(inst, type, op) ||
      op == llvm::AtomicRMWInst::Xchg || (halfFloat && !toGlobal))
    return t.unsupported(inst);
  // Each element's reduction is atomic (relaxed, at the destination's scope), as it is on the
  // GPU, where several blocks may reduce into the same array at once.
  const char* scope = toGlobal ? "gpu" : "cta";
  llvm::Type* elementType = t.valueType(type);
  llvm::Function* fn = B.GetInsertBlock()->getParent();
  llvm::Value* count = B.CreateUDiv(bytes, B.getInt64(size));
  llvm::BasicBlock* before = B.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(B.getContext(), "bulk.reduce", fn);
  auto* done = llvm::BasicBlock::Create(B.getContext(), "bulk.reduce.done", fn);
  B.CreateCondBr(B.CreateICmpEQ(count, B.getInt64(0)), done, loop);
  B.SetInsertPoint(loop);
  llvm::PHINode* index = B.CreatePHI(t.i64(), 2, "element");
  index->addIncoming(B.getInt64(0), before);
  llvm::Value* offset = B.CreateMul(index, B.getInt64(size));
  llvm::Value* from = B.CreateGEP(B.getInt8Ty(), src, offset);
  llvm::Value* to = B.CreateGEP(B.getInt8Ty(), dst, offset);
  llvm::Value* value = B.CreateAlignedLoad(elementType, from, llvm::Align(size));
  atomicUpdate(t, inst, to, op, value, llvm::AtomicOrdering::Monotonic, scope);
  llvm::Value* next = B.CreateAdd(index, B.getInt64(1));
  index->addIncoming(next, B.GetInsertBlock());
  B.CreateCondBr(B.CreateICmpULT(next, count), loop, done);
  B.SetInsertPoint(done);
  return Status::success();
}

}  // namespace rocuda::compiler::detail
