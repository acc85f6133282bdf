// The device library (src/device_library) in AMD GPU modules: clang compiled its portable C++ to
// amdgcn bitcode at build time (embedded as rocuda_amdgpu_device_library); the functions a
// module calls (the texture sampler's __rocuda_tex_* and __rocuda_surf_*, the tensor copies'
// __rocuda_tensor_*) are linked in as internal functions and optimised with the module, so both
// devices run the same code.
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "compiler/amdgpu/amdgpu_lowering.h"

extern const unsigned char rocuda_amdgpu_device_library[];
extern const size_t rocuda_amdgpu_device_library_size;

namespace rocuda::compiler::amdgpu {

bool isDeviceLibraryFunction(llvm::StringRef name) {
  return name.starts_with("__rocuda_tex_") || name.starts_with("__rocuda_surf_") ||
         name.starts_with("__rocuda_tensor_");
}

bool hasDeviceLibrary() { return rocuda_amdgpu_device_library_size != 0; }

Status linkDeviceLibrary(llvm::Module& module) {
  bool calls = false;
  for (const llvm::Function& fn : module)
    calls |= fn.isDeclaration() && !fn.use_empty() && isDeviceLibraryFunction(fn.getName());
  if (!calls || !hasDeviceLibrary()) return Status::success();  // (without it: refused by name)
  llvm::StringRef bytes(reinterpret_cast<const char*>(rocuda_amdgpu_device_library),
                        rocuda_amdgpu_device_library_size);
  auto library = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bytes, "device_library.bc"),
                                        module.getContext());
  if (!library)
    return makeError(ErrorCode::Internal,
                     "the device library's bitcode: " + llvm::toString(library.takeError()));
  (*library)->setDataLayout(module.getDataLayout());
  (*library)->setTargetTriple(module.getTargetTriple());
  for (llvm::Function& fn : **library) {
    if (fn.isDeclaration()) continue;
    // -ffreestanding marks its functions no-builtins, which would keep the module's optimiser
    // from treating their memcpy and memset as such.
    fn.removeFnAttr("no-builtins");
    // Inlined wherever they are called, whatever else the module holds: a kernel's code,
    // registers and scratch are then the same when its module compiles whole or in partitions
    // (partition_kernels.cpp), which the optimiser's call-count heuristics would not give; and
    // the constant geometry of each call selects one path of the sampler.
    fn.addFnAttr(llvm::Attribute::AlwaysInline);
  }
  bool failed =
      llvm::Linker::linkModules(module, std::move(*library), llvm::Linker::LinkOnlyNeeded,
                                [](llvm::Module& linked, const llvm::StringSet<>& names) {
                                  for (const auto& name : names) {
                                    llvm::GlobalValue* value = linked.getNamedValue(name.getKey());
                                    if (value == nullptr || value->isDeclaration()) continue;
                                    value->setVisibility(llvm::GlobalValue::DefaultVisibility);
                                    value->setLinkage(llvm::GlobalValue::InternalLinkage);
                                  }
                                });
  if (failed) return makeError(ErrorCode::Internal, "linking the device library failed");
  return Status::success();
}

}  // namespace rocuda::compiler::amdgpu
