// Internal to src/compiler/amdgpu: the passes that turn the target-neutral module into AMDGPU IR,
// and the back end (optimise, emit, link). Run in this order by compileForAmdgpu.
#pragma once

#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/compiler.h"
#include "support/result.h"

namespace llvm {
class LLVMContext;
class MemoryBufferRef;
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

// The special registers whose values depend on the launch (amdgpu_codegen.h:
// AmdgpuLaunchRegisters, in its order: four u32, then the u64 %current_graph_exec).
inline const std::vector<std::string> kLaunchRegisterFunctions = {
    "__rocuda_sreg_dynamic_smem_size", "__rocuda_sreg_total_smem_size",
    "__rocuda_sreg_aggr_smem_size", "__rocuda_sreg_is_explicit_cluster",
    "__rocuda_sreg_current_graph_exec"};

// Each neutral kernel `void K(ptr params)` becomes the internal always-inline `K.body`, called by
// an amdgpu_kernel `K` with one byref kernel argument per PTX parameter, copied into a private
// buffer laid out like CUDA's packed parameter buffer. A kernel with
// KernelInfo::readsLaunchRegisters has one more argument, the AmdgpuLaunchRegisters, which it
// hands to `void __rocuda_set_launch_registers(ptr addrspace(4))` first (lowerDeviceRuntime keeps
// them in the module's LDS).
Status lowerKernelAbi(llvm::Module& module, const ModuleInfo& info);

// Link the device library's functions that `module` calls (the texture sampler: names starting
// with __rocuda_tex_ or __rocuda_surf_) from its embedded amdgcn bitcode, as internal functions.
// A build without the library (no clang) links nothing; lowerDeviceRuntime then refuses them.
Status linkDeviceLibrary(llvm::Module& module);
bool isDeviceLibraryFunction(llvm::StringRef name);
bool hasDeviceLibrary();

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

// Define `fn` if it is device malloc (`i64 malloc(i64)`) or free (`void free(i64)`) over the
// context's heap (amdgpu_codegen.h, kAmdgpuDeviceHeapSymbol); false for any other function.
bool defineDeviceMalloc(llvm::Function& fn);

// Dynamic parallelism's device runtime (lower_device_launches.cpp; amdgpu_codegen.h:
// kAmdgpuDeviceLaunchesSymbol): the functions nvcc's kernels call to launch kernels (and graphs,
// and to update device-updatable graph nodes),
// make device-side streams and events and read the last error, and the driver calls through
// which NVIDIA's libcudadevrt (linked into -rdc programs) does the same.
inline const std::vector<std::string> kDeviceLaunchFunctions = {
    "cudaGraphLaunch",
    "cudaGraphKernelNodeSetParam",
    "cudaGraphKernelNodeSetEnabled",
    "cudaGraphKernelNodeSetGridDim",
    "cudaGraphKernelNodeUpdatesApply",
    "__cudaCDP2GetParameterBufferV2",
    "__cudaCDP2GetParameterBuffer",
    "__cudaCDP2LaunchDeviceV2",
    "__cudaCDP2LaunchDevice",
    "__cudaCDP2GetLastError",
    "__cudaCDP2PeekAtLastError",
    "__cudaCDP2StreamCreateWithFlags",
    "__cudaCDP2StreamDestroy",
    "__cudaCDP2EventCreateWithFlags",
    "__cudaCDP2EventRecord",
    "__cudaCDP2StreamWaitEvent",
    "__cudaCDP2EventDestroy",
    "__cuda_syscall_cnpv2GetParameterBufferV2",
    "__cuda_syscall_cnpv2GetParameterBuffer",
    "__cuda_syscall_cnpv2LaunchDeviceV2",
    "__cuda_syscall_cnpv2LaunchDevice",
    "__cuda_syscall_cnpv2GetLastError",
    "__cuda_syscall_cnpv2SetLastError",
    "__cuda_syscall_cnpv2StreamCreate",
    "__cuda_syscall_cnpv2StreamDestroy",
    "__cuda_syscall_cnpv2EventCreate",
    "__cuda_syscall_cnpv2EventRecord",
    "__cuda_syscall_cnpv2StreamWaitEvent",
    "__cuda_syscall_cnpv2EventDestroy"};
// Defines `fn` when it is one of them (with nvcc's or libcudadevrt's signature; the syscalls
// answer the driver's CNP error codes and leave the last error to the library). `lastErrors` is the
// LDS array of each thread's last error (u16, by linear thread index), which every kernel that
// reaches them clears at entry (clearLastErrorAtEntry); parameter sizes come from `info`.
bool defineDeviceLaunchFunction(llvm::Function& fn, llvm::Value* lastErrors,
                                const ModuleInfo& info);
void clearLastErrorAtEntry(llvm::Function& kernel, llvm::Value* lastErrors);
// cudaGraphSetConditional (amdgpu_codegen.h: kAmdgpuGraphConditionsSymbol): defines `fn` when it
// is that function.
bool defineGraphSetConditional(llvm::Function& fn);
// After the optimiser: a launch's parameter size, known by then from the kernel reference it
// names in the common case (a compare against every kernel otherwise). Runs before emission.
void resolveKernelParameterBytes(llvm::Module& module);
// The thread's index in its block, x fastest (CUDA's and the wavefronts' order).
llvm::Value* linearThreadIndex(llvm::IRBuilder<>& b);

// A global of the code object the host looks up by name (hipModuleGetGlobal): addrspace(1),
// external, protected visibility.
llvm::GlobalVariable* protectedGlobal(llvm::Module& module, llvm::Constant* initializer,
                                      const char* name, bool constant,
                                      llvm::Align alignment = llvm::Align(8));
// The module's u64 global `name` that the host sets to an address before launches (0 at load),
// made at its first use.
llvm::GlobalVariable* hostSetAddress(llvm::Module& module, const char* name);

// __assertfail calls print the assertion through vprintf, raise the module's assert flag
// (kAmdgpuAssertFlagSymbol) and end the wavefront. Runs before lowerDeviceRuntime.
Status lowerAssert(llvm::Module& module);

// The format strings of the module's vprintf calls, each once, in program order; UnsupportedPtx
// for a format that is not a string constant of the module. Runs after optimizeForAmdgpu, when
// the formats' addresses have folded into constants.
Result<std::vector<std::string>> printfFormats(llvm::Module& module);
// vprintf calls become records in the host's printf buffer (amdgpu_codegen.h) that name their
// format by its index in `formats`: the module's printfFormats, or for the partitions of one
// module those of all partitions in partition order. The buffer pointer and the format table are
// defined where `definesGlobals` (the first partition), declared elsewhere.
Status lowerPrintf(llvm::Module& module, const std::vector<std::string>& formats,
                   bool definesGlobals);

// TargetMachine for amdgcn-amd-amdhsa; also sets the module's triple, data layout and code
// object version.
Result<std::unique_ptr<llvm::TargetMachine>> createAmdgpuTargetMachine(const AmdgpuTarget& target);
void prepareModuleForTarget(llvm::Module& module, llvm::TargetMachine& tm, int codeObjectVersion);

// Optimise for the target: always-inline the runtime and kernel bodies, InferAddressSpaces, then
// optimizationPipeline() (LLVM's O2 where this LLVM does not accept it, with a warning).
void optimizeForAmdgpu(llvm::Module& module, llvm::TargetMachine& tm);
// LLVM's O2 pipeline for the target less the passes that do not change nvcc-optimised code, as
// text for PassBuilder::parsePassPipeline.
std::string optimizationPipeline();

// How partitionKernels divides a lowered module for compilation on several threads
// (partition_kernels.cpp).
struct KernelPartitions {
  // Per partition, the functions it defines (its kernels and all they call), in module order.
  // Fewer than two: the module compiles whole.
  std::vector<std::vector<std::string>> functions;
  std::string wholeBecause;  // why it compiles whole
};
// Divide `module`'s kernels into at most `partitions` partitions of about equal size, unless it
// is smaller than `minimumInstructions` or has a function whose address is taken.
// When it divides, makes the module ready to be read back per partition: functions other than
// kernels internal, variables with local linkage external and hidden.
KernelPartitions partitionKernels(llvm::Module& module, unsigned partitions,
                                  size_t minimumInstructions);
// On a variable another partition defines: the text of its C-string initializer (a printf
// format, to lowerPrintf), which the optimiser drops with the initializer.
inline constexpr const char* kInitialStringMetadata = "rocuda.initial_string";
// The module in `bitcode` (written after partitionKernels) reduced, in `context`, to one
// partition: its `functions` defined, no other; variables defined if `definesVariables` (the
// first partition), else available_externally.
Result<std::unique_ptr<llvm::Module>> loadPartition(llvm::MemoryBufferRef bitcode,
                                                    llvm::LLVMContext& context,
                                                    const std::vector<std::string>& functions,
                                                    bool definesVariables);

// Link relocatable objects into one shared code object with lld, in process. Several objects
// (the partitions of one module) get one metadata note listing all their kernels.
Result<std::vector<uint8_t>> linkCodeObject(const std::vector<std::vector<uint8_t>>& objects);

}  // namespace rocuda::compiler::amdgpu
