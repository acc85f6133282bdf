// Spin-waits on the CPU device. A GPU thread that waits for another thread (of another block:
// cooperative groups' grid.sync, decoupled look-back, spin locks; or of its own block: a flag
// in shared memory, a block-scope latch or atomic wait) polls memory in a loop; on the CPU that
// loop holds the host thread which the awaited thread may need. Every pollable access
// (translator.h) inside a loop is followed by a call reporting the address and the value read,
// with which the runtime notices a thread reading the same unchanged value again and again and
// lets the other threads of its block run, or its host thread yield, then sleep. The callee
// says what kind of loop it is (host_codegen.h: kSpinWaitFunctions). Ordinary kernels' loops
// hold no such access, so they are left untouched.
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Operator.h>

#include <vector>

#include "compiler/host_codegen.h"
#include "compiler/translator.h"

namespace rocuda::compiler::detail {
namespace {

// The address an access reads and the value it read (the old value for a compare-and-swap), or
// {nullptr, nullptr} when the access is not one the runtime can compare.
std::pair<llvm::Value*, llvm::Instruction*> polledValue(llvm::Instruction& access) {
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&access))
    return {load->getPointerOperand(), load};
  if (auto* cas = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&access))
    return {cas->getPointerOperand(), cas};
  if (auto* rmw = llvm::dyn_cast<llvm::AtomicRMWInst>(&access))  // one that changes nothing
    return {rmw->getPointerOperand(), rmw};
  return {nullptr, nullptr};
}

// Whether `value`, read in `loop`, decides whether the loop ends: a spin-wait re-reads until
// the value changes, unlike a loop that reads such memory while it iterates over something else.
bool decidesExit(llvm::Value* value, const llvm::Loop& loop) {
  std::vector<const llvm::Value*> work{value};
  llvm::SmallPtrSet<const llvm::Value*, 32> seen{value};
  constexpr size_t kLongestChain = 256;  // values followed before giving up (not a spin-wait)
  while (!work.empty() && seen.size() < kLongestChain) {
    const llvm::Value* current = work.back();
    work.pop_back();
    for (const llvm::User* user : current->users()) {
      auto* inst = llvm::dyn_cast<llvm::Instruction>(user);
      if (inst == nullptr || !loop.contains(inst)) continue;
      if (inst->isTerminator()) {
        if (loop.isLoopExiting(inst->getParent())) return true;
      } else if (!inst->getType()->isVoidTy() && seen.insert(inst).second) {
        work.push_back(inst);
      }
    }
  }
  return false;
}

// Whether `address` is (on some path) an address in the block's shared window: a generic
// address the program made from a shared one (cvta), such as a block-scope latch's, or one it
// keeps in shared memory (a pointer to a latch placed in shared memory, stored there by one
// thread for all: such a pointer points into the window too).
bool inSharedWindow(llvm::Value* address, int depth = 0) {
  std::vector<llvm::Value*> work{address};
  llvm::SmallPtrSet<llvm::Value*, 16> seen{address};
  constexpr size_t kLongestChain = 64;
  while (!work.empty() && seen.size() < kLongestChain) {
    llvm::Value* v = work.back();
    work.pop_back();
    auto follow = [&](llvm::Value* operand) {
      if (seen.insert(operand).second) work.push_back(operand);
    };
    if (auto* call = llvm::dyn_cast<llvm::CallInst>(v)) {
      if (llvm::Function* callee = call->getCalledFunction();
          callee && callee->getName() == "__rocuda_shared_base")
        return true;
    } else if (auto* load = llvm::dyn_cast<llvm::LoadInst>(v)) {
      if (depth < 2 && inSharedWindow(load->getPointerOperand(), depth + 1)) return true;
    } else if (auto* gep = llvm::dyn_cast<llvm::GEPOperator>(v)) {
      follow(gep->getPointerOperand());
    } else if (auto* op = llvm::dyn_cast<llvm::Operator>(v)) {
      unsigned code = op->getOpcode();
      if (code == llvm::Instruction::IntToPtr || code == llvm::Instruction::PtrToInt ||
          code == llvm::Instruction::Add || code == llvm::Instruction::Sub ||
          code == llvm::Instruction::Or || code == llvm::Instruction::PHI ||
          code == llvm::Instruction::Select)
        for (llvm::Value* operand : op->operands())
          if (!llvm::isa<llvm::Constant>(operand)) follow(operand);
    }
  }
  return false;
}

// Whether `address` names one place for the whole loop: an address fixed before it, or one the
// loop re-reads each time from such a place (a pointer kept in shared memory, as libcu++'s latch
// reloads it), plus offsets fixed for the loop.
bool isFixedPlace(llvm::Value* address, const llvm::Loop& loop, int depth = 0) {
  if (loop.isLoopInvariant(address)) return true;
  constexpr int kDeepestChain = 4;
  if (depth >= kDeepestChain) return false;
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(address))
    return isFixedPlace(load->getPointerOperand(), loop, depth + 1);
  if (auto* gep = llvm::dyn_cast<llvm::GEPOperator>(address)) {
    for (const llvm::Use& index : gep->indices())
      if (!loop.isLoopInvariant(index.get())) return false;
    return isFixedPlace(gep->getPointerOperand(), loop, depth + 1);
  }
  if (auto* op = llvm::dyn_cast<llvm::Operator>(address)) {
    switch (op->getOpcode()) {
      case llvm::Instruction::IntToPtr:
      case llvm::Instruction::PtrToInt:
      case llvm::Instruction::BitCast:
      case llvm::Instruction::AddrSpaceCast:
        return isFixedPlace(op->getOperand(0), loop, depth + 1);
      case llvm::Instruction::Add:
      case llvm::Instruction::Or:
        if (loop.isLoopInvariant(op->getOperand(1)))
          return isFixedPlace(op->getOperand(0), loop, depth + 1);
        if (loop.isLoopInvariant(op->getOperand(0)))
          return isFixedPlace(op->getOperand(1), loop, depth + 1);
        return false;
      default:
        return false;
    }
  }
  return false;
}

// A volatile or atomic load, or a compare-and-swap, that carries no kPollMetadata: the optimizer
// drops the metadata where it merges two accesses into one (the load before a loop and the one
// on its back edge become one load in the header: CUB's look-back). Such an access is taken as
// a pollable generic access, but only where it is a spin-wait.
bool mayHaveLostPollMetadata(const llvm::Instruction& inst) {
  if (auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst))
    return load->isVolatile() || load->isAtomic();
  return llvm::isa<llvm::AtomicCmpXchgInst>(inst);
}

// Whether what `access` read is (part of) the address another polled access of `loop` reads:
// the pointer of a re-read pointer. Only the last access of such a chain is reported, so that
// the runtime sees one address read again and again.
bool feedsPolledAddress(llvm::Instruction& access, const llvm::Loop& loop) {
  std::vector<llvm::Value*> work{&access};
  llvm::SmallPtrSet<llvm::Value*, 16> seen{&access};
  constexpr size_t kLongestChain = 32;
  while (!work.empty() && seen.size() < kLongestChain) {
    llvm::Value* current = work.back();
    work.pop_back();
    for (llvm::User* user : current->users()) {
      auto* inst = llvm::dyn_cast<llvm::Instruction>(user);
      if (inst == nullptr || !loop.contains(inst)) continue;
      if (inst->getMetadata(kPollMetadata) != nullptr || mayHaveLostPollMetadata(*inst)) {
        auto [address, result] = polledValue(*inst);
        if (address == current) return true;
      }
      if (llvm::isa<llvm::GetElementPtrInst>(inst) || llvm::isa<llvm::CastInst>(inst) ||
          inst->getOpcode() == llvm::Instruction::Add || inst->getOpcode() == llvm::Instruction::Or)
        if (seen.insert(inst).second) work.push_back(inst);
    }
  }
  return false;
}

// A spin-wait reads one place until what it reads lets it leave: a load whose value decides the
// loop's exit, or a compare-and-swap that expects a value fixed for the loop (a spin lock). A
// loop probing a new place each time (a hash table's, a list's) waits for nobody, nor does a
// compare-and-swap retried with the value it last read (a lock-free update).
bool isSpinWait(llvm::Instruction& access, llvm::Value* address, llvm::Instruction* result,
                const llvm::Loop& loop) {
  if (!isFixedPlace(address, loop)) return false;
  if (auto* cas = llvm::dyn_cast<llvm::AtomicCmpXchgInst>(&access);
      cas && !loop.isLoopInvariant(cas->getCompareOperand()))
    return false;
  return decidesExit(result, loop);
}

bool holdsLockstepPoint(const llvm::Loop& loop) {
  for (const llvm::BasicBlock* block : loop.blocks())
    for (const llvm::Instruction& inst : *block)
      if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst);
          call && call->getCalledFunction() != nullptr &&
          call->getCalledFunction()->getName() == kWarpLockstepFunction)
        return true;
  return false;
}

struct PollCallees {
  llvm::FunctionCallee poll, wait, blockWait;  // kSpinWaitFunctions' order: see host_codegen.h
};

void insertPollsIn(llvm::Function& f, const PollCallees& callees) {
  std::vector<llvm::Instruction*> accesses;
  for (auto& block : f)
    for (auto& inst : block)
      if (inst.getMetadata(kPollMetadata) != nullptr || mayHaveLostPollMetadata(inst))
        accesses.push_back(&inst);
  if (accesses.empty()) return;
  llvm::DominatorTree dominators(f);
  llvm::LoopInfo loops(dominators);
  for (llvm::Instruction* access : accesses) {
    llvm::Loop* loop = loops.getLoopFor(access->getParent());
    if (loop == nullptr) continue;  // read once: no spin
    auto [address, result] = polledValue(*access);
    if (address == nullptr || feedsPolledAddress(*access, *loop)) continue;
    bool marked = access->getMetadata(kPollMetadata) != nullptr;
    llvm::StringRef space = marked ? stringMetadata(*access, kPollMetadata) : "generic";
    bool shared = space == "shared" || (space == "generic" && inSharedWindow(address));
    bool spins = isSpinWait(*access, address, result, *loop);
    if (!marked && !spins) continue;
    // Shared memory changes only under the block's own threads: polled in spin-waits only, and
    // not in a loop of warp lockstep points (host_warp_lockstep.cpp), which already wait for the
    // other lanes and warps each time round (a poll would let this lane fall out of step).
    if (space == "shared" && !spins) continue;
    if (shared && spins && holdsLockstepPoint(*loop)) continue;
    // Other generic addresses are taken to be global memory (a cooperative grid's workspace).
    const llvm::FunctionCallee& callee = !spins   ? callees.poll
                                         : shared ? callees.blockWait
                                                  : callees.wait;
    llvm::IRBuilder<> b(access->getNextNode());
    llvm::Value* value = result;
    if (llvm::isa<llvm::AtomicCmpXchgInst>(result)) value = b.CreateExtractValue(result, 0);
    llvm::Type* type = value->getType();
    // A whole vector (a 16-byte tile descriptor): its bits, of which the low 64 tell a new wait.
    if (type->isVectorTy() && type->getPrimitiveSizeInBits() <= 128) {
      value = b.CreateBitCast(value, b.getIntNTy(type->getPrimitiveSizeInBits()));
      if (type->getPrimitiveSizeInBits() > 64) value = b.CreateTrunc(value, b.getInt64Ty());
      type = value->getType();
    }
    if (!type->isIntegerTy() && !type->isFloatingPointTy()) continue;
    if (type->getPrimitiveSizeInBits() > 64) continue;
    if (type->isFloatingPointTy())
      value = b.CreateBitCast(value, b.getIntNTy(type->getPrimitiveSizeInBits()));
    b.CreateCall(callee, {address, b.CreateZExt(value, b.getInt64Ty())});
  }
}

}  // namespace

bool addressInSharedWindow(llvm::Value* address) { return inSharedWindow(address); }

void insertSpinPolls(llvm::Module& module) {
  llvm::LLVMContext& c = module.getContext();
  auto* type =
      llvm::FunctionType::get(llvm::Type::getVoidTy(c),
                              {llvm::PointerType::getUnqual(c), llvm::Type::getInt64Ty(c)}, false);
  auto declare = [&](const std::string& name) {
    llvm::FunctionCallee callee = module.getOrInsertFunction(name, type);
    if (auto* fn = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      fn->setDoesNotThrow();
      // It only switches threads, sleeps or ends the block (a failed cooperative grid): no
      // memory the kernel sees.
      fn->setOnlyAccessesInaccessibleMemory();
    }
    return callee;
  };
  PollCallees callees{declare(kSpinWaitFunctions[0]), declare(kSpinWaitFunctions[1]),
                      declare(kSpinWaitFunctions[2])};
  for (llvm::Function& f : module)
    if (!f.isDeclaration()) insertPollsIn(f, callees);
  for (const std::string& name : kSpinWaitFunctions)
    if (auto* fn = module.getFunction(name); fn && fn->use_empty()) fn->eraseFromParent();
}

}  // namespace rocuda::compiler::detail
