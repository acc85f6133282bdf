// Warp collectives and barrier reductions as calls into the device runtime (see compiler.h):
// shfl(.sync), vote(.sync), redux.sync, match.sync, elect.sync, bar.red / barrier.red.
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

llvm::FunctionCallee convergentRuntimeFunction(FunctionTranslator& t, const char* name,
                                               llvm::Type* ret, std::vector<llvm::Type*> args) {
  auto callee = t.mt.module().getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setConvergent();  // all participating lanes must reach the same call
    f->setDoesNotThrow();
  }
  return callee;
}

namespace {

// i64 __rocuda_shfl_sync(mode, value, lane, clamp, mask): the value, and the source lane's
// validity in bit 32.
llvm::FunctionCallee shuffleFunction(FunctionTranslator& t) {
  return convergentRuntimeFunction(t, "__rocuda_shfl_sync", t.i64(),
                                   {t.i32(), t.i32(), t.i32(), t.i32(), t.i32()});
}

// The last operand of a .sync collective is the member mask. The forms without .sync (PTX
// before 6.0, for sm_6x and older) have none: the threads of the warp that execute the
// instruction together take part, the active mask.
Result<llvm::Value*> memberMask(FunctionTranslator& t, const ptx::Instruction& inst, size_t index) {
  if (index >= inst.operands().size()) {
    auto activeMask = convergentRuntimeFunction(t, "__rocuda_activemask", t.i32(), {});
    return static_cast<llvm::Value*>(t.b.CreateCall(activeMask));
  }
  return t.read(inst.operands()[index], ScalarType::B32);
}

int modeIndex(const ptx::Instruction& inst, std::initializer_list<const char*> modes) {
  int i = 0;
  for (const char* m : modes) {
    if (inst.hasModifier(m)) return i;
    ++i;
  }
  return -1;
}

// shfl.sync.mode.b32 d[|p], a, b, c, membermask; and the old shfl.mode.b32 d[|p], a, b, c.
Status shfl(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  int mode = modeIndex(inst, {"up", "down", "bfly", "idx"});
  size_t n = inst.operands().size() + (inst.hasModifier("sync") ? 0 : 1);
  if (mode < 0 || (n != 5 && n != 6)) return t.unsupported(inst);
  bool hasPred = n == 6;
  size_t a = hasPred ? 2 : 1;
  ROCUDA_VALUE(value, t.read(inst.operands()[a], ScalarType::B32));
  ROCUDA_VALUE(lane, t.read(inst.operands()[a + 1], ScalarType::B32));
  ROCUDA_VALUE(clamp, t.read(inst.operands()[a + 2], ScalarType::B32));
  ROCUDA_VALUE(mask, memberMask(t, inst, a + 3));
  llvm::Value* r = B.CreateCall(shuffleFunction(t), {B.getInt32(mode), value, lane, clamp, mask});
  ROCUDA_TRY(t.write(inst.operands()[0], B.CreateTrunc(r, t.i32()), ScalarType::B32));
  if (hasPred) {
    llvm::Value* valid = B.CreateTrunc(B.CreateLShr(r, 32), t.i1());
    ROCUDA_TRY(t.write(inst.operands()[1], valid, ScalarType::Pred));
  }
  return Status::success();
}

}  // namespace

llvm::Value* shuffleFromLane(FunctionTranslator& t, llvm::Value* value, llvm::Value* lane) {
  constexpr uint32_t kIdx = 3, kWholeWarp = 0x1f;
  llvm::Value* r = t.b.CreateCall(shuffleFunction(t), {t.b.getInt32(kIdx), value, lane,
                                                       t.b.getInt32(kWholeWarp),
                                                       t.b.getInt32(0xffffffffu)});
  return t.b.CreateTrunc(r, t.i32());
}

namespace {

Status vote(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  int mode = modeIndex(inst, {"all", "any", "uni", "ballot"});
  if (mode < 0 || inst.operands().size() < 2) return t.unsupported(inst);
  ROCUDA_VALUE(pred, t.read(inst.operands()[1], ScalarType::Pred));
  ROCUDA_VALUE(mask, memberMask(t, inst, 2));
  auto callee =
      convergentRuntimeFunction(t, "__rocuda_vote_sync", t.i32(), {t.i32(), t.i32(), t.i32()});
  llvm::Value* r = B.CreateCall(callee, {B.getInt32(mode), B.CreateZExt(pred, t.i32()), mask});
  if (mode == 3) return t.write(inst.operands()[0], r, ScalarType::B32);
  return t.write(inst.operands()[0], B.CreateICmpNE(r, B.getInt32(0)), ScalarType::Pred);
}

Status redux(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.types().size() != 1 || inst.operands().size() != 3) return t.unsupported(inst);
  ScalarType type = inst.types()[0];
  bool isSigned = type == ScalarType::S32;
  int op = -1;
  if (inst.hasModifier("add"))
    op = 0;
  else if (inst.hasModifier("min"))
    op = isSigned ? 3 : 1;
  else if (inst.hasModifier("max"))
    op = isSigned ? 4 : 2;
  else if (inst.hasModifier("and"))
    op = 5;
  else if (inst.hasModifier("or"))
    op = 6;
  else if (inst.hasModifier("xor"))
    op = 7;
  if (op < 0 || ptx::isFloat(type)) return t.unsupported(inst);
  ROCUDA_VALUE(value, t.read(inst.operands()[1], ScalarType::B32));
  ROCUDA_VALUE(mask, memberMask(t, inst, 2));
  auto callee =
      convergentRuntimeFunction(t, "__rocuda_redux_sync", t.i32(), {t.i32(), t.i32(), t.i32()});
  return t.write(inst.operands()[0], B.CreateCall(callee, {B.getInt32(op), value, mask}), type);
}

Status match(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  int mode = modeIndex(inst, {"any", "all"});
  size_t n = inst.operands().size();
  if (mode < 0 || inst.types().size() != 1 || (n != 3 && n != 4)) return t.unsupported(inst);
  bool hasPred = n == 4;
  size_t a = hasPred ? 2 : 1;
  ROCUDA_VALUE(value, t.read(inst.operands()[a], ScalarType::B64));
  if (ptx::scalarTypeSize(inst.types()[0]) == 4) {
    ROCUDA_VALUE(narrow, t.read(inst.operands()[a], ScalarType::B32));
    value = B.CreateZExt(narrow, t.i64());
  }
  ROCUDA_VALUE(mask, memberMask(t, inst, a + 1));
  auto callee =
      convergentRuntimeFunction(t, "__rocuda_match_sync", t.i64(), {t.i32(), t.i64(), t.i32()});
  llvm::Value* r = B.CreateCall(callee, {B.getInt32(mode), value, mask});
  ROCUDA_TRY(t.write(inst.operands()[0], B.CreateTrunc(r, t.i32()), ScalarType::B32));
  if (hasPred)
    ROCUDA_TRY(
        t.write(inst.operands()[1], B.CreateTrunc(B.CreateLShr(r, 32), t.i1()), ScalarType::Pred));
  return Status::success();
}

}  // namespace

// bar.red.popc.u32 d, a{, b}, {!}c  /  bar.red.and|or.pred p, a{, b}, {!}c
Status translateBarrierReduction(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  int op = modeIndex(inst, {"popc", "and", "or"});
  size_t n = inst.operands().size();
  if (op < 0 || (n != 3 && n != 4)) return t.unsupported(inst);
  ROCUDA_VALUE(id, t.read(inst.operands()[1], ScalarType::U32));
  llvm::Value* threads = B.getInt32(0);
  if (n == 4) {
    ROCUDA_VALUE(count, t.read(inst.operands()[2], ScalarType::U32));
    threads = count;
  }
  ROCUDA_VALUE(pred, t.read(inst.operands()[n - 1], ScalarType::Pred));
  const ptx::Operand& barrier = inst.operands()[1];
  bool wholeBlock =
      n == 3 && barrier.kind == ptx::Operand::Kind::Immediate && barrier.imm().bits == 0;
  llvm::Value* r = nullptr;
  if (wholeBlock) {  // __syncthreads_count / _and / _or
    auto callee = convergentRuntimeFunction(t, "__rocuda_barrier_reduce", t.i32(),
                                            {t.i32(), t.i32(), t.i32(), t.i32()});
    r = B.CreateCall(callee, {B.getInt32(op), id, threads, B.CreateZExt(pred, t.i32())});
  } else {
    // A named barrier or a thread count: the vote joins barrier id's tally, the threads wait
    // there as at bar.sync id, count, and read the tally of the phase they voted in.
    auto arrive =
        convergentRuntimeFunction(t, "__rocuda_named_reduce_arrive", t.i32(), {t.i32(), t.i32()});
    llvm::Value* phase = B.CreateCall(arrive, {id, B.CreateZExt(pred, t.i32())});
    auto named = convergentRuntimeFunction(t, "__rocuda_named_barrier", B.getVoidTy(),
                                           {t.i32(), t.i32(), t.i32()});
    B.CreateCall(named, {id, threads, B.getInt32(0)});
    auto result = convergentRuntimeFunction(t, "__rocuda_named_reduce_result", t.i32(),
                                            {t.i32(), t.i32(), t.i32()});
    r = B.CreateCall(result, {B.getInt32(op), id, phase});
  }
  if (op == 0) return t.write(inst.operands()[0], r, ScalarType::U32);
  return t.write(inst.operands()[0], B.CreateICmpNE(r, B.getInt32(0)), ScalarType::Pred);
}

namespace {

// elect.sync d|p, membermask (sm_90): the leader is the lowest lane among the members that
// execute it (a ballot over them, which also waits for them), the same one every time for the
// same members; d is its lane for every member, p true in the leader alone.
Status elect(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (!inst.hasModifier("sync") || inst.operands().size() != 3) return t.unsupported(inst);
  ROCUDA_VALUE(mask, memberMask(t, inst, 2));
  auto ballot =
      convergentRuntimeFunction(t, "__rocuda_vote_sync", t.i32(), {t.i32(), t.i32(), t.i32()});
  constexpr uint32_t kBallot = 3;
  llvm::Value* members = B.CreateCall(ballot, {B.getInt32(kBallot), B.getInt32(1), mask});
  llvm::Value* leader = B.CreateBinaryIntrinsic(llvm::Intrinsic::cttz, members, B.getTrue());
  llvm::Value* lane = B.CreateCall(t.mt.sregFunction(ptx::SpecialRegister::LaneId, 0));
  if (inst.operands()[0].kind != ptx::Operand::Kind::Sink)
    ROCUDA_TRY(t.write(inst.operands()[0], leader, ScalarType::B32));
  return t.write(inst.operands()[1], B.CreateICmpEQ(lane, leader), ScalarType::Pred);
}

}  // namespace

Status translateWarpOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  switch (inst.opcode) {
    case ptx::Opcode::elect:
      return elect(t, inst);
    case ptx::Opcode::shfl:
      return shfl(t, inst);
    case ptx::Opcode::vote:
      return vote(t, inst);
    case ptx::Opcode::redux:
      return redux(t, inst);
    case ptx::Opcode::match:
      return match(t, inst);
    default:
      return t.unsupported(inst);
  }
}

}  // namespace rocuda::compiler::detail
