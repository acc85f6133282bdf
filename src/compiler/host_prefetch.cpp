// Software prefetch for the CPU device's block forms: address computations copied with some of
// their values replaced (another pass's induction, a later block's index), and loops of
// prefetches over the cache lines between two such addresses.
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/ScalarEvolutionExpander.h>

#include "compiler/host_codegen.h"

namespace rocuda::compiler::detail {
namespace {

// How many instructions deep an address computation may be copied.
constexpr int kMaxAddressDepth = 12;
// The most loads of one work-item loop whose lines of a later block are prefetched, and the most
// lines for each; and the fewest worth it: not a row of a 2D block's tile (a transpose's 32
// floats, 2 lines, took 15 ms instead of 11.5 with its prefetches), but a 1D block's 256 floats.
constexpr size_t kMaxNextBlockLoads = 4;
constexpr uint64_t kMaxNextBlockLines = 32;
constexpr uint64_t kMinNextBlockLines = 8;
// How many blocks ahead (in %ctaid.x, the order a worker runs the blocks of its chunk) the lines
// are fetched: far enough that they arrive before the rounds need them. On an AMD Zen 5 host the
// shared-memory reduction (2 KiB a block) took 3.6-4.0 ms with the next block's lines, 3.2-3.6
// with those 4 blocks ahead (1.0-1.1 ms for OpenMP in the same runs); the shuffle reduction
// 4.5 -> 4.1-4.5, the histogram the same.
constexpr int32_t kNextBlockDistance = 4;
// The most accesses of one row of a 2D block whose lines in the next block are prefetched.
constexpr size_t kMaxRowAccesses = 8;

// Whether `inst` loads %ctaid.x from the block context.
bool loadsBlockIndex(const llvm::Instruction& inst) {
  auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
  return load != nullptr && readsContextField(*load, kCtaid, 0);
}

// A block form's loads of %ctaid.x (none where `f` is not one: its second argument is the block
// context).
llvm::SmallVector<llvm::Instruction*, 4> blockIndexLoadsIn(llvm::Function& f) {
  llvm::SmallVector<llvm::Instruction*, 4> loads;
  if (f.arg_size() < 2 || !f.getArg(1)->getType()->isPointerTy()) return loads;
  for (llvm::BasicBlock& block : f)
    for (llvm::Instruction& inst : block)
      if (loadsBlockIndex(inst)) loads.push_back(&inst);
  return loads;
}

// Whether the block of `f` (a block form) has one row of threads: ntid.y * ntid.z == 1.
llvm::Value* oneDimensionalBlock(llvm::IRBuilder<>& b, llvm::Function& f) {
  return b.CreateICmpEQ(
      b.CreateMul(loadContext(b, f.getArg(1), kNtid, 1), loadContext(b, f.getArg(1), kNtid, 2)),
      b.getInt32(1));
}

// Lines from address `from` to address `to` to prefetch before `at`.
struct PrefetchSite {
  llvm::Instruction* at;
  llvm::Value* from;
  llvm::Value* to;
  const llvm::SCEV* start = nullptr;  // `from`'s, where sites are compared
  bool forWriting = false;
};

// Prefetch, before each nest of work-item loops of `f`, the lines its loads will read for a
// block a little ahead (%ctaid.x + kNextBlockDistance, a block the worker runs soon within its
// chunk).
void prefetchNextBlockIn(llvm::Function& f, llvm::TargetLibraryInfo& libraryInfo) {
  llvm::SmallVector<llvm::Instruction*, 4> blockIndexLoads = blockIndexLoadsIn(f);
  if (blockIndexLoads.empty()) return;
  LoopAnalyses analyses(f, libraryInfo);
  llvm::LoopInfo& li = analyses.li;
  llvm::ScalarEvolution& se = analyses.se;
  llvm::SmallVector<PrefetchSite, 8> sites;
  llvm::SmallPtrSet<llvm::Loop*, 4> nests;  // the loop nests over z and y already prefetched for
  for (llvm::Loop* loop : li.getLoopsInPreorder()) {
    llvm::PHINode* index = loop->getCanonicalInductionVariable();
    if (!isWorkItemLoop(*loop) || index == nullptr) continue;
    const llvm::SCEV* backedges = se.getBackedgeTakenCount(loop);
    if (llvm::isa<llvm::SCEVCouldNotCompute>(backedges) ||
        !se.isAvailableAtLoopEntry(backedges, loop->getOutermostLoop()))
      continue;
    // Once per round, before the loops over z and y, for their first iterations (the first row
    // of a 2D block's threads): the work-item loop runs once per row, and per row the
    // prefetches cost more than they gain (a transpose's 32-thread rows: 11.3 -> 16.3 ms).
    llvm::Loop* nest = loop->getOutermostLoop();
    llvm::BasicBlock* preheader = nest->getLoopPreheader();
    if (preheader == nullptr || !nests.insert(nest).second) continue;
    llvm::SmallVector<std::pair<llvm::Value*, llvm::Value*>, 2> outerStarts;
    bool counted = true;
    for (llvm::Loop* outer = loop->getParentLoop(); outer != nullptr;
         outer = outer->getParentLoop()) {
      llvm::PHINode* outerIndex = outer->getCanonicalInductionVariable();
      counted = counted && outerIndex != nullptr;
      if (outerIndex != nullptr)
        outerStarts.push_back({outerIndex, llvm::ConstantInt::get(outerIndex->getType(), 0)});
    }
    if (!counted) continue;
    llvm::Instruction* at = preheader->getTerminator();
    llvm::SCEVExpander expander(se, f.getDataLayout(), "next.block");
    llvm::Value* lastIndex = nullptr;  // expanded on the first load that needs it
    llvm::IRBuilder<> b(at);
    llvm::Value* nextBlock = nullptr;
    llvm::SmallPtrSet<llvm::BasicBlock*, 16> inside(nest->block_begin(), nest->block_end());
    size_t loads = 0;
    for (llvm::BasicBlock* block : loop->blocks())
      for (llvm::Instruction& inst : *block) {
        auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
        if (load == nullptr || !load->isSimple() || loads == kMaxNextBlockLoads) continue;
        if (nextBlock == nullptr) {
          nextBlock =
              b.CreateAdd(loadContext(b, f.getArg(1), kCtaid, 0), b.getInt32(kNextBlockDistance));
          lastIndex = expander.expandCodeFor(backedges, index->getType(), at);
        }
        llvm::SmallDenseMap<llvm::Value*, llvm::Value*, 2> first, last;
        for (const auto& [outerIndex, start] : outerStarts) {
          first[outerIndex] = start;
          last[outerIndex] = start;
        }
        for (llvm::Instruction* blockIndexLoad : blockIndexLoads) {
          first[blockIndexLoad] = nextBlock;
          last[blockIndexLoad] = nextBlock;
        }
        first[index] = llvm::ConstantInt::get(index->getType(), 0);
        last[index] = lastIndex;
        llvm::SmallPtrSet<llvm::Value*, 2> used;
        llvm::Value* from = copyAddress(load->getPointerOperand(), first, inside, at, used);
        bool fromBlockIndex =
            llvm::any_of(blockIndexLoads, [&](llvm::Instruction* i) { return used.contains(i); });
        if (from == nullptr || !fromBlockIndex) continue;
        llvm::Value* to = copyAddress(load->getPointerOperand(), last, inside, at, used);
        if (to == nullptr) continue;
        sites.push_back({at, from, to});
        ++loads;
      }
  }
  // One-dimensional blocks only: in a 2D block's tiles (a transpose's), the prefetches of the
  // next block cost more than they gained (11 -> 13-16 ms).
  for (const PrefetchSite& site : sites) {
    llvm::IRBuilder<> b(site.at);
    llvm::Value* oneDimensional = oneDimensionalBlock(b, f);
    prefetchLines(site.from, site.to, kMaxNextBlockLines, site.at, kMinNextBlockLines,
                  oneDimensional);
  }
}

// Whether `value` follows from the launch alone: kernel parameters (loads from argument 0),
// the block context (argument 1), constants and the indices of the loops around `loop` and
// its own, through arithmetic. Not a value the kernel loads or carries across a wait (SGEMM's
// tile offset): the next block will not be at that value when it starts, and the prefetches
// for it were wasted (SGEMM 34.4-35.7 -> 36.1-37.7 ms).
bool followsFromLaunch(llvm::Value* value, const llvm::Loop& loop, int depth = 0) {
  if (llvm::isa<llvm::Constant>(value) || llvm::isa<llvm::Argument>(value)) return true;
  auto* inst = llvm::dyn_cast<llvm::Instruction>(value);
  if (inst == nullptr || depth > kMaxAddressDepth) return false;
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(inst)) {
    const llvm::DataLayout& layout = load->getModule()->getDataLayout();
    llvm::APInt offset(64, 0);
    auto* base = llvm::dyn_cast<llvm::Argument>(
        load->getPointerOperand()->stripAndAccumulateConstantOffsets(layout, offset, true));
    return base != nullptr && base->getArgNo() <= 1;
  }
  if (auto* phi = llvm::dyn_cast<llvm::PHINode>(inst)) {
    for (const llvm::Loop* around = &loop; around != nullptr; around = around->getParentLoop())
      if (phi == around->getCanonicalInductionVariable()) return true;
    return false;
  }
  bool arithmetic = llvm::isa<llvm::CastInst>(inst) || llvm::isa<llvm::GetElementPtrInst>(inst) ||
                    llvm::isa<llvm::BinaryOperator>(inst) || llvm::isa<llvm::CmpInst>(inst) ||
                    llvm::isa<llvm::SelectInst>(inst) || llvm::isa<llvm::FreezeInst>(inst) ||
                    llvm::isa<llvm::MinMaxIntrinsic>(inst);
  return arithmetic && llvm::all_of(inst->operands(), [&](llvm::Value* operand) {
           return followsFromLaunch(operand, loop, depth + 1);
         });
}

// Prefetch, before each row of a 2D block's threads (the work-item loop over x, inside the loop
// over y), the lines the same row of the next block (%ctaid.x + 1) will read and write, for
// the accesses whose address follows from %ctaid.x. A 2D block's rows each touch another part
// of memory (a 32 x 8 transpose tile: 32 rows of 128 bytes, 16 KB apart), more streams than
// the hardware prefetcher follows: with them, the transpose took 4.0-4.8 ms instead of
// 12.4-14.8 (OpenMP 6.3), the 2D stencil 3.4-4.8 instead of 4.2-5.3; reading the same tiles
// (no barrier) 1.8 ms instead of 4.0, where the same C++ loop takes 1.1.
void prefetchNextBlockRowsIn(llvm::Function& f, llvm::TargetLibraryInfo& libraryInfo) {
  llvm::SmallVector<llvm::Instruction*, 4> blockIndexLoads = blockIndexLoadsIn(f);
  if (blockIndexLoads.empty()) return;
  LoopAnalyses analyses(f, libraryInfo);
  llvm::LoopInfo& li = analyses.li;
  llvm::ScalarEvolution& se = analyses.se;
  llvm::SmallVector<PrefetchSite, 8> sites;
  for (llvm::Loop* loop : li.getLoopsInPreorder()) {
    llvm::PHINode* index = loop->getCanonicalInductionVariable();
    llvm::Loop* parent = loop->getParentLoop();
    if (!isWorkItemLoop(*loop) || index == nullptr || parent == nullptr ||
        !loop->getSubLoops().empty())
      continue;
    llvm::BasicBlock* preheader = loop->getLoopPreheader();
    const llvm::SCEV* backedges = se.getBackedgeTakenCount(loop);
    if (preheader == nullptr || llvm::isa<llvm::SCEVCouldNotCompute>(backedges) ||
        !se.isAvailableAtLoopEntry(backedges, loop))
      continue;
    llvm::Instruction* at = preheader->getTerminator();
    llvm::SCEVExpander expander(se, f.getDataLayout(), "next.row");
    llvm::IRBuilder<> b(at);
    llvm::SmallPtrSet<llvm::BasicBlock*, 16> inside(loop->block_begin(), loop->block_end());
    // The row's first and last thread in the next block, made at the first access that needs
    // them.
    llvm::SmallDenseMap<llvm::Value*, llvm::Value*, 2> first, last;
    size_t accesses = 0;
    for (llvm::BasicBlock* block : loop->blocks())
      for (llvm::Instruction& inst : *block) {
        auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
        auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        bool simple = load != nullptr ? load->isSimple() : store != nullptr && store->isSimple();
        if (!simple || accesses == kMaxRowAccesses) continue;
        llvm::Value* address =
            load != nullptr ? load->getPointerOperand() : store->getPointerOperand();
        if (!followsFromLaunch(address, *loop)) continue;
        if (first.empty()) {
          llvm::Value* nextBlock =
              b.CreateAdd(loadContext(b, f.getArg(1), kCtaid, 0), b.getInt32(1));
          for (llvm::Instruction* blockIndexLoad : blockIndexLoads) {
            first[blockIndexLoad] = nextBlock;
            last[blockIndexLoad] = nextBlock;
          }
          first[index] = llvm::ConstantInt::get(index->getType(), 0);
          last[index] = expander.expandCodeFor(backedges, index->getType(), at);
        }
        llvm::SmallPtrSet<llvm::Value*, 2> used;
        llvm::Value* from = copyAddress(address, first, inside, at, used);
        bool fromBlockIndex =
            llvm::any_of(blockIndexLoads, [&](llvm::Instruction* i) { return used.contains(i); });
        if (from == nullptr || !fromBlockIndex) continue;
        // An access within a line of one already prefetched here (a stencil's in[i - 1],
        // in[i], in[i + 1]) adds nothing.
        const llvm::SCEV* start = se.getSCEV(from);
        bool near = llvm::any_of(sites, [&](const PrefetchSite& site) {
          if (site.at != at) return false;
          auto* apart = llvm::dyn_cast<llvm::SCEVConstant>(se.getMinusSCEV(start, site.start));
          return apart != nullptr && apart->getAPInt().abs().ult(64);
        });
        if (near) continue;
        llvm::Value* to = copyAddress(address, last, inside, at, used);
        if (to == nullptr) continue;
        sites.push_back({at, from, to, start, store != nullptr});
        ++accesses;
      }
  }
  // The first and the last line of each: a row of a 2D block spans one or two lines (32
  // floats), rarely more, and a loop over its lines cost more than its prefetches (the
  // stencil: 5.4-7.1 ms). Only where ntid.y * ntid.z > 1: a 1D block is one row.
  llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(
      f.getParent(), llvm::Intrinsic::prefetch, {llvm::PointerType::getUnqual(f.getContext())});
  llvm::Instruction* gatedAt = nullptr;  // the row whose 2D test was made
  llvm::Instruction* into = nullptr;     // where that row's prefetches go
  for (const PrefetchSite& site : sites) {
    if (site.at != gatedAt) {
      gatedAt = site.at;
      llvm::IRBuilder<> b(site.at);
      into =
          llvm::SplitBlockAndInsertIfThen(b.CreateNot(oneDimensionalBlock(b, f)), site.at, false);
      into->getParent()->setName("prefetch.row");
    }
    // Into the L2 cache only (locality 2, `prefetcht1`), and lines to be written as well by a
    // read: a block's 32 rows of input and 32 of output are 128 lines from memory, and brought
    // into the L1 cache each waited for one of its few line-fill buffers (perf: three quarters
    // of the transpose's samples on these prefetches); from the L2 cache they fill quickly. A
    // line no other core holds comes in exclusive, so the stores need no second request. The
    // transpose: 8.4-9.4 -> 6.1-7.0 ms (standalone, best of 30), prefetchw for its output
    // 7.6-8.9.
    llvm::IRBuilder<> b(into);
    for (llvm::Value* address : {site.from, site.to}) {
      llvm::CallInst* call =
          b.CreateCall(prefetch, {address, b.getInt32(0), b.getInt32(2), b.getInt32(1)});
      if (site.forWriting)
        call->setMetadata(kPrefetchForWritingMarker, llvm::MDNode::get(f.getContext(), {}));
    }
  }
}

// As copyAddress; `made` maps the instructions already copied (or kept) to their copies.
llvm::Value* copyAddressFrom(
    llvm::Value* address, const llvm::SmallDenseMap<llvm::Value*, llvm::Value*, 2>& substitutions,
    const llvm::SmallPtrSetImpl<llvm::BasicBlock*>& inside, llvm::Instruction* at,
    llvm::SmallPtrSetImpl<llvm::Value*>& used, llvm::DenseMap<llvm::Value*, llvm::Value*>& made,
    int depth) {
  if (auto found = substitutions.find(address); found != substitutions.end()) {
    used.insert(address);
    return found->second;
  }
  auto* inst = llvm::dyn_cast<llvm::Instruction>(address);
  if (inst == nullptr) return address;  // constants, arguments
  if (auto found = made.find(inst); found != made.end()) return found->second;
  // An instruction outside `inside` is available at `at` as it is, unless a substituted value
  // is among its operands' operands.
  bool within = inside.contains(inst->getParent());
  bool copyable = llvm::isa<llvm::CastInst>(inst) || llvm::isa<llvm::GetElementPtrInst>(inst) ||
                  (llvm::isa<llvm::BinaryOperator>(inst) && !inst->isIntDivRem());
  if (!copyable || depth > kMaxAddressDepth) return within ? nullptr : address;
  llvm::SmallVector<llvm::Value*, 4> operands;
  bool changed = false;
  for (llvm::Value* operand : inst->operands()) {
    llvm::Value* value = copyAddressFrom(operand, substitutions, inside, at, used, made, depth + 1);
    if (value == nullptr) return within ? nullptr : address;
    changed |= value != operand;
    operands.push_back(value);
  }
  if (!within && !changed) {
    made[inst] = inst;
    return inst;
  }
  llvm::Instruction* copy = inst->clone();
  for (unsigned i = 0; i < operands.size(); ++i) copy->setOperand(i, operands[i]);
  // The copy's values differ from the original's: no flags or metadata that promised anything
  // about them.
  copy->dropPoisonGeneratingFlags();
  copy->dropPoisonGeneratingMetadata();
  copy->insertBefore(at);
  made[inst] = copy;
  return copy;
}

}  // namespace

llvm::Value* copyAddress(llvm::Value* address,
                         const llvm::SmallDenseMap<llvm::Value*, llvm::Value*, 2>& substitutions,
                         const llvm::SmallPtrSetImpl<llvm::BasicBlock*>& inside,
                         llvm::Instruction* at, llvm::SmallPtrSetImpl<llvm::Value*>& used) {
  llvm::DenseMap<llvm::Value*, llvm::Value*> made;
  return copyAddressFrom(address, substitutions, inside, at, used, made, 0);
}

llvm::Instruction* prefetchLines(llvm::Value* from, llvm::Value* to, uint64_t maxLines,
                                 llvm::Instruction* at, uint64_t minLines, llvm::Value* when) {
  llvm::IRBuilder<> b(at);
  llvm::Module& m = *at->getModule();
  llvm::Value* span =
      b.CreateSub(b.CreatePtrToInt(to, b.getInt64Ty()), b.CreatePtrToInt(from, b.getInt64Ty()));
  // Lines [0, lines); a span that runs backwards prefetches from `from` only.
  llvm::Value* lines =
      b.CreateSelect(b.CreateICmpSLT(span, b.getInt64(0)), b.getInt64(1),
                     b.CreateBinaryIntrinsic(llvm::Intrinsic::umin,
                                             b.CreateAdd(b.CreateLShr(span, 6), b.getInt64(1)),
                                             b.getInt64(maxLines)));
  llvm::BasicBlock* before = at->getParent();
  llvm::BasicBlock* after = before->splitBasicBlock(at, before->getName() + ".prefetched");
  auto* loop = llvm::BasicBlock::Create(m.getContext(), "prefetch", before->getParent(), after);
  if (minLines > 1 || when != nullptr) {
    before->getTerminator()->eraseFromParent();
    llvm::IRBuilder<> enough(before);
    llvm::Value* go = enough.CreateICmpUGE(lines, enough.getInt64(minLines));
    if (when != nullptr) go = enough.CreateAnd(go, when);
    enough.CreateCondBr(go, loop, after);
  } else {
    before->getTerminator()->setSuccessor(0, loop);
  }
  llvm::IRBuilder<> l(loop);
  llvm::PHINode* line = l.CreatePHI(l.getInt64Ty(), 2, "line");
  line->addIncoming(l.getInt64(0), before);
  llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(
      &m, llvm::Intrinsic::prefetch, {llvm::PointerType::getUnqual(m.getContext())});
  // Read, keep in every cache level, data.
  l.CreateCall(prefetch, {l.CreateGEP(l.getInt8Ty(), from, l.CreateShl(line, 6)), l.getInt32(0),
                          l.getInt32(3), l.getInt32(1)});
  llvm::Value* next = l.CreateAdd(line, l.getInt64(1));
  line->addIncoming(next, loop);
  l.CreateCondBr(l.CreateICmpULT(next, lines), loop, after);
  return at;
}

void prefetchNextBlocks(llvm::Module& module) {
  llvm::TargetLibraryInfoImpl libraryImpl{llvm::Triple(module.getTargetTriple())};
  // A 1D block's next-block prefetch only in the rounds of Continuations: a block that waits
  // spends enough between its loads and the next block's (the runtime, the other rounds) for
  // the hardware prefetcher to lose the stream, while a BlockLoop's 1D blocks stream as one
  // loop. A 2D block's rows, in both forms.
  const std::string rounds = roundSymbol("");
  const std::string blocks = blockLoopSymbol("");
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    bool round = f.getName().starts_with(rounds);
    if (!round && !f.getName().starts_with(blocks)) continue;
    llvm::TargetLibraryInfo libraryInfo(libraryImpl, &f);
    if (round) prefetchNextBlockIn(f, libraryInfo);
    prefetchNextBlockRowsIn(f, libraryInfo);
  }
}

}  // namespace rocuda::compiler::detail
