// PTX scopes to AMDGPU sync scopes: the translator leaves atomics and fences system-wide and
// names their PTX scope in metadata (kScopeMetadata); here .cta becomes "workgroup", .cluster and
// .gpu "agent" (a cluster never spans more than the device), .sys stays system-wide. A narrower
// scope lets the back end skip cache writebacks and invalidations the wider one needs.
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/translator.h"

namespace rocuda::compiler::amdgpu {
namespace {

void setSyncScope(llvm::Instruction& inst, llvm::SyncScope::ID scope) {
  if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&inst))
    rmw->setSyncScopeID(scope);
  else if (auto* cas = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&inst))
    cas->setSyncScopeID(scope);
  else if (auto* fence = llvm::dyn_cast<llvm::FenceInst>(&inst))
    fence->setSyncScopeID(scope);
  else if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst))
    load->setSyncScopeID(scope);
  else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst))
    store->setSyncScopeID(scope);
}

}  // namespace

void lowerSyncScopes(llvm::Module& module) {
  llvm::LLVMContext& context = module.getContext();
  llvm::SyncScope::ID workgroup = context.getOrInsertSyncScopeID("workgroup");
  llvm::SyncScope::ID agent = context.getOrInsertSyncScopeID("agent");
  for (llvm::Function& fn : module)
    for (llvm::BasicBlock& block : fn)
      for (llvm::Instruction& inst : block) {
        llvm::StringRef scope = detail::stringMetadata(inst, detail::kScopeMetadata);
        if (scope == "cta")
          setSyncScope(inst, workgroup);
        else if (scope == "cluster" || scope == "gpu")
          setSyncScope(inst, agent);
      }
}

}  // namespace rocuda::compiler::amdgpu
