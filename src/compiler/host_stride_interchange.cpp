// Stride loops inside work-item loops. A CUDA thread that walks data in a grid-stride or
// block-stride loop, `for (i = base + tid; i < n; i += stride)`, takes one element per stride; on
// a GPU the block's threads take consecutive elements together. In a round's work-item loop each
// thread runs its whole loop before the next thread starts, so the block reads its data a stride
// apart, thread after thread: a power-of-two stride maps every access of a thread to one cache
// set (bench/cpu_device's histogram: 12 to 40 ms from run to run, the same loops interchanged in
// C++ 5 ms). Interchanged, the rounds run iteration k of every thread before iteration k + 1:
//
//   for k = 0, 1, ...: any = false
//     for each thread: [the code before the loop]; if i_k = start + k * stride still loops:
//                      [the loop's body at i_k]; any = true
//     until !any
//   for each thread: [the work-item loop with the stride loop skipped: the code after it]
//
// Any order of a block's threads between two waits is one CUDA allows, and each thread still
// runs its own iterations, and the code after its loop, in order. The transformation applies
// where it is exact and cheap to check:
//  * the stride loop is the work-item loop's only inner loop, left only from its latch; its
//    induction `i` is stepped by an amount the work-item loop does not change; other values it
//    carries from one iteration to the next (a thread's sum, a count), and values used after it,
//    are kept per thread between the passes, in arrays over the block's threads in x;
//  * its start is affine in the thread index with step 1 (consecutive threads start at
//    consecutive elements: what makes the interchange pay);
//  * it is entered through a guard testing the start as its latch tests the next value (`i < n`
//    or `i <= n`, signed or unsigned, n invariant: the form loop rotation gives a `for`);
//  * the code between the work-item loop's header and the loop has no effects and reads only
//    launch constants, so it can run again in every pass;
// Whether thread t runs iteration k is then `start + k * stride < n` computed without wrapping,
// provided the stride is positive and `n + stride - 1` does not wrap either (then no thread's
// induction wraps before it leaves): checked before the loops, the original work-item loop runs
// where it does not hold.
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/Local.h>
#include <llvm/Transforms/Utils/LoopSimplify.h>
#include <llvm/Transforms/Utils/LoopUtils.h>
#include <llvm/Transforms/Utils/ScalarEvolutionExpander.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <optional>

#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler::detail {
namespace {

// The work-item loop is copied twice: the most instructions it may hold, and the most
// interchanges in one function.
constexpr unsigned kMaxLoopInstructions = 2000;
constexpr unsigned kMaxInterchangesPerFunction = 16;
// The most values a thread may carry from one iteration to the next, or out of the loop, each
// kept in an array over the block's threads in x between the passes.
constexpr unsigned kMaxCarriedValues = 4;
constexpr uint64_t kMaxThreadsInX = kMaxBlockDim[0];
// The most elements (or bytes) between consecutive threads' starts: beyond a vector's width the
// interchange no longer gives consecutive threads neighbouring data.
constexpr uint64_t kMaxThreadStep = 64;

// A stride loop in a work-item loop, as the header comment requires it.
struct StrideLoopShape {
  llvm::Loop* items = nullptr;   // the work-item loop
  llvm::Loop* stride = nullptr;  // the stride loop in it
  llvm::PHINode* induction = nullptr;
  // The loop's other header phis (a sum, a count), and the LCSSA phis of values used after it.
  llvm::SmallVector<llvm::PHINode*, 4> carried;
  llvm::SmallVector<llvm::PHINode*, 4> results;
  llvm::Value* start = nullptr;
  llvm::Value* step = nullptr;
  llvm::Value* bound = nullptr;
  llvm::BasicBlock* guard = nullptr;  // tests the start before the loop
  // Thread `index` starts at firstStart + index * threadStep (threadStep > 0, a constant).
  const llvm::SCEV* firstStart = nullptr;
  uint64_t threadStep = 0;
  llvm::ICmpInst::Predicate goesOn{};  // `i goesOn bound`: another iteration (slt sle ult ule)
  // The work-item loop's blocks from its header to the stride loop's preheader.
  llvm::SmallVector<llvm::BasicBlock*, 8> before;
  const llvm::SCEV* trips = nullptr;  // the work-item loop's iterations
};

// The predicate under which `branch` goes to `to` when it compares `value` with something,
// normalized to `value pred other`; the other operand in `other`.
std::optional<llvm::ICmpInst::Predicate> predicateTowards(llvm::BranchInst* branch,
                                                          llvm::BasicBlock* to, llvm::Value* value,
                                                          llvm::Value*& other) {
  if (branch == nullptr || !branch->isConditional() ||
      branch->getSuccessor(0) == branch->getSuccessor(1))
    return std::nullopt;
  auto* compare = llvm::dyn_cast<llvm::ICmpInst>(branch->getCondition());
  if (compare == nullptr) return std::nullopt;
  llvm::ICmpInst::Predicate predicate = compare->getPredicate();
  llvm::Value* lhs = compare->getOperand(0);
  llvm::Value* rhs = compare->getOperand(1);
  if (rhs == value) {
    std::swap(lhs, rhs);
    predicate = llvm::ICmpInst::getSwappedPredicate(predicate);
  }
  if (lhs != value || rhs == value) return std::nullopt;
  if (branch->getSuccessor(0) != to) predicate = llvm::ICmpInst::getInversePredicate(predicate);
  switch (predicate) {
    case llvm::ICmpInst::ICMP_SLT:
    case llvm::ICmpInst::ICMP_SLE:
    case llvm::ICmpInst::ICMP_ULT:
    case llvm::ICmpInst::ICMP_ULE:
      other = rhs;
      return predicate;
    default:
      return std::nullopt;
  }
}

// Where a pointer points, as far as telling apart what a round's code reads from what it writes
// goes: one of the memories the block context points to (kShared, the shared window; kFrames),
// the kernel's arguments themselves, or unknown.
constexpr int64_t kUnknownMemory = -1, kArgumentMemory = -2, kGlobalMemory = -3;

int64_t memoryOf(const llvm::Value* pointer) {
  const llvm::Value* object = llvm::getUnderlyingObject(pointer);
  if (llvm::isa<llvm::Argument>(object)) return kArgumentMemory;
  auto* base = llvm::dyn_cast<llvm::LoadInst>(object);
  if (base == nullptr) return kUnknownMemory;
  for (ContextField field : {kShared, kFrames})
    if (readsContextField(*base, field)) return field;
  return kUnknownMemory;
}

// The memory an access reads or writes: global memory when its PTX said so (which no block
// context field points into), else memoryOf its address.
int64_t memoryAccessed(const llvm::Instruction& access) {
  llvm::StringRef space = stringMetadata(access, kSpaceMetadata);
  if (space == "global" || space == "constant") return kGlobalMemory;
  const llvm::Value* pointer = llvm::getLoadStorePointerOperand(&access);
  if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&access)) pointer = rmw->getPointerOperand();
  if (auto* cas = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&access))
    pointer = cas->getPointerOperand();
  return pointer != nullptr ? memoryOf(pointer) : kUnknownMemory;
}

// Whether `inst`, in code that runs again in every pass, may: no effects, and reads only memory
// that stays the same while the passes run: the launch's parameters, the block context, loads
// marked invariant, memory the kernel only reads (ld.global.nc), or block-private memory (the
// shared window, the frames) that the stride loop writes no part of (`written` lists what it
// writes). Never other global memory, which other blocks may write meanwhile.
bool repeatable(const llvm::Instruction& inst, const llvm::SmallVectorImpl<int64_t>& written) {
  if (inst.mayHaveSideEffects()) return false;
  if (!inst.mayReadFromMemory()) return true;
  auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
  if (load == nullptr || load->isVolatile() || load->isAtomic()) return false;
  if (load->hasMetadata(llvm::LLVMContext::MD_invariant_load) ||
      stringMetadata(*load, kSpaceMetadata) == "constant")
    return true;
  int64_t memory = memoryOf(load->getPointerOperand());
  if (memory == kArgumentMemory) return true;
  return memory >= 0 && !llvm::is_contained(written, memory) &&
         !llvm::is_contained(written, kUnknownMemory);
}

// The block's phi when it has exactly one.
llvm::PHINode* onlyPhi(llvm::BasicBlock& block) {
  auto phis = block.phis();
  if (phis.empty() || std::next(phis.begin()) != phis.end()) return nullptr;
  return &*phis.begin();
}

std::optional<StrideLoopShape> withStrideLoop(StrideLoopShape shape, llvm::Loop& stride,
                                              llvm::ScalarEvolution& se);

// The work-item loop `items` with a stride loop it can be interchanged with, if it holds one.
std::optional<StrideLoopShape> strideLoopIn(llvm::Loop& items, llvm::ScalarEvolution& se) {
  StrideLoopShape shape;
  shape.items = &items;
  llvm::BasicBlock* itemsHeader = items.getHeader();
  llvm::BasicBlock* itemsLatch = items.getLoopLatch();
  if (items.getSubLoops().empty() || !items.isLoopSimplifyForm() ||
      items.getExitingBlock() != itemsLatch || items.getExitBlock() == nullptr ||
      !items.isSafeToClone())
    return std::nullopt;
  // The work-item loop counts its threads and carries nothing else.
  llvm::PHINode* index = items.getCanonicalInductionVariable();
  if (index == nullptr || onlyPhi(*itemsHeader) != index) return std::nullopt;
  const llvm::SCEV* backedges = se.getBackedgeTakenCount(&items);
  if (llvm::isa<llvm::SCEVCouldNotCompute>(backedges)) return std::nullopt;
  shape.trips = se.getAddExpr(se.getTruncateOrZeroExtend(backedges, index->getType()),
                              se.getOne(index->getType()));
  size_t instructions = 0;
  for (const llvm::BasicBlock* block : items.blocks()) instructions += block->size();
  if (instructions > kMaxLoopInstructions) return std::nullopt;
  // Other inner loops (an atomic's compare-and-swap loop after the stride loop) stay as they are.
  for (llvm::Loop* stride : items.getSubLoops())
    if (std::optional<StrideLoopShape> found = withStrideLoop(shape, *stride, se)) return found;
  return std::nullopt;
}

std::optional<StrideLoopShape> withStrideLoop(StrideLoopShape shape, llvm::Loop& stride,
                                              llvm::ScalarEvolution& se) {
  llvm::Loop& items = *shape.items;
  llvm::BasicBlock* itemsHeader = items.getHeader();
  llvm::BasicBlock* itemsLatch = items.getLoopLatch();
  shape.stride = &stride;
  llvm::BasicBlock* header = stride.getHeader();
  llvm::BasicBlock* latch = stride.getLoopLatch();
  llvm::BasicBlock* preheader = stride.getLoopPreheader();
  if (!stride.getSubLoops().empty() || !stride.isLoopSimplifyForm() ||
      stride.getExitingBlock() != latch || stride.getExitBlock() == nullptr)
    return std::nullopt;
  // The induction: a header phi stepped by an amount the work-item loop does not change, whose
  // next value the latch tests against a bound it does not change either. The other header
  // phis are values the thread carries from one iteration to the next.
  auto* latchBranch = llvm::dyn_cast<llvm::BranchInst>(latch->getTerminator());
  for (llvm::PHINode& phi : header->phis()) {
    auto* next = llvm::dyn_cast<llvm::BinaryOperator>(phi.getIncomingValueForBlock(latch));
    if (shape.induction == nullptr && phi.getType()->isIntegerTy() && next != nullptr &&
        next->getOpcode() == llvm::Instruction::Add) {
      llvm::Value* step = next->getOperand(0) == &phi   ? next->getOperand(1)
                          : next->getOperand(1) == &phi ? next->getOperand(0)
                                                        : nullptr;
      llvm::Value* bound = nullptr;
      std::optional<llvm::ICmpInst::Predicate> goesOn;
      if (step != nullptr && items.isLoopInvariant(step))
        goesOn = predicateTowards(latchBranch, header, next, bound);
      if (goesOn && items.isLoopInvariant(bound)) {
        shape.induction = &phi;
        shape.step = step;
        shape.bound = bound;
        shape.goesOn = *goesOn;
        continue;
      }
    }
    shape.carried.push_back(&phi);
  }
  if (shape.induction == nullptr) return std::nullopt;
  shape.start = shape.induction->getIncomingValueForBlock(preheader);
  std::optional<llvm::ICmpInst::Predicate> goesOn = shape.goesOn;
  // The guard: the start tested as the latch tests the next value.
  llvm::BasicBlock* guard = shape.guard = preheader->getSinglePredecessor();
  llvm::Value* guardBound = nullptr;
  if (guard == nullptr || !items.contains(guard) || stride.contains(guard) ||
      predicateTowards(llvm::dyn_cast<llvm::BranchInst>(guard->getTerminator()), preheader,
                       shape.start, guardBound) != goesOn ||
      guardBound != shape.bound)
    return std::nullopt;
  // Consecutive threads start at consecutive elements (an index, or a byte address stepped by
  // the element's size).
  auto* start = llvm::dyn_cast<llvm::SCEVAddRecExpr>(se.getSCEV(shape.start));
  if (start == nullptr || start->getLoop() != &items || !start->isAffine() ||
      !se.isAvailableAtLoopEntry(start->getStart(), &items))
    return std::nullopt;
  auto* threadStep = llvm::dyn_cast<llvm::SCEVConstant>(start->getStepRecurrence(se));
  if (threadStep == nullptr || threadStep->getAPInt().isNonPositive() ||
      threadStep->getAPInt().ugt(kMaxThreadStep))
    return std::nullopt;
  shape.firstStart = start->getStart();
  shape.threadStep = threadStep->getAPInt().getZExtValue();
  // What the loop computes is used after it only through the exit's LCSSA phis.
  llvm::BasicBlock* exit = stride.getExitBlock();
  for (llvm::BasicBlock* block : stride.blocks())
    for (llvm::Instruction& inst : *block)
      for (llvm::User* user : inst.users()) {
        auto* userInst = llvm::cast<llvm::Instruction>(user);
        if (stride.contains(userInst->getParent())) continue;
        auto* lcssa = llvm::dyn_cast<llvm::PHINode>(user);
        if (lcssa == nullptr || lcssa->getParent() != exit) return std::nullopt;
        if (!lcssa->use_empty() && !llvm::is_contained(shape.results, lcssa))
          shape.results.push_back(lcssa);
      }
  if (shape.carried.size() > kMaxCarriedValues || shape.results.size() > kMaxCarriedValues)
    return std::nullopt;
  for (llvm::ArrayRef<llvm::PHINode*> values :
       {llvm::ArrayRef(shape.carried), llvm::ArrayRef(shape.results)})
    for (llvm::PHINode* value : values)
      if (!value->getType()->isIntOrPtrTy() && !value->getType()->isFloatingPointTy())
        return std::nullopt;
  // The code before the loop: every block of the work-item loop from which the preheader is
  // reached without the back edge; all of it repeatable.
  llvm::SmallVector<int64_t, 4> written;
  for (llvm::BasicBlock* block : stride.blocks())
    for (llvm::Instruction& inst : *block)
      if (inst.mayWriteToMemory()) written.push_back(memoryAccessed(inst));
  llvm::SmallPtrSet<llvm::BasicBlock*, 8> seen;
  llvm::SmallVector<llvm::BasicBlock*, 8> work{preheader};
  while (!work.empty()) {
    llvm::BasicBlock* block = work.pop_back_val();
    if (!seen.insert(block).second) continue;
    if (!items.contains(block) || stride.contains(block) || block == itemsLatch)
      return std::nullopt;
    shape.before.push_back(block);
    for (llvm::Instruction& inst : *block)
      if (!repeatable(inst, written) && !inst.isTerminator()) return std::nullopt;
    if (block != itemsHeader)
      for (llvm::BasicBlock* predecessor : llvm::predecessors(block)) work.push_back(predecessor);
  }
  return shape;
}

// The access group of the work-item loop's parallel accesses (llvm.loop.parallel_accesses),
// or null.
llvm::MDNode* parallelAccessGroup(const llvm::Loop& loop) {
  llvm::MDNode* option = llvm::findOptionMDForLoop(&loop, "llvm.loop.parallel_accesses");
  if (option == nullptr || option->getNumOperands() != 2) return nullptr;
  return llvm::dyn_cast<llvm::MDNode>(option->getOperand(1));
}

// The number of passes ahead whose data a pass prefetches.
constexpr uint64_t kPrefetchPasses = 4;
// The most cache lines one pass prefetches for one load.
constexpr uint64_t kMaxPrefetchLines = 64;

// At the start of pass k, prefetch the cache lines the block's threads will read in pass k +
// kPrefetchPasses, for each load of the stride loop's body whose address follows from the
// induction alone (`current`, or `wideCurrent`, its exact value in the wide type): a pass reads a
// block's share of each stride (256 bytes of a histogram's 64 KiB), too little for the hardware
// prefetcher to follow from one pass to the next. Returns the block that now ends `pass` (its
// branch to the threads' loop).
llvm::BasicBlock* prefetchAhead(llvm::ArrayRef<llvm::BasicBlock*> passBlocks, llvm::Value* current,
                                llvm::Value* wideCurrent, llvm::Value* k,
                                llvm::Value* wideFirstStart, llvm::Value* wideStep,
                                llvm::Value* threadStep, llvm::Value* trips,
                                llvm::BasicBlock* pass) {
  llvm::SmallPtrSet<llvm::BasicBlock*, 16> inside(passBlocks.begin(), passBlocks.end());
  llvm::Instruction* at = pass->getTerminator();
  llvm::IRBuilder<> b(at);  // stays before the first prefetch loop (values all passes use)
  llvm::Type* wide = k->getType();
  llvm::Type* inductionType = current->getType();
  // The induction of the first and of the last thread, kPrefetchPasses passes ahead.
  llvm::Value* aheadStart = b.CreateAdd(
      wideFirstStart,
      b.CreateMul(b.CreateAdd(k, llvm::ConstantInt::get(wide, kPrefetchPasses)), wideStep));
  llvm::Value* lastOffset = b.CreateMul(
      b.CreateSub(b.CreateZExt(trips, wide), llvm::ConstantInt::get(wide, 1)), threadStep);
  llvm::Value* aheadLast = b.CreateAdd(aheadStart, lastOffset);
  llvm::Value* first = b.CreateTrunc(aheadStart, inductionType);
  llvm::Value* last = b.CreateTrunc(aheadLast, inductionType);
  for (llvm::BasicBlock* block : passBlocks)
    for (llvm::Instruction& inst : *block) {
      auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
      if (load == nullptr || !load->isSimple()) continue;
      // Only addresses that depend on the induction (the others are the same every pass).
      llvm::SmallPtrSet<llvm::Value*, 2> used;
      llvm::Value* from =
          copyAddress(load->getPointerOperand(), {{current, first}, {wideCurrent, aheadStart}},
                      inside, at, used);
      if (from == nullptr || used.empty()) continue;
      llvm::Value* to = copyAddress(load->getPointerOperand(),
                                    {{current, last}, {wideCurrent, aheadLast}}, inside, at, used);
      if (to == nullptr) continue;
      at = prefetchLines(from, to, kMaxPrefetchLines, at);
    }
  return at->getParent();
}

// Rewrite `shape` as the header comment shows. `dt` and `li` are stale afterwards.
void interchange(StrideLoopShape& shape, llvm::DominatorTree& dt, llvm::LoopInfo& li,
                 llvm::ScalarEvolution& se) {
  llvm::Loop& items = *shape.items;
  llvm::Loop& stride = *shape.stride;
  llvm::Function& f = *items.getHeader()->getParent();
  llvm::LLVMContext& c = f.getContext();
  llvm::BasicBlock* itemsHeader = items.getHeader();
  llvm::BasicBlock* itemsLatch = items.getLoopLatch();
  llvm::BasicBlock* itemsExit = items.getExitBlock();
  llvm::BasicBlock* strideHeader = stride.getHeader();
  llvm::BasicBlock* strideLatch = stride.getLoopLatch();
  llvm::BasicBlock* strideEntry = stride.getLoopPreheader();
  llvm::BasicBlock* strideExit = stride.getExitBlock();
  llvm::PHINode* index = items.getCanonicalInductionVariable();
  llvm::Type* indexType = index->getType();
  auto* inductionType = llvm::cast<llvm::IntegerType>(shape.induction->getType());
  bool isSigned = llvm::ICmpInst::isSigned(shape.goesOn);
  llvm::Type* wide = llvm::IntegerType::get(c, 2 * inductionType->getBitWidth());
  auto widen = [&](llvm::IRBuilder<>& b, llvm::Value* v) {
    return isSigned ? b.CreateSExt(v, wide) : b.CreateZExt(v, wide);
  };
  // The work-item loop's iterations, computed where the loop was entered (before any change).
  llvm::BasicBlock* outer = items.getLoopPreheader();
  llvm::SCEVExpander expander(se, f.getDataLayout(), "interchange");
  llvm::Value* trips = expander.expandCodeFor(shape.trips, indexType, outer->getTerminator());
  llvm::Value* firstStart =
      expander.expandCodeFor(shape.firstStart, inductionType, outer->getTerminator());
  // The stride loop's unused LCSSA phis go: the copy below skips the loop.
  for (llvm::PHINode& phi : llvm::make_early_inc_range(strideExit->phis()))
    if (phi.use_empty()) phi.eraseFromParent();
  // Each value carried between iterations, or out of the loop, gets an array over the threads
  // in x, whose accesses join the work-item loop's parallel ones (each thread its own entry).
  llvm::IRBuilder<> atEntry(&*f.getEntryBlock().getFirstInsertionPt());
  auto threadArray = [&](llvm::Type* type) {
    return atEntry.CreateAlloca(llvm::ArrayType::get(type, kMaxThreadsInX), nullptr,
                                "stride.carried");
  };
  llvm::SmallVector<llvm::AllocaInst*, 4> carriedArrays, resultArrays;
  for (llvm::PHINode* phi : shape.carried) carriedArrays.push_back(threadArray(phi->getType()));
  for (llvm::PHINode* phi : shape.results) resultArrays.push_back(threadArray(phi->getType()));
  llvm::MDNode* accessGroup = parallelAccessGroup(items);
  auto entryOf = [&](llvm::IRBuilder<>& b, llvm::AllocaInst* array, llvm::Value* thread) {
    return b.CreateInBoundsGEP(array->getAllocatedType(), array,
                               {b.getInt64(0), b.CreateZExtOrTrunc(thread, b.getInt64Ty())});
  };
  auto grouped = [&](llvm::Instruction* access) {
    if (accessGroup != nullptr)
      access->setMetadata(llvm::LLVMContext::MD_access_group, accessGroup);
    return access;
  };

  // entry: the work-item loop's own (empty) preheader; rest: the copy that skips the stride loop.
  llvm::BasicBlock* entry = llvm::SplitEdge(outer, itemsHeader, &dt, &li);
  llvm::ValueToValueMapTy restMap;
  llvm::SmallVector<llvm::BasicBlock*, 16> restBlocks;
  llvm::cloneLoopWithPreheader(itemsExit, entry, &items, restMap, ".rest", &li, &dt, restBlocks);
  llvm::remapInstructionsInBlocks(restBlocks, restMap);
  auto* restEntry = llvm::cast<llvm::BasicBlock>(restMap[entry]);
  auto* restLatch = llvm::cast<llvm::BasicBlock>(restMap[itemsLatch]);
  for (llvm::PHINode& phi : itemsExit->phis()) {
    llvm::Value* value = phi.getIncomingValueForBlock(itemsLatch);
    auto mapped = restMap.find(value);
    phi.addIncoming(mapped == restMap.end() ? value : static_cast<llvm::Value*>(mapped->second),
                    restLatch);
  }
  auto* restStrideEntry = llvm::cast<llvm::BasicBlock>(restMap[strideEntry]);
  auto* restStrideExit = llvm::cast<llvm::BasicBlock>(restMap[strideExit]);
  restStrideEntry->getTerminator()->eraseFromParent();
  llvm::BranchInst::Create(restStrideExit, restStrideEntry);
  // After the passes, a thread's values from its last iteration are in the arrays (it ran at
  // least one iteration: the guard let it into the loop).
  llvm::IRBuilder<> afterLoop(&*restStrideExit->getFirstInsertionPt());
  auto* restIndex = llvm::cast<llvm::PHINode>(restMap[index]);
  for (size_t r = 0; r < shape.results.size(); ++r) {
    auto* phi = llvm::cast<llvm::PHINode>(restMap[shape.results[r]]);
    llvm::Value* last =
        afterLoop.CreateLoad(phi->getType(), entryOf(afterLoop, resultArrays[r], restIndex));
    grouped(llvm::cast<llvm::Instruction>(last));
    phi->replaceAllUsesWith(last);
    phi->eraseFromParent();
  }

  // check: whether no thread's induction can wrap before it leaves; the passes if so, else the
  // original loop.
  auto* check = llvm::BasicBlock::Create(c, "stride.pass.check", &f, entry);
  outer->getTerminator()->replaceUsesOfWith(entry, check);
  auto* pass = llvm::BasicBlock::Create(c, "stride.pass", &f, entry);
  auto* passLatch = llvm::BasicBlock::Create(c, "stride.pass.threads.next", &f, entry);
  auto* passEnd = llvm::BasicBlock::Create(c, "stride.pass.next", &f, entry);

  llvm::IRBuilder<> b(check);
  llvm::Value* wideBound = widen(b, shape.bound);
  llvm::Value* wideStep = widen(b, shape.step);
  bool strict =
      shape.goesOn == llvm::ICmpInst::ICMP_SLT || shape.goesOn == llvm::ICmpInst::ICMP_ULT;
  llvm::Value* last = b.CreateAdd(wideBound, wideStep);  // past the last value a thread reaches
  if (strict) last = b.CreateSub(last, llvm::ConstantInt::get(wide, 1));
  unsigned bits = inductionType->getBitWidth();
  llvm::APInt maxValue = isSigned ? llvm::APInt::getSignedMaxValue(bits).sext(2 * bits)
                                  : llvm::APInt::getMaxValue(bits).zext(2 * bits);
  // Both widened values fit the wide type's signed range.
  llvm::Value* fits = b.CreateICmpSLE(last, llvm::ConstantInt::get(wide, maxValue));
  // The threads' starts, firstStart + index * threadStep, do not wrap either: computed wide from
  // the index, the test of each thread's iteration is one of its index against a bound
  // (splitThreadRanges splits the passes' loop there).
  llvm::Value* wideFirstStart = widen(b, firstStart);
  llvm::Value* threadStep = llvm::ConstantInt::get(wide, shape.threadStep);
  llvm::Value* lastStart = b.CreateAdd(
      wideFirstStart,
      b.CreateMul(b.CreateSub(b.CreateZExt(trips, wide), llvm::ConstantInt::get(wide, 1)),
                  threadStep));
  fits = b.CreateAnd(fits, b.CreateICmpSLE(lastStart, llvm::ConstantInt::get(wide, maxValue)));
  llvm::Value* forward = isSigned
                             ? b.CreateICmpSGT(shape.step, llvm::ConstantInt::get(inductionType, 0))
                             : b.CreateICmpNE(shape.step, llvm::ConstantInt::get(inductionType, 0));
  llvm::Value* fewThreads =
      b.CreateICmpULE(trips, llvm::ConstantInt::get(indexType, kMaxThreadsInX));  // the arrays
  b.CreateCondBr(b.CreateAnd(b.CreateAnd(forward, fits), fewThreads), pass, entry);

  // The passes: pass k runs the code before the loop, then iteration k, of every thread.
  llvm::ValueToValueMapTy passMap;
  llvm::SmallVector<llvm::BasicBlock*, 16> passBlocks;
  llvm::SmallPtrSet<llvm::BasicBlock*, 16> copied(shape.before.begin(), shape.before.end());
  copied.insert(stride.block_begin(), stride.block_end());
  llvm::SmallVector<llvm::BasicBlock*, 16> inOrder;  // the function's order: a stable output
  for (llvm::BasicBlock& block : f)
    if (copied.contains(&block)) inOrder.push_back(&block);
  for (llvm::BasicBlock* block : inOrder) {
    llvm::BasicBlock* copy = llvm::CloneBasicBlock(block, passMap, ".stride.pass", &f);
    copy->moveBefore(passLatch);
    passMap[block] = copy;
    passBlocks.push_back(copy);
  }
  llvm::remapInstructionsInBlocks(passBlocks, passMap);
  auto copyOf = [&](llvm::Value* v) {
    auto found = passMap.find(v);
    return found == passMap.end() ? v : static_cast<llvm::Value*>(found->second);
  };
  auto* passHeader = llvm::cast<llvm::BasicBlock>(passMap[itemsHeader]);

  b.SetInsertPoint(pass);
  llvm::PHINode* k = b.CreatePHI(wide, 2, "stride.pass.index");
  b.CreateBr(passHeader);

  // The copied header counts the threads afresh and collects whether any ran an iteration.
  auto* passIndex = llvm::cast<llvm::PHINode>(passMap[index]);
  while (passIndex->getNumIncomingValues() > 0) passIndex->removeIncomingValue(0u, false);
  llvm::PHINode* any = llvm::PHINode::Create(b.getInt1Ty(), 2, "stride.pass.any");
  any->insertBefore(passHeader->getFirstNonPHIIt());

  // Every way out of the copies ends the thread's pass; the loop's body runs once.
  auto* passStrideLatch = llvm::cast<llvm::BasicBlock>(passMap[strideLatch]);
  passStrideLatch->getTerminator()->eraseFromParent();
  llvm::BranchInst::Create(passLatch, passStrideLatch);
  for (llvm::BasicBlock* copy : passBlocks) {
    llvm::Instruction* terminator = copy->getTerminator();
    for (unsigned s = 0; s < terminator->getNumSuccessors(); ++s)
      if (!llvm::is_contained(passBlocks, terminator->getSuccessor(s)))
        terminator->setSuccessor(s, passLatch);
    if (auto* branch = llvm::dyn_cast<llvm::BranchInst>(terminator);
        branch != nullptr && branch->isConditional() &&
        branch->getSuccessor(0) == branch->getSuccessor(1)) {
      llvm::BranchInst::Create(branch->getSuccessor(0), branch);
      llvm::Value* condition = branch->getCondition();
      branch->eraseFromParent();
      llvm::RecursivelyDeleteTriviallyDeadInstructions(condition);
    }
  }

  // Iteration k of a thread that reached the loop: i_k = start + k * step, if it still loops
  // (computed wide, exactly); the guard needs no test of its own, as i_k >= start.
  auto* passGuard = llvm::cast<llvm::BasicBlock>(passMap[shape.guard]);
  auto* passStrideEntry = llvm::cast<llvm::BasicBlock>(passMap[strideEntry]);
  auto* passStrideHeader = llvm::cast<llvm::BasicBlock>(passMap[strideHeader]);
  if (passGuard->getTerminator()->getNumSuccessors() == 2) {
    llvm::Instruction* guardBranch = passGuard->getTerminator();
    llvm::BranchInst::Create(passStrideEntry, guardBranch);
    llvm::BasicBlock* other = guardBranch->getSuccessor(0) == passStrideEntry
                                  ? guardBranch->getSuccessor(1)
                                  : guardBranch->getSuccessor(0);
    other->removePredecessor(passGuard);
    guardBranch->eraseFromParent();
  }
  passStrideEntry->getTerminator()->eraseFromParent();
  b.SetInsertPoint(passStrideEntry);
  // passStart + index * threadStep goesOn bound (passStart = firstStart + k * step), as a test
  // of the index against a bound of the pass: index * threadStep <= room, room = bound -
  // passStart (less one when strict), holds for index < max(room + threadStep, 0) / threadStep
  // (all values exact in the wide type, so signed whatever the loop's comparison; the bound
  // written so that it stays one comparison, which splitThreadRanges takes out of the loop).
  llvm::Value* wideIndex = b.CreateZExtOrTrunc(passIndex, wide);
  llvm::Value* passStart = b.CreateAdd(wideFirstStart, b.CreateMul(k, wideStep));
  llvm::Value* wideCurrent = b.CreateAdd(passStart, b.CreateMul(wideIndex, threadStep));
  llvm::Value* current = b.CreateTrunc(wideCurrent, inductionType, "stride.i");
  llvm::Value* room = b.CreateSub(wideBound, passStart);
  if (strict) room = b.CreateSub(room, llvm::ConstantInt::get(wide, 1));
  llvm::Value* passing =
      b.CreateUDiv(b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, b.CreateAdd(room, threadStep),
                                           llvm::ConstantInt::get(wide, 0)),
                   threadStep);
  llvm::Value* loops = b.CreateICmpSLT(wideIndex, passing, "stride.loops");
  b.CreateCondBr(loops, passStrideHeader, passLatch);
  auto* passInduction = llvm::cast<llvm::PHINode>(passMap[shape.induction]);
  passInduction->replaceAllUsesWith(current);
  passInduction->eraseFromParent();
  // Where the thread loops, its i_k lies between its start and the bound, both in the
  // induction's range: extending it (PTX's cvt.s64.s32 or mul.wide of an index) gives the wide
  // value itself, without the truncation and sign extension per element (a histogram's byte
  // loop: two of its four instructions).
  for (llvm::User* user : llvm::make_early_inc_range(current->users())) {
    auto* extension = llvm::dyn_cast<llvm::CastInst>(user);
    if (extension == nullptr || extension->getDestTy() != wide ||
        extension->getOpcode() != (isSigned ? llvm::Instruction::SExt : llvm::Instruction::ZExt))
      continue;
    extension->replaceAllUsesWith(wideCurrent);
    extension->eraseFromParent();
  }
  // The carried values: their start in the first pass, else what the previous pass left; stored
  // again, with the values used after the loop, at the end of the iteration.
  b.SetInsertPoint(passStrideEntry->getTerminator());
  llvm::Value* firstPass = b.CreateICmpEQ(k, llvm::ConstantInt::get(wide, 0));
  llvm::IRBuilder<> atIterationEnd(passStrideLatch->getTerminator());
  for (size_t v = 0; v < shape.carried.size(); ++v) {
    llvm::PHINode* phi = shape.carried[v];
    llvm::Value* slot = entryOf(b, carriedArrays[v], passIndex);
    llvm::Value* previous = grouped(b.CreateLoad(phi->getType(), slot));
    llvm::Value* value =
        b.CreateSelect(firstPass, copyOf(phi->getIncomingValueForBlock(strideEntry)), previous);
    auto* copy = llvm::cast<llvm::PHINode>(passMap[phi]);
    copy->replaceAllUsesWith(value);
    copy->eraseFromParent();
    grouped(atIterationEnd.CreateStore(copyOf(phi->getIncomingValueForBlock(strideLatch)),
                                       entryOf(atIterationEnd, carriedArrays[v], passIndex)));
  }
  for (size_t r = 0; r < shape.results.size(); ++r)
    grouped(atIterationEnd.CreateStore(copyOf(shape.results[r]->getIncomingValue(0)),
                                       entryOf(atIterationEnd, resultArrays[r], passIndex)));

  llvm::BasicBlock* passStarted = prefetchAhead(passBlocks, current, wideCurrent, k, wideFirstStart,
                                                wideStep, threadStep, trips, pass);

  // pass.threads.next: the next thread, or the end of the pass.
  b.SetInsertPoint(passLatch);
  llvm::PHINode* ran = b.CreatePHI(b.getInt1Ty(), 4, "stride.pass.ran");
  for (llvm::BasicBlock* predecessor : llvm::predecessors(passLatch))
    ran->addIncoming(predecessor == passStrideLatch ? b.getTrue() : static_cast<llvm::Value*>(any),
                     predecessor);
  llvm::Value* nextIndex = b.CreateAdd(passIndex, llvm::ConstantInt::get(indexType, 1));
  llvm::BranchInst* threadsLatch =
      b.CreateCondBr(b.CreateICmpEQ(nextIndex, trips), passEnd, passHeader);
  threadsLatch->copyMetadata(*itemsLatch->getTerminator(), {llvm::LLVMContext::MD_loop});
  passIndex->addIncoming(llvm::ConstantInt::get(indexType, 0), passStarted);
  passIndex->addIncoming(nextIndex, passLatch);
  any->addIncoming(b.getFalse(), passStarted);
  any->addIncoming(ran, passLatch);

  // pass.next: another pass while some thread ran an iteration, then the code after the loop.
  b.SetInsertPoint(passEnd);
  llvm::Value* nextK = b.CreateAdd(k, llvm::ConstantInt::get(wide, 1));
  b.CreateCondBr(ran, pass, restEntry);
  k->addIncoming(llvm::ConstantInt::get(wide, 0), check);
  k->addIncoming(nextK, passEnd);
}

// Interchange one stride loop of `f`; false when none is left. `done` holds the loop IDs of the
// work-item loops already interchanged (the original stays, for launches the check sends to it).
bool interchangeOne(llvm::Function& f, llvm::TargetLibraryInfo& libraryInfo,
                    llvm::SmallPtrSetImpl<llvm::MDNode*>& done) {
  LoopAnalyses analyses(f, libraryInfo);
  auto& [dt, li, assumptions, se] = analyses;
  for (llvm::Loop* loop : li.getLoopsInPreorder()) {
    if (!isWorkItemLoop(*loop) || done.contains(loop->getLoopID())) continue;
    llvm::simplifyLoop(loop, &dt, &li, &se, &assumptions, nullptr, false);
    for (llvm::Loop* inner : loop->getSubLoops())
      llvm::simplifyLoop(inner, &dt, &li, &se, &assumptions, nullptr, false);
    llvm::formLCSSARecursively(*loop, dt, &li, &se);
    if (std::optional<StrideLoopShape> shape = strideLoopIn(*loop, se)) {
      done.insert(loop->getLoopID());
      interchange(*shape, dt, li, se);
      llvm::removeUnreachableBlocks(f);
      return true;
    }
  }
  return false;
}

}  // namespace

llvm::StringMap<unsigned> interchangeStrideLoops(llvm::Module& module) {
  llvm::StringMap<unsigned> made;
  llvm::TargetLibraryInfoImpl libraryImpl{llvm::Triple(module.getTargetTriple())};
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    llvm::TargetLibraryInfo libraryInfo(libraryImpl, &f);
    llvm::SmallPtrSet<llvm::MDNode*, 8> done;
    unsigned count = 0;
    while (count < kMaxInterchangesPerFunction && interchangeOne(f, libraryInfo, done)) ++count;
    if (count > 0) made[f.getName()] = count;
  }
  return made;
}

}  // namespace rocuda::compiler::detail
