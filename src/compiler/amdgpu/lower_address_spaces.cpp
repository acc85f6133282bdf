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
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>

#include <algorithm>

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

// PTX alloca of a size known only at run time (alloca() in device code), and stacksave /
// stackrestore: LLVM 19's AMDGPU back end has no dynamic stack allocation, so a function that
// makes one gets a fixed buffer of kDynamicStackBytes in its frame (CUDA's default stack size
// per thread) and a bump offset into it. Each alloca takes the next aligned bytes until the
// function returns or a stackrestore moves the offset back; one that does not fit traps, as a
// thread that overflows its stack faults on NVIDIA's GPUs.
constexpr uint64_t kDynamicStackBytes = 1024;

void lowerDynamicStack(llvm::Function& function) {
  std::vector<llvm::Instruction*> operations;
  for (auto& inst : llvm::instructions(function)) {
    auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst);
    auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
    if ((alloca && !alloca->isStaticAlloca()) ||
        (intrinsic && (intrinsic->getIntrinsicID() == llvm::Intrinsic::stacksave ||
                       intrinsic->getIntrinsicID() == llvm::Intrinsic::stackrestore)))
      operations.push_back(&inst);
  }
  if (operations.empty()) return;
  llvm::Align bufferAlign(16);
  for (llvm::Instruction* inst : operations)
    if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(inst))
      bufferAlign = std::max(bufferAlign, alloca->getAlign());
  llvm::LLVMContext& context = function.getContext();
  llvm::IRBuilder<> entry(&*function.getEntryBlock().getFirstInsertionPt());
  llvm::AllocaInst* buffer = entry.CreateAlloca(
      llvm::ArrayType::get(entry.getInt8Ty(), kDynamicStackBytes), nullptr, "dynamic.stack");
  buffer->setAlignment(bufferAlign);
  llvm::AllocaInst* top = entry.CreateAlloca(entry.getInt64Ty(), nullptr, "dynamic.stack.top");
  entry.CreateStore(entry.getInt64(0), top);
  llvm::Function* trap =
      llvm::Intrinsic::getDeclaration(function.getParent(), llvm::Intrinsic::trap);
  for (llvm::Instruction* inst : operations) {
    llvm::IRBuilder<> b(inst);
    llvm::Value* replacement = nullptr;
    if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(inst)) {
      uint64_t align = alloca->getAlign().value();
      llvm::Value* count = b.CreateZExtOrTrunc(alloca->getArraySize(), b.getInt64Ty());
      llvm::Value* bytes = b.CreateMul(
          count, b.getInt64(function.getDataLayout().getTypeAllocSize(alloca->getAllocatedType())));
      llvm::Value* offset = b.CreateLoad(b.getInt64Ty(), top);
      offset = b.CreateAnd(b.CreateAdd(offset, b.getInt64(align - 1)), b.getInt64(~(align - 1)));
      llvm::Value* room = b.CreateSub(b.getInt64(kDynamicStackBytes), offset);
      // `offset` never passes the buffer's end, so `room` does not wrap.
      llvm::Value* fits = b.CreateAnd(b.CreateICmpULE(offset, b.getInt64(kDynamicStackBytes)),
                                      b.CreateICmpULE(bytes, room));
      llvm::BasicBlock* before = inst->getParent();
      llvm::BasicBlock* after = before->splitBasicBlock(inst, "dynamic.stack.fits");
      auto* overflow =
          llvm::BasicBlock::Create(context, "dynamic.stack.overflow", &function, after);
      before->getTerminator()->eraseFromParent();
      llvm::IRBuilder<>(before).CreateCondBr(fits, after, overflow);
      llvm::IRBuilder<> o(overflow);
      o.CreateCall(trap);
      o.CreateUnreachable();
      b.SetInsertPoint(inst);
      b.CreateStore(b.CreateAdd(offset, bytes), top);
      replacement = b.CreateInBoundsGEP(b.getInt8Ty(), buffer, offset);
    } else if (llvm::cast<llvm::IntrinsicInst>(inst)->getIntrinsicID() ==
               llvm::Intrinsic::stacksave) {
      replacement = b.CreateInBoundsGEP(b.getInt8Ty(), buffer, b.CreateLoad(b.getInt64Ty(), top));
    } else {  // stackrestore: back to a position stacksave gave
      llvm::Value* position = b.CreatePtrToInt(inst->getOperand(0), b.getInt64Ty());
      b.CreateStore(b.CreateSub(position, b.CreatePtrToInt(buffer, b.getInt64Ty())), top);
    }
    if (replacement != nullptr) {
      if (replacement->getType() != inst->getType())
        replacement = b.CreateAddrSpaceCast(replacement, inst->getType());
      inst->replaceAllUsesWith(replacement);
    }
    inst->eraseFromParent();
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
  for (auto& function : module)
    if (!function.isDeclaration()) {
      lowerDynamicStack(function);
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
