// A failed device-side assert on AMD GPUs (amdgpu_codegen.h, kAmdgpuAssertFlagSymbol). CUDA's
// `__assertfail(condition, file, line, function, charSize)` prints the assertion and stops the
// kernel, and the launch fails with cudaErrorAssert. HIP's own assert traps, which ROCm's default
// queue-error handling answers by ending the whole process; so here the failing thread prints
// through device printf (the record lowerPrintf makes of a vprintf call), raises the module's
// assert flag, and ends its wavefront with s_endpgm. The other wavefronts run on (waves that
// ended no longer count at barriers); the host reads the flag after the kernel and fails the
// launch.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>

#include <vector>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/amdgpu/amdgpu_lowering.h"
#include "support/device_printf.h"

namespace rocuda::compiler::amdgpu {

Status lowerAssert(llvm::Module& module) {
  llvm::Function* assertFail = module.getFunction("__assertfail");
  if (!assertFail || assertFail->use_empty()) return Status::success();
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> b(context);
  if (assertFail->arg_size() < 4)
    return makeError(ErrorCode::UnsupportedPtx,
                     "__assertfail is declared with " + std::to_string(assertFail->arg_size()) +
                         " parameters (CUDA's has condition, file, line, function, char size)");

  llvm::GlobalVariable* flag = protectedGlobal(module, b.getInt32(0), kAmdgpuAssertFlagSymbol,
                                               /*constant=*/false, llvm::Align(4));
  auto* format = new llvm::GlobalVariable(
      module,
      llvm::ArrayType::get(b.getInt8Ty(),
                           std::string_view(device_printf::kAssertFormat).size() + 1),
      true, llvm::GlobalValue::PrivateLinkage,
      llvm::ConstantDataArray::getString(context, device_printf::kAssertFormat), "assert_format",
      nullptr, llvm::GlobalValue::NotThreadLocal, kConstantAS);
  llvm::FunctionCallee vprintf = module.getOrInsertFunction(
      "vprintf", llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getPtrTy()}, false));

  std::vector<llvm::CallBase*> calls;
  for (llvm::User* user : assertFail->users()) {
    auto* call = llvm::dyn_cast<llvm::CallBase>(user);
    if (!call || call->getCalledFunction() != assertFail)
      return makeError(ErrorCode::UnsupportedPtx,
                       "the AMD GPU backend cannot take the address of __assertfail");
    calls.push_back(call);
  }
  for (llvm::CallBase* call : calls) {
    llvm::Function* fn = call->getFunction();
    // CUDA's argument buffer for kAssertFormat: pointers and the line at their natural offsets.
    b.SetInsertPoint(&fn->getEntryBlock(), fn->getEntryBlock().getFirstInsertionPt());
    llvm::AllocaInst* args =
        b.CreateAlloca(llvm::ArrayType::get(b.getInt8Ty(), 56), kPrivateAS, nullptr, "assert_args");
    args->setAlignment(llvm::Align(8));

    b.SetInsertPoint(call);
    auto at = [&](uint64_t offset) {
      return b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), args, offset);
    };
    auto word = [&](llvm::Value* value, unsigned bits) {
      return b.CreateZExtOrTrunc(value, b.getIntNTy(bits));
    };
    auto pointerBits = [&](llvm::Value* value) {
      return value->getType()->isPointerTy() ? b.CreatePtrToInt(value, b.getInt64Ty())
                                             : word(value, 64);
    };
    b.CreateAlignedStore(pointerBits(call->getArgOperand(1)), at(0), llvm::Align(8));   // file
    b.CreateAlignedStore(word(call->getArgOperand(2), 32), at(8), llvm::Align(4));      // line
    b.CreateAlignedStore(pointerBits(call->getArgOperand(3)), at(16), llvm::Align(8));  // function
    const llvm::Intrinsic::ID ids[] = {
        llvm::Intrinsic::amdgcn_workgroup_id_x, llvm::Intrinsic::amdgcn_workgroup_id_y,
        llvm::Intrinsic::amdgcn_workgroup_id_z, llvm::Intrinsic::amdgcn_workitem_id_x,
        llvm::Intrinsic::amdgcn_workitem_id_y,  llvm::Intrinsic::amdgcn_workitem_id_z};
    for (size_t i = 0; i < 6; ++i)
      b.CreateAlignedStore(b.CreateIntrinsic(ids[i], {}, {}), at(24 + 4 * i), llvm::Align(4));
    b.CreateAlignedStore(pointerBits(call->getArgOperand(0)), at(48), llvm::Align(8));  // condition
    b.CreateCall(vprintf, {b.CreateAddrSpaceCast(format, b.getPtrTy()),
                           b.CreateAddrSpaceCast(args, b.getPtrTy())});
    b.CreateAtomicRMW(llvm::AtomicRMWInst::Or, flag, b.getInt32(1), llvm::Align(4),
                      llvm::AtomicOrdering::Release, context.getOrInsertSyncScopeID("agent"));
    b.CreateIntrinsic(llvm::Intrinsic::amdgcn_endpgm, {}, {});
    // Nothing after the assert runs: the rest of the block becomes unreachable code.
    llvm::BasicBlock* block = call->getParent();
    block->splitBasicBlock(call->getIterator(), "after_assert");
    block->getTerminator()->eraseFromParent();
    llvm::IRBuilder<>(block).CreateUnreachable();
    if (!call->getType()->isVoidTy())
      call->replaceAllUsesWith(llvm::PoisonValue::get(call->getType()));
    call->eraseFromParent();
  }
  assertFail->eraseFromParent();
  return Status::success();
}

}  // namespace rocuda::compiler::amdgpu
