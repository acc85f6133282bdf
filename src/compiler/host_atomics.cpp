// Shared-memory atomics on the CPU device (lowerBlockPrivateAtomics, host_codegen.h): a block's
// threads all run on one host thread, so an atomic on the block's own shared memory needs no
// locked instruction. A 256-bin histogram in shared memory does one per input element.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/LowerAtomic.h>

#include <vector>

#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

void lowerBlockPrivateAtomics(llvm::Module& module) {
  std::vector<llvm::Instruction*> marked;
  for (llvm::Function& function : module)
    for (llvm::Instruction& inst : llvm::instructions(function))
      if (inst.getMetadata(kBlockPrivateMetadata) != nullptr) marked.push_back(&inst);
  for (llvm::Instruction* inst : marked) {
    if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(inst))
      llvm::lowerAtomicRMWInst(rmw);
    else if (auto* cas = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(inst))
      llvm::lowerAtomicCmpXchgInst(cas);
    else if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst))
      load->setAtomic(llvm::AtomicOrdering::NotAtomic);
  }
}

namespace {

void expandFlushedSum(llvm::AtomicRMWInst& rmw) {
  llvm::LLVMContext& context = rmw.getContext();
  llvm::Module& module = *rmw.getModule();
  llvm::BasicBlock* before = rmw.getParent();
  llvm::BasicBlock* after = before->splitBasicBlock(rmw.getIterator(), "flushed_sum.done");
  before->getTerminator()->eraseFromParent();
  llvm::IRBuilder<> b(before);
  llvm::Value* ptr = rmw.getPointerOperand();
  llvm::Type* type = rmw.getType();
  llvm::Type* bits = b.getInt32Ty();
  // Shared memory reached through a generic address keeps subnormals.
  llvm::Value* keep = b.getFalse();
  if (stringMetadata(rmw, kFlushedSumMetadata) == "generic") {
    llvm::FunctionCallee isShared =
        module.getOrInsertFunction("__rocuda_is_shared", b.getInt32Ty(), b.getPtrTy());
    keep = b.CreateICmpNE(b.CreateCall(isShared, {ptr}), b.getInt32(0));
  }
  auto maybeFlushed = [&](llvm::Value* x) {
    return b.CreateSelect(keep, x, flushBelowNormal(b, x));
  };
  llvm::Value* operand = maybeFlushed(rmw.getValOperand());
  llvm::LoadInst* initial = b.CreateAlignedLoad(bits, ptr, rmw.getAlign());
  initial->setAtomic(llvm::AtomicOrdering::Monotonic);
  llvm::Function* fn = before->getParent();
  auto* loop = llvm::BasicBlock::Create(context, "flushed_sum.retry", fn, after);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* expected = b.CreatePHI(bits, 2);
  expected->addIncoming(initial, before);
  llvm::Value* sum = b.CreateFAdd(maybeFlushed(b.CreateBitCast(expected, type)), operand);
  llvm::AtomicOrdering order = rmw.getOrdering();
  auto* exchange = b.CreateAtomicCmpXchg(
      ptr, expected, b.CreateBitCast(maybeFlushed(sum), bits), rmw.getAlign(), order,
      llvm::AtomicCmpXchgInst::getStrongestFailureOrdering(order), rmw.getSyncScopeID());
  llvm::Value* seen = b.CreateExtractValue(exchange, 0);
  expected->addIncoming(seen, loop);
  b.CreateCondBr(b.CreateExtractValue(exchange, 1), after, loop);
  b.SetInsertPoint(&*after->getFirstInsertionPt());
  rmw.replaceAllUsesWith(b.CreateBitCast(seen, type));  // atom returns the value it found
  rmw.eraseFromParent();
}

}  // namespace

void flushAtomicSums(llvm::Module& module) {
  std::vector<llvm::AtomicRMWInst*> marked;
  for (llvm::Function& function : module)
    for (llvm::Instruction& inst : llvm::instructions(function))
      if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&inst))
        if (rmw->getMetadata(kFlushedSumMetadata) != nullptr) marked.push_back(rmw);
  for (llvm::AtomicRMWInst* rmw : marked) expandFlushedSum(*rmw);
}

}  // namespace rocuda::compiler::detail
