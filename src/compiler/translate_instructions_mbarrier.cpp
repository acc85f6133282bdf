// mbarrier (sm_80+ asynchronous barriers, cuda::barrier and cuda::pipeline): init, inval,
// arrive (count, .expect_tx, .noComplete), arrive_drop, expect_tx, complete_tx, pending_count,
// test_wait / try_wait (.parity), and cp.async.mbarrier.arrive. The object is one 64-bit word
// laid out as compiler.h says, updated with a compare-and-swap loop (block-private: plain
// accesses on the CPU device, whose block runs on one host thread); a wait is
// __rocuda_mbarrier_wait, which the CPU device's scheduler turns into a wait for the phase.
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

constexpr uint64_t kCountMask = (1u << 20) - 1;  // pending and expected arrival fields
constexpr unsigned kExpectedShift = 20;
constexpr unsigned kTxShift = 40;
constexpr unsigned kTxBits = 21;
constexpr unsigned kPhaseShift = 63;

// i64 rocuda.mbarrier.update(ptr m, i32 arrivals, i32 drop, i32 tx): arrive `arrivals` times,
// take `drop` off the expected count and add `tx` to the transaction count, atomically; when
// no arrival and no transaction is left the phase completes (parity flips, the pending count
// starts again from the expected one). Returns the state of the arriving thread.
llvm::Function* updateFunction(llvm::Module& m) {
  const char* name = "rocuda.mbarrier.update";
  if (llvm::Function* fn = m.getFunction(name)) return fn;
  llvm::LLVMContext& c = m.getContext();
  auto* i32 = llvm::Type::getInt32Ty(c);
  auto* i64 = llvm::Type::getInt64Ty(c);
  auto* type =
      llvm::FunctionType::get(i64, {llvm::PointerType::getUnqual(c), i32, i32, i32}, false);
  auto* fn = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, name, m);
  fn->addFnAttr(llvm::Attribute::AlwaysInline);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::Argument* word = fn->getArg(0);
  auto* entry = llvm::BasicBlock::Create(c, "entry", fn);
  auto* retry = llvm::BasicBlock::Create(c, "retry", fn);
  auto* done = llvm::BasicBlock::Create(c, "done", fn);
  llvm::IRBuilder<> b(entry);
  auto* initial = b.CreateAlignedLoad(i64, word, llvm::Align(8));
  initial->setAtomic(llvm::AtomicOrdering::Monotonic);
  // An mbarrier is always the block's own shared memory (a generic address too: PTX puts the
  // object in .shared, and another block's is reachable only in clusters of several blocks).
  auto* blockPrivate = llvm::MDNode::get(c, {});
  initial->setMetadata(kBlockPrivateMetadata, blockPrivate);
  b.CreateBr(retry);

  b.SetInsertPoint(retry);
  llvm::PHINode* old = b.CreatePHI(i64, 2);
  old->addIncoming(initial, entry);
  auto field = [&](unsigned shift, uint64_t mask) {
    return b.CreateAnd(b.CreateLShr(old, shift), mask);
  };
  llvm::Value* pending = field(0, kCountMask);
  llvm::Value* expected = field(kExpectedShift, kCountMask);
  llvm::Value* phase = b.CreateLShr(old, kPhaseShift);
  // The transaction count is signed: complete_tx may come before its expect_tx.
  llvm::Value* tx = b.CreateAShr(b.CreateShl(old, 64 - kTxShift - kTxBits), 64 - kTxBits);
  llvm::Value* newExpected =
      b.CreateAnd(b.CreateSub(expected, b.CreateZExt(fn->getArg(2), i64)), kCountMask);
  llvm::Value* newPending =
      b.CreateAnd(b.CreateSub(pending, b.CreateZExt(fn->getArg(1), i64)), kCountMask);
  llvm::Value* newTx = b.CreateAdd(tx, b.CreateSExt(fn->getArg(3), i64));
  llvm::Value* complete =
      b.CreateAnd(b.CreateICmpEQ(newPending, b.getInt64(0)), b.CreateICmpEQ(newTx, b.getInt64(0)));
  llvm::Value* nextPhase = b.CreateSelect(complete, b.CreateXor(phase, 1), phase);
  llvm::Value* nextPending = b.CreateSelect(complete, newExpected, newPending);
  llvm::Value* txBits = b.CreateAnd(newTx, (uint64_t(1) << kTxBits) - 1);
  llvm::Value* updated =
      b.CreateOr({nextPending, b.CreateShl(newExpected, kExpectedShift),
                  b.CreateShl(txBits, kTxShift), b.CreateShl(nextPhase, kPhaseShift)});
  auto* exchange =
      b.CreateAtomicCmpXchg(word, old, updated, llvm::Align(8),
                            llvm::AtomicOrdering::AcquireRelease, llvm::AtomicOrdering::Monotonic);
  setStringMetadata(*exchange, kScopeMetadata, "cta");
  exchange->setMetadata(kBlockPrivateMetadata, blockPrivate);
  llvm::Value* seen = b.CreateExtractValue(exchange, 0);
  old->addIncoming(seen, retry);
  b.CreateCondBr(b.CreateExtractValue(exchange, 1), done, retry);

  b.SetInsertPoint(done);
  // The arriving thread's state: the phase it arrived in and what was still pending after it.
  llvm::Value* left = b.CreateSelect(complete, b.getInt64(0), newPending);
  b.CreateRet(b.CreateOr(b.CreateShl(phase, kPhaseShift), left));
  return fn;
}

// The mbarrier an instruction names: operand `index`, in the instruction's state space
// (.shared, .shared::cta; .shared::cluster is the block's own while a cluster is one block).
Result<llvm::Value*> mbarrierAddress(FunctionTranslator& t, const ptx::Instruction& inst,
                                     size_t index, bool write) {
  if (inst.operands().size() <= index || inst.operands()[index].kind != ptx::Operand::Kind::Address)
    return t.invalid(inst, "expected an mbarrier address [addr]");
  ptx::StateSpace space =
      inst.space == ptx::StateSpace::SharedCluster ? ptx::StateSpace::Shared : inst.space;
  if (space != ptx::StateSpace::None && space != ptx::StateSpace::Shared)
    return t.invalid(inst, "an mbarrier lives in shared memory");
  ROCUDA_VALUE(ptr, t.address(inst.operands()[index], space));
  t.checkAccess(inst, ptr, 8, write, space, /*atomic=*/true);
  return ptr;
}

// An optional u32 operand (a count or transaction count), `fallback` when absent.
Result<llvm::Value*> countOperand(FunctionTranslator& t, const ptx::Instruction& inst, size_t index,
                                  uint32_t fallback) {
  if (inst.operands().size() <= index) return static_cast<llvm::Value*>(t.b.getInt32(fallback));
  return t.read(inst.operands()[index], ScalarType::U32);
}

Status init(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() != 2) return t.invalid(inst, "expected [addr], count");
  ROCUDA_VALUE(ptr, mbarrierAddress(t, inst, 0, /*write=*/true));
  ROCUDA_VALUE(count, t.read(inst.operands()[1], ScalarType::U32));
  llvm::Value* n = B.CreateAnd(B.CreateZExt(count, t.i64()), kCountMask);
  auto* store =
      B.CreateAlignedStore(B.CreateOr(n, B.CreateShl(n, kExpectedShift)), ptr, llvm::Align(8));
  store->setAtomic(llvm::AtomicOrdering::Monotonic);
  return Status::success();
}

Status inval(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.operands().size() != 1) return t.invalid(inst, "expected [addr]");
  ROCUDA_VALUE(ptr, mbarrierAddress(t, inst, 0, /*write=*/true));
  auto* store = t.b.CreateAlignedStore(t.b.getInt64(0), ptr, llvm::Align(8));
  store->setAtomic(llvm::AtomicOrdering::Monotonic);
  return Status::success();
}

// arrive / arrive_drop: state, [addr] {, count | txCount}. .noComplete promises the arrival
// does not complete the phase (nothing to do differently when the promise holds).
Status arrive(FunctionTranslator& t, const ptx::Instruction& inst, bool drop) {
  auto& B = t.b;
  if (inst.operands().size() != 2 && inst.operands().size() != 3)
    return t.invalid(inst, "expected state, [addr] {, count}");
  bool expectTx = inst.hasModifier("expect_tx");
  if ((expectTx || inst.hasModifier("noComplete")) && inst.operands().size() != 3)
    return t.invalid(inst, expectTx ? "expected state, [addr], txCount" : "expected a count");
  ROCUDA_VALUE(ptr, mbarrierAddress(t, inst, 1, /*write=*/true));
  ROCUDA_VALUE(operand, countOperand(t, inst, 2, 1));
  llvm::Value* count = expectTx ? B.getInt32(1) : operand;
  llvm::Value* tx = expectTx ? operand : B.getInt32(0);
  llvm::Value* state =
      B.CreateCall(updateFunction(t.mt.module()), {ptr, count, drop ? count : B.getInt32(0), tx});
  return t.write(inst.operands()[0], state, ScalarType::B64);
}

// expect_tx / complete_tx: [addr], txCount.
Status transactions(FunctionTranslator& t, const ptx::Instruction& inst, bool complete) {
  auto& B = t.b;
  if (inst.operands().size() != 2) return t.invalid(inst, "expected [addr], txCount");
  ROCUDA_VALUE(ptr, mbarrierAddress(t, inst, 0, /*write=*/true));
  ROCUDA_VALUE(tx, t.read(inst.operands()[1], ScalarType::U32));
  B.CreateCall(updateFunction(t.mt.module()),
               {ptr, B.getInt32(0), B.getInt32(0), complete ? B.CreateNeg(tx) : tx});
  return Status::success();
}

// test_wait / try_wait{.parity}: waitComplete, [addr], state | phaseParity {, suspendTimeHint}.
Status wait(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  bool parity = inst.hasModifier("parity");
  size_t operands = inst.operands().size();
  bool hint = inst.hasModifier("try_wait") && operands == 4;
  if (operands != 3 && !hint)
    return t.invalid(inst, parity ? "expected waitComplete, [addr], phaseParity"
                                  : "expected waitComplete, [addr], state");
  ROCUDA_VALUE(ptr, mbarrierAddress(t, inst, 1, /*write=*/false));
  llvm::Value* state = nullptr;
  if (parity) {
    ROCUDA_VALUE(p, t.read(inst.operands()[2], ScalarType::U32));
    state = B.CreateZExt(p, t.i64());
  } else {
    ROCUDA_VALUE(s, t.read(inst.operands()[2], ScalarType::B64));
    state = s;
  }
  if (hint) {  // suspendTimeHint: read (so a bad operand is reported), then not needed
    ROCUDA_VALUE(unused, t.read(inst.operands()[3], ScalarType::U32));
    (void)unused;
  }
  // A wait for other threads: never moved across control flow.
  auto callee = convergentRuntimeFunction(t, "__rocuda_mbarrier_wait", t.i32(),
                                          {t.ptrTy(), t.i64(), t.i32()});
  llvm::Value* done = B.CreateCall(callee, {ptr, state, B.getInt32(parity ? 1 : 0)});
  // The default .acquire: what the arriving threads wrote before their release is visible.
  if (!inst.hasModifier("relaxed"))
    setStringMetadata(*B.CreateFence(llvm::AtomicOrdering::Acquire), kScopeMetadata,
                      inst.hasModifier("cluster") ? "cluster" : "cta");
  return t.write(inst.operands()[0], B.CreateICmpNE(done, B.getInt32(0)), ScalarType::Pred);
}

// pending_count.b64 count, state: the arrivals still pending after the state's arrival.
Status pendingCount(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.operands().size() != 2) return t.invalid(inst, "expected count, state");
  ROCUDA_VALUE(state, t.read(inst.operands()[1], ScalarType::B64));
  return t.write(inst.operands()[0], t.b.CreateTrunc(t.b.CreateAnd(state, kCountMask), t.i32()),
                 ScalarType::U32);
}

}  // namespace

Status translateMBarrierOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.hasModifier("init")) return init(t, inst);
  if (inst.hasModifier("inval")) return inval(t, inst);
  if (inst.hasModifier("arrive")) return arrive(t, inst, /*drop=*/false);
  if (inst.hasModifier("arrive_drop")) return arrive(t, inst, /*drop=*/true);
  if (inst.hasModifier("expect_tx")) return transactions(t, inst, /*complete=*/false);
  if (inst.hasModifier("complete_tx")) return transactions(t, inst, /*complete=*/true);
  if (inst.hasModifier("test_wait") || inst.hasModifier("try_wait")) return wait(t, inst);
  if (inst.hasModifier("pending_count")) return pendingCount(t, inst);
  return t.unsupported(inst);
}

// cp.async.mbarrier.arrive{.noinc}: an arrival once the thread's earlier cp.async copies have
// landed, which here they have. Without .noinc the arrival comes with an increment of the
// pending count, so it completes nothing and changes nothing.
Status translateAsyncArrive(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() != 1) return t.invalid(inst, "expected [addr]");
  ROCUDA_VALUE(ptr, mbarrierAddress(t, inst, 0, /*write=*/true));
  if (inst.hasModifier("noinc"))
    B.CreateCall(updateFunction(t.mt.module()), {ptr, B.getInt32(1), B.getInt32(0), B.getInt32(0)});
  return Status::success();
}

void completeMBarrierTransactions(FunctionTranslator& t, llvm::Value* mbarrier,
                                  llvm::Value* bytes) {
  auto& B = t.b;
  B.CreateCall(updateFunction(t.mt.module()),
               {mbarrier, B.getInt32(0), B.getInt32(0), B.CreateNeg(bytes)});
}

}  // namespace rocuda::compiler::detail
