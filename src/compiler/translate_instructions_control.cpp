// Control flow and synchronisation: bra, brx.idx, call (direct, indirect, external), ret, exit,
// trap, bar/barrier (sync, arrive treated as sync), bar.warp.sync, membar/fence, activemask,
// no-ops.
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

ScalarType bitsOfSize(uint64_t size) {
  switch (size) {
    case 1:
      return ScalarType::B8;
    case 2:
      return ScalarType::B16;
    case 4:
      return ScalarType::B32;
    default:
      return ScalarType::B64;
  }
}

struct CallShape {
  const ptx::Operand* rets = nullptr;
  const ptx::Operand* callee = nullptr;
  const ptx::Operand* args = nullptr;
};

bool callShape(const ptx::Instruction& inst, CallShape& shape) {
  size_t i = 0, n = inst.operands().size();
  if (i < n && inst.operands()[i].kind == ptx::Operand::Kind::List) shape.rets = &inst.operands()[i++];
  if (i >= n) return false;
  shape.callee = &inst.operands()[i++];
  if (i < n && inst.operands()[i].kind == ptx::Operand::Kind::List) shape.args = &inst.operands()[i++];
  return true;
}

size_t countOf(const ptx::Operand* list) { return list ? list->elements().size() : 0; }

// Caller-side storage for one argument or return value of an internal call.
Result<llvm::Value*> argumentPointer(FunctionTranslator& t, const ptx::Operand& op, uint64_t size,
                                     bool isArgument) {
  if (op.kind == ptx::Operand::Kind::Symbol) {
    if (auto* p = t.paramStorage(op.symbol())) return p;
  }
  auto* slot = t.entryAlloca(llvm::ArrayType::get(t.i8(), std::max<uint64_t>(size, 8)), 8);
  if (isArgument) {
    ROCUDA_VALUE(v, t.read(op, bitsOfSize(size)));
    t.b.CreateStore(v, slot);
  }
  return static_cast<llvm::Value*>(slot);
}

Status copyReturnsBack(FunctionTranslator& t, const ptx::Operand* rets,
                       const std::vector<llvm::Value*>& pointers,
                       const std::vector<uint64_t>& sizes) {
  for (size_t i = 0; i < countOf(rets); ++i) {
    const auto& op = rets->elements()[i];
    if (op.kind != ptx::Operand::Kind::Register) continue;
    ScalarType type = bitsOfSize(sizes[i]);
    ROCUDA_TRY(t.write(op, t.b.CreateLoad(t.bitsType(type), pointers[i]), type));
  }
  return Status::success();
}

Status externalCall(FunctionTranslator& t, const ptx::Instruction& inst, const CallShape& shape,
                    const ptx::Function& def, llvm::Function* f) {
  auto& B = t.b;
  llvm::FunctionType* type = f->getFunctionType();
  if (countOf(shape.args) != type->getNumParams()) return t.invalid(inst, "argument count");
  std::vector<llvm::Value*> args;
  for (size_t i = 0; i < countOf(shape.args); ++i) {
    const auto& op = shape.args->elements()[i];
    llvm::Type* want = type->getParamType(static_cast<unsigned>(i));
    if (i < def.params.size() && !def.params[i].dims.empty()) {
      // An aggregate: its .param storage is passed by address.
      llvm::Value* storage =
          op.kind == ptx::Operand::Kind::Symbol ? t.paramStorage(op.symbol()) : nullptr;
      if (!storage) return t.invalid(inst, "an aggregate argument must be a .param variable");
      args.push_back(storage);
      continue;
    }
    llvm::Type* loadType = want->isPointerTy() ? t.i64() : want;
    llvm::Value* v = nullptr;
    if (op.kind == ptx::Operand::Kind::Symbol && t.paramStorage(op.symbol())) {
      v = B.CreateLoad(loadType, t.paramStorage(op.symbol()));
    } else {
      unsigned bytes = static_cast<unsigned>(loadType->getPrimitiveSizeInBits() / 8);
      ROCUDA_VALUE(r, t.read(op, bitsOfSize(bytes)));
      v = r;
    }
    args.push_back(want->isPointerTy() ? B.CreateIntToPtr(v, want) : v);
  }
  llvm::Value* result = B.CreateCall(f, args);
  if (countOf(shape.rets) == 0 || type->getReturnType()->isVoidTy()) return Status::success();
  const auto& ret = shape.rets->elements()[0];
  if (ret.kind == ptx::Operand::Kind::Symbol && t.paramStorage(ret.symbol())) {
    B.CreateStore(result, t.paramStorage(ret.symbol()));
    return Status::success();
  }
  uint64_t bytes =
      ptx::scalarTypeSize(def.returnParams.empty() ? ScalarType::B32 : def.returnParams[0].type);
  return t.write(ret, result, bitsOfSize(bytes));
}

Status call(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  CallShape shape;
  if (!callShape(inst, shape)) return t.invalid(inst, "malformed call");
  std::vector<llvm::Value*> pointers;
  std::vector<uint64_t> retSizes;
  llvm::FunctionCallee callee;
  bool calleeMayExit = false;
  if (shape.callee->kind == ptx::Operand::Kind::Symbol) {
    const ptx::Function* def = t.mt.findFunctionDef(shape.callee->symbol());
    llvm::Function* f = t.mt.findFunction(shape.callee->symbol());
    if (!def || !f) return t.invalid(inst, "unknown function '" + std::string(shape.callee->symbol()) + "'");
    if (def->isEntry) return t.unsupported(inst, "calling a kernel");
    if (def->isDeclaration) {
      ROCUDA_TRY(externalCall(t, inst, shape, *def, f));
      if (def->name == kAssertFunction) {
        // A failed assert stops its thread like `exit` (the PTX goes on after the call; NVIDIA's
        // __assertfail never returns); the block's other threads run on, so that each thread
        // failing an assert reports it, as CUDA documents (findExitingFunctions counts it).
        if (!t.fn.isEntry) B.CreateStore(B.getInt8(1), t.exitFlag());
        t.emitReturn();
        t.startDeadBlock();
      }
      return Status::success();
    }
    if (countOf(shape.rets) != def->returnParams.size() ||
        countOf(shape.args) != def->params.size())
      return t.invalid(inst, "argument count does not match '" + def->name + "'");
    for (size_t i = 0; i < countOf(shape.rets); ++i) {
      uint64_t size = def->returnParams[i].sizeInBytes();
      ROCUDA_VALUE(p, argumentPointer(t, shape.rets->elements()[i], size, false));
      pointers.push_back(p);
      retSizes.push_back(size);
    }
    for (size_t i = 0; i < countOf(shape.args); ++i) {
      ROCUDA_VALUE(p,
                   argumentPointer(t, shape.args->elements()[i], def->params[i].sizeInBytes(), true));
      pointers.push_back(p);
    }
    callee = f;
    calleeMayExit = t.mt.mayExit(def->name);
    if (calleeMayExit) pointers.push_back(t.exitFlag());
  } else {
    // Indirect call through a function pointer: every internal function takes pointers only.
    ROCUDA_VALUE(target, t.read(*shape.callee, ScalarType::U64));
    for (size_t i = 0; i < countOf(shape.rets); ++i) {
      ROCUDA_VALUE(p, argumentPointer(t, shape.rets->elements()[i], 8, false));
      pointers.push_back(p);
      retSizes.push_back(8);
    }
    for (size_t i = 0; i < countOf(shape.args); ++i) {
      ROCUDA_VALUE(p, argumentPointer(t, shape.args->elements()[i], 8, true));
      pointers.push_back(p);
    }
    std::vector<llvm::Type*> params(pointers.size(), t.ptrTy());
    auto* type = llvm::FunctionType::get(B.getVoidTy(), params, false);
    callee = llvm::FunctionCallee(type, B.CreateIntToPtr(target, t.ptrTy()));
  }
  B.CreateCall(callee, pointers);
  if (calleeMayExit) {
    // The thread exited in the callee: this function ends too (a kernel's return is its exit).
    auto* exited = llvm::BasicBlock::Create(t.ctx(), "exited", t.function);
    auto* returned = llvm::BasicBlock::Create(t.ctx(), "returned", t.function);
    B.CreateCondBr(B.CreateICmpNE(B.CreateLoad(t.i8(), t.exitFlag()), B.getInt8(0)), exited,
                   returned);
    B.SetInsertPoint(exited);
    t.emitReturn();
    B.SetInsertPoint(returned);
  }
  std::vector<llvm::Value*> retPointers(pointers.begin(), pointers.begin() + retSizes.size());
  return copyReturnsBack(t, shape.rets, retPointers, retSizes);
}

Status barrier(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.hasModifier("cluster")) {
    // barrier.cluster.arrive / .wait (sm_90) over a cluster of one block: every thread arrives
    // before it waits, so waiting for all of them at a block barrier is waiting for their
    // arrivals (and orders their memory accesses as .release / .acquire do).
    if (inst.hasModifier("arrive")) return Status::success();
    if (!inst.hasModifier("wait") || !inst.operands().empty()) return t.unsupported(inst);
    B.CreateCall(t.mt.barrierFunction(), {B.getInt32(0), B.getInt32(0)});
    return Status::success();
  }
  if (inst.hasModifier("warp")) {
    // bar.warp.sync mask (__syncwarp): a warp-level rendezvous provided by the runtime.
    llvm::Value* mask = B.getInt32(0xffffffffu);
    if (!inst.operands().empty()) {
      ROCUDA_VALUE(m, t.read(inst.operands()[0], ScalarType::B32));
      mask = m;
    }
    B.CreateCall(convergentRuntimeFunction(t, "__rocuda_warp_sync", B.getVoidTy(), {t.i32()}),
                 {mask});
    return Status::success();
  }
  if (inst.hasModifier("red")) return translateBarrierReduction(t, inst);
  if (!inst.hasModifier("sync") && !inst.hasModifier("arrive") && inst.opcode != ptx::Opcode::bar)
    return t.unsupported(inst);
  bool arrive = inst.hasModifier("arrive");
  bool wholeBlock =
      !arrive && inst.operands().size() <= 1 &&
      (inst.operands().empty() || (inst.operands()[0].kind == ptx::Operand::Kind::Immediate &&
                                   inst.operands()[0].imm().bits == 0));
  llvm::Value* id = B.getInt32(0);
  llvm::Value* count = B.getInt32(0);
  if (!inst.operands().empty()) {
    ROCUDA_VALUE(a, t.read(inst.operands()[0], ScalarType::U32));
    id = a;
  }
  if (inst.operands().size() > 1) {
    ROCUDA_VALUE(c, t.read(inst.operands()[1], ScalarType::U32));
    count = c;
  }
  if (wholeBlock) {  // __syncthreads
    B.CreateCall(t.mt.barrierFunction(), {id, count});
    return Status::success();
  }
  // A named or partial barrier, or an arrival that does not wait.
  auto named = convergentRuntimeFunction(t, "__rocuda_named_barrier", B.getVoidTy(),
                                         {t.i32(), t.i32(), t.i32()});
  B.CreateCall(named, {id, count, B.getInt32(arrive ? 1 : 0)});
  return Status::success();
}

// brx.idx index, tlist: a switch over the .branchtargets list; an index past its end (undefined
// in PTX) traps rather than jumping anywhere.
Status branchIndexed(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (!inst.hasModifier("idx") || inst.operands().size() != 2 ||
      inst.operands()[1].kind != ptx::Operand::Kind::Symbol)
    return t.invalid(inst, "expected index, tlist");
  std::string_view listName = inst.operands()[1].symbol();
  const ptx::TargetList* list = nullptr;
  for (const ptx::TargetList& candidate : t.fn.targetLists)
    if (!candidate.isCallTargets && candidate.label == listName) list = &candidate;
  if (list == nullptr)
    return t.invalid(inst, "'" + std::string(listName) + "' is not a .branchtargets list");
  ROCUDA_VALUE(index, t.read(inst.operands()[0], ptx::ScalarType::U32));
  auto* outside = llvm::BasicBlock::Create(t.ctx(), "brx.outside", t.function);
  auto* table = B.CreateSwitch(index, outside, static_cast<unsigned>(list->targets.size()));
  for (size_t i = 0; i < list->targets.size(); ++i) {
    llvm::BasicBlock* target = t.labelBlock(list->targets[i]);
    if (!target) return t.invalid(inst, "unknown label '" + list->targets[i] + "'");
    table->addCase(B.getInt32(static_cast<uint32_t>(i)), target);
  }
  llvm::IRBuilder<> trap(outside);
  trap.CreateCall(t.mt.trapFunction());
  trap.CreateUnreachable();
  t.startDeadBlock();
  return Status::success();
}

}  // namespace

Status translateControlOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  switch (inst.opcode) {
    case ptx::Opcode::bra: {
      if (inst.operands().size() != 1 || inst.operands()[0].kind != ptx::Operand::Kind::Symbol)
        return t.invalid(inst, "expected a label");
      llvm::BasicBlock* target = t.labelBlock(inst.operands()[0].symbol());
      if (!target) return t.invalid(inst, "unknown label '" + std::string(inst.operands()[0].symbol()) + "'");
      B.CreateBr(target);
      t.startDeadBlock();
      return Status::success();
    }
    case ptx::Opcode::brx:
      return branchIndexed(t, inst);
    case ptx::Opcode::ret:
      t.emitReturn();
      t.startDeadBlock();
      return Status::success();
    case ptx::Opcode::exit:
      // In a .func: raise the caller's exit flag and return; each caller returns in turn up to
      // the kernel (see ModuleTranslator::mayExit).
      if (!t.fn.isEntry) B.CreateStore(B.getInt8(1), t.exitFlag());
      t.emitReturn();
      t.startDeadBlock();
      return Status::success();
    case ptx::Opcode::trap:
      B.CreateCall(t.mt.trapFunction());
      B.CreateUnreachable();
      t.startDeadBlock();
      return Status::success();
    case ptx::Opcode::call:
      return call(t, inst);
    case ptx::Opcode::bar:
    case ptx::Opcode::barrier:
      return barrier(t, inst);
    case ptx::Opcode::membar:
    case ptx::Opcode::fence:
      if (inst.hasModifier("proxy") || inst.hasModifier("mbarrier_init")) return Status::success();
      t.checkFence(inst);
      markScope(*B.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent), inst, nullptr);
      return Status::success();
    case ptx::Opcode::activemask: {
      if (inst.operands().size() != 1) return t.invalid(inst, "expected d");
      // Convergent: its answer depends on where in the control flow it runs.
      auto callee = convergentRuntimeFunction(t, "__rocuda_activemask", t.i32(), {});
      return t.write(inst.operands()[0], B.CreateCall(callee), ScalarType::B32);
    }
    case ptx::Opcode::nanosleep:
    case ptx::Opcode::brkpt:
    case ptx::Opcode::pmevent:
      return Status::success();
    case ptx::Opcode::setmaxnreg:
      // sm_90a: moves registers between a block's warpgroups (warp-specialised kernels give the
      // producer fewer). Neither the CPU nor an AMD GPU divides a register file so: nothing to do.
      // `.sync.aligned` needs the warp converged, as every thread of it reaches it together.
      return Status::success();
    case ptx::Opcode::griddepcontrol:
      // Programmatic dependent launch (sm_90): .wait waits for the grids this one depends on,
      // .launch_dependents lets the next grid start early. Both devices start a grid only after
      // the one before it in the stream has completed and its writes are visible, so there is
      // never anything to wait for, and starting dependents early is only a permission.
      return Status::success();
    default:
      return t.unsupported(inst);
  }
}

}  // namespace rocuda::compiler::detail
