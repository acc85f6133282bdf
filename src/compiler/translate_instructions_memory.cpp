// Data movement: ld/ldu/st in every state space (scalars and vectors; .volatile, .relaxed,
// .acquire/.release, .L2::cache_hint), cvta / cvta.to, isspacep, mov (symbols, pack/unpack),
// cp.async and the bulk copies and reductions, alloca / stacksave / stackrestore, the cache
// hints (createpolicy; prefetch, applypriority and discard as no-ops), the cluster address
// instructions (mapa, getctarank) for clusters of one block and tensormap.cp_fenceproxy.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

void setStringMetadata(llvm::Instruction& inst, const char* kind, llvm::StringRef value) {
  llvm::LLVMContext& context = inst.getContext();
  inst.setMetadata(kind, llvm::MDNode::get(context, {llvm::MDString::get(context, value)}));
}

void markPollableAccess(llvm::Instruction& access, ptx::StateSpace space) {
  bool shared = space == ptx::StateSpace::Shared || space == ptx::StateSpace::SharedCluster;
  setStringMetadata(access, kPollMetadata,
                    space == ptx::StateSpace::Global ? "global"
                    : shared                         ? "shared"
                                                     : "generic");
}

llvm::StringRef stringMetadata(const llvm::Instruction& inst, const char* kind) {
  llvm::MDNode* node = inst.getMetadata(kind);
  if (!node || node->getNumOperands() != 1) return {};
  auto* text = llvm::dyn_cast<llvm::MDString>(node->getOperand(0));
  return text ? text->getString() : llvm::StringRef();
}

void markSpace(llvm::Instruction& access, const ptx::Instruction& inst) {
  const char* space = nullptr;
  bool readOnly = inst.hasModifier("nc") || inst.opcode == ptx::Opcode::ldu;
  if (inst.space == ptx::StateSpace::Const)
    space = "constant";
  else if (inst.space == ptx::StateSpace::Global)
    space = readOnly && llvm::isa<llvm::LoadInst>(access) ? "constant" : "global";
  if (space) setStringMetadata(access, kSpaceMetadata, space);
}

void markBlockPrivate(llvm::Instruction& access, const ptx::Instruction& inst) {
  if (inst.space == ptx::StateSpace::Shared || inst.space == ptx::StateSpace::SharedCluster)
    access.setMetadata(kBlockPrivateMetadata, llvm::MDNode::get(access.getContext(), {}));
}

Result<size_t> operandsBeforeCachePolicy(FunctionTranslator& t, const ptx::Instruction& inst) {
  size_t count = inst.operands().size();
  if (!inst.hasModifier("L2::cache_hint")) return count;
  if (count < 2) return t.invalid(inst, "expected a cache policy as the last operand");
  ROCUDA_TRY(t.read(inst.operands()[count - 1], ScalarType::B64));
  return count - 1;
}

namespace {

// Memory ordering of ld/st modifiers; NotAtomic for plain accesses.
llvm::AtomicOrdering orderingOf(const ptx::Instruction& inst) {
  if (inst.hasModifier("acquire")) return llvm::AtomicOrdering::Acquire;
  if (inst.hasModifier("release")) return llvm::AtomicOrdering::Release;
  if (inst.hasModifier("relaxed")) return llvm::AtomicOrdering::Monotonic;
  return llvm::AtomicOrdering::NotAtomic;
}

std::vector<const ptx::Operand*> elementsOf(const ptx::Operand& op) {
  std::vector<const ptx::Operand*> out;
  if (op.kind == ptx::Operand::Kind::Vector) {
    for (const auto& e : op.elements()) out.push_back(&e);
  } else {
    out.push_back(&op);
  }
  return out;
}

// createpolicy (sm_80) makes the 64-bit cache policy that .L2::cache_hint accesses take:
//   createpolicy.fractional.L2::primary{.L2::secondary}.b64 policy{, fraction}
//   createpolicy.range.L2::primary{.L2::secondary}.b64 policy, [a], primary-size, total-size
//   createpolicy.cvt.L2.b64 policy, access-property
// Policies are hints that neither the CPU device nor the AMD targets act on, and their encoding
// is opaque to programs: the policy made here records the two priorities (bits 0-1 and 2-3:
// evict_normal, evict_first, evict_last, evict_unchanged); .cvt keeps the property's bits.
Status createPolicy(FunctionTranslator& t, const ptx::Instruction& inst) {
  const auto& ops = inst.operands();
  if (ops.empty() || inst.types().size() != 1 || inst.types()[0] != ScalarType::B64)
    return t.invalid(inst, "expected createpolicy...b64 policy, ...");
  if (inst.hasModifier("cvt")) {
    if (ops.size() != 2) return t.invalid(inst, "expected policy, access-property");
    ROCUDA_VALUE(property, t.read(ops[1], ScalarType::B64));
    return t.write(ops[0], property, ScalarType::B64);
  }
  bool range = inst.hasModifier("range");
  if (!range && !inst.hasModifier("fractional")) return t.unsupported(inst);
  if (range ? ops.size() != 4 : ops.size() > 2) return t.invalid(inst, "wrong operands");
  for (size_t i = 1; i < ops.size(); ++i)  // checked, then unused
    if (ops[i].kind != ptx::Operand::Kind::Address)
      ROCUDA_TRY(t.read(ops[i], i == 1 && !range ? ScalarType::F32 : ScalarType::B32));
  uint64_t code = 0;
  unsigned shift = 0;
  for (std::string_view m : inst.modifiers()) {
    static constexpr std::string_view priorities[] = {"L2::evict_normal", "L2::evict_first",
                                                      "L2::evict_last", "L2::evict_unchanged"};
    for (uint64_t p = 0; p < 4; ++p)
      if (m == priorities[p] && shift < 4) {
        code |= p << shift;
        shift += 2;
      }
  }
  return t.write(ops[0], t.b.getInt64(code), ScalarType::B64);
}

// mapa{.shared::cluster}.type d, a, rank and getctarank{.shared::cluster}.type d, a (sm_90) in
// a cluster of one block: every address is the block's own, of rank 0. A rank other than 0 names
// a block the cluster does not have (undefined in PTX): the thread traps.
Status clusterAddress(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  const auto& ops = inst.operands();
  if (inst.types().size() != 1) return t.invalid(inst, "expected one type");
  ScalarType type = inst.types()[0];
  if (type != ScalarType::U32 && type != ScalarType::U64)
    return t.invalid(inst, "expected .u32 or .u64");
  if (inst.opcode == ptx::Opcode::getctarank) {
    if (ops.size() != 2) return t.invalid(inst, "expected d, a");
    ROCUDA_TRY(t.read(ops[1], type));
    return t.write(ops[0], B.getInt32(0), ScalarType::U32);
  }
  if (ops.size() != 3) return t.invalid(inst, "expected d, a, rank");
  ROCUDA_VALUE(address, t.read(ops[1], type));
  ROCUDA_VALUE(rank, t.read(ops[2], ScalarType::U32));
  llvm::Function* fn = B.GetInsertBlock()->getParent();
  auto* outside = llvm::BasicBlock::Create(B.getContext(), "mapa.rank", fn);
  auto* inside = llvm::BasicBlock::Create(B.getContext(), "mapa.own", fn);
  B.CreateCondBr(B.CreateICmpEQ(rank, B.getInt32(0)), inside, outside);
  llvm::IRBuilder<> trap(outside);
  trap.CreateCall(t.mt.trapFunction());
  trap.CreateUnreachable();
  B.SetInsertPoint(inside);
  return t.write(ops[0], address, type);
}

// ld/st .b128 (sm_70, PTX 8.3) move 16 bytes as one i128; a 128-bit access that must also be
// atomic (.relaxed/.acquire/.release, .volatile) has no single instruction on either target.
Status refuseOrderedWideAccess(FunctionTranslator& t, const ptx::Instruction& inst,
                               ScalarType type) {
  if (type == ScalarType::B128 &&
      (orderingOf(inst) != llvm::AtomicOrdering::NotAtomic || inst.hasModifier("volatile")))
    return t.unsupported(inst, "a 128-bit load or store with a memory order or .volatile");
  return Status::success();
}

// A .volatile or memory-ordered vector load or store of 8 or 16 bytes: made as one access of
// the whole vector (NVIDIA's GPUs move an aligned vector in one transaction, and CUB's decoupled
// look-back relies on it), not element by element.
bool wholeVectorAccess(const ptx::Instruction& inst, size_t elements, unsigned elementSize) {
  size_t bytes = elements * elementSize;
  return elements > 1 && (bytes == 8 || bytes == 16) &&
         (inst.hasModifier("volatile") || orderingOf(inst) != llvm::AtomicOrdering::NotAtomic);
}

// f32 and f64 accesses that are neither atomic nor ordered: loaded and stored in their float
// type (LLVM's loads, stores and bitcasts of floats keep every bit, NaN payloads included).
bool plainFloatAccess(ScalarType type, llvm::AtomicOrdering order) {
  return (type == ScalarType::F32 || type == ScalarType::F64) &&
         order == llvm::AtomicOrdering::NotAtomic;
}

Status load(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  Result<size_t> operandCount = operandsBeforeCachePolicy(t, inst);
  if (!operandCount.ok()) return operandCount.error();
  if (*operandCount != 2 || inst.types().size() != 1) return t.unsupported(inst);
  ScalarType type = inst.types()[0];
  if (type == ScalarType::Pred) return t.unsupported(inst);
  ROCUDA_TRY(refuseOrderedWideAccess(t, inst, type));
  ROCUDA_VALUE(ptr, t.address(inst.operands()[1], inst.space));
  auto elements = elementsOf(inst.operands()[0]);
  if (elements.size() != inst.vectorWidth) return t.invalid(inst, "vector width mismatch");
  unsigned size = ptx::scalarTypeSize(type);
  auto* ty = t.bitsType(type);
  llvm::AtomicOrdering order = orderingOf(inst);
  bool isVolatile = inst.hasModifier("volatile");
  // A thread's own memory and read-only memory change under no waiting thread.
  bool unchanging = inst.space == ptx::StateSpace::Local || inst.space == ptx::StateSpace::Param ||
                    inst.space == ptx::StateSpace::Const;
  bool pollable = (isVolatile || order != llvm::AtomicOrdering::NotAtomic) && !unchanging &&
                  elements.size() == 1;
  bool acquires = llvm::isAcquireOrStronger(order);
  t.checkAccess(inst, ptr, uint64_t(size) * elements.size(), /*write=*/false, inst.space,
                /*atomic=*/isVolatile || order != llvm::AtomicOrdering::NotAtomic, acquires);
  if (wholeVectorAccess(inst, elements.size(), size) && !unchanging) {
    // One access of the whole vector, as NVIDIA's GPUs make it: a look-back reads a tile's
    // status and value together (CUB's 16-byte tile descriptors). Volatile keeps it whole and
    // in place; an acquire orders what follows.
    auto* vector = llvm::FixedVectorType::get(ty, static_cast<unsigned>(elements.size()));
    auto* ld = B.CreateAlignedLoad(vector, ptr, llvm::Align(size * elements.size()), true);
    markSpace(*ld, inst);
    markPollableAccess(*ld, inst.space);
    if (acquires) markScope(*B.CreateFence(llvm::AtomicOrdering::Acquire), inst, nullptr);
    for (size_t i = 0; i < elements.size(); ++i)
      if (elements[i]->kind != ptx::Operand::Kind::Sink)
        ROCUDA_TRY(t.write(*elements[i], B.CreateExtractElement(ld, i), type));
    return Status::success();
  }
  // A plain f32/f64 load is made in its float type, as the matching store (see store()).
  llvm::Type* elementType = plainFloatAccess(type, order) ? t.valueType(type) : ty;
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i]->kind == ptx::Operand::Kind::Sink) continue;
    llvm::Value* p = i == 0 ? ptr : B.CreateConstGEP1_64(t.i8(), ptr, i * size);
    auto* ld = B.CreateAlignedLoad(elementType, p, llvm::Align(size), isVolatile);
    markSpace(*ld, inst);
    if (order != llvm::AtomicOrdering::NotAtomic && elements.size() == 1) {
      ld->setAtomic(order == llvm::AtomicOrdering::Release ? llvm::AtomicOrdering::Monotonic
                                                           : order);
      markScope(*ld, inst, nullptr);
    }
    if (pollable) markPollableAccess(*ld, inst.space);
    ROCUDA_TRY(t.write(*elements[i], ld, type));
  }
  return Status::success();
}

// st.async (sm_90): a store into the shared memory of a block of the cluster -- the block itself,
// as clusters are one block here -- whose mbarrier then sees the stored bytes complete.
Status storeAsync(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (!inst.hasModifier("mbarrier::complete_tx::bytes"))
    return t.unsupported(inst, "st.async to global memory (sm_100)");
  if (inst.operands().size() != 3 || inst.types().size() != 1)
    return t.invalid(inst, "expected [a], b, [mbar]");
  ScalarType type = inst.types()[0];
  unsigned size = ptx::scalarTypeSize(type);
  ROCUDA_VALUE(ptr, t.address(inst.operands()[0], ptx::StateSpace::Shared));
  ROCUDA_VALUE(mbarrier, t.address(inst.operands()[2], ptx::StateSpace::Shared));
  auto elements = elementsOf(inst.operands()[1]);
  if (elements.size() != inst.vectorWidth) return t.invalid(inst, "vector width mismatch");
  t.checkAccess(inst, ptr, uint64_t(size) * elements.size(), /*write=*/true,
                ptx::StateSpace::Shared);
  for (size_t i = 0; i < elements.size(); ++i) {
    ROCUDA_VALUE(v, t.read(*elements[i], ptx::bitTypeOfSize(size)));
    llvm::Value* p = i == 0 ? ptr : B.CreateConstGEP1_64(t.i8(), ptr, i * size);
    B.CreateAlignedStore(v, p, llvm::Align(size));
  }
  t.checkAccess(inst, mbarrier, 8, /*write=*/true, ptx::StateSpace::Shared, /*atomic=*/true);
  completeMBarrierTransactions(t, mbarrier,
                               B.getInt32(static_cast<uint32_t>(size * elements.size())));
  return Status::success();
}

Status store(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  Result<size_t> operandCount = operandsBeforeCachePolicy(t, inst);
  if (!operandCount.ok()) return operandCount.error();
  if (*operandCount != 2 || inst.types().size() != 1) return t.unsupported(inst);
  ScalarType type = inst.types()[0];
  if (type == ScalarType::Pred) return t.unsupported(inst);
  ROCUDA_TRY(refuseOrderedWideAccess(t, inst, type));
  ROCUDA_VALUE(ptr, t.address(inst.operands()[0], inst.space));
  auto elements = elementsOf(inst.operands()[1]);
  if (elements.size() != inst.vectorWidth) return t.invalid(inst, "vector width mismatch");
  unsigned size = ptx::scalarTypeSize(type);
  llvm::AtomicOrdering order = orderingOf(inst);
  bool isVolatile = inst.hasModifier("volatile");
  t.checkAccess(inst, ptr, uint64_t(size) * elements.size(), /*write=*/true, inst.space,
                /*atomic=*/isVolatile || order != llvm::AtomicOrdering::NotAtomic);
  bool whole = wholeVectorAccess(inst, elements.size(), size);
  // Stores move bits: a register is read as bits of the type's size (never converted). Plain
  // f32/f64 stores read those bits as the float type, a bitcast: a copy (`out[i] = in[i]`) and
  // a computed value stored to one place then have one type, so that LLVM can merge the two
  // stores of an if/else into one (one masked store per vector in a work-item loop, not two).
  bool asFloat = !whole && plainFloatAccess(type, order);
  ScalarType bits = ptx::isFloat(type) && !asFloat ? ptx::bitTypeOfSize(size) : type;
  llvm::Value* vector = nullptr;
  if (whole)
    vector = llvm::PoisonValue::get(
        llvm::FixedVectorType::get(t.bitsType(type), static_cast<unsigned>(elements.size())));
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i]->kind == ptx::Operand::Kind::Sink) {
      if (whole) return t.unsupported(inst, "a sink in an ordered or volatile vector store");
      continue;
    }
    ROCUDA_VALUE(v, t.read(*elements[i], bits));
    if (!asFloat && ptx::isFloat(type) && elements[i]->kind == ptx::Operand::Kind::Immediate) {
      auto fv = t.read(*elements[i], type);  // a float literal: convert to the type's bits
      if (!fv.ok()) return fv.error();
      v = B.CreateBitCast(*fv, t.bitsType(type));
    }
    if (whole) {
      vector = B.CreateInsertElement(vector, v, i);
      continue;
    }
    llvm::Value* p = i == 0 ? ptr : B.CreateConstGEP1_64(t.i8(), ptr, i * size);
    auto* st = B.CreateAlignedStore(v, p, llvm::Align(size), isVolatile);
    markSpace(*st, inst);
    if (order != llvm::AtomicOrdering::NotAtomic && elements.size() == 1) {
      st->setAtomic(order == llvm::AtomicOrdering::Acquire ? llvm::AtomicOrdering::Monotonic
                                                           : order);
      markScope(*st, inst, nullptr);
    }
  }
  if (whole) {
    // One store of the whole vector, after the release fence when the store releases.
    if (order == llvm::AtomicOrdering::Release || order == llvm::AtomicOrdering::AcquireRelease ||
        order == llvm::AtomicOrdering::SequentiallyConsistent)
      markScope(*B.CreateFence(llvm::AtomicOrdering::Release), inst, nullptr);
    auto* st = B.CreateAlignedStore(vector, ptr, llvm::Align(size * elements.size()), true);
    markSpace(*st, inst);
  }
  return Status::success();
}

Status cvta(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() != 2 || inst.types().empty()) return t.invalid(inst, "expected d, a");
  ScalarType type = inst.types()[0];
  bool toSpace = inst.hasModifier("to");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], ScalarType::U64));
  llvm::Value* r = a;
  if (inst.space == ptx::StateSpace::Shared || inst.space == ptx::StateSpace::SharedCluster) {
    llvm::Value* base = B.CreatePtrToInt(t.sharedBase(), t.i64());
    r = toSpace ? B.CreateSub(a, base) : B.CreateAdd(a, base);
  }
  // Global, local, const and param addresses are host addresses in both forms.
  return t.write(inst.operands()[0], r, type);
}

// isspacep.{global,shared{::cta,::cluster},local,const} p, a: which window a generic address
// falls in. Shared and local memory only the device runtime can tell (`i32 __rocuda_is_shared(ptr)`
// and `__rocuda_is_local`: the block's window and the thread's stack on the CPU, the LDS and
// private apertures on AMD GPUs). Const: one of the module's .const variables. Global: none of
// those (kernel parameters are not told apart, so isspacep.param is refused).
Status isspacep(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() != 2) return t.invalid(inst, "expected p, a");
  ptx::StateSpace space = inst.space;
  if (space == ptx::StateSpace::Param)
    return t.unsupported(inst, "isspacep.param (kernel parameters by generic address)");
  ROCUDA_VALUE(a, t.read(inst.operands()[1], ptx::ScalarType::U64));
  auto ask = [&](const char* runtime) {
    llvm::FunctionCallee fn = t.mt.module().getOrInsertFunction(
        runtime, llvm::FunctionType::get(t.i32(), {t.ptrTy()}, false));
    llvm::Value* r = B.CreateCall(fn, {B.CreateIntToPtr(a, t.ptrTy())});
    return B.CreateICmpNE(r, B.getInt32(0));
  };
  auto inShared = [&] { return ask("__rocuda_is_shared"); };
  auto inLocal = [&] { return ask("__rocuda_is_local"); };
  auto inConst = [&] {
    llvm::Value* any = B.getFalse();
    const llvm::DataLayout& layout = t.mt.module().getDataLayout();
    for (const ptx::Variable& var : t.mt.ptx().globals) {
      if (var.space != ptx::StateSpace::Const) continue;
      llvm::GlobalVariable* g = t.mt.findGlobal(var.name);
      if (g == nullptr) continue;
      uint64_t bytes = layout.getTypeAllocSize(g->getValueType());
      llvm::Value* offset = B.CreateSub(a, B.CreatePtrToInt(g, t.i64()));
      any = B.CreateOr(any, B.CreateICmpULT(offset, B.getInt64(bytes)));
    }
    return any;
  };
  llvm::Value* r = nullptr;
  switch (space) {
    case ptx::StateSpace::Shared:
    case ptx::StateSpace::SharedCluster:
      r = inShared();
      break;
    case ptx::StateSpace::Local:
      r = inLocal();
      break;
    case ptx::StateSpace::Const:
      r = inConst();
      break;
    case ptx::StateSpace::Global:
      r = B.CreateNot(B.CreateOr(B.CreateOr(inShared(), inLocal()), inConst()));
      break;
    default:
      return t.unsupported(inst);
  }
  return t.write(inst.operands()[0], r, ptx::ScalarType::Pred);
}

Status mov(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.operands().size() != 2 || inst.types().size() != 1) return t.unsupported(inst);
  ScalarType type = inst.types()[0];
  const auto& dst = inst.operands()[0];
  const auto& src = inst.operands()[1];
  unsigned total = type == ScalarType::Pred ? 1 : ptx::scalarTypeSize(type) * 8;
  if (src.kind == ptx::Operand::Kind::SpecialRegister &&
      src.vectorForm() == ptx::Operand::VectorForm::Whole) {
    // mov.v4.u32 {a, b, c, d}, %tid: the .x, .y and .z components, and the unused .w (0).
    if (dst.kind != ptx::Operand::Kind::Vector || dst.elements().size() != 4)
      return t.invalid(inst, "a whole special register moves into a vector of four");
    for (int i = 0; i < 4; ++i) {
      if (dst.elements()[i].kind == ptx::Operand::Kind::Sink) continue;
      auto form = i == 3 ? ptx::Operand::VectorForm::W : ptx::Operand::VectorForm::Component;
      auto component =
          static_cast<ptx::SpecialRegister>(static_cast<int>(src.special()) + (i == 3 ? 0 : i));
      ROCUDA_VALUE(v, t.read(ptx::Operand::makeSpecial(component, 0, false, form), type));
      ROCUDA_TRY(t.write(dst.elements()[i], v, type));
    }
    return Status::success();
  }
  if (dst.kind == ptx::Operand::Kind::Vector) {  // unpack: element 0 is the low bits
    ROCUDA_VALUE(v, t.read(src, type));
    if (!v->getType()->isIntegerTy()) v = B.CreateBitCast(v, B.getIntNTy(total));
    unsigned n = static_cast<unsigned>(dst.elements().size());
    if (n == 0 || total % n) return t.invalid(inst, "bad vector");
    unsigned w = total / n;
    for (unsigned i = 0; i < n; ++i) {
      llvm::Value* part = B.CreateTrunc(B.CreateLShr(v, i * w), B.getIntNTy(w));
      ROCUDA_TRY(t.write(dst.elements()[i], part, ScalarType::B8));
    }
    return Status::success();
  }
  if (src.kind == ptx::Operand::Kind::Vector) {  // pack
    unsigned n = static_cast<unsigned>(src.elements().size());
    if (n == 0 || total % n) return t.invalid(inst, "bad vector");
    unsigned w = total / n;
    ScalarType partType = w == 8    ? ScalarType::B8
                          : w == 16 ? ScalarType::B16
                          : w == 32 ? ScalarType::B32
                                    : ScalarType::B64;
    llvm::Value* r = llvm::ConstantInt::get(B.getIntNTy(total), 0);
    for (unsigned i = 0; i < n; ++i) {
      ROCUDA_VALUE(part, t.read(src.elements()[i], partType));
      r = B.CreateOr(r, B.CreateShl(B.CreateZExt(part, r->getType()), i * w));
    }
    return t.write(dst, r, type);
  }
  ROCUDA_VALUE(v, t.read(src, type));
  return t.write(dst, v, type);
}

// The tensor map operand's address: `[map, {coords}]` with the map's generic address in a
// register, or a .param/.const/.global variable by name.
Result<llvm::Value*> tensorMapPointer(FunctionTranslator& t, const ptx::Operand& op) {
  auto& B = t.b;
  ptx::Address a = op.address();
  llvm::Value* base = nullptr;
  if (a.baseKind == ptx::Address::BaseKind::Register) {
    ROCUDA_VALUE(bits, t.read(ptx::Operand::makeRegister(a.reg), ScalarType::B64));
    base = B.CreateIntToPtr(bits, B.getPtrTy());
  } else if (a.baseKind == ptx::Address::BaseKind::Symbol) {
    ROCUDA_VALUE(p, t.symbolPointer(a.symbol));
    base = p;
  } else {
    base = B.CreateIntToPtr(B.getInt64(0), B.getPtrTy());
  }
  return a.offset == 0 ? base : B.CreateConstGEP1_64(B.getInt8Ty(), base, a.offset);
}

// cp.async.bulk.tensor and cp.reduce.async.bulk.tensor in tile mode, through the device
// library (device_library/tensor_copies.h), synchronously like the other bulk copies:
//   .Nd.shared::cluster/.shared::cta.global{.tile}.mbarrier::complete_tx::bytes
//       {.multicast::cluster} [dst], [map, {c0, ...}], [mbar] {, ctaMask} {, policy}
//   .Nd.global.shared::cta{.tile}.bulk_group [map, {c0, ...}], [src] {, policy}
//   cp.reduce.async.bulk.tensor.Nd.global.shared::cta.redOp{.tile}.bulk_group (the same operands)
// A load completes the box's bytes on the mbarrier; a map that is not a tensor map of this rank
// (or a reduction its element type lacks) traps. im2col and gather/scatter modes are not
// implemented.
Status cpAsyncBulkTensor(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  for (const char* mode : {"im2col", "im2col::w", "im2col::w::128", "tile::gather4",
                           "tile::scatter4", "cta_group::1", "cta_group::2"})
    if (inst.hasModifier(mode))
      return t.unsupported(inst, std::string("tensor copies in .") + mode + " mode");
  int rank = 0;
  for (int r = 1; r <= 5; ++r)
    if (inst.hasModifier(std::to_string(r) + "d")) rank = r;
  if (rank == 0) return t.invalid(inst, "expected .1d to .5d");
  bool toShared =
      inst.space == ptx::StateSpace::SharedCluster || inst.space == ptx::StateSpace::Shared;
  bool reduce = inst.hasModifier("reduce");
  if ((reduce && toShared) || toShared != inst.hasModifier("mbarrier::complete_tx::bytes") ||
      toShared == inst.hasModifier("bulk_group"))
    return t.invalid(inst, "unsupported form of cp.async.bulk.tensor");
  const auto& ops = inst.operands();
  size_t mapIndex = toShared ? 1 : 0, sharedIndex = toShared ? 0 : 1;
  if (ops.size() < (toShared ? 3u : 2u) || ops[mapIndex].kind != ptx::Operand::Kind::Address)
    return t.invalid(inst, "expected [tensorMap, {coordinates}]");
  const ptx::Operand& mapOp = ops[mapIndex];
  std::vector<const ptx::Operand*> coords;
  if (!mapOp.elements().empty()) {
    const ptx::Operand& c = mapOp.elements()[0];
    if (c.kind == ptx::Operand::Kind::Vector)
      for (const auto& e : c.elements()) coords.push_back(&e);
    else
      coords.push_back(&c);
  }
  if (static_cast<int>(coords.size()) != rank)
    return t.invalid(inst, "expected " + std::to_string(rank) + " tensor coordinates");
  ROCUDA_VALUE(map, tensorMapPointer(t, mapOp));
  ROCUDA_VALUE(shared, t.address(ops[sharedIndex], ptx::StateSpace::Shared));
  llvm::Value* sharedAddress = B.CreateTrunc(
      B.CreateSub(B.CreatePtrToInt(shared, t.i64()), B.CreatePtrToInt(t.sharedBase(), t.i64())),
      t.i32());
  llvm::Value* coordBuffer = t.entryAlloca(llvm::ArrayType::get(t.i32(), 5), 4, "tensor.coords");
  for (int i = 0; i < rank; ++i) {
    ROCUDA_VALUE(c, t.read(*coords[i], ScalarType::S32));
    B.CreateStore(c, B.CreateConstInBoundsGEP1_32(t.i32(), coordBuffer, i));
  }
  llvm::Module& module = t.mt.module();
  llvm::Type* ptr = B.getPtrTy();
  llvm::BasicBlock* done = nullptr;
  if (toShared && inst.hasModifier("multicast::cluster")) {
    // The cluster is the block alone: the copy reaches it when the mask holds rank 0.
    if (ops.size() < 4) return t.invalid(inst, "expected a ctaMask");
    ROCUDA_VALUE(mask, t.read(ops[3], ScalarType::B16));
    auto* copy = llvm::BasicBlock::Create(t.ctx(), "tensor.multicast", t.function);
    done = llvm::BasicBlock::Create(t.ctx(), "tensor.done", t.function);
    B.CreateCondBr(B.CreateTrunc(mask, B.getInt1Ty()), copy, done);
    B.SetInsertPoint(copy);
  }
  llvm::Value* status = nullptr;
  llvm::Value* mbarrier = nullptr;
  if (toShared) {
    ROCUDA_VALUE(m, t.address(ops[2], ptx::StateSpace::Shared));
    t.checkAccess(inst, m, 8, /*write=*/true, ptx::StateSpace::Shared, /*atomic=*/true);
    mbarrier = m;
    auto load = module.getOrInsertFunction(
        "__rocuda_tensor_load",
        llvm::FunctionType::get(t.i32(), {ptr, t.i32(), ptr, t.i32(), ptr}, false));
    status = B.CreateCall(load, {shared, sharedAddress, map, B.getInt32(rank), coordBuffer});
  } else {
    int32_t op = -1;
    if (reduce) {
      static const char* const kOps[] = {"add", "min", "max", "inc", "dec", "and", "or", "xor"};
      for (int32_t i = 0; i < 8; ++i)
        if (inst.hasModifier(kOps[i])) op = i;
      if (op < 0) return t.invalid(inst, "expected a reduction operation");
    }
    auto store = module.getOrInsertFunction(
        "__rocuda_tensor_store",
        llvm::FunctionType::get(t.i32(), {ptr, t.i32(), ptr, ptr, t.i32(), t.i32()}, false));
    status = B.CreateCall(
        store, {map, B.getInt32(rank), coordBuffer, shared, sharedAddress, B.getInt32(op)});
  }
  // A bad map traps, as a fault in the hardware's copy would stop the kernel.
  auto* trap = llvm::BasicBlock::Create(t.ctx(), "tensor.badmap", t.function);
  auto* ok = llvm::BasicBlock::Create(t.ctx(), "tensor.ok", t.function);
  B.CreateCondBr(B.CreateICmpSLT(status, B.getInt32(0)), trap, ok);
  B.SetInsertPoint(trap);
  B.CreateCall(t.mt.trapFunction());
  B.CreateUnreachable();
  B.SetInsertPoint(ok);
  if (mbarrier != nullptr) completeMBarrierTransactions(t, mbarrier, status);
  if (done != nullptr) {
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }
  return Status::success();
}

// cp.async.bulk (sm_90 bulk copies, which cuda::memcpy_async and CUB's transform use), done
// synchronously like cp.async:
//   .shared::cluster/.shared::cta.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
//       {, ctaMask (.multicast::cluster)} {, policy (.L2::cache_hint)}
//   .shared::cluster.shared::cta.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
//   .global.shared::cta.bulk_group {.L2::cache_hint} [dst], [src], size {, policy}
// and cp.reduce.async.bulk, which reduces instead of copying (shared::cta into shared::cluster
// through an mbarrier, or into global memory as a bulk group; emitBulkReduction).
// A copy that completes through an mbarrier does its complete_tx of `size` bytes once copied; a
// bulk group has completed (and its source may be reused) as soon as the copy has returned, so
// commit_group / wait_group are no-ops, as is prefetch.L2. The cluster is the block alone: a
// multicast reaches it when its ctaMask holds rank 0. Tensor-map copies (.tensor) go to
// cpAsyncBulkTensor; byte masks (.cp_mask) are not implemented.
Status cpAsyncBulk(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.hasModifier("commit_group") || inst.hasModifier("wait_group")) return Status::success();
  if (inst.hasModifier("prefetch")) return Status::success();
  if (inst.hasModifier("tensor")) return cpAsyncBulkTensor(t, inst);
  if (inst.hasModifier("cp_mask")) return t.unsupported(inst);
  bool reduce = inst.hasModifier("reduce");
  bool viaMBarrier = inst.hasModifier("mbarrier::complete_tx::bytes");
  if (viaMBarrier == inst.hasModifier("bulk_group"))
    return t.invalid(inst, "expected .mbarrier::complete_tx::bytes or .bulk_group");
  // .shared::cluster: the block's own shared memory while a cluster is one block.
  ptx::StateSpace dstSpace =
      inst.space == ptx::StateSpace::SharedCluster ? ptx::StateSpace::Shared : inst.space;
  ptx::StateSpace srcSpace = inst.hasModifier("global") ? ptx::StateSpace::Global
                             : inst.hasModifier("shared::cta") || inst.hasModifier("shared")
                                 ? ptx::StateSpace::Shared
                                 : ptx::StateSpace::None;
  bool toShared = dstSpace == ptx::StateSpace::Shared;
  if (srcSpace == ptx::StateSpace::None || (toShared != viaMBarrier) ||
      (!toShared && (dstSpace != ptx::StateSpace::Global || srcSpace != ptx::StateSpace::Shared)) ||
      (reduce && (srcSpace != ptx::StateSpace::Shared || inst.hasModifier("multicast::cluster"))))
    return t.invalid(inst, "unsupported source and destination spaces for cp.async.bulk");
  size_t required = viaMBarrier ? 4 : 3;
  if (inst.operands().size() < required) return t.invalid(inst, "expected [dst], [src], size");
  bool multicast = inst.hasModifier("multicast::cluster");
  ROCUDA_VALUE(dst, t.address(inst.operands()[0], dstSpace));
  ROCUDA_VALUE(src, t.address(inst.operands()[1], srcSpace));
  ROCUDA_VALUE(size, t.read(inst.operands()[2], ptx::ScalarType::U32));
  llvm::Value* mbarrier = nullptr;
  if (viaMBarrier) {
    ROCUDA_VALUE(m, t.address(inst.operands()[3], ptx::StateSpace::Shared));
    t.checkAccess(inst, m, 8, /*write=*/true, ptx::StateSpace::Shared, /*atomic=*/true);
    mbarrier = m;
  }
  llvm::BasicBlock* done = nullptr;
  if (multicast) {
    if (inst.operands().size() < 5) return t.invalid(inst, "expected a ctaMask");
    ROCUDA_VALUE(mask, t.read(inst.operands()[4], ptx::ScalarType::B16));
    llvm::Function* fn = B.GetInsertBlock()->getParent();
    auto* copy = llvm::BasicBlock::Create(B.getContext(), "bulk.multicast", fn);
    done = llvm::BasicBlock::Create(B.getContext(), "bulk.done", fn);
    B.CreateCondBr(B.CreateTrunc(mask, B.getInt1Ty()), copy, done);
    B.SetInsertPoint(copy);
  }
  llvm::Value* bytes = B.CreateZExt(size, t.i64());
  t.checkAccess(inst, src, bytes, /*write=*/false, srcSpace);
  t.checkAccess(inst, dst, bytes, /*write=*/true, dstSpace, /*atomic=*/reduce);
  // Sizes are multiples of 16 and the addresses 16-byte aligned (the PTX ISA requires both).
  if (reduce)
    ROCUDA_TRY(emitBulkReduction(t, inst, dst, src, bytes));
  else
    B.CreateMemCpy(dst, llvm::MaybeAlign(16), src, llvm::MaybeAlign(16), bytes);
  if (mbarrier != nullptr) completeMBarrierTransactions(t, mbarrier, size);
  if (done != nullptr) {
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }
  return Status::success();
}

// tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.<scope>.sync.aligned
// [dst], [src], size: a tensor map built in shared memory copied to global memory, then a
// release fence at the scope, after which tensor copies may use it (they read the map as
// ordinary memory here, so the fence is an ordinary one).
Status tensormapCopyAndFence(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (!inst.hasModifier("cp_fenceproxy")) return t.unsupported(inst);
  if (inst.operands().size() != 3 || inst.operands()[2].kind != ptx::Operand::Kind::Immediate)
    return t.invalid(inst, "expected [dst], [src], size");
  uint64_t size = inst.operands()[2].imm().bits;
  if (size != 128) return t.invalid(inst, "a tensor map is 128 bytes");
  ROCUDA_VALUE(dst, t.address(inst.operands()[0], ptx::StateSpace::Global));
  ROCUDA_VALUE(src, t.address(inst.operands()[1], ptx::StateSpace::Shared));
  t.checkAccess(inst, src, size, /*write=*/false, ptx::StateSpace::Shared);
  t.checkAccess(inst, dst, size, /*write=*/true, ptx::StateSpace::Global);
  B.CreateMemCpy(dst, llvm::MaybeAlign(64), src, llvm::MaybeAlign(64), size);
  t.checkFence(inst);
  markScope(*B.CreateFence(llvm::AtomicOrdering::Release), inst, nullptr);
  return Status::success();
}

// cp.async (sm_80 asynchronous global->shared copies) done synchronously: the copy has landed
// by the time any wait could observe it, so commit_group / wait_group / wait_all are no-ops.
Status cpAsync(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.hasModifier("commit_group") || inst.hasModifier("wait_group") ||
      inst.hasModifier("wait_all"))
    return Status::success();
  if (inst.hasModifier("bulk")) return cpAsyncBulk(t, inst);
  if (inst.hasModifier("mbarrier") && inst.hasModifier("arrive"))
    return translateAsyncArrive(t, inst);
  Result<size_t> operandCount = operandsBeforeCachePolicy(t, inst);
  if (!operandCount.ok()) return operandCount.error();
  if (inst.hasModifier("mbarrier") || *operandCount < 3 ||
      inst.operands()[2].kind != ptx::Operand::Kind::Immediate)
    return t.unsupported(inst);
  bool srcSizeGiven = *operandCount > 3 && inst.operands()[3].kind != ptx::Operand::Kind::Symbol;
  ROCUDA_VALUE(dst, t.address(inst.operands()[0], ptx::StateSpace::Shared));
  ROCUDA_VALUE(src, t.address(inst.operands()[1], ptx::StateSpace::Global));
  uint64_t size = inst.operands()[2].imm().bits;
  if (size != 4 && size != 8 && size != 16) return t.invalid(inst, "cp-size must be 4, 8 or 16");
  t.checkAccess(inst, dst, size, /*write=*/true, ptx::StateSpace::Shared);
  llvm::Value* srcSize = B.getInt64(size);
  if (srcSizeGiven && t.isPredicateRegister(inst.operands()[3])) {
    // ignore-src: "If the source data is ignored then zeros will be copied to destination".
    ROCUDA_VALUE(ignore, t.read(inst.operands()[3], ptx::ScalarType::Pred));
    srcSize = B.CreateSelect(ignore, B.getInt64(0), B.getInt64(size));
    B.CreateMemSet(dst, B.getInt8(0), size, llvm::MaybeAlign(1));
  } else if (srcSizeGiven) {
    ROCUDA_VALUE(n, t.read(inst.operands()[3], ptx::ScalarType::U32));
    srcSize =
        B.CreateZExt(B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, n, B.getInt32(size)), t.i64());
    B.CreateMemSet(dst, B.getInt8(0), size, llvm::MaybeAlign(1));  // bytes past src-size are 0
  }
  // With src-size (zero-fill) only that many bytes are read, none when it is 0.
  if (!srcSizeGiven) {
    t.checkAccess(inst, src, size, /*write=*/false, ptx::StateSpace::Global);
  } else if (t.mt.memcheck) {
    llvm::Function* function = B.GetInsertBlock()->getParent();
    auto* check = llvm::BasicBlock::Create(t.ctx(), "cp.async.check", function);
    auto* done = llvm::BasicBlock::Create(t.ctx(), "cp.async.copy", function);
    B.CreateCondBr(B.CreateICmpNE(srcSize, B.getInt64(0)), check, done);
    B.SetInsertPoint(check);
    t.checkAccess(inst, src, srcSize, /*write=*/false, ptx::StateSpace::Global);
    B.CreateBr(done);
    B.SetInsertPoint(done);
  }
  B.CreateMemCpy(dst, llvm::MaybeAlign(1), src, llvm::MaybeAlign(1), srcSize);
  return Status::success();
}

// alloca.u64 ptr, size {, immAlign}: `size` bytes of the thread's stack (local memory, whose
// addresses are host addresses here as for .local variables), aligned to immAlign (at least 8,
// the PTX ISA's default), freed when the function returns or at a stackrestore; stacksave.u64 /
// stackrestore.u64 d: the stack position as an opaque value, and back to it. nvcc emits these
// for alloca() in device code. (The .u32 forms, for 32-bit local addresses, cannot hold a host
// address and are refused.)
Status stackOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  if (inst.types().size() != 1) return t.invalid(inst, "expected one type");
  if (inst.types()[0] != ScalarType::U64)
    return t.unsupported(inst, "32-bit local addresses (only the .u64 forms are supported)");
  const auto& ops = inst.operands();
  switch (inst.opcode) {
    case ptx::Opcode::alloca: {
      if (ops.size() != 2 && ops.size() != 3)
        return t.invalid(inst, "expected ptr, size {, immAlign}");
      ROCUDA_VALUE(size, t.read(ops[1], ScalarType::U64));
      uint64_t align = 8;
      if (ops.size() == 3) {
        if (ops[2].kind != ptx::Operand::Kind::Immediate)
          return t.invalid(inst, "immAlign must be a constant");
        align = std::max<uint64_t>(ops[2].imm().bits, 8);
        if ((align & (align - 1)) != 0) return t.invalid(inst, "immAlign must be a power of two");
      }
      llvm::AllocaInst* memory = B.CreateAlloca(B.getInt8Ty(), size, "alloca");
      memory->setAlignment(llvm::Align(align));
      return t.write(ops[0], B.CreatePtrToInt(memory, t.i64()), ScalarType::U64);
    }
    case ptx::Opcode::stacksave: {
      if (ops.size() != 1) return t.invalid(inst, "expected d");
      llvm::Value* position = B.CreateStackSave("stack");
      return t.write(ops[0], B.CreatePtrToInt(position, t.i64()), ScalarType::U64);
    }
    default: {  // stackrestore
      if (ops.size() != 1) return t.invalid(inst, "expected a");
      ROCUDA_VALUE(position, t.read(ops[0], ScalarType::U64));
      B.CreateStackRestore(B.CreateIntToPtr(position, t.ptrTy()));
      return Status::success();
    }
  }
}

}  // namespace

Status translateMemoryOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  switch (inst.opcode) {
    case ptx::Opcode::ld:
    case ptx::Opcode::ldu:
      return load(t, inst);
    case ptx::Opcode::st:
      return store(t, inst);
    case ptx::Opcode::st_async:
      return storeAsync(t, inst);
    case ptx::Opcode::cvta:
      return cvta(t, inst);
    case ptx::Opcode::isspacep:
      return isspacep(t, inst);
    case ptx::Opcode::prefetch:
    case ptx::Opcode::prefetchu:
    // Cache hints with no effect a program may rely on: applypriority changes an L2 line's
    // eviction priority; discard leaves the line's contents undefined, which keeping them is.
    case ptx::Opcode::applypriority:
    case ptx::Opcode::discard:
      return Status::success();
    case ptx::Opcode::createpolicy:
      return createPolicy(t, inst);
    case ptx::Opcode::mapa:
    case ptx::Opcode::getctarank:
      return clusterAddress(t, inst);
    case ptx::Opcode::cp_async:
      return cpAsync(t, inst);
    case ptx::Opcode::tensormap:
      return tensormapCopyAndFence(t, inst);
    case ptx::Opcode::alloca:
    case ptx::Opcode::stacksave:
    case ptx::Opcode::stackrestore:
      return stackOp(t, inst);
    case ptx::Opcode::cp:
      if (inst.hasModifier("async")) return cpAsync(t, inst);
      return t.unsupported(inst);
    default:
      return t.unsupported(inst);
  }
}

Status translateMovOp(FunctionTranslator& t, const ptx::Instruction& inst) { return mov(t, inst); }

}  // namespace rocuda::compiler::detail
