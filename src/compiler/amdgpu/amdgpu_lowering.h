// Internal to src/compiler/amdgpu: the passes that turn the target-neutral module into AMDGPU IR,
// and the back end (optimise, emit, link). Run in this order by compileForAmdgpu.
#pragma once

#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include <cstdint>
#include <vector>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/compiler.h"
#include "support/result.h"

namespace llvm {
class TargetMachine;
}  // namespace llvm

namespace rocuda::compiler::amdgpu {

// AMDGPU address spaces (LLVM's numbering).
inline constexpr unsigned kFlatAS = 0, kGlobalAS = 1, kLocalAS = 3, kConstantAS = 4, kPrivateAS = 5;

// Generic allocas become private (addrspace 5) allocas, `.global`/`.const` variables become
// addrspace 1 globals; their users keep generic pointers through addrspacecast.
// UnsupportedPtx for `.extern` variables (nothing would define them).
Status lowerAddressSpaces(llvm::Module& module);

// f32 subnormals flushed by the hardware in modules that flush every one (kF32FlushFlag): each
// function's denormal mode set to preserve-sign and __rocuda_flush_f32 redefined as
// llvm.canonicalize; nothing in other modules. Runs after the lowerings that define functions.
void lowerDenormalMode(llvm::Module& module);

// Atomics and fences get the AMDGPU sync scope of their PTX scope (the translator's
// kScopeMetadata): .cta "workgroup", .cluster/.gpu "agent", .sys and unmarked ones system-wide.
void lowerSyncScopes(llvm::Module& module);

// Each neutral kernel `void K(ptr params)` becomes the internal always-inline `K.body`, called by
// an amdgpu_kernel `K` with one byref kernel argument per PTX parameter, copied into a private
// buffer laid out like CUDA's packed parameter buffer.
Status lowerKernelAbi(llvm::Module& module, const ModuleInfo& info);

// Define the device runtime of the IR contract (special registers, barriers and barrier
// reductions, warp collectives, shared window, trap) in IR for `target`; UnsupportedPtx naming
// every other external function the module still calls.
Status lowerDeviceRuntime(llvm::Module& module, const ModuleInfo& info, const AmdgpuTarget& target);

// Turn the runtime declaration `fn` into an internal always-inline definition; returns a builder
// at its entry.
llvm::IRBuilder<> defineRuntime(llvm::Function& fn);

// Wavefront and CUDA-warp arithmetic at `b`'s insertion point. A CUDA warp is a wave32, or one
// 32-lane half of a wave64 (lanes 0-31 and 32-63); see lower_warp_collectives.cpp.
class WaveBuilder {
 public:
  WaveBuilder(llvm::IRBuilder<>& b, unsigned waveSize) : b_(b), waveSize_(waveSize) {}

  llvm::Type* waveMaskType() { return b_.getIntNTy(waveSize_); }

  // EXEC-masked ballot of `predicate` over the whole wavefront (uniform).
  llvm::Value* waveBallot(llvm::Value* predicate) {
    return b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_ballot, {waveMaskType()}, {predicate});
  }

  // The ballot's 32 bits of the calling lane's CUDA warp.
  llvm::Value* warpBallot(llvm::Value* predicate) {
    llvm::Value* ballot = waveBallot(predicate);
    if (waveSize_ == 32) return ballot;
    return b_.CreateTrunc(b_.CreateLShr(ballot, b_.CreateZExt(warpBase(), waveMaskType())),
                          b_.getInt32Ty());
  }

  // The lanes taking part: active lanes of the warp in `mask`, and the calling lane.
  llvm::Value* participants(llvm::Value* mask) {
    llvm::Value* active = warpBallot(b_.getTrue());
    return b_.CreateOr(b_.CreateAnd(active, mask), b_.CreateShl(b_.getInt32(1), lane()));
  }

  // The calling lane's index in its wavefront (0..waveSize-1).
  llvm::Value* waveLane();
  llvm::Value* lane() { return b_.CreateAnd(waveLane(), 31); }
  // 0, or 32 for the upper CUDA warp of a wave64.
  llvm::Value* warpBase() {
    return waveSize_ == 32 ? b_.getInt32(0) : b_.CreateAnd(waveLane(), 32);
  }

  // Whether wave lane `i` (uniform) belongs to the calling lane's warp and to its `mask`.
  llvm::Value* laneTakesPart(llvm::Value* i, llvm::Value* mask) {
    llvm::Value* inMask = b_.CreateTrunc(b_.CreateLShr(mask, b_.CreateAnd(i, 31)), b_.getInt1Ty());
    llvm::Value* self = b_.CreateICmpEQ(i, waveLane());
    if (waveSize_ == 32) return b_.CreateOr(inMask, self);
    llvm::Value* sameWarp = b_.CreateICmpEQ(b_.CreateAnd(i, 32), warpBase());
    return b_.CreateOr(b_.CreateAnd(sameWarp, inMask), self);
  }

  llvm::Value* readLane(llvm::Value* value, llvm::Value* i) {
    return b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_readlane, {value->getType()}, {value, i});
  }

  // A uniform loop over the wavefront's active lanes: `step(i, acc)` (i = wave lane, uniform)
  // returns the next accumulator; returns the last one. Scalar readlanes, no LDS traffic.
  template <typename Step>
  llvm::Value* forEachActiveLane(llvm::Value* initial, Step step) {
    llvm::Function* fn = b_.GetInsertBlock()->getParent();
    llvm::LLVMContext& context = fn->getContext();
    llvm::Value* active = waveBallot(b_.getTrue());
    llvm::BasicBlock* entry = b_.GetInsertBlock();
    auto* header = llvm::BasicBlock::Create(context, "lanes", fn);
    auto* body = llvm::BasicBlock::Create(context, "lane", fn);
    auto* exit = llvm::BasicBlock::Create(context, "lanes.done", fn);
    b_.CreateBr(header);

    b_.SetInsertPoint(header);
    llvm::PHINode* remaining = b_.CreatePHI(waveMaskType(), 2, "remaining");
    llvm::PHINode* acc = b_.CreatePHI(initial->getType(), 2, "acc");
    remaining->addIncoming(active, entry);
    acc->addIncoming(initial, entry);
    b_.CreateCondBr(b_.CreateICmpEQ(remaining, llvm::ConstantInt::get(waveMaskType(), 0)), exit,
                    body);

    b_.SetInsertPoint(body);
    llvm::Value* i = b_.CreateTrunc(
        b_.CreateIntrinsic(llvm::Intrinsic::cttz, {waveMaskType()}, {remaining, b_.getTrue()}),
        b_.getInt32Ty());
    llvm::Value* next = step(i, static_cast<llvm::Value*>(acc));
    llvm::Value* rest = b_.CreateAnd(
        remaining, b_.CreateSub(remaining, llvm::ConstantInt::get(waveMaskType(), 1)));
    remaining->addIncoming(rest, b_.GetInsertBlock());
    acc->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(header);

    b_.SetInsertPoint(exit);
    return acc;
  }

 private:
  llvm::IRBuilder<>& b_;
  unsigned waveSize_;
};

// Define `fn` if it is one of the contract's warp collectives (__rocuda_shfl_sync, _vote_sync,
// _redux_sync, _match_sync, _warp_sync, _activemask) for wavefronts of `waveSize` lanes (32: one
// CUDA warp; 64: two), or replace its calls (__rocuda_mma_sync: by its lane functions); false if it
// is none of them.
bool defineWarpCollective(llvm::Function& fn, unsigned waveSize);

// A global of the code object the host looks up by name (hipModuleGetGlobal): addrspace(1),
// external, protected visibility.
llvm::GlobalVariable* protectedGlobal(llvm::Module& module, llvm::Constant* initializer,
                                      const char* name, bool constant,
                                      llvm::Align alignment = llvm::Align(8));

// __assertfail calls print the assertion through vprintf, raise the module's assert flag
// (kAmdgpuAssertFlagSymbol) and end the wavefront. Runs before lowerDeviceRuntime.
Status lowerAssert(llvm::Module& module);

// vprintf calls with a constant format become records in the host's printf buffer
// (amdgpu_codegen.h); UnsupportedPtx for any other format. Runs after optimizeForAmdgpu.
Status lowerPrintf(llvm::Module& module);

// TargetMachine for amdgcn-amd-amdhsa; also sets the module's triple, data layout and code
// object version.
Result<std::unique_ptr<llvm::TargetMachine>> createAmdgpuTargetMachine(const AmdgpuTarget& target);
void prepareModuleForTarget(llvm::Module& module, llvm::TargetMachine& tm, int codeObjectVersion);

// O2 for the target (always-inlining the runtime and kernel bodies, InferAddressSpaces).
void optimizeForAmdgpu(llvm::Module& module, llvm::TargetMachine& tm);


// Link a relocatable object into a shared code object with lld, in process.
Result<std::vector<uint8_t>> linkCodeObject(const std::vector<uint8_t>& object);

}  // namespace rocuda::compiler::amdgpu
