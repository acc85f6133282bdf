// Video instructions (PTX ISA 9.7.18), which CUDA's SIMD intrinsics still emit (__vabsdiffu4 and
// __vsadu4 are vabsdiff4) and older code writes in inline assembly:
//   scalar: vadd, vsub, vabsdiff, vmin, vmax, vshl, vshr, vset, vmad, on a byte, half-word or word
//     of each source (.b0-.b3, .h0, .h1), extended to 33 bits, computed in 34, optionally
//     saturated, then combined with c (.add/.min/.max) or merged into a byte or half of c;
//   SIMD: vadd2/4, vsub2/4, vavrg2/4, vabsdiff2/4, vmin2/4, vmax2/4, vset2/4, lane-wise on
//   half-words
//     or bytes picked from the eight bytes of {b, a} (.hxy / .bxyzw), merged into c under a lane
//     mask or summed into c (.add).
// Everything is computed in i64 (i128 for vmad's product), which holds every intermediate value.
#include "compiler/translator.h"

namespace rocuda::compiler::detail {

using ptx::ScalarType;

namespace {

enum class VideoOp { Add, Sub, AbsDiff, Min, Max, Average, Shl, Shr, Set };

VideoOp videoOpOf(ptx::Opcode opcode) {
  using ptx::Opcode;
  switch (opcode) {
    case Opcode::vadd:
    case Opcode::vadd2:
    case Opcode::vadd4:
      return VideoOp::Add;
    case Opcode::vsub:
    case Opcode::vsub2:
    case Opcode::vsub4:
      return VideoOp::Sub;
    case Opcode::vabsdiff:
    case Opcode::vabsdiff2:
    case Opcode::vabsdiff4:
      return VideoOp::AbsDiff;
    case Opcode::vmin:
    case Opcode::vmin2:
    case Opcode::vmin4:
      return VideoOp::Min;
    case Opcode::vmax:
    case Opcode::vmax2:
    case Opcode::vmax4:
      return VideoOp::Max;
    case Opcode::vavrg2:
    case Opcode::vavrg4:
      return VideoOp::Average;
    case Opcode::vshl:
      return VideoOp::Shl;
    case Opcode::vshr:
      return VideoOp::Shr;
    default:
      return VideoOp::Set;  // vset, vset2, vset4
  }
}

unsigned lanesOf(ptx::Opcode opcode) {
  using ptx::Opcode;
  switch (opcode) {
    case Opcode::vadd2:
    case Opcode::vsub2:
    case Opcode::vavrg2:
    case Opcode::vabsdiff2:
    case Opcode::vmin2:
    case Opcode::vmax2:
    case Opcode::vset2:
      return 2;
    case Opcode::vadd4:
    case Opcode::vsub4:
    case Opcode::vavrg4:
    case Opcode::vabsdiff4:
    case Opcode::vmin4:
    case Opcode::vmax4:
    case Opcode::vset4:
      return 4;
    default:
      return 1;
  }
}

bool isSigned(ScalarType type) { return type == ScalarType::S32; }

const char* const kCompares[] = {"eq", "ne", "lt", "le", "gt", "ge"};

// The comparison of vset / vset2 / vset4, or nullptr.
const char* compareOf(const ptx::Instruction& inst) {
  for (const char* c : kCompares)
    if (inst.hasModifier(c)) return c;
  return nullptr;
}

class VideoTranslator {
 public:
  VideoTranslator(FunctionTranslator& t, const ptx::Instruction& inst)
      : t_(t), inst_(inst), B(t.b) {}

  Status scalar();
  Status simd(unsigned lanes);
  Status mad();

 private:
  // The 32 bits of a register operand, without its selector.
  Result<llvm::Value*> word(const ptx::Operand& op) {
    if (op.kind == ptx::Operand::Kind::Register)
      return t_.read(ptx::Operand::makeRegister(op.reg()), ScalarType::B32);
    return t_.read(op, ScalarType::B32);  // an immediate
  }
  std::string_view selectorOf(const ptx::Operand& op) {
    return op.kind == ptx::Operand::Kind::Register ? op.component() : std::string_view();
  }
  llvm::Value* extend(llvm::Value* v, bool sign) {
    return sign ? B.CreateSExt(v, B.getInt64Ty()) : B.CreateZExt(v, B.getInt64Ty());
  }
  // bits [shift, shift + width) of the i32 `v`, extended to i64.
  llvm::Value* field(llvm::Value* v, unsigned shift, unsigned width, bool sign) {
    llvm::Value* part = B.CreateTrunc(B.CreateLShr(v, shift), B.getIntNTy(width));
    return extend(part, sign);
  }
  // A scalar source: the word, or the byte / half-word its selector names.
  Result<llvm::Value*> scalarSource(const ptx::Operand& op, bool sign) {
    ROCUDA_VALUE(v, word(op));
    std::string_view sel = selectorOf(op);
    if (sel.empty()) return extend(v, sign);
    if (sel.size() == 2 && (sel[0] == 'b' || sel[0] == 'h')) {
      unsigned index = static_cast<unsigned>(sel[1] - '0');
      unsigned width = sel[0] == 'b' ? 8 : 16;
      if (index < 32 / width) return field(v, index * width, width, sign);
    }
    return t_.invalid(inst_,
                      "bad selector ." + std::string(sel) + " (expected .b0-.b3, .h0 or .h1)");
  }
  llvm::Value* clamp(llvm::Value* v, int64_t lo, int64_t hi) {
    v = B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, v, B.getInt64(lo));
    return B.CreateBinaryIntrinsic(llvm::Intrinsic::smin, v, B.getInt64(hi));
  }
  // The primary operation on two extended sources, as an i64.
  llvm::Value* primary(VideoOp op, llvm::Value* a, llvm::Value* b, const char* compare) {
    switch (op) {
      case VideoOp::Add:
        return B.CreateAdd(a, b);
      case VideoOp::Sub:
        return B.CreateSub(a, b);
      case VideoOp::AbsDiff:
        return B.CreateBinaryIntrinsic(llvm::Intrinsic::abs, B.CreateSub(a, b), B.getFalse());
      case VideoOp::Min:
        return B.CreateBinaryIntrinsic(llvm::Intrinsic::smin, a, b);
      case VideoOp::Max:
        return B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, a, b);
      case VideoOp::Average: {
        // (a + b + 1) >> 1 when the sum is not negative, else (a + b) >> 1 (arithmetic).
        llvm::Value* sum = B.CreateAdd(a, b);
        llvm::Value* up = B.CreateZExt(B.CreateICmpSGE(sum, B.getInt64(0)), B.getInt64Ty());
        return B.CreateAShr(B.CreateAdd(sum, up), 1);
      }
      case VideoOp::Shl:
      case VideoOp::Shr:
        return nullptr;  // shifts are done by scalar() (clamped or wrapped amounts)
      case VideoOp::Set: {
        // Each source is extended by its own type: a signed compare of the exact values.
        llvm::CmpInst::Predicate p = llvm::CmpInst::ICMP_EQ;
        std::string_view c = compare;
        if (c == "ne") p = llvm::CmpInst::ICMP_NE;
        if (c == "lt") p = llvm::CmpInst::ICMP_SLT;
        if (c == "le") p = llvm::CmpInst::ICMP_SLE;
        if (c == "gt") p = llvm::CmpInst::ICMP_SGT;
        if (c == "ge") p = llvm::CmpInst::ICMP_SGE;
        return B.CreateZExt(B.CreateICmp(p, a, b), B.getInt64Ty());
      }
    }
    return nullptr;
  }

  FunctionTranslator& t_;
  const ptx::Instruction& inst_;
  llvm::IRBuilder<>& B;
};

Status VideoTranslator::scalar() {
  VideoOp op = videoOpOf(inst_.opcode);
  const char* compare = op == VideoOp::Set ? compareOf(inst_) : nullptr;
  auto types = inst_.types();
  size_t operands = inst_.operands().size();
  // vset.atype.btype.cmp; the others .dtype.atype.btype (vshl/vshr: btype is .u32).
  bool isSet = op == VideoOp::Set;
  if ((isSet && (types.size() != 2 || compare == nullptr)) || (!isSet && types.size() != 3))
    return t_.invalid(inst_, "bad types for a scalar video instruction");
  if (operands != 3 && operands != 4) return t_.invalid(inst_, "expected d, a, b {, c}");
  ScalarType dtype = isSet ? ScalarType::U32 : types[0];
  ScalarType atype = isSet ? types[0] : types[1];
  ScalarType btype = isSet ? types[1] : types[2];
  bool sat = inst_.hasModifier("sat");
  const char* secondary = inst_.hasModifier("add")   ? "add"
                          : inst_.hasModifier("min") ? "min"
                          : inst_.hasModifier("max") ? "max"
                                                     : nullptr;
  const ptx::Operand& d = inst_.operands()[0];
  std::string_view dsel = selectorOf(d);
  if ((secondary != nullptr || !dsel.empty()) && operands != 4)
    return t_.invalid(inst_, "a secondary operation or merge needs the c operand");
  if (secondary != nullptr && !dsel.empty())
    return t_.invalid(inst_, "a merge (d.dsel) and a secondary operation exclude each other");
  bool shift = op == VideoOp::Shl || op == VideoOp::Shr;
  ROCUDA_VALUE(a, scalarSource(inst_.operands()[1], isSigned(atype)));
  ROCUDA_VALUE(b, scalarSource(inst_.operands()[2], shift ? false : isSigned(btype)));
  llvm::Value* tmp = nullptr;
  if (shift) {
    llvm::Value* amount = inst_.hasModifier("wrap")
                              ? B.CreateAnd(b, 31)
                              : B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b, B.getInt64(32));
    tmp = op == VideoOp::Shl ? B.CreateShl(a, amount) : B.CreateAShr(a, amount);
    // The operation's result is 34 bits wide: a left shift keeps its low 34 bits.
    tmp = B.CreateAShr(B.CreateShl(tmp, 30), 30);
  } else {
    tmp = primary(op, a, b, compare);
  }
  if (sat && !isSet) {
    bool sign = isSigned(dtype);
    unsigned width = dsel.empty() ? 32 : dsel[0] == 'b' ? 8 : 16;
    int64_t lo = sign ? -(int64_t(1) << (width - 1)) : 0;
    int64_t hi = sign ? (int64_t(1) << (width - 1)) - 1 : (int64_t(1) << width) - 1;
    tmp = clamp(tmp, lo, hi);
  }
  llvm::Value* result = tmp;
  if (operands == 4) {
    ROCUDA_VALUE(cWord, word(inst_.operands()[3]));
    // c takes the destination's signedness (vset's results and c are unsigned).
    llvm::Value* c = extend(cWord, isSigned(dtype));
    if (secondary != nullptr) {
      std::string_view s = secondary;
      result = s == "add"   ? B.CreateAdd(tmp, c)
               : s == "min" ? B.CreateBinaryIntrinsic(llvm::Intrinsic::smin, tmp, c)
                            : B.CreateBinaryIntrinsic(llvm::Intrinsic::smax, tmp, c);
    } else if (!dsel.empty()) {
      unsigned width = dsel[0] == 'b' ? 8 : 16;
      unsigned index = dsel.size() == 2 ? static_cast<unsigned>(dsel[1] - '0') : 99;
      if (dsel.size() != 2 || (dsel[0] != 'b' && dsel[0] != 'h') || index >= 32 / width)
        return t_.invalid(inst_, "bad destination selector ." + std::string(dsel));
      uint64_t mask = ((uint64_t(1) << width) - 1) << (index * width);
      result = B.CreateOr(B.CreateAnd(B.CreateShl(tmp, index * width), mask),
                          B.CreateAnd(c, ~mask & 0xffffffffu));
    }
  }
  return t_.write(ptx::Operand::makeRegister(d.reg()), B.CreateTrunc(result, B.getInt32Ty()),
                  ScalarType::B32);
}

Status VideoTranslator::simd(unsigned lanes) {
  VideoOp op = videoOpOf(inst_.opcode);
  const char* compare = op == VideoOp::Set ? compareOf(inst_) : nullptr;
  auto types = inst_.types();
  bool isSet = op == VideoOp::Set;
  if ((isSet && (types.size() != 2 || compare == nullptr)) || (!isSet && types.size() != 3))
    return t_.invalid(inst_, "bad types for a SIMD video instruction");
  if (inst_.operands().size() != 4) return t_.invalid(inst_, "expected d, a, b, c");
  ScalarType dtype = isSet ? ScalarType::U32 : types[0];
  ScalarType atype = isSet ? types[0] : types[1];
  ScalarType btype = isSet ? types[1] : types[2];
  bool sat = inst_.hasModifier("sat");
  bool accumulate = inst_.hasModifier("add");
  if (sat && accumulate) return t_.invalid(inst_, ".sat cannot be used with .add");
  unsigned width = 32 / lanes;
  char prefix = lanes == 2 ? 'h' : 'b';
  // A selector lists one position per lane, highest lane first: `.b3210` is the identity.
  auto positions = [&](std::string_view sel, unsigned limit,
                       std::string_view fallback) -> Result<std::vector<unsigned>> {
    if (sel.empty()) sel = fallback;
    if (sel.size() != lanes + 1 || sel[0] != prefix)
      return t_.invalid(inst_, "bad lane selector ." + std::string(sel));
    std::vector<unsigned> lane(lanes);
    for (unsigned i = 0; i < lanes; ++i) {
      char digit = sel[lanes - i];
      if (digit < '0' || digit >= '0' + static_cast<int>(limit))
        return t_.invalid(inst_, "bad lane selector ." + std::string(sel));
      lane[i] = static_cast<unsigned>(digit - '0');
    }
    return lane;
  };
  std::string defaultA = lanes == 2 ? "h10" : "b3210";
  std::string defaultB = lanes == 2 ? "h32" : "b7654";
  ROCUDA_VALUE(aWord, word(inst_.operands()[1]));
  ROCUDA_VALUE(bWord, word(inst_.operands()[2]));
  ROCUDA_VALUE(cWord, word(inst_.operands()[3]));
  auto aLanes = positions(selectorOf(inst_.operands()[1]), 2 * lanes, defaultA);
  if (!aLanes.ok()) return aLanes.error();
  auto bLanes = positions(selectorOf(inst_.operands()[2]), 2 * lanes, defaultB);
  if (!bLanes.ok()) return bLanes.error();
  // The mask names the lanes written, in any order (.b3210, .b20, .h1...; the PTX ISA's own
  // example repeats one, .b00).
  std::string_view maskText = selectorOf(inst_.operands()[0]);
  std::vector<bool> enabled(lanes, maskText.empty());
  if (!maskText.empty()) {
    if (maskText.size() < 2 || maskText.size() > lanes + 1 || maskText[0] != prefix)
      return t_.invalid(inst_, "bad lane mask ." + std::string(maskText));
    for (char digit : maskText.substr(1)) {
      unsigned lane = static_cast<unsigned>(digit - '0');
      if (digit < '0' || lane >= lanes)
        return t_.invalid(inst_, "bad lane mask ." + std::string(maskText));
      enabled[lane] = true;
    }
  }
  // The eight bytes of {b, a}: a lane at position p is field p of that 64-bit value.
  llvm::Value* pair = B.CreateOr(B.CreateZExt(aWord, B.getInt64Ty()),
                                 B.CreateShl(B.CreateZExt(bWord, B.getInt64Ty()), 32));
  auto laneOf = [&](unsigned position, bool sign) {
    llvm::Value* part = B.CreateTrunc(B.CreateLShr(pair, position * width), B.getIntNTy(width));
    return extend(part, sign);
  };
  bool sign = isSigned(dtype);
  int64_t lo = sign ? -(int64_t(1) << (width - 1)) : 0;
  int64_t hi = sign ? (int64_t(1) << (width - 1)) - 1 : (int64_t(1) << width) - 1;
  llvm::Value* c64 = B.CreateZExt(cWord, B.getInt64Ty());
  llvm::Value* result = accumulate ? c64 : static_cast<llvm::Value*>(B.getInt64(0));
  for (unsigned i = 0; i < lanes; ++i) {
    uint64_t laneMask = ((uint64_t(1) << width) - 1) << (i * width);
    if (!enabled[i]) {
      if (!accumulate) result = B.CreateOr(result, B.CreateAnd(c64, laneMask));
      continue;
    }
    llvm::Value* va = laneOf((*aLanes)[i], isSigned(atype));
    llvm::Value* vb = laneOf((*bLanes)[i], isSigned(btype));
    llvm::Value* lane = primary(op, va, vb, compare);
    if (sat && !isSet) lane = clamp(lane, lo, hi);
    if (accumulate)
      result = B.CreateAdd(result, lane);
    else
      result = B.CreateOr(result, B.CreateAnd(B.CreateShl(lane, i * width), laneMask));
  }
  return t_.write(ptx::Operand::makeRegister(inst_.operands()[0].reg()),
                  B.CreateTrunc(result, B.getInt32Ty()), ScalarType::B32);
}

// vmad.dtype.atype.btype{.po}{.sat}{.scale} d, {-}a{.asel}, {-}b{.bsel}, {-}c: (a*b) + c, the
// product negated when exactly one of a and b is, or c negated; .po adds one; .shr7 / .shr15
// scale the sum; .sat clamps to the final type's 32-bit range.
Status VideoTranslator::mad() {
  auto types = inst_.types();
  if (types.size() != 3 || inst_.operands().size() != 4)
    return t_.invalid(inst_, "expected vmad.dtype.atype.btype d, a, b, c");
  const auto& ops = inst_.operands();
  bool negateProduct = ops[1].minus() != ops[2].minus();
  bool negateC = ops[3].kind == ptx::Operand::Kind::Register && ops[3].minus();
  bool plusOne = inst_.hasModifier("po");
  if (plusOne && (negateProduct || negateC || ops[1].minus() || ops[2].minus()))
    return t_.invalid(inst_, "vmad.po takes no negated operands");
  if (negateProduct && negateC)
    return t_.invalid(inst_, "vmad negates either the product or c, not both");
  bool signedFinal = isSigned(types[1]) || isSigned(types[2]) || negateProduct || negateC;
  ROCUDA_VALUE(a, scalarSource(ops[1], isSigned(types[1])));
  ROCUDA_VALUE(b, scalarSource(ops[2], isSigned(types[2])));
  ROCUDA_VALUE(cWord, word(ops[3]));
  llvm::Type* i128 = B.getInt128Ty();
  llvm::Value* product = B.CreateMul(B.CreateSExt(a, i128), B.CreateSExt(b, i128));
  llvm::Value* c = signedFinal ? B.CreateSExt(cWord, i128) : B.CreateZExt(cWord, i128);
  if (negateProduct) product = B.CreateNeg(product);
  if (negateC) c = B.CreateNeg(c);
  llvm::Value* sum = B.CreateAdd(product, c);
  if (plusOne) sum = B.CreateAdd(sum, llvm::ConstantInt::get(i128, 1));
  unsigned scale = inst_.hasModifier("shr7") ? 7 : inst_.hasModifier("shr15") ? 15 : 0;
  if (scale != 0) sum = signedFinal ? B.CreateAShr(sum, scale) : B.CreateLShr(sum, scale);
  llvm::Value* result = B.CreateTrunc(sum, B.getInt64Ty());
  // The low 64 bits (they hold every sum: at most (2^32 - 1)^2 + 2^32 unsigned, and less than
  // 2^63 in magnitude signed), clamped to the final type's 32-bit range.
  if (inst_.hasModifier("sat"))
    result = signedFinal
                 ? clamp(result, INT32_MIN, INT32_MAX)
                 : B.CreateBinaryIntrinsic(llvm::Intrinsic::umin, result, B.getInt64(UINT32_MAX));
  return t_.write(ptx::Operand::makeRegister(ops[0].reg()), B.CreateTrunc(result, B.getInt32Ty()),
                  ScalarType::B32);
}

}  // namespace

Status translateVideoOp(FunctionTranslator& t, const ptx::Instruction& inst) {
  VideoTranslator video(t, inst);
  if (inst.opcode == ptx::Opcode::vmad) return video.mad();
  unsigned lanes = lanesOf(inst.opcode);
  return lanes == 1 ? video.scalar() : video.simd(lanes);
}

}  // namespace rocuda::compiler::detail
