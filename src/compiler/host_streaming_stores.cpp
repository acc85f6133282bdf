// Streaming forms of the CPU device's BlockLoop kernels. A kernel that writes arrays larger than
// the caches (vector add, SAXPY, elementwise ops) spends a quarter of its memory traffic reading
// each output line before writing it (the store's read for ownership); non-temporal stores write
// whole lines without reading them and leave the caches to the inputs. The streaming form is a
// copy of the block function whose vectorised stores to kernel-parameter memory are non-temporal;
// the runtime runs it for launches that store more than the caches hold (codeForLaunch) and
// fences a worker's stores once, after its blocks (x86 orders non-temporal stores only by
// fences). Kernels that communicate between threads in memory (atomics, fences, volatile
// accesses, calls) keep the ordinary form only: their stores must be ordered as written.
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <vector>

#include "compiler/host_codegen.h"

namespace rocuda::compiler::detail {
namespace {

// Whether `f` touches memory only through plain loads and stores: no atomics, fences or
// volatile accesses, and no calls but intrinsics (prefetches, masked accesses, math): nothing
// through which its threads could see one another's stores in an order.
bool onlyPlainAccesses(const llvm::Function& f) {
  for (const llvm::Instruction& inst : llvm::instructions(f)) {
    if (llvm::isa<llvm::AtomicRMWInst, llvm::AtomicCmpXchgInst, llvm::FenceInst>(inst))
      return false;
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst); load && !load->isSimple()) return false;
    if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst); store && !store->isSimple())
      return false;
    if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) {
      const llvm::Function* callee = call->getCalledFunction();
      if (callee == nullptr || !callee->isIntrinsic()) return false;
    }
  }
  return true;
}

// Whether `value` (an address, or an integer holding one) is computed from a value loaded from
// the block function's parameter buffer (its argument 0): an address a kernel parameter gave,
// not one of the block context's (shared memory, local memory, the runtime's). Kernels pass
// pointers as 64-bit integers, so the search goes through integer arithmetic and casts.
bool fromParameter(const llvm::Value* value, const llvm::Function& f, int depth = 0) {
  if (depth > 12) return false;
  value = llvm::getUnderlyingObject(value, 12);
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(value))
    return llvm::getUnderlyingObject(load->getPointerOperand()) == f.getArg(0);
  auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
  if (inst == nullptr) return false;
  switch (inst->getOpcode()) {
    case llvm::Instruction::IntToPtr:
    case llvm::Instruction::PtrToInt:
    case llvm::Instruction::ZExt:
    case llvm::Instruction::SExt:
    case llvm::Instruction::Add:
    case llvm::Instruction::Sub:
      for (const llvm::Value* operand : inst->operands())
        if (fromParameter(operand, f, depth + 1)) return true;
      return false;
    default:
      return false;
  }
}

// The vector stores of `f` into parameter memory.
std::vector<llvm::StoreInst*> streamingCandidates(llvm::Function& f) {
  std::vector<llvm::StoreInst*> stores;
  for (llvm::Instruction& inst : llvm::instructions(f))
    if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        store && store->getValueOperand()->getType()->isVectorTy() &&
        fromParameter(store->getPointerOperand(), f))
      stores.push_back(store);
  return stores;
}

}  // namespace

void addStreamingStoreForms(llvm::Module& module, ModuleInfo& info) {
  if (!llvm::Triple(module.getTargetTriple()).isX86()) return;  // the runtime's fence is x86's
  llvm::LLVMContext& c = module.getContext();
  for (KernelInfo& kernel : info.kernels) {
    if (kernel.cpuExecution != CpuExecution::BlockLoop) continue;
    llvm::Function* block = module.getFunction(blockLoopSymbol(kernel.name));
    if (block == nullptr || block->isDeclaration() || !onlyPlainAccesses(*block)) continue;
    std::vector<llvm::StoreInst*> stores = streamingCandidates(*block);
    if (stores.empty()) continue;
    // Each store instruction of the work-item loop stores one element per thread.
    uint32_t bytes = 0;
    for (llvm::StoreInst* store : stores) {
      auto* vector = llvm::cast<llvm::VectorType>(store->getValueOperand()->getType());
      bytes += static_cast<uint32_t>(vector->getElementType()->getPrimitiveSizeInBits() / 8);
    }
    llvm::ValueToValueMapTy map;
    llvm::Function* streaming = llvm::CloneFunction(block, map);
    streaming->setName(streamingBlockLoopSymbol(kernel.name));
    streaming->setLinkage(block->getLinkage());
    llvm::MDNode* nonTemporal = llvm::MDNode::get(
        c, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), 1))});
    for (llvm::StoreInst* store : stores)
      llvm::cast<llvm::StoreInst>(map[store])
          ->setMetadata(llvm::LLVMContext::MD_nontemporal, nonTemporal);
    // Prefetches of a later block's output (host_prefetch.cpp's: for writing, or into the L2
    // cache marked as for writing) would bring into the caches the lines the non-temporal
    // stores then have to take out of them again.
    std::vector<llvm::Instruction*> writePrefetches;
    for (llvm::Instruction& inst : llvm::instructions(*streaming))
      if (auto* call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
          call && call->getIntrinsicID() == llvm::Intrinsic::prefetch &&
          (llvm::cast<llvm::ConstantInt>(call->getArgOperand(1))->isOne() ||
           call->hasMetadata(kPrefetchForWritingMarker)))
        writePrefetches.push_back(call);
    for (llvm::Instruction* prefetch : writePrefetches) prefetch->eraseFromParent();
    kernel.cpuStreamingStoreBytes = bytes;
  }
}

}  // namespace rocuda::compiler::detail
