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

// The thread's index in its block, x fastest (CUDA's and the wavefronts' order).
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

// The module's grid workspace pointer (amdgpu_codegen.h), made at its first use.
llvm::GlobalVariable* gridWorkspace(llvm::Module& module) {
  if (llvm::GlobalVariable* existing = module.getGlobalVariable(kAmdgpuGridWorkspaceSymbol))
    return existing;
  return protectedGlobal(module,
                         llvm::ConstantInt::get(llvm::Type::getInt64Ty(module.getContext()), 0),
                         kAmdgpuGridWorkspaceSymbol, /*constant=*/false);
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
  // %envreg1 / %envreg2: the halves of the grid workspace's address, from the module's
  // kAmdgpuGridWorkspaceSymbol, which the host sets for each launch; the other %envreg<n> are 0.
  if (name == "envreg1" || name == "envreg2") {
    llvm::Value* workspace =
        b.CreateLoad(b.getInt64Ty(), gridWorkspace(*b.GetInsertBlock()->getModule()));
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

// s_barrier synchronises the whole work-group: only barrier 0 for all threads maps to it.
// `idArg` and `threadsArg` are the positions of the barrier id and thread count in `fn`'s calls.
Status checkBarrierCalls(llvm::Function& fn, unsigned idArg, unsigned threadsArg) {
  for (llvm::User* user : fn.users()) {
    auto* call = llvm::dyn_cast<llvm::CallBase>(user);
    if (!call) continue;
    auto* id = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(idArg));
    auto* threads = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(threadsArg));
    if (!id || !threads || !id->isZero() || !threads->isZero())
      return makeError(ErrorCode::UnsupportedPtx,
                       "the AMD GPU backend supports only whole-block barriers (barrier 0 for "
                       "all threads), not named or partial ones, in '" +
                           call->getFunction()->getName().str() + "'");
  }
  return Status::success();
}

// The module's one LDS object. All kernels' shared windows start at the same LDS address, so one
// window serves the whole module (functions called from several kernels use the same offsets).
// It is sized for the largest window; dynamic shared memory, which HIP allocates right after the
// kernel's static LDS, starts at or before its end. A prefix before the window holds the barrier
// reductions' counter (its first word) and the launch registers (AmdgpuLaunchRegisters, at
// kLaunchRegistersOffset): 16 or 32 bytes, or the window's alignment (module flag
// kSharedWindowAlignmentFlag) if larger, so that `.align 256` variables stay aligned.
struct Lds {
  llvm::GlobalVariable* object = nullptr;
  uint64_t windowOffset = 0;  // where the CUDA shared window starts in `object`
};

constexpr uint64_t kReductionPrefix = 16;
constexpr uint64_t kLaunchRegistersOffset = 16;

Lds createLds(llvm::Module& module, const ModuleInfo& info, bool reductionCounter,
              bool launchRegisters) {
  uint64_t window = 0;
  for (const auto& k : info.kernels)
    window = std::max<uint64_t>({window, k.staticSharedBytes, k.dynamicSharedOffset});
  uint64_t alignment = kReductionPrefix;
  if (auto* flag = llvm::mdconst::extract_or_null<llvm::ConstantInt>(
          module.getModuleFlag(detail::kSharedWindowAlignmentFlag)))
    alignment = std::max<uint64_t>(alignment, flag->getZExtValue());
  uint64_t prefix = launchRegisters    ? kLaunchRegistersOffset + sizeof(AmdgpuLaunchRegisters)
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
// every thread copies the same 16 bytes into the LDS prefix, where its own reads then find them.
void defineSetLaunchRegisters(llvm::Function& fn, const Lds& lds) {
  Builder b = defineRuntime(fn);
  llvm::Value* slot =
      b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), lds.object, kLaunchRegistersOffset);
  b.CreateMemCpy(slot, llvm::Align(4), fn.getArg(0), llvm::Align(4), sizeof(AmdgpuLaunchRegisters));
  b.CreateRetVoid();
}

// A launch register (`index` in AmdgpuLaunchRegisters), as the kernel stored it.
void defineLaunchRegister(llvm::Function& fn, const Lds& lds, unsigned index) {
  Builder b = defineRuntime(fn);
  llvm::Value* slot =
      b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), lds.object, kLaunchRegistersOffset + 4 * index);
  b.CreateRet(b.CreateAlignedLoad(b.getInt32Ty(), slot, llvm::Align(4)));
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

// Intrinsics whose f64 (or other) forms the AMDGPU back end would turn into library calls.
bool needsLibraryCall(const llvm::Function& fn) {
  switch (fn.getIntrinsicID()) {
    case llvm::Intrinsic::sin:
    case llvm::Intrinsic::cos:
    case llvm::Intrinsic::exp:
    case llvm::Intrinsic::exp2:
    case llvm::Intrinsic::log:
    case llvm::Intrinsic::log2:
    case llvm::Intrinsic::pow:
      return !fn.getReturnType()->getScalarType()->isFloatTy();
    default:
      return false;
  }
}

}  // namespace

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
  Lds lds;
  if (reduces || launchRegisters || used("__rocuda_shared_base"))
    lds = createLds(module, info, reduces, launchRegisters);

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
    } else if (!defineWarpCollective(*fn, waveSize)) {
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
