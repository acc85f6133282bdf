// compileForHost: parse -> translate -> verify -> optimise -> emit, plus the ROCUDA_DUMP hook.
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <fstream>
#include <optional>

#include "compiler/compiler.h"
#include "compiler/host_codegen.h"
#include "compiler/neutral_ir.h"
#include "compiler/translator.h"
#include "support/env.h"

namespace rocuda::compiler {
namespace {

// Write `module` as text to $ROCUDA_DUMP/<name><suffix> when ROCUDA_DUMP names a directory.
void dumpModule(const llvm::Module& module, std::string_view name, const char* suffix) {
  std::optional<std::string> dir = env::get("ROCUDA_DUMP");
  if (!dir) return;
  std::string file(name);
  for (char& c : file)
    if (c == '/' || c == '\\' || c == ':' || c == '<' || c == '>') c = '_';
  if (file.empty()) file = "module";
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  std::ofstream out(*dir + "/" + file + suffix, std::ios::binary);
  out << text;
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

Result<HostObject> compileForHost(std::string_view ptxText, std::string_view moduleName,
                                  const CompileOptions& options) {
  llvm::LLVMContext context;
  HostObject result;
  auto translated =
      detail::translatePtx(context, ptxText, moduleName, result.info, options.memcheck);
  if (!translated.ok()) return translated.error();
  std::unique_ptr<llvm::Module> module = std::move(*translated);
  dumpModule(*module, moduleName, ".ll");
  ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "translated"));
  detail::promoteRegisters(*module);

  auto tm = detail::createHostTargetMachine(options.optLevel);
  if (!tm.ok()) return tm.error();
  detail::dropMatrixLaneFunctions(*module);
  detail::optimizeForHost(*module, **tm, options.optLevel);
  detail::insertSpinPolls(*module);
  dumpModule(*module, moduleName, ".host.ll");
  for (auto& kernel : result.info.kernels) {
    kernel.usesBarriers = detail::kernelReaches(*module, kernel.name, detail::kBarrierFunctions);
    kernel.usesWarpCollectives =
        detail::kernelReaches(*module, kernel.name, detail::kWarpCollectiveFunctions);
  }
  if (options.blockFunctions) {
    detail::lowerToBlockForms(*module, result.info);
    ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "block-form"));
    detail::optimizeForHost(*module, **tm, options.optLevel);
    detail::optimizeRoundLoops(*module, **tm, options.optLevel);
    dumpModule(*module, moduleName, ".block.ll");
  }

  auto object = detail::emitObject(*module, **tm);
  if (!object.ok()) return object.error();
  result.object = std::move(*object);
  return result;
}

}  // namespace rocuda::compiler
