// Spin-waits on the CPU device. A GPU thread that waits for another block (cooperative groups'
// grid.sync, decoupled look-back, spin locks) polls memory in a loop; on the CPU that loop holds
// a host thread which the awaited block may need. Every pollable access (translator.h) inside a
// loop is followed by `void __rocuda_spin_poll(ptr address, i64 value)`, with which the runtime
// notices a thread reading the same unchanged value again and again and lets the host thread
// yield, then sleep. Ordinary kernels' loops hold no such access, so they are left untouched.
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <vector>

#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler::detail {
namespace {

// The address an access reads and the value it read (the old value for a compare-and-swap), or
// {nullptr, nullptr} when the access is not one the runtime can compare.
std::pair<llvm::Value*, llvm::Instruction*> polledValue(llvm::Instruction& access) {
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&access))
    return {load->getPointerOperand(), load};
  if (auto* cas = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&access))
    return {cas->getPointerOperand(), cas};
  return {nullptr, nullptr};
}

void insertPollsIn(llvm::Function& f, llvm::FunctionCallee poll) {
  std::vector<llvm::Instruction*> accesses;
  for (auto& block : f)
    for (auto& inst : block)
      if (inst.getMetadata(kPollMetadata) != nullptr) accesses.push_back(&inst);
  if (accesses.empty()) return;
  llvm::DominatorTree dominators(f);
  llvm::LoopInfo loops(dominators);
  for (llvm::Instruction* access : accesses) {
    if (loops.getLoopFor(access->getParent()) == nullptr) continue;  // read once: no spin
    auto [address, result] = polledValue(*access);
    if (address == nullptr) continue;
    llvm::IRBuilder<> b(access->getNextNode());
    llvm::Value* value = result;
    if (llvm::isa<llvm::AtomicCmpXchgInst>(result)) value = b.CreateExtractValue(result, 0);
    llvm::Type* type = value->getType();
    if (!type->isIntegerTy() && !type->isFloatingPointTy()) continue;
    if (type->getPrimitiveSizeInBits() > 64) continue;
    if (type->isFloatingPointTy())
      value = b.CreateBitCast(value, b.getIntNTy(type->getPrimitiveSizeInBits()));
    b.CreateCall(poll, {address, b.CreateZExt(value, b.getInt64Ty())});
  }
}

}  // namespace

void insertSpinPolls(llvm::Module& module) {
  llvm::LLVMContext& c = module.getContext();
  auto* type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(c),
                              {llvm::PointerType::getUnqual(c), llvm::Type::getInt64Ty(c)}, false);
  llvm::FunctionCallee poll = module.getOrInsertFunction("__rocuda_spin_poll", type);
  if (auto* fn = llvm::dyn_cast<llvm::Function>(poll.getCallee())) {
    fn->setDoesNotThrow();
    // It only sleeps or ends the block (a failed cooperative grid): no memory the kernel sees.
    fn->setOnlyAccessesInaccessibleMemory();
  }
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) insertPollsIn(f, poll);
  if (auto* fn = module.getFunction("__rocuda_spin_poll"); fn && fn->use_empty())
    fn->eraseFromParent();
}

}  // namespace rocuda::compiler::detail
