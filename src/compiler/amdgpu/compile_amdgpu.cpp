// compileForAmdgpu: parse -> translate (target-neutral) -> lower for AMDGPU -> verify ->
// optimise -> emit -> link; large modules optimise and emit their kernels in partitions on
// several threads (partition_kernels.cpp).
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <barrier>
#include <functional>
#include <optional>
#include <set>
#include <thread>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/host_codegen.h"
#include "compiler/translator.h"
#include "support/platform.h"

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

// Only kernels leave a code object, so a function no kernel reaches (by a call, or by taking its
// address, also through a variable's initializer) is dropped before lowering: libcudadevrt, which
// -rdc programs link whole, defines device-runtime functions that call driver syscalls the AMD
// lowering has no definition for, though no kernel calls them.
void dropUnreachableFunctions(llvm::Module& module, const ModuleInfo& info) {
  std::set<llvm::Function*> reached;
  std::vector<llvm::Function*> work;
  auto reach = [&](llvm::Function* fn) {
    if (fn != nullptr && reached.insert(fn).second) work.push_back(fn);
  };
  // Functions a value names, looking through constant expressions and aggregates.
  std::function<void(const llvm::Value*)> visit = [&](const llvm::Value* value) {
    if (const auto* fn = llvm::dyn_cast<llvm::Function>(value))
      return reach(const_cast<llvm::Function*>(fn));
    if (const auto* constant = llvm::dyn_cast<llvm::Constant>(value);
        constant != nullptr && !llvm::isa<llvm::GlobalValue>(constant))
      for (const llvm::Value* operand : constant->operands()) visit(operand);
  };
  for (const KernelInfo& kernel : info.kernels) reach(module.getFunction(kernel.name));
  for (const llvm::GlobalVariable& variable : module.globals())
    if (variable.hasInitializer()) visit(variable.getInitializer());
  while (!work.empty()) {
    llvm::Function* fn = work.back();
    work.pop_back();
    for (const llvm::Instruction& inst : llvm::instructions(*fn))
      for (const llvm::Value* operand : inst.operands()) visit(operand);
  }
  std::vector<llvm::Function*> dead;
  for (llvm::Function& fn : module)
    if (!reached.count(&fn)) dead.push_back(&fn);
  for (llvm::Function* fn : dead) fn->deleteBody();  // their calls of each other go first
  for (llvm::Function* fn : dead)
    if (fn->use_empty()) fn->eraseFromParent();
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

// AMD GPUs have no atomic operation wider than 64 bits: a 128-bit atom.cas / atom.exch (sm_90's
// atomicCAS / atomicExch on 16-byte types) would become a call of a libatomic function the code
// object cannot have. Refused by name instead.
Status refuseWideAtomics(const llvm::Module& module) {
  for (const llvm::Function& fn : module)
    for (const llvm::Instruction& inst : llvm::instructions(fn)) {
      llvm::Type* type = nullptr;
      if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&inst))
        type = rmw->getValOperand()->getType();
      if (auto* x = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&inst))
        type = x->getNewValOperand()->getType();
      if (type == nullptr || !type->isIntegerTy() || type->getIntegerBitWidth() <= 64) continue;
      return makeError(ErrorCode::UnsupportedPtx,
                       "128-bit atomics (atom.cas.b128 / atom.exch.b128, in '" +
                           fn.getName().str() +
                           "') are not supported on AMD GPUs: they have no "
                           "atomic operation wider than 64 bits");
    }
  return Status::success();
}

// After optimisation: printf lowered with the module's format table, then compiled to a
// relocatable object, or to assembly text.
Result<std::vector<uint8_t>> lowerPrintfAndEmit(llvm::Module& module, llvm::TargetMachine& tm,
                                                const std::vector<std::string>& formats,
                                                bool definesGlobals, const AmdgpuTarget& target,
                                                std::string_view moduleName,
                                                const std::string& backendErrors, bool assembly) {
  amdgpu::resolveKernelParameterBytes(module);
  ROCUDA_TRY(amdgpu::lowerPrintf(module, formats, definesGlobals));
  ROCUDA_TRY(detail::verifiedIr(module, moduleName, "AMDGPU printf"));
  auto object = detail::emitObject(module, tm, assembly);
  if (!backendErrors.empty())
    return makeError(ErrorCode::UnsupportedPtx, "the AMD GPU backend cannot compile '" +
                                                    std::string(moduleName) + "' for " +
                                                    target.processor + ": " + backendErrors);
  return object;
}

// The partitions of one module, compiled on a thread each. Each reads its part back from the
// module's bitcode into an LLVMContext of its own (contexts are not shared between threads) and
// optimises it; the partitions then agree on one printf format table (in partition order) before
// lowering printf and compiling; lld links the objects into one code object.
class PartitionedCompile {
 public:
  PartitionedCompile(llvm::Module& module, const amdgpu::KernelPartitions& plan,
                     const AmdgpuTarget& target, std::string_view moduleName)
      : plan_(plan),
        target_(target),
        moduleName_(moduleName),
        formats_(plan.functions.size()),
        formatsAgreed_(static_cast<std::ptrdiff_t>(plan.functions.size()), MergeFormats{this}) {
    llvm::raw_svector_ostream os(bitcode_);
    llvm::WriteBitcodeToFile(module, os);
  }

  Result<std::vector<uint8_t>> run() {
    size_t count = plan_.functions.size();
    std::vector<std::optional<Result<std::vector<uint8_t>>>> objects(count);
    auto compile = [&](size_t p) { objects[p].emplace(compilePartition(p)); };
    std::vector<std::thread> threads;
    for (size_t p = 1; p < count; ++p) threads.emplace_back(compile, p);
    compile(0);
    for (auto& thread : threads) thread.join();
    std::vector<std::vector<uint8_t>> compiled;
    for (auto& object : objects) {
      if (!object->ok()) return object->error();
      compiled.push_back(std::move(**object));
    }
    return amdgpu::linkCodeObject(compiled);
  }

 private:
  struct MergeFormats {
    PartitionedCompile* self;
    void operator()() noexcept {
      std::set<std::string> seen;
      for (const auto& formats : self->formats_)
        if (formats && formats->ok())
          for (const std::string& format : **formats)
            if (seen.insert(format).second) self->merged_.push_back(format);
    }
  };

  Result<std::vector<uint8_t>> compilePartition(size_t p) {
    llvm::LLVMContext context;
    std::string backendErrors;
    context.setDiagnosticHandlerCallBack(collectDiagnostic, &backendErrors);
    auto tm = amdgpu::createAmdgpuTargetMachine(target_);
    std::unique_ptr<llvm::Module> module;
    if (!tm.ok()) {
      formats_[p].emplace(tm.error());
    } else if (auto loaded = amdgpu::loadPartition(bitcode(), context, plan_.functions[p],
                                                   /*definesVariables=*/p == 0);
               !loaded.ok()) {
      formats_[p].emplace(loaded.error());
    } else {
      module = std::move(*loaded);
      amdgpu::optimizeForAmdgpu(*module, **tm);
      formats_[p].emplace(amdgpu::printfFormats(*module));
    }
    // Every partition arrives, failed or not, so that none waits forever.
    formatsAgreed_.arrive_and_wait();
    if (!formats_[p]->ok()) return formats_[p]->error();
    return lowerPrintfAndEmit(*module, **tm, merged_, /*definesGlobals=*/p == 0, target_,
                              moduleName_, backendErrors, /*assembly=*/false);
  }

  llvm::MemoryBufferRef bitcode() const {
    return llvm::MemoryBufferRef(llvm::StringRef(bitcode_.data(), bitcode_.size()), moduleName_);
  }

  const amdgpu::KernelPartitions& plan_;
  const AmdgpuTarget& target_;
  std::string_view moduleName_;
  llvm::SmallVector<char, 0> bitcode_;
  std::vector<std::optional<Result<std::vector<std::string>>>> formats_;
  std::vector<std::string> merged_;
  std::barrier<MergeFormats> formatsAgreed_;
};

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
                                           const AmdgpuTarget& target,
                                           const AmdgpuCompileOptions& options) {
  auto tm = amdgpu::createAmdgpuTargetMachine(target);
  if (!tm.ok()) return tm.error();

  llvm::LLVMContext context;
  std::string backendErrors;
  context.setDiagnosticHandlerCallBack(collectDiagnostic, &backendErrors);

  ModuleInfo info;
  auto translated = detail::translatePtx(context, ptx, moduleName, info, /*memcheck=*/false,
                                         /*onlyKernel=*/{}, /*deferUnsupported=*/true);
  if (!translated.ok()) return translated.error();
  std::unique_ptr<llvm::Module> module = std::move(*translated);
  ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "translated"));
  dropUnreachableFunctions(*module, info);
  detail::promoteRegisters(*module);
  detail::canonicalizeNaNResults(*module);

  amdgpu::prepareModuleForTarget(*module, **tm, target.codeObjectVersion);
  ROCUDA_TRY(amdgpu::lowerAddressSpaces(*module));
  amdgpu::lowerSyncScopes(*module);
  ROCUDA_TRY(refuseUnselectableHelpers(*module));
  ROCUDA_TRY(refuseWideAtomics(*module));
  for (KernelInfo& kernel : info.kernels)
    kernel.readsLaunchRegisters =
        detail::kernelReaches(*module, kernel.name, amdgpu::kLaunchRegisterFunctions);
  ROCUDA_TRY(amdgpu::lowerKernelAbi(*module, info));
  ROCUDA_TRY(amdgpu::lowerAssert(*module));
  ROCUDA_TRY(amdgpu::linkDeviceLibrary(*module));
  ROCUDA_TRY(amdgpu::lowerDeviceRuntime(*module, info, target));
  amdgpu::lowerDenormalMode(*module);
  ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "AMDGPU"));

  AmdgpuCompilation result;
  result.info = std::move(info);
  if (options.output == AmdgpuOutput::CodeObject) {
    unsigned threads = options.threads ? options.threads : platform::hardwareThreads();
    amdgpu::KernelPartitions plan =
        amdgpu::partitionKernels(*module, threads, options.minimumInstructionsToPartition);
    if (plan.functions.size() > 1) {
      PartitionedCompile partitions(*module, plan, target, moduleName);
      module.reset();  // the partitions read their parts from its bitcode
      auto linked = partitions.run();
      if (!linked.ok()) return linked.error();
      result.output = std::move(*linked);
      result.partitions = plan.functions.size();
      return result;
    }
  }
  amdgpu::optimizeForAmdgpu(*module, **tm);
  auto formats = amdgpu::printfFormats(*module);
  if (!formats.ok()) return formats.error();
  if (options.output == AmdgpuOutput::LlvmIr) {
    amdgpu::resolveKernelParameterBytes(*module);
    ROCUDA_TRY(amdgpu::lowerPrintf(*module, *formats, /*definesGlobals=*/true));
    ROCUDA_TRY(detail::verifiedIr(*module, moduleName, "AMDGPU printf"));
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, nullptr);
    result.output.assign(text.begin(), text.end());
    return result;
  }
  bool assembly = options.output == AmdgpuOutput::Assembly;
  auto object = lowerPrintfAndEmit(*module, **tm, *formats, /*definesGlobals=*/true, target,
                                   moduleName, backendErrors, assembly);
  if (!object.ok()) return object.error();
  if (assembly) {
    result.output = std::move(*object);
    return result;
  }
  auto linked = amdgpu::linkCodeObject({std::move(*object)});
  if (!linked.ok()) return linked.error();
  result.output = std::move(*linked);
  return result;
}

}  // namespace rocuda::compiler
