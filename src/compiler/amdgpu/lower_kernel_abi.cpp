// The kernel ABI: HIP's hipModuleLaunchKernel copies kernelParams[i] to the offset the code
// object's metadata gives argument i. Declaring one byref argument per PTX parameter, each with
// the parameter's size and alignment, makes those offsets CUDA's; the wrapper then rebuilds the
// packed parameter buffer the neutral body reads.
#include <llvm/IR/Attributes.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <algorithm>

#include "compiler/amdgpu/amdgpu_lowering.h"

namespace rocuda::compiler::amdgpu {
namespace {

uint32_t product(const std::array<uint32_t, 3>& dims) {
  uint64_t p = 1;
  for (uint32_t d : dims) p *= std::max(1u, d);
  return static_cast<uint32_t>(std::min<uint64_t>(p, 1024));
}

void setLaunchBounds(llvm::Function& kernel, const KernelInfo& info) {
  llvm::LLVMContext& ctx = kernel.getContext();
  bool hasReq = info.reqntid[0] != 0, hasMax = info.maxntid[0] != 0;
  uint32_t maxThreads = hasReq ? product(info.reqntid) : hasMax ? product(info.maxntid) : 1024;
  uint32_t minThreads = hasReq ? maxThreads : 1;
  kernel.addFnAttr("amdgpu-flat-work-group-size",
                   std::to_string(minThreads) + "," + std::to_string(maxThreads));
  // CUDA grids are whole blocks: no partial work-groups.
  kernel.addFnAttr("uniform-work-group-size", "true");
  if (hasReq) {
    auto* i32 = llvm::Type::getInt32Ty(ctx);
    llvm::Metadata* dims[3];
    for (int i = 0; i < 3; ++i)
      dims[i] =
          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, std::max(1u, info.reqntid[i])));
    kernel.setMetadata("reqd_work_group_size", llvm::MDNode::get(ctx, dims));
  }
}

Status wrapKernel(llvm::Module& module, const KernelInfo& info) {
  llvm::Function* body = module.getFunction(info.name);
  if (!body || body->isDeclaration() || body->arg_size() != 1)
    return makeError(ErrorCode::Internal, "kernel '" + info.name + "' has no neutral body");
  llvm::LLVMContext& ctx = module.getContext();
  body->setName(info.name + ".body");
  body->setLinkage(llvm::GlobalValue::InternalLinkage);
  body->removeFnAttr(llvm::Attribute::NoInline);
  body->addFnAttr(llvm::Attribute::AlwaysInline);

  auto* i8 = llvm::Type::getInt8Ty(ctx);
  auto* kernargPtr = llvm::PointerType::get(ctx, kConstantAS);
  std::vector<llvm::Type*> argTypes(info.params.size() + (info.readsLaunchRegisters ? 1 : 0),
                                    kernargPtr);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), argTypes, false);
  auto* kernel =
      llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, info.name, module);
  kernel->setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
  kernel->setVisibility(llvm::GlobalValue::ProtectedVisibility);
  setLaunchBounds(*kernel, info);

  uint32_t maxAlign = 1;
  for (size_t i = 0; i < info.params.size(); ++i) {
    const KernelParamInfo& p = info.params[i];
    if (p.size == 0 || (p.alignment & (p.alignment - 1)) != 0)
      return makeError(ErrorCode::UnsupportedPtx, "kernel '" + info.name + "' parameter " +
                                                      std::to_string(i) + " has size " +
                                                      std::to_string(p.size) + " and alignment " +
                                                      std::to_string(p.alignment));
    llvm::Argument* arg = kernel->getArg(static_cast<unsigned>(i));
    arg->addAttr(llvm::Attribute::getWithByRefType(ctx, llvm::ArrayType::get(i8, p.size)));
    arg->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(p.alignment)));
    arg->addAttr(llvm::Attribute::NoAlias);
    arg->addAttr(llvm::Attribute::ReadOnly);
    maxAlign = std::max(maxAlign, p.alignment);
  }

  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", kernel));
  if (info.readsLaunchRegisters) {  // the hidden last argument (amdgpu_codegen.h)
    llvm::Argument* registers = kernel->getArg(static_cast<unsigned>(info.params.size()));
    registers->addAttr(llvm::Attribute::getWithByRefType(
        ctx, llvm::ArrayType::get(i8, sizeof(AmdgpuLaunchRegisters))));
    registers->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(8)));
    registers->addAttr(llvm::Attribute::NoAlias);
    registers->addAttr(llvm::Attribute::ReadOnly);
    llvm::FunctionCallee set = module.getOrInsertFunction(
        "__rocuda_set_launch_registers",
        llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {kernargPtr}, false));
    b.CreateCall(set, {registers});
  }
  uint64_t bufferSize = std::max<uint64_t>(info.paramBufferSize, 1);
  llvm::AllocaInst* buffer =
      b.CreateAlloca(llvm::ArrayType::get(i8, bufferSize), kPrivateAS, nullptr, "params");
  buffer->setAlignment(llvm::Align(maxAlign));
  for (size_t i = 0; i < info.params.size(); ++i) {
    const KernelParamInfo& p = info.params[i];
    llvm::Value* dst = b.CreateConstInBoundsGEP1_64(i8, buffer, p.offset);
    b.CreateMemCpy(dst, llvm::Align(p.alignment), kernel->getArg(static_cast<unsigned>(i)),
                   llvm::Align(p.alignment), p.size);
  }
  b.CreateCall(body, {b.CreateAddrSpaceCast(buffer, llvm::PointerType::get(ctx, kFlatAS))});
  b.CreateRetVoid();
  return Status::success();
}

}  // namespace

Status lowerKernelAbi(llvm::Module& module, const ModuleInfo& info) {
  for (const auto& kernel : info.kernels) {
    for (const auto& p : kernel.params)
      if (uint64_t(p.offset) + p.size > kernel.paramBufferSize)
        return makeError(ErrorCode::Internal,
                         "kernel '" + kernel.name + "' has a parameter outside its buffer");
    ROCUDA_TRY(wrapKernel(module, kernel));
  }
  return Status::success();
}

}  // namespace rocuda::compiler::amdgpu
