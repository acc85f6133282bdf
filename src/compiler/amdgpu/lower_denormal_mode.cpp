// f32 subnormals on AMD GPUs. A module in which every f32 operation flushes subnormals (.ftz, as
// nvcc -use_fast_math writes; the translator's module flag kF32FlushFlag) runs with the
// hardware's f32 denormal mode set to flush: every function says "denormal-fp-math-f32" =
// preserve-sign (the kernel descriptor takes the kernel's), and __rocuda_flush_f32 becomes
// llvm.canonicalize, which flushes in that mode and which the back end drops after arithmetic
// that flushed already. The explicit flush (a compare and a select per operand and result) costs
// three instructions where the hardware does it for nothing, and made CodeGenPrepare the larger
// part of compiling llama.cpp's MMQ kernels. Other modules keep IEEE subnormals and the explicit
// flush of their .ftz operations.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/translator.h"

namespace rocuda::compiler::amdgpu {

void lowerDenormalMode(llvm::Module& module) {
  auto* flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(
      module.getModuleFlag(detail::kF32FlushFlag));
  if (flag == nullptr || flag->isZero()) return;
  for (llvm::Function& fn : module)
    if (!fn.isDeclaration()) fn.addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
  llvm::Function* flush = module.getFunction("__rocuda_flush_f32");
  if (flush == nullptr || flush->isDeclaration()) return;
  flush->deleteBody();
  flush->setLinkage(llvm::GlobalValue::InternalLinkage);  // deleteBody made it external
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(module.getContext(), "entry", flush));
  b.CreateRet(b.CreateUnaryIntrinsic(llvm::Intrinsic::canonicalize, flush->getArg(0)));
}

}  // namespace rocuda::compiler::amdgpu
