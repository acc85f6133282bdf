// Device malloc and free on AMD GPUs, defined in IR over the context's heap in device memory
// (amdgpu_codegen.h: kAmdgpuDeviceHeapSymbol, AmdgpuDeviceHeapHeader). Lock-free: a block comes
// from its size class's free list (a stack whose head carries a tag against ABA), else from the
// never-used end of the heap; free pushes it back on its class's list. Lanes never wait for each
// other, so a wavefront's lanes cannot deadlock in lockstep.
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include "compiler/amdgpu/amdgpu_lowering.h"

namespace rocuda::compiler::amdgpu {
namespace {

using Builder = llvm::IRBuilder<>;

constexpr uint64_t kSizeOffset = offsetof(AmdgpuDeviceHeapHeader, size);
constexpr uint64_t kTopOffset = offsetof(AmdgpuDeviceHeapHeader, top);
constexpr uint64_t kFreeListsOffset = offsetof(AmdgpuDeviceHeapHeader, freeLists);
constexpr uint64_t kNextOffset = 4;  // a block header's u32 after its size class

// What both functions start with: the heap's address (0 when the host gave none) and, once it is
// known not to be 0, its header fields.
struct Heap {
  llvm::Value* address;  // i64
  llvm::Value* base;     // ptr addrspace(1)

  llvm::Value* at(Builder& b, llvm::Value* offset) const {
    return b.CreateInBoundsGEP(b.getInt8Ty(), base, offset);
  }
  llvm::Value* at(Builder& b, uint64_t offset) const { return at(b, b.getInt64(offset)); }
  llvm::Value* freeList(Builder& b, llvm::Value* sizeClass) const {
    return at(b, b.CreateAdd(b.getInt64(kFreeListsOffset),
                             b.CreateShl(b.CreateZExt(sizeClass, b.getInt64Ty()), 3)));
  }
};

Heap loadHeap(Builder& b, llvm::Module& module) {
  Heap heap;
  heap.address = b.CreateAlignedLoad(
      b.getInt64Ty(), hostSetAddress(module, kAmdgpuDeviceHeapSymbol), llvm::Align(8));
  heap.base = b.CreateIntToPtr(heap.address, llvm::PointerType::get(b.getContext(), kGlobalAS));
  return heap;
}

llvm::LoadInst* atomicLoad(Builder& b, llvm::Type* type, llvm::Value* pointer,
                           llvm::AtomicOrdering ordering) {
  auto* load = b.CreateAlignedLoad(type, pointer, llvm::Align(type->getPrimitiveSizeInBits() / 8));
  load->setAtomic(ordering, b.getContext().getOrInsertSyncScopeID("agent"));
  return load;
}

// A tagged list head whose index is `index`: the old head's tag plus one.
llvm::Value* retagged(Builder& b, llvm::Value* head, llvm::Value* index) {
  llvm::Value* tag = b.CreateAdd(b.CreateLShr(head, 32), b.getInt64(1));
  return b.CreateOr(b.CreateShl(tag, 32), b.CreateZExt(index, b.getInt64Ty()));
}

llvm::Value* compareExchange(Builder& b, llvm::Value* pointer, llvm::Value* expected,
                             llvm::Value* desired, llvm::AtomicOrdering success,
                             llvm::AtomicOrdering failure) {
  auto* exchange = b.CreateAtomicCmpXchg(pointer, expected, desired, llvm::Align(8), success,
                                         failure, b.getContext().getOrInsertSyncScopeID("agent"));
  return b.CreateExtractValue(exchange, 1);
}

// i64 malloc(i64 bytes): a block of the smallest class that holds the bytes and its header (at
// least one byte, as the CPU device gives malloc(0)); 0 when the heap has no room or no heap was
// given.
void defineMalloc(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  llvm::LLVMContext& context = fn.getContext();
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(context, name, &fn); };
  llvm::BasicBlock *check = block("check"), *pop = block("pop"), *tryPop = block("try_pop"),
                   *popped = block("popped"), *bump = block("bump"), *tryBump = block("try_bump"),
                   *carve = block("carve"), *fail = block("fail");
  Heap heap = loadHeap(b, *fn.getParent());
  b.CreateCondBr(b.CreateICmpEQ(heap.address, b.getInt64(0)), fail, check);

  b.SetInsertPoint(check);
  llvm::Value* size = b.CreateAlignedLoad(b.getInt64Ty(), heap.at(b, kSizeOffset), llvm::Align(8));
  llvm::Value* bytes = b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, fn.getArg(0), b.getInt64(1));
  // The class of the block: its 2^(class + 5) bytes hold the request and the header. A block
  // larger than the heap fails here, which also keeps the sum from overflowing and the class
  // below kAmdgpuDeviceHeapSizeClasses (a heap has at most 2^36 bytes).
  llvm::Value* needed = b.CreateAdd(bytes, b.getInt64(kAmdgpuDeviceHeapBlockHeaderBytes));
  llvm::Value* log2 = b.CreateSub(
      b.getInt64(64), b.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz,
                                              b.CreateSub(needed, b.getInt64(1)), b.getFalse()));
  llvm::Value* sizeClass =
      b.CreateTrunc(b.CreateSub(b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, log2,
                                                        b.getInt64(kAmdgpuDeviceHeapMinBlockLog2)),
                                b.getInt64(kAmdgpuDeviceHeapMinBlockLog2)),
                    b.getInt32Ty());
  llvm::Value* list = heap.freeList(b, sizeClass);
  b.CreateCondBr(
      b.CreateICmpUGT(bytes, b.CreateSub(size, b.getInt64(kAmdgpuDeviceHeapBlockHeaderBytes))),
      fail, pop);

  // A freed block of the class, if its list has one.
  b.SetInsertPoint(pop);
  llvm::Value* head = atomicLoad(b, b.getInt64Ty(), list, llvm::AtomicOrdering::Acquire);
  llvm::Value* index = b.CreateTrunc(head, b.getInt32Ty());
  b.CreateCondBr(b.CreateICmpEQ(index, b.getInt32(0)), bump, tryPop);
  b.SetInsertPoint(tryPop);
  llvm::Value* offset = b.CreateShl(b.CreateZExt(index, b.getInt64Ty()), 4);
  // The block may have been taken and written since the head was read: then this `next` is
  // anything, and the exchange fails on the tag.
  llvm::Value* next =
      atomicLoad(b, b.getInt32Ty(), heap.at(b, b.CreateAdd(offset, b.getInt64(kNextOffset))),
                 llvm::AtomicOrdering::Monotonic);
  llvm::Value* taken =
      compareExchange(b, list, head, retagged(b, head, next), llvm::AtomicOrdering::AcquireRelease,
                      llvm::AtomicOrdering::Acquire);
  b.CreateCondBr(taken, popped, pop);
  b.SetInsertPoint(popped);
  b.CreateRet(b.CreateAdd(heap.address,
                          b.CreateAdd(offset, b.getInt64(kAmdgpuDeviceHeapBlockHeaderBytes))));

  // Else a new block from the heap's unused end, while it has room.
  b.SetInsertPoint(bump);
  llvm::Value* blockBytes = b.CreateShl(b.getInt64(uint64_t(1) << kAmdgpuDeviceHeapMinBlockLog2),
                                        b.CreateZExt(sizeClass, b.getInt64Ty()));
  llvm::Value* top =
      atomicLoad(b, b.getInt64Ty(), heap.at(b, kTopOffset), llvm::AtomicOrdering::Monotonic);
  llvm::Value* end = b.CreateAdd(top, blockBytes);
  b.CreateCondBr(b.CreateICmpUGT(end, size), fail, tryBump);
  b.SetInsertPoint(tryBump);
  llvm::Value* claimed =
      compareExchange(b, heap.at(b, kTopOffset), top, end, llvm::AtomicOrdering::Monotonic,
                      llvm::AtomicOrdering::Monotonic);
  b.CreateCondBr(claimed, carve, bump);
  b.SetInsertPoint(carve);
  b.CreateAlignedStore(sizeClass, heap.at(b, top), llvm::Align(16));
  b.CreateRet(
      b.CreateAdd(heap.address, b.CreateAdd(top, b.getInt64(kAmdgpuDeviceHeapBlockHeaderBytes))));

  b.SetInsertPoint(fail);
  b.CreateRet(b.getInt64(0));
}

// void free(i64 pointer): the block goes back on its class's list. A null pointer, or one that
// malloc cannot have returned (outside the heap's blocks, misaligned, a class out of range), is
// ignored rather than written through.
void defineFree(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  llvm::LLVMContext& context = fn.getContext();
  auto block = [&](const char* name) { return llvm::BasicBlock::Create(context, name, &fn); };
  llvm::BasicBlock *check = block("check"), *classCheck = block("class_check"),
                   *push = block("push"), *done = block("done");
  Heap heap = loadHeap(b, *fn.getParent());
  llvm::Value* pointer = fn.getArg(0);
  b.CreateCondBr(b.CreateOr(b.CreateICmpEQ(pointer, b.getInt64(0)),
                            b.CreateICmpEQ(heap.address, b.getInt64(0))),
                 done, check);

  b.SetInsertPoint(check);
  llvm::Value* size = b.CreateAlignedLoad(b.getInt64Ty(), heap.at(b, kSizeOffset), llvm::Align(8));
  llvm::Value* offset = b.CreateSub(b.CreateSub(pointer, heap.address),
                                    b.getInt64(kAmdgpuDeviceHeapBlockHeaderBytes));
  llvm::Value* valid =
      b.CreateAnd(b.CreateAnd(b.CreateICmpUGE(pointer, heap.address),
                              b.CreateICmpUGE(offset, b.getInt64(sizeof(AmdgpuDeviceHeapHeader)))),
                  b.CreateAnd(b.CreateICmpULT(offset, size),
                              b.CreateICmpEQ(b.CreateAnd(offset, b.getInt64(15)), b.getInt64(0))));
  b.CreateCondBr(valid, classCheck, done);

  b.SetInsertPoint(classCheck);
  llvm::Value* sizeClass = b.CreateAlignedLoad(b.getInt32Ty(), heap.at(b, offset), llvm::Align(16));
  b.CreateCondBr(b.CreateICmpULT(sizeClass, b.getInt32(kAmdgpuDeviceHeapSizeClasses)), push, done);

  b.SetInsertPoint(push);
  llvm::Value* list = heap.freeList(b, sizeClass);
  llvm::Value* head = atomicLoad(b, b.getInt64Ty(), list, llvm::AtomicOrdering::Monotonic);
  auto* link = b.CreateAlignedStore(b.CreateTrunc(head, b.getInt32Ty()),
                                    heap.at(b, b.CreateAdd(offset, b.getInt64(kNextOffset))),
                                    llvm::Align(4));
  link->setAtomic(llvm::AtomicOrdering::Monotonic, context.getOrInsertSyncScopeID("agent"));
  llvm::Value* index = b.CreateTrunc(b.CreateLShr(offset, 4), b.getInt32Ty());
  llvm::Value* pushed =
      compareExchange(b, list, head, retagged(b, head, index), llvm::AtomicOrdering::Release,
                      llvm::AtomicOrdering::Monotonic);
  b.CreateCondBr(pushed, done, push);

  b.SetInsertPoint(done);
  b.CreateRetVoid();
}

bool takesOneI64(const llvm::Function& fn) {
  return fn.arg_size() == 1 && fn.getArg(0)->getType()->isIntegerTy(64);
}

}  // namespace

bool defineDeviceMalloc(llvm::Function& fn) {
  if (fn.getName() == "malloc" && takesOneI64(fn) && fn.getReturnType()->isIntegerTy(64)) {
    defineMalloc(fn);
    return true;
  }
  if (fn.getName() == "free" && takesOneI64(fn) && fn.getReturnType()->isVoidTy()) {
    defineFree(fn);
    return true;
  }
  return false;
}

}  // namespace rocuda::compiler::amdgpu
