// Warp collectives of the IR contract (shfl, vote, redux, match, warp sync, mma) for AMD GPUs.
//
// A CUDA warp is 32 consecutive threads of the block. On RDNA (wave32) it is exactly one
// wavefront; on CDNA (wave64) a wavefront holds two CUDA warps, lanes 0-31 and 32-63, and every
// collective acts on the calling lane's half only: ballots are shifted down by the half's base,
// shuffles address lanes within it, reductions and matches skip the other half's lanes.
//
// The lanes taking part are the active lanes of the warp (EXEC) that are in the member mask, plus
// the calling lane, as on the CPU device (backends/cpu/warp_collectives.cpp); reading a lane that
// does not take part gives the reading lane its own value.
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/Module.h>

#include <set>

#include "compiler/amdgpu/amdgpu_lowering.h"

namespace rocuda::compiler::amdgpu {
namespace {

using Builder = llvm::IRBuilder<>;

llvm::Value* arg(llvm::Function& fn, unsigned i) { return fn.getArg(i); }

// i64 __rocuda_shfl_sync(i32 mode, i32 value, i32 b, i32 c, i32 mask): PTX's pseudo-code for the
// source lane, then ds_bpermute from it within the warp.
void defineShuffle(llvm::Function& fn, unsigned waveSize) {
  Builder b = defineRuntime(fn);
  WaveBuilder w(b, waveSize);
  llvm::Value *mode = arg(fn, 0), *value = arg(fn, 1), *mask = arg(fn, 4);
  llvm::Value* lane = w.lane();
  llvm::Value* bval = b.CreateAnd(arg(fn, 2), 31);
  llvm::Value* clamp = b.CreateAnd(arg(fn, 3), 31);
  llvm::Value* segmask = b.CreateAnd(b.CreateLShr(arg(fn, 3), 8), 31);
  llvm::Value* maxLane = b.CreateOr(b.CreateAnd(lane, segmask), b.CreateAnd(clamp, b.CreateNot(segmask)));
  llvm::Value* minLane = b.CreateAnd(lane, segmask);
  llvm::Value* up = b.CreateSub(lane, bval);
  llvm::Value* down = b.CreateAdd(lane, bval);
  llvm::Value* bfly = b.CreateXor(lane, bval);
  llvm::Value* idx = b.CreateOr(minLane, b.CreateAnd(bval, b.CreateNot(segmask)));
  auto isMode = [&](int m) { return b.CreateICmpEQ(mode, b.getInt32(m)); };
  llvm::Value* source =
      b.CreateSelect(isMode(0), up, b.CreateSelect(isMode(1), down, b.CreateSelect(isMode(2), bfly, idx)));
  llvm::Value* inRange = b.CreateSelect(isMode(0), b.CreateICmpSGE(source, maxLane),
                                        b.CreateICmpSLE(source, maxLane));
  source = b.CreateSelect(inRange, source, lane);
  llvm::Value* present =
      b.CreateTrunc(b.CreateLShr(w.participants(mask), source), b.getInt1Ty());
  source = b.CreateSelect(present, source, lane);
  llvm::Value* address = b.CreateShl(b.CreateAdd(w.warpBase(), source), 2);
  llvm::Value* result = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {address, value});
  llvm::Value* packed = b.CreateOr(b.CreateZExt(result, b.getInt64Ty()),
                                   b.CreateShl(b.CreateZExt(inRange, b.getInt64Ty()), 32));
  b.CreateRet(packed);
}

// i32 __rocuda_vote_sync(i32 mode, i32 predicate, i32 mask): mode 0 all, 1 any, 2 uni, 3 ballot.
void defineVote(llvm::Function& fn, unsigned waveSize) {
  Builder b = defineRuntime(fn);
  WaveBuilder w(b, waveSize);
  llvm::Value *mode = arg(fn, 0), *mask = arg(fn, 2);
  llvm::Value* participants = w.participants(mask);
  llvm::Value* ballot =
      b.CreateAnd(w.warpBallot(b.CreateICmpNE(arg(fn, 1), b.getInt32(0))), participants);
  llvm::Value* all = b.CreateICmpEQ(ballot, participants);
  llvm::Value* none = b.CreateICmpEQ(ballot, b.getInt32(0));
  auto isMode = [&](int m) { return b.CreateICmpEQ(mode, b.getInt32(m)); };
  llvm::Value* answer = b.CreateSelect(
      isMode(0), all, b.CreateSelect(isMode(1), b.CreateNot(none), b.CreateOr(all, none)));
  b.CreateRet(b.CreateSelect(isMode(3), ballot, b.CreateZExt(answer, b.getInt32Ty())));
}

// i32 __rocuda_redux_sync(i32 op, i32 value, i32 mask): op 0 add, 1 min.u32, 2 max.u32,
// 3 min.s32, 4 max.s32, 5 and, 6 or, 7 xor, over the lanes taking part.
void defineRedux(llvm::Function& fn, unsigned waveSize) {
  Builder b = defineRuntime(fn);
  WaveBuilder w(b, waveSize);
  llvm::Value *op = arg(fn, 0), *value = arg(fn, 1), *mask = arg(fn, 2);
  auto isOp = [&](int o) { return b.CreateICmpEQ(op, b.getInt32(o)); };
  // Each operation's identity, so the first lane taken needs no special case.
  llvm::Value* identity = b.CreateSelect(
      isOp(1), b.getInt32(0xffffffffu),
      b.CreateSelect(isOp(3), b.getInt32(0x7fffffff),
                     b.CreateSelect(isOp(4), b.getInt32(0x80000000u),
                                    b.CreateSelect(isOp(5), b.getInt32(0xffffffffu), b.getInt32(0)))));
  llvm::Value* result = w.forEachActiveLane(identity, [&](llvm::Value* i, llvm::Value* acc) {
    llvm::Value* x = w.readLane(value, i);
    auto minmax = [&](llvm::Intrinsic::ID id) {
      return b.CreateIntrinsic(id, {b.getInt32Ty()}, {acc, x});
    };
    llvm::Value* combined = b.CreateSelect(
        isOp(0), b.CreateAdd(acc, x),
        b.CreateSelect(
            isOp(1), minmax(llvm::Intrinsic::umin),
            b.CreateSelect(
                isOp(2), minmax(llvm::Intrinsic::umax),
                b.CreateSelect(
                    isOp(3), minmax(llvm::Intrinsic::smin),
                    b.CreateSelect(isOp(4), minmax(llvm::Intrinsic::smax),
                                   b.CreateSelect(isOp(5), b.CreateAnd(acc, x),
                                                  b.CreateSelect(isOp(6), b.CreateOr(acc, x),
                                                                 b.CreateXor(acc, x))))))));
    return b.CreateSelect(w.laneTakesPart(i, mask), combined, acc);
  });
  b.CreateRet(result);
}

// i64 __rocuda_match_sync(i32 mode, i64 value, i32 mask): the lanes holding this lane's value;
// match.all: every lane taking part (with the predicate in bit 32) or 0.
void defineMatch(llvm::Function& fn, unsigned waveSize) {
  Builder b = defineRuntime(fn);
  WaveBuilder w(b, waveSize);
  llvm::Value *mode = arg(fn, 0), *value = arg(fn, 1), *mask = arg(fn, 2);
  llvm::Value* low = b.CreateTrunc(value, b.getInt32Ty());
  llvm::Value* high = b.CreateTrunc(b.CreateLShr(value, 32), b.getInt32Ty());
  llvm::Value* same = w.forEachActiveLane(b.getInt32(0), [&](llvm::Value* i, llvm::Value* acc) {
    llvm::Value* x = b.CreateOr(b.CreateZExt(w.readLane(low, i), b.getInt64Ty()),
                                b.CreateShl(b.CreateZExt(w.readLane(high, i), b.getInt64Ty()), 32));
    llvm::Value* take = b.CreateAnd(w.laneTakesPart(i, mask), b.CreateICmpEQ(x, value));
    llvm::Value* bit = b.CreateShl(b.getInt32(1), b.CreateAnd(i, 31));
    return b.CreateSelect(take, b.CreateOr(acc, bit), acc);
  });
  llvm::Value* participants = w.participants(mask);
  llvm::Value* all = b.CreateSelect(
      b.CreateICmpEQ(same, participants),
      b.CreateOr(b.CreateZExt(participants, b.getInt64Ty()), b.getInt64(uint64_t(1) << 32)),
      b.getInt64(0));
  b.CreateRet(b.CreateSelect(b.CreateICmpEQ(mode, b.getInt32(0)),
                             b.CreateZExt(same, b.getInt64Ty()), all));
}

// void __rocuda_warp_sync(i32 mask): a wavefront runs its lanes in lockstep and reconverges at
// the end of every branch, so __syncwarp only has to order memory among the warp's lanes.
void defineWarpSync(llvm::Function& fn) {
  Builder b = defineRuntime(fn);
  b.CreateFence(llvm::AtomicOrdering::AcquireRelease,
                b.getContext().getOrInsertSyncScopeID("wavefront"));
  b.CreateIntrinsic(llvm::Intrinsic::amdgcn_wave_barrier, {}, {});
  b.CreateRetVoid();
}

// i32 __rocuda_activemask(): the warp's lanes executing it (EXEC, within the half on wave64).
void defineActivemask(llvm::Function& fn, unsigned waveSize) {
  Builder b = defineRuntime(fn);
  b.CreateRet(WaveBuilder(b, waveSize).warpBallot(b.getTrue()));
}

// void __rocuda_mma_sync(ptr tile, ptr lane, ptr record): each call becomes a call of its lane
// function, which fetches the other lanes' fragments with shuffles, on the inputs in the record,
// its outputs stored back there (SROA then keeps the record in registers). The tile functions,
// the CPU device's, are dropped. Leaves `fn` without uses.
void lowerMatrixCalls(llvm::Function& fn) {
  std::set<llvm::Function*> tiles;
  for (llvm::User* user : llvm::make_early_inc_range(fn.users())) {
    auto* call = llvm::dyn_cast<llvm::CallInst>(user);
    if (call == nullptr) continue;
    auto* tile = llvm::dyn_cast<llvm::Function>(call->getArgOperand(0));
    auto* lane = llvm::cast<llvm::Function>(call->getArgOperand(1));
    llvm::Value* record = call->getArgOperand(2);
    Builder b(call);
    auto slot = [&](uint64_t i) { return b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), record, i); };
    std::vector<llvm::Value*> inputs;
    for (unsigned i = 0; i < lane->arg_size(); ++i)
      inputs.push_back(b.CreateLoad(b.getInt64Ty(), slot(i)));
    llvm::CallInst* outputs = b.CreateCall(lane, inputs);
    outputs->setConvergent();
    auto* type = llvm::cast<llvm::ArrayType>(lane->getReturnType());
    for (unsigned j = 0; j < type->getNumElements(); ++j)
      b.CreateStore(b.CreateExtractValue(outputs, {j}), slot(lane->arg_size() + j));
    call->eraseFromParent();
    if (tile != nullptr) tiles.insert(tile);
  }
  for (llvm::Function* tile : tiles)
    if (tile->use_empty()) tile->eraseFromParent();
}

}  // namespace

llvm::Value* WaveBuilder::waveLane() {
  // mbcnt with an all-ones mask counts the lanes below this one in the wavefront.
  llvm::Value* lane =
      b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_lo, {}, {b_.getInt32(-1), b_.getInt32(0)});
  if (waveSize_ == 64)
    lane = b_.CreateIntrinsic(llvm::Intrinsic::amdgcn_mbcnt_hi, {}, {b_.getInt32(-1), lane});
  return lane;
}

bool defineWarpCollective(llvm::Function& fn, unsigned waveSize) {
  llvm::StringRef name = fn.getName();
  if (name == "__rocuda_activemask")
    defineActivemask(fn, waveSize);
  else if (name == "__rocuda_shfl_sync")
    defineShuffle(fn, waveSize);
  else if (name == "__rocuda_vote_sync")
    defineVote(fn, waveSize);
  else if (name == "__rocuda_redux_sync")
    defineRedux(fn, waveSize);
  else if (name == "__rocuda_match_sync")
    defineMatch(fn, waveSize);
  else if (name == "__rocuda_warp_sync")
    defineWarpSync(fn);
  else if (name == "__rocuda_mma_sync")
    lowerMatrixCalls(fn);
  else
    return false;
  return true;
}

}  // namespace rocuda::compiler::amdgpu
