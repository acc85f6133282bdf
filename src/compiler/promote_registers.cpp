// Promotion of the translated functions' registers (allocas) to SSA values, before either
// target's pipeline. See host_codegen.h.
//
// The translator gives every PTX register an alloca in the entry block, read and written by
// plain loads and stores of its type. Those are promoted here by the classic construction
// (Cytron et al.): dominance frontiers computed once per function (Cooper, Harvey and Kennedy),
// phis at the iterated frontier of each register's definitions where the register is live, then
// one renaming walk over the dominator tree for all registers at once. LLVM's PromoteMemToReg
// computes each alloca's iterated frontier by walking the dominator subtrees of its definitions,
// which is as large as the function for a register defined in the entry block and again in a
// loop: that was 15% of the AMD compile of the Thrust module (thousands of registers, hundreds of
// blocks per kernel). Allocas with other uses go to PromoteMemToReg as before.
#include <llvm/ADT/DenseMap.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/BasicBlockUtils.h>
#include <llvm/Transforms/Utils/PromoteMemToReg.h>

#include <vector>

#include "compiler/host_codegen.h"

namespace rocuda::compiler::detail {

namespace {

// Instructions per chunk while LLVM promotes: short enough that its scan from a chunk's start is
// cheap (it is quadratic in a block's length), long enough that a value rarely crosses chunks.
constexpr unsigned kPromotionChunk = 256;

// LLVM's promotion, for the allocas the construction below does not take; long blocks are cut
// into chunks while it runs and joined again afterwards.
void promoteWithLlvm(llvm::Function& fn, llvm::ArrayRef<llvm::AllocaInst*> allocas) {
  std::vector<llvm::BasicBlock*> blocks;
  for (llvm::BasicBlock& block : fn)
    if (&block != &fn.getEntryBlock()) blocks.push_back(&block);
  std::vector<llvm::BasicBlock*> cuts;
  for (llvm::BasicBlock* block : blocks) {
    while (true) {
      auto it = block->getFirstNonPHIIt();
      for (unsigned count = 0; count < kPromotionChunk && !it->isTerminator(); ++count) ++it;
      if (it->isTerminator()) break;
      block = block->splitBasicBlock(it, block->getName());
      cuts.push_back(block);
    }
  }
  llvm::DominatorTree dominators(fn);
  llvm::PromoteMemToReg(allocas, dominators);
  for (llvm::BasicBlock* cut : cuts) llvm::MergeBlockIntoPredecessor(cut);
}

// A register: a single value of one type, used only by simple loads of that type from it and
// simple stores of that type to it.
bool isPlainRegister(const llvm::AllocaInst& alloca) {
  if (alloca.isArrayAllocation()) return false;
  llvm::Type* type = alloca.getAllocatedType();
  for (const llvm::Use& use : alloca.uses()) {
    const llvm::User* user = use.getUser();
    if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(user)) {
      if (!load->isSimple() || load->getType() != type) return false;
    } else if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(user)) {
      if (!store->isSimple() || use.getOperandNo() != store->getPointerOperandIndex() ||
          store->getValueOperand()->getType() != type)
        return false;
    } else {
      return false;
    }
  }
  return true;
}

class RegisterPromotion {
 public:
  RegisterPromotion(llvm::Function& fn, std::vector<llvm::AllocaInst*> registers)
      : fn_(fn), registers_(std::move(registers)), dominators_(fn) {}

  void run() {
    numberBlocks();
    scanAccesses();
    computeFrontiers();
    for (unsigned r = 0; r < registers_.size(); ++r) placePhis(r);
    rename();
    for (llvm::AllocaInst* alloca : registers_) alloca->eraseFromParent();
    removeTrivialPhis();
  }

 private:
  struct PlacedPhi {
    unsigned reg;
    llvm::PHINode* phi;
  };

  // Reachable blocks are numbered 0..n-1 in function order; unreachable ones are kept apart.
  void numberBlocks() {
    for (llvm::BasicBlock& block : fn_) {
      if (dominators_.isReachableFromEntry(&block)) {
        index_[&block] = static_cast<unsigned>(blocks_.size());
        blocks_.push_back(&block);
      } else {
        unreachable_.push_back(&block);
      }
    }
    size_t n = blocks_.size();
    preds_.resize(n);
    frontier_.resize(n);
    phisAt_.resize(n);
    for (unsigned b = 0; b < n; ++b)
      for (llvm::BasicBlock* pred : llvm::predecessors(blocks_[b]))
        if (auto it = index_.find(pred); it != index_.end()) preds_[b].push_back(it->second);
    liveStamp_.assign(n, 0);
    defStamp_.assign(n, 0);
    phiStamp_.assign(n, 0);
  }

  // Which blocks store each register, and which read it before storing it (upward exposed).
  void scanAccesses() {
    for (unsigned r = 0; r < registers_.size(); ++r) registerIndex_[registers_[r]] = r;
    size_t count = registers_.size();
    defBlocks_.resize(count);
    exposedBlocks_.resize(count);
    std::vector<unsigned> storedIn(count, ~0u), exposedIn(count, ~0u);
    for (unsigned b = 0; b < blocks_.size(); ++b) {
      for (llvm::Instruction& inst : *blocks_[b]) {
        if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
          unsigned r = registerOf(load->getPointerOperand());
          if (r == ~0u || storedIn[r] == b || exposedIn[r] == b) continue;
          exposedIn[r] = b;
          exposedBlocks_[r].push_back(b);
        } else if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
          unsigned r = registerOf(store->getPointerOperand());
          if (r == ~0u || storedIn[r] == b) continue;
          storedIn[r] = b;
          defBlocks_[r].push_back(b);
        }
      }
    }
  }

  unsigned registerOf(llvm::Value* pointer) const {
    auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(pointer);
    if (alloca == nullptr) return ~0u;
    auto it = registerIndex_.find(alloca);
    return it == registerIndex_.end() ? ~0u : it->second;
  }

  // Dominance frontiers: a join block is in the frontier of each block on the way up the
  // dominator tree from each of its predecessors to its immediate dominator.
  void computeFrontiers() {
    for (unsigned b = 0; b < blocks_.size(); ++b) {
      if (preds_[b].size() < 2) continue;
      llvm::DomTreeNode* idom = dominators_.getNode(blocks_[b])->getIDom();
      for (unsigned pred : preds_[b]) {
        for (llvm::DomTreeNode* runner = dominators_.getNode(blocks_[pred]);
             runner != nullptr && runner != idom; runner = runner->getIDom()) {
          std::vector<unsigned>& frontier = frontier_[index_.find(runner->getBlock())->second];
          if (frontier.empty() || frontier.back() != b) frontier.push_back(b);
        }
      }
    }
  }

  // Phis for register `r` at the iterated frontier of its definitions, in the blocks where it is
  // live on entry (a phi anywhere else would be dead).
  void placePhis(unsigned r) {
    if (defBlocks_[r].empty() || exposedBlocks_[r].empty()) return;
    ++stamp_;
    for (unsigned b : defBlocks_[r]) defStamp_[b] = stamp_;
    // Live on entry: read before written in the block, or live on exit and not written there.
    std::vector<unsigned> work(exposedBlocks_[r]);
    for (unsigned b : work) liveStamp_[b] = stamp_;
    while (!work.empty()) {
      unsigned b = work.back();
      work.pop_back();
      for (unsigned pred : preds_[b]) {
        if (liveStamp_[pred] == stamp_ || defStamp_[pred] == stamp_) continue;
        liveStamp_[pred] = stamp_;
        work.push_back(pred);
      }
    }
    work = defBlocks_[r];
    llvm::Type* type = registers_[r]->getAllocatedType();
    while (!work.empty()) {
      unsigned b = work.back();
      work.pop_back();
      for (unsigned join : frontier_[b]) {
        if (phiStamp_[join] == stamp_ || liveStamp_[join] != stamp_) continue;
        phiStamp_[join] = stamp_;
        llvm::BasicBlock* block = blocks_[join];
        auto* phi = llvm::PHINode::Create(type, static_cast<unsigned>(preds_[join].size()),
                                          registers_[r]->getName(), block->begin());
        phisAt_[join].push_back({r, phi});
        created_.push_back(phi);
        if (defStamp_[join] != stamp_) {
          defStamp_[join] = stamp_;
          work.push_back(join);
        }
      }
    }
  }

  llvm::Value* valueOf(unsigned r) {
    llvm::Value* value = current_[r];
    return value != nullptr ? value : llvm::UndefValue::get(registers_[r]->getAllocatedType());
  }

  // Rewrite a block's loads and stores of registers with the values reaching them; returns
  // false for other instructions.
  bool renameAccess(llvm::Instruction& inst) {
    if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) {
      unsigned r = registerOf(load->getPointerOperand());
      if (r == ~0u) return false;
      load->replaceAllUsesWith(valueOf(r));
      load->eraseFromParent();
      return true;
    }
    if (auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
      unsigned r = registerOf(store->getPointerOperand());
      if (r == ~0u) return false;
      undo_.push_back({r, current_[r]});
      current_[r] = store->getValueOperand();
      store->eraseFromParent();
      return true;
    }
    return false;
  }

  // One walk over the dominator tree in preorder, each register's reaching value kept in
  // current_ and restored when the walk leaves a block's subtree.
  void rename() {
    current_.assign(registers_.size(), nullptr);
    struct Frame {
      llvm::DomTreeNode* node;
      size_t child;
      size_t undoMark;
    };
    std::vector<Frame> stack;
    auto enter = [&](llvm::DomTreeNode* node) {
      stack.push_back({node, 0, undo_.size()});
      llvm::BasicBlock* block = node->getBlock();
      unsigned b = index_.find(block)->second;
      for (const PlacedPhi& placed : phisAt_[b]) {
        undo_.push_back({placed.reg, current_[placed.reg]});
        current_[placed.reg] = placed.phi;
      }
      for (llvm::Instruction& inst : llvm::make_early_inc_range(*block)) renameAccess(inst);
      for (llvm::BasicBlock* succ : llvm::successors(block)) {
        unsigned s = index_.find(succ)->second;
        for (const PlacedPhi& placed : phisAt_[s])
          placed.phi->addIncoming(valueOf(placed.reg), block);
      }
    };
    enter(dominators_.getRootNode());
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.child < frame.node->getNumChildren()) {
        llvm::DomTreeNode* child = *(frame.node->begin() + frame.child++);
        enter(child);
        continue;
      }
      while (undo_.size() > frame.undoMark) {
        current_[undo_.back().first] = undo_.back().second;
        undo_.pop_back();
      }
      stack.pop_back();
    }
    // Code no path reaches reads undefined values; its edges into reachable joins bring them.
    current_.assign(registers_.size(), nullptr);
    for (llvm::BasicBlock* block : unreachable_) {
      for (llvm::Instruction& inst : llvm::make_early_inc_range(*block)) renameAccess(inst);
      for (llvm::BasicBlock* succ : llvm::successors(block)) {
        auto it = index_.find(succ);
        if (it == index_.end()) continue;
        for (const PlacedPhi& placed : phisAt_[it->second])
          placed.phi->addIncoming(valueOf(placed.reg), block);
      }
    }
  }

  // A phi whose incoming values are all one value (or itself) is that value.
  void removeTrivialPhis() {
    bool changed = true;
    while (changed) {
      changed = false;
      for (llvm::PHINode*& phi : created_) {
        if (phi == nullptr) continue;
        llvm::Value* same = nullptr;
        bool trivial = true;
        for (llvm::Value* incoming : phi->incoming_values()) {
          if (incoming == phi || incoming == same) continue;
          if (same != nullptr) {
            trivial = false;
            break;
          }
          same = incoming;
        }
        if (!trivial) continue;
        phi->replaceAllUsesWith(same != nullptr ? same : llvm::UndefValue::get(phi->getType()));
        phi->eraseFromParent();
        phi = nullptr;
        changed = true;
      }
    }
  }

  llvm::Function& fn_;
  std::vector<llvm::AllocaInst*> registers_;
  llvm::DominatorTree dominators_;
  llvm::DenseMap<llvm::BasicBlock*, unsigned> index_;
  llvm::DenseMap<llvm::AllocaInst*, unsigned> registerIndex_;
  std::vector<llvm::BasicBlock*> blocks_, unreachable_;
  std::vector<std::vector<unsigned>> preds_, frontier_, defBlocks_, exposedBlocks_;
  std::vector<std::vector<PlacedPhi>> phisAt_;
  std::vector<unsigned> liveStamp_, defStamp_, phiStamp_;
  unsigned stamp_ = 0;
  std::vector<llvm::PHINode*> created_;
  std::vector<llvm::Value*> current_;
  std::vector<std::pair<unsigned, llvm::Value*>> undo_;
};

}  // namespace

void promoteRegisters(llvm::Module& module) {
  for (llvm::Function& fn : module) {
    if (fn.isDeclaration()) continue;
    // Every register's alloca is in the entry block.
    std::vector<llvm::AllocaInst*> plain, others;
    for (llvm::Instruction& inst : fn.getEntryBlock())
      if (auto* alloca = llvm::dyn_cast<llvm::AllocaInst>(&inst)) {
        if (isPlainRegister(*alloca))
          plain.push_back(alloca);
        else if (llvm::isAllocaPromotable(alloca))
          others.push_back(alloca);
      }
    if (!plain.empty()) RegisterPromotion(fn, std::move(plain)).run();
    if (!others.empty()) promoteWithLlvm(fn, others);
  }
}

}  // namespace rocuda::compiler::detail
