// Promotion of the translated functions' registers (allocas) to SSA values, before either
// target's pipeline. See host_codegen.h.
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/PromoteMemToReg.h>

#include <vector>

#include "compiler/host_codegen.h"

namespace rocuda::compiler::detail {

namespace {

// Instructions per chunk while promoting: short enough that a scan from a chunk's start is
// cheap, long enough that a register's value rarely crosses many chunks.
constexpr unsigned kPromotionChunk = 256;

}  // namespace

void promoteRegisters(llvm::Module& module) {
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration()) continue;
    // Every register's alloca is in the entry block, which is never cut.
    std::vector<llvm::AllocaInst*> registers;
    for (llvm::Instruction& inst : fn.getEntryBlock())
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst))
        if (llvm::isAllocaPromotable(alloca)) registers.push_back(alloca);
    if (registers.empty()) continue;
    std::vector<llvm::BasicBlock*> blocks;
    for (llvm::BasicBlock& block : fn)
      if (&block != &fn.getEntryBlock()) blocks.push_back(&block);
    std::vector<llvm::BasicBlock*> cuts;
    for (llvm::BasicBlock* block : blocks) {
      while (true) {
        auto it = block->getFirstNonPHIIt();
        for (unsigned count = 0; count < kPromotionChunk && !it->isTerminator(); ++count) ++it;
        if (it->isTerminator()) break;
        block = block->splitBasicBlock(it, block->getName());
        cuts.push_back(block);
      }
    }
    llvm::DominatorTree dominators(fn);
    llvm::PromoteMemToReg(registers, dominators);
    for (llvm::BasicBlock* cut : cuts) llvm::MergeBlockIntoPredecessor(cut);
  }
}

}  // namespace rocuda::compiler::detail
