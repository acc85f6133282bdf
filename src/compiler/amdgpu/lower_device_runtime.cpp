// The device runtime of the IR contract, defined in IR for AMDGPU (no ROCm device libraries):
// each `__rocuda_*` declaration the translator made gets an internal always-inline body built
// from AMDGPU intrinsics. Anything still external afterwards cannot run on the GPU yet and fails
// the compilation by name, so no code object ever calls a missing function.
#include <llvm/IR/Constants.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <set>

#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler::amdgpu {
namespace {

using Builder = llvm::IRBuilder<>;

// hsa_kernel_dispatch_packet_t: workgroup_size_{x,y,z} are u16 at 4, 6, 8; grid_size_{x,y,z}
// (in work-items) are u32 at 12, 16, 20.
llvm::Value* dispatchField(Builder& b, unsigned offset, llvm::Type* type) {
  llvm::Value* packet = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_ptr, {}, {});
  llvm::Value* field = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), packet, offset);
  auto* load = b.CreateAlignedLoad(type, field, llvm::Align(type->getPrimitiveSizeInBits() / 8));
  load->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
  return b.CreateZExt(load, b.getInt32Ty());
}

llvm::Value* blockDim(Builder& b, int dim) { return dispatchField(b, 4 + 2 * dim, b.getInt16Ty()); }

llvm::Value* threadIdx(Builder& b, int dim) {
  static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::amdgcn_workitem_id_x,
                                            llvm::Intrinsic::amdgcn_workitem_id_y,
                                            llvm::Intrinsic::amdgcn_workitem_id_z};
  return b.CreateIntrinsic(ids[dim], {}, {});
}

llvm::Value* linearThreadIdx(Builder& b) {
  return b.CreateAdd(threadIdx(b, 0),
                     b.CreateMul(blockDim(b, 0), b.CreateAdd(threadIdx(b, 1),
                                                             b.CreateMul(blockDim(b, 1), threadIdx(b, 2)))));
}

// %clock64: the shader cycle counter; gfx11's is only 20 bits wide (HW_REG_SHADER_CYCLES), so
// there the 64-bit constant-rate counter stands in, monotonic like a cycle count.
llvm::Value* cycleCounter(Builder& b, const AmdgpuTarget& target) {
  bool narrowCycles = target.processor.rfind("gfx11", 0) == 0;
  return b.CreateIntrinsic(narrowCycles ? llvm::Intrinsic::readsteadycounter
                                        : llvm::Intrinsic::readcyclecounter,
                           {}, {});
}

// %globaltimer in nanoseconds: the constant-rate counter (s_memrealtime, or the REALTIME message
// on gfx11+), which runs at 100 MHz on the supported GPUs (HIP's wall-clock rate).
llvm::Value* globalTimer(Builder& b) {
  return b.CreateMul(b.CreateIntrinsic(llvm::Intrinsic::readsteadycounter, {}, {}), b.getInt64(10));
}

// The 64-bit special registers and the halves read from them; nullptr for the others.
llvm::Value* wideSpecialRegister(Builder& b, const std::string& name, const AmdgpuTarget& target) {
  if (name == "clock64") return cycleCounter(b, target);
  if (name == "globaltimer") return globalTimer(b);
  return nullptr;
}

// s_getreg_b32 of hardware register `id`, bits [offset, offset + size).
llvm::Value* hardwareRegister(Builder& b, unsigned id, unsigned offset, unsigned size) {
  return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_getreg, {},
                           {b.getInt32(id | offset << 6 | (size - 1) << 11)});
}

// %smid: the compute unit the wavefront runs on, from its hardware id. GCN/CDNA's HW_ID (4)
// holds CU_ID, SH_ID and SE_ID in bits [15:8]; on gfx940+ the XCC_ID register (20) tells the
// accelerator complex apart. RDNA's HW_ID1 (23) holds WGP_ID, SA_ID and SE_ID in bits [20:10]
// (a work-group runs on a work-group processor). PTX lets the numbering have gaps; %nsmid is one
// past the largest value the fields can hold.
llvm::Value* smId(Builder& b, const AmdgpuTarget& target) {
  if (target.processor.rfind("gfx9", 0) != 0) return hardwareRegister(b, 23, 10, 11);
  llvm::Value* unit = hardwareRegister(b, 4, 8, 8);
  if (target.processor.rfind("gfx94", 0) != 0) return unit;
  return b.CreateOr(unit, b.CreateShl(hardwareRegister(b, 20, 0, 4), 8));
}

uint32_t smIdCount(const AmdgpuTarget& target) {
  if (target.processor.rfind("gfx9", 0) != 0) return 1u << 11;
  return target.processor.rfind("gfx94", 0) == 0 ? 1u << 12 : 1u << 8;
}

// The value of special register `name` (without "__rocuda_sreg_"), or nullptr if unsupported.
llvm::Value* specialRegister(Builder& b, const std::string& name, const AmdgpuTarget& target) {
  unsigned waveSize = static_cast<unsigned>(amdgpuWavefrontSize(target.processor));
  static const char* const kDims = "xyz";
  for (int d = 0; d < 3; ++d) {
    std::string suffix = std::string("_") + kDims[d];
    if (name == "tid" + suffix) return threadIdx(b, d);
    if (name == "ctaid" + suffix) {
      static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::amdgcn_workgroup_id_x,
                                                llvm::Intrinsic::amdgcn_workgroup_id_y,
                                                llvm::Intrinsic::amdgcn_workgroup_id_z};
      return b.CreateIntrinsic(ids[d], {}, {});
    }
    if (name == "ntid" + suffix) return blockDim(b, d);
    if (name == "nctaid" + suffix) {
      llvm::Value* grid = dispatchField(b, 12 + 4 * d, b.getInt32Ty());
      llvm::Value* block = blockDim(b, d);
      // Round up: a block never has zero threads, so no division by zero.
      return b.CreateUDiv(b.CreateAdd(grid, b.CreateSub(block, b.getInt32(1))), block);
    }
  }
  llvm::Value* lane = WaveBuilder(b, waveSize).lane();
  if (name == "laneid") return lane;
  // As on the CPU device: the warp's index in the block, counting from thread 0.
  if (name == "warpid") return b.CreateLShr(linearThreadIdx(b), 5);
  llvm::Value* one = b.getInt32(1);
  if (name == "lanemask_eq") return b.CreateShl(one, lane);
  if (name == "lanemask_lt") return b.CreateSub(b.CreateShl(one, lane), one);
  if (name == "lanemask_le") return b.CreateSub(b.CreateShl(b.CreateShl(one, lane), one), one);
  if (name == "lanemask_ge") return b.CreateShl(b.getInt32(-1), lane);
  if (name == "lanemask_gt") return b.CreateShl(b.CreateShl(b.getInt32(-1), lane), one);
  if (name == "clock") return b.CreateTrunc(cycleCounter(b, target), b.getInt32Ty());
  if (name == "smid") return smId(b, target);
  if (name == "nsmid") return b.getInt32(smIdCount(target));
  // As on the CPU device and NVIDIA GPUs: 64 warp slots per multiprocessor (%warpid is below 32).
  if (name == "nwarpid") return b.getInt32(64);
  // %gridid (read as 32 bits, as on the CPU device): the dispatch's id from the packet
  // processor, different for each launch on a queue.
  if (name == "gridid")
    return b.CreateTrunc(b.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_id, {}, {}),
                         b.getInt32Ty());
  // %envreg1 / %envreg2: the halves of the grid workspace's address, from the module's
  // kAmdgpuGridWorkspaceSymbol, which the host sets for each launch; the other %envreg<n> are 0.
  if (name == "envreg1" || name == "envreg2") {
    llvm::Value* workspace =
        b.CreateLoad(b.getInt64Ty(),
                     hostSetAddress(*b.GetInsertBlock()->getModule(), kAmdgpuGridWorkspaceSymbol));
    if (name == "envreg1") workspace = b.CreateLShr(workspace, 32);
    return b.CreateTrunc(workspace, b.getInt32Ty());
  }
  if (name.rfind("envreg", 0) == 0) return b.getInt32(0);
  return nullptr;
}

// bar.sync orders shared and global memory among the block's threads: release before the
// hardware barrier, acquire after it, both at work-group scope.
void emitBarrier(Builder& b) {
  llvm::SyncScope::ID workgroup = b.getContext().getOrInsertSyncScopeID("workgroup");
  b.CreateFence(llvm::AtomicOrdering::Release, workgroup);
  b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
  b.CreateFence(llvm::AtomicOrdering::Acquire, workgroup);
}

void defineBarrier(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  emitBarrier(b);
  b.CreateRetVoid();
}

// s_barrier synchronises the whole work-group: only barrier 0 for all threads maps to it (the
// translator calls __rocuda_named_barrier for every other barrier).
// `idArg` and `threadsArg` are the positions of the barrier id and thread count in `fn`'s calls.
Status checkBarrierCalls(llvm::Function& fn, unsigned idArg, unsigned threadsArg) {
  for (llvm::User* user : fn.users()) {
    auto* call = llvm::dyn_cast<llvm::CallBase>(user);
    if (!call) continue;
    auto* id = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(idArg));
    auto* threads = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(threadsArg));
    if (!id || !threads || !id->isZero() || !threads->isZero())
      return makeError(ErrorCode::Internal,
                       "a whole-block barrier call with an id or a thread count in '" +
                           call->getFunction()->getName().str() + "'");
  }
  return Status::success();
}

// The module's one LDS object. All kernels' shared windows start at the same LDS address, so one
// window serves the whole module (functions called from several kernels use the same offsets).
// It is sized for the largest window; dynamic shared memory, which HIP allocates right after the
// kernel's static LDS, starts at or before its end. A prefix before the window holds the barrier
// reductions' counter (its first word), the launch registers (AmdgpuLaunchRegisters, at
// kLaunchRegistersOffset) and the named barriers (at kNamedBarriersOffset): 16, 40 or 552
// bytes, rounded up to the window's alignment (module flag kSharedWindowAlignmentFlag), so that
// `.align 256` variables stay aligned.
struct Lds {
  llvm::GlobalVariable* object = nullptr;
  uint64_t windowOffset = 0;  // where the CUDA shared window starts in `object`
};

constexpr uint64_t kReductionPrefix = 16;
constexpr uint64_t kLaunchRegistersOffset = 16;
// The named barriers 0-15 (`bar.sync 1, 64`, `bar.arrive`, `bar.red` with an id or a count), one
// slot of kNamedBarrierBytes each: the barrier word (generation << 16 | threads arrived in it)
// and, at 8 and 16, the {arrived, true} tallies of bar.red votes for even and odd generations.
constexpr uint64_t kNamedBarriersOffset = kLaunchRegistersOffset + sizeof(AmdgpuLaunchRegisters);
constexpr uint64_t kNamedBarrierBytes = 32;
constexpr uint64_t kNamedBarriers = 16;
// Dynamic parallelism's last error of each thread (u16), after the named barriers.
constexpr uint64_t kLastErrorsOffset = kNamedBarriersOffset + kNamedBarriers * kNamedBarrierBytes;
constexpr uint64_t kLastErrorsBytes = 2 * kMaxThreadsPerBlock;

Lds createLds(llvm::Module& module, const ModuleInfo& info, bool reductionCounter,
              bool launchRegisters, bool namedBarriers, bool lastErrors) {
  uint64_t window = 0;
  for (const auto& k : info.kernels)
    window = std::max<uint64_t>({window, k.staticSharedBytes, k.dynamicSharedOffset});
  uint64_t alignment = kReductionPrefix;
  if (auto* flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(
          module.getModuleFlag(detail::kSharedWindowAlignmentFlag)))
    alignment = std::max<uint64_t>(alignment, flag->getZExtValue());
  uint64_t prefix = lastErrors         ? kLastErrorsOffset + kLastErrorsBytes
                    : namedBarriers    ? kNamedBarriersOffset + kNamedBarriers * kNamedBarrierBytes
                    : launchRegisters  ? kLaunchRegistersOffset + sizeof(AmdgpuLaunchRegisters)
                    : reductionCounter ? kReductionPrefix
                                       : 0;
  Lds lds;
  lds.windowOffset = (prefix + alignment - 1) / alignment * alignment;
  auto* i8 = llvm::Type::getInt8Ty(module.getContext());
  if (window + lds.windowOffset > 0) {
    auto* type = llvm::ArrayType::get(i8, window + lds.windowOffset);
    lds.object = new llvm::GlobalVariable(module, type, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::UndefValue::get(type), "__rocuda_shared_window",
                                          nullptr, llvm::GlobalValue::NotThreadLocal, kLocalAS);
  } else {
    // Only dynamic shared memory: an external zero-sized LDS array, as HIP declares it.
    lds.object = new llvm::GlobalVariable(
        module, llvm::ArrayType::get(i8, 0), false, llvm::GlobalValue::ExternalLinkage, nullptr,
        "__rocuda_dynamic_shared", nullptr, llvm::GlobalValue::NotThreadLocal, kLocalAS);
  }
  lds.object->setAlignment(llvm::Align(alignment));
  return lds;
}

// `void __rocuda_set_launch_registers(ptr addrspace(4) registers)`, each kernel's first call:
// every thread copies the same 24 bytes into the LDS prefix, where its own reads then find them.
void defineSetLaunchRegisters(llvm::Function& fn, const Lds& lds) {
  Builder b = defineRuntime(fn);
  llvm::Value* slot =
      b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), lds.object, kLaunchRegistersOffset);
  b.CreateMemCpy(slot, llvm::Align(8), fn.getArg(0), llvm::Align(8), sizeof(AmdgpuLaunchRegisters));
  b.CreateRetVoid();
}

// A launch register (`index` in AmdgpuLaunchRegisters), as the kernel stored it.
void defineLaunchRegister(llvm::Function& fn, const Lds& lds, unsigned index) {
  static constexpr uint64_t kOffsets[] = {offsetof(AmdgpuLaunchRegisters, dynamicSmemSize),
                                          offsetof(AmdgpuLaunchRegisters, totalSmemSize),
                                          offsetof(AmdgpuLaunchRegisters, aggrSmemSize),
                                          offsetof(AmdgpuLaunchRegisters, isExplicitCluster),
                                          offsetof(AmdgpuLaunchRegisters, currentGraphExec)};
  Builder b = defineRuntime(fn);
  llvm::Value* slot = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), lds.object,
                                                   kLaunchRegistersOffset + kOffsets[index]);
  llvm::Type* type = fn.getReturnType();  // i32, or i64 for %current_graph_exec
  b.CreateRet(b.CreateAlignedLoad(type, slot, llvm::Align(type->getPrimitiveSizeInBits() / 8)));
}

void defineSharedBase(llvm::Function& fn, const Lds& lds) {
  Builder b = defineRuntime(fn);
  llvm::Value* window = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), lds.object, lds.windowOffset);
  b.CreateRet(b.CreateAddrSpaceCast(window, fn.getReturnType()));
}

// i32 __rocuda_barrier_reduce(i32 op, i32 id, i32 threads, i32 predicate): op 0 popc (the
// count), 1 and, 2 or. Thread 0 clears the LDS counter between two barriers (the first keeps it
// from clearing the previous reduction's result before every thread has read it), the first
// active lane of each wavefront adds its wavefront's count, and a third barrier publishes the
// total. `and` counts the threads whose predicate is false.
void defineBarrierReduce(llvm::Function& fn, const Lds& lds, unsigned waveSize) {
  Builder b = defineRuntime(fn);
  llvm::LLVMContext& context = fn.getContext();
  llvm::Value* op = fn.getArg(0);
  llvm::Value* predicate = b.CreateICmpNE(fn.getArg(3), b.getInt32(0));
  llvm::Value* counted = b.CreateXor(predicate, b.CreateICmpEQ(op, b.getInt32(1)));
  llvm::Value* counter = lds.object;  // the prefix's first word
  llvm::SyncScope::ID workgroup = context.getOrInsertSyncScopeID("workgroup");

  emitBarrier(b);
  auto* clear = llvm::BasicBlock::Create(context, "clear", &fn);
  auto* count = llvm::BasicBlock::Create(context, "count", &fn);
  llvm::Value* first = b.CreateICmpEQ(linearThreadIdx(b), b.getInt32(0));
  b.CreateCondBr(first, clear, count);
  b.SetInsertPoint(clear);
  b.CreateStore(b.getInt32(0), counter);
  b.CreateBr(count);

  b.SetInsertPoint(count);
  emitBarrier(b);
  WaveBuilder wave(b, waveSize);
  llvm::Value* ballot = wave.waveBallot(counted);
  llvm::Value* active = wave.waveBallot(b.getTrue());
  llvm::Value* firstActive = b.CreateTrunc(
      b.CreateIntrinsic(llvm::Intrinsic::cttz, {wave.waveMaskType()}, {active, b.getTrue()}),
      b.getInt32Ty());
  auto* add = llvm::BasicBlock::Create(context, "add", &fn);
  auto* total = llvm::BasicBlock::Create(context, "total", &fn);
  b.CreateCondBr(b.CreateICmpEQ(wave.waveLane(), firstActive), add, total);
  b.SetInsertPoint(add);
  llvm::Value* n = b.CreateTrunc(b.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, ballot), b.getInt32Ty());
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter, n, llvm::Align(4),
                    llvm::AtomicOrdering::Monotonic, workgroup);
  b.CreateBr(total);

  b.SetInsertPoint(total);
  emitBarrier(b);
  llvm::Value* sum = b.CreateLoad(b.getInt32Ty(), counter);
  llvm::Value* none = b.CreateZExt(b.CreateICmpEQ(sum, b.getInt32(0)), b.getInt32Ty());
  llvm::Value* some = b.CreateZExt(b.CreateICmpNE(sum, b.getInt32(0)), b.getInt32Ty());
  b.CreateRet(b.CreateSelect(b.CreateICmpEQ(op, b.getInt32(0)), sum,
                             b.CreateSelect(b.CreateICmpEQ(op, b.getInt32(1)), none, some)));
}

// Named barriers in LDS (no hardware barrier but s_barrier's one per work-group on the targets
// supported). Each thread counts once, as on the CPU device: its atomic add to the barrier word
// returns the generation and the arrivals before it, which place it in phase
// generation + arrivals / expected (arrivals for the next phase may come before the last one of
// this phase has advanced the generation). The thread that completes a phase subtracts its
// `expected` arrivals and advances the generation in one add; waiting threads poll the word
// until the generation has passed their phase (compared modulo 2^16), sleeping between polls,
// which only works because a work-group's wavefronts are resident together.
llvm::Value* namedBarrierSlot(Builder& b, const Lds& lds, llvm::Value* id) {
  llvm::Value* offset =
      b.CreateAdd(b.getInt32(kNamedBarriersOffset),
                  b.CreateMul(b.CreateAnd(id, kNamedBarriers - 1), b.getInt32(kNamedBarrierBytes)));
  return b.CreateInBoundsGEP(b.getInt8Ty(), lds.object, offset);
}

// The {arrived, true} tally of bar.red votes cast in phase `phase` at barrier `slot`.
llvm::Value* namedReduceTally(Builder& b, llvm::Value* slot, llvm::Value* phase) {
  llvm::Value* parity = b.CreateAnd(phase, 1);
  return b.CreateInBoundsGEP(b.getInt8Ty(), slot,
                             b.CreateAdd(b.getInt32(8), b.CreateMul(parity, b.getInt32(8))));
}

llvm::Value* blockThreadCount(Builder& b) {
  return b.CreateMul(blockDim(b, 0), b.CreateMul(blockDim(b, 1), blockDim(b, 2)));
}

// void __rocuda_named_barrier(i32 id, i32 threads, i32 arrive): bar.sync / barrier.sync with an
// id or a count waits until `threads` (0: the block's) have arrived; bar.arrive only arrives.
// Release before arriving, acquire after the wait, both at work-group scope, as bar.sync orders.
void defineNamedBarrier(llvm::Function& fn, const Lds& lds) {
  Builder b = defineRuntime(fn);
  llvm::LLVMContext& context = fn.getContext();
  llvm::SyncScope::ID workgroup = context.getOrInsertSyncScopeID("workgroup");
  llvm::Value* threads = fn.getArg(1);
  llvm::Value* expected =
      b.CreateSelect(b.CreateICmpEQ(threads, b.getInt32(0)), blockThreadCount(b), threads);
  llvm::Value* slot = namedBarrierSlot(b, lds, fn.getArg(0));
  b.CreateFence(llvm::AtomicOrdering::Release, workgroup);
  llvm::Value* old = b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, slot, b.getInt32(1),
                                       llvm::Align(4), llvm::AtomicOrdering::Monotonic, workgroup);
  llvm::Value* arrived = b.CreateAnd(old, 0xffff);
  llvm::Value* phase = b.CreateAdd(b.CreateLShr(old, 16), b.CreateUDiv(arrived, expected));
  llvm::Value* last =
      b.CreateICmpEQ(b.CreateURem(b.CreateAdd(arrived, b.getInt32(1)), expected), b.getInt32(0));
  auto* complete = llvm::BasicBlock::Create(context, "complete", &fn);
  auto* arrivedOnly = llvm::BasicBlock::Create(context, "arrived", &fn);
  auto* poll = llvm::BasicBlock::Create(context, "poll", &fn);
  auto* sleep = llvm::BasicBlock::Create(context, "sleep", &fn);
  auto* done = llvm::BasicBlock::Create(context, "done", &fn);
  b.CreateCondBr(last, complete, arrivedOnly);

  // Every thread of this phase has read the tally of two phases ago (it did before arriving):
  // the next phase's votes start from zero.
  b.SetInsertPoint(complete);
  llvm::Value* nextTally = namedReduceTally(b, slot, b.CreateAdd(phase, b.getInt32(1)));
  for (int word = 0; word < 2; ++word) {
    auto* clear = b.CreateAlignedStore(
        b.getInt32(0), b.CreateConstInBoundsGEP1_32(b.getInt32Ty(), nextTally, word),
        llvm::Align(4));
    clear->setAtomic(llvm::AtomicOrdering::Monotonic, workgroup);
  }
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, slot, b.CreateSub(b.getInt32(1 << 16), expected),
                    llvm::Align(4), llvm::AtomicOrdering::Release, workgroup);
  b.CreateBr(done);

  b.SetInsertPoint(arrivedOnly);
  b.CreateCondBr(b.CreateICmpNE(fn.getArg(2), b.getInt32(0)), done, poll);

  b.SetInsertPoint(poll);
  auto* word = b.CreateAlignedLoad(b.getInt32Ty(), slot, llvm::Align(4));
  word->setAtomic(llvm::AtomicOrdering::Monotonic, workgroup);
  llvm::Value* ahead = b.CreateAnd(b.CreateSub(b.CreateLShr(word, 16), phase), 0xffff);
  llvm::Value* passed =
      b.CreateAnd(b.CreateICmpNE(ahead, b.getInt32(0)), b.CreateICmpULT(ahead, b.getInt32(0x8000)));
  b.CreateCondBr(passed, done, sleep);
  b.SetInsertPoint(sleep);
  b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_sleep, {}, {b.getInt32(1)});
  b.CreateBr(poll);

  b.SetInsertPoint(done);
  b.CreateFence(llvm::AtomicOrdering::Acquire, workgroup);
  b.CreateRetVoid();
}

// i32 __rocuda_named_reduce_arrive(i32 id, i32 predicate): a bar.red vote joins the tally of the
// barrier's current phase (the thread cannot be ahead of it: the phase needs its arrival, which
// the named barrier's wait right after this makes); returns the phase.
void defineNamedReduceArrive(llvm::Function& fn, const Lds& lds) {
  Builder b = defineRuntime(fn);
  llvm::SyncScope::ID workgroup = fn.getContext().getOrInsertSyncScopeID("workgroup");
  llvm::Value* slot = namedBarrierSlot(b, lds, fn.getArg(0));
  auto* word = b.CreateAlignedLoad(b.getInt32Ty(), slot, llvm::Align(4));
  word->setAtomic(llvm::AtomicOrdering::Acquire, workgroup);
  llvm::Value* phase = b.CreateLShr(word, 16);
  llvm::Value* tally = namedReduceTally(b, slot, phase);
  llvm::Value* vote = b.CreateZExt(b.CreateICmpNE(fn.getArg(1), b.getInt32(0)), b.getInt32Ty());
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, tally, b.getInt32(1), llvm::Align(4),
                    llvm::AtomicOrdering::Monotonic, workgroup);
  b.CreateAtomicRMW(llvm::AtomicRMWInst::Add,
                    b.CreateConstInBoundsGEP1_32(b.getInt32Ty(), tally, 1), vote, llvm::Align(4),
                    llvm::AtomicOrdering::Monotonic, workgroup);
  b.CreateRet(phase);
}

// i32 __rocuda_named_reduce_result(i32 op, i32 id, i32 phase), after the phase's wait: op 0 the
// count of true votes, 1 whether all were true, 2 whether any was.
void defineNamedReduceResult(llvm::Function& fn, const Lds& lds) {
  Builder b = defineRuntime(fn);
  llvm::SyncScope::ID workgroup = fn.getContext().getOrInsertSyncScopeID("workgroup");
  llvm::Value* tally = namedReduceTally(b, namedBarrierSlot(b, lds, fn.getArg(1)), fn.getArg(2));
  auto* arrived = b.CreateAlignedLoad(b.getInt32Ty(), tally, llvm::Align(4));
  arrived->setAtomic(llvm::AtomicOrdering::Monotonic, workgroup);
  auto* votes = b.CreateAlignedLoad(
      b.getInt32Ty(), b.CreateConstInBoundsGEP1_32(b.getInt32Ty(), tally, 1), llvm::Align(4));
  votes->setAtomic(llvm::AtomicOrdering::Monotonic, workgroup);
  llvm::Value* op = fn.getArg(0);
  llvm::Value* all = b.CreateZExt(b.CreateICmpEQ(votes, arrived), b.getInt32Ty());
  llvm::Value* any = b.CreateZExt(b.CreateICmpNE(votes, b.getInt32(0)), b.getInt32Ty());
  b.CreateRet(b.CreateSelect(b.CreateICmpEQ(op, b.getInt32(0)), votes,
                             b.CreateSelect(b.CreateICmpEQ(op, b.getInt32(1)), all, any)));
}

// LDS starts undefined: a kernel that reaches a named barrier zeroes their slots first, and the
// work-group meets at s_barrier before any thread uses them.
void clearNamedBarriersAtEntry(llvm::Function& kernel, const Lds& lds) {
  llvm::BasicBlock& entry = kernel.getEntryBlock();
  auto split = entry.getFirstInsertionPt();
  while (llvm::isa<llvm::AllocaInst>(*split)) ++split;  // the allocas stay static
  llvm::BasicBlock* body = entry.splitBasicBlock(split, "named.cleared");
  entry.getTerminator()->eraseFromParent();
  llvm::LLVMContext& context = kernel.getContext();
  Builder b(&entry);
  llvm::Value* threads = blockThreadCount(b);
  llvm::Value* first = linearThreadIdx(b);
  constexpr uint64_t kWords = kNamedBarriers * kNamedBarrierBytes / 4;
  auto* clear = llvm::BasicBlock::Create(context, "named.clear", &kernel, body);
  auto* meet = llvm::BasicBlock::Create(context, "named.meet", &kernel, body);
  b.CreateCondBr(b.CreateICmpULT(first, b.getInt32(kWords)), clear, meet);
  b.SetInsertPoint(clear);
  llvm::PHINode* word = b.CreatePHI(b.getInt32Ty(), 2);
  word->addIncoming(first, &entry);
  llvm::Value* base = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), lds.object, kNamedBarriersOffset);
  b.CreateAlignedStore(b.getInt32(0), b.CreateInBoundsGEP(b.getInt32Ty(), base, word),
                       llvm::Align(4));
  llvm::Value* next = b.CreateAdd(word, threads);
  word->addIncoming(next, clear);
  b.CreateCondBr(b.CreateICmpULT(next, b.getInt32(kWords)), clear, meet);
  b.SetInsertPoint(meet);
  emitBarrier(b);
  b.CreateBr(body);
}

void defineTrap(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  b.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
  b.CreateUnreachable();
}

// i32 __rocuda_is_shared(ptr) / __rocuda_is_local(ptr): isspacep.shared / .local ask whether
// the flat address is in the LDS / private aperture.
void defineApertureQuery(llvm::Function& fn, llvm::Intrinsic::ID aperture) {
  Builder b = defineRuntime(fn);
  llvm::Value* inside = b.CreateIntrinsic(aperture, {}, {fn.getArg(0)});
  b.CreateRet(b.CreateZExt(inside, b.getInt32Ty()));
}

// i32 __rocuda_mbarrier_wait(ptr, i64 state, i32 parity): whether the phase has completed
// (compiler.h's layout); the PTX's own loop around test_wait / try_wait does the waiting, as
// the wavefronts of a workgroup run side by side.
void defineMBarrierTest(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  auto* word = b.CreateAlignedLoad(b.getInt64Ty(), fn.getArg(0), llvm::Align(8));
  word->setAtomic(llvm::AtomicOrdering::Acquire,
                  fn.getContext().getOrInsertSyncScopeID("workgroup"));
  llvm::Value* phase = b.CreateLShr(word, 63);
  llvm::Value* state = fn.getArg(1);
  llvm::Value* byParity = b.CreateICmpNE(phase, b.CreateAnd(state, 1));
  llvm::Value* byState = b.CreateICmpNE(phase, b.CreateLShr(state, 63));
  llvm::Value* parity = b.CreateICmpNE(fn.getArg(2), b.getInt32(0));
  b.CreateRet(b.CreateZExt(b.CreateSelect(parity, byParity, byState), b.getInt32Ty()));
}

// float tanhf(float): the translator's tanh.approx.f32 (PTX allows 2^-10.987 relative error),
// which the host takes from libm. Here: x(1 - x^2/3 + 2x^4/15 - 17x^6/315) below |x| = 0.4, else
// 1 - 2/(e^{2|x|} + 1) with the sign of x (v_exp_f32); at most 2^-16 relative error in float
// (measured against a double tanh over 2.2 million inputs), infinities give +-1, NaN stays NaN.
void defineApproxTanh(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  llvm::Value* x = fn.getArg(0);
  llvm::Type* f32 = b.getFloatTy();
  auto c = [&](double value) { return llvm::ConstantFP::get(f32, value); };
  llvm::Value* ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* x2 = b.CreateFMul(x, x);
  llvm::Value* series = b.CreateFAdd(c(2.0 / 15.0), b.CreateFMul(x2, c(-17.0 / 315.0)));
  series = b.CreateFAdd(c(-1.0 / 3.0), b.CreateFMul(x2, series));
  series = b.CreateFMul(x, b.CreateFAdd(c(1.0), b.CreateFMul(x2, series)));
  llvm::Value* e =
      b.CreateUnaryIntrinsic(llvm::Intrinsic::exp2, b.CreateFMul(ax, c(2.0 * 1.4426950408889634)));
  llvm::Value* magnitude = b.CreateFSub(c(1.0), b.CreateFDiv(c(2.0), b.CreateFAdd(e, c(1.0))));
  llvm::Value* large = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude, x);
  b.CreateRet(b.CreateSelect(b.CreateFCmpOLT(ax, c(0.4)), series, large));
}

// Intrinsics whose f64 forms the AMDGPU back end would turn into library calls (f16 and bf16
// ones it selects, through f32 where the target has no half instruction).
bool needsLibraryCall(const llvm::Function& fn) {
  switch (fn.getIntrinsicID()) {
    case llvm::Intrinsic::sin:
    case llvm::Intrinsic::cos:
    case llvm::Intrinsic::exp:
    case llvm::Intrinsic::exp2:
    case llvm::Intrinsic::log:
    case llvm::Intrinsic::log2:
    case llvm::Intrinsic::pow:
      return fn.getReturnType()->getScalarType()->isDoubleTy();
    default:
      return false;
  }
}

}  // namespace

llvm::Value* linearThreadIndex(llvm::IRBuilder<>& b) { return linearThreadIdx(b); }

llvm::IRBuilder<> defineRuntime(llvm::Function& fn) {
  fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  fn.addFnAttr(llvm::Attribute::AlwaysInline);
  return llvm::IRBuilder<>(llvm::BasicBlock::Create(fn.getContext(), "entry", &fn));
}

Status lowerDeviceRuntime(llvm::Module& module, const ModuleInfo& info, const AmdgpuTarget& target) {
  unsigned waveSize = static_cast<unsigned>(amdgpuWavefrontSize(target.processor));
  auto used = [&](const char* name) {
    llvm::Function* fn = module.getFunction(name);
    return fn && !fn->use_empty();
  };
  bool reduces = used("__rocuda_barrier_reduce");
  bool launchRegisters = used("__rocuda_set_launch_registers");
  const std::vector<std::string> namedBarrierFunctions = {"__rocuda_named_barrier",
                                                          "__rocuda_named_reduce_arrive"};
  std::vector<llvm::Function*> namedBarrierKernels;
  for (const auto& kernel : info.kernels)
    if (detail::kernelReaches(module, kernel.name, namedBarrierFunctions))
      namedBarrierKernels.push_back(module.getFunction(kernel.name));
  std::vector<llvm::Function*> launchingKernels;
  for (const auto& kernel : info.kernels)
    if (detail::kernelReaches(module, kernel.name, kDeviceLaunchFunctions))
      launchingKernels.push_back(module.getFunction(kernel.name));
  Lds lds;
  if (reduces || launchRegisters || !namedBarrierKernels.empty() || !launchingKernels.empty() ||
      used("__rocuda_shared_base"))
    lds = createLds(module, info, reduces, launchRegisters, !namedBarrierKernels.empty(),
                    !launchingKernels.empty());
  for (llvm::Function* kernel : namedBarrierKernels) clearNamedBarriersAtEntry(*kernel, lds);
  llvm::Constant* lastErrors = nullptr;
  if (!launchingKernels.empty()) {
    lastErrors = llvm::ConstantExpr::getInBoundsGetElementPtr(
        llvm::Type::getInt8Ty(module.getContext()), lds.object,
        llvm::ConstantInt::get(llvm::Type::getInt64Ty(module.getContext()), kLastErrorsOffset));
    for (llvm::Function* kernel : launchingKernels) clearLastErrorAtEntry(*kernel, lastErrors);
  }

  std::set<std::string> unsupported;
  std::vector<llvm::Function*> declarations;
  for (auto& fn : module)
    if (fn.isDeclaration()) declarations.push_back(&fn);
  for (llvm::Function* fn : declarations) {
    std::string name = fn->getName().str();
    if (fn->isIntrinsic()) {
      if (needsLibraryCall(*fn) && !fn->use_empty()) unsupported.insert(name);
      continue;
    }
    if (fn->use_empty() || name == "vprintf") continue;  // vprintf: lowerPrintf, after O2
    auto launchRegister =
        std::find(kLaunchRegisterFunctions.begin(), kLaunchRegisterFunctions.end(), name);
    if (launchRegister != kLaunchRegisterFunctions.end() && launchRegisters) {
      defineLaunchRegister(
          *fn, lds, static_cast<unsigned>(launchRegister - kLaunchRegisterFunctions.begin()));
    } else if (name == "__rocuda_set_launch_registers") {
      defineSetLaunchRegisters(*fn, lds);
    } else if (name.rfind("__rocuda_sreg_", 0) == 0) {
      std::string reg = name.substr(14);
      // Every supported register is an i32 or i64 read with no arguments.
      llvm::Type* type = fn->getReturnType();
      if (!(type->isIntegerTy(32) || type->isIntegerTy(64)) || fn->arg_size() != 0) {
        unsupported.insert(name);
        continue;
      }
      llvm::BasicBlock* entry = llvm::BasicBlock::Create(module.getContext(), "entry", fn);
      Builder b(entry);
      llvm::Value* value = type->isIntegerTy(64) ? wideSpecialRegister(b, reg, target)
                                                 : specialRegister(b, reg, target);
      if (!value) {
        entry->eraseFromParent();
        unsupported.insert(name);
        continue;
      }
      b.CreateRet(value);
      fn->setLinkage(llvm::GlobalValue::InternalLinkage);
      fn->addFnAttr(llvm::Attribute::AlwaysInline);
    } else if (name == "__rocuda_barrier_sync") {
      ROCUDA_TRY(checkBarrierCalls(*fn, 0, 1));
      defineBarrier(*fn);
    } else if (name == "__rocuda_barrier_reduce") {
      ROCUDA_TRY(checkBarrierCalls(*fn, 1, 2));
      defineBarrierReduce(*fn, lds, waveSize);
    } else if (name == "__rocuda_named_barrier") {
      defineNamedBarrier(*fn, lds);
    } else if (name == "__rocuda_named_reduce_arrive") {
      defineNamedReduceArrive(*fn, lds);
    } else if (name == "__rocuda_named_reduce_result") {
      defineNamedReduceResult(*fn, lds);
    } else if (name == "__rocuda_shared_base") {
      defineSharedBase(*fn, lds);
    } else if (name == "__rocuda_trap") {
      defineTrap(*fn);
    } else if (name == "__rocuda_is_shared") {
      defineApertureQuery(*fn, llvm::Intrinsic::amdgcn_is_shared);
    } else if (name == "__rocuda_is_local") {
      defineApertureQuery(*fn, llvm::Intrinsic::amdgcn_is_private);
    } else if (name == "__rocuda_mbarrier_wait") {
      defineMBarrierTest(*fn);
    } else if (name == "tanhf" && fn->getReturnType()->isFloatTy() && fn->arg_size() == 1) {
      defineApproxTanh(*fn);
    } else if (lastErrors != nullptr && defineDeviceLaunchFunction(*fn, lastErrors, info)) {
      continue;
    } else if (defineGraphSetConditional(*fn)) {
      continue;
    } else if (!defineDeviceMalloc(*fn) && !defineWarpCollective(*fn, waveSize)) {
      unsupported.insert(name);
    }
  }
  if (unsupported.empty()) return Status::success();
  std::string list;
  for (const auto& name : unsupported) list += (list.empty() ? "" : ", ") + name;
  return makeError(ErrorCode::UnsupportedPtx,
                   "the AMD GPU backend cannot lower these functions yet: " + list);
}

}  // namespace rocuda::compiler::amdgpu
