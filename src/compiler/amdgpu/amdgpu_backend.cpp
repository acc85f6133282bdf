// The AMDGPU back end: target machine, O2 pipeline, object emission.
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/Scalar/InferAddressSpaces.h>

#include <mutex>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/host_codegen.h"

extern "C" {
void LLVMInitializeAMDGPUTargetInfo();
void LLVMInitializeAMDGPUTarget();
void LLVMInitializeAMDGPUTargetMC();
void LLVMInitializeAMDGPUAsmPrinter();
}

namespace rocuda::compiler::amdgpu {

constexpr const char* kTriple = "amdgcn-amd-amdhsa";

Result<std::unique_ptr<llvm::TargetMachine>> createAmdgpuTargetMachine(const AmdgpuTarget& target) {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    detail::configureLlvmOptions();
  });
  if (amdgpuWavefrontSize(target.processor) == 0)
    return makeError(ErrorCode::InvalidValue,
                     "'" + target.processor + "' is not a supported AMD GPU");
  if (target.codeObjectVersion != 4 && target.codeObjectVersion != 5)
    return makeError(ErrorCode::InvalidValue, "AMD code object version " +
                                                  std::to_string(target.codeObjectVersion) +
                                                  " is not supported (4 or 5)");
  std::string error;
  const llvm::Target* llvmTarget = llvm::TargetRegistry::lookupTarget(kTriple, error);
  if (!llvmTarget) return makeError(ErrorCode::Internal, "no LLVM AMDGPU target: " + error);
  std::string features = target.features;
  // CDNA has only wave64; RDNA runs CUDA warps natively in wave32.
  std::string wave =
      amdgpuWavefrontSize(target.processor) == 32 ? "+wavefrontsize32" : "+wavefrontsize64";
  features = features.empty() ? wave : features + "," + wave;
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(llvmTarget->createTargetMachine(
      kTriple, target.processor, features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Default));
  if (!tm)
    return makeError(ErrorCode::Internal, "cannot create a target machine for " + target.processor);
  return tm;
}

void prepareModuleForTarget(llvm::Module& module, llvm::TargetMachine& tm, int codeObjectVersion) {
  module.setTargetTriple(tm.getTargetTriple().str());
  module.setDataLayout(tm.createDataLayout());
  module.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", codeObjectVersion * 100);
}

void optimizeForAmdgpu(llvm::Module& module, llvm::TargetMachine& tm) {
  detail::PassContext passes(tm);
  // Inline the runtime and kernel bodies first, so that InferAddressSpaces sees every flat
  // pointer next to the private, global or LDS object it came from.
  llvm::ModulePassManager first;
  first.addPass(llvm::AlwaysInlinerPass());
  first.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::InferAddressSpacesPass()));
  first.run(module, passes.mam);
  llvm::ModulePassManager o2 =
      passes.pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  o2.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::InferAddressSpacesPass()));
  o2.run(module, passes.mam);
}

}  // namespace rocuda::compiler::amdgpu
