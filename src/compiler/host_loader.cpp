// Loading host objects with ORC LLJIT: the runtime's __rocuda_* symbols are defined as absolute
// symbols; C library functions the generated code may call (libm, memcpy...) come from the
// process. Link failures come back as InvalidImage errors naming the missing symbol.
#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Object/SymbolSize.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "compiler/compiler.h"
#include "compiler/host_builtins.h"
#include "compiler/host_codegen.h"
#include "support/env.h"
#include "support/platform.h"

namespace rocuda::compiler {
namespace {

// ROCUDA_PERF_MAP's file (appendToPerfMap below).
void appendToPerfMap(const HostObject& object, HostCode& code);

Error linkError(const std::string& what, llvm::Error error) {
  return makeError(ErrorCode::InvalidImage, what + ": " + llvm::toString(std::move(error)));
}

class JitHostCode final : public HostCode {
 public:
  JitHostCode(std::unique_ptr<llvm::orc::LLJIT> jit, std::shared_ptr<std::string> reported)
      : jit_(std::move(jit)), reported_(std::move(reported)) {}

  void* lookup(std::string_view name) override {
    auto symbol = jit_->lookup(llvm::StringRef(name.data(), name.size()));
    if (!symbol) {
      llvm::consumeError(symbol.takeError());
      return nullptr;
    }
    return symbol->toPtr<void*>();
  }

  // Add the unit's object and link its kernels and globals now, so that a missing symbol is
  // reported here rather than at the first launch. An object that does not link is removed
  // again, so that a replacement defining the same symbols can be added.
  Status add(const HostObject& unit) override {
    std::lock_guard lock(mutex_);  // one link at a time: the reported message is shared
    reported_->clear();
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(reinterpret_cast<const char*>(unit.object.data()), unit.object.size()),
        "rocuda-host-object");
    llvm::orc::ResourceTrackerSP tracker = jit_->getMainJITDylib().createResourceTracker();
    if (auto err = jit_->addObjectFile(tracker, std::move(buffer)))
      return linkError("cannot load the host object", std::move(err));
    Status linked = link(unit);
    if (!linked.ok()) {
      llvm::consumeError(tracker->remove());
      return linked;
    }
    if (env::getFlag("ROCUDA_PERF_MAP", false)) appendToPerfMap(unit, *this);
    return Status::success();
  }

 private:
  Status link(const HostObject& unit) {
    std::string message;
    for (const auto& kernel : unit.info.kernels)
      if (!unit.info.kernelsCompiledSeparately && !resolve(hostEntrySymbol(kernel), message))
        return makeError(ErrorCode::InvalidImage,
                         "cannot link kernel '" + kernel.name + "': " + message);
    for (const auto& global : unit.info.globals)
      if (!resolve(global.name, message))
        return makeError(ErrorCode::InvalidImage,
                         "cannot link global '" + global.name + "': " + message);
    return Status::success();
  }

  // Link `name` now; on failure the message is what the JIT reported as the cause ("Symbols not
  // found: [ NRT_Allocate ]"). The lookup's own error lists every symbol of the module it could
  // not materialise (thousands of names in a large module), so it is only the fallback.
  bool resolve(std::string_view name, std::string& message) {
    auto symbol = jit_->lookup(llvm::StringRef(name.data(), name.size()));
    if (symbol) return true;
    std::string lookup = llvm::toString(symbol.takeError());
    constexpr size_t kLongest = 400;
    if (!reported_->empty()) {
      message = *reported_;
    } else {
      message = lookup.size() > kLongest ? lookup.substr(0, kLongest) + "..." : lookup;
    }
    return false;
  }

  std::mutex mutex_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::shared_ptr<std::string> reported_;
};

// Names the process must never provide: the runtime's own entry points (a libc `vprintf` has a
// different signature, and a stray __rocuda_* definition would hide a missing runtime symbol).
bool reservedName(llvm::StringRef name) {
  return name.starts_with("__rocuda_") || name == "vprintf" || name == "cudaGraphSetConditional";
}

// ROCUDA_PERF_MAP=1: append "address size name" for every function of the loaded code to
// /tmp/perf-<pid>.map, the file `perf report` reads to name samples in JIT-compiled code.
void appendToPerfMap(const HostObject& object, HostCode& code) {
  static std::mutex mutex;
  auto file = llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(
      llvm::StringRef(reinterpret_cast<const char*>(object.object.data()), object.object.size()),
      "rocuda-host-object"));
  if (!file) {
    llvm::consumeError(file.takeError());
    return;
  }
  // Internal functions (a kernel's `.one` round, its helpers) cannot be looked up: each is
  // placed at its offset from an exported function of the same section, whose address is known.
  struct Function {
    llvm::StringRef name;
    uint64_t address;  // in the object: the offset in its section
    uint64_t size;
    uint64_t section;  // its index
  };
  std::vector<Function> functions;
  std::map<uint64_t, intptr_t> sectionDelta;  // section index -> loaded address - object address
  for (const auto& [symbol, size] : llvm::object::computeSymbolSizes(**file)) {
    auto type = symbol.getType();
    auto name = symbol.getName();
    auto address = symbol.getAddress();
    auto section = symbol.getSection();
    if (!type || !name || !address || !section || *type != llvm::object::SymbolRef::ST_Function ||
        size == 0 || *section == (*file)->section_end()) {
      if (!type) llvm::consumeError(type.takeError());
      if (!name) llvm::consumeError(name.takeError());
      if (!address) llvm::consumeError(address.takeError());
      if (!section) llvm::consumeError(section.takeError());
      continue;
    }
    uint64_t index = (*section)->getIndex();
    functions.push_back({*name, *address, size, index});
    if (sectionDelta.count(index) != 0) continue;
    if (void* loaded = code.lookup(std::string_view(name->data(), name->size())))
      sectionDelta[index] = reinterpret_cast<intptr_t>(loaded) - static_cast<intptr_t>(*address);
  }
  std::lock_guard<std::mutex> lock(mutex);
  std::string path = "/tmp/perf-" + std::to_string(platform::processId()) + ".map";
  std::FILE* map = std::fopen(path.c_str(), "a");
  if (map == nullptr) return;
  for (const Function& f : functions) {
    auto delta = sectionDelta.find(f.section);
    if (delta == sectionDelta.end()) continue;
    std::fprintf(map, "%llx %llx %.*s\n",
                 static_cast<unsigned long long>(static_cast<intptr_t>(f.address) + delta->second),
                 static_cast<unsigned long long>(f.size), static_cast<int>(f.name.size()),
                 f.name.data());
  }
  std::fclose(map);
}

}  // namespace

Result<std::unique_ptr<HostCode>> loadHostCode(const HostObject& object,
                                               const RuntimeSymbols& runtime) {
  detail::initializeNativeTarget();
  auto jitOrError = llvm::orc::LLJITBuilder().create();
  if (!jitOrError) return linkError("cannot create the JIT", jitOrError.takeError());
  std::unique_ptr<llvm::orc::LLJIT> jit = std::move(*jitOrError);
  // The JIT reports the cause of a link failure (e.g. "Symbols not found: [ x ]") here, apart
  // from the lookup error: keep it for the error message instead of printing it.
  auto reported = std::make_shared<std::string>();
  jit->getExecutionSession().setErrorReporter([reported](llvm::Error e) {
    if (!reported->empty()) *reported += "; ";
    *reported += llvm::toString(std::move(e));
  });
  llvm::orc::JITDylib& dylib = jit->getMainJITDylib();

  llvm::orc::SymbolMap symbols;
  auto define = [&](const std::string& name, void* address) {
    symbols[jit->mangleAndIntern(name)] = llvm::orc::ExecutorSymbolDef(
        llvm::orc::ExecutorAddr::fromPtr(address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Absolute);
  };
  for (const auto& [name, address] : detail::hostBuiltins()) define(name, address);
  for (const auto& [name, address] : runtime) define(name, address);  // the runtime wins
  if (auto err = dylib.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return linkError("cannot define runtime symbols", std::move(err));

  auto generator = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit->getDataLayout().getGlobalPrefix(),
      [](const llvm::orc::SymbolStringPtr& name) { return !reservedName(*name); });
  if (!generator) return linkError("cannot search the process", generator.takeError());
  dylib.addGenerator(std::move(*generator));

  auto code = std::make_unique<JitHostCode>(std::move(jit), reported);
  ROCUDA_TRY(code->add(object));
  return std::unique_ptr<HostCode>(std::move(code));
}

}  // namespace rocuda::compiler
