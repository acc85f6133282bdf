// compileForHost: parse -> translate -> verify -> optimise -> emit, plus the ROCUDA_DUMP hook.
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>

#include "compiler/compiler.h"
#include "compiler/host_codegen.h"
#include "compiler/neutral_ir.h"
#include "compiler/translator.h"
#include "support/env.h"
#include "support/log.h"

namespace rocuda::compiler {
namespace {

// Write `bytes` to $ROCUDA_DUMP/<name><suffix> when ROCUDA_DUMP names a directory (created when
// missing; a file that cannot be written is logged once, not silently skipped).
void dumpBytes(std::string_view bytes, std::string_view name, const char* suffix) {
  std::optional<std::string> dir = env::get("ROCUDA_DUMP");
  if (!dir) return;
  std::string file(name);
  for (char& c : file)
    if (c == '/' || c == '\\' || c == ':' || c == '<' || c == '>') c = '_';
  if (file.empty()) file = "module";
  std::error_code ignored;  // a failure shows as the file not opening
  std::filesystem::create_directories(*dir, ignored);
  std::string path = *dir + "/" + file + suffix;
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  static std::once_flag warned;
  if (!out) std::call_once(warned, [&] { log::warning("ROCUDA_DUMP: cannot write " + path); });
}

// Write `module` as text to $ROCUDA_DUMP/<name><suffix>.
void dumpModule(const llvm::Module& module, std::string_view name, const char* suffix) {
  if (!env::get("ROCUDA_DUMP")) return;
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  dumpBytes(text, name, suffix);
}

// Whether code of the module takes the address of one of its functions. Direct calls do not,
// nor does handing a generated helper to a runtime function (the tile functions of warp matrix
// operations, which each unit may have its own copy of).
bool takesFunctionAddress(const llvm::Module& module) {
  for (const llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    for (const llvm::Use& use : f.uses()) {
      const auto* call = llvm::dyn_cast<llvm::CallBase>(use.getUser());
      if (call != nullptr && call->isCallee(&use)) continue;
      const llvm::Function* callee = call != nullptr ? call->getCalledFunction() : nullptr;
      if (callee != nullptr && callee->getName().starts_with("__rocuda_")) continue;
      return true;
    }
  }
  return false;
}

// What is left of a module for its Globals unit: its variables, and no function.
void dropFunctions(llvm::Module& module) {
  for (llvm::Function& f : module) f.deleteBody();
  for (auto it = module.begin(); it != module.end();) {
    llvm::Function& f = *it++;
    if (f.use_empty()) f.eraseFromParent();
  }
}

// The machine code the CPU device loads; dumped as `<name>.o` (`objdump -d` it: an address perf
// reports in a function of the ROCUDA_PERF_MAP map is that function's offset in it).
Result<HostObject> emitHostObject(llvm::Module& module, llvm::TargetMachine& tm, HostObject& result,
                                  std::string_view name) {
  auto object = detail::emitObject(module, tm);
  if (!object.ok()) return object.error();
  dumpBytes({reinterpret_cast<const char*>(object->data()), object->size()}, name, ".o");
  result.object = std::move(*object);
  return std::move(result);
}

std::string unitName(std::string_view moduleName, const HostUnit& unit) {
  switch (unit.kind) {
    case HostUnit::Kind::WholeModule:
      break;
    case HostUnit::Kind::Globals:
      return std::string(moduleName) + ".globals";
    case HostUnit::Kind::Kernel:
      return std::string(moduleName) + "." + unit.kernel;
  }
  return std::string(moduleName);
}

}  // namespace

Result<std::string> neutralIrText(std::string_view ptxText, std::string_view moduleName) {
  llvm::LLVMContext context;
  ModuleInfo info;
  auto module = detail::translatePtx(context, ptxText, moduleName, info);
  if (!module.ok()) return module.error();
  ROCUDA_TRY(detail::verifiedIr(**module, moduleName, "translated"));
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, nullptr);
  return text;
}

Result<ModuleInfo> checkTranslation(std::string_view ptxText, std::string_view moduleName) {
  llvm::LLVMContext context;
  ModuleInfo info;
  auto module = detail::translatePtx(context, ptxText, moduleName, info, /*memcheck=*/false,
                                     /*onlyKernel=*/"", /*deferUnsupported=*/true);
  if (!module.ok()) return module.error();
  return info;
}

Result<HostObject> compileForHost(std::string_view ptxText, std::string_view moduleName,
                                  const CompileOptions& options, const HostUnit& unit) {
  llvm::LLVMContext context;
  HostObject result;
  bool oneKernel = unit.kind == HostUnit::Kind::Kernel;
  std::string name = unitName(moduleName, unit);
  auto translated = detail::translatePtx(context, ptxText, moduleName, result.info,
                                         options.memcheck, oneKernel ? unit.kernel : "",
                                         /*deferUnsupported=*/true);
  if (!translated.ok()) return translated.error();
  std::unique_ptr<llvm::Module> module = std::move(*translated);
  dumpModule(*module, name, ".ll");
  ROCUDA_TRY(detail::verifiedIr(*module, name, "translated"));
  detail::flushAtomicSums(*module);
  if (unit.kind == HostUnit::Kind::Globals && !takesFunctionAddress(*module)) {
    dropFunctions(*module);
    result.info.kernelsCompiledSeparately = true;
  }
  detail::promoteRegisters(*module);
  detail::canonicalizeNaNResults(*module);
  detail::insertWarpLockstepPoints(*module, result.info, options.warpLockstep);

  auto tm = detail::createHostTargetMachine(options.optLevel);
  if (!tm.ok()) return tm.error();
  detail::dropMatrixLaneFunctions(*module);
  detail::optimizeForHost(*module, **tm, options.optLevel);
  detail::numberWarpLockstepPoints(*module);
  detail::insertSpinPolls(*module);
  dumpModule(*module, name, ".host.ll");
  // A Globals unit without its kernels leaves their KernelInfo as translated.
  if (result.info.kernelsCompiledSeparately) return emitHostObject(*module, **tm, result, name);
  for (auto& kernel : result.info.kernels) {
    kernel.usesBarriers = detail::kernelReaches(*module, kernel.name, detail::kBarrierFunctions);
    kernel.usesWarpCollectives =
        detail::kernelReaches(*module, kernel.name, detail::kWarpCollectiveFunctions);
    const std::vector<std::string>& spinWaits = detail::kSpinWaitFunctions;
    kernel.spinWaits =
        detail::kernelReaches(*module, kernel.name, {spinWaits.begin() + 1, spinWaits.end()});
    kernel.spinWaitsOnBlockMemory = detail::kernelReaches(*module, kernel.name, {spinWaits.back()});
  }
  if (options.blockFunctions) {
    detail::sinkCommonStores(*module, **tm, options.optLevel);
    detail::lowerToBlockForms(*module, result.info, /*chainWaits=*/!options.memcheck);
    ROCUDA_TRY(detail::verifiedIr(*module, name, "block-form"));
    detail::optimizeForHost(*module, **tm, options.optLevel, /*transformLoops=*/false);
    llvm::StringMap<unsigned> interchanged =
        detail::optimizeRoundLoops(*module, **tm, options.optLevel);
    detail::dropInterchangedLockstepForms(*module, result.info, interchanged);
    detail::inlineChainedRounds(*module, result.info, **tm, options.optLevel);
    if (options.blockOnOneHostThread) detail::lowerBlockPrivateAtomics(*module);
    if (!options.memcheck) detail::addStreamingStoreForms(*module, result.info);
    dumpModule(*module, name, ".block.ll");
  } else if (options.blockOnOneHostThread) {
    detail::lowerBlockPrivateAtomics(*module);
  }
  return emitHostObject(*module, **tm, result, name);
}

}  // namespace rocuda::compiler
