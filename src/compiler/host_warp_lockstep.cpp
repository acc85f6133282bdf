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
// (`void __rocuda_warp_lockstep(i32 value)`, a wait of the CPU device's warp scheduler): before
// each access that another lane's access may be ordered against, the warp's lanes wait for each
// other. A store waits until every lane has made the accesses before it (the reads of its own
// statement); a load waits until every lane has made the stores before it; loads in a row need no
// wait between them; a block-scope fence (`__threadfence_block()` between the statements of a
// tail on plain shared memory) is a point of its own. Where lanes diverge around such accesses,
// the branch's immediate post-dominator (where a GPU reconverges) is a point too when another
// can follow it, and when lanes wait at different points the scheduler releases those at the
// point that comes first (the value's order, the point's rank in the kernel's reverse post-order,
// numbered once the code is inlined), so lanes that skipped a branch wait at its end for the
// lanes inside it, as a GPU's warp would. The value's top bit (compiler.h kLockstepStorePoint)
// marks the points after which lanes store: lanes released again and again from the others only
// read, spinning on what a held lane will write, and the scheduler then lets every lane go on.
//
// Which accesses (CompileOptions::warpLockstep): by default the volatile loads and stores that
// may reach shared memory (a shared address, or a generic one: a function not inlined or a `-G`
// build keeps the pointer opaque) in kernels that never call __syncwarp (code that does orders
// its exchanges itself and pays nothing); on request every load and store outside the thread's
// own memory of every kernel (slow; for warp-synchronous code on global memory, such as CuPy's
// partition kernel). AMD GPUs need none of this.
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
#include "compiler/translator.h"

namespace rocuda::compiler::detail {
namespace {

// Whether `inst` is a load or store whose value other lanes may exchange under `mode`: a volatile
// one that may reach shared memory (in the block's shared window, or through a generic address,
// which a function not inlined, a `-G` build or a pointer kept in local memory leave opaque), or
// (AllMemory) any one outside the thread's own frame. A block-scope fence is a statement boundary
// of such code (`__threadfence_block()` between the steps instead of `volatile`).
bool exchanges(llvm::Instruction& inst, WarpLockstep mode) {
  if (llvm::isa<llvm::FenceInst>(inst)) return stringMetadata(inst, kScopeMetadata) == "cta";
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
  if (llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(address))) return false;
  if (mode == WarpLockstep::AllMemory) return true;
  llvm::StringRef space = stringMetadata(inst, kSpaceMetadata);  // global/constant, else unset
  return isVolatile && (addressInSharedWindow(address) || space.empty());
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
// reachable from a kernel that never synchronises its warp with __syncwarp (bar.warp.sync),
// which code ordering its lanes' exchanges through memory itself uses; shuffles, votes, named
// barriers and activemask order nothing else of a warp.
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
    if (!kernelReaches(module, kernel.name, {"__rocuda_warp_sync"}))
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
      // A fence separates statements of plain accesses, which are not tracked: always a point.
      bool fence = llvm::isa<llvm::FenceInst>(inst);
      bool store = llvm::isa<llvm::StoreInst>(inst);
      if (fence || storedSinceWait || (store && loadedSinceWait)) {
        llvm::IRBuilder<> b(&inst);
        b.CreateCall(lockstep, {b.getInt32(store || fence ? kLockstepStorePoint : 0)});
        loadedSinceWait = storedSinceWait = false;
        placed = true;
      }
      if (!fence) (store ? storedSinceWait : loadedSinceWait) = true;
    }
  }
  return placed;
}

// Where lanes that diverge around a lockstep point reconverge: the immediate post-dominator of
// each branch with such a point (or a call of a function in `withPoints`) between it and there,
// when a point can follow it (lanes that skipped the branch and only run on to the end, such as
// the warps other than the first after a reduction's `if (tid < 32)` tail, need not wait: they
// finish, and the first warp's rounds go on without them).
void placeJoinPoints(llvm::Function& f, const llvm::DenseSet<const llvm::Function*>& withPoints,
                     llvm::FunctionCallee lockstep) {
  llvm::DenseSet<const llvm::BasicBlock*> holdsPoint;
  for (llvm::BasicBlock& block : f)
    for (llvm::Instruction& inst : block)
      if (withPoints.contains(calleeOf(inst))) holdsPoint.insert(&block);
  if (holdsPoint.empty()) return;
  // The blocks from which a point can be reached (their own included).
  llvm::DenseSet<const llvm::BasicBlock*> reachesPoint;
  std::vector<const llvm::BasicBlock*> pending(holdsPoint.begin(), holdsPoint.end());
  while (!pending.empty()) {
    const llvm::BasicBlock* block = pending.back();
    pending.pop_back();
    if (!reachesPoint.insert(block).second) continue;
    for (const llvm::BasicBlock* previous : llvm::predecessors(block)) pending.push_back(previous);
  }
  llvm::PostDominatorTree postDominators(f);
  llvm::DenseSet<llvm::BasicBlock*> joins;
  for (llvm::BasicBlock& branch : f) {
    if (branch.getTerminator()->getNumSuccessors() < 2) continue;
    llvm::DomTreeNode* node = postDominators.getNode(&branch);
    llvm::DomTreeNode* joinNode = node ? node->getIDom() : nullptr;
    llvm::BasicBlock* join = joinNode ? joinNode->getBlock() : nullptr;
    // No join: lanes leave through different exits, or nothing after the join waits.
    if (join == nullptr || joins.contains(join) || !reachesPoint.contains(join)) continue;
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
      kWarpLockstepFunction,
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
  llvm::Function* lockstep = module.getFunction(kWarpLockstepFunction);
  if (lockstep == nullptr) return;
  auto* i32 = llvm::Type::getInt32Ty(module.getContext());
  auto argument = [](const llvm::CallBase& call) {
    return static_cast<uint32_t>(
        llvm::cast<llvm::ConstantInt>(call.getArgOperand(0))->getZExtValue());
  };
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    uint32_t order = 0;
    std::vector<llvm::Instruction*> redundant;
    for (llvm::BasicBlock* block : llvm::ReversePostOrderTraversal<llvm::Function*>(&f)) {
      // A point right after another wait of the warp, with no access between (blocks the
      // optimiser merged: a join followed by a block's first access), waits for nothing; the
      // point kept takes its kind.
      llvm::CallBase* lastPoint = nullptr;
      bool accessedSinceWait = true;
      for (llvm::Instruction& inst : *block) {
        if (calleeOf(inst) == lockstep) {
          auto& call = llvm::cast<llvm::CallBase>(inst);
          uint32_t kind = argument(call) & kLockstepStorePoint;
          if (!accessedSinceWait && lastPoint != nullptr) {
            lastPoint->setArgOperand(0, llvm::ConstantInt::get(i32, argument(*lastPoint) | kind));
            redundant.push_back(&inst);
            continue;
          }
          if (!accessedSinceWait) {  // after another wait of the warp: nothing to wait for
            redundant.push_back(&inst);
            continue;
          }
          call.setArgOperand(0, llvm::ConstantInt::get(i32, kind | order++));
          lastPoint = &call;
          accessedSinceWait = false;
          continue;
        }
        if (synchronizesWarp(inst)) {
          accessedSinceWait = false;
          lastPoint = nullptr;
        } else if (inst.mayReadOrWriteMemory()) {
          accessedSinceWait = true;
        }
      }
    }
    for (llvm::Instruction* inst : redundant) inst->eraseFromParent();
  }
}

}  // namespace rocuda::compiler::detail
