// Internal to src/compiler/amdgpu: the passes that turn the target-neutral module into AMDGPU IR,
// and the back end (optimise, emit, link). Run in this order by compileForAmdgpu.
#pragma once

#include <llvm/IR/IRBuilder.h>

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

// The calling lane's index in its wavefront (0..waveSize-1).
llvm::Value* waveLane(llvm::IRBuilder<>& b, unsigned waveSize);

// Define `fn` if it is one of the contract's warp collectives (__rocuda_shfl_sync, _vote_sync,
// _redux_sync, _match_sync, _warp_sync, _activemask) for wavefronts of `waveSize` lanes (32: one CUDA warp;
// 64: two); false if it is none of them.
bool defineWarpCollective(llvm::Function& fn, unsigned waveSize);

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
