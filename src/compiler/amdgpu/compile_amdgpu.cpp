// compileForAmdgpu: parse -> translate (target-neutral) -> lower for AMDGPU -> verify ->
// optimise -> emit -> link.
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler {
namespace {

// The AMDGPU back end reports what it cannot compile (e.g. a call it cannot lower) as error
// diagnostics; LLVM's default handler would print them and exit the process.
void collectDiagnostic(const llvm::DiagnosticInfo* info, void* context) {
  if (!info || info->getSeverity() != llvm::DS_Error) return;
  auto& errors = *static_cast<std::string*>(context);
  llvm::raw_string_ostream os(errors);
  llvm::DiagnosticPrinterRawOStream printer(os);
  if (!errors.empty()) os << "; ";
  info->print(printer);
}

// The AMDGPU backend of LLVM 19 cannot select a strict f64 division or square root and stops
// the process when asked to: the directed-rounding helpers of div/rcp/sqrt.f64 (see
// roundedHelper in the translator) are refused here, by instruction, instead.
Status refuseUnselectableHelpers(const llvm::Module& module) {
  for (const llvm::Function& fn : module) {
    llvm::StringRef name = fn.getName();
    if (!name.consume_front("__rocuda_rounded_") || !name.ends_with("_f64")) continue;
    auto [op, rest] = name.split('_');
    if (op != "div" && op != "sqrt") continue;
    std::string mode = rest.drop_back(4).str();
    std::string what = op == "div" ? "div." + mode + ".f64 / rcp." + mode + ".f64"
                                   : "sqrt." + mode + ".f64";
    return makeError(ErrorCode::UnsupportedPtx,
                     "'" + what + "' (directed rounding of a double division or square root) is "
                     "not supported on AMD GPUs yet");
  }
  return Status::success();
}

}  // namespace

std::vector<uint8_t> AmdgpuCompilation::serialize() const {
  return detail::serializeCompiledModule(info, output);
}

Result<AmdgpuCompilation> AmdgpuCompilation::deserialize(const uint8_t* data, size_t size) {
  AmdgpuCompilation result;
  ROCUDA_TRY(
      detail::deserializeCompiledModule(data, size, "AMD code object", result.info, result.output));
  return result;
}

std::string amdgpuTargetName(const AmdgpuTarget& target) {
  return "amdgcn-amd-amdhsa, " + target.processor +
         (target.features.empty() ? "" : ", " + target.features) + ", code object v" +
         std::to_string(target.codeObjectVersion);
}

Result<AmdgpuCompilation> compileForAmdgpu(std::string_view ptx, std::string_view moduleName,
                                           const AmdgpuTarget& target, AmdgpuOutput output) {
  auto tm = amdgpu::createAmdgpuTargetMachine(target);
  if (!tm.ok()) return tm.error();

  llvm::LLVMContext context;
  std::string backendErrors;
  context.setDiagnosticHandlerCallBack(collectDiagnostic, &backendErrors);

  ModuleInfo info;
  auto translated = detail::translatePtx(context, ptx, moduleName, info);
  if (!translated.ok()) return translated.error();
  std::unique_ptr<llvm::Module> module = std::move(*translated);
  ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "translated"));
  detail::promoteRegisters(*module);

  amdgpu::prepareModuleForTarget(*module, **tm, target.codeObjectVersion);
  ROCUDA_TRY(amdgpu::lowerAddressSpaces(*module));
  amdgpu::lowerSyncScopes(*module);
  ROCUDA_TRY(refuseUnselectableHelpers(*module));
  ROCUDA_TRY(amdgpu::lowerKernelAbi(*module, info));
  ROCUDA_TRY(amdgpu::lowerAssert(*module));
  ROCUDA_TRY(amdgpu::lowerDeviceRuntime(*module, info, target));
  amdgpu::lowerDenormalMode(*module);
  ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "AMDGPU"));

  amdgpu::optimizeForAmdgpu(*module, **tm);
  ROCUDA_TRY(amdgpu::lowerPrintf(*module));
  ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "AMDGPU printf"));
  AmdgpuCompilation result;
  result.info = std::move(info);
  if (output == AmdgpuOutput::LlvmIr) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, nullptr);
    result.output.assign(text.begin(), text.end());
    return result;
  }
  auto object = detail::emitObject(*module, **tm, output == AmdgpuOutput::Assembly);
  if (!backendErrors.empty())
    return makeError(ErrorCode::UnsupportedPtx, "the AMD GPU backend cannot compile '" +
                                                    std::string(moduleName) + "' for " +
                                                    target.processor + ": " + backendErrors);
  if (!object.ok()) return object.error();
  if (output == AmdgpuOutput::Assembly) {
    result.output = std::move(*object);
    return result;
  }
  auto linked = amdgpu::linkCodeObject(*object);
  if (!linked.ok()) return linked.error();
  result.output = std::move(*linked);
  return result;
}

}  // namespace rocuda::compiler
