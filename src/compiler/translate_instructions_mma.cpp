// mma.sync, wmma, ldmatrix and stmatrix: warp-level matrix instructions, emulated with the
// warp's shuffles. Each lane
// gathers the fragment registers of the lanes that hold its rows of A (the four lanes of its
// group) and its columns of B (the lanes of groups 2t and 2t+1), places every element where
// the PTX ISA's fragment layout puts it, and computes its own elements of D = A * B + C: the
// products exactly and their sum in double, rounded once to D's type (f64: an fma chain;
// s8/u8 inputs: exact in 64-bit integers, then wrapped to s32 or, with .satfinite, clamped).
// The same IR runs on the CPU device and, through the shuffle lowering, on AMD GPUs.
#include <llvm/IR/Intrinsics.h>

#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

// A supported mma form: the k extent, A's rows (16, or 8 for m8n8k4 / m8n8k16), and fragment
// sizes. A and B have the same type except for the integer forms (s8 times u8 is allowed).
struct MmaForm {
  int k = 0;
  int rows = 16;
  int aRegisters = 0, bRegisters = 0, cElements = 0;
  ScalarType input = ScalarType::F16;
  ScalarType bInput = ScalarType::F16;
  bool integer = false;
};

bool isByte(ScalarType type) { return type == ScalarType::S8 || type == ScalarType::U8; }

int elementsPerRegister(ScalarType type) {
  if (isByte(type)) return 4;
  return type == ScalarType::F16 || type == ScalarType::BF16 ? 2 : 1;
}

// Where A's element i of the lane with threadID_in_group `t` sits: its row relative to the
// lane's groupID (0 or 8, as 0 / 1) and its k. PTX ISA, "Matrix Fragments for mma".
std::pair<int, int> aPosition(const MmaForm& f, int t, int i) {
  if (f.integer) {
    if (f.rows == 8) return {0, 4 * t + i};                                        // m8n8k16
    if (f.k == 16) return {i >= 4 ? 1 : 0, 4 * t + (i & 3)};                       // m16n8k16
    return {(i >> 2) & 1, 4 * t + (i & 3) + 16 * (i >= 8 ? 1 : 0)};                // m16n8k32
  }
  if (f.input == ScalarType::F64) return {0, t};                                  // m8n8k4
  if (f.input == ScalarType::TF32) return {i & 1, t + 4 * (i >= 2 ? 1 : 0)};       // m16n8k8
  if (f.k == 16) return {(i >> 1) & 1, 2 * t + (i & 1) + 8 * (i >= 4 ? 1 : 0)};  // m16n8k16
  return {i >= 2 ? 1 : 0, 2 * t + (i & 1)};                                       // m16n8k8
}

// The k of B's element i of the lane with threadID_in_group `t` (its column is the lane's group).
int bPosition(const MmaForm& f, int t, int i) {
  if (f.integer) return f.k == 32 ? 4 * t + (i & 3) + 16 * (i >= 4 ? 1 : 0) : 4 * t + i;
  if (f.input == ScalarType::F64) return t;
  if (f.input == ScalarType::TF32) return t + 4 * i;
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
  bool integer = isByte(a) && isByte(b);
  if (!integer && (a != b || inst.hasModifier("satfinite"))) return false;
  bool half = a == ScalarType::F16 || a == ScalarType::BF16;
  // The shapes per input type, as (shape, rows, k).
  struct Shape {
    const char* name;
    bool accepted;
    int rows, k;
  };
  const Shape shapes[] = {
      {"m16n8k16", half || integer, 16, 16}, {"m16n8k8", half || a == ScalarType::TF32, 16, 8},
      {"m8n8k4", a == ScalarType::F64, 8, 4}, {"m16n8k32", integer, 16, 32},
      {"m8n8k16", integer, 8, 16}};
  const Shape* shape = nullptr;
  for (const Shape& candidate : shapes)
    if (candidate.accepted && inst.hasModifier(candidate.name)) shape = &candidate;
  if (shape == nullptr) return false;
  f.input = a;
  f.bInput = b;
  f.integer = integer;
  f.rows = shape->rows;
  f.k = shape->k;
  // Each lane holds a 32nd of A (rows x k), B (k x 8) and C (rows x 8).
  f.aRegisters = f.rows * f.k / 32 / elementsPerRegister(a);
  f.bRegisters = f.k * 8 / 32 / elementsPerRegister(b);
  f.cElements = f.rows * 8 / 32;
  // Accumulators: s32 for bytes; f32 for every float input; f16 with f16 inputs; f64 with f64.
  if (integer) return d == ScalarType::S32 && c == ScalarType::S32;
  if (a == ScalarType::F64) return d == ScalarType::F64 && c == ScalarType::F64;
  if (d != c) return false;
  return d == ScalarType::F32 || (d == ScalarType::F16 && a == ScalarType::F16);
}

// Reads a fragment operand ({r0, r1, ...}) as raw registers: i32, or i64 for f64 elements.
Result<std::vector<llvm::Value*>> readFragment(FunctionTranslator& t, const ptx::Instruction& inst,
                                               const ptx::Operand& op, size_t count,
                                               ScalarType element) {
  std::vector<llvm::Value*> regs;
  bool vector = op.kind == ptx::Operand::Kind::Vector;
  if ((vector ? op.elements().size() : 1) != count)
    return t.invalid(inst, "a fragment of " + std::to_string(count) + " registers was expected");
  ScalarType raw = element == ScalarType::F64 ? ScalarType::B64 : ScalarType::B32;
  for (size_t i = 0; i < count; ++i) {
    ROCUDA_VALUE(v, t.read(vector ? op.elements()[i] : op, raw));
    regs.push_back(v);
  }
  return regs;
}

// The elements of one raw register, as doubles (integers: as i64).
std::vector<llvm::Value*> decode(FunctionTranslator& t, llvm::Value* reg, ScalarType type) {
  auto& B = t.b;
  auto* d = B.getDoubleTy();
  if (type == ScalarType::S32) return {B.CreateSExt(reg, t.i64())};
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

// This lane's elements of D = A * B + C (C's elements given as doubles, or i64 for the integer
// forms), in the same representation, in C's order.
std::vector<llvm::Value*> multiplyFragments(FunctionTranslator& t, const MmaForm& f,
                                            const std::vector<llvm::Value*>& aRegs,
                                            const std::vector<llvm::Value*>& bRegs,
                                            const std::vector<llvm::Value*>& c) {
  auto& B = t.b;
  ScalarType aType = f.input, bType = f.bInput;
  llvm::Value* lane = B.CreateCall(t.mt.sregFunction(ptx::SpecialRegister::LaneId, 0));
  llvm::Value* group = B.CreateLShr(lane, 2);
  llvm::Value* inGroup = B.CreateAnd(lane, 3);
  int perA = elementsPerRegister(aType), perB = elementsPerRegister(bType);

  // A's rows g and g + 8 from the four lanes of this lane's group.
  std::vector<std::vector<llvm::Value*>> a(static_cast<size_t>(f.rows / 8),
                                           std::vector<llvm::Value*>(static_cast<size_t>(f.k)));
  for (int holder = 0; holder < 4; ++holder) {
    llvm::Value* source = B.CreateAdd(B.CreateShl(group, 2), B.getInt32(holder));
    for (int r = 0; r < f.aRegisters; ++r) {
      std::vector<llvm::Value*> elements = decode(t, fetch(t, aRegs[r], source), aType);
      for (int e = 0; e < perA; ++e) {
        auto [row, k] = aPosition(f, holder, r * perA + e);
        a[static_cast<size_t>(row)][static_cast<size_t>(k)] = elements[static_cast<size_t>(e)];
      }
    }
  }
  // B's columns 2t and 2t + 1 from the lanes of groups 2t and 2t + 1.
  std::vector<std::vector<llvm::Value*>> b(2, std::vector<llvm::Value*>(static_cast<size_t>(f.k)));
  for (int column = 0; column < 2; ++column) {
    llvm::Value* owner = B.CreateAdd(B.CreateShl(inGroup, 1), B.getInt32(column));
    for (int holder = 0; holder < 4; ++holder) {
      llvm::Value* source = B.CreateAdd(B.CreateShl(owner, 2), B.getInt32(holder));
      for (int r = 0; r < f.bRegisters; ++r) {
        std::vector<llvm::Value*> elements = decode(t, fetch(t, bRegs[r], source), bType);
        for (int e = 0; e < perB; ++e)
          b[static_cast<size_t>(column)][static_cast<size_t>(bPosition(f, holder, r * perB + e))] =
              elements[static_cast<size_t>(e)];
      }
    }
  }
  std::vector<llvm::Value*> d;
  for (int i = 0; i < f.cElements; ++i) {
    auto [row, column] = cPosition(f, i);
    llvm::Value* sum = c[static_cast<size_t>(i)];
    for (int k = 0; k < f.k; ++k) {
      llvm::Value* x = a[static_cast<size_t>(row)][static_cast<size_t>(k)];
      llvm::Value* y = b[static_cast<size_t>(column)][static_cast<size_t>(k)];
      sum = f.integer ? B.CreateAdd(sum, B.CreateMul(x, y))
            : aType == ScalarType::F64
                ? B.CreateIntrinsic(llvm::Intrinsic::fma, {B.getDoubleTy()}, {x, y, sum})
                : B.CreateFAdd(sum, B.CreateFMul(x, y));
    }
    d.push_back(sum);
  }
  return d;
}

// Writes D's elements (doubles, or i64 for s32, in fragment order) to the fragment operand in D's
// type; s32 wraps, or with .satfinite clamps to the s32 range.
Status writeFragment(FunctionTranslator& t, const ptx::Instruction& inst, const ptx::Operand& dOp,
                     ScalarType dType, const std::vector<llvm::Value*>& d) {
  auto& B = t.b;
  bool vector = dOp.kind == ptx::Operand::Kind::Vector;
  size_t dRegisters = d.size() / static_cast<size_t>(elementsPerRegister(dType));
  if ((vector ? dOp.elements().size() : 1) != dRegisters)
    return t.invalid(inst, "a fragment of " + std::to_string(dRegisters) + " registers was expected");
  for (size_t r = 0; r < dRegisters; ++r) {
    const ptx::Operand& target = vector ? dOp.elements()[r] : dOp;
    if (dType == ScalarType::F16) {  // two halves per register, the lower element first
      llvm::Value* lo = B.CreateBitCast(B.CreateFPTrunc(d[2 * r], B.getHalfTy()), B.getInt16Ty());
      llvm::Value* hi = B.CreateBitCast(B.CreateFPTrunc(d[2 * r + 1], B.getHalfTy()), B.getInt16Ty());
      llvm::Value* packed =
          B.CreateOr(B.CreateZExt(lo, t.i32()), B.CreateShl(B.CreateZExt(hi, t.i32()), 16));
      ROCUDA_TRY(t.write(target, packed, ScalarType::B32));
    } else if (dType == ScalarType::F32) {
      ROCUDA_TRY(t.write(target, B.CreateFPTrunc(d[r], B.getFloatTy()), ScalarType::F32));
    } else if (dType == ScalarType::S32) {
      llvm::Value* v = d[r];
      if (inst.hasModifier("satfinite")) {
        v = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, B.getInt64(INT32_MIN));
        v = B.CreateBinaryIntrinsic(llvm::Intrinsic::smin, v, B.getInt64(INT32_MAX));
      }
      ROCUDA_TRY(t.write(target, B.CreateTrunc(v, t.i32()), ScalarType::S32));
    } else {
      ROCUDA_TRY(t.write(target, d[r], ScalarType::F64));
    }
  }
  return Status::success();
}


// wmma (m16n16k16, f16 / bf16 inputs): fragments are two side-by-side m16n8k16 mma fragments.
// A is mma's A fragment (an f16 A has 8 registers: the last 4 stay zero); B and C/D are mma's
// for columns 0-7, then 8-15 (for C/D that is also the layout NVIDIA's sm_80 uses). The fragment
// layout is unspecified by the ISA, so loads, stores and mma only need to agree; element-wise
// code on fragments works as with any layout. Each element's position is (g or 2t) + a constant.
struct WmmaPosition {
  bool rowFromGroup;  // row = g + row, column = 2t + column (else row = 2t + row, column = g + column)
  int row, column;
};

WmmaPosition wmmaPosition(char matrix, int i) {
  int half = i / 4, j = i % 4;
  if (matrix == 'a') return {true, 8 * ((i >> 1) & 1), (i & 1) + 8 * (i >= 4 ? 1 : 0)};
  if (matrix == 'b') return {false, (j & 1) + 8 * (j >= 2 ? 1 : 0), 8 * half};
  return {true, 8 * (j >= 2 ? 1 : 0), (j & 1) + 8 * half};  // c and d
}

size_t wmmaRegisters(char matrix, ScalarType type) {
  if (matrix == 'a' || matrix == 'b') return type == ScalarType::F16 ? 8 : 4;
  return type == ScalarType::F32 ? 8 : 4;
}

// The address of each of the lane's 8 fragment elements in a matrix at `base` with `stride`
// elements between rows (row-major) or columns (column-major).
std::vector<llvm::Value*> wmmaAddresses(FunctionTranslator& t, char matrix, llvm::Value* base,
                                        llvm::Value* stride, bool rowMajor, unsigned size) {
  auto& B = t.b;
  llvm::Value* lane = B.CreateCall(t.mt.sregFunction(ptx::SpecialRegister::LaneId, 0));
  llvm::Value* group = B.CreateLShr(lane, 2);
  llvm::Value* pair = B.CreateShl(B.CreateAnd(lane, 3), 1);
  std::vector<llvm::Value*> out;
  for (int i = 0; i < 8; ++i) {
    WmmaPosition p = wmmaPosition(matrix, i);
    llvm::Value* row = B.CreateAdd(p.rowFromGroup ? group : pair, B.getInt32(static_cast<uint32_t>(p.row)));
    llvm::Value* column = B.CreateAdd(p.rowFromGroup ? pair : group, B.getInt32(static_cast<uint32_t>(p.column)));
    llvm::Value* offset = rowMajor ? B.CreateAdd(B.CreateMul(row, stride), column)
                                   : B.CreateAdd(B.CreateMul(column, stride), row);
    offset = B.CreateMul(B.CreateZExt(offset, t.i64()), B.getInt64(size));
    out.push_back(B.CreateGEP(t.i8(), base, offset));
  }
  return out;
}

char wmmaMatrix(const ptx::Instruction& inst) {
  for (char m : {'a', 'b', 'c', 'd'})
    if (inst.hasModifier(std::string(1, m))) return m;
  return 0;
}

Result<llvm::Value*> wmmaStride(FunctionTranslator& t, const ptx::Instruction& inst, size_t index) {
  if (inst.operands().size() <= index) return static_cast<llvm::Value*>(t.b.getInt32(16));
  return t.read(inst.operands()[index], ScalarType::U32);
}

Status wmmaLoad(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  char matrix = wmmaMatrix(inst);
  ScalarType type = inst.types().empty() ? ScalarType::B32 : inst.types()[0];
  bool inputType = type == ScalarType::F16 || type == ScalarType::BF16;
  if (matrix == 0 || matrix == 'd' || (matrix == 'c' ? !(type == ScalarType::F16 || type == ScalarType::F32)
                                                     : !inputType))
    return t.unsupported(inst);
  if (inst.operands().size() < 2) return t.invalid(inst, "expected a fragment and an address");
  ROCUDA_VALUE(base, t.address(inst.operands()[1], inst.space));
  ROCUDA_VALUE(stride, wmmaStride(t, inst, 2));
  unsigned size = ptx::scalarTypeSize(type);
  std::vector<llvm::Value*> addresses = wmmaAddresses(t, matrix, base, stride, inst.hasModifier("row"), size);
  std::vector<llvm::Value*> bits;
  for (llvm::Value* p : addresses) {
    t.checkAccess(inst, p, size, /*write=*/false, inst.space);
    auto* ld = B.CreateAlignedLoad(B.getIntNTy(size * 8), p, llvm::Align(size));
    markSpace(*ld, inst);
    bits.push_back(ld);
  }
  const ptx::Operand& frag = inst.operands()[0];
  size_t registers = wmmaRegisters(matrix, type);
  if (frag.kind != ptx::Operand::Kind::Vector || frag.elements().size() != registers)
    return t.invalid(inst, "a fragment of " + std::to_string(registers) + " registers was expected");
  for (size_t r = 0; r < registers; ++r) {
    llvm::Value* value = B.getInt32(0);
    if (size == 4) {
      value = bits[r];
    } else if (r < 4) {
      value = B.CreateOr(B.CreateZExt(bits[2 * r], t.i32()),
                         B.CreateShl(B.CreateZExt(bits[2 * r + 1], t.i32()), 16));
    }
    ROCUDA_TRY(t.write(frag.elements()[r], value, ScalarType::B32));
  }
  return Status::success();
}

Status wmmaStore(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto& B = t.b;
  ScalarType type = inst.types().empty() ? ScalarType::B32 : inst.types()[0];
  if (wmmaMatrix(inst) != 'd' || !(type == ScalarType::F16 || type == ScalarType::F32))
    return t.unsupported(inst);
  if (inst.operands().size() < 2) return t.invalid(inst, "expected an address and a fragment");
  const ptx::Operand& frag = inst.operands()[1];
  size_t registers = wmmaRegisters('d', type);
  if (frag.kind != ptx::Operand::Kind::Vector || frag.elements().size() != registers)
    return t.invalid(inst, "a fragment of " + std::to_string(registers) + " registers was expected");
  ROCUDA_VALUE(base, t.address(inst.operands()[0], inst.space));
  ROCUDA_VALUE(stride, wmmaStride(t, inst, 2));
  unsigned size = ptx::scalarTypeSize(type);
  std::vector<llvm::Value*> elements;
  for (size_t r = 0; r < registers; ++r) {
    ROCUDA_VALUE(reg, t.read(frag.elements()[r], ScalarType::B32));
    if (size == 4) {
      elements.push_back(reg);
    } else {
      elements.push_back(B.CreateTrunc(reg, B.getInt16Ty()));
      elements.push_back(B.CreateTrunc(B.CreateLShr(reg, 16), B.getInt16Ty()));
    }
  }
  std::vector<llvm::Value*> addresses = wmmaAddresses(t, 'd', base, stride, inst.hasModifier("row"), size);
  for (size_t i = 0; i < addresses.size(); ++i) {
    t.checkAccess(inst, addresses[i], size, /*write=*/true, inst.space);
    auto* st = B.CreateAlignedStore(elements[i], addresses[i], llvm::Align(size));
    markSpace(*st, inst);
  }
  return Status::success();
}

Status wmmaMma(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto types = inst.types();
  // f16 inputs: .dtype.ctype; bf16 (and others): .dtype.atype.btype.ctype.
  if (types.size() != 2 && types.size() != 4) return t.unsupported(inst);
  ScalarType dType = types[0], cType = types.back();
  ScalarType aType = types.size() == 4 ? types[1] : ScalarType::F16;
  MmaForm f;
  f.k = 16;
  f.aRegisters = 4;
  f.bRegisters = 2;
  f.cElements = 4;
  f.input = aType;
  f.bInput = aType;
  bool ok = (aType == ScalarType::F16 && (dType == ScalarType::F16 || dType == ScalarType::F32) &&
             (cType == ScalarType::F16 || cType == ScalarType::F32)) ||
            (aType == ScalarType::BF16 && types[2] == ScalarType::BF16 && dType == ScalarType::F32 &&
             cType == ScalarType::F32);
  if (!ok || inst.hasModifier("satfinite") || inst.operands().size() != 4) return t.unsupported(inst);
  const auto& ops = inst.operands();
  auto aRead = readFragment(t, inst, ops[1], wmmaRegisters('a', aType), ScalarType::B32);
  if (!aRead.ok()) return aRead.error();
  auto bRead = readFragment(t, inst, ops[2], wmmaRegisters('b', aType), ScalarType::B32);
  if (!bRead.ok()) return bRead.error();
  auto cRead = readFragment(t, inst, ops[3], wmmaRegisters('c', cType), ScalarType::B32);
  if (!cRead.ok()) return cRead.error();
  std::vector<llvm::Value*> aRegs(aRead->begin(), aRead->begin() + 4);
  std::vector<llvm::Value*> c;
  for (llvm::Value* reg : *cRead)
    for (llvm::Value* v : decode(t, reg, cType)) c.push_back(v);
  std::vector<llvm::Value*> d;
  for (size_t half = 0; half < 2; ++half) {
    std::vector<llvm::Value*> bRegs((*bRead).begin() + 2 * half, (*bRead).begin() + 2 * half + 2);
    std::vector<llvm::Value*> cHalf(c.begin() + 4 * half, c.begin() + 4 * half + 4);
    for (llvm::Value* v : multiplyFragments(t, f, aRegs, bRegs, cHalf)) d.push_back(v);
  }
  return writeFragment(t, inst, ops[0], dType, d);
}


// ldmatrix / stmatrix (m8n8, b16): lanes 8j..8j+7 give the row addresses of matrix j; lane L holds
// row L/4, columns 2(L%4) and 2(L%4)+1 of each matrix in register j (.trans: row 2(L%4) and
// 2(L%4)+1 of column L/4). Each lane fetches the row addresses it needs from their lanes and
// loads or stores its own elements.
Status matrixLoadStore(FunctionTranslator& t, const ptx::Instruction& inst, bool store) {
  auto& B = t.b;
  int count = inst.hasModifier("x4") ? 4 : inst.hasModifier("x2") ? 2 : inst.hasModifier("x1") ? 1 : 0;
  if (count == 0 || !inst.hasModifier("m8n8") || inst.types().size() != 1 ||
      inst.types()[0] != ScalarType::B16 || inst.operands().size() != 2)
    return t.unsupported(inst);
  bool trans = inst.hasModifier("trans");
  const ptx::Operand& frag = inst.operands()[store ? 1 : 0];
  const ptx::Operand& where = inst.operands()[store ? 0 : 1];
  size_t fragCount = frag.kind == ptx::Operand::Kind::Vector ? frag.elements().size() : 1;
  if (fragCount != static_cast<size_t>(count))
    return t.invalid(inst, "a fragment of " + std::to_string(count) + " registers was expected");
  auto element = [&](int j) -> const ptx::Operand& {
    return frag.kind == ptx::Operand::Kind::Vector ? frag.elements()[static_cast<size_t>(j)] : frag;
  };
  ROCUDA_VALUE(ptr, t.address(where, inst.space));
  llvm::Value* address = B.CreatePtrToInt(ptr, t.i64());
  llvm::Value* lane = B.CreateCall(t.mt.sregFunction(ptx::SpecialRegister::LaneId, 0));
  llvm::Value* row = B.CreateLShr(lane, 2);
  llvm::Value* pair = B.CreateAnd(lane, 3);
  auto rowAddress = [&](int matrix, llvm::Value* r) {
    return fetch(t, address, B.CreateAdd(B.getInt32(static_cast<uint32_t>(8 * matrix)), r));
  };
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
      llvm::Value* p = pointer(rowAddress(j, row), B.CreateShl(pair, 2));
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
      llvm::Value* sourceRow = B.CreateAdd(B.CreateShl(pair, 1), B.getInt32(static_cast<uint32_t>(e)));
      llvm::Value* p = pointer(rowAddress(j, sourceRow), B.CreateShl(row, 1));
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

}  // namespace

Status translateMmaOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  auto types = inst.types();
  if (types.size() != 4 || inst.operands().size() != 4)
    return t.unsupported(inst, "expected mma.sync.aligned.shape.row.col.dtype.atype.btype.ctype d, a, b, c");
  ScalarType dType = types[0], aType = types[1], bType = types[2], cType = types[3];
  MmaForm f;
  if (!formOf(inst, dType, aType, bType, cType, f)) return t.unsupported(inst);
  const auto& ops = inst.operands();
  auto aRegsRead = readFragment(t, inst, ops[1], f.aRegisters, aType);
  if (!aRegsRead.ok()) return aRegsRead.error();
  const std::vector<llvm::Value*>& aRegs = *aRegsRead;
  auto bRegsRead = readFragment(t, inst, ops[2], f.bRegisters, bType);
  if (!bRegsRead.ok()) return bRegsRead.error();
  const std::vector<llvm::Value*>& bRegs = *bRegsRead;
  size_t cRegisters = static_cast<size_t>(f.cElements / elementsPerRegister(cType));
  auto cRegsRead = readFragment(t, inst, ops[3], cRegisters, cType);
  if (!cRegsRead.ok()) return cRegsRead.error();
  const std::vector<llvm::Value*>& cRegs = *cRegsRead;

  std::vector<llvm::Value*> c;
  for (llvm::Value* reg : cRegs)
    for (llvm::Value* v : decode(t, reg, cType)) c.push_back(v);
  std::vector<llvm::Value*> d = multiplyFragments(t, f, aRegs, bRegs, c);
  return writeFragment(t, inst, ops[0], dType, d);
}

Status translateWmmaOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  if (!inst.hasModifier("m16n16k16")) return t.unsupported(inst, "wmma shapes other than m16n16k16");
  if (inst.hasModifier("load")) return wmmaLoad(t, inst);
  if (inst.hasModifier("store")) return wmmaStore(t, inst);
  if (inst.hasModifier("mma")) return wmmaMma(t, inst);
  return t.unsupported(inst);
}

Status translateMatrixLoadStore(FunctionTranslator& t, const ptx::Instruction& inst) {
  return matrixLoadStore(t, inst, inst.opcode == ptx::Opcode::stmatrix);
}

}  // namespace rocuda::compiler::detail
