// Internal to src/compiler: host target machine, optimisation pipeline and object emission;
// the pass context and object emission are shared with compiler/amdgpu.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/Passes/PassBuilder.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "support/result.h"

namespace llvm {
class Module;
class Value;
class TargetMachine;
}  // namespace llvm

namespace rocuda::compiler::detail {

// Initialise LLVM's native target once per process (thread-safe).
void initializeNativeTarget();
// Set LLVM's process-wide options the compilers rely on, once per process (thread-safe): every
// target is compiled under the same options whichever is compiled first.
void configureLlvmOptions();

// A TargetMachine for this host (process triple, host CPU and its features), PIC.
Result<std::unique_ptr<llvm::TargetMachine>> createHostTargetMachine(int optLevel);
// The host CPU's features as the generated code may use them: all of them but the bf16
// conversion instructions (AVX512-BF16's and AVX-NE-CONVERT's vcvtneps2bf16 flush denormal
// inputs and results to zero, while PTX rounds bf16 conversions exactly). The code cache's
// host key (hostTargetName) lists these.
llvm::StringMap<bool> hostCpuFeatures();

// Promote every function's registers (the translator's allocas) to SSA values: what both
// targets do first with a translated module. LLVM's promotion (SROA's and mem2reg's) is too slow
// for translated PTX: it scans a block from its start to decide whether a value is live into it,
// quadratic in nvcc's long straight-line blocks (llama.cpp's MMQ kernels: 65% of their AMD
// compile time), and walks the dominator subtrees of every definition of a register, as large
// as the function for a loop's counter. promote_registers.cpp builds the SSA form in one scan
// of the blocks and one walk of the dominator tree.
void promoteRegisters(llvm::Module& module);

// Give NaN results of single- and half-precision arithmetic NVIDIA's bits wherever the program
// can observe them: the CUDA programming guide documents that an operation producing a NaN
// yields the one canonical NaN (0x7fffffff for f32, 0x7fff for f16 and bf16), while x86
// generates 0xffc00000 (device printf shows "-nan") and passes on input payloads, and AMD GPUs
// give 0x7fc00000. Values are fixed where their bits are observed (stored, passed, returned, read
// as integers, sign operations), not at every operation, so arithmetic chains and loop accumulators
// pay nothing; NaNs that are loaded or constant keep their bits. Run after promoteRegisters, by
// both targets.
void canonicalizeNaNResults(llvm::Module& module);

// Set the module's triple and data layout for `tm`, ask for vectors of at most 256 bits
// (kPreferredVectorBits in host_codegen.cpp) and run the new-PM default pipeline.
// `transformLoops` false: for the block forms, whose work-item loops optimizeRoundLoops
// unswitches first, then vectorizes and unrolls (unrolled before, they were past unswitching's
// size limits; vectorized before, a reduction tree's round was widened with its test of the
// block-uniform `s` still inside, as masked accesses of every thread).
void optimizeForHost(llvm::Module& module, llvm::TargetMachine& tm, int optLevel,
                     bool transformLoops = true);

// Before the block forms are built: a store made on both sides of an if/else (a stencil's border
// copy and its interior value) becomes one store after the join, so that the work-item loop the
// thread function is inlined into does one masked store per vector instead of two.
void sinkCommonStores(llvm::Module& module, llvm::TargetMachine& tm, int optLevel);

// After the block forms' optimisation (optimizeForHost): unswitch the rounds' work-item loops on
// the conditions that became invariant, split them at tests of the thread index
// (splitThreadRanges), vectorize the loops that result, then unroll.
// Returns the interchanges of stride loops made in each function (interchangeStrideLoops).
llvm::StringMap<unsigned> optimizeRoundLoops(llvm::Module& module, llvm::TargetMachine& tm,
                                             int optLevel);

// The loop option (llvm.loop metadata) that marks a block form's loop over the threads of a
// block in x (host_block_forms.cpp: emitThreadLoop).
inline constexpr const char* kWorkItemLoopMarker = "rocuda.loop.work_items";

// BlockContext's fields (compiler.h), in its order; a block form's argument 1 points to one.
enum ContextField : unsigned {
  kNtid,
  kCtaid,
  kNctaid,
  kThreadCount,
  kShared,
  kFrames,
  kRuntime,
  kGridWorkspace,
  kWarpLanes,
  kBlocksLeft
};

// A load of the block context's `field` (its element `element` when the field is an array of
// i32), marked invariant, with the device's limits as its range (host_block_forms.cpp).
llvm::Value* loadContext(llvm::IRBuilder<>& b, llvm::Value* context, ContextField field,
                         int element = -1);

// Whether `load` reads `field` (its element `element`, as above) of the block context a block
// form's argument 1 points to.
bool readsContextField(const llvm::LoadInst& load, ContextField field, int element = -1);

// A function's loops and their scalar evolution, made afresh for the loop transformations of the
// block forms (each changes the function behind the analyses it used).
struct LoopAnalyses {
  LoopAnalyses(llvm::Function& f, llvm::TargetLibraryInfo& libraryInfo)
      : dt(f), li(dt), assumptions(f), se(f, libraryInfo, assumptions, dt, li) {}
  llvm::DominatorTree dt;
  llvm::LoopInfo li;
  llvm::AssumptionCache assumptions;
  llvm::ScalarEvolution se;
};

// A round function's one round (buildRound, host_block_forms.cpp): `roundSymbol(kernel)` and this
// suffix; its argument kOneRoundCodesName is where it stores the threads' codes (found by name:
// the optimiser drops the arguments a one round does not use, a kernel's parameters when it has
// none, so its position varies).
inline constexpr std::string_view kOneRoundSuffix = ".one";
inline constexpr std::string_view kOneRoundCodesName = "codes";

// The codes argument of `f` when it is a one round, else null.
inline const llvm::Value* oneRoundCodes(const llvm::Function& f) {
  if (!f.getName().ends_with(kOneRoundSuffix)) return nullptr;
  for (const llvm::Argument& argument : f.args())
    if (argument.getName() == llvm::StringRef(kOneRoundCodesName)) return &argument;
  return nullptr;
}

// Whether `loop` is a block form's loop over the threads of a block in x (kWorkItemLoopMarker).
bool isWorkItemLoop(const llvm::Loop& loop);

// Interchange each work-item loop with the grid-stride or block-stride loop it holds, where that
// is exact, so that a pass runs one iteration of every thread and consecutive threads take
// consecutive elements, as a GPU's warps do (host_stride_interchange.cpp says where it applies).
// Loops must be in simplified form.
// Returns the number made in each function, by name.
llvm::StringMap<unsigned> interchangeStrideLoops(llvm::Module& module);

// A copy of the address computation `address` with the values in `substitutions` replaced,
// inserted before `at`: the instructions on the way that are in `inside` are copied (only casts,
// integer arithmetic that cannot trap and getelementptrs: nothing that reads memory), the others
// must be available at `at`. The substituted values met are added to `used`. Null when the
// address cannot be copied.
llvm::Value* copyAddress(llvm::Value* address,
                         const llvm::SmallDenseMap<llvm::Value*, llvm::Value*, 2>& substitutions,
                         const llvm::SmallPtrSetImpl<llvm::BasicBlock*>& inside,
                         llvm::Instruction* at, llvm::SmallPtrSetImpl<llvm::Value*>& used);

// Before `at`, prefetch (for reading) the cache lines from address `from` to address `to`, at
// most `maxLines` of them and none when they are fewer than `minLines` or `when` (an i1, or
// null) is false, in a loop of its own; returns the instruction `at` now follows (the same
// one, in the block after the loop).
llvm::Instruction* prefetchLines(llvm::Value* from, llvm::Value* to, uint64_t maxLines,
                                 llvm::Instruction* at, uint64_t minLines = 1,
                                 llvm::Value* when = nullptr);

// Each `or` of every lane of one <N x i1> vector, lane by lane (what the loop vectorizer's
// predicated stores to one address become, `if (found) *flag = 1`), as one
// llvm.vector.reduce.or: x86 code generation makes every `or` of such a chain a branch of its
// own, and a loop that waits on memory ran 1.3x slower with them (host_codegen.cpp).
void reduceLaneTests(llvm::Module& module);

// Before each work-item loop whose loads' addresses follow from the thread index and %ctaid.x
// (a reduction's first round, a tile's loads), prefetch the lines a later block (%ctaid.x + 4
// for a 1D block's rounds; %ctaid.x + 1, the one a worker runs next in its chunk, for each row
// of a 2D block) will read or write there (host_prefetch.cpp).
void prefetchNextBlocks(llvm::Module& module);
// Marks a prefetch (for reading, into the L2 cache) of lines a later block will write: the
// streaming forms drop it with the prefetches for writing (host_streaming_stores.cpp).
inline constexpr const char* kPrefetchForWritingMarker = "rocuda.prefetch.for_writing";

// Split each work-item loop whose body tests the thread's x index against a value the loop does
// not change (`if (tid < s)`, `if (threadIdx.x == 0)`) into a loop over the threads before the
// point where the test's answer changes and a loop over the rest, each without the test
// (host_thread_ranges.cpp). Loops must be in simplified form.
void splitThreadRanges(llvm::Module& module);

// Give each work-item loop whose body tests values the loop does not change (a 2D block's
// `y < height`) a copy with those tests answered the way that lets the threads work, run when
// they are all answered so (host_thread_ranges.cpp). Loops must be in simplified form.
void versionUniformTests(llvm::Module& module);

// Mark each work-item loop whose only effect, but for the threads' codes, is under a periodic
// test of the thread index (`(x & 31) == 0`: a warp leader's store) to be unrolled by the period
// instead of vectorised, so that the unrolled copies' tests are constants
// (host_thread_ranges.cpp). Loops must be in simplified form.
void unrollPeriodicThreadTests(llvm::Module& module);

// The new pass manager's analyses, registered for `tm`: what every pipeline of the compiler runs
// with (several pipelines may share one context and its cached analyses).
struct PassContext {
  // `memsetLoops` false: loops of constant stores stay loops. Block forms' work-item loops of
  // a few dozen threads (a round's codes, a row of a tile) became calls of the C library's
  // memset, whose 512-bit stores and call cost more than the loop: bench/cpu_device's
  // transpose took twice as long.
  explicit PassContext(llvm::TargetMachine& tm,
                       llvm::PipelineTuningOptions tuning = llvm::PipelineTuningOptions(),
                       bool memsetLoops = true);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb;
};

// The code cache's entry format for compiled code (a host object, an AMD code object): the
// ModuleInfo, then the code. The reader checks every size; `what` names the entry in errors.
std::vector<uint8_t> serializeCompiledModule(const ModuleInfo& info,
                                             const std::vector<uint8_t>& code);
Status deserializeCompiledModule(const uint8_t* data, size_t size, std::string_view what,
                                 ModuleInfo& info, std::vector<uint8_t>& code);

// Emit an ELF relocatable object for `tm`'s target (the host or an AMD GPU), or with `assembly`
// the target's assembly text instead.
Result<std::vector<uint8_t>> emitObject(llvm::Module& module, llvm::TargetMachine& tm,
                                        bool assembly = false);

// Whether kernel `name` (after inlining) can reach a call to one of `callees` (an indirect call
// counts as reaching them when any function of the module calls one).
bool kernelReaches(llvm::Module& module, const std::string& name,
                   const std::vector<std::string>& callees);

// The translator's functions at which a thread waits for others: block barriers (bar.sync,
// bar.red) and warp collectives. They decide KernelInfo::usesBarriers / usesWarpCollectives and
// become the wait points of continuations.
inline const std::vector<std::string> kBarrierFunctions = {"__rocuda_barrier_sync",
                                                           "__rocuda_barrier_reduce"};
// A warp lockstep point (host_warp_lockstep.cpp), which the host pipeline alone inserts.
inline constexpr const char* kWarpLockstepFunction = "__rocuda_warp_lockstep";
// A chain of shuffles as one collective (compiler.h), which the host's Continuations alone use.
inline constexpr const char* kShuffleChainFunction = "__rocuda_shfl_chain";
inline const std::vector<std::string> kWarpCollectiveFunctions = {
    "__rocuda_warp_sync",     "__rocuda_shfl_sync",     "__rocuda_vote_sync",
    "__rocuda_redux_sync",    "__rocuda_match_sync",    "__rocuda_activemask",
    "__rocuda_mbarrier_wait", "__rocuda_named_barrier", "__rocuda_mma_sync",
    kWarpLockstepFunction,    kShuffleChainFunction};

// The CPU device runs each warp matrix operation through its tile function (compiler.h:
// __rocuda_mma_sync): the calls' lane functions, for AMD GPUs, become null pointers and are
// deleted, so that they are not compiled for the host. Run before optimising.
void dropMatrixLaneFunctions(llvm::Module& module);

// The calls with which a pollable access (translator.h: kPollMetadata) inside a loop reports what
// it read, `void F(ptr address, i64 value)`, so that the CPU device's runtime can let a
// spin-waiting thread give way (compiler.h): a loop that reads such memory but ends for another
// reason; a spin-wait (host_spin_polls.cpp: one address read until the value read lets the
// loop end) on global memory, which only another block or the host changes (a generic address
// not made from a shared one counts as global); and one on the block's shared memory, which
// another thread of the same block may be about to change (KernelInfo::spinWaitsOnBlockMemory).
inline const std::vector<std::string> kSpinWaitFunctions = {
    "__rocuda_spin_poll", "__rocuda_spin_wait", "__rocuda_spin_wait_block"};

// Make every pollable access inside a loop call its kSpinWaitFunctions entry; shared memory is
// polled in spin-waits only. Run after inlining, before the block forms.
void insertSpinPolls(llvm::Module& module);

// Whether `address` is (on some path) an address in the block's shared window: one made from
// __rocuda_shared_base, directly or through a generic address (cvta), or loaded from such a place.
bool addressInSharedWindow(llvm::Value* address);

// Make the memory accesses through which warp-synchronous code exchanges values lockstep points
// of the warp (`void __rocuda_warp_lockstep(i32 order)`, a warp collective of the CPU device: see
// host_warp_lockstep.cpp), as code written for GPUs before Volta expects. Run before optimising;
// numberWarpLockstepPoints gives the points their order once the kernels are inlined.
void insertWarpLockstepPoints(llvm::Module& module, const ModuleInfo& info, WarpLockstep mode);

void numberWarpLockstepPoints(llvm::Module& module);

// Each atomicrmw fadd marked kFlushedSumMetadata becomes a compare-and-swap loop that flushes
// the memory's value, the operand and the sum to sign-preserving zero when subnormal (for a
// generic address, unless it points into the block's shared memory).
void flushAtomicSums(llvm::Module& module);

// Atomics marked block-private (kBlockPrivateMetadata: on the block's shared memory) become
// plain loads and stores: the CPU device runs every thread of a block on one host thread, and
// a thread's read-modify-write is never interleaved with another's (threads switch only at
// waits). Run after the last vectorizer, which keeps loops holding atomics scalar, so that the
// plain accesses are never widened across threads that may hit the same address.
void lowerBlockPrivateAtomics(llvm::Module& module);

// Replace each kernel of `module` by its block form for the CPU device (BlockLoop or
// Continuation, see compiler.h), recording the form in `info`; kernels that cannot take one keep
// their per-thread entry and get KernelInfo::cpuSlowPathReason. Run after inlining and after
// KernelInfo::usesBarriers / usesWarpCollectives are set (they decide the form); the result
// wants another optimisation pass (to inline the thread forms and vectorise the loops).
// `chainWaits`: a Continuation's round function completes the block barriers and the simple warp
// collectives every thread reaches itself (off under memcheck, whose race check counts each
// barrier in the runtime).
void lowerToBlockForms(llvm::Module& module, ModuleInfo& info, bool chainWaits);

// Replace each chain of two or more shfl steps in `f` (a warp reduction: each shfl's result
// combined with the lane's value, which the next shfl posts; compiler.h: shuffle chains) by one
// call of kShuffleChainFunction; host_shfl_chains.cpp says which chains. Returns how many.
// `linearThread` and `threadX` are the thread's linear index and threadIdx.x in `f`, which tell
// when only lanes 0 read a chain's result (kShuffleChainReadByLaneZero).
unsigned fuseShuffleChains(llvm::Function& f, llvm::Value* linearThread, llvm::Value* threadX);

// Run the steps of the shuffle chain `site` (its mode, schedule and op: compiler.h) for every
// warp of a block's first `count` threads: from WarpLanes' `values` into `results`, a warp's 32
// lanes as one vector. Emitted at `b`, which it leaves after the loop. `blockDimX` is the block's
// extent in x (whether threads testing threadIdx.x % 32 are lanes 0).
void emitShuffleChainSteps(llvm::IRBuilder<>& b, llvm::Value* values, llvm::Value* results,
                           llvm::Value* count, llvm::Value* blockDimX, const WarpWaitSite& site);

// Drop the lockstep form of each kernel whose BlockLoop function had every stride loop of the
// lockstep form interchanged (`interchanged`: interchanges by function, from
// optimizeRoundLoops): such passes do what the lockstep form's rounds do, without a round per
// iteration (bench-like grid-stride sums: 4.3 ms against 12-13 ms in lockstep).
void dropInterchangedLockstepForms(llvm::Module& module, ModuleInfo& info,
                                   const llvm::StringMap<unsigned>& interchanged);

// Give each BlockLoop kernel whose block function only loads and stores (no atomics, fences,
// volatile accesses or calls) a streaming form (streamingBlockLoopSymbol) whose vectorised
// stores to parameter memory are non-temporal, and record the bytes a thread stores through
// them (KernelInfo::cpuStreamingStoreBytes). x86 hosts only. host_streaming_stores.cpp.
void addStreamingStoreForms(llvm::Module& module, ModuleInfo& info);

// Inline each round function's one round (kept out of line until the rounds' loops are
// optimised: the copy of the last barrier and the lane arrays are invariant only within one
// round) into its loop over the waits it completes, those loads no longer marked invariant, so
// that a reduction tree's levels do not each pay a call, its prologue and the block's setup;
// then thread the rounds whose course is known and, where the rounds call nothing, let the
// round function go on to the next block itself (KernelInfo::cpuChainsBlocks, set in `info`)
// (host_block_forms.cpp).
void inlineChainedRounds(llvm::Module& module, ModuleInfo& info, llvm::TargetMachine& tm,
                         int optLevel);

}  // namespace rocuda::compiler::detail
