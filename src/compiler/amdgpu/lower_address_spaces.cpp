// Generic (flat) storage of the neutral module moved to the AMDGPU address spaces it lives in:
// allocas to private, module variables to global. Users keep flat pointers (addrspacecast),
// which InferAddressSpaces later narrows where it can. Accesses whose PTX named their space
// (kSpaceMetadata) go through a pointer of that space: global_* instead of flat_* instructions,
// and scalar s_load for uniform reads of constant memory.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/translator.h"

namespace rocuda::compiler::amdgpu {
namespace {

void lowerAllocas(llvm::Function& function) {
  std::vector<llvm::AllocaInst*> generic;
  for (auto& block : function)
    for (auto& inst : block)
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst))
        if (alloca->getAddressSpace() != kPrivateAS) generic.push_back(alloca);
  for (llvm::AllocaInst* old : generic) {
    llvm::IRBuilder<> b(old);
    llvm::AllocaInst* priv =
        b.CreateAlloca(old->getAllocatedType(), kPrivateAS, old->getArraySize());
    priv->setAlignment(old->getAlign());
    priv->takeName(old);
    llvm::Value* flat = b.CreateAddrSpaceCast(priv, old->getType());
    old->replaceAllUsesWith(flat);
    old->eraseFromParent();
  }
}

// The pointer operand of a memory access, or nullptr.
llvm::Use* pointerOperand(llvm::Instruction& inst) {
  if (llvm::isa<llvm::LoadInst>(inst)) return &inst.getOperandUse(0);
  if (llvm::isa<llvm::StoreInst>(inst)) return &inst.getOperandUse(1);
  if (llvm::isa<llvm::AtomicRMWInst>(inst) || llvm::isa<llvm::AtomicCmpXchgInst>(inst))
    return &inst.getOperandUse(0);
  return nullptr;
}

// PTX guarantees the address of an ld/st.global (ld.const...) is in that space: cast the flat
// pointer there (a no-op on AMD GPUs, where both are the same 64-bit address).
void narrowMarkedAccesses(llvm::Function& function) {
  for (auto& block : function)
    for (auto& inst : block) {
      llvm::StringRef space = detail::stringMetadata(inst, detail::kSpaceMetadata);
      llvm::Use* pointer = pointerOperand(inst);
      if (space.empty() || !pointer ||
          pointer->get()->getType()->getPointerAddressSpace() != kFlatAS)
        continue;
      unsigned as = space == "constant" && llvm::isa<llvm::LoadInst>(inst)
                        ? kConstantAS
                        : kGlobalAS;
      llvm::IRBuilder<> b(&inst);
      pointer->set(b.CreateAddrSpaceCast(pointer->get(), b.getPtrTy(as)));
    }
}

}  // namespace

Status lowerAddressSpaces(llvm::Module& module) {
  // PTX alloca of a size known only at run time (alloca() in device code): LLVM 19's AMDGPU
  // back end has no lowering for a dynamic stack allocation.
  for (auto& function : module)
    for (auto& inst : llvm::instructions(function))
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst);
          alloca && !alloca->isStaticAlloca())
        return makeError(ErrorCode::UnsupportedPtx,
                         "function '" + function.getName().str() +
                             "' allocates stack dynamically (PTX alloca), which the AMD GPU code "
                             "generator cannot lower");
  for (auto& function : module)
    if (!function.isDeclaration()) {
      lowerAllocas(function);
      narrowMarkedAccesses(function);
    }

  std::vector<std::pair<llvm::GlobalVariable*, llvm::GlobalVariable*>> moved;
  for (auto& gv : module.globals()) {
    if (gv.getAddressSpace() != kFlatAS || gv.getName().starts_with("llvm.")) continue;
    if (gv.isDeclaration())
      return makeError(ErrorCode::UnsupportedPtx,
                       "the AMD GPU code object cannot import the .extern variable '" +
                           gv.getName().str() + "'");
    auto* replacement = new llvm::GlobalVariable(module, gv.getValueType(), gv.isConstant(),
                                                 gv.getLinkage(), nullptr, "", nullptr,
                                                 llvm::GlobalValue::NotThreadLocal, kGlobalAS);
    replacement->setAlignment(gv.getAlign());
    moved.emplace_back(&gv, replacement);
  }
  // Replace uses first so initializers that take each other's address follow the move.
  for (auto& [old, replacement] : moved)
    old->replaceAllUsesWith(llvm::ConstantExpr::getAddrSpaceCast(replacement, old->getType()));
  for (auto& [old, replacement] : moved) {
    replacement->setInitializer(old->getInitializer());
    old->setInitializer(nullptr);
    replacement->takeName(old);
    // Protected: hipModuleGetGlobal finds it by name, and the code itself never goes through a
    // GOT for its own variables.
    if (!replacement->hasLocalLinkage())
      replacement->setVisibility(llvm::GlobalValue::ProtectedVisibility);
    old->eraseFromParent();
  }
  return Status::success();
}

}  // namespace rocuda::compiler::amdgpu
