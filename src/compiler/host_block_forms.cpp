// Block forms of kernels for the CPU device (the contract is in compiler.h). A kernel that never
// waits for other threads becomes a work-item loop over the block's threads, which the loop
// vectorizer can widen across threads. A kernel that waits at barriers or warp collectives
// becomes a resumable step function: each wait is a return point, and the values live across a
// wait (and the thread's local memory) move to a per-thread frame, so that the runtime can run
// every thread of the block up to its next wait, release the waits, and go on, without a
// context switch. Only where neither form can be built (a wait inside a function that was not
// inlined, a dynamically sized stack allocation in a waiting kernel) does a kernel stay a
// per-thread entry, run on fibers, with the reason recorded for the log.
#include <llvm/ADT/BitVector.h>
#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/PostOrderIterator.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Analysis/ConstantFolding.h>
#include <llvm/Analysis/CycleAnalysis.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/TargetTransformInfoImpl.h>
#include <llvm/Analysis/UniformityAnalysis.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/ConstantRange.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Utils/SSAUpdater.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/host_codegen.h"

namespace rocuda::compiler::detail {
namespace {

// How a continuation's step reports a wait (compiler.h): (resume point << 2) | kind.
enum class WaitKind : uint32_t { Finished = 0, Barrier = 1, BarrierReduce = 2, Warp = 3 };

// WarpLanes' arrays, in compiler.h's order.
enum LaneField : unsigned {
  kLaneValue,
  kLaneResult,
  kLaneValueHigh,
  kLaneResultHigh,
  kLaneOp,
  kLaneMode,
  kLaneB,
  kLaneC,
  kLaneMask,
  kLaneFields
};
static_assert(sizeof(WarpLanes) == kLaneFields * sizeof(void*), "one LaneField per array");

// Every function at which a thread waits for others (host_codegen.h).
const std::vector<std::string>& waitingFunctions() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> names = kBarrierFunctions;
    names.insert(names.end(), kWarpCollectiveFunctions.begin(), kWarpCollectiveFunctions.end());
    return names;
  }();
  return all;
}

bool isWaitingFunction(const llvm::Function* f) {
  if (f == nullptr) return false;
  for (const std::string& name : waitingFunctions())
    if (f->getName() == name) return true;
  return false;
}

llvm::StructType* blockContextType(llvm::LLVMContext& c) {
  auto* i32 = llvm::Type::getInt32Ty(c);
  auto* dim = llvm::ArrayType::get(i32, 3);
  auto* ptr = llvm::PointerType::getUnqual(c);
  auto* lanes = llvm::ArrayType::get(ptr, kLaneFields);  // WarpLanes' arrays
  return llvm::StructType::get(c, {dim, dim, dim, i32, ptr, ptr, ptr, ptr, lanes, i32});
}

// The values a thread form of the kernel computes its identity from.
struct ThreadValues {
  llvm::Value* params;
  llvm::Value* context;
  llvm::Value* linear;
  std::array<llvm::Value*, 3> tid;
};

}  // namespace

llvm::Value* loadContext(llvm::IRBuilder<>& b, llvm::Value* context, ContextField field,
                         int element) {
  llvm::StructType* type = blockContextType(b.getContext());
  llvm::Value* address = element < 0 ? b.CreateStructGEP(type, context, field)
                                      : b.CreateConstInBoundsGEP2_32(
                                            type->getElementType(field),
                                            b.CreateStructGEP(type, context, field), 0, element);
  llvm::Type* valueType =
      element < 0 ? type->getElementType(field) : llvm::Type::getInt32Ty(b.getContext());
  auto* load = b.CreateLoad(valueType, address);
  // The context does not change while the block runs: loads may be hoisted out of the loops.
  load->setMetadata(llvm::LLVMContext::MD_invariant_load,
                    llvm::MDNode::get(b.getContext(), {}));
  // The CPU device's limits (compiler.h), which let scalar evolution see that index arithmetic
  // on thread and block indices does not wrap.
  auto range = [&](uint32_t low, uint32_t high) {
    load->setMetadata(llvm::LLVMContext::MD_range,
                      llvm::MDBuilder(b.getContext())
                          .createRange(llvm::APInt(32, low), llvm::APInt(32, high)));
  };
  if (field == kThreadCount) range(1, kMaxThreadsPerBlock + 1);
  if (element < 0) return load;
  if (field == kNtid) range(1, kMaxBlockDim[element] + 1);
  if (field == kCtaid) range(0, kMaxGridDim[element]);
  if (field == kNctaid) range(1, kMaxGridDim[element] + 1);
  return load;
}

namespace {

// The argument `load` reads at a constant offset from (`offset`), or null.
const llvm::Argument* argumentAtOffset(const llvm::LoadInst& load, llvm::APInt& offset) {
  offset = llvm::APInt(64, 0);
  return llvm::dyn_cast<llvm::Argument>(load.getPointerOperand()->stripAndAccumulateConstantOffsets(
      load.getModule()->getDataLayout(), offset, true));
}

// Where the block context holds `field`.
uint64_t contextFieldOffset(llvm::LLVMContext& c, const llvm::Module& m, ContextField field) {
  return m.getDataLayout().getStructLayout(blockContextType(c))->getElementOffset(field);
}

}  // namespace

bool readsContextField(const llvm::LoadInst& load, ContextField field, int element) {
  llvm::APInt offset;
  const llvm::Argument* context = argumentAtOffset(load, offset);
  if (context == nullptr || context->getArgNo() != 1) return false;
  uint64_t at = contextFieldOffset(load.getContext(), *load.getModule(), field);
  return offset == at + (element < 0 ? 0 : 4 * uint64_t(element));
}

namespace {

// %envreg<n>: registers the driver sets for the launch. %envreg1 (high half) and %envreg2 (low
// half) hold the address of a cooperative launch's grid workspace, which cooperative groups'
// grid.sync() uses (cuda's cooperative_groups/details/driver_abi.h); every other is 0 here.
llvm::Value* envreg(llvm::IRBuilder<>& b, std::string_view index, const ThreadValues& v) {
  if (index != "1" && index != "2") return b.getInt32(0);
  llvm::Value* address =
      b.CreatePtrToInt(loadContext(b, v.context, kGridWorkspace), b.getInt64Ty());
  if (index == "1") address = b.CreateLShr(address, 32);
  return b.CreateTrunc(address, b.getInt32Ty());
}

// The value of special register `name` (without the __rocuda_sreg_ prefix), or nullptr when
// only the runtime knows it (clocks, grid id, shared-memory sizes...).
llvm::Value* threadQuery(llvm::IRBuilder<>& b, std::string_view name, const ThreadValues& v) {
  static constexpr std::array<std::string_view, 3> axes = {"x", "y", "z"};
  for (int axis = 0; axis < 3; ++axis) {
    std::string suffix = "_" + std::string(axes[axis]);
    if (name == "tid" + suffix) return v.tid[axis];
    if (name == "ntid" + suffix) return loadContext(b, v.context, kNtid, axis);
    if (name == "ctaid" + suffix) return loadContext(b, v.context, kCtaid, axis);
    if (name == "nctaid" + suffix) return loadContext(b, v.context, kNctaid, axis);
  }
  llvm::Value* lane = b.CreateAnd(v.linear, 31);
  llvm::Value* ones = b.getInt32(0xffffffffu);
  if (name == "laneid") return lane;
  if (name == "warpid") return b.CreateLShr(v.linear, 5);
  if (name == "lanemask_eq") return b.CreateShl(b.getInt32(1), lane);
  if (name == "lanemask_lt") return b.CreateSub(b.CreateShl(b.getInt32(1), lane), b.getInt32(1));
  // 2 << 31 wraps to 0, and 0 - 1 is the full mask lane 31 needs.
  if (name == "lanemask_le") return b.CreateSub(b.CreateShl(b.getInt32(2), lane), b.getInt32(1));
  if (name == "lanemask_ge") return b.CreateShl(ones, lane);
  if (name == "lanemask_gt") return b.CreateShl(b.CreateShl(ones, lane), 1);
  if (name.starts_with("envreg")) return envreg(b, name.substr(6), v);
  return nullptr;
}

// Replace the special-register and shared-base calls `f` makes itself by values computed from
// its arguments and the block context.
void replaceThreadQueries(llvm::Function& f, const ThreadValues& v) {
  std::vector<llvm::CallInst*> calls;
  for (auto& block : f)
    for (auto& inst : block)
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst))
        if (llvm::Function* callee = call->getCalledFunction();
            callee && callee->getName().starts_with("__rocuda_"))
          calls.push_back(call);
  for (llvm::CallInst* call : calls) {
    llvm::StringRef name = call->getCalledFunction()->getName();
    llvm::IRBuilder<> b(call);
    llvm::Value* value = nullptr;
    if (name == "__rocuda_shared_base")
      value = loadContext(b, v.context, kShared);
    else if (name.consume_front("__rocuda_sreg_"))
      value = threadQuery(b, std::string_view(name.data(), name.size()), v);
    if (value == nullptr) continue;
    call->replaceAllUsesWith(value);
    call->eraseFromParent();
  }
}

// Move `kernel`'s body into a new internal function of `type` whose first argument takes the
// place of the kernel's parameter pointer; `kernel` is left a body-less declaration.
llvm::Function* moveBody(llvm::Function& kernel, llvm::FunctionType* type,
                         const std::string& name) {
  auto* f = llvm::Function::Create(type, llvm::GlobalValue::InternalLinkage, name,
                                   kernel.getParent());
  for (const llvm::Attribute& attribute : kernel.getAttributes().getFnAttrs())
    f->addFnAttr(attribute);
  f->splice(f->end(), &kernel);
  kernel.getArg(0)->replaceAllUsesWith(f->getArg(0));
  return f;
}

// The arguments every block form takes: the kernel parameter buffer is a private copy the
// kernel only reads, all of it present, so its loads may be hoisted out of the work-item loops
// even from conditional code. (Not noalias on the thread form and the step: inlined into the
// loops, that adds scope markers, which cost a loop its parallel annotation.)
void markLaunchArguments(llvm::Function& f, const KernelInfo& info, bool noAlias = true) {
  // The block context is all present too: its invariant loads (the shared-memory base, the
  // block's extent) leave the loops even where only some threads reach them, so that a round's
  // `if (tid < s) shared[tid] += ...` widens to contiguous vectors, not gathers of the base.
  f.addDereferenceableParamAttr(1, sizeof(BlockContext));
  f.addParamAttr(
      1, llvm::Attribute::getWithAlignment(f.getContext(), llvm::Align(alignof(BlockContext))));
  if (noAlias) f.addParamAttr(0, llvm::Attribute::NoAlias);
  f.addParamAttr(0, llvm::Attribute::ReadOnly);
  f.addParamAttr(0, llvm::Attribute::NoCapture);
  if (info.paramBufferSize == 0) return;
  f.addDereferenceableParamAttr(0, info.paramBufferSize);
  // The core packs parameters in heap buffers (16-byte aligned) at their declared alignment.
  uint32_t alignment = 1;
  for (const KernelParamInfo& param : info.params)
    alignment = std::min(16u, std::max(alignment, param.alignment));
  f.addParamAttr(0, llvm::Attribute::getWithAlignment(f.getContext(), llvm::Align(alignment)));
}

ThreadValues threadValuesOf(llvm::Function& f) {
  return {f.getArg(0), f.getArg(1), f.getArg(2), {f.getArg(3), f.getArg(4), f.getArg(5)}};
}

// Calls that need the runtime to know the calling thread (runtime functions that read it,
// functions of the module that were not inlined and read special registers through it).
bool needsThreadIdentity(const llvm::CallBase& call) {
  const llvm::Function* callee = call.getCalledFunction();
  if (callee == nullptr) return true;  // indirect: may reach any function
  if (callee->isIntrinsic() || isWaitingFunction(callee)) return false;  // waits become returns
  if (!callee->isDeclaration()) return true;
  llvm::StringRef name = callee->getName();
  // Functions that are told the thread (waits, clocks) need no announcement.
  if (name.starts_with("__rocuda_suspend_") || name.starts_with("__rocuda_resume_") ||
      name.starts_with("__rocuda_sreg_clock") || name == "__rocuda_sreg_globaltimer" ||
      name == "__rocuda_enter_thread" || name == "__rocuda_spin_poll")
    return false;
  // The device runtime's calls keep each thread's last error (CUDA's, per thread).
  return name.starts_with("__rocuda_") || name == "__assertfail" ||
         name.starts_with("__cudaCDP2") || name.starts_with("__cuda_syscall_cnpv2") ||
         name.starts_with("cudaEventRecordWithFlags");
}

void announceThreadBeforeCalls(llvm::Function& f, const ThreadValues& v) {
  llvm::Module& m = *f.getParent();
  auto* ptr = llvm::PointerType::getUnqual(m.getContext());
  llvm::FunctionCallee enter = m.getOrInsertFunction(
      "__rocuda_enter_thread", llvm::Type::getVoidTy(m.getContext()), ptr,
      llvm::Type::getInt32Ty(m.getContext()));
  std::vector<llvm::CallBase*> calls;
  for (auto& block : f)
    for (auto& inst : block)
      if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst); call && needsThreadIdentity(*call))
        calls.push_back(call);
  for (llvm::CallBase* call : calls) llvm::IRBuilder<>(call).CreateCall(enter, {v.context, v.linear});
}

// Mark `latch`'s loop as running threads whose accesses in group `accesses` have no order
// between them (llvm.loop.parallel_accesses), widened one vector per iteration, not interleaved:
// such loops run a block's threads (often 32 to 256, fewer in a reduction tree's rounds), and
// interleaving four vectors sent the shorter loops to the scalar remainder (bench/cpu_device:
// vector add 1.40-1.57x PoCL's time interleaved, 1.11-1.22x not; the shared-memory reduction
// 0.62x and 0.55x). `workItems`: a loop over a block's threads in x (kWorkItemLoopMarker).
void markParallelLoop(llvm::Instruction* latch, llvm::MDNode* accesses, bool workItems) {
  llvm::LLVMContext& c = latch->getContext();
  llvm::SmallVector<llvm::Metadata*, 4> options;
  llvm::TempMDTuple self = llvm::MDNode::getTemporary(c, {});
  options.push_back(self.get());
  options.push_back(
      llvm::MDNode::get(c, {llvm::MDString::get(c, "llvm.loop.parallel_accesses"), accesses}));
  options.push_back(llvm::MDNode::get(
      c, {llvm::MDString::get(c, "llvm.loop.interleave.count"),
          llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(llvm::Type::getInt32Ty(c), 1))}));
  if (workItems)
    options.push_back(llvm::MDNode::get(c, {llvm::MDString::get(c, kWorkItemLoopMarker)}));
  llvm::MDNode* loop = llvm::MDNode::getDistinct(c, options);
  loop->replaceOperandWith(0, loop);
  latch->setMetadata(llvm::LLVMContext::MD_loop, loop);
}

using ThreadLoopBody = std::function<void(llvm::IRBuilder<>& b, llvm::Value* linear,
                                           llvm::Value* x, llvm::Value* y, llvm::Value* z)>;

// Emit into `fn` a loop over every thread of the block, x fastest, running `body` for each; it
// is entered at the returned block and leaves to `exit`. `extent` is the block's size, loaded
// where it dominates the loop.
llvm::BasicBlock* emitThreadLoop(llvm::Function* fn, const std::array<llvm::Value*, 3>& extent,
                                 llvm::BasicBlock* exit, const ThreadLoopBody& body) {
  llvm::LLVMContext& c = fn->getContext();
  auto block = [&](const char* label) { return llvm::BasicBlock::Create(c, label, fn, exit); };
  llvm::BasicBlock *start = block("threads"), *zLoop = block("z"), *yLoop = block("y"),
                   *xLoop = block("x"), *yLatch = block("y.next"), *zLatch = block("z.next");
  llvm::IRBuilder<> b(start);
  b.CreateBr(zLoop);
  b.SetInsertPoint(zLoop);
  llvm::PHINode* z = b.CreatePHI(b.getInt32Ty(), 2, "tid.z");
  b.CreateBr(yLoop);
  b.SetInsertPoint(yLoop);
  llvm::PHINode* y = b.CreatePHI(b.getInt32Ty(), 2, "tid.y");
  llvm::Value* rowStart =
      b.CreateNUWMul(b.CreateNUWAdd(b.CreateNUWMul(z, extent[1]), y), extent[0]);
  b.CreateBr(xLoop);
  b.SetInsertPoint(xLoop);
  llvm::PHINode* x = b.CreatePHI(b.getInt32Ty(), 2, "tid.x");
  body(b, b.CreateNUWAdd(rowStart, x), x, y, z);
  // The threads of a block run concurrently between waits: CUDA gives one thread's plain
  // accesses no order against another's (a conflict would be a data race), so the iterations
  // of the x loop are parallel. Saying so lets the vectorizer widen the loop without proving
  // that shared and global accesses of different threads do not overlap. Inlining passes the
  // access group of the body's calls on to their memory accesses; atomic and volatile ones
  // keep their order, since the vectorizer leaves loops holding them alone.
  // (A body's own accumulators, stack slots of `fn`, are loop-carried: not part of the group.)
  llvm::MDNode* accesses = llvm::MDNode::getDistinct(c, {});
  auto accumulates = [](llvm::Instruction& inst) {
    llvm::Value* address = llvm::getLoadStorePointerOperand(&inst);
    return address != nullptr && llvm::isa<llvm::AllocaInst>(llvm::getUnderlyingObject(address));
  };
  for (llvm::Instruction& inst : *b.GetInsertBlock())
    if (inst.mayReadOrWriteMemory() && !accumulates(inst))
      inst.setMetadata(llvm::LLVMContext::MD_access_group, accesses);
  llvm::Value* nextX = b.CreateNUWAdd(x, b.getInt32(1));
  markParallelLoop(b.CreateCondBr(b.CreateICmpULT(nextX, extent[0]), xLoop, yLatch), accesses,
                   /*workItems=*/true);
  llvm::BasicBlock* xEnd = b.GetInsertBlock();
  b.SetInsertPoint(yLatch);
  llvm::Value* nextY = b.CreateNUWAdd(y, b.getInt32(1));
  b.CreateCondBr(b.CreateICmpULT(nextY, extent[1]), yLoop, zLatch);
  b.SetInsertPoint(zLatch);
  llvm::Value* nextZ = b.CreateNUWAdd(z, b.getInt32(1));
  b.CreateCondBr(b.CreateICmpULT(nextZ, extent[2]), zLoop, exit);

  z->addIncoming(b.getInt32(0), start);
  z->addIncoming(nextZ, zLatch);
  y->addIncoming(b.getInt32(0), zLoop);
  y->addIncoming(nextY, yLatch);
  x->addIncoming(b.getInt32(0), yLoop);
  x->addIncoming(nextX, xEnd);
  return start;
}

std::array<llvm::Value*, 3> loadBlockExtent(llvm::IRBuilder<>& b, llvm::Value* context) {
  return {loadContext(b, context, kNtid, 0), loadContext(b, context, kNtid, 1),
          loadContext(b, context, kNtid, 2)};
}

// `void __rocuda_block_<K>(ptr params, ptr context)`: every thread of the block in turn, each an
// inlined call of the thread form.
void buildBlockLoop(llvm::Function& threadForm, const KernelInfo& info) {
  llvm::Module& m = *threadForm.getParent();
  llvm::LLVMContext& c = m.getContext();
  auto* ptr = llvm::PointerType::getUnqual(c);
  auto* fn = llvm::Function::Create(
      llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr, ptr}, false),
      llvm::GlobalValue::ExternalLinkage, blockLoopSymbol(info.name), m);
  markLaunchArguments(*fn, info);
  llvm::Value* params = fn->getArg(0);
  llvm::Value* context = fn->getArg(1);
  auto* entry = llvm::BasicBlock::Create(c, "entry", fn);
  auto* exit = llvm::BasicBlock::Create(c, "exit", fn);
  llvm::IRBuilder<> b(entry);
  std::array<llvm::Value*, 3> extent = loadBlockExtent(b, context);
  b.CreateBr(emitThreadLoop(fn, extent, exit,
                            [&](llvm::IRBuilder<>& body, llvm::Value* linear, llvm::Value* x,
                                llvm::Value* y, llvm::Value* z) {
                              body.CreateCall(&threadForm, {params, context, linear, x, y, z});
                            }));
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
}

// ---- Continuations ----

struct WaitPoint {
  llvm::BasicBlock* suspend;  // ends with the announcement of the wait, then returns
  llvm::BasicBlock* resume;   // where the thread goes on
  WaitKind kind;
  WarpWaitSite site;  // a warp collective's op and constant operands
};

llvm::FunctionCallee runtimeFunction(llvm::Module& m, const char* name, llvm::Type* result,
                                     llvm::ArrayRef<llvm::Type*> params) {
  llvm::FunctionCallee callee =
      m.getOrInsertFunction(name, llvm::FunctionType::get(result, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) f->setDoesNotThrow();
  return callee;
}

// ---- Warp collectives in continuations (WarpLanes in compiler.h) ----

// The WarpLanes array `field` (every entry is 32 bits wide). The arrays stay put while a round
// runs, and their addresses are in the context, an argument that is always dereferenceable: their
// loads leave the rounds' loops even from conditional code.
// Where the block context holds the WarpLanes array `field`.
llvm::Value* laneArrayField(llvm::IRBuilder<>& b, llvm::Value* context, LaneField field) {
  llvm::StructType* type = blockContextType(b.getContext());
  return b.CreateConstInBoundsGEP2_32(type->getElementType(kWarpLanes),
                                      b.CreateStructGEP(type, context, kWarpLanes), 0, field);
}

llvm::Value* laneArray(llvm::IRBuilder<>& b, const ThreadValues& v, LaneField field) {
  auto* array = b.CreateLoad(b.getPtrTy(), laneArrayField(b, v.context, field));
  array->setMetadata(llvm::LLVMContext::MD_invariant_load, llvm::MDNode::get(b.getContext(), {}));
  return array;
}

// Entry `index` of the WarpLanes array `field`.
llvm::Value* laneEntry(llvm::IRBuilder<>& b, const ThreadValues& v, LaneField field,
                       llvm::Value* index) {
  return b.CreateInBoundsGEP(b.getInt32Ty(), laneArray(b, v, field),
                             b.CreateZExt(index, b.getInt64Ty()));
}

// The thread's 64-bit result from its two halves.
llvm::Value* wideResult(llvm::IRBuilder<>& b, const ThreadValues& v) {
  llvm::Value* low = b.CreateLoad(b.getInt32Ty(), laneEntry(b, v, kLaneResult, v.linear));
  llvm::Value* high = b.CreateLoad(b.getInt32Ty(), laneEntry(b, v, kLaneResultHigh, v.linear));
  return b.CreateOr(b.CreateZExt(low, b.getInt64Ty()),
                    b.CreateShl(b.CreateZExt(high, b.getInt64Ty()), 32));
}

// An operand the resuming thread needs again: a constant as it is, else reloaded from the
// thread's own entry (no value has to live across the wait).
llvm::Value* operandAgain(llvm::IRBuilder<>& b, const ThreadValues& v, llvm::Value* operand,
                          LaneField field) {
  if (llvm::isa<llvm::Constant>(operand)) return operand;
  return b.CreateLoad(b.getInt32Ty(), laneEntry(b, v, field, v.linear));
}

// shfl's result for the resuming lane: the source lane as the PTX ISA's pseudo-code computes it
// (c packs the clamp in bits 0..4 and the segment mask in bits 8..12), that lane's snapshot, and
// the in-range predicate in bit 32 (the encoding of __rocuda_shfl_sync).
llvm::Value* shuffleResult(llvm::IRBuilder<>& b, const ThreadValues& v, llvm::Value* mode,
                           llvm::Value* bOperand, llvm::Value* cOperand) {
  llvm::Value* lane = b.CreateAnd(v.linear, 31);
  llvm::Value* bval = b.CreateAnd(bOperand, 31);
  llvm::Value* clamp = b.CreateAnd(cOperand, 31);
  llvm::Value* segmask = b.CreateAnd(b.CreateLShr(cOperand, 8), 31);
  llvm::Value* notSeg = b.CreateNot(segmask);
  llvm::Value* minLane = b.CreateAnd(lane, segmask);
  llvm::Value* maxLane = b.CreateOr(minLane, b.CreateAnd(clamp, notSeg));
  auto isMode = [&](int m) { return b.CreateICmpEQ(mode, b.getInt32(m)); };
  llvm::Value* source = b.CreateSelect(
      isMode(0), b.CreateSub(lane, bval),
      b.CreateSelect(isMode(1), b.CreateAdd(lane, bval),
                     b.CreateSelect(isMode(2), b.CreateXor(lane, bval),
                                    b.CreateOr(minLane, b.CreateAnd(bval, notSeg)))));
  llvm::Value* inRange = b.CreateSelect(isMode(0), b.CreateICmpSGE(source, maxLane),
                                        b.CreateICmpSLE(source, maxLane));
  source = b.CreateSelect(inRange, source, lane);
  llvm::Value* from = b.CreateAdd(b.CreateSub(v.linear, lane), source);
  llvm::Value* threadCount = loadContext(b, v.context, kThreadCount);
  llvm::Value* inBlock = b.CreateICmpULT(from, threadCount);
  llvm::Value* snapshot;
  auto* constantMode = llvm::dyn_cast<llvm::ConstantInt>(mode);
  auto* constantB = llvm::dyn_cast<llvm::ConstantInt>(bOperand);
  if (constantMode && constantB && constantMode->getZExtValue() <= 1) {
    // Up or down by a constant (scans, reductions): the source lane's entry is at a constant
    // distance, so two loads at affine indices and a select, which the rounds widen into
    // contiguous vectors, instead of a gather. The arrays have kWarpLaneArrayPadding readable
    // entries on either side (compiler.h) for the neighbours outside the block.
    int64_t delta = static_cast<int64_t>(constantB->getZExtValue() & 31);
    if (constantMode->isZero()) delta = -delta;
    llvm::Value* array = laneArray(b, v, kLaneResult);
    llvm::Value* own = b.CreateZExt(v.linear, b.getInt64Ty());
    llvm::Value* neighbour = b.CreateLoad(
        b.getInt32Ty(), b.CreateGEP(b.getInt32Ty(), array, b.CreateAdd(own, b.getInt64(delta))));
    llvm::Value* mine = b.CreateLoad(b.getInt32Ty(), laneEntry(b, v, kLaneResult, v.linear));
    snapshot = b.CreateSelect(b.CreateAnd(inRange, inBlock), neighbour, mine);
  } else {
    from = b.CreateSelect(inBlock, from, v.linear);
    snapshot = b.CreateLoad(b.getInt32Ty(), laneEntry(b, v, kLaneResult, from));
  }
  return b.CreateOr(b.CreateZExt(snapshot, b.getInt64Ty()),
                    b.CreateShl(b.CreateZExt(inRange, b.getInt64Ty()), 32));
}

// Post a collective's operands (WarpLanes): the value always, the others where they are not
// constants of the code; those, and the op, are the wait's `site`'s.
void postOperands(llvm::IRBuilder<>& b, const ThreadValues& v, int op,
                  llvm::ArrayRef<std::pair<LaneField, llvm::Value*>> operands, WarpWaitSite& site) {
  site.op = op;
  for (auto [field, operand] : operands) {
    auto* constant = llvm::dyn_cast<llvm::ConstantInt>(operand);
    if (field == kLaneValue) {  // the low half; the high half only where it is read
      b.CreateStore(b.CreateTrunc(operand, b.getInt32Ty()), laneEntry(b, v, field, v.linear));
      if (postsWideValue(op))
        b.CreateStore(b.CreateTrunc(b.CreateLShr(operand, 32), b.getInt32Ty()),
                      laneEntry(b, v, kLaneValueHigh, v.linear));
      continue;
    }
    if (constant == nullptr) {
      b.CreateStore(operand, laneEntry(b, v, field, v.linear));
      continue;
    }
    auto bits = static_cast<uint32_t>(constant->getZExtValue());
    switch (field) {
      case kLaneMode:
        site.mode = static_cast<int32_t>(bits);
        site.constants |= WarpWaitSite::kMode;
        break;
      case kLaneB:
        site.b = static_cast<int32_t>(bits);
        site.constants |= WarpWaitSite::kB;
        break;
      case kLaneC:
        site.c = static_cast<int32_t>(bits);
        site.constants |= WarpWaitSite::kC;
        break;
      default:
        site.mask = bits;
        site.constants |= WarpWaitSite::kMask;
        break;
    }
  }
}

// A warp collective's wait: post the thread's operands before the wait; on resuming, compute
// (shfl) or read (the others) its result (compiler.h). Returns the result, or nullptr when the
// collective gives none. `site` numbers the wait and receives its op and constant operands.
llvm::Value* postAndCollect(llvm::CallInst* call, const ThreadValues& v, uint32_t siteNumber,
                            WarpWaitSite& site, llvm::IRBuilder<>& before,
                            llvm::IRBuilder<>& after) {
  llvm::StringRef name = call->getCalledFunction()->getName();
  auto arg = [&](unsigned i) { return call->getArgOperand(i); };
  // op numbers as in compiler.h: 0 sync, 1 shfl, 2 vote, 3 redux, 4 match, 5 activemask,
  // 6 mbarrier wait, 7 named barrier, 8 mma, 9 lockstep point, 10 shuffle chain.
  int op = name == kShuffleChainFunction      ? 10
           : name == "__rocuda_warp_sync"     ? 0
           : name == "__rocuda_shfl_sync"     ? 1
           : name == "__rocuda_vote_sync"     ? 2
           : name == "__rocuda_redux_sync"    ? 3
           : name == "__rocuda_match_sync"    ? 4
           : name == "__rocuda_activemask"    ? 5
           : name == "__rocuda_mbarrier_wait" ? 6
           : name == "__rocuda_mma_sync"      ? 8
           : name == kWarpLockstepFunction    ? 9
                                              : 7;
  llvm::Value* zero = before.getInt32(0);
  if (op == 10) {  // the first value; the chain's mode, schedule and op; its last value back
    const std::pair<LaneField, llvm::Value*> posts[] = {
        {kLaneValue, before.CreateZExt(arg(1), before.getInt64Ty())},
        {kLaneMode, arg(2)},
        {kLaneB, arg(3)},
        {kLaneC, arg(0)},
        {kLaneMask, before.getInt32(-1)}};
    postOperands(before, v, op, posts, site);
    return after.CreateLoad(after.getInt32Ty(), laneEntry(after, v, kLaneResult, v.linear));
  }
  if (op == 9) {  // its order, a constant of the code: nothing to post, no result
    const std::pair<LaneField, llvm::Value*> posts[] = {
        {kLaneValue, before.CreateZExt(arg(0), before.getInt64Ty())},
        {kLaneMode, zero},
        {kLaneB, zero},
        {kLaneC, zero},
        {kLaneMask, before.getInt32(-1)}};
    postOperands(before, v, op, posts, site);
    return nullptr;
  }
  if (op == 8) {  // the record, the tile function's halves; the outputs come back in the record
    llvm::Value* tile = before.CreatePtrToInt(arg(0), before.getInt64Ty());
    const std::pair<LaneField, llvm::Value*> posts[] = {
        {kLaneValue, before.CreatePtrToInt(arg(2), before.getInt64Ty())},
        {kLaneMode, zero},
        {kLaneB, before.CreateTrunc(tile, before.getInt32Ty())},
        {kLaneC, before.CreateTrunc(before.CreateLShr(tile, 32), before.getInt32Ty())},
        {kLaneMask, before.getInt32(-1)}};
    postOperands(before, v, op, posts, site);
    return nullptr;
  }
  if (op == 7) {  // the barrier id, the thread count and whether it only arrives
    const std::pair<LaneField, llvm::Value*> posts[] = {
        {kLaneValue, before.CreateZExt(arg(0), before.getInt64Ty())},
        {kLaneMode, arg(2)},
        {kLaneB, arg(1)},
        {kLaneC, zero},
        {kLaneMask, zero}};
    postOperands(before, v, op, posts, site);
    return nullptr;
  }
  if (op == 6) {  // the mbarrier, the state's halves and the parity flag
    llvm::Value* state = arg(1);
    const std::pair<LaneField, llvm::Value*> posts[] = {
        {kLaneValue, before.CreatePtrToInt(arg(0), before.getInt64Ty())},
        {kLaneMode, arg(2)},
        {kLaneB, before.CreateTrunc(state, before.getInt32Ty())},
        {kLaneC, before.CreateTrunc(before.CreateLShr(state, 32), before.getInt32Ty())},
        {kLaneMask, zero}};
    postOperands(before, v, op, posts, site);
    llvm::Value* done =
        after.CreateLoad(after.getInt32Ty(), laneEntry(after, v, kLaneResult, v.linear));
    return after.CreateZExtOrTrunc(done, call->getType());
  }
  llvm::Value* mode = op == 0 || op == 5 ? zero : arg(0);
  llvm::Value* mask = op == 5   ? before.getInt32(-1)
                      : op == 0 ? arg(0)
                      : op == 1 ? arg(4)
                                : arg(2);
  // activemask posts its call site: the lanes waiting at the same one are its answer.
  llvm::Value* value = op == 0   ? before.getInt64(0)
                       : op == 5 ? before.getInt64(siteNumber)
                                 : before.CreateZExt(arg(1), before.getInt64Ty());
  llvm::Value* bOperand = op == 1 ? arg(2) : zero;
  llvm::Value* cOperand = op == 1 ? arg(3) : zero;
  const std::pair<LaneField, llvm::Value*> posts[] = {{kLaneValue, value},
                                                      {kLaneMode, mode},
                                                      {kLaneB, bOperand},
                                                      {kLaneC, cOperand},
                                                      {kLaneMask, mask}};
  postOperands(before, v, op, posts, site);
  if (call->getType()->isVoidTy()) return nullptr;
  llvm::Value* raw =
      op == 1 ? shuffleResult(after, v, operandAgain(after, v, mode, kLaneMode),
                              operandAgain(after, v, bOperand, kLaneB),
                              operandAgain(after, v, cOperand, kLaneC))
      : call->getType()->getIntegerBitWidth() > 32
          ? wideResult(after, v)
          : after.CreateLoad(after.getInt32Ty(), laneEntry(after, v, kLaneResult, v.linear));
  return after.CreateZExtOrTrunc(raw, call->getType());
}

// Turn the waiting call `call` into the end of its block (announcing the wait where the runtime
// needs data: bar.red votes, warp collectives' operands) and a resume block that starts with the
// call's result. `site` numbers the wait within its kernel.
WaitPoint splitAtWait(llvm::CallInst* call, const ThreadValues& v, uint32_t site) {
  llvm::Module& m = *call->getModule();
  llvm::LLVMContext& c = m.getContext();
  auto* i32 = llvm::Type::getInt32Ty(c);
  auto* ptr = llvm::PointerType::getUnqual(c);
  auto* voidTy = llvm::Type::getVoidTy(c);
  llvm::BasicBlock* suspend = call->getParent();
  llvm::BasicBlock* resume = suspend->splitBasicBlock(call->getNextNode(), "resume");
  llvm::IRBuilder<> before(call);
  llvm::IRBuilder<> after(&*resume->getFirstInsertionPt());
  llvm::StringRef name = call->getCalledFunction()->getName();
  auto arg = [&](unsigned i) { return call->getArgOperand(i); };
  llvm::Value* result = nullptr;
  WaitKind kind = WaitKind::Warp;
  WarpWaitSite warpSite;
  if (name == "__rocuda_barrier_sync") {
    kind = WaitKind::Barrier;  // the returned code says it all
  } else if (name == "__rocuda_barrier_reduce") {
    kind = WaitKind::BarrierReduce;
    before.CreateCall(runtimeFunction(m, "__rocuda_suspend_barrier_reduce", voidTy,
                                      {ptr, i32, i32, i32, i32, i32}),
                      {v.context, v.linear, arg(0), arg(1), arg(2), arg(3)});
    result = after.CreateCall(
        runtimeFunction(m, "__rocuda_resume_barrier_reduce", i32, {ptr, i32, i32}),
        {v.context, v.linear, arg(0)});
  } else {
    result = postAndCollect(call, v, site, warpSite, before, after);
  }
  if (result != nullptr) call->replaceAllUsesWith(result);
  call->eraseFromParent();
  return {suspend, resume, kind, warpSite};
}

// The instructions live on entry to any resume block: what must survive a wait. Classic
// backward liveness over the blocks, restricted to values used outside their own block. Stack
// allocations are not among them: they become frame slots, addressed afresh at every entry.
std::vector<llvm::Instruction*> liveAcrossWaits(llvm::Function& f,
                                                const std::vector<WaitPoint>& waits) {
  llvm::DenseMap<llvm::Instruction*, unsigned> index;
  std::vector<llvm::Instruction*> values;
  for (auto& block : f)
    for (auto& inst : block) {
      if (inst.getType()->isVoidTy() || llvm::isa<llvm::AllocaInst>(inst)) continue;
      for (llvm::User* user : inst.users()) {
        auto* use = llvm::cast<llvm::Instruction>(user);
        if (use->getParent() != &block || llvm::isa<llvm::PHINode>(use)) {
          index[&inst] = static_cast<unsigned>(values.size());
          values.push_back(&inst);
          break;
        }
      }
    }
  llvm::DenseMap<llvm::BasicBlock*, unsigned> blockIndex;
  std::vector<llvm::BasicBlock*> blocks;
  for (auto& block : f) {
    blockIndex[&block] = static_cast<unsigned>(blocks.size());
    blocks.push_back(&block);
  }
  size_t n = values.size(), nb = blocks.size();
  std::vector<llvm::BitVector> uses(nb, llvm::BitVector(n)), defs(nb, llvm::BitVector(n)),
      phiOut(nb, llvm::BitVector(n)), liveIn(nb, llvm::BitVector(n));
  for (size_t b = 0; b < nb; ++b)
    for (auto& inst : *blocks[b]) {
      if (auto it = index.find(&inst); it != index.end()) defs[b].set(it->second);
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(&inst)) {
        for (unsigned i = 0; i < phi->getNumIncomingValues(); ++i)
          if (auto* v = llvm::dyn_cast<llvm::Instruction>(phi->getIncomingValue(i)))
            if (auto it = index.find(v); it != index.end())
              phiOut[blockIndex[phi->getIncomingBlock(i)]].set(it->second);
        continue;
      }
      for (llvm::Value* operand : inst.operands())
        if (auto* v = llvm::dyn_cast<llvm::Instruction>(operand); v && v->getParent() != blocks[b])
          if (auto it = index.find(v); it != index.end()) uses[b].set(it->second);
    }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = nb; b-- > 0;) {
      llvm::BitVector live = phiOut[b];
      for (llvm::BasicBlock* successor : llvm::successors(blocks[b]))
        live |= liveIn[blockIndex[successor]];
      live.reset(defs[b]);
      live |= uses[b];
      if (live != liveIn[b]) {
        liveIn[b] = std::move(live);
        changed = true;
      }
    }
  }
  llvm::BitVector across(n);
  for (const WaitPoint& wait : waits) across |= liveIn[blockIndex[wait.resume]];
  std::vector<llvm::Instruction*> result;
  for (unsigned i : across.set_bits()) result.push_back(values[i]);
  return result;
}

// ---- Recomputing instead of saving ----

// The most instructions one recomputed value may take (its whole expression tree).
constexpr unsigned kRematerializeBudget = 24;

// Whether `load` reads memory that stays the same while the block runs: the block context
// (loads marked invariant) or the kernel's parameter buffer (argument 0, only read).
bool readsLaunchConstant(const llvm::LoadInst& load) {
  if (load.isVolatile() || load.isAtomic()) return false;
  if (load.hasMetadata(llvm::LLVMContext::MD_invariant_load)) return true;
  auto* base = llvm::dyn_cast<llvm::Argument>(llvm::getUnderlyingObject(load.getPointerOperand()));
  return base != nullptr && base->getArgNo() == 0;
}

// The cost of computing `v` again at any point of the step (its instructions, counted as a
// tree), or nothing when it cannot be: it must depend only on the step's arguments (the
// parameters, the context, the thread's indices), constants, frame slots and launch-constant
// loads, through instructions without side effects. Such values (addresses of shared arrays and
// of parameters, the block's extent, index arithmetic) need no frame slot: each region computes
// them itself, which is cheaper than a store and a reload, and leaves the frame to what truly
// varies (loop counters, loaded data).
std::optional<unsigned> rematerializeCost(llvm::Value* v, unsigned budget) {
  if (llvm::isa<llvm::Constant>(v) || llvm::isa<llvm::Argument>(v)) return 0u;
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  if (inst == nullptr || budget == 0) return std::nullopt;
  if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(inst))  // becomes an address in the frame
    return alloca->isStaticAlloca() ? std::optional<unsigned>(0u) : std::nullopt;
  if (llvm::isa<llvm::PHINode>(inst) || llvm::isa<llvm::FreezeInst>(inst) ||
      inst->mayHaveSideEffects() || inst->isTerminator())
    return std::nullopt;
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst)) {
    if (!readsLaunchConstant(*load)) return std::nullopt;
  } else if (auto* call = llvm::dyn_cast<llvm::CallInst>(inst)) {
    if (!llvm::isa<llvm::IntrinsicInst>(call) || !call->doesNotAccessMemory() ||
        call->isConvergent())
      return std::nullopt;
  } else if (inst->mayReadOrWriteMemory()) {
    return std::nullopt;
  }
  unsigned cost = 1;
  for (llvm::Value* operand : inst->operands()) {
    if (llvm::isa<llvm::BasicBlock>(operand)) return std::nullopt;
    std::optional<unsigned> c = rematerializeCost(operand, budget - cost);
    if (!c || cost + *c > budget) return std::nullopt;
    cost += *c;
  }
  return cost;
}

// A copy of `v`'s expression tree inserted before `at` (see rematerializeCost).
llvm::Value* rematerialize(llvm::Value* v, llvm::Instruction* at) {
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  if (inst == nullptr || llvm::isa<llvm::AllocaInst>(inst)) return v;
  llvm::Instruction* copy = inst->clone();
  for (llvm::Use& operand : copy->operands()) operand.set(rematerialize(operand.get(), at));
  copy->insertBefore(at);
  copy->setName(inst->getName() + ".again");
  return copy;
}

// Give each value in `live` that rematerializeCost allows a copy of its own at the start of
// every other block that uses it, so that it no longer lives across a wait. Copies in regions
// where the original is still at hand are merged again by the optimiser.
void rematerializeAcrossWaits(const std::vector<llvm::Instruction*>& live) {
  for (llvm::Instruction* value : live) {
    if (!rematerializeCost(value, kRematerializeBudget)) continue;
    llvm::DenseMap<llvm::BasicBlock*, llvm::Value*> copies;
    for (llvm::Use& use : llvm::make_early_inc_range(value->uses())) {
      auto* user = llvm::cast<llvm::Instruction>(use.getUser());
      llvm::BasicBlock* where = user->getParent();
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user)) where = phi->getIncomingBlock(use);
      if (where == value->getParent()) continue;
      llvm::Value*& copy = copies[where];
      if (copy == nullptr) copy = rematerialize(value, &*where->getFirstInsertionPt());
      use.set(copy);
    }
  }
}

// The slots that demotion made for values live across waits are the compiler's own: only their
// loads and stores reach them. Saying so (an alias scope of their own, which every other access
// of the step is outside of) lets the optimiser keep them apart from shared and global memory,
// e.g. hoist a slot's load out of a round's loop that stores to shared memory.
void separateFrameValues(llvm::Function& step, const std::vector<llvm::AllocaInst*>& slots) {
  if (slots.empty()) return;
  llvm::LLVMContext& c = step.getContext();
  llvm::MDBuilder builder(c);
  llvm::MDNode* domain = builder.createAnonymousAliasScopeDomain("rocuda.frame");
  llvm::MDNode* scope =
      llvm::MDNode::get(c, {builder.createAnonymousAliasScope(domain, "rocuda.frame.values")});
  llvm::DenseSet<const llvm::Instruction*> slotAccesses;
  for (llvm::AllocaInst* slot : slots)
    for (llvm::User* user : slot->users()) {
      auto* access = llvm::cast<llvm::Instruction>(user);
      access->setMetadata(llvm::LLVMContext::MD_alias_scope, scope);
      slotAccesses.insert(access);
    }
  for (llvm::Instruction& inst : llvm::instructions(step))
    if (inst.mayReadOrWriteMemory() && !slotAccesses.contains(&inst))
      inst.setMetadata(llvm::LLVMContext::MD_noalias,
                       llvm::MDNode::concatenate(inst.getMetadata(llvm::LLVMContext::MD_noalias),
                                                 scope));
}

// ---- Block-uniform values: one slot per block ----
//
// A kernel that waits only at block barriers (bar.sync 0 and bar.red, which every thread of the
// block reaches at the same instruction) runs from barrier to barrier with all its threads
// together. A value live across such a barrier that every thread computes alike (a loop
// counter over the block's size, a bound from the parameters) then needs one slot per block,
// not one per thread: a round reads it once for all its threads, and the work-item loop's
// conditions on it become loop-invariant. The threads of a round run one after another, so a
// thread must not see what an earlier thread of the same round wrote: a uniform slot has two
// copies, the value at the last barrier (read before the region writes the slot) and the value
// written since (written, and read after the write); the runtime copies the second over the
// first whenever a block barrier completes (compiler.h).

// The uniformity analysis' view of the step: thread indices, memory reads other than launch
// constants, and calls with effects differ between threads; everything else follows from its
// operands and from the branches it depends on (LLVM's UniformityInfo does that part).
class ThreadDivergence : public llvm::TargetTransformInfoImplCRTPBase<ThreadDivergence> {
 public:
  ThreadDivergence(const llvm::DataLayout& layout, const ThreadValues& v)
      : TargetTransformInfoImplCRTPBase(layout),
        threadIndices{v.linear, v.tid[0], v.tid[1], v.tid[2]} {}
  bool hasBranchDivergence(const llvm::Function*) const { return true; }
  bool isAlwaysUniform(const llvm::Value*) const { return false; }
  bool isSourceOfDivergence(const llvm::Value* value) const {
    if (llvm::isa<llvm::Argument>(value)) return llvm::is_contained(threadIndices, value);
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(value)) return !readsLaunchConstant(*load);
    if (auto* call = llvm::dyn_cast<llvm::CallBase>(value))
      return call->getIntrinsicID() == llvm::Intrinsic::not_intrinsic ||
             !call->doesNotAccessMemory();
    auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
    return inst != nullptr && (inst->mayReadOrWriteMemory() ||
                               llvm::isa<llvm::AllocaInst, llvm::FreezeInst>(inst));
  }

 private:
  std::array<const llvm::Value*, 4> threadIndices;
};

// Whether every wait of the kernel is a block barrier (see above).
bool waitsOnlyAtBlockBarriers(const std::vector<WaitPoint>& waits) {
  return llvm::all_of(waits, [](const WaitPoint& wait) {
    return wait.kind == WaitKind::Barrier || wait.kind == WaitKind::BarrierReduce;
  });
}

// The instructions of `step` whose value is the same in every thread of the block wherever it is
// used (no use sees it through a loop that threads leave at different iterations).
llvm::DenseSet<const llvm::Value*> blockUniformValues(llvm::Function& step,
                                                      const ThreadValues& v) {
  const llvm::DataLayout& layout = step.getParent()->getDataLayout();
  llvm::FunctionAnalysisManager analyses;
  analyses.registerPass([] { return llvm::PassInstrumentationAnalysis(); });
  analyses.registerPass([] { return llvm::DominatorTreeAnalysis(); });
  analyses.registerPass([] { return llvm::CycleAnalysis(); });
  analyses.registerPass([&] {
    return llvm::TargetIRAnalysis([&](const llvm::Function&) {
      return llvm::TargetTransformInfo(ThreadDivergence(layout, v));
    });
  });
  analyses.registerPass([] { return llvm::UniformityInfoAnalysis(); });
  const llvm::UniformityInfo& uniformity = analyses.getResult<llvm::UniformityInfoAnalysis>(step);
  llvm::DenseSet<const llvm::Value*> uniform;
  for (llvm::Instruction& inst : llvm::instructions(step))
    if (!inst.getType()->isVoidTy() && !uniformity.isDivergent(&inst) &&
        llvm::none_of(inst.uses(),
                      [&](const llvm::Use& use) { return uniformity.isDivergentUse(use); }))
      uniform.insert(&inst);
  return uniform;
}

// The block-uniform area of a Continuation (compiler.h): one copy's bytes (a multiple of 32, so
// that both copies keep the frames' 64-byte alignment) and each slot's offset and type in it.
struct UniformArea {
  uint32_t bytes = 0;
  std::vector<std::pair<uint64_t, llvm::Type*>> slots;
};

// The address of the uniform slot at `offset` in one copy of an area of `areaBytes` (compiler.h):
// as written since the last barrier (frames - U) or as it was at the last barrier (frames - 2U).
llvm::Value* uniformSlotAddress(llvm::IRBuilder<>& b, llvm::Value* context, uint64_t offset,
                                uint32_t areaBytes, bool written) {
  int64_t copy = written ? 1 : 2;
  return b.CreateGEP(b.getInt8Ty(), loadContext(b, context, kFrames),
                     b.getInt64(static_cast<int64_t>(offset) - copy * areaBytes),
                     written ? "uniform.written" : "uniform.at.barrier");
}

// Move the slots of uniform values (allocas made by demotion, used only by their loads and
// stores) to the block's uniform area: stores and the loads after a store of the same region
// use the written copy, loads before any store of their region the copy of the last barrier.
// A slot some load of which may come before or after a store, depending on the path, stays a
// per-thread slot (an alloca, for moveAllocasToFrame).
UniformArea moveUniformSlots(llvm::Function& step, const std::vector<WaitPoint>& waits,
                             const std::vector<llvm::AllocaInst*>& slots, const ThreadValues& v) {
  UniformArea area;
  if (slots.empty()) return area;
  llvm::DenseMap<const llvm::Value*, unsigned> slotIndex;
  for (unsigned i = 0; i < slots.size(); ++i) slotIndex[slots[i]] = i;
  auto storedSlot = [&](const llvm::Instruction& inst) -> std::optional<unsigned> {
    if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst))
      if (auto it = slotIndex.find(store->getPointerOperand()); it != slotIndex.end())
        return it->second;
    return std::nullopt;
  };
  // Forward over each region (from the start or a resume block to the waits): which slots may
  // still be unwritten (clean) and which may have been written (dirty) since the region began.
  struct State {
    llvm::BitVector clean, dirty;
  };
  size_t n = slots.size();
  llvm::DenseMap<llvm::BasicBlock*, State> entryState;
  llvm::DenseSet<llvm::BasicBlock*> suspends;
  std::vector<llvm::BasicBlock*> work;
  auto startRegion = [&](llvm::BasicBlock* block) {
    entryState[block] = {llvm::BitVector(n, true), llvm::BitVector(n)};
    work.push_back(block);
  };
  startRegion(&step.getEntryBlock());
  for (const WaitPoint& wait : waits) {
    suspends.insert(wait.suspend);
    startRegion(wait.resume);
  }
  auto apply = [&](const llvm::Instruction& inst, State& state) {
    if (std::optional<unsigned> slot = storedSlot(inst)) {
      state.clean.reset(*slot);
      state.dirty.set(*slot);
    }
  };
  while (!work.empty()) {
    llvm::BasicBlock* block = work.back();
    work.pop_back();
    if (suspends.contains(block)) continue;  // the region ends at its wait
    State state = entryState[block];
    for (const llvm::Instruction& inst : *block) apply(inst, state);
    for (llvm::BasicBlock* successor : llvm::successors(block)) {
      auto [it, fresh] = entryState.try_emplace(successor, State{llvm::BitVector(n),
                                                                 llvm::BitVector(n)});
      State& next = it->second;
      llvm::BitVector clean = next.clean, dirty = next.dirty;
      next.clean |= state.clean;
      next.dirty |= state.dirty;
      if (fresh || next.clean != clean || next.dirty != dirty) work.push_back(successor);
    }
  }
  // Which copy each load reads; slots with a load that may read either stay per thread.
  llvm::DenseMap<llvm::LoadInst*, bool> readsWritten;
  llvm::BitVector perThread(n);
  for (auto& [block, start] : entryState) {
    State state = start;
    for (llvm::Instruction& inst : *block) {
      if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst))
        if (auto it = slotIndex.find(load->getPointerOperand()); it != slotIndex.end()) {
          unsigned slot = it->second;
          if (state.clean.test(slot) && state.dirty.test(slot)) perThread.set(slot);
          readsWritten[load] = state.dirty.test(slot);
        }
      apply(inst, state);
    }
  }
  const llvm::DataLayout& layout = step.getParent()->getDataLayout();
  std::vector<uint64_t> offsets(n);
  uint64_t bytes = 0;
  for (unsigned i = 0; i < n; ++i) {
    if (perThread.test(i)) continue;
    bytes = llvm::alignTo(bytes, slots[i]->getAlign());
    offsets[i] = bytes;
    area.slots.emplace_back(bytes, slots[i]->getAllocatedType());
    bytes += layout.getTypeAllocSize(slots[i]->getAllocatedType());
  }
  area.bytes = static_cast<uint32_t>(llvm::alignTo(bytes, 32));
  for (unsigned i = 0; i < n; ++i) {
    if (perThread.test(i)) continue;
    for (llvm::User* user : llvm::make_early_inc_range(slots[i]->users())) {
      auto* access = llvm::cast<llvm::Instruction>(user);
      auto* load = llvm::dyn_cast<llvm::LoadInst>(access);
      // Unreachable loads are in no region: any copy will do.
      bool written = load == nullptr || readsWritten.lookup(load);
      llvm::IRBuilder<> b(access);
      access->replaceUsesOfWith(slots[i],
                                uniformSlotAddress(b, v.context, offsets[i], area.bytes, written));
      // The copy of the last barrier is written only between rounds (by the runtime, or by the
      // round function between its calls of one round): while a step or one round runs it does
      // not change (as the block context does not).
      if (!written)
        access->setMetadata(llvm::LLVMContext::MD_invariant_load,
                            llvm::MDNode::get(access->getContext(), {}));
    }
    slots[i]->eraseFromParent();
  }
  return area;
}

// Give every stack allocation a slot in the thread's frame; returns the frame size (a multiple
// of the largest slot alignment and of 16; the runtime aligns frames to 64 bytes). The frames
// of a block are laid out slot by slot (compiler.h): slot k of thread t is at
// offset(k) * threadCount + t * size(k), so that consecutive threads' copies of a value are
// neighbours and a round's loads and stores of it vectorize.
uint32_t moveAllocasToFrame(llvm::Function& f, llvm::BasicBlock* dispatch, const ThreadValues& v) {
  const llvm::DataLayout& layout = f.getParent()->getDataLayout();
  struct Slot {
    llvm::AllocaInst* alloca;
    uint64_t offset, size;
  };
  std::vector<Slot> slots;
  uint64_t offset = 0;
  llvm::Align frameAlign(16);
  for (auto& block : f)
    for (auto& inst : block)
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst)) {
        uint64_t count = llvm::cast<llvm::ConstantInt>(alloca->getArraySize())->getZExtValue();
        uint64_t size = layout.getTypeAllocSize(alloca->getAllocatedType()) * count;
        offset = llvm::alignTo(offset, alloca->getAlign());
        slots.push_back({alloca, offset, size});
        offset += size;
        frameAlign = std::max(frameAlign, alloca->getAlign());
      }
  if (slots.empty()) return 0;
  llvm::IRBuilder<> b(dispatch, dispatch->begin());
  llvm::Value* frames = loadContext(b, v.context, kFrames);
  llvm::Value* threads = b.CreateZExt(loadContext(b, v.context, kThreadCount), b.getInt64Ty());
  llvm::Value* linear = b.CreateZExt(v.linear, b.getInt64Ty());
  // Each use computes its slot's address where it is. The dispatch block dominates them all,
  // but every step passes through it: a kernel with hundreds of slots computed (and spilled)
  // every address there on each resume (CUB's onesweep radix sort: 615 slots, 80% of its time).
  for (const Slot& slot : slots) {
    for (llvm::User* user : llvm::make_early_inc_range(slot.alloca->users()))
      if (auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(user);
          intrinsic && intrinsic->isLifetimeStartOrEnd())
        intrinsic->eraseFromParent();
    for (llvm::Use& use : llvm::make_early_inc_range(slot.alloca->uses())) {
      auto* user = llvm::cast<llvm::Instruction>(use.getUser());
      llvm::Instruction* at = user;
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(user))
        at = phi->getIncomingBlock(use)->getTerminator();
      llvm::IRBuilder<> u(at);
      llvm::Value* start = u.CreateNUWAdd(u.CreateNUWMul(threads, u.getInt64(slot.offset)),
                                          u.CreateNUWMul(linear, u.getInt64(slot.size)));
      use.set(u.CreateInBoundsGEP(u.getInt8Ty(), frames, start, "frame"));
    }
    slot.alloca->eraseFromParent();
  }
  return static_cast<uint32_t>(llvm::alignTo(offset, frameAlign));
}

// ---- Addresses the vectorizer can follow ----

// PTX computes addresses as 64-bit integers, so the translated code converts `base + offset`
// to a pointer in one step, which hides from scalar evolution that consecutive threads access
// consecutive elements. Rewriting it as a byte-offset GEP from the base pointer lets the loop
// vectorizer widen work-item loops. An operand is taken for an offset when it is a constant or
// a scaled or extended index; the other operand is the base.
bool looksLikeOffset(llvm::Value* v) {
  if (llvm::isa<llvm::ConstantInt>(v)) return true;
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  if (inst == nullptr) return false;
  switch (inst->getOpcode()) {
    case llvm::Instruction::Shl:
    case llvm::Instruction::Mul:
    case llvm::Instruction::SExt:
    case llvm::Instruction::ZExt: return true;
    default: return false;
  }
}

llvm::Value* addressAsPointer(llvm::IRBuilder<>& b, llvm::Value* address) {
  if (auto* add = llvm::dyn_cast<llvm::BinaryOperator>(address);
      add && add->getOpcode() == llvm::Instruction::Add) {
    llvm::Value *x = add->getOperand(0), *y = add->getOperand(1);
    if (looksLikeOffset(y) && !looksLikeOffset(x))
      return b.CreateGEP(b.getInt8Ty(), addressAsPointer(b, x), y);
    if (looksLikeOffset(x) && !looksLikeOffset(y))
      return b.CreateGEP(b.getInt8Ty(), addressAsPointer(b, y), x);
  }
  return b.CreateIntToPtr(address, b.getPtrTy());
}

void splitPointerArithmetic(llvm::Function& f) {
  std::vector<llvm::IntToPtrInst*> conversions;
  for (auto& block : f)
    for (auto& inst : block)
      if (auto* conversion = llvm::dyn_cast<llvm::IntToPtrInst>(&inst);
          conversion && llvm::isa<llvm::BinaryOperator>(conversion->getOperand(0)) &&
          conversion->getType() == llvm::PointerType::getUnqual(f.getContext()))
        conversions.push_back(conversion);
  for (llvm::IntToPtrInst* conversion : conversions) {
    llvm::IRBuilder<> b(conversion);
    llvm::Value* pointer = addressAsPointer(b, conversion->getOperand(0));
    conversion->replaceAllUsesWith(pointer);
    conversion->eraseFromParent();
  }
}

// ---- Choosing the form ----

// Why `kernel` cannot take a block form although it waits, or an empty string.
std::string slowPathReason(llvm::Function& kernel, bool waits) {
  if (!kernel.use_empty()) return "the kernel's address is taken in device code";
  if (!waits) return {};
  for (auto& block : kernel)
    for (auto& inst : block) {
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst);
          alloca && !alloca->isStaticAlloca())
        return "it waits at a barrier or warp collective and allocates stack dynamically";
      auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
      if (call == nullptr) continue;
      llvm::Function* callee = call->getCalledFunction();
      if (callee == nullptr)
        return "it waits at a barrier or warp collective and calls through a function pointer";
      if (!callee->isDeclaration() &&
          kernelReaches(*kernel.getParent(), callee->getName().str(), waitingFunctions()))
        return "function '" + callee->getName().str() +
               "' waits at a barrier or warp collective and was not inlined";
    }
  return {};
}

std::vector<llvm::CallInst*> waitingCalls(llvm::Function& f) {
  std::vector<llvm::CallInst*> calls;
  for (auto& block : f)
    for (auto& inst : block)
      if (auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
          call && isWaitingFunction(call->getCalledFunction()))
        calls.push_back(call);
  return calls;
}

void lowerToBlockLoop(llvm::Function& kernel, KernelInfo& info) {
  llvm::LLVMContext& c = kernel.getContext();
  auto* ptr = llvm::PointerType::getUnqual(c);
  auto* i32 = llvm::Type::getInt32Ty(c);
  llvm::Function* thread = moveBody(
      kernel, llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr, ptr, i32, i32, i32, i32},
                                      false),
      "__rocuda_thread_" + info.name);
  thread->addFnAttr(llvm::Attribute::AlwaysInline);
  markLaunchArguments(*thread, info, /*noAlias=*/false);
  ThreadValues values = threadValuesOf(*thread);
  replaceThreadQueries(*thread, values);
  announceThreadBeforeCalls(*thread, values);
  buildBlockLoop(*thread, info);
  info.cpuExecution = CpuExecution::BlockLoop;
}

// The most instructions the rounds of a kernel may hold as inlined copies of its step.
constexpr size_t kInlinedRoundBudget = 40000;

// One round: every thread of the block (below `limit`) from the same resume point, each
// thread's code stored in codes[linearTid] (a byte where every code fits one); returns the code
// when every thread gave the same one (the common case, which then costs the runtime no look at
// the array), else kMixedRoundCodes or kMixedWideRoundCodes.
// One loop per resume point, each calling the step with a constant point, so that inlining
// leaves only that region's code in the loop (and the vectorizer may widen it).
llvm::Function* buildRound(llvm::Function& step, const KernelInfo& info, size_t waits) {
  llvm::Module& m = *step.getParent();
  llvm::LLVMContext& c = m.getContext();
  auto* ptr = llvm::PointerType::getUnqual(c);
  auto* i32 = llvm::Type::getInt32Ty(c);
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(i32, {ptr, ptr, i32, ptr, i32}, false),
                                    llvm::GlobalValue::InternalLinkage,
                                    roundSymbol(info.name) + std::string(kOneRoundSuffix), m);
  markLaunchArguments(*fn, info);
  fn->addParamAttr(3, llvm::Attribute::NoAlias);
  llvm::Value* params = fn->getArg(0);
  llvm::Value* context = fn->getArg(1);
  llvm::Value* codes = fn->getArg(3);
  codes->setName(kOneRoundCodesName);
  bool byteCodes = waits <= kMaxByteCodeWaits;
  auto* entry = llvm::BasicBlock::Create(c, "entry", fn);
  auto* exit = llvm::BasicBlock::Create(c, "exit", fn);
  llvm::IRBuilder<> b(entry);
  // The bitwise and and or of every code: equal exactly when all codes are (promoted to
  // registers by the optimiser; reductions the vectorizer widens).
  llvm::AllocaInst* allOf = b.CreateAlloca(i32, nullptr, "codes.and");
  llvm::AllocaInst* anyOf = b.CreateAlloca(i32, nullptr, "codes.or");
  b.CreateStore(b.getInt32(0xffffffffu), allOf);
  b.CreateStore(b.getInt32(0), anyOf);
  std::array<llvm::Value*, 3> extent = loadBlockExtent(b, context);
  // A one-dimensional block runs threads [0, limit) only (a bound, not a test per thread, so
  // that the vectorizer still sees a counted loop).
  llvm::Value* oneDimensional =
      b.CreateICmpEQ(b.CreateMul(extent[1], extent[2]), b.getInt32(1));
  extent[0] = b.CreateSelect(oneDimensional,
                             b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, extent[0],
                                                     fn->getArg(4)),
                             extent[0]);
  llvm::SwitchInst* choose = b.CreateSwitch(fn->getArg(2), exit, waits + 1);
  for (size_t point = 0; point <= waits; ++point) {
    llvm::ConstantInt* resume = b.getInt32(static_cast<uint32_t>(point));
    choose->addCase(
        resume,
        emitThreadLoop(fn, extent, exit,
                       [&](llvm::IRBuilder<>& body, llvm::Value* linear, llvm::Value* x,
                           llvm::Value* y, llvm::Value* z) {
                         llvm::Value* code =
                             body.CreateCall(&step, {params, context, linear, x, y, z, resume});
                         llvm::Type* stored = byteCodes ? body.getInt8Ty() : i32;
                         body.CreateStore(body.CreateTrunc(code, stored),
                                          body.CreateInBoundsGEP(stored, codes, linear));
                         body.CreateStore(body.CreateAnd(body.CreateLoad(i32, allOf), code), allOf);
                         body.CreateStore(body.CreateOr(body.CreateLoad(i32, anyOf), code), anyOf);
                       }));
  }
  b.SetInsertPoint(exit);
  llvm::Value* all = b.CreateLoad(i32, allOf);
  b.CreateRet(b.CreateSelect(b.CreateICmpEQ(all, b.CreateLoad(i32, anyOf)), all,
                             b.getInt32(byteCodes ? kMixedRoundCodes : kMixedWideRoundCodes)));
  return fn;
}

// A block that emits, before `next`, the completion of a round whose threads [0, count) all
// wait at mbarrier wait `site` (op 6): each thread's phase is checked as the runtime's
// mbarrierPhaseDone does, its result set to 1 and the next round run once every one has
// completed; at the first that has not, the round goes back to the runtime (`unfinished`),
// which waits for the phase. A cuda::pipeline or cuda::barrier wait that the block's own
// arrivals completed thus costs no return to the runtime.
llvm::BasicBlock* emitMBarrierCompletion(llvm::Function* fn, llvm::Value* context,
                                         llvm::Value* limit, const WarpWaitSite& site,
                                         llvm::BasicBlock* next, llvm::BasicBlock* unfinished) {
  llvm::LLVMContext& c = fn->getContext();
  auto* check = llvm::BasicBlock::Create(c, "mbarrier", fn, next);
  auto* lane = llvm::BasicBlock::Create(c, "mbarrier.lane", fn, next);
  auto* passed = llvm::BasicBlock::Create(c, "mbarrier.passed", fn, next);
  llvm::IRBuilder<> b(check);
  llvm::Value* count =
      b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, loadContext(b, context, kThreadCount), limit);
  auto array = [&](LaneField field) {
    return b.CreateLoad(b.getPtrTy(), laneArrayField(b, context, field));
  };
  // The operands postAndCollect posted, or the constants the site holds instead.
  auto operand = [&](LaneField field, uint32_t constant) -> llvm::Value* {
    return site.constants & constant ? nullptr : array(field);
  };
  llvm::Value* low = array(kLaneValue);
  llvm::Value* high = array(kLaneValueHigh);
  llvm::Value* results = array(kLaneResult);
  llvm::Value* modes = operand(kLaneMode, WarpWaitSite::kMode);
  llvm::Value* statesLow = operand(kLaneB, WarpWaitSite::kB);
  llvm::Value* statesHigh = operand(kLaneC, WarpWaitSite::kC);
  b.CreateCondBr(b.CreateICmpEQ(count, b.getInt32(0)), next, lane);

  b.SetInsertPoint(lane);
  llvm::PHINode* t = b.CreatePHI(b.getInt32Ty(), 2, "t");
  t->addIncoming(b.getInt32(0), check);
  llvm::Value* index = b.CreateZExt(t, b.getInt64Ty());
  auto entry = [&](llvm::Value* entries, int32_t constant) -> llvm::Value* {
    if (entries == nullptr) return b.getInt32(static_cast<uint32_t>(constant));
    return b.CreateLoad(b.getInt32Ty(), b.CreateInBoundsGEP(b.getInt32Ty(), entries, index));
  };
  llvm::Value* address = b.CreateOr(b.CreateZExt(entry(low, 0), b.getInt64Ty()),
                                    b.CreateShl(b.CreateZExt(entry(high, 0), b.getInt64Ty()), 32));
  auto* word =
      b.CreateAlignedLoad(b.getInt64Ty(), b.CreateIntToPtr(address, b.getPtrTy()), llvm::Align(8));
  word->setAtomic(llvm::AtomicOrdering::Acquire);
  llvm::Value* phase = b.CreateTrunc(b.CreateLShr(word, 63), b.getInt32Ty());
  // A parity names the phase to wait for; a state the phase it arrived in.
  llvm::Value* awaited = b.CreateSelect(b.CreateICmpNE(entry(modes, site.mode), b.getInt32(0)),
                                        b.CreateAnd(entry(statesLow, site.b), 1),
                                        b.CreateLShr(entry(statesHigh, site.c), 31));
  b.CreateCondBr(b.CreateICmpNE(phase, awaited), passed, unfinished);

  b.SetInsertPoint(passed);
  b.CreateStore(b.getInt32(1), b.CreateInBoundsGEP(b.getInt32Ty(), results, index));
  llvm::Value* following = b.CreateAdd(t, b.getInt32(1));
  t->addIncoming(following, passed);
  b.CreateCondBr(b.CreateICmpULT(following, count), lane, next);
  return check;
}

// `i32 __rocuda_round_<K>(ptr params, ptr context, i32 resume, ptr codes, i32 limit)`: rounds
// from `resume` for as long as every thread stops at one wait that needs nothing of the
// runtime, each completed here:
//  * a block barrier (kind 1): the uniform area's written copy is copied over the copy of the
//    last barrier, slot by slot in each slot's type (a load wider than the store it reads from
//    waits for that store to reach the cache: the runtime's memcpy cost a fifth of a tree
//    round);
//  * a shfl (the posts become the snapshots the resuming lanes read: WarpLanes' value and
//    result arrays swap places, as the runtime's completeUniformCollective does), a __syncwarp
//    or a warp lockstep point, which need nothing;
//  * an mbarrier wait whose phase has completed for every thread (emitMBarrierCompletion).
// So a reduction tree, a tiled loop or a warp's shuffle reduction runs without returning to the
// runtime. It returns at the first round that ends otherwise (the end, bar.red, another
// collective, threads at different points), with that round's codes. The round itself stays a
// call while the rounds are optimised: its loads of the copy of the last barrier and of the lane
// arrays' addresses are invariant within it, not across the waits completed here; then
// inlineChainedRounds inlines it without those marks. `chainWaits` false (memcheck, whose race
// check counts barriers in the runtime): one round per call.
void buildRounds(llvm::Function& step, const KernelInfo& info, const std::vector<WaitPoint>& waits,
                 const UniformArea& uniform, bool chainWaits) {
  llvm::Module& m = *step.getParent();
  llvm::LLVMContext& c = m.getContext();
  llvm::Function* round = buildRound(step, info, waits.size());
  if (!chainWaits) {
    round->setLinkage(llvm::GlobalValue::ExternalLinkage);
    round->setName(roundSymbol(info.name));
    return;
  }
  round->addFnAttr(llvm::Attribute::NoInline);
  auto* i32 = llvm::Type::getInt32Ty(c);
  auto* fn = llvm::Function::Create(round->getFunctionType(), llvm::GlobalValue::ExternalLinkage,
                                    roundSymbol(info.name), m);
  markLaunchArguments(*fn, info);
  fn->addParamAttr(3, llvm::Attribute::NoAlias);
  llvm::Value* context = fn->getArg(1);
  auto* entry = llvm::BasicBlock::Create(c, "entry", fn);
  bool chains = llvm::any_of(waits, [](const WaitPoint& w) { return w.site.op == 10; });
  auto* completeFirst = chains ? llvm::BasicBlock::Create(c, "complete.first", fn) : nullptr;
  auto* again = llvm::BasicBlock::Create(c, "round", fn);
  auto* dispatch = llvm::BasicBlock::Create(c, "dispatch", fn);
  auto* barrier = llvm::BasicBlock::Create(c, "barrier", fn);
  auto* warp = llvm::BasicBlock::Create(c, "warp", fn);
  auto* swapLanes = llvm::BasicBlock::Create(c, "shfl", fn);
  auto* next = llvm::BasicBlock::Create(c, "next", fn);
  auto* done = llvm::BasicBlock::Create(c, "done", fn);
  llvm::IRBuilder<> b(entry);
  llvm::Value* waiting = nullptr;
  if (chains) {
    // resume | kCompleteWaitFirst (the runtime passes it for shuffle chains only): the threads
    // wait at the warp collective before resume, as if a round had just returned that code.
    b.CreateCondBr(b.CreateICmpSLT(fn->getArg(2), b.getInt32(0)), completeFirst, again);
    b.SetInsertPoint(completeFirst);
    waiting =
        b.CreateOr(b.CreateShl(b.CreateAnd(fn->getArg(2), b.getInt32(~kCompleteWaitFirst)), 2),
                   b.getInt32(static_cast<uint32_t>(WaitKind::Warp)));
    b.CreateBr(dispatch);
  } else {
    b.CreateBr(again);
  }
  b.SetInsertPoint(again);
  llvm::PHINode* point = b.CreatePHI(i32, 2, "point");
  point->addIncoming(fn->getArg(2), entry);
  llvm::CallInst* stepped =
      b.CreateCall(round, {fn->getArg(0), context, point, fn->getArg(3), fn->getArg(4)}, "code");
  // One call, which inlineChainedRounds inlines once the rounds are optimised: loop rotation
  // would have made a second for the first round.
  stepped->setCannotDuplicate();
  b.CreateBr(dispatch);
  b.SetInsertPoint(dispatch);
  llvm::PHINode* code = b.CreatePHI(i32, 2, "code");
  if (chains) code->addIncoming(waiting, completeFirst);
  code->addIncoming(stepped, again);
  llvm::Value* resume = b.CreateLShr(code, b.getInt32(2), "resume");
  // The mixed codes have kinds 3 and 2: only a common code reaches a case below with a point
  // the switch names.
  llvm::SwitchInst* kind = b.CreateSwitch(b.CreateAnd(code, b.getInt32(3)), done, 2);
  kind->addCase(b.getInt32(static_cast<uint32_t>(WaitKind::Barrier)), barrier);
  kind->addCase(b.getInt32(static_cast<uint32_t>(WaitKind::Warp)), warp);

  b.SetInsertPoint(barrier);
  // Volatile: merged into wider accesses (two i32 slots as one i64) the copy stalls again.
  for (auto [offset, type] : uniform.slots)
    b.CreateStore(b.CreateLoad(type, uniformSlotAddress(b, context, offset, uniform.bytes, true),
                               /*isVolatile=*/true),
                  uniformSlotAddress(b, context, offset, uniform.bytes, false),
                  /*isVolatile=*/true);
  b.CreateBr(next);

  // op numbers as postAndCollect gives them: 0 __syncwarp, 1 shfl, 6 mbarrier wait, 9 lockstep
  // point, 10 shuffle chain (its steps run here, a warp at a time, for the round's threads).
  b.SetInsertPoint(warp);
  llvm::SwitchInst* site = b.CreateSwitch(resume, done);
  for (size_t i = 0; i < waits.size(); ++i) {
    int32_t op = waits[i].site.op;
    if (waits[i].kind != WaitKind::Warp || (op != 0 && op != 1 && op != 6 && op != 9 && op != 10))
      continue;
    llvm::BasicBlock* completion = op == 1 ? swapLanes : next;
    if (op == 6)
      completion = emitMBarrierCompletion(fn, context, fn->getArg(4), waits[i].site, next, done);
    if (op == 10) {
      completion = llvm::BasicBlock::Create(c, "shfl.chain", fn, next);
      llvm::IRBuilder<> chain(completion);
      llvm::Value* count = chain.CreateBinaryIntrinsic(
          llvm::Intrinsic::umin, loadContext(chain, context, kThreadCount), fn->getArg(4));
      emitShuffleChainSteps(
          chain, chain.CreateLoad(chain.getPtrTy(), laneArrayField(chain, context, kLaneValue)),
          chain.CreateLoad(chain.getPtrTy(), laneArrayField(chain, context, kLaneResult)), count,
          loadContext(chain, context, kNtid, 0), waits[i].site);
      chain.CreateBr(next);
    }
    site->addCase(b.getInt32(static_cast<uint32_t>(i + 1)), completion);
  }

  b.SetInsertPoint(swapLanes);
  llvm::Value* valueField = laneArrayField(b, context, kLaneValue);
  llvm::Value* resultField = laneArrayField(b, context, kLaneResult);
  llvm::Value* values = b.CreateLoad(b.getPtrTy(), valueField);
  llvm::Value* results = b.CreateLoad(b.getPtrTy(), resultField);
  b.CreateStore(results, valueField);
  b.CreateStore(values, resultField);
  b.CreateBr(next);

  b.SetInsertPoint(next);
  point->addIncoming(resume, next);
  b.CreateBr(again);
  b.SetInsertPoint(done);
  b.CreateRet(code);
}

void countWaitingLoopTrips(llvm::Function& f);

// Whether `v` is `phi` made no larger (unsigned): `phi >> x`, `phi / x`, `phi & x`, umin.
bool shrinks(llvm::Value* v, llvm::PHINode* phi) {
  using namespace llvm::PatternMatch;
  return match(v, m_CombineOr(m_LShr(m_Specific(phi), m_Value()),
                              m_UDiv(m_Specific(phi), m_Value()))) ||
         match(v, m_c_And(m_Specific(phi), m_Value())) ||
         match(v, m_c_UMin(m_Specific(phi), m_Value()));
}

// The unsigned ranges of the integer values about to be demoted to slots, for `!range` on the
// slots' reloads: what ValueTracking knows of each, and for a phi that only shrinks along its
// loop (`for (s = blockDim.x / 2; s > 0; s >>= 1)`) at most its largest start, which arithmetic
// on the phi passes on. Without them a reload of `s` is any 32-bit value, and a loop over the
// threads indexing shared memory with `tid + s` keeps the vectoriser's checks that the index does
// not wrap, at every level of a tree.
llvm::DenseMap<llvm::Value*, llvm::ConstantRange> demotedRanges(
    const std::vector<llvm::Instruction*>& values) {
  llvm::DenseMap<llvm::Value*, llvm::ConstantRange> ranges;
  auto rangeOf = [&](llvm::Value* v) {
    auto it = ranges.find(v);
    return it != ranges.end() ? it->second : llvm::computeConstantRange(v, /*ForSigned=*/false);
  };
  auto keep = [&](llvm::Value* v, const llvm::ConstantRange& range) {
    if (!range.isFullSet() && !range.isEmptySet() && !range.isSingleElement())
      ranges.try_emplace(v, range);
  };
  for (llvm::Instruction* v : values) {
    auto* phi = llvm::dyn_cast<llvm::PHINode>(v);
    if (phi == nullptr || !phi->getType()->isIntegerTy()) continue;
    std::optional<llvm::APInt> largest;
    for (llvm::Value* incoming : phi->incoming_values()) {
      if (shrinks(incoming, phi)) continue;
      llvm::APInt max = rangeOf(incoming).getUnsignedMax();
      if (!largest || max.ugt(*largest)) largest = max;
    }
    llvm::ConstantRange range = rangeOf(phi);
    if (largest && !largest->isMaxValue())
      range = range.intersectWith(
          llvm::ConstantRange(llvm::APInt::getZero(largest->getBitWidth()), *largest + 1));
    keep(phi, range);
  }
  for (llvm::Instruction* v : values) {
    if (!v->getType()->isIntegerTy() || llvm::isa<llvm::PHINode>(v)) continue;
    llvm::ConstantRange range = rangeOf(v);
    if (auto* op = llvm::dyn_cast<llvm::BinaryOperator>(v))
      range = range.intersectWith(
          rangeOf(op->getOperand(0)).binaryOp(op->getOpcode(), rangeOf(op->getOperand(1))));
    else if (auto* cast = llvm::dyn_cast<llvm::CastInst>(v);
             cast != nullptr && cast->getSrcTy()->isIntegerTy())
      range =
          range.intersectWith(rangeOf(cast->getOperand(0))
                                  .castOp(cast->getOpcode(), v->getType()->getIntegerBitWidth()));
    keep(v, range);
  }
  return ranges;
}

// `!range` on every reload of `slot` (which holds a value in `range`).
void markReloadRange(llvm::AllocaInst* slot, const llvm::ConstantRange& range) {
  llvm::MDBuilder md(slot->getContext());
  for (llvm::User* user : slot->users())
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(user))
      load->setMetadata(llvm::LLVMContext::MD_range,
                        md.createRange(range.getLower(), range.getUpper()));
}

// `blockUniformSlots`: keep values every thread computes alike in one slot per block (only
// where the threads' waits are all at points every thread reaches in step: in a lockstep form
// only when the threads in a round are at one iteration of its stride loop, see
// countStrideIterations).
void lowerToContinuation(llvm::Function& kernel, KernelInfo& info, bool chainWaits,
                         bool blockUniformSlots = true) {
  llvm::LLVMContext& c = kernel.getContext();
  auto* ptr = llvm::PointerType::getUnqual(c);
  auto* i32 = llvm::Type::getInt32Ty(c);
  llvm::Function* step =
      moveBody(kernel, llvm::FunctionType::get(i32, {ptr, ptr, i32, i32, i32, i32, i32}, false),
               continuationSymbol(info.name));
  step->setLinkage(llvm::GlobalValue::ExternalLinkage);
  markLaunchArguments(*step, info, /*noAlias=*/false);  // inlined into the rounds (below)
  ThreadValues values = threadValuesOf(*step);
  replaceThreadQueries(*step, values);
  announceThreadBeforeCalls(*step, values);
  fuseShuffleChains(*step, values.linear, values.tid[0]);
  countWaitingLoopTrips(*step);
  splitPointerArithmetic(*step);  // the addresses the counts made: base + offsets again
  for (auto& block : *step)
    if (auto* ret = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator())) {
      llvm::ReturnInst::Create(c, llvm::ConstantInt::get(i32, 0), ret);
      ret->eraseFromParent();
    }

  // What the rewrites above left unused (a fused chain's bitcasts of its first value, for one)
  // must not count as used after a wait: each such value costs a frame slot stored every step.
  {
    llvm::SmallVector<llvm::WeakTrackingVH, 64> dead;
    for (llvm::Instruction& inst : llvm::instructions(*step))
      if (llvm::isInstructionTriviallyDead(&inst)) dead.push_back(&inst);
    llvm::RecursivelyDeleteTriviallyDeadInstructionsPermissive(dead);
  }
  std::vector<WaitPoint> waits;
  for (llvm::CallInst* call : waitingCalls(*step))
    waits.push_back(splitAtWait(call, values, static_cast<uint32_t>(waits.size())));
  llvm::DenseSet<const llvm::Value*> uniform;
  if (blockUniformSlots && waitsOnlyAtBlockBarriers(waits))
    uniform = blockUniformValues(*step, values);
  rematerializeAcrossWaits(liveAcrossWaits(*step, waits));
  // Demoting a phi leaves one reload where it stood, itself live across the wait when the phi
  // was: repeat until nothing is (the second round gives each use its own reload). The slots
  // of uniform values, and their reloads, stay known as uniform.
  std::vector<llvm::AllocaInst*> valueSlots, uniformSlots;
  auto demoted = [&](bool wasUniform, llvm::AllocaInst* slot) {
    valueSlots.push_back(slot);
    if (!wasUniform) return;
    uniformSlots.push_back(slot);
    for (llvm::User* user : slot->users())
      if (llvm::isa<llvm::LoadInst>(user)) uniform.insert(user);
  };
  for (std::vector<llvm::Instruction*> live = liveAcrossWaits(*step, waits); !live.empty();
       live = liveAcrossWaits(*step, waits)) {
    // Ranges first, while every value is still in SSA form (a phi's loop is still visible).
    llvm::DenseMap<llvm::Value*, llvm::ConstantRange> ranges = demotedRanges(live);
    auto markReloads = [&](llvm::Value* value, llvm::AllocaInst* slot) {
      if (auto it = ranges.find(value); it != ranges.end()) markReloadRange(slot, it->second);
    };
    std::vector<llvm::PHINode*> phis;
    for (llvm::Instruction* inst : live) {
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(inst)) {
        phis.push_back(phi);
        continue;
      }
      llvm::AllocaInst* slot = llvm::DemoteRegToStack(*inst);
      markReloads(inst, slot);
      demoted(uniform.contains(inst), slot);
    }
    for (llvm::PHINode* phi : phis) {
      bool wasUniform = uniform.erase(phi);  // the phi is erased: forget its address
      llvm::AllocaInst* slot = llvm::DemotePHIToStack(phi);
      markReloads(phi, slot);
      demoted(wasUniform, slot);
    }
  }
  separateFrameValues(*step, valueSlots);
  UniformArea uniformArea = moveUniformSlots(*step, waits, uniformSlots, values);
  info.cpuUniformFrameBytes = uniformArea.bytes;

  // Each wait returns its code, (resume point << 2) | kind; the new entry dispatches on the point.
  llvm::BasicBlock* start = &step->getEntryBlock();
  auto* dispatch = llvm::BasicBlock::Create(c, "dispatch", step, start);
  auto* choose = llvm::SwitchInst::Create(step->getArg(6), start,
                                          static_cast<unsigned>(waits.size()), dispatch);
  for (size_t i = 0; i < waits.size(); ++i) {
    uint32_t point = static_cast<uint32_t>(i + 1);
    llvm::Instruction* branch = waits[i].suspend->getTerminator();
    llvm::ReturnInst::Create(
        c, llvm::ConstantInt::get(i32, point << 2 | static_cast<uint32_t>(waits[i].kind)),
        branch);
    branch->eraseFromParent();
    choose->addCase(llvm::ConstantInt::get(i32, point), waits[i].resume);
  }
  info.cpuFrameBytes = moveAllocasToFrame(*step, dispatch, values);
  info.cpuExecution = CpuExecution::Continuation;
  info.cpuWarpSites.clear();
  for (const WaitPoint& wait : waits) info.cpuWarpSites.push_back(wait.site);
  // Inlined into the rounds, a step costs a copy of the kernel per resume point: worth it for
  // typical kernels (a dozen waits in a few hundred instructions). Big kernels with many waits
  // (CUB's radix sort) would multiply compile time for little gain: their rounds call the step.
  size_t copies = (waits.size() + 1) * step->getInstructionCount();
  if (copies <= kInlinedRoundBudget)
    step->addFnAttr(llvm::Attribute::AlwaysInline);
  else
    step->addFnAttr(llvm::Attribute::NoInline);
  buildRounds(*step, info, waits, uniformArea, chainWaits);
}

// Whether `f` reads the launch's extent, %ntid or %nctaid (constant for the whole launch).
bool isExtentRegister(const llvm::Function* f) {
  return f != nullptr && (f->getName().starts_with("__rocuda_sreg_ntid_") ||
                          f->getName().starts_with("__rocuda_sreg_nctaid_"));
}

// Whether `v` is computed from the block's or the grid's extent (%ntid, %nctaid) alone, through
// arithmetic and casts: the step of a grid-stride (`i += blockDim.x * gridDim.x`) or block-stride
// loop.
bool fromLaunchExtent(llvm::Value* v, int depth = 0) {
  if (depth > 8) return false;
  if (auto* call = llvm::dyn_cast<llvm::CallInst>(v)) {
    return isExtentRegister(call->getCalledFunction());
  }
  if (llvm::isa<llvm::Constant>(v)) return false;
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  if (inst == nullptr ||
      !(llvm::isa<llvm::BinaryOperator>(inst) || llvm::isa<llvm::CastInst>(inst)))
    return false;
  bool extent = false;
  for (llvm::Value* operand : inst->operands()) {
    if (llvm::isa<llvm::Constant>(operand)) continue;
    if (!fromLaunchExtent(operand, depth + 1)) return false;
    extent = true;
  }
  return extent;
}

// A stride loop of the kernel: an induction variable (an integer, or a pointer stepped by a
// one-index getelementptr of `element`) stepped each iteration by an amount computed from the
// launch's extent.
struct StrideLoop {
  llvm::BasicBlock* latch;
  llvm::BasicBlock* header;
  llvm::PHINode* induction;
  llvm::Value* step;
  llvm::Type* element;  // the getelementptr's element type; null for an integer
  unsigned depth;       // 1: not inside another loop
};

// `phi` as an induction of `loop` (entered from one block, stepped at its latch by an add or
// a one-index getelementptr of a value the loop does not change), or nullopt.
std::optional<StrideLoop> inductionOf(llvm::PHINode& phi, const llvm::Loop& loop) {
  llvm::BasicBlock* latch = loop.getLoopLatch();
  if (latch == nullptr || phi.getNumIncomingValues() != 2 || phi.getBasicBlockIndex(latch) < 0)
    return std::nullopt;
  auto* next = llvm::dyn_cast<llvm::Instruction>(phi.getIncomingValueForBlock(latch));
  if (next == nullptr) return std::nullopt;
  llvm::Value* step = nullptr;
  llvm::Type* element = nullptr;
  if (next->getOpcode() == llvm::Instruction::Add) {
    step = next->getOperand(0) == &phi   ? next->getOperand(1)
           : next->getOperand(1) == &phi ? next->getOperand(0)
                                         : nullptr;
  } else if (auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(next);
             gep != nullptr && gep->getPointerOperand() == &phi && gep->getNumIndices() == 1) {
    step = gep->idx_begin()->get();
    element = gep->getSourceElementType();
  }
  if (step == nullptr || !loop.isLoopInvariant(step)) return std::nullopt;
  return StrideLoop{latch, loop.getHeader(), &phi, step, element, loop.getLoopDepth()};
}

std::vector<StrideLoop> strideLoops(llvm::Function& f) {
  std::vector<StrideLoop> found;
  llvm::DominatorTree dominators(f);
  llvm::LoopInfo loops(dominators);
  for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
    for (llvm::PHINode& phi : loop->getHeader()->phis()) {
      std::optional<StrideLoop> induction = inductionOf(phi, *loop);
      if (induction && fromLaunchExtent(induction->step)) {
        found.push_back(*induction);
        break;
      }
    }
  }
  return found;
}

// In the lockstep form of a kernel whose one stride loop is inside no other loop, every thread
// enters the loop at most once, in the first round, and takes one iteration per round until it
// leaves: the threads still in the loop are at the same iteration in every round. Count the
// iterations (a value every such thread has alike: a block-uniform slot) and compute the
// induction variable from its start and the count, not from its last value: the start is
// recomputed from the thread's indices after each wait, so that `x[i]` is an affine access the
// rounds widen into contiguous vectors (the induction kept in the frame made it a gather).
void countStrideIterations(const StrideLoop& loop) {
  llvm::PHINode* induction = loop.induction;
  llvm::BasicBlock* entering = induction->getIncomingBlock(0) == loop.latch
                                   ? induction->getIncomingBlock(1)
                                   : induction->getIncomingBlock(0);
  llvm::Value* start = induction->getIncomingValueForBlock(entering);
  llvm::Type* countType = loop.step->getType();
  auto* count =
      llvm::PHINode::Create(countType, 2, "stride.iteration", loop.header->getFirstNonPHIIt());
  count->addIncoming(llvm::ConstantInt::get(countType, 0), entering);
  llvm::IRBuilder<> atLatch(loop.latch->getTerminator());
  count->addIncoming(atLatch.CreateAdd(count, llvm::ConstantInt::get(countType, 1)), loop.latch);
  llvm::IRBuilder<> b(&*loop.header->getFirstInsertionPt());
  llvm::Value* offset = b.CreateMul(count, loop.step);
  llvm::Value* value = loop.element != nullptr ? b.CreateGEP(loop.element, start, offset)
                                               : b.CreateAdd(start, offset);
  // The old step, now unused unless the loop's exit needs it: gone, so that the start and
  // count, not a value computed from them before a wait, are what the step after it reads.
  llvm::Value* stepped = induction->getIncomingValueForBlock(loop.latch);
  induction->replaceAllUsesWith(value);
  induction->eraseFromParent();
  llvm::RecursivelyDeleteTriviallyDeadInstructions(stepped);
}

// A loop that waits (a tiled loop's barriers) kept each induction it steps in the threads'
// frames: nvcc's strength-reduced addresses (`a + (row * k + tx) * 4`, 64 bytes a trip), which
// the rounds loaded as a vector of pointers to gather through (SGEMM's tile loads: half its
// time on AMD Zen 5). Each is computed from its start and a count of the loop's trips instead,
// as in countStrideIterations: the start is recomputed from the thread's indices after each
// wait (rematerializeAcrossWaits), and the count is a value every thread has alike (threads
// run a loop with a barrier in step), so the loads are contiguous vectors again.
void countWaitingLoopTrips(llvm::Function& f) {
  std::vector<StrideLoop> inductions;
  {
    llvm::DominatorTree dominators(f);
    llvm::LoopInfo loops(dominators);
    for (llvm::Loop* loop : loops.getLoopsInPreorder()) {
      bool waits = llvm::any_of(loop->blocks(), [](llvm::BasicBlock* block) {
        return llvm::any_of(*block, [](llvm::Instruction& inst) {
          auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
          return call != nullptr && isWaitingFunction(call->getCalledFunction());
        });
      });
      if (!waits || loop->getLoopPredecessor() == nullptr) continue;
      for (llvm::PHINode& phi : loop->getHeader()->phis()) {
        std::optional<StrideLoop> induction = inductionOf(phi, *loop);
        // A count already (0, 1, 2...: a lockstep form's, countStrideIterations) stays.
        auto* step = induction ? llvm::dyn_cast<llvm::ConstantInt>(induction->step) : nullptr;
        auto* start = llvm::dyn_cast<llvm::Constant>(phi.getIncomingValue(0));
        if (step != nullptr && step->isOne() && start != nullptr && start->isNullValue() &&
            phi.getIncomingBlock(0) != induction->latch)
          continue;
        if (induction) inductions.push_back(*induction);
      }
    }
  }
  for (const StrideLoop& induction : inductions) countStrideIterations(induction);
}

// A BlockLoop kernel runs each thread's whole loop before the next thread's. A stride loop's
// threads then walk the data one after another, each touching one element per stride (a
// power-of-two stride maps every access of a thread to one cache set): 15-80 times slower
// than taking the block's iterations together, as a GPU's warps do. Its lockstep form is the
// kernel with a block barrier on each stride loop's back edge, run as a Continuation: each
// round takes one iteration of every thread still in the loop. The barrier adds no meaning
// (any interleaving of the threads is one CUDA allows; threads that left the loop run to the
// end, having no other wait), so the runtime may run either form (docs/ARCHITECTURE.md).
bool buildLockstepForm(llvm::Function& kernel, KernelInfo& info, bool chainWaits) {
  std::vector<StrideLoop> loops = strideLoops(kernel);
  if (loops.empty()) return false;
  llvm::Module& m = *kernel.getParent();
  llvm::LLVMContext& c = m.getContext();
  llvm::ValueToValueMapTy map;
  llvm::Function* clone = llvm::CloneFunction(&kernel, map);
  auto* i32 = llvm::Type::getInt32Ty(c);
  llvm::FunctionCallee barrier = m.getOrInsertFunction(
      kBarrierFunctions[0], llvm::FunctionType::get(llvm::Type::getVoidTy(c), {i32, i32}, false));
  if (auto* declared = llvm::dyn_cast<llvm::Function>(barrier.getCallee())) {
    declared->setConvergent();
    declared->setDoesNotThrow();
  }
  auto mapped = [&](llvm::Value* v) -> llvm::Value* {
    auto it = map.find(v);
    return it == map.end() ? v : static_cast<llvm::Value*>(it->second);
  };
  bool countIterations =
      loops.size() == 1 && loops[0].depth == 1 && loops[0].induction->getNumIncomingValues() == 2;
  for (StrideLoop& loop : loops) {
    loop = {llvm::cast<llvm::BasicBlock>(mapped(loop.latch)),
            llvm::cast<llvm::BasicBlock>(mapped(loop.header)),
            llvm::cast<llvm::PHINode>(mapped(loop.induction)),
            mapped(loop.step),
            loop.element,
            loop.depth};
    if (countIterations) countStrideIterations(loop);
    llvm::BasicBlock* yield = llvm::SplitEdge(loop.latch, loop.header);
    llvm::CallInst::Create(barrier,
                           {llvm::ConstantInt::get(i32, 0), llvm::ConstantInt::get(i32, 0)}, "",
                           yield->getTerminator());
  }
  KernelInfo lockstep = info;
  lockstep.name = lockstepName(info.name);
  // Block-uniform slots only where the threads in a round are at one iteration (above).
  lowerToContinuation(*clone, lockstep, chainWaits, /*blockUniformSlots=*/countIterations);
  clone->eraseFromParent();
  info.cpuLockstep = true;
  info.cpuLockstepLoops = static_cast<uint32_t>(loops.size());
  info.cpuLockstepFrameBytes = lockstep.cpuFrameBytes;
  info.cpuLockstepUniformFrameBytes = lockstep.cpuUniformFrameBytes;
  return true;
}

// ---- The flat form of a grid-stride loop ----
//
// A kernel that is one grid-stride loop, `for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
// i += blockDim.x * gridDim.x) body(i)`, whose body knows its thread only through i (no other
// thread index, no shared or local memory, no value carried from one iteration to the next,
// nothing before or after the loop that writes memory) runs body(i) once for every i in [0, n),
// each thread's in increasing order. Its flat form runs a range of consecutive indices, `void
// __rocuda_flat_<K>(ptr params, ptr context, i64 begin, i64 end)`, every one of them a different
// thread's when the range is no longer than the grid's threads: the runtime gives each worker a
// range of threads and runs their iterations pass by pass over the grid, each pass a plain loop
// over consecutive indices, reading and writing memory in order as an OpenMP loop does (the
// lockstep form took each block's iterations 1 KiB at a time, a stride apart). `i64
// __rocuda_flat_extent_<K>(ptr params, ptr context)` gives n for a launch, or -1 when the flat
// form does not apply to it: not one-dimensional, more than 2^31 - 1 threads (the index computed
// in 32 bits would wrap), or an index that would wrap before reaching n.

// `v` with integer extensions stripped.
llvm::Value* withoutExtensions(llvm::Value* v) {
  while (llvm::isa<llvm::ZExtInst>(v) || llvm::isa<llvm::SExtInst>(v))
    v = llvm::cast<llvm::Instruction>(v)->getOperand(0);
  return v;
}

bool isSpecialRegister(llvm::Value* v, llvm::StringRef name) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(withoutExtensions(v));
  const llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
  return callee != nullptr && callee->getName() == ("__rocuda_sreg_" + name).str();
}

bool isProductOf(llvm::Value* v, llvm::StringRef a, llvm::StringRef b) {
  auto* mul = llvm::dyn_cast<llvm::BinaryOperator>(withoutExtensions(v));
  if (mul == nullptr || mul->getOpcode() != llvm::Instruction::Mul) return false;
  llvm::Value* x = mul->getOperand(0);
  llvm::Value* y = mul->getOperand(1);
  return (isSpecialRegister(x, a) && isSpecialRegister(y, b)) ||
         (isSpecialRegister(x, b) && isSpecialRegister(y, a));
}

// blockIdx.x * blockDim.x + threadIdx.x.
bool isGlobalThreadIndex(llvm::Value* v) {
  auto* add = llvm::dyn_cast<llvm::BinaryOperator>(withoutExtensions(v));
  if (add == nullptr || add->getOpcode() != llvm::Instruction::Add) return false;
  for (int k = 0; k < 2; ++k)
    if (isProductOf(add->getOperand(k), "ctaid_x", "ntid_x") &&
        isSpecialRegister(add->getOperand(1 - k), "tid_x"))
      return true;
  return false;
}

// Whether `v` can be computed again from the parameters and the launch's extent alone (the loop
// bound n, recomputed by the extent function): constants, loads from the parameter buffer,
// blockDim and gridDim, through arithmetic without side effects.
bool fromParametersAndExtent(llvm::Value* v, const llvm::Function& kernel, int depth = 0) {
  if (depth > 16) return false;
  if (llvm::isa<llvm::Constant>(v)) return true;
  if (v == kernel.getArg(0)) return true;
  auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
  if (inst == nullptr) return false;
  if (auto* call = llvm::dyn_cast<llvm::CallInst>(inst)) {
    return isExtentRegister(call->getCalledFunction());
  }
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst)) {
    if (!load->isSimple() ||
        llvm::getUnderlyingObject(load->getPointerOperand()) != kernel.getArg(0))
      return false;
  } else if (!(llvm::isa<llvm::BinaryOperator>(inst) || llvm::isa<llvm::CastInst>(inst) ||
               llvm::isa<llvm::GetElementPtrInst>(inst) || llvm::isa<llvm::SelectInst>(inst) ||
               llvm::isa<llvm::CmpInst>(inst))) {
    return false;
  }
  for (llvm::Value* operand : inst->operands())
    if (!fromParametersAndExtent(operand, kernel, depth + 1)) return false;
  return true;
}

// Copy `v`'s computation (fromParametersAndExtent) to `b`'s insertion point in a function whose
// arguments are (params, context).
llvm::Value* recompute(llvm::IRBuilder<>& b, llvm::Value* v, const llvm::Function& kernel,
                       llvm::DenseMap<llvm::Value*, llvm::Value*>& done) {
  if (llvm::isa<llvm::Constant>(v)) return v;
  llvm::Function* f = b.GetInsertBlock()->getParent();
  if (v == kernel.getArg(0)) return f->getArg(0);
  if (llvm::Value* known = done.lookup(v)) return known;
  auto* inst = llvm::cast<llvm::Instruction>(v);
  llvm::Value* copy;
  if (auto* call = llvm::dyn_cast<llvm::CallInst>(inst)) {
    llvm::StringRef name = call->getCalledFunction()->getName();
    ContextField field = name.starts_with("__rocuda_sreg_ntid_") ? kNtid : kNctaid;
    copy = loadContext(b, f->getArg(1), field, name.back() - 'x');
  } else {
    llvm::Instruction* clone = inst->clone();
    for (llvm::Use& operand : clone->operands())
      operand.set(recompute(b, operand.get(), kernel, done));
    copy = b.Insert(clone);
  }
  done[v] = copy;
  return copy;
}

// What the flat form needs of the kernel's grid-stride loop.
struct FlatLoop {
  llvm::PHINode* index;      // i
  llvm::Instruction* next;   // i + stride
  llvm::ICmpInst* exitTest;  // next < n, on the latch
  llvm::Value* bound;        // n
  bool isSigned;             // the comparison's
  unsigned indexEntry;       // the index phi's incoming entry from outside the loop
};

std::optional<FlatLoop> flatLoopOf(llvm::Function& kernel) {
  for (const llvm::Argument& arg : kernel.args())
    if (arg.getArgNo() != 0) return std::nullopt;
  llvm::DominatorTree dominators(kernel);
  llvm::LoopInfo loops(dominators);
  if (loops.getTopLevelLoops().size() != 1) return std::nullopt;
  llvm::Loop* loop = loops.getTopLevelLoops().front();
  llvm::BasicBlock* latch = loop->getLoopLatch();
  llvm::BasicBlock* exit = loop->getExitBlock();
  if (!loop->isInnermost() || latch == nullptr || exit == nullptr ||
      loop->getExitingBlock() != latch)
    return std::nullopt;
  // One phi: the index, stepped by the grid's threads.
  llvm::BasicBlock* header = loop->getHeader();
  if (std::distance(header->phis().begin(), header->phis().end()) != 1) return std::nullopt;
  FlatLoop flat{};
  flat.index = &*header->phis().begin();
  if (!flat.index->getType()->isIntegerTy() || flat.index->getNumIncomingValues() != 2)
    return std::nullopt;
  flat.indexEntry = flat.index->getIncomingBlock(0) == latch ? 1 : 0;
  auto* next = llvm::dyn_cast<llvm::BinaryOperator>(flat.index->getIncomingValueForBlock(latch));
  if (next == nullptr || next->getOpcode() != llvm::Instruction::Add) return std::nullopt;
  llvm::Value* step = next->getOperand(0) == flat.index   ? next->getOperand(1)
                      : next->getOperand(1) == flat.index ? next->getOperand(0)
                                                          : nullptr;
  if (step == nullptr || !isProductOf(step, "nctaid_x", "ntid_x") ||
      !isGlobalThreadIndex(flat.index->getIncomingValue(flat.indexEntry)))
    return std::nullopt;
  flat.next = next;
  // Left when next < n fails.
  auto* branch = llvm::dyn_cast<llvm::BranchInst>(latch->getTerminator());
  auto* test = branch && branch->isConditional()
                   ? llvm::dyn_cast<llvm::ICmpInst>(branch->getCondition())
                   : nullptr;
  if (test == nullptr) return std::nullopt;
  llvm::ICmpInst::Predicate predicate = test->getPredicate();
  if (test->getOperand(0) != next) predicate = llvm::ICmpInst::getSwappedPredicate(predicate);
  if (branch->getSuccessor(0) != header) predicate = llvm::ICmpInst::getInversePredicate(predicate);
  flat.bound = test->getOperand(0) == next ? test->getOperand(1) : test->getOperand(0);
  if ((test->getOperand(0) != next && test->getOperand(1) != next) ||
      (predicate != llvm::ICmpInst::ICMP_SLT && predicate != llvm::ICmpInst::ICMP_ULT) ||
      !fromParametersAndExtent(flat.bound, kernel))
    return std::nullopt;
  flat.exitTest = test;
  flat.isSigned = predicate == llvm::ICmpInst::ICMP_SLT;
  // Entered exactly when the thread's first index passes the same test: that test is the one
  // branch outside the loop (a do-while would run one iteration in every thread; another branch
  // might keep some threads out).
  llvm::Value* start = flat.index->getIncomingValue(flat.indexEntry);
  unsigned guards = 0;
  for (llvm::BasicBlock& block : kernel) {
    if (loop->contains(&block)) continue;
    llvm::Instruction* terminator = block.getTerminator();
    if (llvm::isa<llvm::ReturnInst>(terminator)) continue;
    auto* jump = llvm::dyn_cast<llvm::BranchInst>(terminator);
    if (jump == nullptr) return std::nullopt;
    if (jump->isUnconditional()) continue;
    auto* guard = llvm::dyn_cast<llvm::ICmpInst>(jump->getCondition());
    if (guard == nullptr || ++guards > 1) return std::nullopt;
    llvm::ICmpInst::Predicate passes = guard->getPredicate();
    if (guard->getOperand(0) != start) passes = llvm::ICmpInst::getSwappedPredicate(passes);
    bool firstEnters = dominators.dominates(jump->getSuccessor(0), header);
    if (!firstEnters && !dominators.dominates(jump->getSuccessor(1), header)) return std::nullopt;
    if (!firstEnters) passes = llvm::ICmpInst::getInversePredicate(passes);
    bool comparesStartWithBound =
        (guard->getOperand(0) == start && guard->getOperand(1) == flat.bound) ||
        (guard->getOperand(1) == start && guard->getOperand(0) == flat.bound);
    if (!comparesStartWithBound || passes != predicate) return std::nullopt;
  }
  if (guards != 1) return std::nullopt;
  // Values computed from the thread's indices before the loop reach it only as the index's
  // start (`int t = threadIdx.x; for (...) y[i] = t;` knows its thread otherwise).
  llvm::SmallPtrSet<const llvm::Value*, 16> fromThread;
  for (llvm::BasicBlock* block : llvm::ReversePostOrderTraversal<llvm::Function*>(&kernel)) {
    if (loop->contains(block)) continue;
    for (llvm::Instruction& inst : *block) {
      bool derived = isSpecialRegister(&inst, "tid_x") || isSpecialRegister(&inst, "ctaid_x");
      for (llvm::Value* operand : inst.operands()) derived |= fromThread.contains(operand);
      if (derived) fromThread.insert(&inst);
    }
  }
  for (llvm::BasicBlock* block : loop->blocks())
    for (llvm::Instruction& inst : *block)
      for (llvm::Use& operand : inst.operands())
        if (fromThread.contains(operand.get()) &&
            !(&inst == flat.index && operand.getOperandNo() == flat.indexEntry))
          return std::nullopt;
  // The body knows its thread only through the index; nothing else writes memory or lives on.
  for (llvm::BasicBlock& block : kernel)
    for (llvm::Instruction& inst : block) {
      bool inLoop = loop->contains(&block);
      if (llvm::isa<llvm::AllocaInst>(inst)) return std::nullopt;  // per-thread memory
      if (inLoop)
        for (llvm::User* user : inst.users())
          if (!loop->contains(llvm::cast<llvm::Instruction>(user))) return std::nullopt;
      auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
      if (call != nullptr) {
        const llvm::Function* callee = call->getCalledFunction();
        if (callee == nullptr) return std::nullopt;
        llvm::StringRef name = callee->getName();
        if (name.starts_with("__rocuda_sreg_")) {
          bool extent = isExtentRegister(callee);
          bool identity = name == "__rocuda_sreg_tid_x" || name == "__rocuda_sreg_ctaid_x";
          if (!extent && (inLoop || !identity)) return std::nullopt;
          continue;
        }
        if (name == "__rocuda_shared_base" || needsThreadIdentity(*call) ||
            !callee->isDeclaration() || (!inLoop && !callee->isIntrinsic()))
          return std::nullopt;
      }
      if (!inLoop && inst.mayWriteToMemory()) return std::nullopt;
    }
  return flat;
}

// Give a kernel that is one grid-stride loop (flatLoopOf) its flat form and extent function.
void buildFlatForm(llvm::Function& kernel, KernelInfo& info) {
  std::optional<FlatLoop> loop = flatLoopOf(kernel);
  if (!loop) return;
  llvm::Module& m = *kernel.getParent();
  llvm::LLVMContext& c = m.getContext();
  auto* ptr = llvm::PointerType::getUnqual(c);
  auto* i64 = llvm::Type::getInt64Ty(c);

  // The extent: n, or -1 when the launch does not suit the flat form.
  auto* extent =
      llvm::Function::Create(llvm::FunctionType::get(i64, {ptr, ptr}, false),
                             llvm::GlobalValue::ExternalLinkage, flatExtentSymbol(info.name), m);
  markLaunchArguments(*extent, info);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", extent));
  llvm::DenseMap<llvm::Value*, llvm::Value*> done;
  llvm::Value* bound = recompute(b, loop->bound, kernel, done);
  llvm::Value* n = loop->isSigned ? b.CreateSExt(bound, i64) : b.CreateZExt(bound, i64);
  llvm::Value* context = extent->getArg(1);
  auto dim = [&](ContextField field, int axis) {
    return b.CreateZExt(loadContext(b, context, field, axis), i64);
  };
  llvm::Value* threads = b.CreateMul(dim(kNtid, 0), dim(kNctaid, 0));
  llvm::Value* unsuitable =
      b.CreateOr({b.CreateICmpNE(b.CreateMul(dim(kNtid, 1), dim(kNtid, 2)), b.getInt64(1)),
                  b.CreateICmpNE(b.CreateMul(dim(kNctaid, 1), dim(kNctaid, 2)), b.getInt64(1)),
                  b.CreateICmpUGT(threads, b.getInt64(INT32_MAX))});
  // The last index a thread computes, n - 1 + threads, must not wrap in the index's type.
  unsigned bits = loop->index->getType()->getIntegerBitWidth();
  if (bits < 64) {
    uint64_t largest = loop->isSigned ? (uint64_t{1} << (bits - 1)) - 1 : (uint64_t{1} << bits) - 1;
    unsuitable =
        b.CreateOr(unsuitable, b.CreateICmpSGT(b.CreateAdd(n, b.CreateSub(threads, b.getInt64(1))),
                                               b.getInt64(static_cast<int64_t>(largest))));
  } else if (!loop->isSigned) {
    unsuitable = b.CreateOr(unsuitable, b.CreateICmpSLT(n, b.getInt64(0)));  // past 2^63
  } else {
    unsuitable = b.CreateOr(unsuitable, b.CreateICmpSGT(n, b.getInt64(INT64_MAX - INT32_MAX)));
  }
  llvm::Value* count = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, n, b.getInt64(0));
  b.CreateRet(b.CreateSelect(unsuitable, b.getInt64(-1), count));

  // The flat form: the kernel with the index running from begin to end by one.
  llvm::ValueToValueMapTy map;
  llvm::Function* clone = llvm::CloneFunction(&kernel, map);
  llvm::Function* flat = moveBody(
      *clone, llvm::FunctionType::get(llvm::Type::getVoidTy(c), {ptr, ptr, i64, i64}, false),
      flatSymbol(info.name));
  clone->eraseFromParent();
  flat->setLinkage(llvm::GlobalValue::ExternalLinkage);
  markLaunchArguments(*flat, info);
  auto* zero = b.getInt32(0);
  replaceThreadQueries(*flat, {flat->getArg(0), flat->getArg(1), zero, {zero, zero, zero}});
  auto* index = llvm::cast<llvm::PHINode>(map[loop->index]);
  auto* next = llvm::cast<llvm::Instruction>(map[loop->next]);
  auto* test = llvm::cast<llvm::ICmpInst>(map[loop->exitTest]);
  llvm::Value* boundCopy = map[loop->bound];
  llvm::IRBuilder<> entry(&*flat->getEntryBlock().getFirstInsertionPt());
  llvm::Type* indexType = index->getType();
  index->setIncomingValue(loop->indexEntry, entry.CreateTrunc(flat->getArg(2), indexType));
  // A fresh step by one: `i + stride` itself may have other users in the body (`y[i] = i +
  // blockDim.x * gridDim.x` shares it), which keep it.
  llvm::Value* step =
      llvm::IRBuilder<>(next).CreateAdd(index, llvm::ConstantInt::get(indexType, 1), "flat.next");
  index->setIncomingValue(1 - loop->indexEntry, step);
  unsigned nextSide = test->getOperand(0) == next ? 0 : 1;
  test->setOperand(nextSide, step);
  test->setOperand(1 - nextSide, entry.CreateTrunc(flat->getArg(3), boundCopy->getType()));
  // The runtime's ranges hold no more indices than the grid has threads: each iteration is
  // another thread's, with no order between their accesses, as in a work-item loop.
  llvm::MDNode* accesses = llvm::MDNode::getDistinct(c, {});
  for (llvm::BasicBlock& block : *flat)
    for (llvm::Instruction& inst : block)
      if (inst.mayReadOrWriteMemory())
        inst.setMetadata(llvm::LLVMContext::MD_access_group, accesses);
  markParallelLoop(test->getParent()->getTerminator(), accesses, /*workItems=*/false);
  info.cpuFlat = true;
}

}  // namespace

namespace {

// Whether `load` reads what stays the same while a block runs, as the rounds inlined into their
// loop see it: the kernel's parameters, or a field of the block context before the lane arrays
// (a completed shfl swaps those). The copy of the last barrier, read through the frames'
// address, changes at every barrier the round function completes.
// In a round function that chains blocks, the block index changes too.
bool readsBlockConstant(const llvm::LoadInst& load, bool chainsBlocks) {
  llvm::APInt offset;
  const llvm::Argument* base = argumentAtOffset(load, offset);
  if (base == nullptr) return false;
  if (base->getArgNo() == 0) return true;
  auto fieldOffset = [&](ContextField field) {
    return contextFieldOffset(load.getContext(), *load.getModule(), field);
  };
  if (chainsBlocks && offset.uge(fieldOffset(kCtaid)) && offset.ult(fieldOffset(kNctaid)))
    return false;
  return base->getArgNo() == 1 && offset.ult(fieldOffset(kWarpLanes));
}

// Whether a round function (its one round inlined or not yet) may run the next block itself:
// it calls no function (a runtime service could leave state in the block's records, which the
// runtime resets per block). chainBlocks checks the loop's shape.
bool mayChainBlocks(llvm::Function& round, const llvm::Function* one) {
  auto callsNothing = [&](const llvm::Function& f) {
    for (const llvm::Instruction& inst : llvm::instructions(f))
      if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst))
        if (call->getCalledFunction() == nullptr ||
            (!call->getCalledFunction()->isIntrinsic() && call->getCalledFunction() != one))
          return false;
    return true;
  };
  return callsNothing(round) && (one == nullptr || callsNothing(*one));
}

// Once the round function's threads have all finished (code 0), go on to the next block when the
// context's blocksLeft allows: count down, advance ctaid (x fastest, as the runtime numbers
// blocks) and start the rounds again at point 0. The loads of ctaid are not invariant here
// (readsBlockConstant). False where the function's shape is not the one buildRounds made.
bool chainBlocks(llvm::Function& round, llvm::PHINode& point) {
  llvm::ReturnInst* ret = nullptr;
  for (llvm::BasicBlock& block : round)
    if (auto* each = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator())) {
      if (ret != nullptr) return false;
      ret = each;
    }
  llvm::BasicBlock* header = point.getParent();
  if (ret == nullptr || ret->getReturnValue() == nullptr ||
      std::next(header->phis().begin()) != header->phis().end())
    return false;
  llvm::LLVMContext& c = round.getContext();
  llvm::Value* context = round.getArg(1);
  llvm::BasicBlock* done = ret->getParent();
  llvm::BasicBlock* finish = done->splitBasicBlock(ret, "finish");
  auto* next = llvm::BasicBlock::Create(c, "next.block", &round, finish);
  done->getTerminator()->eraseFromParent();
  llvm::IRBuilder<> b(done);
  llvm::StructType* type = blockContextType(c);
  llvm::Value* leftField = b.CreateStructGEP(type, context, kBlocksLeft);
  llvm::Value* left = b.CreateLoad(b.getInt32Ty(), leftField, "blocks.left");
  llvm::Value* more = b.CreateAnd(b.CreateICmpEQ(ret->getReturnValue(), b.getInt32(0)),
                                  b.CreateICmpNE(left, b.getInt32(0)));
  b.CreateCondBr(more, next, finish);
  b.SetInsertPoint(next);
  b.CreateStore(b.CreateSub(left, b.getInt32(1)), leftField);
  // ctaid + 1 in x, carried into y and z.
  llvm::Value* carry = b.getTrue();
  for (int axis = 0; axis < 3; ++axis) {
    llvm::Value* field = b.CreateConstInBoundsGEP2_32(
        type->getElementType(kCtaid), b.CreateStructGEP(type, context, kCtaid), 0, axis);
    llvm::Value* index = b.CreateLoad(b.getInt32Ty(), field);
    llvm::Value* stepped = b.CreateAdd(index, b.CreateZExt(carry, b.getInt32Ty()));
    if (axis < 2) {
      llvm::Value* wraps = b.CreateICmpEQ(stepped, loadContext(b, context, kNctaid, axis));
      stepped = b.CreateSelect(wraps, b.getInt32(0), stepped);
      b.CreateStore(stepped, field);
      carry = wraps;
    } else {
      b.CreateStore(stepped, field);
    }
  }
  // A call that ran a prefix of the threads (the runtime's hand-back of a reduction's last warp)
  // starts the next block in a call of its own for all of them: the limit is a constant of this
  // one.
  llvm::Value* threads = loadContext(b, context, kThreadCount);
  auto* whole = llvm::BasicBlock::Create(c, "next.block.whole", &round, finish);
  auto* restart = llvm::BasicBlock::Create(c, "next.block.call", &round, finish);
  b.CreateCondBr(b.CreateICmpUGE(round.getArg(4), threads), whole, restart);
  b.SetInsertPoint(whole);
  b.CreateBr(header);
  point.addIncoming(b.getInt32(0), whole);
  b.SetInsertPoint(restart);
  llvm::CallInst* again =
      b.CreateCall(&round, {round.getArg(0), context, b.getInt32(0), round.getArg(3), threads});
  again->setTailCallKind(llvm::CallInst::TCK_MustTail);
  b.CreateRet(again);
  return true;
}

// Delete the stores of the threads' codes (oneRoundCodes) that the runtime cannot read: it reads
// the codes only after a round that returns them mixed, and a store from which every way out
// of `round` (one round, buildRound) leaves with the codes' `and` and `or` the same constant
// is in a round whose threads all gave that code (a tree level's loops, the code of their
// barrier, once the step is inlined).
void dropUnreadRoundCodes(llvm::Function& round) {
  // The one return, of `and == or ? and : mixed` (buildRound's exit), both phis of its block.
  llvm::ReturnInst* ret = nullptr;
  for (llvm::BasicBlock& block : round)
    if (auto* each = llvm::dyn_cast<llvm::ReturnInst>(block.getTerminator())) {
      if (ret != nullptr) return;
      ret = each;
    }
  using namespace llvm::PatternMatch;
  llvm::Value *all = nullptr, *any = nullptr;
  llvm::ICmpInst::Predicate equal;
  if (ret == nullptr || ret->getReturnValue() == nullptr ||
      !match(ret->getReturnValue(), m_Select(m_ICmp(equal, m_Value(all), m_Value(any)),
                                             m_Deferred(all), m_ConstantInt())) ||
      equal != llvm::ICmpInst::ICMP_EQ)
    return;
  llvm::BasicBlock* exit = ret->getParent();
  auto* allOf = llvm::dyn_cast<llvm::PHINode>(all);
  auto* anyOf = llvm::dyn_cast<llvm::PHINode>(any);
  if (allOf == nullptr || anyOf == nullptr || allOf->getParent() != exit ||
      anyOf->getParent() != exit)
    return;
  // The blocks from which some way leads out with codes that may differ.
  llvm::SmallPtrSet<llvm::BasicBlock*, 32> mayMix;
  std::vector<llvm::BasicBlock*> work;
  for (llvm::BasicBlock* from : llvm::predecessors(exit)) {
    auto* all = llvm::dyn_cast<llvm::ConstantInt>(allOf->getIncomingValueForBlock(from));
    if (all == nullptr || all != anyOf->getIncomingValueForBlock(from))
      if (mayMix.insert(from).second) work.push_back(from);
  }
  while (!work.empty()) {
    llvm::BasicBlock* block = work.back();
    work.pop_back();
    for (llvm::BasicBlock* from : llvm::predecessors(block))
      if (from != exit && mayMix.insert(from).second) work.push_back(from);
  }
  const llvm::Value* codes = oneRoundCodes(round);
  std::vector<llvm::StoreInst*> unread;
  for (llvm::BasicBlock& block : round) {
    if (&block == exit || mayMix.contains(&block)) continue;
    for (llvm::Instruction& inst : block)
      if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
          store != nullptr && !store->isVolatile() &&
          llvm::getUnderlyingObject(store->getPointerOperand()) == codes)
        unread.push_back(store);
  }
  for (llvm::StoreInst* store : unread) store->eraseFromParent();
}

// The blocks a round takes from `exit` (buildRound's exit, inlined) back to the rounds' loop
// at `header` when every thread returned `code` (the exit's phis `allOf` and `anyOf` both
// `code`): each block's branch follows from the code; `known` gets the values that follow from
// it. Empty when the way is not known or leaves the round function.
std::vector<llvm::BasicBlock*> wayBackAfter(
    llvm::BasicBlock* exit, llvm::PHINode* allOf, llvm::PHINode* anyOf, llvm::ConstantInt* code,
    const llvm::BasicBlock* header, llvm::DenseMap<const llvm::Value*, llvm::Constant*>& known) {
  const llvm::DataLayout& layout = exit->getModule()->getDataLayout();
  known = {{allOf, code}, {anyOf, code}};
  auto constantOf = [&](llvm::Value* value) -> llvm::Constant* {
    if (auto* constant = llvm::dyn_cast<llvm::Constant>(value)) return constant;
    return known.lookup(value);
  };
  std::vector<llvm::BasicBlock*> way;
  llvm::BasicBlock* from = nullptr;
  llvm::BasicBlock* block = exit;
  while (block != header) {
    if (way.size() == 8 || block->size() > 64 || llvm::is_contained(way, block)) return {};
    way.push_back(block);
    for (llvm::Instruction& inst : *block) {
      if (auto* phi = llvm::dyn_cast<llvm::PHINode>(&inst)) {
        if (from != nullptr)
          if (llvm::Constant* value = constantOf(phi->getIncomingValueForBlock(from)))
            known[phi] = value;
        continue;
      }
      if (inst.isTerminator() || inst.mayReadOrWriteMemory() || inst.mayHaveSideEffects()) continue;
      llvm::SmallVector<llvm::Constant*, 4> operands;
      for (llvm::Value* operand : inst.operands())
        if (llvm::Constant* constant = constantOf(operand)) operands.push_back(constant);
      if (operands.size() == inst.getNumOperands())
        if (llvm::Constant* folded = llvm::ConstantFoldInstOperands(&inst, operands, layout))
          known[&inst] = folded;
    }
    llvm::Instruction* last = block->getTerminator();
    llvm::BasicBlock* next = nullptr;
    if (auto* branch = llvm::dyn_cast<llvm::BranchInst>(last)) {
      if (branch->isUnconditional())
        next = branch->getSuccessor(0);
      else if (auto* taken =
                   llvm::dyn_cast_or_null<llvm::ConstantInt>(constantOf(branch->getCondition())))
        next = branch->getSuccessor(taken->isZero() ? 1 : 0);
    } else if (auto* choice = llvm::dyn_cast<llvm::SwitchInst>(last)) {
      if (auto* value =
              llvm::dyn_cast_or_null<llvm::ConstantInt>(constantOf(choice->getCondition())))
        next = choice->findCaseValue(value)->getCaseSuccessor();
    }
    if (next == nullptr) return {};
    from = block;
    block = next;
  }
  return way;
}

// Once the one round is inlined into the rounds' loop (`header`: the block of `point`, the
// round's resume point, which dispatches on it), thread the rounds whose course is known:
//  * a way out of the round along which every thread returned one code (the `and` and `or` of
//    the codes the same constant, buildRound's exit) gets its own copy of the blocks that
//    complete its wait (a barrier's copy of the uniform area) and come back with `point` a
//    constant;
//  * each way back with a constant `point` jumps to the code of that point, past the dispatch.
// A reduction tree's level goes on to the next level in a jump. The dispatch stays for the other
// ways (the first round, mixed codes, a wait the runtime completes).
void threadKnownRounds(llvm::Function& round, llvm::PHINode& point) {
  using namespace llvm::PatternMatch;
  llvm::BasicBlock* header = point.getParent();
  // Out of the round: its exit's select of `and == or ? and : mixed`, both phis of the exit.
  llvm::SmallVector<llvm::SelectInst*, 2> choices;
  for (llvm::BasicBlock& block : round)
    for (llvm::Instruction& inst : block) {
      llvm::Value *all = nullptr, *any = nullptr;
      llvm::ICmpInst::Predicate equal;
      if (match(&inst, m_Select(m_ICmp(equal, m_Value(all), m_Value(any)), m_Deferred(all),
                                m_ConstantInt())) &&
          equal == llvm::ICmpInst::ICMP_EQ && llvm::isa<llvm::PHINode>(all) &&
          llvm::isa<llvm::PHINode>(any) && llvm::cast<llvm::PHINode>(all)->getParent() == &block &&
          llvm::cast<llvm::PHINode>(any)->getParent() == &block)
        choices.push_back(llvm::cast<llvm::SelectInst>(&inst));
    }
  for (llvm::SelectInst* choice : choices) {
    llvm::BasicBlock* exit = choice->getParent();
    auto* test = llvm::cast<llvm::ICmpInst>(choice->getCondition());
    auto* allOf = llvm::cast<llvm::PHINode>(choice->getTrueValue());
    auto* anyOf = llvm::cast<llvm::PHINode>(test->getOperand(test->getOperand(0) == allOf ? 1 : 0));
    llvm::SmallPtrSet<llvm::BasicBlock*, 8> sources;
    for (llvm::BasicBlock* from : llvm::predecessors(exit)) sources.insert(from);
    for (llvm::BasicBlock* from : sources) {
      auto* code = llvm::dyn_cast<llvm::ConstantInt>(allOf->getIncomingValueForBlock(from));
      if (code == nullptr || code != anyOf->getIncomingValueForBlock(from)) continue;
      llvm::DenseMap<const llvm::Value*, llvm::Constant*> known;
      std::vector<llvm::BasicBlock*> way = wayBackAfter(exit, allOf, anyOf, code, header, known);
      if (way.empty()) continue;
      // A copy of the way for this source: its phis take the values coming from the block
      // before, and each block branches straight to the next.
      llvm::ValueToValueMapTy copied;
      std::vector<llvm::BasicBlock*> copies;
      for (llvm::BasicBlock* block : way)
        copies.push_back(llvm::CloneBasicBlock(block, copied, ".known", &round));
      auto along = [&](llvm::Value* value) -> llvm::Value* {
        if (llvm::Constant* constant = known.lookup(value)) return constant;
        auto it = copied.find(value);
        return it != copied.end() ? static_cast<llvm::Value*>(it->second) : value;
      };
      for (size_t i = 0; i < way.size(); ++i) {
        llvm::BasicBlock* before = i == 0 ? from : way[i - 1];
        for (llvm::PHINode& phi : way[i]->phis()) {
          auto* copy = llvm::cast<llvm::PHINode>(copied[&phi]);
          llvm::Value* incoming = phi.getIncomingValueForBlock(before);
          copied[&phi] = i == 0 ? incoming : along(incoming);
          copy->eraseFromParent();
        }
        copies[i]->getTerminator()->eraseFromParent();
        llvm::BranchInst::Create(i + 1 < way.size() ? copies[i + 1] : header, copies[i]);
      }
      for (llvm::BasicBlock* copy : copies)
        for (llvm::Instruction& inst : *copy)
          llvm::RemapInstruction(&inst, copied,
                                 llvm::RF_IgnoreMissingLocals | llvm::RF_NoModuleLevelChanges);
      for (llvm::PHINode& phi : header->phis())
        phi.addIncoming(along(phi.getIncomingValueForBlock(way.back())), copies.back());
      from->getTerminator()->replaceSuccessorWith(exit, copies.front());
      for (llvm::PHINode& phi : exit->phis())
        while (phi.getBasicBlockIndex(from) >= 0) phi.removeIncomingValue(from, false);
    }
  }

  // Back into the loop: the dispatch on the point, after what the round computes first.
  llvm::SwitchInst* dispatch = nullptr;
  for (llvm::User* user : point.users())
    if (auto* choice = llvm::dyn_cast<llvm::SwitchInst>(user);
        choice && choice->getCondition() == &point)
      dispatch = choice;
  if (dispatch == nullptr || !llvm::isa<llvm::PHINode>(header->front()) ||
      &*header->phis().begin() != &point ||
      std::next(header->phis().begin()) != header->phis().end())
    return;
  llvm::BasicBlock* start = dispatch->getParent();
  if (start != header && (header->getTerminator()->getNumSuccessors() != 1 ||
                          header->getTerminator()->getSuccessor(0) != start ||
                          start->getSinglePredecessor() != header || header->size() != 2))
    return;
  // What the round computes before the dispatch from the block's constants alone moves to the
  // function's entry; the rest is computed again on each way that jumps past it.
  llvm::BasicBlock& entry = round.getEntryBlock();
  auto beforeLoop = [&](llvm::Value* value) {
    auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
    return inst == nullptr || inst->getParent() == &entry;
  };
  for (llvm::Instruction& inst : llvm::make_early_inc_range(*start)) {
    if (&inst == dispatch || llvm::isa<llvm::PHINode>(inst) || inst.mayHaveSideEffects() ||
        !llvm::isSafeToSpeculativelyExecute(&inst) || !llvm::all_of(inst.operands(), beforeLoop))
      continue;
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
        load != nullptr && !load->hasMetadata(llvm::LLVMContext::MD_invariant_load))
      continue;
    inst.moveBefore(entry.getTerminator());
  }
  std::vector<llvm::Instruction*> computed;
  for (llvm::Instruction& inst : *start)
    if (&inst != dispatch && !llvm::isa<llvm::PHINode>(inst)) computed.push_back(&inst);
  llvm::DenseMap<llvm::Value*, std::vector<std::pair<llvm::BasicBlock*, llvm::Value*>>> copies;
  for (unsigned i = 0; i < point.getNumIncomingValues();) {
    auto* at = llvm::dyn_cast<llvm::ConstantInt>(point.getIncomingValue(i));
    llvm::BasicBlock* from = point.getIncomingBlock(i);
    llvm::BasicBlock* to =
        at != nullptr ? dispatch->findCaseValue(at)->getCaseSuccessor() : nullptr;
    if (to == nullptr || to == header || to == start || from->getSingleSuccessor() != header) {
      ++i;
      continue;
    }
    llvm::ValueToValueMapTy copied;
    copied[&point] = at;
    copies[&point].emplace_back(from, at);
    for (llvm::Instruction* inst : computed) {
      llvm::Instruction* copy = inst->clone();
      copy->insertBefore(from->getTerminator());
      llvm::RemapInstruction(copy, copied,
                             llvm::RF_IgnoreMissingLocals | llvm::RF_NoModuleLevelChanges);
      copied[inst] = copy;
      copies[inst].emplace_back(from, copy);
    }
    for (llvm::PHINode& phi : to->phis()) {
      llvm::Value* incoming = phi.getIncomingValueForBlock(start);
      phi.addIncoming(
          copied.count(incoming) ? static_cast<llvm::Value*>(copied[incoming]) : incoming, from);
    }
    from->getTerminator()->replaceSuccessorWith(header, to);
    point.removeIncomingValue(i, /*DeletePHIIfEmpty=*/false);
  }
  // The values computed before the dispatch now have a definition on each way past it.
  for (auto& [value, definitions] : copies) {
    auto* original = llvm::cast<llvm::Instruction>(value);
    llvm::SSAUpdater values;
    values.Initialize(original->getType(), original->getName());
    values.AddAvailableValue(original->getParent(), original);
    for (auto [block, definition] : definitions) values.AddAvailableValue(block, definition);
    for (llvm::Use& use : llvm::make_early_inc_range(original->uses())) {
      auto* user = llvm::cast<llvm::Instruction>(use.getUser());
      if (user->getParent() == original->getParent() && !llvm::isa<llvm::PHINode>(user)) continue;
      values.RewriteUse(use);
    }
  }
}

}  // namespace

void inlineChainedRounds(llvm::Module& module, ModuleInfo& info, llvm::TargetMachine& tm,
                         int optLevel) {
  if (optLevel <= 0) return;
  std::vector<llvm::CallInst*> rounds;
  for (llvm::Function& one : module) {
    if (one.isDeclaration() || !one.getName().ends_with(kOneRoundSuffix) || !one.hasOneUse())
      continue;
    auto* call = llvm::dyn_cast<llvm::CallInst>(one.user_back());
    if (call != nullptr && call->getCalledFunction() == &one &&
        call->getFunction()->getName() == one.getName().drop_back(kOneRoundSuffix.size()))
      rounds.push_back(call);
  }
  if (rounds.empty()) return;
  PassContext passes(tm, llvm::PipelineTuningOptions(), /*memsetLoops=*/false);
  llvm::FunctionPassManager cleanup;
  // The block's setup (its extent, the addresses of shared memory and the frames) leaves the
  // loop over the waits.
  if (llvm::Error error = passes.pb.parsePassPipeline(
          cleanup,
          "early-cse<memssa>,dse,instcombine<no-verify-fixpoint>,simplifycfg,loop(loop-deletion),"
          "loop-mssa(licm),early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg")) {
    llvm::consumeError(std::move(error));  // a fixed, valid text: cannot happen
    return;
  }
  // Only a kernel's own rounds chain blocks (not a lockstep form's, which the launch may not
  // pick): the Continuation kernels by their round function's name.
  llvm::StringMap<KernelInfo*> kernelOfRound;
  for (KernelInfo& each : info.kernels)
    if (each.cpuExecution == CpuExecution::Continuation)
      kernelOfRound[roundSymbol(each.name)] = &each;
  for (llvm::CallInst* call : rounds) {
    llvm::Function* one = call->getCalledFunction();
    llvm::Function* round = call->getFunction();
    KernelInfo* kernel = kernelOfRound.lookup(round->getName());
    bool chains = kernel != nullptr && mayChainBlocks(*round, one);
    for (llvm::Instruction& inst : llvm::instructions(*one))
      if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst))
        if (!readsBlockConstant(*load, chains))
          load->setMetadata(llvm::LLVMContext::MD_invariant_load, nullptr);
    dropUnreadRoundCodes(*one);
    one->removeFnAttr(llvm::Attribute::NoInline);
    // Its arguments are the round function's, which says as much of them: no scopes to declare.
    for (llvm::Argument& argument : one->args())
      one->removeParamAttr(argument.getArgNo(), llvm::Attribute::NoAlias);
    // The loop's resume point: the first phi of the call's block.
    auto* point = llvm::dyn_cast<llvm::PHINode>(&call->getParent()->front());
    llvm::InlineFunctionInfo inlining;
    if (!llvm::InlineFunction(*call, inlining).isSuccess()) continue;
    if (one->use_empty()) one->eraseFromParent();
    if (point != nullptr && chains) kernel->cpuChainsBlocks = chainBlocks(*round, *point);
    if (point != nullptr) threadKnownRounds(*round, *point);
    cleanup.run(*round, passes.fam);
  }
}

void dropInterchangedLockstepForms(llvm::Module& module, ModuleInfo& info,
                                   const llvm::StringMap<unsigned>& interchanged) {
  for (KernelInfo& kernel : info.kernels) {
    if (!kernel.cpuLockstep ||
        interchanged.lookup(blockLoopSymbol(kernel.name)) < kernel.cpuLockstepLoops)
      continue;
    std::string lockstep = lockstepName(kernel.name);
    // The round calls its one-round function, which may call the step: erased in that order.
    std::vector<llvm::Function*> functions;
    for (const std::string& name :
         {roundSymbol(lockstep), roundSymbol(lockstep) + std::string(kOneRoundSuffix),
          continuationSymbol(lockstep)})
      if (llvm::Function* f = module.getFunction(name)) functions.push_back(f);
    for (llvm::Function* f : functions) {
      f->dropAllReferences();
      f->replaceAllUsesWith(llvm::PoisonValue::get(f->getType()));
    }
    for (llvm::Function* f : functions) f->eraseFromParent();
    kernel.cpuLockstep = false;
    kernel.cpuLockstepFrameBytes = 0;
    kernel.cpuLockstepUniformFrameBytes = 0;
  }
}

void lowerToBlockForms(llvm::Module& module, ModuleInfo& info, bool chainWaits) {
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) splitPointerArithmetic(f);
  for (KernelInfo& kernelInfo : info.kernels) {
    llvm::Function* kernel = module.getFunction(kernelInfo.name);
    if (kernel == nullptr || kernel->isDeclaration()) continue;
    bool waits = kernelInfo.usesBarriers || kernelInfo.usesWarpCollectives;
    // A block form runs each thread up to its next barrier before the next thread: a thread
    // spin-waiting for a later one of its block would never leave. Without barriers any
    // spin-wait may be one; with them, waits on global memory are taken to be for other blocks
    // (decoupled look-back).
    if (kernelInfo.spinWaitsOnBlockMemory)
      kernelInfo.cpuSlowPathReason =
          "a thread spin-waits on shared memory, which a later thread of its block may be the "
          "one to change";
    else if (kernelInfo.spinWaits && !waits)
      kernelInfo.cpuSlowPathReason =
          "a thread spin-waits, and the thread it waits for may be a later one of its block";
    else
      kernelInfo.cpuSlowPathReason = slowPathReason(*kernel, waits);
    if (!kernelInfo.cpuSlowPathReason.empty()) continue;
    if (waits) {
      lowerToContinuation(*kernel, kernelInfo, chainWaits);
    } else {
      buildFlatForm(*kernel, kernelInfo);
      buildLockstepForm(*kernel, kernelInfo, chainWaits);
      lowerToBlockLoop(*kernel, kernelInfo);
    }
    kernel->eraseFromParent();
  }
}

}  // namespace rocuda::compiler::detail
