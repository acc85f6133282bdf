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

llvm::Value* laneId(Builder& b) {
  // mbcnt with an all-ones mask counts the lanes below this one in the wavefront; CUDA's lane is
  // that modulo 32 (a wave64 holds two CUDA warps).
  llvm::Value* lo =
      b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_lo, {}, {b.getInt32(-1), b.getInt32(0)});
  llvm::Value* all = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_hi, {}, {b.getInt32(-1), lo});
  return b.CreateAnd(all, 31);
}

// The value of special register `name` (without "__rocuda_sreg_"), or nullptr if unsupported.
llvm::Value* specialRegister(Builder& b, const std::string& name) {
  static const char* const kDims = "xyz";
  for (int d = 0; d < 3; ++d) {
    std::string suffix = std::string("_") + kDims[d];
    if (name == "tid" + suffix) {
      static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::amdgcn_workitem_id_x,
                                                llvm::Intrinsic::amdgcn_workitem_id_y,
                                                llvm::Intrinsic::amdgcn_workitem_id_z};
      return b.CreateIntrinsic(ids[d], {}, {});
    }
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
  if (name == "laneid") return laneId(b);
  llvm::Value* one = b.getInt32(1);
  if (name == "lanemask_eq") return b.CreateShl(one, laneId(b));
  if (name == "lanemask_lt") return b.CreateSub(b.CreateShl(one, laneId(b)), one);
  if (name == "lanemask_le") return b.CreateSub(b.CreateShl(b.CreateShl(one, laneId(b)), one), one);
  if (name == "lanemask_ge") return b.CreateShl(b.getInt32(-1), laneId(b));
  if (name == "lanemask_gt") return b.CreateShl(b.CreateShl(b.getInt32(-1), laneId(b)), one);
  // %envreg<n>: no launch on AMD GPUs is cooperative yet, so there is no grid workspace to
  // point at (%envreg1/%envreg2); a null one makes grid_group::is_valid() false, as for an
  // ordinary launch on NVIDIA's driver.
  if (name.rfind("envreg", 0) == 0) return b.getInt32(0);
  return nullptr;
}

// Turn a runtime declaration into an internal always-inline definition; returns its builder.
Builder defineRuntime(llvm::Function& fn) {
  fn.setLinkage(llvm::GlobalValue::InternalLinkage);
  fn.addFnAttr(llvm::Attribute::AlwaysInline);
  return Builder(llvm::BasicBlock::Create(fn.getContext(), "entry", &fn));
}

void defineBarrier(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  // bar.sync orders shared and global memory among the block's threads: release before the
  // hardware barrier, acquire after it, both at work-group scope.
  b.CreateFence(llvm::AtomicOrdering::Release, b.getContext().getOrInsertSyncScopeID("workgroup"));
  b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
  b.CreateFence(llvm::AtomicOrdering::Acquire, b.getContext().getOrInsertSyncScopeID("workgroup"));
  b.CreateRetVoid();
}

// s_barrier synchronises the whole work-group: only `bar.sync 0` (all threads) maps to it.
Status checkBarrierCalls(llvm::Function& fn) {
  for (llvm::User* user : fn.users()) {
    auto* call = llvm::dyn_cast<llvm::CallBase>(user);
    if (!call) continue;
    auto* id = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(0));
    auto* threads = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(1));
    if (!id || !threads || !id->isZero() || !threads->isZero())
      return makeError(ErrorCode::UnsupportedPtx,
                       "the AMD GPU backend supports only whole-block barriers (bar.sync 0), "
                       "not named or partial ones, in '" +
                           call->getFunction()->getName().str() + "'");
  }
  return Status::success();
}

// All kernels' shared windows start at LDS address 0, so one window object serves the whole
// module (functions called from several kernels use the same offsets). It is sized for the
// largest window; dynamic shared memory, which HIP allocates right after the kernel's static
// LDS, starts at or before its end.
void defineSharedBase(llvm::Function& fn, const ModuleInfo& info) {
  uint64_t window = 0;
  for (const auto& k : info.kernels)
    window = std::max<uint64_t>({window, k.staticSharedBytes, k.dynamicSharedOffset});
  llvm::Module& module = *fn.getParent();
  auto* i8 = llvm::Type::getInt8Ty(module.getContext());
  llvm::GlobalVariable* lds;
  if (window > 0) {
    auto* type = llvm::ArrayType::get(i8, window);
    lds = new llvm::GlobalVariable(module, type, false, llvm::GlobalValue::InternalLinkage,
                                   llvm::UndefValue::get(type), "__rocuda_shared_window", nullptr,
                                   llvm::GlobalValue::NotThreadLocal, kLocalAS);
  } else {
    // Only dynamic shared memory: an external zero-sized LDS array, as HIP declares it.
    lds = new llvm::GlobalVariable(
        module, llvm::ArrayType::get(i8, 0), false, llvm::GlobalValue::ExternalLinkage, nullptr,
        "__rocuda_dynamic_shared", nullptr, llvm::GlobalValue::NotThreadLocal, kLocalAS);
  }
  lds->setAlignment(llvm::Align(16));
  Builder b = defineRuntime(fn);
  b.CreateRet(b.CreateAddrSpaceCast(lds, fn.getReturnType()));
}

void defineTrap(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  b.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
  b.CreateUnreachable();
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

Status lowerDeviceRuntime(llvm::Module& module, const ModuleInfo& info) {
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
    if (fn->use_empty()) continue;
    if (name.rfind("__rocuda_sreg_", 0) == 0) {
      std::string reg = name.substr(14);
      // Every supported register is an i32 that does not change during the thread's life.
      if (!fn->getReturnType()->isIntegerTy(32) || fn->arg_size() != 0) {
        unsupported.insert(name);
        continue;
      }
      llvm::BasicBlock* entry = llvm::BasicBlock::Create(module.getContext(), "entry", fn);
      Builder b(entry);
      llvm::Value* value = specialRegister(b, reg);
      if (!value) {
        entry->eraseFromParent();
        unsupported.insert(name);
        continue;
      }
      b.CreateRet(value);
      fn->setLinkage(llvm::GlobalValue::InternalLinkage);
      fn->addFnAttr(llvm::Attribute::AlwaysInline);
    } else if (name == "__rocuda_barrier_sync") {
      ROCUDA_TRY(checkBarrierCalls(*fn));
      defineBarrier(*fn);
    } else if (name == "__rocuda_shared_base") {
      defineSharedBase(*fn, info);
    } else if (name == "__rocuda_trap") {
      defineTrap(*fn);
    } else {
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
