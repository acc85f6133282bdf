// Device printf for AMD GPUs (amdgpu_codegen.h describes the buffer): every `vprintf(format,
// args)` call becomes a call of `__rocuda_printf_record(index, args, bytes)`, which appends the
// format's index and CUDA's argument buffer to the host's buffer. A format that is a string
// constant of the module (what nvcc emits for every printf literal) has its layout
// (support/device_printf.h) give the bytes to copy at compile time, so the kernel never parses
// it. Any other format (chosen at run time) is recorded by its address, with the caller's whole
// argument buffer, and the host reads it when it prints. Runs after optimisation, when
// `cvta.global` of the string has folded into a constant.
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <cstddef>
#include <map>
#include <optional>
#include <set>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "support/device_printf.h"

namespace rocuda::compiler::amdgpu {
namespace {

// The format string `value` points at, if it is a constant of the module.
std::optional<std::string> constantString(llvm::Value* value) {
  auto* global = llvm::dyn_cast<llvm::GlobalVariable>(value->stripPointerCasts());
  if (!global) return std::nullopt;
  std::string text;
  if (global->hasDefinitiveInitializer()) {
    auto* data = llvm::dyn_cast<llvm::ConstantDataSequential>(global->getInitializer());
    if (!data || !data->isString()) return std::nullopt;
    text = data->getAsString().str();
  } else if (llvm::MDNode* initial = global->getMetadata(kInitialStringMetadata)) {
    text = llvm::cast<llvm::MDString>(initial->getOperand(0))->getString().str();  // partition
  } else {
    return std::nullopt;
  }
  size_t end = text.find('\0');
  if (end == std::string::npos) return std::nullopt;  // not terminated: not a C string
  return text.substr(0, end);
}

// void __rocuda_printf_record(i32 index, ptr args, i32 bytes)
llvm::Function* defineRecord(llvm::Module& module, llvm::GlobalVariable& buffer) {
  llvm::LLVMContext& context = module.getContext();
  llvm::IRBuilder<> b(context);
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {b.getInt32Ty(), b.getPtrTy(), b.getInt32Ty()},
                                       false);
  auto* fn = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage,
                                    "__rocuda_printf_record", module);
  fn->setDoesNotThrow();
  llvm::Value *index = fn->getArg(0), *args = fn->getArg(1), *bytes = fn->getArg(2);
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(context, name, fn); };
  llvm::BasicBlock *entry = block("entry"), *reserve = block("reserve"), *write = block("write"),
                   *drop = block("drop"), *done = block("done");
  llvm::SyncScope::ID agent = context.getOrInsertSyncScopeID("agent");
  auto field = [&](llvm::Value* base, uint64_t offset) {
    return b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), base, offset);
  };

  b.SetInsertPoint(entry);
  llvm::Value* base = b.CreateAlignedLoad(b.getPtrTy(kGlobalAS), &buffer, llvm::Align(8));
  b.CreateCondBr(b.CreateIsNull(base), done, reserve);

  b.SetInsertPoint(reserve);
  llvm::Value* size = b.CreateAnd(
      b.CreateAdd(b.CreateZExt(bytes, b.getInt64Ty()), b.getInt64(kAmdgpuPrintfRecordHeaderBytes + 7)),
      b.getInt64(~uint64_t(7)));
  llvm::Value* offset = b.CreateAtomicRMW(llvm::AtomicRMWInst::Add,
                                          field(base, offsetof(AmdgpuPrintfHeader, used)), size,
                                          llvm::Align(8), llvm::AtomicOrdering::Monotonic, agent);
  llvm::Value* capacity = b.CreateAlignedLoad(
      b.getInt64Ty(), field(base, offsetof(AmdgpuPrintfHeader, capacity)), llvm::Align(8));
  b.CreateCondBr(b.CreateICmpULE(b.CreateAdd(offset, size), capacity), write, drop);

  b.SetInsertPoint(drop);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, field(base, offsetof(AmdgpuPrintfHeader, dropped)),
                    b.getInt64(1), llvm::Align(8), llvm::AtomicOrdering::Monotonic, agent);
  b.CreateBr(done);

  b.SetInsertPoint(write);
  llvm::Value* record = b.CreateInBoundsGEP(
      b.getInt8Ty(), base, b.CreateAdd(offset, b.getInt64(sizeof(AmdgpuPrintfHeader))));
  b.CreateAlignedStore(bytes, record, llvm::Align(8));
  b.CreateAlignedStore(index, field(record, 4), llvm::Align(4));
  b.CreateMemCpy(field(record, kAmdgpuPrintfRecordHeaderBytes), llvm::Align(8), args,
                 llvm::MaybeAlign(), b.CreateZExt(bytes, b.getInt64Ty()));
  b.CreateBr(done);

  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return fn;
}

}  // namespace

llvm::GlobalVariable* protectedGlobal(llvm::Module& module, llvm::Constant* initializer,
                                      const char* name, bool constant, llvm::Align alignment) {
  auto* global =
      new llvm::GlobalVariable(module, initializer->getType(), constant,
                               llvm::GlobalValue::ExternalLinkage, initializer, name, nullptr,
                               llvm::GlobalValue::NotThreadLocal, kGlobalAS);
  global->setVisibility(llvm::GlobalValue::ProtectedVisibility);  // hipModuleGetGlobal finds it
  global->setAlignment(alignment);
  return global;
}

llvm::GlobalVariable* hostSetAddress(llvm::Module& module, const char* name) {
  if (llvm::GlobalVariable* existing = module.getGlobalVariable(name)) return existing;
  return protectedGlobal(module,
                         llvm::ConstantInt::get(llvm::Type::getInt64Ty(module.getContext()), 0),
                         name, /*constant=*/false);
}

namespace {

// The bytes of the argument buffer `args` points into from there to its end: a run-time format's
// arguments lie within them (nvcc passes a local array; none: a null pointer).
std::optional<uint64_t> argumentBufferBytes(llvm::Value* args, const llvm::DataLayout& layout) {
  if (llvm::isa<llvm::ConstantPointerNull>(args)) return 0;
  llvm::APInt offset(layout.getIndexTypeSizeInBits(args->getType()), 0);
  llvm::Value* base = args->stripAndAccumulateConstantOffsets(layout, offset, true);
  auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(base->stripPointerCasts());
  if (alloca == nullptr) return std::nullopt;
  std::optional<llvm::TypeSize> size = alloca->getAllocationSize(layout);
  if (!size || size->isScalable() || offset.isNegative() ||
      offset.getZExtValue() > size->getFixedValue())
    return std::nullopt;
  return size->getFixedValue() - offset.getZExtValue();
}

// A printf whose format is known only at run time: a record of the format's address and the
// caller's argument buffer (kAmdgpuPrintfFormatAddressIndex), staged in a local copy.
Status recordFormatAddress(llvm::CallBase* call, llvm::Function* record) {
  llvm::Module& module = *call->getModule();
  std::string where = "printf in '" + call->getFunction()->getName().str() + "'";
  // CUDA's printf returns the number of arguments the format reads, which only parsing it on the
  // device would tell.
  if (!call->use_empty())
    return makeError(ErrorCode::UnsupportedPtx,
                     where +
                         " uses the result of a printf whose format is known only at run "
                         "time; the AMD GPU backend does not parse formats on the device");
  std::optional<uint64_t> bytes =
      argumentBufferBytes(call->getArgOperand(1), module.getDataLayout());
  if (!bytes || *bytes > 0xffffff00u)
    return makeError(ErrorCode::UnsupportedPtx,
                     where +
                         " has a format known only at run time and an argument buffer of "
                         "unknown size");
  llvm::Function* caller = call->getFunction();
  llvm::IRBuilder<> entry(&*caller->getEntryBlock().getFirstInsertionPt());
  llvm::AllocaInst* staged =
      entry.CreateAlloca(llvm::ArrayType::get(entry.getInt8Ty(), 8 + *bytes),
                         module.getDataLayout().getAllocaAddrSpace(), nullptr, "printf.staged");
  staged->setAlignment(llvm::Align(8));
  llvm::IRBuilder<> b(call);
  llvm::Value* stagedGeneric = b.CreateAddrSpaceCast(staged, b.getPtrTy());
  b.CreateAlignedStore(b.CreatePtrToInt(call->getArgOperand(0), b.getInt64Ty()), stagedGeneric,
                       llvm::Align(8));
  if (*bytes > 0)
    b.CreateMemCpy(b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), stagedGeneric, 8), llvm::Align(8),
                   call->getArgOperand(1), llvm::MaybeAlign(), *bytes);
  b.CreateCall(record, {b.getInt32(kAmdgpuPrintfFormatAddressIndex), stagedGeneric,
                        b.getInt32(static_cast<uint32_t>(8 + *bytes))});
  call->eraseFromParent();
  return Status::success();
}

std::vector<llvm::CallBase*> vprintfCalls(llvm::Module& module) {
  std::vector<llvm::CallBase*> calls;
  llvm::Function* vprintf = module.getFunction("vprintf");
  if (!vprintf) return calls;
  for (llvm::Function& fn : module)
    for (llvm::BasicBlock& block : fn)
      for (llvm::Instruction& inst : block)
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
            call && call->getCalledFunction() == vprintf)
          calls.push_back(call);
  return calls;
}

}  // namespace

Result<std::vector<std::string>> printfFormats(llvm::Module& module) {
  std::vector<std::string> formats;
  std::set<std::string> seen;
  for (llvm::CallBase* call : vprintfCalls(module)) {
    std::optional<std::string> format = constantString(call->getArgOperand(0));
    if (format && seen.insert(*format).second) formats.push_back(*format);
  }
  return formats;
}

Status lowerPrintf(llvm::Module& module, const std::vector<std::string>& formats,
                   bool definesGlobals) {
  llvm::LLVMContext& context = module.getContext();
  llvm::Function* vprintf = module.getFunction("vprintf");
  bool used = vprintf && !vprintf->use_empty();
  if (formats.empty() && !used) return Status::success();
  std::vector<llvm::CallBase*> calls = vprintfCalls(module);  // in program order
  auto* bufferType = llvm::PointerType::get(context, kGlobalAS);
  llvm::GlobalVariable* buffer = nullptr;
  if (definesGlobals) {
    buffer = protectedGlobal(module, llvm::ConstantPointerNull::get(bufferType),
                             kAmdgpuPrintfBufferSymbol, /*constant=*/false);
    std::string table;
    for (const std::string& format : formats) table += format + '\0';
    protectedGlobal(module, llvm::ConstantDataArray::getString(context, table, /*AddNull=*/false),
                    kAmdgpuPrintfFormatsSymbol, /*constant=*/true);
  }
  if (!used) return Status::success();
  if (!buffer) {
    buffer = new llvm::GlobalVariable(module, bufferType, false, llvm::GlobalValue::ExternalLinkage,
                                      nullptr, kAmdgpuPrintfBufferSymbol, nullptr,
                                      llvm::GlobalValue::NotThreadLocal, kGlobalAS);
    buffer->setVisibility(llvm::GlobalValue::ProtectedVisibility);
    buffer->setAlignment(llvm::Align(8));
  }
  llvm::Function* record = defineRecord(module, *buffer);

  std::map<std::string, uint32_t> indices;
  for (const std::string& format : formats)
    indices.emplace(format, static_cast<uint32_t>(indices.size()));
  for (llvm::CallBase* call : calls) {
    std::optional<std::string> format = constantString(call->getArgOperand(0));
    if (!format) {
      ROCUDA_TRY(recordFormatAddress(call, record));
      continue;
    }
    auto it = indices.find(*format);
    if (it == indices.end())
      return makeError(ErrorCode::Internal, "printf in '" + call->getFunction()->getName().str() +
                                                "' has a format missing from the module's table");
    device_printf::Layout layout = device_printf::layoutOf(*format);
    llvm::IRBuilder<> b(call);
    b.CreateCall(record, {b.getInt32(it->second), call->getArgOperand(1),
                          b.getInt32(static_cast<uint32_t>(layout.bytes))});
    // CUDA's printf returns the number of arguments the format reads.
    call->replaceAllUsesWith(b.getInt32(static_cast<uint32_t>(layout.arguments)));
    auto* formatGlobal =
        llvm::dyn_cast<llvm::GlobalVariable>(call->getArgOperand(0)->stripPointerCasts());
    call->eraseFromParent();
    // A format only printf used (the assert message's): the table holds it now.
    if (formatGlobal && formatGlobal->hasLocalLinkage()) {
      formatGlobal->removeDeadConstantUsers();
      if (formatGlobal->use_empty()) formatGlobal->eraseFromParent();
    }
  }
  if (!vprintf->use_empty())
    return makeError(ErrorCode::UnsupportedPtx,
                     "the AMD GPU backend cannot take the address of vprintf");
  vprintf->eraseFromParent();
  return Status::success();
}

}  // namespace rocuda::compiler::amdgpu
