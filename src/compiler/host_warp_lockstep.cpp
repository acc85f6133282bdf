// Implicit warp synchronisation on the CPU device. Code written for GPUs before Volta relies on a
// warp's 32 lanes executing each instruction together: CUDA's classic reduction finishes with
// `volatile int* s = sdata; s[tid] += s[tid + 16]; ...` in one warp with no __syncwarp, every lane
// reading before any writes, and the classic warp scan does `if (lane >= 2) s[i] += s[i - 2]`.
// Since Volta this is formally undefined (CUDA C++ Programming Guide, "Independent Thread
// Scheduling"), yet NVIDIA GPUs and AMD's lockstep wavefronts still give the expected results. The
// CPU device runs a block's threads one after another between waits, so lane 0 would finish every
// step before lane 1 read anything.
//
// Such code exchanges values between lanes through memory, so its accesses become lockstep points
// (`void __rocuda_warp_lockstep(i32 order)`, a wait of the CPU device's warp scheduler): before
// each access that another lane's access may be ordered against, the warp's lanes wait for each
// other. A store waits until every lane has made the accesses before it (the reads of its own
// statement); a load waits until every lane has made the stores before it; loads in a row need no
// wait between them. Where lanes diverge around such accesses, the branch's immediate
// post-dominator (where a GPU reconverges) is a lockstep point too, and when lanes wait at
// different points the scheduler releases those at the point that comes first (`order`, the
// point's rank in the kernel's reverse post-order, numbered once the code is inlined), so lanes
// that skipped a branch wait at its end for the lanes inside it, as a GPU's warp would.
//
// Which accesses (CompileOptions::warpLockstep): by default the volatile loads and stores of
// shared memory in kernels that use no warp-level synchronisation at all (code that does
// __syncwarp or shuffles orders its exchanges itself and pays nothing); on request every load and
// store outside the thread's own memory of every kernel (slow; for warp-synchronous code on
// global memory, such as CuPy's partition kernel). AMD GPUs need none of this.
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/Analysis/PostDominators.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <vector>

#include "compiler/host_codegen.h"

namespace rocuda::compiler::detail {
namespace {

constexpr const char* kLockstepFunction = "__rocuda_warp_lockstep";

// Whether `inst` is a load or store whose value other lanes may exchange under `mode`: a volatile
// one in the block's shared window, or (AllMemory) any one outside the thread's own frame.
bool exchanges(llvm::Instruction& inst, WarpLockstep mode) {
  llvm::Value* address = nullptr;
  bool isVolatile = false;
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
    address = load->getPointerOperand();
    isVolatile = load->isVolatile();
  } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
    address = store->getPointerOperand();
    isVolatile = store->isVolatile();
  }
  if (address == nullptr) return false;
  if (mode == WarpLockstep::AllMemory)
    return !llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(address));
  return isVolatile && addressInSharedWindow(address);
}

const llvm::Function* calleeOf(const llvm::Instruction& inst) {
  auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
  return call ? call->getCalledFunction() : nullptr;
}

bool named(const llvm::Function* f, const std::vector<std::string>& names) {
  return f && std::find(names.begin(), names.end(), f->getName()) != names.end();
}

// Whether `inst` already waits for the warp's lanes (a barrier, a warp collective, a lockstep
// point).
bool synchronizesWarp(const llvm::Instruction& inst) {
  const llvm::Function* callee = calleeOf(inst);
  return named(callee, kWarpCollectiveFunctions) || named(callee, kBarrierFunctions);
}

// The functions whose accesses are considered: every defined one, or (VolatileShared) those
// reachable from a kernel that reaches no warp collective.
llvm::DenseSet<llvm::Function*> functionsToConsider(llvm::Module& module, const ModuleInfo& info,
                                                    WarpLockstep mode) {
  llvm::DenseSet<llvm::Function*> chosen;
  std::vector<llvm::Function*> work;
  auto add = [&](llvm::Function* f) {
    if (f && !f->isDeclaration() && chosen.insert(f).second) work.push_back(f);
  };
  if (mode == WarpLockstep::AllMemory) {
    for (llvm::Function& f : module) add(&f);
    return chosen;
  }
  for (const KernelInfo& kernel : info.kernels)
    if (!kernelReaches(module, kernel.name, kWarpCollectiveFunctions))
      add(module.getFunction(kernel.name));
  while (!work.empty()) {
    llvm::Function* f = work.back();
    work.pop_back();
    for (llvm::BasicBlock& block : *f)
      for (llvm::Instruction& inst : block)
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) add(call->getCalledFunction());
  }
  return chosen;
}

// Lockstep points before the exchanging accesses of `f`. Returns whether it placed any.
bool placeAccessPoints(llvm::Function& f, WarpLockstep mode, llvm::FunctionCallee lockstep) {
  bool placed = false;
  for (llvm::BasicBlock& block : f) {
    // What this lane may have done since the warp last waited together; unknown on entry.
    bool loadedSinceWait = true, storedSinceWait = true;
    for (llvm::Instruction& inst : block) {
      if (synchronizesWarp(inst)) {
        loadedSinceWait = storedSinceWait = false;
        continue;
      }
      if (!exchanges(inst, mode)) continue;
      bool store = llvm::isa<llvm::StoreInst>(inst);
      if (storedSinceWait || (store && loadedSinceWait)) {
        llvm::IRBuilder<>(&inst).CreateCall(lockstep, {llvm::IRBuilder<>(&inst).getInt32(0)});
        loadedSinceWait = storedSinceWait = false;
        placed = true;
      }
      (store ? storedSinceWait : loadedSinceWait) = true;
    }
  }
  return placed;
}

// Where lanes that diverge around a lockstep point reconverge: the immediate post-dominator of
// each branch with such a point (or a call of a function in `withPoints`) between it and there.
void placeJoinPoints(llvm::Function& f, const llvm::DenseSet<const llvm::Function*>& withPoints,
                     llvm::FunctionCallee lockstep) {
  llvm::DenseSet<const llvm::BasicBlock*> holdsPoint;
  for (llvm::BasicBlock& block : f)
    for (llvm::Instruction& inst : block)
      if (withPoints.contains(calleeOf(inst))) holdsPoint.insert(&block);
  if (holdsPoint.empty()) return;
  llvm::PostDominatorTree postDominators(f);
  llvm::DenseSet<llvm::BasicBlock*> joins;
  for (llvm::BasicBlock& branch : f) {
    if (branch.getTerminator()->getNumSuccessors() < 2) continue;
    llvm::DomTreeNode* node = postDominators.getNode(&branch);
    llvm::DomTreeNode* joinNode = node ? node->getIDom() : nullptr;
    llvm::BasicBlock* join = joinNode ? joinNode->getBlock() : nullptr;
    if (join == nullptr || joins.contains(join)) continue;  // lanes leave through different exits
    std::vector<llvm::BasicBlock*> work(llvm::succ_begin(&branch), llvm::succ_end(&branch));
    llvm::DenseSet<llvm::BasicBlock*> seen{join};
    bool divergesAroundPoint = false;
    while (!work.empty() && !divergesAroundPoint) {
      llvm::BasicBlock* block = work.back();
      work.pop_back();
      if (!seen.insert(block).second) continue;
      divergesAroundPoint = holdsPoint.contains(block);
      for (llvm::BasicBlock* next : llvm::successors(block)) work.push_back(next);
    }
    if (divergesAroundPoint) joins.insert(join);
  }
  for (llvm::BasicBlock* join : joins) {
    llvm::IRBuilder<> b(&*join->getFirstInsertionPt());
    b.CreateCall(lockstep, {b.getInt32(0)});
  }
}

}  // namespace

void insertWarpLockstepPoints(llvm::Module& module, const ModuleInfo& info, WarpLockstep mode) {
  if (mode == WarpLockstep::Off) return;
  llvm::LLVMContext& c = module.getContext();
  llvm::FunctionCallee lockstep = module.getOrInsertFunction(
      kLockstepFunction,
      llvm::FunctionType::get(llvm::Type::getVoidTy(c), {llvm::Type::getInt32Ty(c)}, false));
  auto* declaration = llvm::cast<llvm::Function>(lockstep.getCallee());
  declaration->setConvergent();
  declaration->setDoesNotThrow();
  llvm::DenseSet<llvm::Function*> considered = functionsToConsider(module, info, mode);
  llvm::DenseSet<const llvm::Function*> withPoints{declaration};
  for (llvm::Function* f : considered)
    if (placeAccessPoints(*f, mode, lockstep)) withPoints.insert(f);
  if (withPoints.size() == 1) {
    declaration->eraseFromParent();
    return;
  }
  // A call of a function with points is a point to its callers' branches.
  for (bool grew = true; grew;) {
    grew = false;
    for (llvm::Function* f : considered)
      if (!withPoints.contains(f))
        for (llvm::BasicBlock& block : *f)
          for (llvm::Instruction& inst : block)
            if (!withPoints.contains(f) && withPoints.contains(calleeOf(inst))) {
              withPoints.insert(f);
              grew = true;
            }
  }
  for (llvm::Function* f : considered)
    if (withPoints.contains(f)) placeJoinPoints(*f, withPoints, lockstep);
}

void numberWarpLockstepPoints(llvm::Module& module) {
  llvm::Function* lockstep = module.getFunction(kLockstepFunction);
  if (lockstep == nullptr) return;
  auto* i32 = llvm::Type::getInt32Ty(module.getContext());
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    uint32_t order = 0;
    std::vector<llvm::Instruction*> redundant;
    for (llvm::BasicBlock* block : llvm::ReversePostOrderTraversal<llvm::Function*>(&f)) {
      // A point right after another wait of the warp, with no access between (blocks the
      // optimiser merged: a join followed by a block's first access), waits for nothing.
      bool accessedSinceWait = true;
      for (llvm::Instruction& inst : *block) {
        if (calleeOf(inst) == lockstep) {
          if (!accessedSinceWait) {
            redundant.push_back(&inst);
            continue;
          }
          llvm::cast<llvm::CallBase>(inst).setArgOperand(0, llvm::ConstantInt::get(i32, order++));
        }
        if (synchronizesWarp(inst))
          accessedSinceWait = false;
        else if (inst.mayReadOrWriteMemory())
          accessedSinceWait = true;
      }
    }
    for (llvm::Instruction* inst : redundant) inst->eraseFromParent();
  }
}

}  // namespace rocuda::compiler::detail
