// One function body: register storage, operand access, addressing, labels and guards, and the
// dispatch of each instruction to its family.
#include <llvm/ADT/APFloat.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>

#include <cstring>

#include "compiler/shared_layout.h"
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

std::string instructionName(const ptx::Instruction& inst) {
  std::string name = ptx::opcodeName(inst.opcode);
  for (const auto& m : inst.modifiers()) name += "." + std::string(m);
  if (inst.space != ptx::StateSpace::None) {
    std::string space = ptx::stateSpaceName(inst.space);
    if (!space.empty() && space[0] != '.') name += ".";
    name += space;
  }
  if (inst.vectorWidth > 1) name += ".v" + std::to_string(inst.vectorWidth);
  for (auto t : inst.types()) name += std::string(".") + ptx::scalarTypeName(t);
  return name;
}

std::string roundingModifier(const ptx::Instruction& inst) {
  for (const auto& m : inst.modifiers())
    if (m == "rn" || m == "rz" || m == "rm" || m == "rp" || m == "rni" || m == "rzi" ||
        m == "rmi" || m == "rpi" || m == "rna" || m == "rs")
      return std::string(m);
  return "";
}

FunctionTranslator::FunctionTranslator(ModuleTranslator& mt, const ptx::Function& fn,
                                       llvm::Function* llvmFunction)
    : mt(mt), fn(fn), function(llvmFunction), b(mt.context()) {}

std::string FunctionTranslator::operandContext() const {
  if (current_ == nullptr) return "'" + fn.name + "'";
  return mt.describe(*current_);
}

Error FunctionTranslator::unsupported(const ptx::Instruction& inst, const std::string& why) const {
  std::string msg =
      "unsupported PTX instruction " + mt.describe(inst) + " in function '" + fn.name + "'";
  if (!why.empty()) msg += ": " + why;
  return makeError(ErrorCode::UnsupportedPtx, msg);
}

Error invalidInstruction(const ModuleTranslator& mt, const ptx::Instruction& inst,
                         const std::string& why) {
  return makeError(ErrorCode::InvalidPtx, "invalid " + mt.describe(inst) + ": " + why);
}

Error FunctionTranslator::invalid(const ptx::Instruction& inst, const std::string& why) const {
  return invalidInstruction(mt, inst, why);
}

llvm::Type* FunctionTranslator::bitsType(ScalarType type) {
  if (type == ScalarType::Pred) return i1();
  return llvm::IntegerType::get(ctx(), std::max(1u, ptx::scalarTypeSize(type)) * 8);
}

llvm::Type* FunctionTranslator::valueType(ScalarType type) {
  switch (type) {
    case ScalarType::F32:
      return b.getFloatTy();
    case ScalarType::F64:
      return b.getDoubleTy();
    case ScalarType::F16:
      return b.getHalfTy();
    case ScalarType::BF16:
      return b.getBFloatTy();
    case ScalarType::F16x2:
      return llvm::FixedVectorType::get(b.getHalfTy(), 2);
    case ScalarType::BF16x2:
      return llvm::FixedVectorType::get(b.getBFloatTy(), 2);
    default:
      return bitsType(type);
  }
}

llvm::AllocaInst* FunctionTranslator::entryAlloca(llvm::Type* type, uint64_t align,
                                                  const std::string& name) {
  llvm::IRBuilder<> eb(entry_);
  auto* a = eb.CreateAlloca(type, nullptr, name);
  a->setAlignment(llvm::Align(std::max<uint64_t>(align, 1)));
  return a;
}

llvm::Value* FunctionTranslator::sharedBase() {
  if (!sharedBase_) {
    llvm::IRBuilder<> eb(entry_);
    sharedBase_ = eb.CreateCall(mt.sharedBaseFunction(), {}, "shared.base");
  }
  return sharedBase_;
}

llvm::AllocaInst* FunctionTranslator::carryFlag() {
  if (!carry_) {
    carry_ = entryAlloca(i1(), 1, "cc.cf");
    llvm::IRBuilder<> eb(entry_);
    eb.CreateStore(b.getFalse(), carry_);
  }
  return carry_;
}

llvm::Value* FunctionTranslator::exitFlag() {
  if (!exitFlag_) {
    if (!fn.isEntry) {
      exitFlag_ = function->getArg(function->arg_size() - 1);
    } else {
      llvm::AllocaInst* flag = entryAlloca(i8(), 1, "exited");
      llvm::IRBuilder<> eb(entry_);
      eb.CreateStore(b.getInt8(0), flag);
      exitFlag_ = flag;
    }
  }
  return exitFlag_;
}

llvm::Value* FunctionTranslator::paramStorage(std::string_view name) {
  auto it = locals_.find(std::string(name));
  return it == locals_.end() ? nullptr : it->second;
}

llvm::BasicBlock* FunctionTranslator::labelBlock(std::string_view name) {
  auto it = labels_.find(std::string(name));
  return it == labels_.end() ? nullptr : it->second;
}

void FunctionTranslator::startDeadBlock() {
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx(), "dead", function));
}

void FunctionTranslator::emitReturn() {
  for (auto& [reg, out] : regReturns_) {
    auto* slot = registers_[reg];
    b.CreateStore(b.CreateLoad(slot->getAllocatedType(), slot), out);
  }
  b.CreateRetVoid();
}

Result<llvm::Value*> FunctionTranslator::symbolPointer(std::string_view name) {
  if (auto* local = paramStorage(name)) return local;
  uint64_t offset = 0;
  if (mt.localSharedOffset(fn.name, name, offset) || mt.sharedOffset(name, offset))
    return b.CreateConstGEP1_64(i8(), sharedBase(), offset);
  if (auto* gv = mt.findGlobal(name)) return static_cast<llvm::Value*>(gv);
  if (auto* f = mt.findFunction(name)) {
    if (const ptx::Function* def = mt.findFunctionDef(name); def && def->isEntry)
      return static_cast<llvm::Value*>(mt.kernelReference(name));
    if (mt.mayExit(name))
      return makeError(ErrorCode::UnsupportedPtx,
                       "function '" + fn.name + "' takes the address of '" + std::string(name) +
                           "', which can exit the thread: not supported through a pointer");
    return static_cast<llvm::Value*>(f);
  }
  return makeError(ErrorCode::InvalidPtx,
                   "unknown symbol '" + std::string(name) + "' in function '" + fn.name + "'");
}

Result<llvm::Value*> FunctionTranslator::symbolValue(std::string_view name, int64_t offset) {
  uint64_t shared = 0;
  if (!paramStorage(name) &&
      (mt.localSharedOffset(fn.name, name, shared) || mt.sharedOffset(name, shared)))
    return static_cast<llvm::Value*>(b.getInt64(shared + offset));  // a shared-space address
  auto ptr = symbolPointer(name);
  if (!ptr.ok()) return ptr.error();
  return b.CreateAdd(b.CreatePtrToInt(*ptr, i64()), b.getInt64(offset));
}

// Adapt an integer value read from a register (or special register) to a PTX operand type.
static llvm::Value* adaptRead(FunctionTranslator& t, llvm::Value* v, ScalarType type,
                              bool negated) {
  auto& b = t.b;
  if (type == ScalarType::Pred) {
    if (!v->getType()->isIntegerTy(1))
      v = b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    return negated ? b.CreateNot(v) : v;
  }
  auto* want = llvm::cast<llvm::IntegerType>(t.bitsType(type));
  unsigned have = v->getType()->getIntegerBitWidth();
  if (have > want->getBitWidth())
    v = b.CreateTrunc(v, want);
  else if (have < want->getBitWidth())
    v = (ptx::isSignedInteger(type) && have > 1) ? b.CreateSExt(v, want) : b.CreateZExt(v, want);
  llvm::Type* vt = t.valueType(type);
  return vt == want ? v : b.CreateBitCast(v, vt);
}

static llvm::Value* immediateValue(FunctionTranslator& t, const ptx::Immediate& imm,
                                   ScalarType type) {
  auto& b = t.b;
  if (type == ScalarType::Pred) return b.getInt1(imm.bits != 0);
  llvm::Type* vt = t.valueType(type);
  if (vt->isFloatingPointTy()) {
    llvm::APFloat value(0.0);
    bool bitsForHalf = (type == ScalarType::F16 || type == ScalarType::BF16) &&
                       imm.kind == ptx::Immediate::Kind::Integer;
    if (bitsForHalf) return b.CreateBitCast(llvm::ConstantInt::get(t.bitsType(type), imm.bits), vt);
    switch (imm.kind) {
      case ptx::Immediate::Kind::F32Bits:
        value = llvm::APFloat(llvm::APFloat::IEEEsingle(), llvm::APInt(32, imm.bits & 0xffffffffu));
        break;
      case ptx::Immediate::Kind::F64Bits:
        value = llvm::APFloat(llvm::APFloat::IEEEdouble(), llvm::APInt(64, imm.bits));
        break;
      case ptx::Immediate::Kind::Double:
        value = llvm::APFloat(imm.value);
        break;
      case ptx::Immediate::Kind::Integer:
        value = llvm::APFloat(static_cast<double>(static_cast<int64_t>(imm.bits)));
        break;
    }
    bool lost = false;
    value.convert(vt->getFltSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return llvm::ConstantFP::get(vt, value);
  }
  uint64_t bits = imm.bits;
  if (imm.kind == ptx::Immediate::Kind::Double)
    bits = static_cast<uint64_t>(static_cast<int64_t>(imm.value));
  auto* it = t.bitsType(type);
  llvm::Value* c = llvm::ConstantInt::get(it, bits);
  return vt == it ? c : b.CreateBitCast(c, vt);
}

Status FunctionTranslator::supportedRegisterForm(const ptx::Operand& op) const {
  if (op.component().empty() && !op.minus()) return Status::success();
  return makeError(ErrorCode::UnsupportedPtx,
                   "register components, byte/half selectors and '-' on registers (in " +
                       operandContext() + ") are not supported yet");
}

// The cluster special registers (sm_90) where a cluster is one block, as on Rocuda's devices:
// each block is rank 0 of a cluster of its own, so the cluster grid is the block grid. nullptr
// for any other register (%is_explicit_cluster depends on the launch: a runtime call, which each
// target answers from the launch).
llvm::Value* FunctionTranslator::clusterRegister(ptx::SpecialRegister reg) {
  using R = ptx::SpecialRegister;
  switch (reg) {
    case R::ClusterCtaRank:
    case R::ClusterCtaIdX:
    case R::ClusterCtaIdY:
    case R::ClusterCtaIdZ:
      return b.getInt32(0);
    case R::ClusterNctaRank:
    case R::ClusterNctaIdX:
    case R::ClusterNctaIdY:
    case R::ClusterNctaIdZ:
      return b.getInt32(1);
    case R::ClusterIdX:
      return b.CreateCall(mt.sregFunction(R::CtaidX, 0));
    case R::ClusterIdY:
      return b.CreateCall(mt.sregFunction(R::CtaidY, 0));
    case R::ClusterIdZ:
      return b.CreateCall(mt.sregFunction(R::CtaidZ, 0));
    case R::NclusterIdX:
      return b.CreateCall(mt.sregFunction(R::NctaidX, 0));
    case R::NclusterIdY:
      return b.CreateCall(mt.sregFunction(R::NctaidY, 0));
    case R::NclusterIdZ:
      return b.CreateCall(mt.sregFunction(R::NctaidZ, 0));
    default:
      return nullptr;
  }
}

// Special registers made of others, or fixed, alike for every backend (nullptr for the rest):
// %clock_hi and %globaltimer_lo/_hi are halves of %clock64 and %globaltimer; no profiler counts
// events, so the performance counters %pm0..%pm7 (and their 64-bit forms) read 0.
llvm::Value* FunctionTranslator::derivedRegister(ptx::SpecialRegister reg) {
  using R = ptx::SpecialRegister;
  auto half = [&](R wide, bool high) {
    llvm::Value* v = b.CreateCall(mt.sregFunction(wide, 0));
    return b.CreateTrunc(high ? b.CreateLShr(v, 32) : v, b.getInt32Ty());
  };
  switch (reg) {
    case R::ClockHi:
      return half(R::Clock64, true);
    case R::GlobalTimerLo:
      return half(R::GlobalTimer, false);
    case R::GlobalTimerHi:
      return half(R::GlobalTimer, true);
    case R::Pm:
      return b.getInt32(0);
    case R::Pm64:
      return b.getInt64(0);
    default:
      return nullptr;
  }
}

// %reserved_smem_offset_*: where the kernel's reserved shared region (shared_layout.h) lies in
// its window; nullptr for any other register.
llvm::Value* FunctionTranslator::reservedSharedRegister(const ptx::Operand& op) {
  using R = ptx::SpecialRegister;
  uint64_t begin = 0;
  if (!isReservedSharedRegister(op.special()) || !mt.sharedOffset(kReservedSharedKey, begin))
    return nullptr;
  switch (op.special()) {
    case R::ReservedSmemOffsetEnd:
      return b.getInt32(static_cast<uint32_t>(begin + kReservedSharedBytes));
    case R::ReservedSmemOffsetCap:
      return b.getInt32(static_cast<uint32_t>(kReservedSharedBytes));
    case R::ReservedSmemOffsetN:
      return b.getInt32(
          static_cast<uint32_t>(begin + (op.envregIndex() == 1 ? kReservedSharedSecondSlot : 0)));
    default:
      return b.getInt32(static_cast<uint32_t>(begin));
  }
}

Result<llvm::Value*> FunctionTranslator::read(const ptx::Operand& op, ScalarType type) {
  switch (op.kind) {
    case ptx::Operand::Kind::Register: {
      if (op.reg() >= registers_.size() || !registers_[op.reg()])
        return makeError(ErrorCode::InvalidPtx, "bad register operand in '" + fn.name + "'");
      ROCUDA_TRY(supportedRegisterForm(op));
      auto* slot = registers_[op.reg()];
      return adaptRead(*this, b.CreateLoad(slot->getAllocatedType(), slot), type, op.negated);
    }
    case ptx::Operand::Kind::SpecialRegister: {
      // The fourth component of the .v4 registers (%tid.w, %ctaid.w...) is unused and reads 0.
      if (op.vectorForm() == ptx::Operand::VectorForm::W)
        return adaptRead(*this, b.getInt32(0), type, op.negated);
      if (op.vectorForm() == ptx::Operand::VectorForm::Whole)  // mov.v4 reads it by components
        return makeError(ErrorCode::InvalidPtx, "a whole special register vector (in " +
                                                    operandContext() +
                                                    ") can only be moved into a .v4 vector");
      if (op.special() == ptx::SpecialRegister::WarpSize)  // WARP_SZ: a constant here
        return adaptRead(*this, b.getInt32(32), type, false);
      if (llvm::Value* v = clusterRegister(op.special()))
        return adaptRead(*this, v, type, op.negated);
      if (llvm::Value* v = derivedRegister(op.special()))
        return adaptRead(*this, v, type, op.negated);
      if (llvm::Value* v = reservedSharedRegister(op)) return adaptRead(*this, v, type, op.negated);
      llvm::Value* v = b.CreateCall(mt.sregFunction(op.special(), op.envregIndex()));
      return adaptRead(*this, v, type, op.negated);
    }
    case ptx::Operand::Kind::Immediate:
      return immediateValue(*this, op.imm(), type);
    case ptx::Operand::Kind::Symbol: {
      auto v = symbolValue(op.symbol(), op.symbolOffset());
      if (!v.ok()) return v;
      return adaptRead(*this, *v, type, false);
    }
    default:
      return makeError(ErrorCode::InvalidPtx,
                       "an operand of " + operandContext() + " cannot be read as a value");
  }
}

Status FunctionTranslator::write(const ptx::Operand& op, llvm::Value* v, ScalarType type) {
  if (op.kind == ptx::Operand::Kind::Sink) return Status::success();
  if (op.kind != ptx::Operand::Kind::Register || op.reg() >= registers_.size() ||
      !registers_[op.reg()])
    return makeError(ErrorCode::InvalidPtx,
                     "a destination of " + operandContext() + " is not a register");
  ROCUDA_TRY(supportedRegisterForm(op));
  contractibleProducts.erase(op.reg());
  auto* slot = registers_[op.reg()];
  auto* regType = llvm::cast<llvm::IntegerType>(slot->getAllocatedType());
  llvm::Type* vt = v->getType();
  if (!vt->isIntegerTy())
    v = b.CreateBitCast(v, b.getIntNTy(static_cast<unsigned>(vt->getPrimitiveSizeInBits())));
  unsigned have = v->getType()->getIntegerBitWidth(), want = regType->getBitWidth();
  if (want == 1 && have != 1)
    v = b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  else if (have == 1 && want != 1)
    v = b.CreateZExt(v, regType);
  else if (have > want)
    v = b.CreateTrunc(v, regType);
  else if (have < want)
    v = ptx::isSignedInteger(type) ? b.CreateSExt(v, regType) : b.CreateZExt(v, regType);
  b.CreateStore(v, slot);
  return Status::success();
}

Result<llvm::Value*> FunctionTranslator::address(const ptx::Operand& op, ptx::StateSpace space) {
  if (op.kind != ptx::Operand::Kind::Address)
    return makeError(ErrorCode::InvalidPtx, "expected an address operand in " + operandContext());
  const ptx::Address a = op.address();
  llvm::Value* ptr = nullptr;
  int64_t offset = a.offset;
  if (a.baseKind == ptx::Address::BaseKind::Symbol) {
    auto p = symbolPointer(a.symbol);
    if (!p.ok()) return p;
    ptr = *p;
  } else {
    bool shared = space == ptx::StateSpace::Shared || space == ptx::StateSpace::SharedCluster;
    llvm::Value* base = b.getInt64(0);
    if (a.baseKind == ptx::Address::BaseKind::Register) {
      // Shared addresses in 32-bit registers are 32-bit: [%r+imm] wraps modulo 2^32 (nvcc
      // folds s[j + 1000] with j = -500 into [&s - 2000 + 4000], below the window and back).
      bool narrow = shared && ptx::scalarTypeSize(fn.registerType(a.reg)) == 4;
      auto v = read(ptx::Operand::makeRegister(a.reg), narrow ? ScalarType::U32 : ScalarType::U64);
      if (!v.ok()) return v;
      base = *v;
      if (narrow) {
        if (offset != 0) base = b.CreateAdd(base, b.getInt32(static_cast<uint32_t>(offset)));
        base = b.CreateZExt(base, i64());
        offset = 0;
      }
    } else {
      base = b.getInt64(offset);
      offset = 0;
    }
    // Shared-space addresses are offsets in the block's window; all others are host pointers.
    if (shared)
      ptr = b.CreateGEP(i8(), sharedBase(), base);
    else
      ptr = b.CreateIntToPtr(base, ptrTy());
  }
  if (offset != 0) ptr = b.CreateGEP(i8(), ptr, b.getInt64(offset));
  return ptr;
}

Status FunctionTranslator::createStorage() {
  registers_.resize(fn.registerCount(), nullptr);
  llvm::IRBuilder<> eb(entry_);
  for (const ptx::RegisterDeclaration& d : fn.registerDeclarations) {
    if (d.type == ScalarType::None) continue;
    unsigned bits = d.type == ScalarType::Pred
                        ? 1
                        : std::max(1u, ptx::scalarTypeSize(d.type)) * 8 * d.vectorWidth;
    auto* type = b.getIntNTy(bits);
    for (uint32_t i = d.first; i < d.first + d.count; ++i) {
      registers_[i] = entryAlloca(type, std::max(1u, std::min(bits / 8, 8u)), fn.registerName(i));
      // PTX leaves registers undefined; zero avoids undef-driven surprises and costs nothing.
      eb.CreateStore(llvm::ConstantInt::get(type, 0), registers_[i]);
    }
  }
  if (fn.isEntry) {
    params_ = function->getArg(0);
    uint64_t offset = 0;
    for (const auto& p : fn.params) {
      uint64_t align = std::max(1u, p.effectiveAlignment());
      offset = (offset + align - 1) / align * align;
      locals_[p.name] = eb.CreateConstGEP1_64(i8(), params_, offset, p.name);
      offset += p.sizeInBytes();
    }
  } else {
    unsigned arg = 0;
    auto bind = [&](const ptx::Variable& p, bool isReturn) {
      llvm::Value* ptr = function->getArg(arg++);
      locals_[p.name] = ptr;
      int64_t reg = p.space == ptx::StateSpace::Reg ? fn.findRegister(p.name) : -1;
      if (reg < 0 || !registers_[reg]) return;
      if (isReturn) {
        regReturns_.emplace_back(static_cast<uint32_t>(reg), ptr);
      } else {
        auto* slot = registers_[reg];
        eb.CreateStore(eb.CreateLoad(slot->getAllocatedType(), ptr), slot);
      }
    };
    for (const auto& p : fn.returnParams) bind(p, true);
    for (const auto& p : fn.params) bind(p, false);
  }
  for (const auto& var : fn.locals) {
    if (var.space == ptx::StateSpace::Shared) continue;  // in the module's shared layout
    if (var.space != ptx::StateSpace::Local && var.space != ptx::StateSpace::Param)
      return makeError(ErrorCode::UnsupportedPtx,
                       "function-scope ." + std::string(ptx::stateSpaceName(var.space)) +
                           " variable '" + var.name + "' in '" + fn.name + "'");
    uint64_t size = std::max<uint64_t>(var.sizeInBytes(), 1);
    locals_[var.name] = entryAlloca(llvm::ArrayType::get(i8(), size),
                                    std::max(1u, var.effectiveAlignment()), var.name);
  }
  return Status::success();
}

void FunctionTranslator::countRegisterMentions() {
  registerMentions.assign(registers_.size(), 0);
  auto mention = [&](uint32_t reg) {
    if (reg < registerMentions.size()) ++registerMentions[reg];
  };
  auto visit = [&](const ptx::Operand& op, auto& self) -> void {
    switch (op.kind) {
      case ptx::Operand::Kind::Register:
        mention(op.reg());
        break;
      case ptx::Operand::Kind::Address:
        if (op.address().baseKind == ptx::Address::BaseKind::Register) mention(op.address().reg);
        for (const auto& element : op.elements()) self(element, self);
        break;
      case ptx::Operand::Kind::Vector:
      case ptx::Operand::Kind::List:
        for (const auto& element : op.elements()) self(element, self);
        break;
      default:
        break;
    }
  };
  for (const auto& st : fn.body) {
    if (st.isLabel()) continue;
    for (const auto& op : st.instruction.operands()) visit(op, visit);
  }
}

Status FunctionTranslator::translate() {
  entry_ = llvm::BasicBlock::Create(ctx(), "entry", function);
  auto* body = llvm::BasicBlock::Create(ctx(), "body", function);
  ROCUDA_TRY(createStorage());
  for (const auto& st : fn.body)
    if (st.isLabel())
      labels_[std::string(st.labelName())] =
          llvm::BasicBlock::Create(ctx(), std::string(st.labelName()), function);
  countRegisterMentions();
  b.SetInsertPoint(body);
  for (const auto& st : fn.body) {
    if (st.isLabel()) {
      auto* block = labels_[std::string(st.labelName())];
      if (!b.GetInsertBlock()->getTerminator()) b.CreateBr(block);
      b.SetInsertPoint(block);
      continue;
    }
    const auto& inst = st.instruction;
    current_ = &inst;
    if (!inst.guard()) {
      ROCUDA_TRY(translateInstruction(inst));
      continue;
    }
    auto cond = read(ptx::Operand::makeRegister(*inst.guard(), inst.guardNegated), ScalarType::Pred);
    if (!cond.ok()) return cond.error();
    auto* then = llvm::BasicBlock::Create(ctx(), "guarded", function);
    auto* cont = llvm::BasicBlock::Create(ctx(), "cont", function);
    b.CreateCondBr(*cond, then, cont);
    b.SetInsertPoint(then);
    ROCUDA_TRY(translateInstruction(inst));
    if (!b.GetInsertBlock()->getTerminator()) b.CreateBr(cont);
    b.SetInsertPoint(cont);
  }
  if (!b.GetInsertBlock()->getTerminator()) emitReturn();
  llvm::IRBuilder<> eb(entry_);
  eb.CreateBr(body);
  // Blocks started after a branch, or labels at the very end, may still be open.
  for (auto& block : *function)
    if (!block.getTerminator()) {
      b.SetInsertPoint(&block);
      emitReturn();
    }
  return Status::success();
}

static bool anyFloat(const ptx::Instruction& inst) {
  for (auto t : inst.types())
    if (ptx::isFloat(t)) return true;
  return inst.hasModifier("f32x2");  // the packed f32 pairs of sm_100 (no ScalarType of theirs)
}

// clang-format off
Status FunctionTranslator::translateInstruction(const ptx::Instruction& inst) {
  using ptx::Opcode;
  current_ = &inst;
  if (keepsF32Subnormals(inst)) mt.keepsF32Subnormals = true;
  switch (inst.opcode) {
    case Opcode::add: case Opcode::sub: case Opcode::mul: case Opcode::mad: case Opcode::div:
    case Opcode::rem: case Opcode::abs: case Opcode::neg: case Opcode::min: case Opcode::max:
      return anyFloat(inst) ? translateFloatOp(*this, inst) : translateIntegerOp(*this, inst);
    case Opcode::addc: case Opcode::subc: case Opcode::madc: case Opcode::mul24:
    case Opcode::mad24: case Opcode::sad:
      return translateIntegerOp(*this, inst);
    case Opcode::popc: case Opcode::clz: case Opcode::brev: case Opcode::bfe: case Opcode::bfi:
    case Opcode::bfind: case Opcode::prmt: case Opcode::lop3: case Opcode::shf: case Opcode::shl:
    case Opcode::shr: case Opcode::and_: case Opcode::or_: case Opcode::xor_: case Opcode::not_:
    case Opcode::cnot: case Opcode::bmsk: case Opcode::szext: case Opcode::dp4a:
    case Opcode::dp2a: case Opcode::fns:
      return translateBitOp(*this, inst);
    case Opcode::fma: case Opcode::rcp: case Opcode::sqrt: case Opcode::rsqrt: case Opcode::sin:
    case Opcode::cos: case Opcode::ex2: case Opcode::lg2: case Opcode::tanh: case Opcode::testp:
    case Opcode::copysign:
      return translateFloatOp(*this, inst);
    case Opcode::setp: case Opcode::set: case Opcode::selp: case Opcode::slct:
      return translateCompareOp(*this, inst);
    case Opcode::cvt: case Opcode::cvt_pack:
      return translateConvertOp(*this, inst);
    case Opcode::ld: case Opcode::st: case Opcode::ldu: case Opcode::prefetch:
    case Opcode::prefetchu: case Opcode::cvta: case Opcode::isspacep: case Opcode::cp:
    case Opcode::cp_async: case Opcode::alloca: case Opcode::stacksave: case Opcode::stackrestore:
    case Opcode::createpolicy: case Opcode::discard: case Opcode::applypriority:
    case Opcode::mapa: case Opcode::getctarank: case Opcode::tensormap: case Opcode::st_async:
      return translateMemoryOp(*this, inst);
    case Opcode::atom: case Opcode::red: case Opcode::red_async:
      return translateAtomicOp(*this, inst);
    case Opcode::bra: case Opcode::brx: case Opcode::call: case Opcode::ret: case Opcode::exit:
    case Opcode::trap:
    case Opcode::bar: case Opcode::barrier: case Opcode::membar: case Opcode::fence:
    case Opcode::activemask: case Opcode::nanosleep: case Opcode::brkpt: case Opcode::pmevent:
    case Opcode::griddepcontrol: case Opcode::setmaxnreg:
      return translateControlOp(*this, inst);
    case Opcode::mov:
      return translateMovOp(*this, inst);
    case Opcode::shfl: case Opcode::vote: case Opcode::redux: case Opcode::match:
    case Opcode::elect:
      return translateWarpOp(*this, inst);
    case Opcode::mma:
      return translateMmaOp(*this, inst);
    case Opcode::wmma:
      return translateWmmaOp(*this, inst);
    case Opcode::ldmatrix: case Opcode::stmatrix: case Opcode::movmatrix:
      return translateMatrixLoadStore(*this, inst);
    case Opcode::mbarrier:
      return translateMBarrierOp(*this, inst);
    case Opcode::vadd: case Opcode::vsub: case Opcode::vabsdiff: case Opcode::vmin:
    case Opcode::vmax: case Opcode::vshl: case Opcode::vshr: case Opcode::vset: case Opcode::vmad:
    case Opcode::vadd2: case Opcode::vsub2: case Opcode::vavrg2: case Opcode::vabsdiff2:
    case Opcode::vmin2: case Opcode::vmax2: case Opcode::vset2: case Opcode::vadd4:
    case Opcode::vsub4: case Opcode::vavrg4: case Opcode::vabsdiff4: case Opcode::vmin4:
    case Opcode::vmax4: case Opcode::vset4:
      return translateVideoOp(*this, inst);
    case Opcode::tex: case Opcode::tld4: case Opcode::txq: case Opcode::suq: case Opcode::suld:
    case Opcode::sust: case Opcode::sured:
      return translateTextureOp(*this, inst);
    default:
      return unsupported(inst);
  }
}
// clang-format on

}  // namespace rocuda::compiler::detail
