// Warp reductions by shuffles as one collective. CUDA's commonest warp code,
//
//   for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(~0u, v, offset);
//
// (or __shfl_xor_sync, or an integer min/max/and/or), is, unrolled, a chain of shfls, each
// followed by the combination of the lane's value with the one it read. In a Continuation each
// shfl is a wait: a round over the block's threads per step, every value live across it kept in
// the threads' frames. A chain of n >= 2 such steps, with constant offsets, clamp 31 and a full
// member mask, in one basic block, becomes one wait in `__rocuda_shfl_chain` (compiler.h): the
// lanes post their first value once and read their last; the round function (or the runtime)
// runs the n steps on a warp's 32 values at once. The steps are the ones the code would have
// run, in the same order, so the results are bit for bit those of the shuffles. Where only lane 0
// of each warp reads the result (`if (lane == 0) sums[warp] = v`), the schedule says so and the
// steps compute lane 0's result alone: a warp's reduction tree instead of 32 lanes' steps.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PatternMatch.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "compiler/compiler.h"
#include "compiler/host_codegen.h"

namespace rocuda::compiler::detail {
namespace {

namespace pm = llvm::PatternMatch;

// PTX's canonical NaN as an f32 constant (canonicalize_nans.cpp's selects use it).
bool isCanonicalNaN(llvm::Value* v) {
  auto* fp = llvm::dyn_cast<llvm::ConstantFP>(v);
  return fp != nullptr && fp->getType()->isFloatTy() &&
         fp->getValueAPF().bitcastToAPInt().getZExtValue() == 0x7fffffffu;
}

// A shfl that can be a step of a chain: down or bfly by a constant offset, clamp 31 (no
// segments), all lanes; its only use the low half of its result.
struct Shuffle {
  llvm::CallInst* call;
  int32_t mode;
  uint32_t offset;
  llvm::Instruction* low;  // trunc of the result to i32
};

std::optional<Shuffle> chainShuffle(llvm::Instruction& inst) {
  auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
  if (call == nullptr || call->getCalledFunction() == nullptr ||
      call->getCalledFunction()->getName() != "__rocuda_shfl_sync" || call->arg_size() != 5)
    return std::nullopt;
  auto constant = [&](unsigned i) {
    return llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(i));
  };
  llvm::ConstantInt *mode = constant(0), *b = constant(2), *c = constant(3), *mask = constant(4);
  if (!mode || !b || !c || !mask) return std::nullopt;
  if ((mode->getZExtValue() != 1 && mode->getZExtValue() != 2) || c->getZExtValue() != 31 ||
      mask->getZExtValue() != 0xffffffffu || b->getZExtValue() == 0 || b->getZExtValue() > 31)
    return std::nullopt;
  if (!call->hasOneUse()) return std::nullopt;
  auto* low = llvm::dyn_cast<llvm::TruncInst>(call->user_back());
  if (low == nullptr || !low->getType()->isIntegerTy(32)) return std::nullopt;
  return Shuffle{call, static_cast<int32_t>(mode->getZExtValue()),
                 static_cast<uint32_t>(b->getZExtValue()), low};
}

// The combination `inst` makes of its two operands, if a chain can stand for it.
std::optional<ShuffleChainOp> combination(llvm::Instruction* inst) {
  using Op = ShuffleChainOp;
  if (inst->getType()->isFloatTy())
    return inst->getOpcode() == llvm::Instruction::FAdd ? std::optional(Op::FAdd) : std::nullopt;
  if (!inst->getType()->isIntegerTy(32)) return std::nullopt;
  switch (inst->getOpcode()) {
    case llvm::Instruction::Add:
      return Op::Add;
    case llvm::Instruction::And:
      return Op::And;
    case llvm::Instruction::Or:
      return Op::Or;
    case llvm::Instruction::Xor:
      return Op::Xor;
    default:
      break;
  }
  if (auto* intrinsic = llvm::dyn_cast<llvm::IntrinsicInst>(inst)) {
    switch (intrinsic->getIntrinsicID()) {
      case llvm::Intrinsic::smax:
        return Op::SMax;
      case llvm::Intrinsic::smin:
        return Op::SMin;
      case llvm::Intrinsic::umax:
        return Op::UMax;
      case llvm::Intrinsic::umin:
        return Op::UMin;
      default:
        break;
    }
  }
  return std::nullopt;
}

// The instructions through which the number `value` reaches a post as i32 bits `post`: none when
// they are the same value; else `bitcast value` or `bitcast (select (fcmp uno value, _),
// canonical NaN, value)`. Empty optional when `post` is not such a form of `value`.
std::optional<std::vector<llvm::Instruction*>> bitsOf(llvm::Value* value, llvm::Value* post) {
  if (post == value) return std::vector<llvm::Instruction*>{};
  auto* cast = llvm::dyn_cast<llvm::BitCastInst>(post);
  if (cast == nullptr) return std::nullopt;
  llvm::Value* from = cast->getOperand(0);
  if (from == value) return std::vector<llvm::Instruction*>{cast};
  auto* select = llvm::dyn_cast<llvm::SelectInst>(from);
  if (select == nullptr || select->getFalseValue() != value ||
      !isCanonicalNaN(select->getTrueValue()))
    return std::nullopt;
  auto* test = llvm::dyn_cast<llvm::FCmpInst>(select->getCondition());
  if (test == nullptr || test->getPredicate() != llvm::FCmpInst::FCMP_UNO ||
      test->getOperand(0) != value)
    return std::nullopt;
  return std::vector<llvm::Instruction*>{cast, select, test};
}

// Whether `number` is the value whose bits `post` are: `post` itself, or `bitcast post` to float
// (the chain's first value), or a value `post` is the bits of.
bool numberOf(llvm::Value* number, llvm::Value* post) {
  if (number == post) return true;
  if (auto* cast = llvm::dyn_cast<llvm::BitCastInst>(number); cast && cast->getOperand(0) == post)
    return true;
  return bitsOf(number, post).has_value();
}

struct Chain {
  llvm::Value* first;  // the first post
  int32_t mode;
  ShuffleChainOp op;
  std::vector<uint32_t> offsets;
  llvm::Instruction* result;  // the last combination: its uses take the chain's result
  std::vector<llvm::Instruction*> replaced;  // the shuffles and what only the chain uses
};

// The step's combination: the instruction that combines the shfl's result (the low half, or its
// bitcast to float: its only use) with the lane's own value, whose bits `post` are. Appends
// the step's instructions to `replaced`.
llvm::Instruction* stepCombination(const Shuffle& step, llvm::Value* post,
                                   std::vector<llvm::Instruction*>& replaced) {
  llvm::Instruction* read = step.low;
  if (!read->hasOneUse()) return nullptr;
  if (auto* cast = llvm::dyn_cast<llvm::BitCastInst>(read->user_back())) {
    if (!cast->hasOneUse()) return nullptr;
    read = cast;
  }
  auto* combined = llvm::dyn_cast<llvm::Instruction>(read->user_back());
  if (combined == nullptr || combined->getNumOperands() < 2) return nullptr;
  llvm::Value* own =
      combined->getOperand(0) == read ? combined->getOperand(1) : combined->getOperand(0);
  if (own == read || !numberOf(own, post)) return nullptr;
  replaced.push_back(step.call);
  replaced.push_back(step.low);
  if (read != step.low) replaced.push_back(read);
  return combined;
}

// The shfl that posts the bits of `combined` (in their form `bits`) in the block of `call`,
// after it, if it is a chain step.
std::optional<Shuffle> nextStep(llvm::CallInst* call, llvm::Instruction* combined,
                                std::vector<llvm::Instruction*>& bits) {
  // The post is `combined` itself, its bitcast, or the bitcast of its canonicalization.
  std::vector<llvm::Instruction*> forms{combined};
  for (size_t i = 0; i < forms.size() && i < 3; ++i)
    for (llvm::User* user : forms[i]->users())
      if (llvm::isa<llvm::BitCastInst>(user) || llvm::isa<llvm::SelectInst>(user))
        forms.push_back(llvm::cast<llvm::Instruction>(user));
  for (llvm::Instruction* form : forms)
    for (llvm::User* user : form->users()) {
      auto* next = llvm::dyn_cast<llvm::CallInst>(user);
      if (next == nullptr || next->getParent() != call->getParent() || !call->comesBefore(next) ||
          next->getArgOperand(1) != form)
        continue;
      std::optional<Shuffle> step = chainShuffle(*next);
      if (!step) continue;
      std::optional<std::vector<llvm::Instruction*>> found = bitsOf(combined, form);
      if (!found) continue;
      bits = *found;
      return step;
    }
  return std::nullopt;
}

// The chain that starts at `start`, or nullopt where fewer than two steps make one.
std::optional<Chain> chainFrom(const Shuffle& start) {
  Chain chain{start.call->getArgOperand(1), start.mode, ShuffleChainOp::FAdd, {}, nullptr, {}};
  std::vector<llvm::Instruction*> replaced;
  llvm::Instruction* combined = stepCombination(start, chain.first, replaced);
  if (combined == nullptr) return std::nullopt;
  std::optional<ShuffleChainOp> op = combination(combined);
  if (!op) return std::nullopt;
  chain.offsets.push_back(start.offset);
  chain.replaced = replaced;
  chain.result = combined;
  Shuffle step = start;
  while (chain.offsets.size() < kMaxShuffleChainSteps) {
    std::vector<llvm::Instruction*> bits;
    std::optional<Shuffle> next = nextStep(step.call, combined, bits);
    if (!next || next->mode != chain.mode) break;
    replaced.clear();
    llvm::Instruction* nextCombined =
        stepCombination(*next, next->call->getArgOperand(1), replaced);
    if (nextCombined == nullptr || combination(nextCombined) != op) break;
    // The combination goes on only as the next step's post and the next combination's own
    // value: used elsewhere too, the chain ends with it.
    bool onlyChain = llvm::all_of(combined->users(), [&](llvm::User* user) {
      return user == nextCombined || user == next->call || llvm::is_contained(bits, user);
    });
    for (llvm::Instruction* inst : bits) onlyChain = onlyChain && inst->hasOneUse();
    if (!onlyChain) break;
    chain.replaced.push_back(combined);
    chain.replaced.insert(chain.replaced.end(), bits.begin(), bits.end());
    chain.replaced.insert(chain.replaced.end(), replaced.begin(), replaced.end());
    chain.offsets.push_back(next->offset);
    chain.result = nextCombined;
    combined = nextCombined;
    step = *next;
  }
  if (chain.offsets.size() < 2) return std::nullopt;
  chain.op = *op;
  return chain;
}

llvm::Function* chainFunction(llvm::Module& m) {
  auto* i32 = llvm::Type::getInt32Ty(m.getContext());
  return llvm::cast<llvm::Function>(
      m.getOrInsertFunction(kShuffleChainFunction,
                            llvm::FunctionType::get(i32, {i32, i32, i32, i32}, false))
          .getCallee());
}

// The thread index that `condition`, taken on its `taken` edge, restricts to multiples of 32:
// `x == 0`, `(x & m) == 0` with m's low five bits set, or their negations on the false edge.
llvm::Value* multipleOf32Tested(llvm::Value* condition, bool taken) {
  llvm::Value* tested = nullptr;
  llvm::ICmpInst::Predicate predicate;
  if (!pm::match(condition, pm::m_ICmp(predicate, pm::m_Value(tested), pm::m_Zero())))
    return nullptr;
  if (predicate != (taken ? llvm::ICmpInst::ICMP_EQ : llvm::ICmpInst::ICMP_NE)) return nullptr;
  llvm::Value* masked = nullptr;
  const llvm::APInt* mask = nullptr;
  if (pm::match(tested, pm::m_And(pm::m_Value(masked), pm::m_APInt(mask))) &&
      (mask->getZExtValue() & 31) == 31)
    return masked;
  return tested;
}

// Which threads may read `value` where `user` reads it: kShuffleChainReadByLaneZero or
// kShuffleChainReadByXLaneZero when a test of `linearThread` or `threadX` guards the read (a
// block reached only by that test's edge dominates it), else 0.
int32_t readersOf(const llvm::Instruction& user, llvm::Value* linearThread, llvm::Value* threadX,
                  const llvm::DominatorTree& tree) {
  if (llvm::isa<llvm::PHINode>(user)) return 0;
  for (const llvm::DomTreeNode* node = tree.getNode(user.getParent()); node != nullptr;
       node = node->getIDom()) {
    const llvm::BasicBlock* block = node->getBlock();
    const llvm::BasicBlock* from = block->getSinglePredecessor();
    auto* branch = from ? llvm::dyn_cast<llvm::BranchInst>(from->getTerminator()) : nullptr;
    if (branch == nullptr || !branch->isConditional() ||
        branch->getSuccessor(0) == branch->getSuccessor(1))
      continue;
    llvm::Value* tested =
        multipleOf32Tested(branch->getCondition(), branch->getSuccessor(0) == block);
    if (tested != nullptr && tested == linearThread) return kShuffleChainReadByLaneZero;
    if (tested != nullptr && tested == threadX) return kShuffleChainReadByXLaneZero;
  }
  return 0;
}

// Which threads may read the chain's result `result` (its uses and those of its bitcasts):
// kShuffleChainReadByLaneZero, kShuffleChainReadByXLaneZero, or 0 for any.
int32_t chainReaders(llvm::Instruction& result, llvm::Value* linearThread, llvm::Value* threadX,
                     const llvm::DominatorTree& tree) {
  int32_t readers = kShuffleChainReadByLaneZero;
  for (llvm::User* user : result.users()) {
    auto* inst = llvm::cast<llvm::Instruction>(user);
    int32_t these = llvm::isa<llvm::BitCastInst>(inst)
                        ? chainReaders(*inst, linearThread, threadX, tree)
                        : readersOf(*inst, linearThread, threadX, tree);
    if (these == 0) return 0;
    readers = std::max(readers, these);  // any test of threadIdx.x: the weaker promise
  }
  return readers;
}

void replaceChain(const Chain& chain, llvm::Value* linearThread, llvm::Value* threadX,
                  const llvm::DominatorTree& tree) {
  llvm::CallInst* first = llvm::cast<llvm::CallInst>(chain.replaced.front());
  llvm::IRBuilder<> b(first);
  int32_t readers = chainReaders(*chain.result, linearThread, threadX, tree);
  llvm::Value* result = b.CreateCall(
      chainFunction(*first->getModule()),
      {b.getInt32(static_cast<uint32_t>(chain.op)), chain.first, b.getInt32(chain.mode),
       b.getInt32(static_cast<uint32_t>(
           shuffleChainSchedule(chain.offsets.data(), static_cast<uint32_t>(chain.offsets.size())) |
           readers))},
      "shfl.chain");
  if (chain.result->getType()->isFloatTy()) result = b.CreateBitCast(result, b.getFloatTy());
  chain.result->replaceAllUsesWith(result);
  chain.result->eraseFromParent();
  // Erase what the chain held, each once nothing uses it (the shuffles last in use order).
  std::vector<llvm::Instruction*> left = chain.replaced;
  for (bool erased = true; erased && !left.empty();) {
    erased = false;
    for (auto it = left.begin(); it != left.end();) {
      if ((*it)->use_empty()) {
        (*it)->eraseFromParent();
        it = left.erase(it);
        erased = true;
      } else {
        ++it;
      }
    }
  }
}

}  // namespace

unsigned fuseShuffleChains(llvm::Function& f, llvm::Value* linearThread, llvm::Value* threadX) {
  unsigned fused = 0;
  llvm::DominatorTree tree(f);  // replacing chains leaves the blocks as they are
  for (bool again = true; again;) {
    again = false;
    for (llvm::BasicBlock& block : f) {
      for (llvm::Instruction& inst : block) {
        std::optional<Shuffle> start = chainShuffle(inst);
        if (!start) continue;
        std::optional<Chain> chain = chainFrom(*start);
        if (!chain) continue;
        replaceChain(*chain, linearThread, threadX, tree);
        ++fused;
        again = true;  // the block changed: look again
        break;
      }
      if (again) break;
    }
  }
  return fused;
}

void emitShuffleChainSteps(llvm::IRBuilder<>& b, llvm::Value* values, llvm::Value* results,
                           llvm::Value* count, llvm::Value* blockDimX, const WarpWaitSite& site) {
  llvm::LLVMContext& c = b.getContext();
  llvm::Function* fn = b.GetInsertBlock()->getParent();
  auto* i32 = b.getInt32Ty();
  auto* warpType = llvm::FixedVectorType::get(i32, 32);
  auto* floats = llvm::FixedVectorType::get(b.getFloatTy(), 32);
  auto op = static_cast<ShuffleChainOp>(site.c);
  // The steps on the warp starting at thread `first`; `present` (a splat of the threads from
  // `first` on), where the warp may be short of 32 lanes: a lane reading a missing one keeps its
  // own value, as the runtime's chain does (runShuffleChain).
  // `laneZeroOnly`: store lane 0's result alone, which leaves the optimiser only the steps
  // that lead to it.
  auto steps = [&](llvm::Value* first, llvm::Value* present, bool laneZeroOnly) {
    llvm::Value* offset = b.CreateZExt(first, b.getInt64Ty());
    // A last warp short of 32 lanes reads and writes past the block's last thread: the arrays
    // have kWarpLaneArrayPadding entries there (compiler.h).
    llvm::Value* cur =
        b.CreateAlignedLoad(warpType, b.CreateInBoundsGEP(i32, values, offset), llvm::Align(4));
    for (uint32_t k = 0; k < shuffleChainSteps(site.b); ++k) {
      uint32_t distance = shuffleChainOffset(site.b, k);
      llvm::SmallVector<int, 32> source;
      llvm::SmallVector<llvm::Constant*, 32> sourceLanes;
      for (uint32_t lane = 0; lane < 32; ++lane) {
        uint32_t from = shuffleChainSource(site.mode, distance, lane);
        source.push_back(static_cast<int>(from));
        sourceLanes.push_back(b.getInt32(from));
      }
      llvm::Value* other = b.CreateShuffleVector(cur, source);
      if (present != nullptr)
        other = b.CreateSelect(b.CreateICmpULT(llvm::ConstantVector::get(sourceLanes), present),
                               other, cur);
      using Op = ShuffleChainOp;
      switch (op) {
        case Op::FAdd:
          cur = b.CreateBitCast(
              b.CreateFAdd(b.CreateBitCast(cur, floats), b.CreateBitCast(other, floats)), warpType);
          break;
        case Op::Add:
          cur = b.CreateAdd(cur, other);
          break;
        case Op::And:
          cur = b.CreateAnd(cur, other);
          break;
        case Op::Or:
          cur = b.CreateOr(cur, other);
          break;
        case Op::Xor:
          cur = b.CreateXor(cur, other);
          break;
        case Op::SMax:
          cur = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, cur, other);
          break;
        case Op::SMin:
          cur = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, cur, other);
          break;
        case Op::UMax:
          cur = b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, cur, other);
          break;
        case Op::UMin:
          cur = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, cur, other);
          break;
      }
    }
    llvm::Value* to = b.CreateInBoundsGEP(i32, results, offset);
    if (laneZeroOnly)
      b.CreateAlignedStore(b.CreateExtractElement(cur, uint64_t(0)), to, llvm::Align(4));
    else
      b.CreateAlignedStore(cur, to, llvm::Align(4));
  };
  // Whole warps first, with no test of which lanes exist (a compare and a blend per step and
  // register saved), then the last warp if the block ends inside one.
  auto* tail = llvm::BasicBlock::Create(c, "shfl.chain.tail", fn);
  auto* partial = llvm::BasicBlock::Create(c, "shfl.chain.partial", fn);
  auto* done = llvm::BasicBlock::Create(c, "shfl.chain.done", fn);
  llvm::Value* wholeWarps = b.CreateLShr(count, 5);
  auto wholeWarpLoop = [&](bool laneZeroOnly) {
    auto* loop = llvm::BasicBlock::Create(c, "shfl.chain.warp", fn, tail);
    llvm::BasicBlock* entry = b.GetInsertBlock();
    b.CreateCondBr(b.CreateICmpEQ(wholeWarps, b.getInt32(0)), tail, loop);
    b.SetInsertPoint(loop);
    llvm::PHINode* warp = b.CreatePHI(i32, 2, "warp");
    warp->addIncoming(b.getInt32(0), entry);
    steps(b.CreateShl(warp, 5), nullptr, laneZeroOnly);
    llvm::Value* next = b.CreateAdd(warp, b.getInt32(1));
    warp->addIncoming(next, b.GetInsertBlock());
    b.CreateCondBr(b.CreateICmpULT(next, wholeWarps), loop, tail);
  };
  int32_t readers = site.b & (kShuffleChainReadByLaneZero | kShuffleChainReadByXLaneZero);
  if (readers == kShuffleChainReadByLaneZero) {
    wholeWarpLoop(true);
  } else if (readers == kShuffleChainReadByXLaneZero) {
    // threadIdx.x % 32 is the lane when the block's rows are whole warps.
    auto* rowsOfWarps = llvm::BasicBlock::Create(c, "shfl.chain.rows", fn, tail);
    auto* otherRows = llvm::BasicBlock::Create(c, "shfl.chain.lanes", fn, tail);
    b.CreateCondBr(b.CreateICmpEQ(b.CreateAnd(blockDimX, 31), b.getInt32(0)), rowsOfWarps,
                   otherRows);
    b.SetInsertPoint(rowsOfWarps);
    wholeWarpLoop(true);
    b.SetInsertPoint(otherRows);
    wholeWarpLoop(false);
  } else {
    wholeWarpLoop(false);
  }

  b.SetInsertPoint(tail);
  llvm::Value* first = b.CreateAnd(count, b.getInt32(~31u));
  b.CreateCondBr(b.CreateICmpEQ(first, count), done, partial);

  b.SetInsertPoint(partial);
  steps(first, b.CreateVectorSplat(32, b.CreateSub(count, first)), false);
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

}  // namespace rocuda::compiler::detail
