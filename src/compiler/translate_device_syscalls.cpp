// CUDA's device runtime library (libcudadevrt.a, which numba-cuda and -rdc programs link) reaches
// the driver through "syscalls": functions it declares .extern and NVIDIA's driver supplies.
// Rocuda defines the ones cooperative groups' grid synchronisation needs, in the neutral IR and
// with the grid-workspace protocol CUDA's cooperative_groups header uses inline, so that both
// targets (and the CPU device's spin-wait handling) treat them as they treat nvcc's own grid.sync:
//   i64 __cuda_syscall_CGS_get_intrinsic_handle(i32 scope): scope 1 (the grid) gives the launch's
//     grid workspace (%envreg1:%envreg2, null outside cooperative launches); other scopes
//     (multi-device grids) give 0, which cudaCGSynchronize turns into an error;
//   i32 __cuda_syscall_CGS_sync(i64 handle, i32 flags): a grid-wide barrier; flags bit 0 says one
//     thread per block calls (cudaCGSynchronizeGrid), otherwise every thread of the block does.
//     Returns 0, or 999 (cudaErrorUnknown) for a null handle.
// The other syscalls (device-side launches, cudaMalloc...) stay undefined: a module that calls
// them fails to load with their names.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {
namespace {

using ptx::SpecialRegister;

// The definition is only given to a declaration of the expected shape (nothing else is touched).
llvm::Function* declared(llvm::Module& m, const char* name, llvm::Type* ret,
                         std::initializer_list<llvm::Type*> params) {
  llvm::Function* fn = m.getFunction(name);
  if (fn == nullptr || !fn->isDeclaration() ||
      fn->getFunctionType() != llvm::FunctionType::get(ret, params, false))
    return nullptr;
  fn->setLinkage(llvm::GlobalValue::InternalLinkage);
  return fn;
}

void defineGetIntrinsicHandle(ModuleTranslator& mt, llvm::Function& fn) {
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(mt.context(), "entry", &fn));
  llvm::Value* high = b.CreateZExt(b.CreateCall(mt.sregFunction(SpecialRegister::Envreg, 1)),
                                   b.getInt64Ty());
  llvm::Value* low = b.CreateZExt(b.CreateCall(mt.sregFunction(SpecialRegister::Envreg, 2)),
                                  b.getInt64Ty());
  llvm::Value* workspace = b.CreateOr(b.CreateShl(high, 32), low);
  llvm::Value* grid = b.CreateICmpEQ(fn.getArg(0), b.getInt32(1));
  b.CreateRet(b.CreateSelect(grid, workspace, b.getInt64(0)));
}

// The workspace is {u32 size, u32 barrier}. Each block's master thread adds 1 to the barrier
// word, block (0,0,0)'s adds 0x80000000 - (blocks - 1): the last arrival flips bit 31, for which
// every master waits.
void emitGridArrive(ModuleTranslator& mt, llvm::IRBuilder<>& b, llvm::Value* handle) {
  llvm::Function& fn = *b.GetInsertBlock()->getParent();
  auto sreg = [&](SpecialRegister r) { return b.CreateCall(mt.sregFunction(r, 0)); };
  llvm::Value* blocks = b.CreateMul(b.CreateMul(sreg(SpecialRegister::NctaidX),
                                                sreg(SpecialRegister::NctaidY)),
                                    sreg(SpecialRegister::NctaidZ));
  llvm::Value* firstBlock =
      b.CreateICmpEQ(b.CreateOr(b.CreateOr(sreg(SpecialRegister::CtaidX),
                                           sreg(SpecialRegister::CtaidY)),
                                sreg(SpecialRegister::CtaidZ)),
                     b.getInt32(0));
  llvm::Value* add = b.CreateSelect(
      firstBlock, b.CreateSub(b.getInt32(0x80000000u), b.CreateSub(blocks, b.getInt32(1))),
      b.getInt32(1));
  llvm::Value* word = b.CreateIntToPtr(b.CreateAdd(handle, b.getInt64(4)), b.getPtrTy());
  b.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
  auto* arrived = b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, word, add, llvm::MaybeAlign(4),
                                    llvm::AtomicOrdering::SequentiallyConsistent);
  setStringMetadata(*arrived, kScopeMetadata, "gpu");
  llvm::BasicBlock* wait = llvm::BasicBlock::Create(mt.context(), "grid.wait", &fn);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(mt.context(), "grid.done", &fn);
  b.CreateBr(wait);
  b.SetInsertPoint(wait);
  auto* now = b.CreateAlignedLoad(b.getInt32Ty(), word, llvm::Align(4), /*isVolatile=*/true);
  now->setAtomic(llvm::AtomicOrdering::Monotonic);
  setStringMetadata(*now, kScopeMetadata, "gpu");
  markPollableAccess(*now, ptx::StateSpace::Global);  // the grid's workspace
  llvm::Value* flipped =
      b.CreateICmpNE(b.CreateAnd(b.CreateXor(arrived, now), b.getInt32(0x80000000u)),
                     b.getInt32(0));
  b.CreateCondBr(flipped, done, wait);
  b.SetInsertPoint(done);
  b.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
}

void defineSync(ModuleTranslator& mt, llvm::Function& fn) {
  llvm::LLVMContext& ctx = mt.context();
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(ctx, name, &fn); };
  llvm::BasicBlock* entry = block("entry");
  llvm::BasicBlock* invalid = block("invalid");
  llvm::BasicBlock* valid = block("valid");
  llvm::BasicBlock* oneThread = block("one_thread");
  llvm::BasicBlock* wholeBlock = block("whole_block");
  llvm::BasicBlock* master = block("master");
  llvm::BasicBlock* rejoin = block("rejoin");
  llvm::IRBuilder<> b(entry);
  llvm::Value* handle = fn.getArg(0);
  b.CreateCondBr(b.CreateICmpEQ(handle, b.getInt64(0)), invalid, valid);
  b.SetInsertPoint(invalid);
  b.CreateRet(b.getInt32(999));

  b.SetInsertPoint(valid);
  llvm::Value* perBlock = b.CreateICmpNE(b.CreateAnd(fn.getArg(1), b.getInt32(1)), b.getInt32(0));
  b.CreateCondBr(perBlock, oneThread, wholeBlock);

  b.SetInsertPoint(oneThread);
  emitGridArrive(mt, b, handle);
  b.CreateRet(b.getInt32(0));

  // Every thread of the block: a block barrier, thread (0,0,0) arrives for the block, a barrier.
  b.SetInsertPoint(wholeBlock);
  llvm::Function* barrier = mt.barrierFunction();
  b.CreateCall(barrier, {b.getInt32(0), b.getInt32(0)});
  auto sreg = [&](SpecialRegister r) { return b.CreateCall(mt.sregFunction(r, 0)); };
  llvm::Value* firstThread = b.CreateICmpEQ(
      b.CreateOr(b.CreateOr(sreg(SpecialRegister::TidX), sreg(SpecialRegister::TidY)),
                 sreg(SpecialRegister::TidZ)),
      b.getInt32(0));
  b.CreateCondBr(firstThread, master, rejoin);
  b.SetInsertPoint(master);
  emitGridArrive(mt, b, handle);
  b.CreateBr(rejoin);
  b.SetInsertPoint(rejoin);
  b.CreateCall(barrier, {b.getInt32(0), b.getInt32(0)});
  b.CreateRet(b.getInt32(0));
}

}  // namespace

void defineDeviceSyscalls(ModuleTranslator& mt) {
  llvm::Module& m = mt.module();
  auto* i32 = llvm::Type::getInt32Ty(mt.context());
  auto* i64 = llvm::Type::getInt64Ty(mt.context());
  if (llvm::Function* fn = declared(m, "__cuda_syscall_CGS_get_intrinsic_handle", i64, {i32}))
    defineGetIntrinsicHandle(mt, *fn);
  if (llvm::Function* fn = declared(m, "__cuda_syscall_CGS_sync", i32, {i64, i32}))
    defineSync(mt, *fn);
}

}  // namespace rocuda::compiler::detail
