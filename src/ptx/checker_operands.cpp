// Operand checks: the register types, constants, sinks and vector operands each instruction
// takes in each position, as ptxas 13.0 enforces them ("Arguments mismatch"). The rules were
// measured by assembling every declarable register type, constant kind and `_` in every operand
// position of every instruction family below (58,000 ptxas runs, one operand varied at a time).
// Where a measurement left doubt, the operand is not checked: doubt never rejects valid PTX.
#include "ptx/parser_impl.h"

namespace rocuda::ptx::detail {

namespace {

// How a register must relate to the type an operand position has.
enum class Fit : uint8_t {
  // Typed by the instruction: the same size; bit types fit anything of their size, integer
  // types each other, float types only themselves and bit types.
  Exact,
  // An integer whose type the ISA fixes (shift amounts, masks, counts): b/u/s of the size only.
  Fixed,
  // ld/st/cvt data: a register at least as wide, of a compatible kind (the ISA's "relaxed type
  // checking": narrow values live in regular-width registers).
  Widening,
};

// The kinds the rules distinguish; bf16 data has no register type of its own (bit registers
// hold it), and .f16x2 registers count as 32-bit values.
bool isPlainInteger(ScalarType type) {  // b, u, s of 8..128 bits
  return isInteger(type) && type != ScalarType::B1 && scalarTypeSize(type) >= 1 &&
         type != ScalarType::S4 && type != ScalarType::U4 && type != ScalarType::S2 &&
         type != ScalarType::U2;
}

ScalarType bitTypeOfSize(unsigned bytes) {
  switch (bytes) {
    case 1:
      return ScalarType::B8;
    case 2:
      return ScalarType::B16;
    case 4:
      return ScalarType::B32;
    case 8:
      return ScalarType::B64;
    case 16:
      return ScalarType::B128;
    default:
      return ScalarType::None;
  }
}

// Whether a register of type `reg` may stand where an operand of type `type` is expected.
// Returns true for types the measurement did not cover.
bool registerFits(ScalarType reg, ScalarType type, Fit fit) {
  unsigned size = scalarTypeSize(type), regSize = scalarTypeSize(reg);
  if (type == ScalarType::Pred)  // ptxas also takes .f16x2 registers where a typed pred is
    return reg == ScalarType::Pred || (fit == Fit::Exact && reg == ScalarType::F16x2);
  if (reg == ScalarType::Pred) return false;
  bool regInteger = isPlainInteger(reg);
  if (isPlainInteger(type)) {
    if (fit == Fit::Fixed) return regInteger && regSize == size;
    bool sizeOk = fit == Fit::Widening ? regSize >= size : regSize == size;
    if (isBitType(type)) return sizeOk;  // any non-predicate register
    if (reg == ScalarType::F16x2)        // .f16x2 registers hold 32 bits of integer
      return fit == Fit::Widening ? size <= 4 : size == 4;
    return regInteger && sizeOk;
  }
  switch (type) {
    case ScalarType::F32:
    case ScalarType::F64:
      if (reg == type) return true;
      return isBitType(reg) && (fit == Fit::Widening ? regSize >= size : regSize == size);
    case ScalarType::F16:
      if (fit == Fit::Widening) return reg == ScalarType::F16 || (isBitType(reg) && regSize >= 2);
      return reg == ScalarType::F16 || reg == ScalarType::B16;
    case ScalarType::BF16:
      return reg == ScalarType::B16;
    case ScalarType::F16x2:
    case ScalarType::U16x2:
    case ScalarType::S16x2:
      return reg == ScalarType::B32 || reg == ScalarType::F16x2;
    case ScalarType::BF16x2:
      return reg == ScalarType::B32;
    default:
      return true;
  }
}

// Elements of a `{...}` operand of ld/st/atom/red: the scalar rule, and for float data also
// the integers of the same size (ptxas types a list by its elements).
bool elementFits(ScalarType reg, ScalarType type, Fit fit) {
  if (registerFits(reg, type, fit)) return true;
  bool floatData = type == ScalarType::F32 || type == ScalarType::F64 || type == ScalarType::F16;
  return floatData && (isSignedInteger(reg) || isUnsignedInteger(reg)) &&
         scalarTypeSize(reg) == scalarTypeSize(type);
}

// Whether a constant may stand for an operand of type `type`: integers for integer and
// predicate types, 0f/0d constants for floats (and 0f for .b32, 0d for .b64), none at all for
// the half and packed types.
bool immediateFits(const Immediate& imm, ScalarType type) {
  switch (type) {
    case ScalarType::F32:
    case ScalarType::F64:
      return imm.kind != Immediate::Kind::Integer;
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::F16x2:
    case ScalarType::BF16x2:
    case ScalarType::U16x2:
    case ScalarType::S16x2:
      return false;
    default:
      break;
  }
  if (type == ScalarType::Pred || isPlainInteger(type)) {
    switch (imm.kind) {
      case Immediate::Kind::Integer:
        return true;
      case Immediate::Kind::F32Bits:
        return type == ScalarType::B32;
      case Immediate::Kind::F64Bits:
      case Immediate::Kind::Double:
        return type == ScalarType::B64;  // 1.5 is a double
    }
  }
  return true;
}

std::string constantSpelling(const Immediate& imm) {
  switch (imm.kind) {
    case Immediate::Kind::Integer:
      return "the integer constant";
    case Immediate::Kind::F32Bits:
      return "the 0f constant";
    case Immediate::Kind::F64Bits:
      return "the 0d constant";
    case Immediate::Kind::Double:
      return "the float constant";
  }
  return "the constant";
}

bool isMeasuredScalar(ScalarType type) {
  return isPlainInteger(type) || type == ScalarType::F16 || type == ScalarType::BF16 ||
         type == ScalarType::F32 || type == ScalarType::F64;
}

// One letter per operand, destinations before '>':
//   T  the instruction type, exact (types[0])       S  the second type, exact (types[1])
//   W  twice the instruction type (wide results)    F  the instruction type, fixed integer
//   U  a 32-bit integer (fixed)                     L  a 32- or 64-bit integer (fixed)
//   P  a predicate                                  D  the instruction type, widening (ld/st)
//   R  the second type, widening (cvt's source)     A  an address `[...]`
//   I  a 32-bit integer, exact (video operands)     K  as I, and no constants (SIMD video)
//   a  an address whose register may be 32-bit in any state space (the async copies)
//   -  not checked
// Lower-case t, u, p: as T, U, P, and the destination may be `_` (the result discarded).
// Empty: the instruction's operands are not checked.
std::string_view operandRoles(const Instruction& inst) {
  size_t count = inst.operands().size();
  bool wide = inst.hasModifier("wide");
  bool pair = inst.destinationPair;
  bool sync = inst.hasModifier("sync");
  switch (inst.opcode) {
    case Opcode::add:
    case Opcode::sub:
    case Opcode::min:
    case Opcode::max:
      return count == 4 ? "T>TTT" : "T>TT";
    case Opcode::and_:
    case Opcode::or_:
    case Opcode::xor_:
    case Opcode::rem:
    case Opcode::div:
    case Opcode::copysign:
    case Opcode::mul24:
    case Opcode::addc:
    case Opcode::subc:
      return "T>TT";
    case Opcode::not_:
    case Opcode::cnot:
    case Opcode::neg:
    case Opcode::abs:
    case Opcode::brev:
    case Opcode::sqrt:
    case Opcode::rsqrt:
    case Opcode::rcp:
    case Opcode::sin:
    case Opcode::cos:
    case Opcode::lg2:
    case Opcode::ex2:
    case Opcode::tanh:
    case Opcode::mov:
    case Opcode::cvta:
      return "T>T";
    case Opcode::fma:
    case Opcode::mad24:
    case Opcode::sad:
    case Opcode::madc:
    case Opcode::prmt:
    case Opcode::fns:
      return "T>TTT";
    case Opcode::mul:
      return wide ? "W>TT" : "T>TT";
    case Opcode::mad:
      return wide ? "W>TTW" : "T>TTT";
    case Opcode::shl:
    case Opcode::shr:
    case Opcode::szext:
      return "T>TU";
    case Opcode::shf:
      return "T>TTU";
    case Opcode::bfe:
      return "T>TUU";
    case Opcode::bfi:
      return "T>TTUU";
    case Opcode::popc:
    case Opcode::clz:
    case Opcode::bfind:
    case Opcode::getctarank:
      return "U>T";
    case Opcode::bmsk:
      return "U>UU";
    case Opcode::dp4a:
    case Opcode::dp2a:
      return "U>TSU";
    case Opcode::testp:
      return "P>T";
    case Opcode::selp:
      return "T>TTP";
    case Opcode::slct:
      return "T>TTS";
    case Opcode::set:
      return combinesPredicate(inst) ? "T>SSP" : "T>SS";
    case Opcode::setp: {
      // setp.lt.and.s32 p|q, a, b, c: c is the predicate it combines with. ptxas also takes a
      // predicate as the b of setp.bf16x2 (not checked).
      bool bf16x2 = !inst.types().empty() && inst.types()[0] == ScalarType::BF16x2;
      if (pair) return combinesPredicate(inst) ? "pp>TTP" : bf16x2 ? "pp>T-" : "pp>TT";
      return combinesPredicate(inst) ? "p>TTP" : bf16x2 ? "p>T-" : "p>TT";
    }
    case Opcode::lop3:  // lop3.b32 d, a, b, c, immLut; lop3.or.b32 d|p, a, b, c, immLut, q
      return pair ? "tP>TTT-P" : "t>TTT-";
    case Opcode::shfl:  // shfl.sync.idx.b32 d[|p], a, b, c, membermask
      if (sync) return pair ? "Tp>TTTU" : "T>TTTU";
      return pair ? "Tp>TTT" : "T>TTT";
    case Opcode::vote:  // vote.sync.ballot.b32 d, p, m; vote.sync.all.pred d, p, m
      if (inst.hasModifier("ballot")) return sync ? "T>PU" : "T>P";
      return sync ? "T>TU" : "T>T";
    case Opcode::match:  // match.any.sync.b32 d, a, m; match.all.sync.b32 d[|p], a, m
      if (inst.hasModifier("all")) return pair ? "up>TU" : "u>TU";
      return "U>TU";
    case Opcode::redux:
      return "F>FU";
    case Opcode::activemask:
      return "T";
    case Opcode::elect:
      return pair ? "uP>U" : "u>U";
    case Opcode::bar:
    case Opcode::barrier:
      if (inst.hasModifier("red")) return count == 4 ? "T>UUP" : "T>UP";
      return ">UU";
    case Opcode::nanosleep:
      return ">U";
    case Opcode::isspacep:
      return "P>L";
    case Opcode::mapa:
      return "T>TU";
    case Opcode::ld:
    case Opcode::ldu:
      return "D>A-";  // the third operand: an L2 cache policy
    case Opcode::st:
      return ">AD-";
    case Opcode::atom:  // atom.op.T d, [a], b{, c}{, policy}: the result may be discarded
      return inst.hasModifier("cas") ? "t>ATT-" : "t>AT-";
    case Opcode::red:
      return ">AT-";
    case Opcode::mbarrier:
      // mbarrier.op.b64: the object's address, 64-bit states, 32-bit counts and parities (a
      // remote arrive on .shared::cluster returns no state).
      if (inst.hasModifier("arrive") || inst.hasModifier("arrive_drop"))
        return inst.space == StateSpace::SharedCluster ? "->AU" : "t>AU";
      if (inst.hasModifier("test_wait") || inst.hasModifier("try_wait"))
        return inst.hasModifier("parity") ? "P>AUU" : "P>ATU";
      if (inst.hasModifier("pending_count")) return "U>T";
      return ">AU";  // init, expect_tx, complete_tx, inval
    case Opcode::vadd:
    case Opcode::vsub:
    case Opcode::vabsdiff:
    case Opcode::vmin:
    case Opcode::vmax:
    case Opcode::vshl:
    case Opcode::vshr:
    case Opcode::vmad:
      return "I>III";
    case Opcode::vset:
      return "U>IIU";
    case Opcode::vadd2:
    case Opcode::vadd4:
    case Opcode::vsub2:
    case Opcode::vsub4:
    case Opcode::vavrg2:
    case Opcode::vavrg4:
    case Opcode::vabsdiff2:
    case Opcode::vabsdiff4:
    case Opcode::vmin2:
    case Opcode::vmin4:
    case Opcode::vmax2:
    case Opcode::vmax4:
      return "K>KKK";
    case Opcode::vset2:
    case Opcode::vset4:
      return "U>KKU";
    case Opcode::cp:
    case Opcode::cp_async: {
      // cp.async [dst], [src], size...; cp.async.bulk / cp.reduce.async.bulk [dst], [src], size
      // {, [mbar]}; the rest (tensor maps, which ptxas does not type, cp.async.mbarrier.arrive,
      // whose generic address may be 32-bit) is not checked.
      bool async = inst.opcode == Opcode::cp_async || inst.hasModifier("async");
      if (!async || inst.hasModifier("tensor") || inst.hasModifier("mbarrier") ||
          inst.hasModifier("commit_group") || inst.hasModifier("wait_group") ||
          inst.hasModifier("wait_all"))
        return "";
      // Their global addresses may be 32-bit registers (ptxas takes them): `a`, not `A`.
      if (inst.hasModifier("bulk")) return inst.hasModifier("prefetch") ? ">aU" : ">aaUa";
      return ">aa";
    }
    case Opcode::multimem:  // multimem.ld_reduce d, [a]; multimem.st / .red [a], b
      if (inst.hasModifier("acc::f32")) return "";
      return inst.hasModifier("ld_reduce") ? "T>A" : ">AT";
    case Opcode::createpolicy:  // createpolicy... .b64 policy, ...: a 64-bit result
      return "T>";
    case Opcode::suld:  // suld.b.geom.bN d, [surface, {coordinates}]: data at least as wide
      return "D>-";
    case Opcode::sust:
    case Opcode::sured:
      return ">-D";
    case Opcode::cvt: {
      // cvt.frnd.D.S d, a: the destination by D, the source by S, each widening, except that
      // ptxas takes bf16 conversions exactly. Packed and sub-byte forms are not checked.
      Span<ScalarType> types = inst.types();
      if (count != 2 || types.size() != 2 || !isMeasuredScalar(types[0]) ||
          !isMeasuredScalar(types[1]))
        return "";
      bool bf16 = types[0] == ScalarType::BF16 || types[1] == ScalarType::BF16;
      return bf16 ? "T>S" : "D>R";
    }
    default:
      return "";
  }
}

// The type of a wide result: `mul.wide.s16` gives .s32.
ScalarType widened(ScalarType type) {
  unsigned bytes = 2 * scalarTypeSize(type);
  if (isSignedInteger(type)) return bytes == 4 ? ScalarType::S32 : ScalarType::S64;
  if (isUnsignedInteger(type)) return bytes == 4 ? ScalarType::U32 : ScalarType::U64;
  return bitTypeOfSize(bytes);
}

struct Expectation {
  ScalarType type = ScalarType::None;
  Fit fit = Fit::Exact;
  bool eitherWidth = false;  // L: a 32- or a 64-bit integer
};

// What role `role` asks of an operand of `inst`; type None: nothing to check.
Expectation expectationFor(const Instruction& inst, char role) {
  Span<ScalarType> types = inst.types();
  ScalarType first = types.empty() ? ScalarType::None : types[0];
  ScalarType second = types.size() > 1 ? types[1] : ScalarType::None;
  switch (role) {
    case 'T':
    case 't':
      return {first, Fit::Exact};
    case 'S':
      return {second, Fit::Exact};
    case 'F':
      return {first, Fit::Fixed};
    case 'D':
      return {first, Fit::Widening};
    case 'R':
      return {second, Fit::Widening};
    case 'U':
    case 'u':
      return {ScalarType::U32, Fit::Fixed};
    case 'L':
      return {ScalarType::U32, Fit::Fixed, true};
    case 'P':
    case 'p':
      return {ScalarType::Pred, Fit::Fixed};
    case 'I':
    case 'K':
      return {ScalarType::U32, Fit::Exact};
    case 'W':
      return {widened(first), Fit::Exact};  // wide results: twice the size
    default:
      return {};
  }
}

std::string typeText(ScalarType type) { return std::string(".") + scalarTypeName(type); }

// The declared type of a register operand; false for anything else, and for registers declared
// as vectors (`.reg .v4 .f32 %v`), which these checks leave alone.
bool scalarRegisterType(const Function& function, const Operand& op, ScalarType& out) {
  if (op.kind != Operand::Kind::Register || op.reg() >= function.registerCount()) return false;
  const RegisterDeclaration& declaration = function.declarationOf(op.reg());
  if (declaration.vectorWidth != 1) return false;
  out = declaration.type;
  return true;
}

// Matrix and texture instructions take their data in `{...}` fragments of 32-bit registers
// (64-bit where the data is .f64). The bytes of each element register of operand `index`, or 0
// where the operand is not such a fragment.
unsigned fragmentElementBytes(const Instruction& inst, size_t index) {
  Span<ScalarType> types = inst.types();
  switch (inst.opcode) {
    case Opcode::mma:  // mma.shape.layouts.D.A.B.C d, a, b, c: one type per fragment
      if (index >= 4) return 0;
      if (types.size() == 4) return types[index] == ScalarType::F64 ? 8 : 4;
      for (ScalarType type : types)
        if (type == ScalarType::F64) return 8;
      return 4;
    case Opcode::wmma:
      for (ScalarType type : types)
        if (type == ScalarType::F64) return 8;
      return 4;
    case Opcode::tex:
    case Opcode::tld4:  // tex.v4.f16 writes four 16-bit registers; coordinates are 32-bit
      if (index == 0 && !types.empty()) return scalarTypeSize(types[0]);
      return 4;
    case Opcode::ldmatrix:
    case Opcode::stmatrix:
      return 4;
    default:
      return 0;
  }
}

// ldmatrix/stmatrix .xN load N matrices, one register each (two for m16n16's bytes).
size_t matrixFragmentCount(const Instruction& inst) {
  size_t matrices = inst.hasModifier("x1")   ? 1
                    : inst.hasModifier("x2") ? 2
                    : inst.hasModifier("x4") ? 4
                                             : 0;
  return inst.hasModifier("m16n16") ? 2 * matrices : matrices;
}

}  // namespace

void Parser::checkFragments(const Function& function, const Instruction& inst) {
  Span<Operand> operands = inst.operands();
  std::string name = opcodeName(inst.opcode);
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& op = operands[i];
    if (op.kind != Operand::Kind::Vector) continue;
    unsigned bytes = fragmentElementBytes(inst, i);
    if (bytes == 0) continue;
    Span<Operand> elements = op.elements();
    if (inst.opcode == Opcode::ldmatrix || inst.opcode == Opcode::stmatrix) {
      size_t expected = matrixFragmentCount(inst);
      if (expected != 0 && elements.size() != expected) {
        errorAt(kUnknownOffset, operandLocs_[i],
                "operand " + std::to_string(i + 1) + " of '" + name + "' has " +
                    std::to_string(elements.size()) + " registers; this shape takes " +
                    std::to_string(expected));
        return;
      }
    }
    for (const Operand& element : elements) {
      ScalarType type;
      if (!scalarRegisterType(function, element, type)) continue;
      // ptxas counts a predicate as 32 bits in fragments.
      unsigned size = type == ScalarType::Pred ? 4 : scalarTypeSize(type);
      if (size == bytes) continue;
      errorAt(kUnknownOffset, operandLocs_[i],
              "operand " + std::to_string(i + 1) + " of '" + name + "' has the ." +
                  scalarTypeName(type) + " register '" + function.registerName(element.reg()) +
                  "' among its elements; the fragment holds " + std::to_string(bytes * 8) +
                  "-bit registers (ptxas: arguments mismatch)");
      return;
    }
  }
}

// Register operands whose type does not fit the instruction (ptxas's "Arguments mismatch"),
// constants of the wrong kind, results written to constants, `_` where nothing is discarded,
// and vector operands of the wrong size or with mismatched elements. One report per instruction.
void Parser::checkOperandTypes(const Function& function, const Instruction& inst) {
  std::string_view roles = operandRoles(inst);
  if (roles.empty()) return;
  size_t destinations = roles.find('>');
  if (destinations == std::string_view::npos) destinations = roles.size();
  std::string name = opcodeName(inst.opcode);
  Span<Operand> operands = inst.operands();
  auto report = [&](size_t i, const std::string& what) {
    errorAt(kUnknownOffset, operandLocs_[i],
            "operand " + std::to_string(i + 1) + " of '" + name + "' " + what);
  };
  // Registers with a component or selector (`%v.x`, `%r.b0`) are not checked.
  auto registerType = [&](const Operand& op, ScalarType& out) {
    return op.component().empty() && scalarRegisterType(function, op, out);
  };
  size_t role = 0;
  for (size_t i = 0; i < operands.size() && role < roles.size(); ++i, ++role) {
    if (roles[role] == '>') ++role;
    if (role >= roles.size()) break;
    char code = roles[role];
    if (code == '-') continue;
    const Operand& op = operands[i];
    bool destination = role < destinations;
    if (code == 'A' || code == 'a') {
      if (op.kind != Operand::Kind::Address || op.address().baseKind != Address::BaseKind::Register)
        continue;
      uint32_t base = op.address().reg;
      if (base >= function.registerCount()) continue;
      ScalarType type = function.registerType(base);
      if (!isPlainInteger(type) || type == ScalarType::B128) {
        report(i, "addresses memory through the " + typeText(type) + " register '" +
                      function.registerName(base) +
                      "' (an address is an integer: .u64, .b64, ...)");
        return;
      }
      bool generic =
          code == 'A' && (inst.space == StateSpace::None || inst.space == StateSpace::Global);
      if (generic && scalarTypeSize(type) == 4 && out_.module.addressSize == 64) {
        report(i, "addresses " +
                      std::string(inst.space == StateSpace::None ? "generic" : ".global") +
                      " memory through the 32-bit register '" + function.registerName(base) +
                      "' (64-bit addressing takes a 64-bit register)");
        return;
      }
      continue;
    }
    Expectation expected = expectationFor(inst, code);
    if (expected.type == ScalarType::None) continue;
    switch (op.kind) {
      case Operand::Kind::Sink:
        if (!destination) {
          report(i, "is '_', which only discards results");
          return;
        }
        if (code != 't' && code != 'u' && code != 'p') {
          report(i, "is '_': the result of '" + name + "' cannot be discarded");
          return;
        }
        continue;
      case Operand::Kind::Immediate:
      case Operand::Kind::Symbol:
        if (destination) {
          report(i, "is a constant or a name; the result goes to a register");
          return;
        }
        if (op.kind == Operand::Kind::Immediate && code == 'K') {
          report(i, "is a constant; SIMD video instructions take registers only");
          return;
        }
        if (op.kind == Operand::Kind::Immediate && !immediateFits(op.imm(), expected.type)) {
          std::string why = expected.type == ScalarType::F32 || expected.type == ScalarType::F64
                                ? " (write floating-point constants as 0f or 0d hex)"
                                : "";
          report(i, "is " + constantSpelling(op.imm()) + ", which does not fit " +
                        typeText(expected.type) + why);
          return;
        }
        continue;
      case Operand::Kind::Register: {
        ScalarType type;
        if (!registerType(op, type)) continue;
        bool fits = registerFits(type, expected.type, expected.fit) ||
                    (expected.eitherWidth && registerFits(type, ScalarType::U64, expected.fit));
        if (fits) continue;
        std::string what =
            expected.eitherWidth ? "a 32- or 64-bit integer" : typeText(expected.type);
        if (expected.fit == Fit::Widening) what += " (or a wider register of its kind)";
        report(i, "is the " + typeText(type) + " register '" + function.registerName(op.reg()) +
                      "', which does not fit " + what + " (ptxas: arguments mismatch)");
        return;
      }
      case Operand::Kind::Vector: {
        Span<Operand> elements = op.elements();
        if (inst.opcode == Opcode::mov && inst.vectorWidth == 1) {
          // Pack and unpack: {a, b} or {a, b, c, d} as the parts of one value.
          unsigned bytes = scalarTypeSize(expected.type);
          size_t parts = elements.size();
          ScalarType part =
              parts ? bitTypeOfSize(bytes / static_cast<unsigned>(parts)) : ScalarType::None;
          if ((parts != 2 && parts != 4) || bytes % parts != 0 || part == ScalarType::None ||
              part == ScalarType::B128) {
            report(i, "packs " + std::to_string(parts) + " elements into " +
                          typeText(expected.type) + " (2 or 4 parts of 8 bits or more)");
            return;
          }
          expected = {part, Fit::Exact};
        } else if (inst.vectorWidth > 1 && elements.size() != inst.vectorWidth) {
          report(i, "has " + std::to_string(elements.size()) + " elements; '.v" +
                        std::to_string(inst.vectorWidth) + "' takes " +
                        std::to_string(inst.vectorWidth));
          return;
        }
        ScalarType firstType = ScalarType::None;
        for (const Operand& element : elements) {
          ScalarType type;
          if (element.kind == Operand::Kind::Immediate && destination) {
            report(i, "has a constant among the elements it writes");
            return;
          }
          if (!registerType(element, type)) continue;
          if (!elementFits(type, expected.type, expected.fit)) {
            report(i, "has the " + typeText(type) + " register '" +
                          function.registerName(element.reg()) +
                          "' among its elements, which does not fit " + typeText(expected.type) +
                          " (ptxas: arguments mismatch)");
            return;
          }
          if (firstType == ScalarType::None) {
            firstType = type;
          } else if (scalarTypeSize(type) != scalarTypeSize(firstType) &&
                     type != ScalarType::Pred && firstType != ScalarType::Pred) {
            report(i, "mixes " + typeText(firstType) + " and " + typeText(type) +
                          " elements (the elements of a vector are one size)");
            return;
          }
        }
        continue;
      }
      default:
        continue;
    }
  }
}

}  // namespace rocuda::ptx::detail
