// Thread ranges in work-item loops. CUDA code picks threads by their index: a reduction tree's
// `if (tid < s)`, a block leader's `if (threadIdx.x == 0)`. In a work-item loop over the block's
// threads such a test is a mask: every thread of the block pays for the iteration (a 256-thread
// tree round at s = 4 ran 32 masked vectors for 4 active threads, the leader's store a masked
// scatter per 8 threads). The test compares the loop's iteration index with a value the loop does
// not change, so it holds for one contiguous range of threads: the loop is split there into two
// loops, one over the threads before the split point and one over the rest, each with the test's
// answer known (LLVM's loop-bound-split does this only for if/else diamonds, and only where the
// test is known to hold on entry).
// A test of the global index, `blockIdx.x * blockDim.x + threadIdx.x < n` (offset + k), is split
// the same way, except that the loop after the split point keeps its test: the index may wrap
// there in a grid of more than INT_MAX or UINT_MAX threads. Every block but the last then runs
// one unmasked loop: masked vector loads, what the test became, streamed at a third of the rate
// of plain ones on AMD Zen 5 (bench/cpu_device's vector add: 14.8 -> 5.5 ms on one core).
// Tests of values the loop does not change at all (a 2-D block's `y < height`) are masks too:
// such a loop gets a copy with them answered (versionUniformTests, below).
#include <llvm/ADT/MapVector.h>
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/PostDominators.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PatternMatch.h>
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

namespace rocuda::compiler::detail {
namespace {

// Each split copies a loop: the most instructions a loop may hold to be split, the most splits
// of the copies of one work-item loop (each test it holds splits every copy made before: k tests
// would make 2^k copies), and the most in one function.
constexpr unsigned kMaxLoopInstructions = 2000;
constexpr unsigned kMaxSplitsPerLoop = 4;
constexpr unsigned kMaxSplitsPerFunction = 32;

// Where `s` starts when it is the loop's iteration index plus a value the loop does not change
// (0, 1, 2... or start, start + 1, ..., in whatever integer type it is compared), else null.
const llvm::SCEV* iterationIndexStart(const llvm::SCEV* s, const llvm::Loop& loop,
                                      llvm::ScalarEvolution& se) {
  auto* rec = llvm::dyn_cast<llvm::SCEVAddRecExpr>(s);
  if (rec == nullptr || rec->getLoop() != &loop || !rec->isAffine() ||
      !rec->getStepRecurrence(se)->isOne() || !se.isLoopInvariant(rec->getStart(), &loop) ||
      !se.isAvailableAtLoopEntry(rec->getStart(), &loop))
    return nullptr;
  return rec->getStart();
}

// The loop's trip count (its backedges plus one) in `type`, or null when scalar evolution cannot
// count them.
const llvm::SCEV* tripCountOf(llvm::Loop& loop, llvm::Type* type, llvm::ScalarEvolution& se) {
  const llvm::SCEV* backedges = se.getBackedgeTakenCount(&loop);
  if (llvm::isa<llvm::SCEVCouldNotCompute>(backedges)) return nullptr;
  return se.getAddExpr(se.getTruncateOrZeroExtend(backedges, type), se.getOne(type));
}

// Marks a test left in the second loop of a split at an offset index (splitAt): not split again.
constexpr const char* kKeptRangeTest = "rocuda.range_test.kept";

// A test of the iteration index k against a bound the loop does not change, in the form
// `k < bound` (`firstPasses`: the test holds before the split point, fails from it on) or its
// negation (`!firstPasses`).
struct RangeTest {
  llvm::ICmpInst* compare = nullptr;
  llvm::ICmpInst::Predicate predicate;  // ULT, ULE, SLT, SLE or EQ (with a zero bound)
  const llvm::SCEV* bound = nullptr;
  bool firstPasses = true;
  // The test's index is offset + k (a global index, `blockIdx.x * blockDim.x + threadIdx.x < n`):
  // null when it is k itself.
  const llvm::SCEV* offset = nullptr;
};

// Whether `bound - offset` of an offset test in `bits` is exact in i64. Always for 32 bits or
// fewer; for 64, when both values are known to lie in [-2^62, 2^62): LLVM widens a loop's i32
// global index to i64 (its sign-extended parts, `sext(blockIdx.y * 32) + k < sext(height)`, as
// in a transpose's second pass).
bool fitsSplitArithmetic(const llvm::SCEV* offset, const llvm::SCEV* bound, unsigned bits,
                         bool isSigned, llvm::ScalarEvolution& se) {
  if (bits <= 32) return true;
  if (bits > 64) return false;
  const llvm::APInt limit = llvm::APInt::getOneBitSet(64, 62);
  for (const llvm::SCEV* value : {offset, bound}) {
    bool inside = isSigned ? se.getSignedRange(value).getSignedMin().sge(-limit) &&
                                 se.getSignedRange(value).getSignedMax().slt(limit)
                           : se.getUnsignedRange(value).getUnsignedMax().ult(limit);
    if (!inside) return false;
  }
  return true;
}

std::optional<RangeTest> rangeTestOf(llvm::ICmpInst* compare, const llvm::Loop& loop,
                                     llvm::ScalarEvolution& se) {
  if (!compare->getOperand(0)->getType()->isIntegerTy()) return std::nullopt;
  const llvm::SCEV* lhs = se.getSCEV(compare->getOperand(0));
  const llvm::SCEV* rhs = se.getSCEV(compare->getOperand(1));
  llvm::ICmpInst::Predicate predicate = compare->getPredicate();
  const llvm::SCEV* start = iterationIndexStart(lhs, loop, se);
  if (start == nullptr) {
    start = iterationIndexStart(rhs, loop, se);
    if (start == nullptr) return std::nullopt;
    std::swap(lhs, rhs);
    predicate = llvm::ICmpInst::getSwappedPredicate(predicate);
  }
  if (!se.isLoopInvariant(rhs, &loop) || !se.isAvailableAtLoopEntry(rhs, &loop))
    return std::nullopt;
  // The index must count every iteration without wrapping in the compared type. A work-item
  // loop runs at most a block's threads in x, the loops a split made too, whose counts SCEV
  // cannot bound (a second test in the loop before a split point: a reduction's
  // `if (i + blockDim.x < n)` after its `if (i < n)`).
  unsigned bits = compare->getOperand(0)->getType()->getIntegerBitWidth();
  const llvm::SCEV* maxCount = se.getConstantMaxBackedgeTakenCount(&loop);
  uint64_t mostIterations = kMaxBlockDim[0];
  if (!llvm::isa<llvm::SCEVCouldNotCompute>(maxCount))
    mostIterations = std::min<uint64_t>(
        mostIterations, se.getUnsignedRangeMax(maxCount).getLimitedValue(UINT64_MAX - 1) + 1);
  if (bits < 64 && mostIterations >= (uint64_t{1} << (bits - 1))) return std::nullopt;
  RangeTest test{compare, predicate, rhs, true};
  if (!start->isZero()) {
    // An offset index: split points computed in i64 (below), for ordering tests only.
    if (llvm::ICmpInst::isEquality(predicate) ||
        !fitsSplitArithmetic(start, rhs, bits, llvm::ICmpInst::isSigned(predicate), se))
      return std::nullopt;
    test.offset = start;
  }
  if (llvm::ICmpInst::isEquality(predicate)) {
    if (!rhs->isZero()) return std::nullopt;  // k == 0 holds for [0, 1) only
    test.firstPasses = predicate == llvm::ICmpInst::ICMP_EQ;
    test.predicate = llvm::ICmpInst::ICMP_EQ;
    return test;
  }
  switch (predicate) {
    case llvm::ICmpInst::ICMP_ULT:
    case llvm::ICmpInst::ICMP_ULE:
    case llvm::ICmpInst::ICMP_SLT:
    case llvm::ICmpInst::ICMP_SLE:
      return test;
    case llvm::ICmpInst::ICMP_UGE:
    case llvm::ICmpInst::ICMP_UGT:
    case llvm::ICmpInst::ICMP_SGE:
    case llvm::ICmpInst::ICMP_SGT:
      test.predicate = llvm::ICmpInst::getInversePredicate(predicate);
      test.firstPasses = false;
      return test;
    default:
      return std::nullopt;
  }
}

// The first range test in the loop (the latch's own test aside), whether it decides a branch or
// was made a select (a store on either side of an if/else, sunk into one store to a selected
// address).
std::optional<RangeTest> findRangeTest(const llvm::Loop& loop, llvm::ScalarEvolution& se) {
  // A conditional branch (splittable).
  const llvm::Value* exitTest =
      llvm::cast<llvm::BranchInst>(loop.getLoopLatch()->getTerminator())->getCondition();
  for (llvm::BasicBlock* block : loop.blocks())
    for (llvm::Instruction& inst : *block)
      if (auto* compare = llvm::dyn_cast<llvm::ICmpInst>(&inst);
          compare && compare != exitTest && !compare->getMetadata(kKeptRangeTest))
        if (std::optional<RangeTest> test = rangeTestOf(compare, loop, se)) return test;
  return std::nullopt;
}

// The number of iterations before the test's answer changes, clamped to [0, trips], computed
// before the loop (trips is of the loop index's type).
llvm::Value* splitPoint(llvm::IRBuilder<>& b, const RangeTest& test, llvm::Value* bound,
                        llvm::Value* trips) {
  llvm::Type* indexType = trips->getType();
  if (test.predicate == llvm::ICmpInst::ICMP_EQ) return llvm::ConstantInt::get(indexType, 1);
  bool isSigned = llvm::ICmpInst::isSigned(test.predicate);
  unsigned bits = std::max(bound->getType()->getIntegerBitWidth(), indexType->getIntegerBitWidth());
  llvm::Type* wide = b.getIntNTy(bits);
  bound = isSigned ? b.CreateSExt(bound, wide) : b.CreateZExt(bound, wide);
  llvm::Value* all = b.CreateZExt(trips, wide);
  llvm::Value* zero = llvm::ConstantInt::get(wide, 0);
  llvm::Value* point;
  switch (test.predicate) {
    case llvm::ICmpInst::ICMP_ULT:  // min(bound, trips)
      point = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, bound, all);
      break;
    case llvm::ICmpInst::ICMP_SLT:  // min(max(bound, 0), trips)
      point = b.CreateBinaryIntrinsic(
          llvm::Intrinsic::umin, b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, bound, zero), all);
      break;
    case llvm::ICmpInst::ICMP_ULE:  // bound + 1, unless that is past trips (or wraps)
      point = b.CreateSelect(b.CreateICmpUGE(bound, all), all,
                             b.CreateAdd(bound, llvm::ConstantInt::get(wide, 1)));
      break;
    default:  // ICMP_SLE: as ULE, with a negative bound passing no iteration
      point = b.CreateSelect(b.CreateICmpSLT(bound, zero), zero,
                             b.CreateSelect(b.CreateICmpUGE(bound, all), all,
                                            b.CreateAdd(bound, llvm::ConstantInt::get(wide, 1))));
      break;
  }
  return b.CreateZExtOrTrunc(point, indexType, "threads.split");
}

// As splitPoint, for a test of offset + k (32 bits at most, or 64 with the values of
// fitsSplitArithmetic, so that i64 holds every value below): the iterations before its answer
// changes, `bound - offset` (+ 1 for <=) clamped to [0, trips]. offset + k may wrap within the loop
// (a grid past INT_MAX or UINT_MAX threads), but not before that point: the bound is a value of the
// type, so the point is at most where the index would pass the type's largest value. The loop after
// it keeps its test (splitAt).
llvm::Value* offsetSplitPoint(llvm::IRBuilder<>& b, const RangeTest& test, llvm::Value* offset,
                              llvm::Value* bound, llvm::Value* trips) {
  bool isSigned = llvm::ICmpInst::isSigned(test.predicate);
  auto* i64 = b.getInt64Ty();
  auto widen = [&](llvm::Value* v) {
    return isSigned ? b.CreateSExt(v, i64) : b.CreateZExt(v, i64);
  };
  llvm::Value* point = b.CreateSub(widen(bound), widen(offset));
  if (test.predicate == llvm::ICmpInst::ICMP_ULE || test.predicate == llvm::ICmpInst::ICMP_SLE)
    point = b.CreateAdd(point, b.getInt64(1));
  point = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, point, b.getInt64(0)),
      b.CreateZExt(trips, i64));
  return b.CreateTrunc(point, trips->getType(), "threads.split");
}

// What a loop clone made of `v`: its copy, or `v` itself when it is outside the loop.
llvm::Value* copyOf(const llvm::ValueToValueMapTy& map, llvm::Value* v) {
  auto found = map.find(v);
  return found == map.end() ? v : static_cast<llvm::Value*>(found->second);
}

// Replace the uses of `compare` within `blocks` by `answer`.
void answerWithin(llvm::ICmpInst* compare, llvm::ArrayRef<llvm::BasicBlock*> blocks, bool answer) {
  llvm::SmallPtrSet<const llvm::BasicBlock*, 16> within(blocks.begin(), blocks.end());
  auto* constant = llvm::ConstantInt::getBool(compare->getContext(), answer);
  compare->replaceUsesWithIf(constant, [&](llvm::Use& use) {
    auto* user = llvm::dyn_cast<llvm::Instruction>(use.getUser());
    return user != nullptr && within.contains(user->getParent());
  });
}

// Split `loop` (in simplified and LCSSA form, its latch its only exit) at `test`:
//
//   entry:   split = ...; br split == 0 ? between : first loop
//   first loop (iterations [0, split)): the test answered; leaves to `between` when the
//            index reaches split
//   between: the values of the header's phis, and of the exit's, after the first loop;
//            br split == trips ? exit : second loop
//   second loop (iterations [split, trips)): a copy, the test answered the other way
//
// Both loops run at least one iteration when entered, as the original did.
bool splitAt(llvm::Loop& loop, const RangeTest& test, llvm::DominatorTree& dt, llvm::LoopInfo& li,
             llvm::ScalarEvolution& se) {
  llvm::PHINode* index = loop.getCanonicalInductionVariable();
  llvm::BasicBlock* header = loop.getHeader();
  llvm::BasicBlock* latch = loop.getLoopLatch();
  llvm::BasicBlock* exit = loop.getExitBlock();
  if (index == nullptr) return false;
  llvm::Type* indexType = index->getType();
  const llvm::SCEV* trips = tripCountOf(loop, indexType, se);
  if (trips == nullptr) return false;
  llvm::Value* indexNext = index->getIncomingValueForBlock(latch);

  // An empty block before the header, so that the copy's own preheader is empty too.
  llvm::BasicBlock* entry = llvm::SplitEdge(loop.getLoopPreheader(), header, &dt, &li);
  llvm::ValueToValueMapTy map;
  llvm::SmallVector<llvm::BasicBlock*, 16> copyBlocks;
  llvm::Loop* copy =
      llvm::cloneLoopWithPreheader(exit, entry, &loop, map, ".rest", &li, &dt, copyBlocks);
  llvm::remapInstructionsInBlocks(copyBlocks, map);
  auto* between = llvm::cast<llvm::BasicBlock>(map[entry]);
  auto* copyLatch = llvm::cast<llvm::BasicBlock>(map[latch]);
  auto* copyHeader = llvm::cast<llvm::BasicBlock>(map[header]);

  // The split point, computed in the (empty) entry block.
  const llvm::DataLayout& layout = header->getModule()->getDataLayout();
  llvm::SCEVExpander expander(se, layout, "threads");
  llvm::Instruction* entryBranch = entry->getTerminator();
  llvm::Value* tripCount = expander.expandCodeFor(trips, indexType, entryBranch);
  llvm::Type* boundType = test.compare->getOperand(0)->getType();
  llvm::Value* bound = expander.expandCodeFor(test.bound, boundType, entryBranch);
  llvm::IRBuilder<> b(entryBranch);
  llvm::Value* split =
      test.offset == nullptr
          ? splitPoint(b, test, bound, tripCount)
          : offsetSplitPoint(b, test, expander.expandCodeFor(test.offset, boundType, entryBranch),
                             bound, tripCount);
  b.CreateCondBr(b.CreateICmpEQ(split, llvm::ConstantInt::get(indexType, 0)), between, header);
  entryBranch->eraseFromParent();

  // The first loop ends at the split point.
  auto* latchBranch = llvm::cast<llvm::BranchInst>(latch->getTerminator());
  b.SetInsertPoint(latchBranch);
  llvm::BranchInst* firstLatch = b.CreateCondBr(b.CreateICmpEQ(indexNext, split), between, header);
  firstLatch->copyMetadata(*latchBranch);
  latchBranch->eraseFromParent();

  // Between the loops: the values the first leaves, to start the second and to leave through
  // `between` when the second has nothing to do. (A first loop with no iteration leaves
  // nothing the exit could need: the second then runs every iteration.)
  llvm::IRBuilder<> at(between, between->begin());
  for (llvm::PHINode& phi : header->phis()) {
    llvm::PHINode* after = at.CreatePHI(phi.getType(), 2, phi.getName() + ".first");
    after->addIncoming(phi.getIncomingValueForBlock(latch), latch);
    after->addIncoming(phi.getIncomingValueForBlock(entry), entry);
    llvm::cast<llvm::PHINode>(map[&phi])->setIncomingValueForBlock(between, after);
  }
  for (llvm::PHINode& phi : exit->phis()) {
    int fromLatch = phi.getBasicBlockIndex(latch);
    llvm::Value* value = phi.getIncomingValue(fromLatch);
    llvm::PHINode* after = at.CreatePHI(phi.getType(), 2, phi.getName() + ".first");
    after->addIncoming(value, latch);
    after->addIncoming(llvm::PoisonValue::get(phi.getType()), entry);
    phi.setIncomingBlock(fromLatch, between);
    phi.setIncomingValue(fromLatch, after);
    phi.addIncoming(copyOf(map, value), copyLatch);
  }
  llvm::Instruction* betweenBranch = between->getTerminator();
  b.SetInsertPoint(betweenBranch);
  b.CreateCondBr(b.CreateICmpEQ(split, tripCount), exit, copyHeader);
  betweenBranch->eraseFromParent();

  auto* copyCompare = llvm::cast<llvm::ICmpInst>(map[test.compare]);
  answerWithin(test.compare, loop.getBlocks(), test.firstPasses);
  llvm::RecursivelyDeleteTriviallyDeadInstructions(test.compare);
  if (test.offset != nullptr) {
    // Past the split point an offset index may wrap: the second loop keeps its test.
    copyCompare->setMetadata(kKeptRangeTest, llvm::MDNode::get(copyCompare->getContext(), {}));
    return true;
  }
  answerWithin(copyCompare, copy->getBlocks(), !test.firstPasses);
  llvm::RecursivelyDeleteTriviallyDeadInstructions(copyCompare);
  return true;
}

bool splittable(const llvm::Loop& loop, const llvm::DominatorTree& dt, const llvm::LoopInfo& li) {
  // A rotated loop, left from its latch only, and cloneable.
  llvm::BasicBlock* latch = loop.getLoopLatch();
  if (!loop.isLoopSimplifyForm() || loop.getExitingBlock() != latch ||
      loop.getExitBlock() == nullptr || !loop.isSafeToClone() ||
      !loop.isRecursivelyLCSSAForm(dt, li))
    return false;
  auto* latchBranch = llvm::dyn_cast<llvm::BranchInst>(latch->getTerminator());
  if (latchBranch == nullptr || !latchBranch->isConditional()) return false;
  size_t instructions = 0;
  for (const llvm::BasicBlock* block : loop.blocks()) instructions += block->size();
  return instructions <= kMaxLoopInstructions;
}

// Split one work-item loop of `f`; false when none has a range test left. `splits` counts the
// splits of each work-item loop by its loop ID, which its copies share (the split ones, and the
// versions unswitching made).
bool splitOneLoop(llvm::Function& f, llvm::TargetLibraryInfo& libraryInfo,
                  llvm::DenseMap<llvm::MDNode*, unsigned>& splits) {
  LoopAnalyses analyses(f, libraryInfo);
  auto& [dt, li, assumptions, se] = analyses;
  for (llvm::Loop* loop : li.getLoopsInPreorder()) {
    if (!isWorkItemLoop(*loop) || splits[loop->getLoopID()] >= kMaxSplitsPerLoop) continue;
    llvm::simplifyLoop(loop, &dt, &li, &se, &assumptions, nullptr, false);
    llvm::formLCSSARecursively(*loop, dt, &li, &se);
    if (!splittable(*loop, dt, li)) continue;
    if (std::optional<RangeTest> test = findRangeTest(*loop, se))
      if (splitAt(*loop, *test, dt, li, se)) {
        ++splits[loop->getLoopID()];
        return true;
      }
  }
  return false;
}

// Block-uniform tests. A work-item loop's test of a value the loop does not change (a 2D
// block's `y + r < height`, the stencil's `y == 0 || ...`) holds for every thread of the row or
// for none, but the vectorizer makes it a mask too: uniform masked loads and stores, at a third of
// the rate of plain ones on AMD Zen 5 (bench/cpu_device's transpose: 15 ms, 9.5 without its row
// tests). LLVM's unswitching makes a copy per test, within a size budget the transpose's three
// tests exceed; here a loop gets one copy with every such test answered the way that lets the
// threads work, entered when all of them are answered so, and the original for the other rows.
// A test of the iteration index for one value under an or, `x == c` (`x != c` under an and: the
// stencil's `x == 0 || x == width - 1`, of its global index), has that answer for every thread of
// the loop unless c is among the loop's indices: the copy answers it too, entered when c - start
// is at least the trip count (in the stencil every block but the first and last of a row).

// Marks the latch of a loop versioned on its uniform tests (both copies): not versioned again.
constexpr const char* kUniformVersioned = "rocuda.uniform.versioned";
constexpr unsigned kMaxVersionsPerFunction = 16;

// A test of the iteration index for one value: `compare` (x == c or x != c, x the index plus
// `start`) has its answer for every iteration when c - start, in the compare's type, is at least
// the trip count.
struct IndexTest {
  const llvm::SCEV* start;
  llvm::Value* value;  // c
};

// The uniform values that decide `condition` through logical ors and ands, each with the answer
// that does not decide it alone (false under an or, true under an and): the usual one for a
// bounds test combined with others, `x >= width || y >= height`. Equality tests of the iteration
// index with that answer (`x == c` under an or, `x != c` under an and) go to `indexTests`.
void collectUniformOperands(llvm::Value* condition, const llvm::Loop& loop,
                            llvm::ScalarEvolution* se, llvm::MapVector<llvm::Value*, bool>& answers,
                            llvm::MapVector<llvm::Value*, IndexTest>& indexTests, int depth = 0) {
  using namespace llvm::PatternMatch;
  llvm::Value* first;
  llvm::Value* second;
  bool isOr = match(condition, m_LogicalOr(m_Value(first), m_Value(second)));
  if (!isOr && !match(condition, m_LogicalAnd(m_Value(first), m_Value(second)))) return;
  for (llvm::Value* operand : {first, second}) {
    if (llvm::isa<llvm::Constant>(operand)) continue;
    if (loop.isLoopInvariant(operand)) {
      answers.insert({operand, !isOr});
      continue;
    }
    auto* compare = llvm::dyn_cast<llvm::ICmpInst>(operand);
    llvm::ICmpInst::Predicate wanted = isOr ? llvm::ICmpInst::ICMP_EQ : llvm::ICmpInst::ICMP_NE;
    if (se != nullptr && compare != nullptr && compare->getPredicate() == wanted &&
        compare->getOperand(0)->getType()->getIntegerBitWidth() >= 16) {
      for (unsigned side = 0; side < 2; ++side) {
        llvm::Value* index = compare->getOperand(side);
        llvm::Value* value = compare->getOperand(1 - side);
        if (!loop.isLoopInvariant(value)) continue;
        const llvm::SCEV* start = iterationIndexStart(se->getSCEV(index), loop, *se);
        if (start == nullptr) continue;
        // Not the thread index against a constant (`tid == 0`): the copy would serve no block,
        // and splitThreadRanges takes those ranges apart.
        if (!llvm::isa<llvm::SCEVConstant>(start) || !llvm::isa<llvm::Constant>(value))
          indexTests.insert({compare, {start, value}});
        break;
      }
      continue;
    }
    if (depth < 8) collectUniformOperands(operand, loop, se, answers, indexTests, depth + 1);
  }
}

// The loop's conditional branches on a value that is not a constant, its latch's aside.
llvm::SmallVector<llvm::BranchInst*, 8> testedBranches(const llvm::Loop& loop) {
  llvm::SmallVector<llvm::BranchInst*, 8> branches;
  for (llvm::BasicBlock* block : loop.blocks()) {
    auto* branch = llvm::dyn_cast<llvm::BranchInst>(block->getTerminator());
    if (branch != nullptr && branch->isConditional() && block != loop.getLoopLatch() &&
        !llvm::isa<llvm::Constant>(branch->getCondition()))
      branches.push_back(branch);
  }
  return branches;
}

// The uniform tests of `loop`'s branches (its latch's aside) and the answers that let the
// threads work: for a branch on a uniform value, the answer that enters the side the other
// joins (`if (c) { work }`; neither for an if/else), and for a uniform operand of a branch's
// logical or/and, collectUniformOperands' (with its index tests, when the trip count is known).
llvm::MapVector<llvm::Value*, bool> uniformTestsOf(
    const llvm::Loop& loop, const llvm::PostDominatorTree& pdt, llvm::ScalarEvolution* se,
    llvm::MapVector<llvm::Value*, IndexTest>& indexTests) {
  llvm::MapVector<llvm::Value*, bool> answers;
  for (llvm::BranchInst* branch : testedBranches(loop)) {
    llvm::Value* condition = branch->getCondition();
    if (!loop.isLoopInvariant(condition)) {
      collectUniformOperands(condition, loop, se, answers, indexTests);
      continue;
    }
    llvm::BasicBlock* onTrue = branch->getSuccessor(0);
    llvm::BasicBlock* onFalse = branch->getSuccessor(1);
    if (pdt.dominates(onFalse, onTrue))
      answers.insert({condition, true});
    else if (pdt.dominates(onTrue, onFalse))
      answers.insert({condition, false});
  }
  return answers;
}

// Version `loop` (in simplified and LCSSA form, its latch its only exit) on `answers`:
//
//   guard: br (every test has its answer) ? copy's preheader : preheader
//   copy:  the loop with the tests answered; leaves to the exit as the original does
//
// An index test is answered when its value minus the index's start (`offsets`, computed before
// the loop in the compare's type) is at least the trip count, `trips` (i64).
void versionOnUniformTests(
    llvm::Loop& loop, const llvm::MapVector<llvm::Value*, bool>& answers,
    const llvm::SmallVector<std::pair<llvm::Value*, llvm::Value*>, 4>& offsets, llvm::Value* trips,
    llvm::DominatorTree& dt, llvm::LoopInfo& li) {
  llvm::BasicBlock* header = loop.getHeader();
  llvm::BasicBlock* latch = loop.getLoopLatch();
  llvm::BasicBlock* exit = loop.getExitBlock();
  llvm::LLVMContext& context = header->getContext();
  latch->getTerminator()->setMetadata(kUniformVersioned, llvm::MDNode::get(context, {}));
  llvm::BasicBlock* guard = llvm::SplitEdge(loop.getLoopPreheader(), header, &dt, &li);
  llvm::BasicBlock* entry = llvm::SplitEdge(guard, header, &dt, &li);
  llvm::ValueToValueMapTy map;
  llvm::SmallVector<llvm::BasicBlock*, 16> copyBlocks;
  llvm::cloneLoopWithPreheader(exit, guard, &loop, map, ".uniform", &li, &dt, copyBlocks);
  llvm::remapInstructionsInBlocks(copyBlocks, map);

  llvm::Instruction* guardBranch = guard->getTerminator();
  llvm::IRBuilder<> b(guardBranch);
  llvm::Value* allAnswered = b.getTrue();
  for (const auto& [value, answer] : answers)
    allAnswered = b.CreateAnd(allAnswered, answer ? value : b.CreateNot(value));
  // (c - start) mod 2^bits >= trips: c is none of start, start + 1, ... (mod 2^bits, as the
  // compare sees them), exactly, as trips (a block's threads) is below 2^bits.
  for (const auto& [compare, offset] : offsets)
    allAnswered =
        b.CreateAnd(allAnswered, b.CreateICmpUGE(b.CreateZExt(offset, b.getInt64Ty()), trips));
  b.CreateCondBr(allAnswered, llvm::cast<llvm::BasicBlock>(map[entry]), entry);
  guardBranch->eraseFromParent();

  auto* copyLatch = llvm::cast<llvm::BasicBlock>(map[latch]);
  for (llvm::PHINode& phi : exit->phis())
    phi.addIncoming(copyOf(map, phi.getIncomingValueForBlock(latch)), copyLatch);
  llvm::SmallPtrSet<const llvm::BasicBlock*, 16> inCopy(copyBlocks.begin(), copyBlocks.end());
  for (const auto& [value, answer] : answers)
    value->replaceUsesWithIf(llvm::ConstantInt::getBool(context, answer), [&](llvm::Use& use) {
      auto* user = llvm::dyn_cast<llvm::Instruction>(use.getUser());
      return user != nullptr && inCopy.contains(user->getParent());
    });
  // An index test is in the loop: the copy's own compare is answered.
  for (const auto& [compare, offset] : offsets) {
    auto* copied = llvm::cast<llvm::Instruction>(map[compare]);
    copied->replaceAllUsesWith(llvm::ConstantInt::getBool(
        context, llvm::cast<llvm::ICmpInst>(compare)->getPredicate() == llvm::ICmpInst::ICMP_NE));
    copied->eraseFromParent();
  }
}

// Whether a branch of `loop` (its latch's aside) tests a value the loop does not change, or the
// iteration index for one value (collectUniformOperands' index tests).
bool hasUniformTest(const llvm::Loop& loop, llvm::ScalarEvolution& se) {
  for (llvm::BranchInst* branch : testedBranches(loop)) {
    llvm::MapVector<llvm::Value*, bool> operands;
    llvm::MapVector<llvm::Value*, IndexTest> indexTests;
    collectUniformOperands(branch->getCondition(), loop, &se, operands, indexTests);
    if (loop.isLoopInvariant(branch->getCondition()) || !operands.empty() || !indexTests.empty())
      return true;
  }
  return false;
}

// Version one work-item loop of `f` on its uniform tests; false when none is left to version.
// The analyses are made once per call, and the post-dominator tree only for a function with
// such tests (CUB's kernels: a tree per loop took 0.75 s of a Thrust program's compilation).
bool versionOneLoop(llvm::Function& f, llvm::TargetLibraryInfo& libraryInfo) {
  LoopAnalyses analyses(f, libraryInfo);
  auto& [dt, li, assumptions, se] = analyses;
  llvm::SmallVector<llvm::Loop*, 8> candidates;
  for (llvm::Loop* loop : li.getLoopsInPreorder())
    if (isWorkItemLoop(*loop) && loop->getLoopLatch() != nullptr &&
        !loop->getLoopLatch()->getTerminator()->getMetadata(kUniformVersioned) &&
        hasUniformTest(*loop, se))
      candidates.push_back(loop);
  if (candidates.empty()) return false;
  for (llvm::Loop* loop : candidates) {
    llvm::simplifyLoop(loop, &dt, &li, &se, &assumptions, nullptr, false);
    llvm::formLCSSARecursively(*loop, dt, &li, &se);
  }
  llvm::PostDominatorTree pdt(f);
  for (llvm::Loop* loop : candidates) {
    if (!splittable(*loop, dt, li)) continue;
    llvm::Type* i64 = llvm::Type::getInt64Ty(f.getContext());
    const llvm::SCEV* tripCount = tripCountOf(*loop, i64, se);
    bool counted = tripCount != nullptr && se.isAvailableAtLoopEntry(tripCount, loop);
    llvm::MapVector<llvm::Value*, IndexTest> indexTests;
    llvm::MapVector<llvm::Value*, bool> answers =
        uniformTestsOf(*loop, pdt, counted ? &se : nullptr, indexTests);
    if (answers.empty() && indexTests.empty()) continue;
    llvm::Value* trips = nullptr;
    llvm::SmallVector<std::pair<llvm::Value*, llvm::Value*>, 4> offsets;
    if (!indexTests.empty()) {
      llvm::Instruction* before = loop->getLoopPreheader()->getTerminator();
      llvm::SCEVExpander expander(se, f.getDataLayout(), "uniform");
      trips = expander.expandCodeFor(tripCount, i64, before);
      for (const auto& [compare, test] : indexTests) {
        llvm::Type* type = test.value->getType();
        llvm::Value* start = expander.expandCodeFor(test.start, type, before);
        llvm::IRBuilder<> b(before);
        offsets.push_back({compare, b.CreateSub(test.value, start)});
      }
    }
    versionOnUniformTests(*loop, answers, offsets, trips, dt, li);
    return true;
  }
  return false;
}

// Periodic tests. A warp leader's `if ((threadIdx.x & 31) == 0) warpSums[threadIdx.x / 32] = v`
// holds for one thread in 32: vectorised, every vector of threads tested each lane and branched
// to a store per lane (a fifth of bench/cpu_device's warp-shuffle reduction). Where the loop does
// nothing else but store the threads' codes (a round function's argument 3, which
// inlineChainedRounds drops where no round can mix them), it is unrolled by the period instead of
// vectorised: in the unrolled loop, whose index steps by the period from 0, each copy's test is a
// constant, so that one copy in 32 stores and the other copies are empty.

// The most instructions a loop unrolled by its period may hold.
constexpr unsigned kMaxPeriodicLoopInstructions = 200;

// The period of `condition` when it is `(x & (period - 1)) == c` (or !=) with x the loop's
// iteration index from 0 and a period of 8 to 64, and the block its threads that pass go to
// (`guarded`), else 0.
unsigned periodicTest(const llvm::BranchInst& branch, const llvm::Loop& loop,
                      llvm::ScalarEvolution& se, llvm::BasicBlock*& guarded) {
  using namespace llvm::PatternMatch;
  llvm::Value* index = nullptr;
  const llvm::APInt *mask = nullptr, *value = nullptr;
  llvm::ICmpInst::Predicate predicate;
  if (!branch.isConditional() ||
      !match(branch.getCondition(),
             m_ICmp(predicate, m_And(m_Value(index), m_APInt(mask)), m_APInt(value))) ||
      !llvm::ICmpInst::isEquality(predicate) || !(*mask + 1).isPowerOf2() || value->ugt(*mask))
    return 0;
  uint64_t period = mask->getZExtValue() + 1;
  if (period < 8 || period > 64) return 0;
  auto* rec = llvm::dyn_cast<llvm::SCEVAddRecExpr>(se.getSCEV(index));
  if (rec == nullptr || rec->getLoop() != &loop || !rec->isAffine() ||
      !rec->getStepRecurrence(se)->isOne() || !rec->getStart()->isZero())
    return 0;
  guarded = branch.getSuccessor(predicate == llvm::ICmpInst::ICMP_EQ ? 0 : 1);
  return static_cast<unsigned>(period);
}

// The period to unroll `loop` by, or 0: one periodic test, and every effect of the loop either
// under it or a store of the threads' codes (`codes`: oneRoundCodes, or null).
unsigned unrollPeriod(const llvm::Loop& loop, const llvm::DominatorTree& dt,
                      llvm::ScalarEvolution& se, const llvm::Value* codes) {
  if (!loop.isInnermost() || loop.getLoopLatch() == nullptr) return 0;
  unsigned period = 0, instructions = 0;
  llvm::BasicBlock* guarded = nullptr;
  for (llvm::BasicBlock* block : loop.blocks()) {
    instructions += static_cast<unsigned>(block->size());
    auto* branch = llvm::dyn_cast<llvm::BranchInst>(block->getTerminator());
    if (branch == nullptr || period != 0) continue;
    period = periodicTest(*branch, loop, se, guarded);
    // The test's block must lead to the guarded block only through that branch.
    if (period != 0 && guarded->getSinglePredecessor() != block) period = 0;
  }
  if (period == 0 || instructions > kMaxPeriodicLoopInstructions || !loop.contains(guarded))
    return 0;
  for (llvm::BasicBlock* block : loop.blocks()) {
    if (dt.dominates(guarded, block)) continue;
    for (llvm::Instruction& inst : *block) {
      if (!inst.mayWriteToMemory()) continue;
      auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
      if (store == nullptr || codes == nullptr ||
          llvm::getUnderlyingObject(store->getPointerOperand()) != codes)
        return 0;
    }
  }
  return period;
}

}  // namespace

bool isWorkItemLoop(const llvm::Loop& loop) {
  return llvm::findOptionMDForLoop(&loop, kWorkItemLoopMarker) != nullptr;
}

void splitThreadRanges(llvm::Module& module) {
  llvm::TargetLibraryInfoImpl libraryImpl{llvm::Triple(module.getTargetTriple())};
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    llvm::TargetLibraryInfo libraryInfo(libraryImpl, &f);
    llvm::DenseMap<llvm::MDNode*, unsigned> splits;
    for (unsigned count = 0; count < kMaxSplitsPerFunction; ++count)
      if (!splitOneLoop(f, libraryInfo, splits)) break;
  }
}

void versionUniformTests(llvm::Module& module) {
  llvm::TargetLibraryInfoImpl libraryImpl{llvm::Triple(module.getTargetTriple())};
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    llvm::TargetLibraryInfo libraryInfo(libraryImpl, &f);
    for (unsigned count = 0; count < kMaxVersionsPerFunction; ++count)
      if (!versionOneLoop(f, libraryInfo)) break;
  }
}

void unrollPeriodicThreadTests(llvm::Module& module) {
  llvm::TargetLibraryInfoImpl libraryImpl{llvm::Triple(module.getTargetTriple())};
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    llvm::TargetLibraryInfo libraryInfo(libraryImpl, &f);
    LoopAnalyses analyses(f, libraryInfo);
    auto& [dt, li, assumptions, se] = analyses;
    const llvm::Value* codes = oneRoundCodes(f);
    llvm::LLVMContext& c = f.getContext();
    for (llvm::Loop* loop : li.getLoopsInPreorder()) {
      if (!isWorkItemLoop(*loop)) continue;
      unsigned period = unrollPeriod(*loop, dt, se, codes);
      if (period == 0) continue;
      llvm::SmallVector<llvm::Metadata*, 8> options{nullptr};
      if (llvm::MDNode* id = loop->getLoopID())
        for (unsigned i = 1; i < id->getNumOperands(); ++i) options.push_back(id->getOperand(i));
      auto option = [&](const char* name, unsigned value) {
        options.push_back(llvm::MDNode::get(
            c, {llvm::MDString::get(c, name), llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(
                                                  llvm::Type::getInt32Ty(c), value))}));
      };
      option("llvm.loop.vectorize.width", 1);
      option("llvm.loop.interleave.count", 1);
      option("llvm.loop.unroll.count", period);
      llvm::MDNode* id = llvm::MDNode::getDistinct(c, options);
      id->replaceOperandWith(0, id);
      loop->setLoopID(id);
    }
  }
}

}  // namespace rocuda::compiler::detail
