// Shared-memory atomics on the CPU device (lowerBlockPrivateAtomics, host_codegen.h): a block's
// threads all run on one host thread, so an atomic on the block's own shared memory needs no
// locked instruction. A 256-bin histogram in shared memory does one per input element.
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

}  // namespace rocuda::compiler::detail
