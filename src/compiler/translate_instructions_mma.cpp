// mma.sync, wmma, ldmatrix and stmatrix: warp-level matrix instructions. An mma (mma.sync or
// wmma.mma) is one warp collective, `__rocuda_mma_sync` (compiler.h): the lane stores its A, B and
// C registers in a record, and the operation computes D = A * B + C with two functions of the
// module made once per form: a tile function, which computes every lane's D from the records of
// all 32 lanes at once (the CPU device's runtime calls it when the warp has arrived), and a lane
// function, which computes the calling lane's D, fetching the registers of the lanes that hold its
// rows of A (the four lanes of its group) and its columns of B with shuffles (AMD GPUs). Both run
// one body: every element placed where the fragment layout puts it, the products exact and their
// sum in double, rounded to D's type (f64: an fma chain; s8/u8/s4/u4 inputs: exact in 64-bit
// integers, then wrapped to s32 or, with .satfinite, clamped; b1: population counts of AND or
// XOR, a word at a time), so both targets give the same bits. ldmatrix and stmatrix gather the
// row addresses their lanes need, and movmatrix its transposed elements, through the same
// mechanism.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <map>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

// A supported mma form: the k extent, A's rows (16, or 8 for the m8n8 shapes), and fragment
// sizes. A and B have the same type except for the integer forms (s8 times u8 is allowed) and
// fp8 (e4m3 times e5m2). Single bits (b1) are handled a 32-bit word at a time: their k counts
// words, and the product of two words is the population count of their AND or XOR.
struct MmaForm {
  int k = 0;
  int rows = 16;
  int aRegisters = 0, bRegisters = 0, cElements = 0;
  ScalarType input = ScalarType::F16;
  ScalarType bInput = ScalarType::F16;
  bool integer = false;
  bool byteLayout =
      false;            // the fragment tables of the 8-bit forms, scaled by elements per register
  bool bitAnd = false;  // b1: .and.popc (else .xor.popc)
};

bool isByte(ScalarType type) { return type == ScalarType::S8 || type == ScalarType::U8; }
bool isNibble(ScalarType type) { return type == ScalarType::S4 || type == ScalarType::U4; }
bool isFp8(ScalarType type) { return type == ScalarType::E4M3 || type == ScalarType::E5M2; }
bool isSubByte(ScalarType type) { return isNibble(type) || type == ScalarType::B1; }

int elementsPerRegister(ScalarType type) {
  if (isByte(type) || isFp8(type)) return 4;
  if (isNibble(type)) return 8;
  return type == ScalarType::F16 || type == ScalarType::BF16 ? 2 : 1;  // b1: one word
}

// Where A's element i of the lane with threadID_in_group `t` sits: its row relative to the
// lane's groupID (0 or 8, as 0 / 1) and its k. PTX ISA, "Matrix Fragments for mma". The 8-bit,
// 4-bit and 1-bit forms share one register layout: register r holds a run of p = elements per
// register consecutive k, starting at p * t (plus 4p in the second half of k32-class shapes).
std::pair<int, int> aPosition(const MmaForm& f, int t, int i) {
  if (f.byteLayout) {
    int p = elementsPerRegister(f.input);
    if (f.rows == 8) return {0, p * t + i};                              // m8n8k16 class
    if (f.k == 4 * p) return {i >= p ? 1 : 0, p * t + i % p};            // m16n8k16 class
    return {(i / p) & 1, p * t + i % p + 4 * p * (i >= 2 * p ? 1 : 0)};  // m16n8k32 class
  }
  if (f.input == ScalarType::F64 && f.rows == 8) return {0, t};                   // m8n8k4
  if (f.input == ScalarType::TF32 || f.input == ScalarType::F64)                  // m16n8k16/k8/k4
    return {i & 1, t + 4 * (i >> 1)};
  if (f.k == 16) return {(i >> 1) & 1, 2 * t + (i & 1) + 8 * (i >= 4 ? 1 : 0)};  // m16n8k16
  return {i >= 2 ? 1 : 0, 2 * t + (i & 1)};                                       // m16n8k8
}

// The k of B's element i of the lane with threadID_in_group `t` (its column is the lane's group).
int bPosition(const MmaForm& f, int t, int i) {
  if (f.byteLayout) {
    int p = elementsPerRegister(f.bInput);
    return f.k == 8 * p ? p * t + i % p + 4 * p * (i >= p ? 1 : 0) : p * t + i;
  }
  if (f.input == ScalarType::F64 && f.rows == 8) return t;
  if (f.input == ScalarType::TF32 || f.input == ScalarType::F64) return t + 4 * i;
  if (f.k == 16) return 2 * t + (i & 1) + 8 * (i >= 2 ? 1 : 0);
  return 2 * t + i;
}

// C's and D's element i: row relative to groupID (as 0 / 1), column 2t + j.
std::pair<int, int> cPosition(const MmaForm& f, int i) {
  if (f.rows == 8) return {0, i};
  return {i >= 2 ? 1 : 0, i & 1};
}

bool formOf(const ptx::Instruction& inst, ScalarType d, ScalarType a, ScalarType b, ScalarType c,
            MmaForm& f) {
  if (!inst.hasModifier("row") || !inst.hasModifier("col")) return false;
  bool bytes = isByte(a) && isByte(b);
  bool nibbles = isNibble(a) && isNibble(b);
  bool bits = a == ScalarType::B1 && b == ScalarType::B1;
  bool fp8 = isFp8(a) && isFp8(b);
  bool integer = bytes || nibbles || bits;
  if (!integer && !fp8 && a != b) return false;
  if (inst.hasModifier("satfinite") && (!integer || bits)) return false;
  // b1 names its operation: .and.popc or .xor.popc.
  if (bits != inst.hasModifier("popc")) return false;
  if (bits && inst.hasModifier("and") == inst.hasModifier("xor")) return false;
  bool half = a == ScalarType::F16 || a == ScalarType::BF16;
  // The shapes per input type, as (shape, rows, k).
  struct Shape {
    const char* name;
    bool accepted;
    int rows, k;
  };
  const Shape shapes[] = {{"m16n8k16", half || bytes || fp8 || a == ScalarType::F64, 16, 16},
                          {"m16n8k8", half || a == ScalarType::TF32 || a == ScalarType::F64, 16, 8},
                          {"m8n8k4", a == ScalarType::F64, 8, 4},
                          {"m16n8k4", a == ScalarType::TF32 || a == ScalarType::F64, 16, 4},
                          {"m16n8k32", bytes || nibbles || fp8, 16, 32},
                          {"m8n8k16", bytes, 8, 16},
                          {"m8n8k32", nibbles, 8, 32},
                          {"m16n8k64", nibbles, 16, 64},
                          {"m8n8k128", bits, 8, 128},
                          {"m16n8k128", bits, 16, 128},
                          {"m16n8k256", bits, 16, 256}};
  const Shape* shape = nullptr;
  for (const Shape& candidate : shapes)
    if (candidate.accepted && inst.hasModifier(candidate.name)) shape = &candidate;
  if (shape == nullptr) return false;
  f.input = a;
  f.bInput = b;
  f.integer = integer;
  f.byteLayout = integer || fp8;
  f.bitAnd = inst.hasModifier("and");
  f.rows = shape->rows;
  f.k = bits ? shape->k / 32 : shape->k;
  // Each lane holds a 32nd of A (rows x k), B (k x 8) and C (rows x 8).
  f.aRegisters = f.rows * f.k / 32 / elementsPerRegister(a);
  f.bRegisters = f.k * 8 / 32 / elementsPerRegister(b);
  f.cElements = f.rows * 8 / 32;
  // Accumulators: s32 for integers; f32 for every float input; f16 with f16 or fp8 inputs; f64
  // with f64.
  if (integer) return d == ScalarType::S32 && c == ScalarType::S32;
  if (a == ScalarType::F64) return d == ScalarType::F64 && c == ScalarType::F64;
  if (d != c) return false;
  return d == ScalarType::F32 || (d == ScalarType::F16 && (a == ScalarType::F16 || fp8));
}

// The registers of a fragment operand ({r0, r1, ...}, or one register).
std::vector<const ptx::Operand*> fragmentRegisters(const ptx::Operand& op) {
  std::vector<const ptx::Operand*> regs;
  if (op.kind != ptx::Operand::Kind::Vector) return {&op};
  for (const ptx::Operand& e : op.elements()) regs.push_back(&e);
  return regs;
}

// Reads a fragment operand as raw registers: i32, or i64 for f64 elements.
Result<std::vector<llvm::Value*>> readFragment(FunctionTranslator& t, const ptx::Instruction& inst,
                                               const ptx::Operand& op, size_t count,
                                               ScalarType element) {
  std::vector<const ptx::Operand*> sources = fragmentRegisters(op);
  if (sources.size() != count)
    return t.invalid(inst, "a fragment of " + std::to_string(count) + " registers was expected");
  ScalarType raw = element == ScalarType::F64 ? ScalarType::B64 : ScalarType::B32;
  std::vector<llvm::Value*> regs;
  for (const ptx::Operand* source : sources) {
    ROCUDA_VALUE(v, t.read(*source, raw));
    regs.push_back(v);
  }
  return regs;
}

// The elements of one raw register, as doubles (integers: as i64).
std::vector<llvm::Value*> decode(FunctionTranslator& t, llvm::Value* reg, ScalarType type) {
  auto& B = t.b;
  auto* d = B.getDoubleTy();
  if (type == ScalarType::S32) return {B.CreateSExt(reg, t.i64())};
  if (type == ScalarType::B1) return {B.CreateZExt(reg, t.i64())};  // one word of 32 elements
  if (isFp8(type)) {
    std::vector<llvm::Value*> out;
    for (unsigned shift : {0u, 8u, 16u, 24u})
      out.push_back(
          B.CreateFPExt(fp8ToHalf(t, B.CreateLShr(reg, shift), type == ScalarType::E5M2), d));
    return out;
  }
  if (type == ScalarType::S4 || type == ScalarType::U4) {  // eight nibbles, the lowest first
    std::vector<llvm::Value*> out;
    for (unsigned shift = 0; shift < 32; shift += 4) {
      llvm::Value* up = B.CreateShl(reg, 28 - shift);  // the nibble in the top bits
      out.push_back(B.CreateSExt(
          type == ScalarType::S4 ? B.CreateAShr(up, 28) : B.CreateLShr(up, 28), t.i64()));
    }
    return out;
  }
  if (isByte(type)) {
    std::vector<llvm::Value*> out;
    for (unsigned shift : {0u, 8u, 16u, 24u}) {
      llvm::Value* byte = B.CreateTrunc(B.CreateLShr(reg, shift), t.i8());
      out.push_back(type == ScalarType::S8 ? B.CreateSExt(byte, t.i64())
                                           : B.CreateZExt(byte, t.i64()));
    }
    return out;
  }
  if (type == ScalarType::F64) return {B.CreateBitCast(reg, d)};
  if (type == ScalarType::F32) return {B.CreateFPExt(B.CreateBitCast(reg, B.getFloatTy()), d)};
  if (type == ScalarType::TF32)  // the hardware reads only the tf32 bits
    return {B.CreateFPExt(B.CreateBitCast(B.CreateAnd(reg, 0xffffe000u), B.getFloatTy()), d)};
  llvm::Type* half = type == ScalarType::BF16 ? B.getBFloatTy() : B.getHalfTy();
  std::vector<llvm::Value*> out;
  for (unsigned shift : {0u, 16u}) {
    llvm::Value* bits = B.CreateTrunc(B.CreateLShr(reg, shift), B.getInt16Ty());
    out.push_back(B.CreateFPExt(B.CreateBitCast(bits, half), d));
  }
  return out;
}

// A raw register of another lane: 32-bit registers in one shuffle, 64-bit ones in two.
llvm::Value* fetch(FunctionTranslator& t, llvm::Value* reg, llvm::Value* lane) {
  auto& B = t.b;
  if (reg->getType()->isIntegerTy(32)) return shuffleFromLane(t, reg, lane);
  llvm::Value* lo = shuffleFromLane(t, B.CreateTrunc(reg, t.i32()), lane);
  llvm::Value* hi = shuffleFromLane(t, B.CreateTrunc(B.CreateLShr(reg, 32), t.i32()), lane);
  return B.CreateOr(B.CreateZExt(lo, t.i64()), B.CreateShl(B.CreateZExt(hi, t.i64()), 32));
}

// ---- One collective per matrix instruction (compiler.h: __rocuda_mma_sync) ----

// Where the body of a warp matrix operation finds the registers of the warp's lanes. In its lane
// function (AMD GPUs) the lane's own registers are the arguments and another lane's come through
// a shuffle; in its tile function (the CPU device) every lane's registers are in memory.
struct WarpRegisters {
  llvm::Value* lane = nullptr;  // the lane whose outputs are computed (i32)
  std::function<llvm::Value*(size_t input)> own;
  std::function<llvm::Value*(size_t input, llvm::Value* fromLane)> ofLane;
};

// A warp matrix instruction as one operation: its input registers (A, then B, then C) and its
// output registers (D), each 32 or 64 bits wide, and how one lane's outputs follow from the
// warp's inputs (raw registers, in D's order).
struct WarpMatrixOp {
  std::string key;  // the instruction without its operands: names the operation's functions
  std::vector<bool> wideInputs, wideOutputs;
  std::function<std::vector<llvm::Value*>(FunctionTranslator&, const WarpRegisters&)> body;
};

std::string operationKey(const ptx::Instruction& inst) {
  std::string key = ptx::opcodeName(inst.opcode);
  for (std::string_view m : inst.modifiers()) key += "." + std::string(m);
  for (ScalarType type : inst.types()) key += std::string(".") + ptx::scalarTypeName(type);
  return key;
}

// Records hold every register in an i64 slot, a 32-bit one in the low half.
llvm::Value* fromSlot(FunctionTranslator& t, llvm::Value* slot, bool wide) {
  return wide ? slot : t.b.CreateTrunc(slot, t.i32());
}
llvm::Value* toSlot(FunctionTranslator& t, llvm::Value* reg) {
  return t.b.CreateZExt(reg, t.i64());  // a no-op for 64-bit registers
}

// The operation's lane function, `[outputs x i64] (i64 inputs...)`: the calling lane's outputs,
// other lanes' inputs fetched with shuffles. Out of line, so that a kernel with hundreds of mma
// instructions compiles the emulation once.
llvm::Function* laneFunction(FunctionTranslator& t, const WarpMatrixOp& op) {
  std::string name = "__rocuda_mma_lane." + op.key;
  llvm::Module& module = t.mt.module();
  if (llvm::Function* existing = module.getFunction(name)) return existing;
  auto* result = llvm::ArrayType::get(t.i64(), op.wideOutputs.size());
  std::vector<llvm::Type*> params(op.wideInputs.size(), t.i64());
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(result, params, false),
                                    llvm::GlobalValue::InternalLinkage, name, module);
  fn->setConvergent();
  fn->setDoesNotThrow();
  fn->addFnAttr(llvm::Attribute::NoInline);
  auto& B = t.b;
  llvm::IRBuilderBase::InsertPointGuard guard(B);
  B.SetInsertPoint(llvm::BasicBlock::Create(t.ctx(), "entry", fn));
  WarpRegisters regs;
  regs.lane = B.CreateCall(t.mt.sregFunction(ptx::SpecialRegister::LaneId, 0));
  regs.own = [&](size_t i) {
    return fromSlot(t, fn->getArg(static_cast<unsigned>(i)), op.wideInputs[i]);
  };
  regs.ofLane = [&](size_t i, llvm::Value* from) { return fetch(t, regs.own(i), from); };
  std::vector<llvm::Value*> outputs = op.body(t, regs);
  llvm::Value* packed = llvm::PoisonValue::get(result);
  for (size_t j = 0; j < outputs.size(); ++j)
    packed = B.CreateInsertValue(packed, toSlot(t, outputs[j]), {static_cast<unsigned>(j)});
  B.CreateRet(packed);
  return fn;
}

// The operation's tile function, `void (ptr records)`: given the records of the warp's 32 lanes
// (inputs, then outputs), every lane's outputs, a loop over the lanes.
llvm::Function* tileFunction(FunctionTranslator& t, const WarpMatrixOp& op) {
  std::string name = "__rocuda_mma_tile." + op.key;
  llvm::Module& module = t.mt.module();
  if (llvm::Function* existing = module.getFunction(name)) return existing;
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(t.b.getVoidTy(), {t.ptrTy()}, false),
                                    llvm::GlobalValue::InternalLinkage, name, module);
  fn->setDoesNotThrow();
  auto& B = t.b;
  llvm::IRBuilderBase::InsertPointGuard guard(B);
  auto* entry = llvm::BasicBlock::Create(t.ctx(), "entry", fn);
  auto* loop = llvm::BasicBlock::Create(t.ctx(), "lane", fn);
  auto* done = llvm::BasicBlock::Create(t.ctx(), "done", fn);
  B.SetInsertPoint(entry);
  B.CreateBr(loop);
  B.SetInsertPoint(loop);
  llvm::PHINode* lane = B.CreatePHI(t.i32(), 2, "lane");
  lane->addIncoming(B.getInt32(0), entry);
  auto recordOf = [&](llvm::Value* l) {
    return B.CreateLoad(t.ptrTy(),
                        B.CreateInBoundsGEP(t.ptrTy(), fn->getArg(0), B.CreateZExt(l, t.i64())));
  };
  auto slot = [&](llvm::Value* record, size_t i) {
    return B.CreateConstInBoundsGEP1_64(t.i64(), record, i);
  };
  llvm::Value* own = recordOf(lane);
  WarpRegisters regs;
  regs.lane = lane;
  regs.own = [&](size_t i) {
    return fromSlot(t, B.CreateLoad(t.i64(), slot(own, i)), op.wideInputs[i]);
  };
  regs.ofLane = [&](size_t i, llvm::Value* from) {
    return fromSlot(t, B.CreateLoad(t.i64(), slot(recordOf(from), i)), op.wideInputs[i]);
  };
  std::vector<llvm::Value*> outputs = op.body(t, regs);
  for (size_t j = 0; j < outputs.size(); ++j)
    B.CreateStore(toSlot(t, outputs[j]), slot(own, op.wideInputs.size() + j));
  llvm::Value* next = B.CreateAdd(lane, B.getInt32(1));
  lane->addIncoming(next, B.GetInsertBlock());
  B.CreateCondBr(B.CreateICmpULT(next, B.getInt32(32)), loop, done);
  B.SetInsertPoint(done);
  B.CreateRetVoid();
  return fn;
}

// Run `op` on the calling lane's `inputs` (raw registers): its record in the function's frame,
// one call of __rocuda_mma_sync, its outputs back from the record.
std::vector<llvm::Value*> runWarpMatrixOp(FunctionTranslator& t, const WarpMatrixOp& op,
                                          const std::vector<llvm::Value*>& inputs) {
  auto& B = t.b;
  size_t slots = inputs.size() + op.wideOutputs.size();
  llvm::AllocaInst*& record = t.matrixRecords[slots];
  if (record == nullptr)
    record = t.entryAlloca(llvm::ArrayType::get(t.i64(), slots), 8, "mma.record");
  auto slot = [&](size_t i) {
    return B.CreateConstInBoundsGEP2_64(record->getAllocatedType(), record, 0, i);
  };
  for (size_t i = 0; i < inputs.size(); ++i) B.CreateStore(toSlot(t, inputs[i]), slot(i));
  auto callee = convergentRuntimeFunction(t, "__rocuda_mma_sync", B.getVoidTy(),
                                          {t.ptrTy(), t.ptrTy(), t.ptrTy()});
  B.CreateCall(callee, {tileFunction(t, op), laneFunction(t, op), record});
  std::vector<llvm::Value*> outputs;
  for (size_t j = 0; j < op.wideOutputs.size(); ++j)
    outputs.push_back(
        fromSlot(t, B.CreateLoad(t.i64(), slot(inputs.size() + j)), op.wideOutputs[j]));
  return outputs;
}

// D's elements (doubles, or i64 for s32, in fragment order) as D's raw registers: two halves per
// f16 register, the lower element first; s32 wraps, or with .satfinite clamps to its range.
std::vector<llvm::Value*> encodeFragment(FunctionTranslator& t, ScalarType dType, bool satfinite,
                                         const std::vector<llvm::Value*>& d) {
  auto& B = t.b;
  std::vector<llvm::Value*> regs;
  if (dType == ScalarType::F16) {
    for (size_t r = 0; 2 * r + 1 < d.size(); ++r) {
      llvm::Value* lo = B.CreateBitCast(B.CreateFPTrunc(d[2 * r], B.getHalfTy()), B.getInt16Ty());
      llvm::Value* hi =
          B.CreateBitCast(B.CreateFPTrunc(d[2 * r + 1], B.getHalfTy()), B.getInt16Ty());
      regs.push_back(
          B.CreateOr(B.CreateZExt(lo, t.i32()), B.CreateShl(B.CreateZExt(hi, t.i32()), 16)));
    }
    return regs;
  }
  for (llvm::Value* v : d) {
    if (dType == ScalarType::F32) {
      regs.push_back(B.CreateBitCast(B.CreateFPTrunc(v, B.getFloatTy()), t.i32()));
    } else if (dType == ScalarType::S32) {
      if (satfinite) {
        v = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, B.getInt64(INT32_MIN));
        v = B.CreateBinaryIntrinsic(llvm::Intrinsic::smin, v, B.getInt64(INT32_MAX));
      }
      regs.push_back(B.CreateTrunc(v, t.i32()));
    } else {
      regs.push_back(B.CreateBitCast(v, t.i64()));  // f64
    }
  }
  return regs;
}

// A fragment operand to read: how many registers, of which element type.
struct Fragment {
  size_t registers;
  ScalarType type;
};

// Run the matrix instruction `inst` as one warp matrix operation: read its A, B and C fragments
// (operands 1, 2, 3), compute D (`dRegisters` registers of type `dType`) with `body`, write D
// (operand 0).
Status runMatrixInstruction(FunctionTranslator& t, const ptx::Instruction& inst,
                            std::initializer_list<Fragment> fragments, size_t dRegisters,
                            ScalarType dType, decltype(WarpMatrixOp::body) body) {
  std::vector<llvm::Value*> inputs;
  size_t operand = 1;
  for (const Fragment& fragment : fragments) {
    auto regs =
        readFragment(t, inst, inst.operands()[operand++], fragment.registers, fragment.type);
    if (!regs.ok()) return regs.error();
    inputs.insert(inputs.end(), regs->begin(), regs->end());
  }
  WarpMatrixOp op;
  op.key = operationKey(inst);
  for (llvm::Value* input : inputs) op.wideInputs.push_back(input->getType()->isIntegerTy(64));
  op.wideOutputs.assign(dRegisters, dType == ScalarType::F64);
  op.body = std::move(body);
  std::vector<const ptx::Operand*> targets = fragmentRegisters(inst.operands()[0]);
  if (inputs.size() + op.wideOutputs.size() > kMatrixRecordSlots)
    return t.unsupported(inst, "more fragment registers than a matrix record holds");
  if (targets.size() != op.wideOutputs.size())
    return t.invalid(
        inst, "a fragment of " + std::to_string(op.wideOutputs.size()) + " registers was expected");
  std::vector<llvm::Value*> outputs = runWarpMatrixOp(t, op, inputs);
  for (size_t r = 0; r < outputs.size(); ++r)
    ROCUDA_TRY(
        t.write(*targets[r], outputs[r], op.wideOutputs[r] ? ScalarType::B64 : ScalarType::B32));
  return Status::success();
}

// One lane's elements of D = A * B + C for mma.sync form `f`, in C's order: A's rows g and g + 8
// from the four lanes of its group, B's columns 2t and 2t + 1 from groups 2t and 2t + 1.
std::vector<llvm::Value*> multiplyFragments(FunctionTranslator& t, const MmaForm& f,
                                            ScalarType cType, const WarpRegisters& regs) {
  auto& B = t.b;
  ScalarType aType = f.input, bType = f.bInput;
  llvm::Value* group = B.CreateLShr(regs.lane, 2);
  llvm::Value* inGroup = B.CreateAnd(regs.lane, 3);
  int perA = elementsPerRegister(aType), perB = elementsPerRegister(bType);
  size_t bFirst = static_cast<size_t>(f.aRegisters),
         cFirst = bFirst + static_cast<size_t>(f.bRegisters);

  std::vector<std::vector<llvm::Value*>> a(static_cast<size_t>(f.rows / 8),
                                           std::vector<llvm::Value*>(static_cast<size_t>(f.k)));
  for (int holder = 0; holder < 4; ++holder) {
    llvm::Value* source = B.CreateAdd(B.CreateShl(group, 2), B.getInt32(holder));
    for (int r = 0; r < f.aRegisters; ++r) {
      std::vector<llvm::Value*> elements =
          decode(t, regs.ofLane(static_cast<size_t>(r), source), aType);
      for (int e = 0; e < perA; ++e) {
        auto [row, k] = aPosition(f, holder, r * perA + e);
        a[static_cast<size_t>(row)][static_cast<size_t>(k)] = elements[static_cast<size_t>(e)];
      }
    }
  }
  std::vector<std::vector<llvm::Value*>> b(2, std::vector<llvm::Value*>(static_cast<size_t>(f.k)));
  for (int column = 0; column < 2; ++column) {
    llvm::Value* owner = B.CreateAdd(B.CreateShl(inGroup, 1), B.getInt32(column));
    for (int holder = 0; holder < 4; ++holder) {
      llvm::Value* source = B.CreateAdd(B.CreateShl(owner, 2), B.getInt32(holder));
      for (int r = 0; r < f.bRegisters; ++r) {
        std::vector<llvm::Value*> elements =
            decode(t, regs.ofLane(bFirst + static_cast<size_t>(r), source), bType);
        for (int e = 0; e < perB; ++e)
          b[static_cast<size_t>(column)][static_cast<size_t>(bPosition(f, holder, r * perB + e))] =
              elements[static_cast<size_t>(e)];
      }
    }
  }
  std::vector<llvm::Value*> c;
  size_t cRegisters = static_cast<size_t>(f.cElements / elementsPerRegister(cType));
  for (size_t r = 0; r < cRegisters; ++r)
    for (llvm::Value* v : decode(t, regs.own(cFirst + r), cType)) c.push_back(v);
  std::vector<llvm::Value*> d;
  for (int i = 0; i < f.cElements; ++i) {
    auto [row, column] = cPosition(f, i);
    llvm::Value* sum = c[static_cast<size_t>(i)];
    for (int k = 0; k < f.k; ++k) {
      llvm::Value* x = a[static_cast<size_t>(row)][static_cast<size_t>(k)];
      llvm::Value* y = b[static_cast<size_t>(column)][static_cast<size_t>(k)];
      if (f.input == ScalarType::B1) {
        llvm::Value* both = f.bitAnd ? B.CreateAnd(x, y) : B.CreateXor(x, y);
        sum = B.CreateAdd(sum, B.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, both));
        continue;
      }
      sum = f.integer ? B.CreateAdd(sum, B.CreateMul(x, y))
            : aType == ScalarType::F64
                ? B.CreateIntrinsic(llvm::Intrinsic::fma, {B.getDoubleTy()}, {x, y, sum})
                : B.CreateFAdd(sum, B.CreateFMul(x, y));
    }
    d.push_back(sum);
  }
  return d;
}

// mma.m8n8k4 with f16 inputs (Volta's form): four independent 8x8x4 products, one per quad pair
// (lanes 4q..4q+3 and 16+4q..16+4q+3, q = (lane / 4) % 4), each with its own A, B and C. In a
// quad pair, t = lane % 4 and h = lane / 16 place the elements (PTX ISA, "Matrix Fragments for
// mma.m8n8k4 with .f16"):
//   A row-major: row t + 4h, k = i        A column-major: row i + 4h, k = t
//   B row-major: k = t, column i + 4h     B column-major: k = i, column t + 4h
//   C, D f16: row t + 4h, column i (0..7)
//   C, D f32: row (lane & 1) + (i & 2) + 4h, column (i & 4) + (lane & 2) + (i & 1)
// Each of a lane's D elements gathers its row of A and its column of B from the lanes of its
// quad pair that hold them.
struct QuadPairForm {
  bool aRowMajor = true, bRowMajor = true;
  ScalarType dType = ScalarType::F32, cType = ScalarType::F32;
};

// The inputs are A (registers 0, 1), B (2, 3) and C; `element` may be a run-time index (0..3).
std::vector<llvm::Value*> quadPairProduct(FunctionTranslator& t, const QuadPairForm& f,
                                          const WarpRegisters& regs) {
  auto& B = t.b;
  auto c = [&](uint32_t v) { return B.getInt32(v); };
  llvm::Value* quadPair = B.CreateShl(B.CreateAnd(B.CreateLShr(regs.lane, 2), c(3)), 2);
  llvm::Value* high = B.CreateLShr(regs.lane, 4);
  // The lane of this quad pair with t = `inGroup` in half `half`.
  auto laneOf = [&](llvm::Value* inGroup, llvm::Value* half) {
    return B.CreateAdd(B.CreateAdd(quadPair, inGroup), B.CreateShl(half, 4));
  };
  // Element `index` (constant or run-time, 0..3) of the f16 pairs `first`, `first + 1` of `lane`.
  auto element = [&](size_t first, llvm::Value* lane, llvm::Value* index) {
    std::vector<llvm::Value*> all = decode(t, regs.ofLane(first, lane), ScalarType::F16);
    for (llvm::Value* v : decode(t, regs.ofLane(first + 1, lane), ScalarType::F16))
      all.push_back(v);
    llvm::Value* picked = all[0];
    for (uint32_t e = 1; e < 4; ++e)
      picked = B.CreateSelect(B.CreateICmpEQ(index, c(e)), all[e], picked);
    return picked;
  };
  auto aAt = [&](llvm::Value* row, uint32_t k) {
    llvm::Value* half = B.CreateLShr(row, 2);
    llvm::Value* inHalf = B.CreateAnd(row, c(3));
    return f.aRowMajor ? element(0, laneOf(inHalf, half), c(k))
                       : element(0, laneOf(c(k), half), inHalf);
  };
  auto bAt = [&](uint32_t k, llvm::Value* column) {
    llvm::Value* half = B.CreateLShr(column, 2);
    llvm::Value* inHalf = B.CreateAnd(column, c(3));
    return f.bRowMajor ? element(2, laneOf(c(k), half), inHalf)
                       : element(2, laneOf(inHalf, half), c(k));
  };
  size_t cRegisters = f.cType == ScalarType::F16 ? 4 : 8;
  std::vector<llvm::Value*> accumulators;
  for (size_t r = 0; r < cRegisters; ++r)
    for (llvm::Value* v : decode(t, regs.own(4 + r), f.cType)) accumulators.push_back(v);
  llvm::Value* inQuad = B.CreateAnd(regs.lane, c(3));  // t
  llvm::Value* rowOffset = B.CreateShl(high, 2);
  std::vector<llvm::Value*> d;
  std::vector<llvm::Value*> aRow[2];  // the lane's rows of A, fetched once each
  for (uint32_t i = 0; i < 8; ++i) {
    llvm::Value* row;
    llvm::Value* column;
    size_t rowSlot = 0;
    if (f.cType == ScalarType::F16) {
      row = B.CreateAdd(inQuad, rowOffset);
      column = c(i);
    } else {
      rowSlot = (i & 2) >> 1;
      row = B.CreateAdd(B.CreateAdd(B.CreateAnd(regs.lane, c(1)), c(i & 2)), rowOffset);
      column = B.CreateAdd(B.CreateAnd(regs.lane, c(2)), c((i & 4) + (i & 1)));
    }
    if (aRow[rowSlot].empty())
      for (uint32_t k = 0; k < 4; ++k) aRow[rowSlot].push_back(aAt(row, k));
    llvm::Value* sum = accumulators[i];
    for (uint32_t k = 0; k < 4; ++k)
      sum = B.CreateFAdd(sum, B.CreateFMul(aRow[rowSlot][k], bAt(k, column)));
    d.push_back(sum);
  }
  return d;
}

Status translateQuadPairMma(FunctionTranslator& t, const ptx::Instruction& inst, ScalarType dType,
                            ScalarType cType) {
  QuadPairForm f;
  std::vector<std::string_view> layouts;
  for (std::string_view m : inst.modifiers())
    if (m == "row" || m == "col") layouts.push_back(m);
  if (layouts.size() != 2 || inst.hasModifier("satfinite"))
    return t.unsupported(inst, "expected mma.sync.aligned.m8n8k4.alayout.blayout");
  auto accumulator = [](ScalarType type) {
    return type == ScalarType::F16 || type == ScalarType::F32;
  };
  if (!accumulator(dType) || !accumulator(cType))
    return t.unsupported(inst, "m8n8k4 with f16 inputs accumulates in f16 or f32");
  f.aRowMajor = layouts[0] == "row";
  f.bRowMajor = layouts[1] == "row";
  f.dType = dType;
  f.cType = cType;
  size_t cRegisters = cType == ScalarType::F16 ? 4 : 8;
  size_t dRegisters = dType == ScalarType::F16 ? 4 : 8;
  return runMatrixInstruction(
      t, inst, {{2, ScalarType::F16}, {2, ScalarType::F16}, {cRegisters, cType}}, dRegisters, dType,
      [=](FunctionTranslator& t, const WarpRegisters& regs) {
        return encodeFragment(t, f.dType, false, quadPairProduct(t, f, regs));
      });
}

// wmma: every shape and type (m16n16k16, m32n8k16, m8n32k16 for f16 / bf16 / s8 / u8; m16n16k8
// tf32; m8n8k4 f64; m8n8k32 s4 / u4; m8n8k128 b1). The PTX ISA leaves the fragment layout
// unspecified, so loads, stores and mma only need to agree (element-wise code on fragments works
// with any layout); the register counts are the ISA's. Lane L = 4g + t holds, in slot e:
//   A (M x K): row g + 8 * (e / (K/4)),            k = t * K/4 + e % (K/4)
//   B (K x N): column g + 8 * (e / (K/4)),         k = t * K/4 + e % (K/4)
//   C, D (M x N): row g + 8 * (e / (N/4)),         column t + 4 * (e % (N/4))
// so a lane's D elements need A's rows from the four lanes of its own group and B's columns
// t + 4o (o = 0, 1) from the four lanes of groups t and t + 4: a fixed number of shuffles whose
// slots are constants. Each lane's k runs are contiguous, so sub-byte rows load as whole words.
struct WmmaShape {
  int m = 0, n = 0, k = 0;
};

bool wmmaShapeOf(const ptx::Instruction& inst, WmmaShape& shape) {
  const WmmaShape shapes[] = {{16, 16, 16}, {32, 8, 16}, {8, 32, 16}, {16, 16, 8},
                              {8, 8, 4},    {8, 8, 32},  {8, 8, 128}};
  for (const WmmaShape& s : shapes)
    if (inst.hasModifier("m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
                         std::to_string(s.k))) {
      shape = s;
      return true;
    }
  return false;
}

// Whether `type` may be matrix `matrix`'s element type in `shape` (PTX ISA, wmma.load).
bool wmmaTypeAllowed(const WmmaShape& s, char matrix, ScalarType type) {
  bool input = matrix == 'a' || matrix == 'b';
  if (s.k == 16) {  // the three f16-class shapes
    if (input)
      return type == ScalarType::F16 || type == ScalarType::BF16 || type == ScalarType::S8 ||
             type == ScalarType::U8;
    return type == ScalarType::F16 || type == ScalarType::F32 || type == ScalarType::S32;
  }
  if (s.k == 8) return type == (input ? ScalarType::TF32 : ScalarType::F32);
  if (s.k == 4) return type == ScalarType::F64;
  if (s.k == 32)
    return input ? type == ScalarType::S4 || type == ScalarType::U4 : type == ScalarType::S32;
  return type == (input ? ScalarType::B1 : ScalarType::S32);  // m8n8k128
}

// Bits per element (ptx::scalarTypeSize counts the sub-byte types as one byte).
int wmmaBits(ScalarType type) {
  if (type == ScalarType::B1) return 1;
  return isNibble(type) ? 4 : static_cast<int>(ptx::scalarTypeSize(type) * 8);
}

// Rows and columns of matrix `matrix` (a: M x K, b: K x N, c/d: M x N).
std::pair<int, int> wmmaExtent(const WmmaShape& s, char matrix) {
  if (matrix == 'a') return {s.m, s.k};
  if (matrix == 'b') return {s.k, s.n};
  return {s.m, s.n};
}

int wmmaElements(const WmmaShape& s, char matrix) {
  auto [rows, columns] = wmmaExtent(s, matrix);
  return rows * columns / 32;
}

// Registers of a fragment as the PTX ISA counts them (f16 inputs always take 8, of which only
// the first hold elements in this layout; the rest read as zero), and the ones holding elements.
size_t wmmaUsedRegisters(const WmmaShape& s, char matrix, ScalarType type) {
  int bits = wmmaBits(type);
  return static_cast<size_t>(wmmaElements(s, matrix) * bits / (bits == 64 ? 64 : 32));
}

size_t wmmaRegisters(const WmmaShape& s, char matrix, ScalarType type) {
  if ((matrix == 'a' || matrix == 'b') && type == ScalarType::F16) return 8;
  return wmmaUsedRegisters(s, matrix, type);
}

// The lane's slot `e` of matrix `matrix` as (row, column), each as `group or t` scaled + offset.
struct WmmaPlace {
  llvm::Value* row;
  llvm::Value* column;
};

WmmaPlace wmmaPlace(FunctionTranslator& t, const WmmaShape& s, char matrix, int e,
                    llvm::Value* group, llvm::Value* inGroup) {
  auto& B = t.b;
  auto c = [&](int v) { return B.getInt32(static_cast<uint32_t>(v)); };
  if (matrix == 'a' || matrix == 'b') {
    int run = s.k / 4;
    llvm::Value* outer = B.CreateAdd(group, c(8 * (e / run)));
    llvm::Value* k = B.CreateAdd(B.CreateMul(inGroup, c(run)), c(e % run));
    return matrix == 'a' ? WmmaPlace{outer, k} : WmmaPlace{k, outer};
  }
  int run = s.n / 4;
  return {B.CreateAdd(group, c(8 * (e / run))), B.CreateAdd(inGroup, c(4 * (e % run)))};
}

char wmmaMatrix(const ptx::Instruction& inst) {
  for (char m : {'a', 'b', 'c', 'd'})
    if (inst.hasModifier(std::string(1, m))) return m;
  return 0;
}

// The byte address of each of the lane's element runs: one per element, or for sub-byte types
// one per register (its elements are consecutive k of one row of A or column of B).
Result<std::vector<llvm::Value*>> wmmaAddresses(FunctionTranslator& t, const ptx::Instruction& inst,
                                                const WmmaShape& s, char matrix, ScalarType type,
                                                size_t addressOperand, size_t strideOperand) {
  auto& B = t.b;
  bool rowMajor = inst.hasModifier("row");
  auto [rows, columns] = wmmaExtent(s, matrix);
  ROCUDA_VALUE(base, t.address(inst.operands()[addressOperand], inst.space));
  llvm::Value* stride = B.getInt32(static_cast<uint32_t>(rowMajor ? columns : rows));
  if (inst.operands().size() > strideOperand) {
    ROCUDA_VALUE(given, t.read(inst.operands()[strideOperand], ScalarType::U32));
    stride = given;
  }
  int bits = wmmaBits(type);
  if (bits < 8 && rowMajor != (matrix == 'a'))
    return t.unsupported(inst, "sub-byte wmma needs A row-major and B column-major");
  llvm::Value* lane = B.CreateCall(t.mt.sregFunction(ptx::SpecialRegister::LaneId, 0));
  llvm::Value* group = B.CreateLShr(lane, 2);
  llvm::Value* inGroup = B.CreateAnd(lane, 3);
  int step = bits < 8 ? 32 / bits : 1;
  std::vector<llvm::Value*> out;
  for (int e = 0; e < wmmaElements(s, matrix); e += step) {
    WmmaPlace p = wmmaPlace(t, s, matrix, e, group, inGroup);
    llvm::Value* offset = rowMajor ? B.CreateAdd(B.CreateMul(p.row, stride), p.column)
                                   : B.CreateAdd(B.CreateMul(p.column, stride), p.row);
    offset = B.CreateZExt(offset, t.i64());
    offset = bits < 8
                 ? B.CreateLShr(B.CreateMul(offset, B.getInt64(static_cast<uint64_t>(bits))), 3)
                 : B.CreateMul(offset, B.getInt64(static_cast<uint64_t>(bits / 8)));
    out.push_back(B.CreateGEP(t.i8(), base, offset));
  }
  return out;
}

Status wmmaLoad(FunctionTranslator& t, const ptx::Instruction& inst, const WmmaShape& s) {
  auto& B = t.b;
  char matrix = wmmaMatrix(inst);
  ScalarType type = inst.types().empty() ? ScalarType::B32 : inst.types()[0];
  if (matrix == 0 || matrix == 'd' || !wmmaTypeAllowed(s, matrix, type)) return t.unsupported(inst);
  if (inst.operands().size() < 2) return t.invalid(inst, "expected a fragment and an address");
  const ptx::Operand& frag = inst.operands()[0];
  size_t registers = wmmaRegisters(s, matrix, type);
  if (frag.kind != ptx::Operand::Kind::Vector || frag.elements().size() != registers)
    return t.invalid(inst, "a fragment of " + std::to_string(registers) + " registers was expected");
  auto addresses = wmmaAddresses(t, inst, s, matrix, type, 1, 2);
  if (!addresses.ok()) return addresses.error();
  int bits = wmmaBits(type);
  unsigned bytes = static_cast<unsigned>(bits < 8 ? 4 : bits / 8);
  std::vector<llvm::Value*> values;  // elements, or whole registers for sub-byte types
  for (llvm::Value* p : *addresses) {
    t.checkAccess(inst, p, bytes, /*write=*/false, inst.space);
    auto* ld = B.CreateAlignedLoad(B.getIntNTy(bytes * 8), p, llvm::Align(bytes));
    markSpace(*ld, inst);
    values.push_back(ld);
  }
  int perRegister = bits >= 32 ? 1 : 32 / bits;
  size_t used = wmmaUsedRegisters(s, matrix, type);
  for (size_t r = 0; r < registers; ++r) {
    const ptx::Operand& target = frag.elements()[r];
    if (bits == 64) {
      ROCUDA_TRY(t.write(target, B.CreateBitCast(values[r], B.getDoubleTy()), ScalarType::F64));
      continue;
    }
    llvm::Value* value = B.getInt32(0);
    if (r < used) {
      if (bits == 32 || bits < 8) {
        value = values[r];
      } else {
        for (int e = 0; e < perRegister; ++e) {
          llvm::Value* part = B.CreateZExt(
              values[r * static_cast<size_t>(perRegister) + static_cast<size_t>(e)], t.i32());
          value =
              e == 0 ? part : B.CreateOr(value, B.CreateShl(part, static_cast<uint64_t>(e * bits)));
        }
      }
    }
    ROCUDA_TRY(t.write(target, value, ScalarType::B32));
  }
  return Status::success();
}

Status wmmaStore(FunctionTranslator& t, const ptx::Instruction& inst, const WmmaShape& s) {
  auto& B = t.b;
  ScalarType type = inst.types().empty() ? ScalarType::B32 : inst.types()[0];
  if (wmmaMatrix(inst) != 'd' || !wmmaTypeAllowed(s, 'd', type)) return t.unsupported(inst);
  if (inst.operands().size() < 2) return t.invalid(inst, "expected an address and a fragment");
  const ptx::Operand& frag = inst.operands()[1];
  size_t registers = wmmaRegisters(s, 'd', type);
  if (frag.kind != ptx::Operand::Kind::Vector || frag.elements().size() != registers)
    return t.invalid(inst,
                     "a fragment of " + std::to_string(registers) + " registers was expected");
  std::vector<llvm::Value*> elements;
  for (size_t r = 0; r < registers; ++r) {
    if (type == ScalarType::F64) {
      ROCUDA_VALUE(reg, t.read(frag.elements()[r], ScalarType::B64));
      elements.push_back(reg);
      continue;
    }
    ROCUDA_VALUE(reg, t.read(frag.elements()[r], ScalarType::B32));
    if (type == ScalarType::F16) {
      elements.push_back(B.CreateTrunc(reg, B.getInt16Ty()));
      elements.push_back(B.CreateTrunc(B.CreateLShr(reg, 16), B.getInt16Ty()));
    } else {
      elements.push_back(reg);
    }
  }
  auto addresses = wmmaAddresses(t, inst, s, 'd', type, 0, 2);
  if (!addresses.ok()) return addresses.error();
  unsigned bytes = static_cast<unsigned>(wmmaBits(type) / 8);
  for (size_t i = 0; i < addresses->size(); ++i) {
    t.checkAccess(inst, (*addresses)[i], bytes, /*write=*/true, inst.space);
    markSpace(*B.CreateAlignedStore(elements[i], (*addresses)[i], llvm::Align(bytes)), inst);
  }
  return Status::success();
}

// wmma.mma: D = A * B + C in the layout above. b1 (.xor.popc / .and.popc): D = C + the population
// count of row AND/XOR column, 32 k per register.
Status wmmaMma(FunctionTranslator& t, const ptx::Instruction& inst, const WmmaShape& s) {
  auto types = inst.types();
  // f16 inputs: .dtype.ctype; every other input type: .dtype.atype.btype.ctype.
  if (types.size() != 2 && types.size() != 4) return t.unsupported(inst);
  ScalarType dType = types[0], cType = types.back();
  ScalarType aType = types.size() == 4 ? types[1] : ScalarType::F16;
  ScalarType bType = types.size() == 4 ? types[2] : ScalarType::F16;
  bool integer = isByte(aType) || isSubByte(aType);
  bool ok = aType == bType && wmmaTypeAllowed(s, 'a', aType) && wmmaTypeAllowed(s, 'c', cType) &&
            wmmaTypeAllowed(s, 'd', dType);
  if (integer)
    ok = ok && dType == ScalarType::S32 && cType == ScalarType::S32;
  else if (aType == ScalarType::F16)
    ok = ok && dType != ScalarType::S32 && cType != ScalarType::S32;
  else if (aType != ScalarType::F64)
    ok = ok && dType == ScalarType::F32 && cType == ScalarType::F32;
  if (!ok || inst.operands().size() != 4) return t.unsupported(inst);
  if (inst.hasModifier("satfinite") && !integer)
    return t.unsupported(inst, "wmma.mma.satfinite with floating-point inputs");
  bool bits = aType == ScalarType::B1;
  bool bitAnd = inst.hasModifier("and");
  if (bits != inst.hasModifier("popc") || (bits && bitAnd == inst.hasModifier("xor")))
    return t.invalid(inst, "b1 wmma.mma needs .xor.popc or .and.popc, other types neither");
  if (inst.hasModifier("rz") || inst.hasModifier("rm") || inst.hasModifier("rp"))
    return t.unsupported(inst, "wmma.mma.f64 with a rounding mode other than .rn");

  size_t aRegisters = wmmaRegisters(s, 'a', aType), bRegisters = wmmaRegisters(s, 'b', bType);
  size_t cRegisters = wmmaRegisters(s, 'c', cType);
  bool satfinite = inst.hasModifier("satfinite");
  auto body = [=](FunctionTranslator& t, const WarpRegisters& regs) {
    auto& B = t.b;
    llvm::Value* group = B.CreateLShr(regs.lane, 2);
    llvm::Value* inGroup = B.CreateAnd(regs.lane, 3);
    std::vector<llvm::Value*> c;
    for (size_t r = aRegisters + bRegisters; r < aRegisters + bRegisters + cRegisters; ++r)
      for (llvm::Value* v : decode(t, regs.own(r), cType)) c.push_back(v);
    size_t aUsed = wmmaUsedRegisters(s, 'a', aType), bUsed = wmmaUsedRegisters(s, 'b', bType);
    // The registers of the lanes holding this lane's A rows (its group) and B columns t + 4o.
    std::vector<std::vector<llvm::Value*>> aHeld(4),
        bHeld[2] = {std::vector<std::vector<llvm::Value*>>(4),
                    std::vector<std::vector<llvm::Value*>>(4)};
    for (int h = 0; h < 4; ++h) {
      llvm::Value* source =
          B.CreateAdd(B.CreateShl(group, 2), B.getInt32(static_cast<uint32_t>(h)));
      for (size_t r = 0; r < aUsed; ++r) aHeld[h].push_back(regs.ofLane(r, source));
      for (int o = 0; o < 2; ++o) {
        llvm::Value* owner = B.CreateAdd(inGroup, B.getInt32(static_cast<uint32_t>(4 * o)));
        llvm::Value* from =
            B.CreateAdd(B.CreateShl(owner, 2), B.getInt32(static_cast<uint32_t>(h)));
        for (size_t r = 0; r < bUsed; ++r) bHeld[o][h].push_back(regs.ofLane(aRegisters + r, from));
      }
    }
    std::map<llvm::Value*, std::vector<llvm::Value*>> decoded;
    auto elementsOf = [&](llvm::Value* reg, ScalarType type) -> const std::vector<llvm::Value*>& {
      auto it = decoded.find(reg);
      if (it == decoded.end()) it = decoded.emplace(reg, decode(t, reg, type)).first;
      return it->second;
    };
    int bitsPer = wmmaBits(aType);
    int perRegister = bitsPer >= 32 ? 1 : 32 / bitsPer;
    size_t runRegisters = static_cast<size_t>(std::max(1, s.k / 4 / perRegister));
    std::vector<llvm::Value*> d;
    for (int e = 0; e < wmmaElements(s, 'c'); ++e) {
      int rowBlock = e / (s.n / 4), columnRun = e % (s.n / 4);
      int o = columnRun % 2, columnBlock = columnRun / 2;
      llvm::Value* sum = c[static_cast<size_t>(e)];
      for (int h = 0; h < 4; ++h)
        for (size_t q = 0; q < runRegisters; ++q) {
          llvm::Value* aReg = aHeld[h][static_cast<size_t>(rowBlock) * runRegisters + q];
          llvm::Value* bReg = bHeld[o][h][static_cast<size_t>(columnBlock) * runRegisters + q];
          if (bits) {
            llvm::Value* both = bitAnd ? B.CreateAnd(aReg, bReg) : B.CreateXor(aReg, bReg);
            llvm::Value* count = B.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, both);
            sum = B.CreateAdd(sum, B.CreateZExt(count, t.i64()));
            continue;
          }
          const std::vector<llvm::Value*>& x = elementsOf(aReg, aType);
          const std::vector<llvm::Value*>& y = elementsOf(bReg, bType);
          for (size_t i = 0; i < x.size(); ++i)
            sum =
                integer ? B.CreateAdd(sum, B.CreateMul(x[i], y[i]))
                : aType == ScalarType::F64
                    ? B.CreateIntrinsic(llvm::Intrinsic::fma, {B.getDoubleTy()}, {x[i], y[i], sum})
                    : B.CreateFAdd(sum, B.CreateFMul(x[i], y[i]));
        }
      d.push_back(sum);
    }
    return encodeFragment(t, dType, satfinite, d);
  };
  return runMatrixInstruction(t, inst,
                              {{aRegisters, aType}, {bRegisters, bType}, {cRegisters, cType}},
                              wmmaRegisters(s, 'd', dType), dType, body);
}

// ldmatrix / stmatrix (m8n8, b16): lanes 8j..8j+7 give the row addresses of matrix j; lane L holds
// row L/4, columns 2(L%4) and 2(L%4)+1 of each matrix in register j (.trans: row 2(L%4) and
// 2(L%4)+1 of column L/4). The row addresses each lane needs come from their lanes in one warp
// operation (one record and one wait for the whole gather, not a shuffle per address and half);
// then every lane loads or stores its own elements.
std::vector<llvm::Value*> gatherRowAddresses(FunctionTranslator& t, llvm::Value* address,
                                             int matrices, bool trans) {
  WarpMatrixOp op;
  op.key = "ldmatrix.rows.x" + std::to_string(matrices) + (trans ? ".trans" : "");
  op.wideInputs = {true};
  op.wideOutputs.assign(static_cast<size_t>(matrices * (trans ? 2 : 1)), true);
  op.body = [matrices, trans](FunctionTranslator& t, const WarpRegisters& regs) {
    auto& B = t.b;
    llvm::Value* row = B.CreateLShr(regs.lane, 2);
    llvm::Value* pair = B.CreateAnd(regs.lane, 3);
    std::vector<llvm::Value*> rows;
    for (int j = 0; j < matrices; ++j) {
      llvm::Value* first = B.getInt32(static_cast<uint32_t>(8 * j));
      if (!trans) {
        rows.push_back(regs.ofLane(0, B.CreateAdd(first, row)));
        continue;
      }
      for (uint32_t e = 0; e < 2; ++e)
        rows.push_back(
            regs.ofLane(0, B.CreateAdd(first, B.CreateAdd(B.CreateShl(pair, 1), B.getInt32(e)))));
    }
    return rows;
  };
  return runWarpMatrixOp(t, op, {address});
}

Status matrixLoadStore(FunctionTranslator& t, const ptx::Instruction& inst, bool store) {
  auto& B = t.b;
  int count = inst.hasModifier("x4") ? 4 : inst.hasModifier("x2") ? 2 : inst.hasModifier("x1") ? 1 : 0;
  if (count == 0 || !inst.hasModifier("m8n8") || inst.types().size() != 1 ||
      inst.types()[0] != ScalarType::B16 || inst.operands().size() != 2)
    return t.unsupported(inst);
  bool trans = inst.hasModifier("trans");
  const ptx::Operand& frag = inst.operands()[store ? 1 : 0];
  const ptx::Operand& where = inst.operands()[store ? 0 : 1];
  std::vector<const ptx::Operand*> registers = fragmentRegisters(frag);
  if (registers.size() != static_cast<size_t>(count))
    return t.invalid(inst, "a fragment of " + std::to_string(count) + " registers was expected");
  auto element = [&](int j) -> const ptx::Operand& { return *registers[static_cast<size_t>(j)]; };
  ROCUDA_VALUE(ptr, t.address(where, inst.space));
  std::vector<llvm::Value*> rowAddresses =
      gatherRowAddresses(t, B.CreatePtrToInt(ptr, t.i64()), count, trans);
  llvm::Value* lane = B.CreateCall(t.mt.sregFunction(ptx::SpecialRegister::LaneId, 0));
  llvm::Value* row = B.CreateLShr(lane, 2);
  llvm::Value* pair = B.CreateAnd(lane, 3);
  auto pointer = [&](llvm::Value* rowStart, llvm::Value* byteOffset) {
    return B.CreateIntToPtr(B.CreateAdd(rowStart, B.CreateZExt(byteOffset, t.i64())), ptr->getType());
  };
  for (int j = 0; j < count; ++j) {
    llvm::Value* value = nullptr;
    if (store) {
      ROCUDA_VALUE(v, t.read(element(j), ScalarType::B32));
      value = v;
    }
    if (!trans) {
      llvm::Value* p = pointer(rowAddresses[static_cast<size_t>(j)], B.CreateShl(pair, 2));
      if (store) {
        t.checkAccess(inst, p, 4, /*write=*/true, inst.space);
        markSpace(*B.CreateAlignedStore(value, p, llvm::Align(4)), inst);
        continue;
      }
      t.checkAccess(inst, p, 4, /*write=*/false, inst.space);
      auto* ld = B.CreateAlignedLoad(t.i32(), p, llvm::Align(4));
      markSpace(*ld, inst);
      ROCUDA_TRY(t.write(element(j), ld, ScalarType::B32));
      continue;
    }
    llvm::Value* halves[2] = {nullptr, nullptr};
    for (int e = 0; e < 2; ++e) {
      llvm::Value* p = pointer(rowAddresses[static_cast<size_t>(2 * j + e)], B.CreateShl(row, 1));
      t.checkAccess(inst, p, 2, store, inst.space);
      if (store) {
        llvm::Value* half = B.CreateTrunc(B.CreateLShr(value, static_cast<uint64_t>(16 * e)), B.getInt16Ty());
        markSpace(*B.CreateAlignedStore(half, p, llvm::Align(2)), inst);
      } else {
        auto* ld = B.CreateAlignedLoad(B.getInt16Ty(), p, llvm::Align(2));
        markSpace(*ld, inst);
        halves[e] = B.CreateZExt(ld, t.i32());
      }
    }
    if (!store)
      ROCUDA_TRY(t.write(element(j), B.CreateOr(halves[0], B.CreateShl(halves[1], 16)), ScalarType::B32));
  }
  return Status::success();
}

// movmatrix.sync.aligned.m8n8.trans.b16 d, a (sm_75): the warp's 8x8 matrix of 16-bit elements,
// held as ldmatrix leaves it (lane L: row L/4, columns 2(L%4) and 2(L%4)+1), transposed. Element
// (r, c) of the result is (c, r) of the source, which lane 4c + r/2 holds in half r%2.
Status transposeMatrix(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (!inst.hasModifier("m8n8") || !inst.hasModifier("trans") || inst.types().size() != 1 ||
      inst.types()[0] != ScalarType::B16 || inst.operands().size() != 2)
    return t.unsupported(inst, "expected movmatrix.sync.aligned.m8n8.trans.b16 d, a");
  ROCUDA_VALUE(source, t.read(inst.operands()[1], ScalarType::B32));
  WarpMatrixOp op;
  op.key = "movmatrix.m8n8.trans";
  op.wideInputs = {false};
  op.wideOutputs = {false};
  op.body = [](FunctionTranslator& t, const WarpRegisters& regs) {
    auto& B = t.b;
    llvm::Value* row = B.CreateLShr(regs.lane, 2);
    llvm::Value* pair = B.CreateAnd(regs.lane, 3);
    llvm::Value* shift = B.CreateShl(B.CreateAnd(row, 1), 4);  // the half of the source word
    llvm::Value* result = B.getInt32(0);
    for (uint32_t e = 0; e < 2; ++e) {
      llvm::Value* column = B.CreateAdd(B.CreateShl(pair, 1), B.getInt32(e));
      llvm::Value* from = B.CreateAdd(B.CreateShl(column, 2), B.CreateLShr(row, 1));
      llvm::Value* half = B.CreateAnd(B.CreateLShr(regs.ofLane(0, from), shift), 0xffff);
      result = B.CreateOr(result, B.CreateShl(half, 16 * e));
    }
    return std::vector<llvm::Value*>{result};
  };
  std::vector<llvm::Value*> d = runWarpMatrixOp(t, op, {source});
  return t.write(inst.operands()[0], d[0], ScalarType::B32);
}

}  // namespace

Status translateMmaOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto types = inst.types();
  if (types.size() != 4 || inst.operands().size() != 4)
    return t.unsupported(inst, "expected mma.sync.aligned.shape.row.col.dtype.atype.btype.ctype d, a, b, c");
  ScalarType dType = types[0], aType = types[1], bType = types[2], cType = types[3];
  if (inst.hasModifier("m8n8k4") && aType == ScalarType::F16 && bType == ScalarType::F16)
    return translateQuadPairMma(t, inst, dType, cType);
  MmaForm f;
  if (!formOf(inst, dType, aType, bType, cType, f)) return t.unsupported(inst);
  size_t cRegisters = static_cast<size_t>(f.cElements / elementsPerRegister(cType));
  bool satfinite = inst.hasModifier("satfinite");
  return runMatrixInstruction(t, inst,
                              {{static_cast<size_t>(f.aRegisters), aType},
                               {static_cast<size_t>(f.bRegisters), bType},
                               {cRegisters, cType}},
                              static_cast<size_t>(f.cElements / elementsPerRegister(dType)), dType,
                              [=](FunctionTranslator& t, const WarpRegisters& regs) {
                                return encodeFragment(t, dType, satfinite,
                                                      multiplyFragments(t, f, cType, regs));
                              });
}

Status translateWmmaOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  WmmaShape shape;
  if (!wmmaShapeOf(inst, shape)) return t.unsupported(inst, "unknown wmma shape");
  if (inst.hasModifier("load")) return wmmaLoad(t, inst, shape);
  if (inst.hasModifier("store")) return wmmaStore(t, inst, shape);
  if (inst.hasModifier("mma")) return wmmaMma(t, inst, shape);
  return t.unsupported(inst);
}

Status translateMatrixLoadStore(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (inst.opcode == ptx::Opcode::movmatrix) return transposeMatrix(t, inst);
  return matrixLoadStore(t, inst, inst.opcode == ptx::Opcode::stmatrix);
}

}  // namespace rocuda::compiler::detail
