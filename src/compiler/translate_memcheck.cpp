// ROCUDA_MEMCHECK instrumentation: a call to __rocuda_memcheck before every memory access the
// PTX makes (ld/ldu/st scalar and vector, atom/red, cp.async), naming the PTX line and, when
// the PTX carries `.loc` (nvcc -lineinfo), the CUDA file:line. Only host code asks for it
// (CompileOptions::memcheck), so the AMD lowering never sees these calls.
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

namespace {

// The space code of compiler.h's memcheck contract.
uint32_t spaceCode(ptx::StateSpace space) {
  switch (space) {
    case ptx::StateSpace::Global:
      return kMemcheckGlobal;
    case ptx::StateSpace::Shared:
    case ptx::StateSpace::SharedCluster:
      return kMemcheckShared;
    case ptx::StateSpace::Local:
      return kMemcheckLocal;
    case ptx::StateSpace::Const:
      return kMemcheckConst;
    default:
      return kMemcheckGeneric;
  }
}

}  // namespace

llvm::Function* ModuleTranslator::memcheckFunction() {
  const char* name = "__rocuda_memcheck";
  if (auto* existing = module_->getFunction(name)) return existing;
  auto* ptr = llvm::PointerType::getUnqual(context_);
  auto* i32 = llvm::Type::getInt32Ty(context_);
  auto* i64 = llvm::Type::getInt64Ty(context_);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(context_),
                                       {ptr, i64, i32, i32, ptr, ptr, i64}, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, *module_);
  fn->setDoesNotThrow();
  return fn;
}

llvm::Constant* ModuleTranslator::memcheckSource(uint32_t file, uint32_t line) {
  auto* null = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(context_));
  if (line == 0) return null;
  uint64_t key = (uint64_t{file} << 32) | line;
  if (auto it = memcheckSources_.find(key); it != memcheckSources_.end()) return it->second;
  auto* init = llvm::ConstantDataArray::getString(context_, sourcePosition(file, line));
  auto* global = new llvm::GlobalVariable(*module_, init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, init,
                                          "__rocuda_memcheck_source");
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  memcheckSources_[key] = global;
  return global;
}

void FunctionTranslator::checkAccess(const ptx::Instruction& inst, llvm::Value* ptr, uint64_t size,
                                     bool write, ptx::StateSpace space, bool atomic,
                                     bool acquires) {
  if (!mt.memcheck) return;
  checkAccess(inst, ptr, b.getInt64(size), write, space, atomic, acquires);
}

void FunctionTranslator::checkFence(const ptx::Instruction& inst) {
  if (!mt.memcheck) return;
  b.CreateCall(
      mt.memcheckFunction(),
      {llvm::ConstantPointerNull::get(b.getPtrTy()), b.getInt64(0), b.getInt32(kMemcheckAcquire),
       b.getInt32(inst.loc.line), mt.memcheckSource(inst.sourceFile, inst.sourceLine),
       llvm::ConstantPointerNull::get(b.getPtrTy()), b.getInt64(0)});
}

void FunctionTranslator::checkAccess(const ptx::Instruction& inst, llvm::Value* ptr,
                                     llvm::Value* size, bool write, ptx::StateSpace space,
                                     bool atomic, bool acquires) {
  if (!mt.memcheck || space == ptx::StateSpace::Param) return;  // params: our own buffers
  // .local accesses of a kernel are checked against its depot when it has exactly one .local
  // variable (nvcc's __local_depotN); otherwise the runtime accepts any address on the stack. A
  // .func's are not: it may write into its caller's depot through a pointer (NVVM returns
  // results of functions it does not inline so).
  llvm::Value* localBase = llvm::ConstantPointerNull::get(b.getPtrTy());
  uint64_t localSize = 0;
  const ptx::Variable* depot = nullptr;
  unsigned localCount = 0;
  for (const auto& var : fn.locals)
    if (var.space == ptx::StateSpace::Local) {
      depot = &var;
      ++localCount;
    }
  if (space == ptx::StateSpace::Local && localCount == 1 && fn.isEntry) {
    if (auto it = locals_.find(depot->name); it != locals_.end()) {
      localBase = it->second;
      localSize = std::max<uint64_t>(depot->sizeInBytes(), 1);
    }
  }
  uint32_t access = (write ? kMemcheckWrite : 0) | (atomic ? kMemcheckAtomic : 0) |
                    (acquires ? kMemcheckAcquire : 0) | (spaceCode(space) << kMemcheckSpaceShift);
  b.CreateCall(mt.memcheckFunction(), {ptr, size, b.getInt32(access), b.getInt32(inst.loc.line),
                                       mt.memcheckSource(inst.sourceFile, inst.sourceLine),
                                       localBase, b.getInt64(localSize)});
}

}  // namespace rocuda::compiler::detail
