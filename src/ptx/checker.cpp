// Semantic checks: operand counts (table-driven), the PTX ISA version and target each
// instruction form needs (requirements.def), and symbol resolution across the module.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ptx/parser_impl.h"

namespace rocuda::ptx::detail {

namespace {

// One row per checked instruction. Counts include every operand as written (`p|q` counts two);
// `address` is the 0-based position that must be a `[...]` memory operand, or -1.
struct Rule {
  Opcode opcode;
  uint8_t min;
  uint8_t max;
  int8_t address;
};

constexpr Rule kRules[] = {
    {Opcode::ret, 0, 0, -1},
    {Opcode::exit, 0, 0, -1},
    {Opcode::trap, 0, 0, -1},
    {Opcode::brkpt, 0, 0, -1},
    {Opcode::membar, 0, 0, -1},
    {Opcode::griddepcontrol, 0, 0, -1},
    {Opcode::bra, 1, 1, -1},
    {Opcode::activemask, 1, 1, -1},
    {Opcode::nanosleep, 1, 1, -1},
    {Opcode::prefetch, 1, 2, 0},
    {Opcode::prefetchu, 1, 1, 0},
    {Opcode::stacksave, 1, 1, -1},
    {Opcode::stackrestore, 1, 1, -1},
    {Opcode::setmaxnreg, 1, 1, -1},
    {Opcode::pmevent, 1, 1, -1},
    // Unary: d, a.
    {Opcode::mov, 2, 2, -1},
    {Opcode::cvta, 2, 2, -1},
    {Opcode::neg, 2, 2, -1},
    {Opcode::not_, 2, 2, -1},
    {Opcode::abs, 2, 2, -1},
    {Opcode::cnot, 2, 2, -1},
    {Opcode::popc, 2, 2, -1},
    {Opcode::clz, 2, 2, -1},
    {Opcode::brev, 2, 2, -1},
    {Opcode::bfind, 2, 2, -1},
    {Opcode::sqrt, 2, 2, -1},
    {Opcode::rsqrt, 2, 2, -1},
    {Opcode::rcp, 2, 2, -1},
    {Opcode::sin, 2, 2, -1},
    {Opcode::cos, 2, 2, -1},
    {Opcode::lg2, 2, 2, -1},
    {Opcode::ex2, 2, 2, -1},
    {Opcode::tanh, 2, 2, -1},
    {Opcode::testp, 2, 2, -1},
    {Opcode::isspacep, 2, 2, -1},
    {Opcode::getctarank, 2, 2, -1},
    {Opcode::ldu, 2, 2, 1},
    // Binary: d, a, b.
    {Opcode::add, 3, 3, -1},
    {Opcode::sub, 3, 3, -1},
    {Opcode::mul, 3, 3, -1},
    {Opcode::div, 3, 3, -1},
    {Opcode::rem, 3, 3, -1},
    {Opcode::and_, 3, 3, -1},
    {Opcode::or_, 3, 3, -1},
    {Opcode::xor_, 3, 3, -1},
    {Opcode::shl, 3, 3, -1},
    {Opcode::shr, 3, 3, -1},
    {Opcode::copysign, 3, 3, -1},
    {Opcode::mul24, 3, 3, -1},
    {Opcode::addc, 3, 3, -1},
    {Opcode::subc, 3, 3, -1},
    {Opcode::bmsk, 3, 3, -1},
    {Opcode::szext, 3, 3, -1},
    {Opcode::mapa, 3, 3, -1},
    {Opcode::redux, 3, 3, -1},
    {Opcode::min, 3, 4, -1},
    {Opcode::max, 3, 4, -1},
    // Ternary: d, a, b, c.
    {Opcode::mad, 4, 4, -1},
    {Opcode::fma, 4, 4, -1},
    {Opcode::mad24, 4, 4, -1},
    {Opcode::madc, 4, 4, -1},
    {Opcode::selp, 4, 4, -1},
    {Opcode::slct, 4, 4, -1},
    {Opcode::prmt, 4, 4, -1},
    {Opcode::shf, 4, 4, -1},
    {Opcode::bfe, 4, 4, -1},
    {Opcode::dp4a, 4, 4, -1},
    {Opcode::dp2a, 4, 4, -1},
    {Opcode::sad, 4, 4, -1},
    {Opcode::fns, 4, 4, -1},
    {Opcode::bfi, 5, 5, -1},
    {Opcode::lop3, 5, 7, -1},
    // Memory: ld d, [a] {, policy}; st [a], b {, policy}; atom d, [a], b {, c} {, policy}.
    {Opcode::ld, 2, 3, 1},
    {Opcode::st, 2, 3, 0},
    {Opcode::red, 2, 3, 0},
    {Opcode::atom, 3, 5, 1},
    // Comparison and conversion.
    {Opcode::cvt, 2, 4, -1},
    {Opcode::setp, 3, 5, -1},
    {Opcode::set, 3, 4, -1},
    // Control flow and synchronisation.
    {Opcode::call, 1, 4, -1},
    {Opcode::brx, 2, 2, -1},
    {Opcode::bar, 0, 4, -1},
    {Opcode::barrier, 0, 4, -1},
    {Opcode::fence, 0, 2, -1},
    // Warp-level.
    {Opcode::shfl, 4, 6, -1},
    {Opcode::vote, 2, 4, -1},
    {Opcode::match, 3, 4, -1},
    {Opcode::elect, 1, 3, -1},
    // Textures, surfaces and matrices: tex d[|p], [t, {c}] {, lod/grad... }.
    {Opcode::tex, 2, 5, 1},
    {Opcode::tld4, 2, 4, 1},
    {Opcode::txq, 2, 3, 1},
    {Opcode::suq, 2, 2, 1},
    {Opcode::suld, 2, 2, 1},
    {Opcode::sust, 2, 2, 0},
    {Opcode::sured, 2, 2, 0},
    {Opcode::ldmatrix, 2, 2, 1},
    {Opcode::stmatrix, 2, 2, 0},
    {Opcode::movmatrix, 2, 2, -1},
    {Opcode::mma, 4, 10, -1},
    {Opcode::wgmma, 0, 10, -1},
    {Opcode::multimem, 2, 2, -1},
    // Video: scalar d, a, b {, c} (vmad always has c); SIMD d, a, b, c.
    {Opcode::vadd, 3, 4, -1},
    {Opcode::vsub, 3, 4, -1},
    {Opcode::vabsdiff, 3, 4, -1},
    {Opcode::vmin, 3, 4, -1},
    {Opcode::vmax, 3, 4, -1},
    {Opcode::vshl, 3, 4, -1},
    {Opcode::vshr, 3, 4, -1},
    {Opcode::vset, 3, 4, -1},
    {Opcode::vmad, 4, 4, -1},
    {Opcode::vadd2, 4, 4, -1},
    {Opcode::vadd4, 4, 4, -1},
    {Opcode::vsub2, 4, 4, -1},
    {Opcode::vsub4, 4, 4, -1},
    {Opcode::vavrg2, 4, 4, -1},
    {Opcode::vavrg4, 4, 4, -1},
    {Opcode::vabsdiff2, 4, 4, -1},
    {Opcode::vabsdiff4, 4, 4, -1},
    {Opcode::vmin2, 4, 4, -1},
    {Opcode::vmin4, 4, 4, -1},
    {Opcode::vmax2, 4, 4, -1},
    {Opcode::vmax4, 4, 4, -1},
    {Opcode::vset2, 4, 4, -1},
    {Opcode::vset4, 4, 4, -1},
    // Miscellaneous.
    {Opcode::istypep, 2, 2, -1},
    {Opcode::createpolicy, 1, 4, -1},
    {Opcode::alloca, 2, 3, -1},
    {Opcode::discard, 1, 2, 0},
    {Opcode::applypriority, 1, 2, 0},
};

#define ROCUDA_PTX_OPCODE_COUNT(name, ...) +1
constexpr size_t kOpcodeCount = 0 ROCUDA_PTX_OPCODES(ROCUDA_PTX_OPCODE_COUNT);
#undef ROCUDA_PTX_OPCODE_COUNT

const Rule* ruleFor(Opcode opcode) {
  static const auto table = [] {
    std::vector<const Rule*> byOpcode(kOpcodeCount, nullptr);
    for (const Rule& rule : kRules) byOpcode[static_cast<size_t>(rule.opcode)] = &rule;
    return byOpcode;
  }();
  auto index = static_cast<size_t>(opcode);
  return index < table.size() ? table[index] : nullptr;
}

}  // namespace

bool combinesPredicate(const Instruction& inst) {
  return inst.hasModifier("and") || inst.hasModifier("or") || inst.hasModifier("xor");
}

namespace {

// The rule for one instruction: the opcode's row, narrowed where the modifiers decide how many
// operands there are (a compare-and-swap has two sources, a combining setp a predicate more...).
// `p|q` counts two. Instructions without a row return false.
bool countRuleFor(const Instruction& inst, Rule& out) {
  const Rule* row = ruleFor(inst.opcode);
  uint8_t pair = inst.destinationPair ? 1 : 0;
  bool sync = inst.hasModifier("sync");
  auto exactly = [&](uint8_t count, int8_t address = -1) {
    out = {inst.opcode, count, count, address};
    return true;
  };
  switch (inst.opcode) {
    case Opcode::atom:  // atom d, [a], b {, c (cas)} {, cache policy}
      if (inst.hasModifier("cas")) return out = {inst.opcode, 4, 5, 1}, true;
      return out = {inst.opcode, 3, 4, 1}, true;
    case Opcode::setp:  // setp p[|q], a, b {, c (.and/.or/.xor)}
      return exactly(static_cast<uint8_t>(3 + pair + combinesPredicate(inst)));
    case Opcode::shfl:  // shfl[.sync] d[|p], a, b, c {, membermask}
      return exactly(static_cast<uint8_t>(4 + pair + sync));
    case Opcode::vote:  // vote[.sync] d, {!}p {, membermask}
      return exactly(static_cast<uint8_t>(2 + sync));
    case Opcode::match:  // match.sync d[|p], a, membermask
      return exactly(static_cast<uint8_t>(3 + pair));
    case Opcode::elect:  // elect.sync d|p, membermask
      return exactly(static_cast<uint8_t>(1 + pair + 1));
    case Opcode::wmma:
      if (inst.hasModifier("load")) return out = {inst.opcode, 2, 3, 1}, true;
      if (inst.hasModifier("store")) return exactly(3, 0);
      if (inst.hasModifier("mma")) return exactly(4);
      return false;
    case Opcode::mma:  // mma d, a, b, c; .sp adds metadata and selector
      if (inst.hasModifier("sp") || inst.hasModifier("sp::ordered_metadata")) return exactly(6);
      break;
    case Opcode::mbarrier:
      // arrive{.expect_tx} state, [a] {, count}; the other operations name the object first.
      if (inst.hasModifier("arrive") || inst.hasModifier("arrive_drop"))
        return out = {inst.opcode, 2, 3, 1}, true;
      if (inst.hasModifier("init")) return exactly(2, 0);
      if (inst.hasModifier("inval")) return exactly(1, 0);
      if (inst.hasModifier("expect_tx") || inst.hasModifier("complete_tx")) return exactly(2, 0);
      if (inst.hasModifier("pending_count")) return exactly(2);
      if (inst.hasModifier("test_wait")) return exactly(3, 1);
      if (inst.hasModifier("try_wait")) return out = {inst.opcode, 3, 4, 1}, true;
      return false;
    default:
      break;
  }
  if (row == nullptr) return false;
  out = *row;
  if (pair && out.address >= 1) ++out.address;  // tex d|p, [t, {c}]: the pair comes first
  return true;
}

const char* ordinal(size_t index) {
  static const char* const kNames[] = {"first", "second", "third", "fourth", "fifth"};
  return index < 5 ? kNames[index] : "later";
}

// ---- PTX ISA version and target requirements ----
//
// requirements.def (generated by scripts/gen-ptx-requirements.py from requirements.tsv, which
// was measured with ptxas 13.0): for every instruction form, the lowest `.version` and `.target`
// at which ptxas accepts it (ptxas checks the module's `.target` directive, so forms of targets
// older than ptxas itself still measure). A form is a set of suffix tokens; every row whose
// tokens an instruction carries applies. A token this checker cannot evaluate matches nothing,
// so unclear rows never reject valid PTX.

struct Requirement {
  Opcode opcode;
  bool specialRegister;  // a SREG row: `tokens` names a special register
  const char* tokens;
  uint16_t version;      // major * 10 + minor
  uint16_t sm;           // lowest generic target, 0 for none
  const char* only;      // comma-separated arch/family-specific targets, or ""
};

// SREG rows carry a placeholder opcode; #op still spells "SREG", which marks them.
#define SREG mov
#define ROCUDA_PTX_REQUIREMENT(op, tokens, version, sm, only) \
  {Opcode::op, std::string_view(#op) == "SREG", tokens, version, sm, only},
constexpr Requirement kRequirements[] = {
#include "ptx/requirements.def"
};
#undef ROCUDA_PTX_REQUIREMENT
#undef SREG

// Calls `each` for every `separator`-separated piece of `list` (none for an empty list).
template <class Each>
void forEachPiece(std::string_view list, char separator, Each&& each) {
  while (!list.empty()) {
    size_t end = list.find(separator);
    each(list.substr(0, end));
    if (end == std::string_view::npos) break;
    list.remove_prefix(end + 1);
  }
}

// A row's tokens, decoded once. State spaces are positional: the first space token of a row is
// the instruction's space, the second one (cp.async.bulk's source) is kept among the modifiers.
struct RowToken {
  enum class Kind : uint8_t {
    Modifier,      // text among the modifiers
    AnyType,       // type among the types
    TypeAt,        // type is the index-th type suffix (@1:bf16)
    Space,         // the instruction's space is `space`
    SpelledSpace,  // ... and spelled explicitly (`.shared::cta`, `.param::entry`)
    SecondSpace,   // text among the modifiers (a second state space)
    VectorWidth,   // .vN: index is N
    ThreeSources,  // 3src: four operands (min/max with three inputs)
    NoSpace,       // generic: no state space
    Never,         // a token this checker cannot evaluate: the row never applies
  };
  Kind kind = Kind::Never;
  ScalarType type = ScalarType::None;
  StateSpace space = StateSpace::None;
  SpaceSpelling spelling = SpaceSpelling::Plain;  // SpelledSpace
  uint8_t index = 0;
  std::string_view text;
};

struct CompiledRow {
  const Requirement* row;
  std::vector<RowToken> tokens;
};

RowToken decodeToken(std::string_view token, unsigned& spacesSeen) {
  RowToken t;
  t.text = token;
  if (token == "3src") {
    t.kind = RowToken::Kind::ThreeSources;
  } else if (token == "generic") {
    t.kind = RowToken::Kind::NoSpace;
  } else if (token.size() > 3 && token[0] == '@' && token[2] == ':') {
    DecodedModifier d = decodeModifier(token.substr(3));
    t.kind = d.kind == DecodedModifier::Kind::Type ? RowToken::Kind::TypeAt : RowToken::Kind::Never;
    t.type = d.type;
    t.index = static_cast<uint8_t>(token[1] - '0');
  } else {
    DecodedModifier d = decodeModifier(token);
    switch (d.kind) {
      case DecodedModifier::Kind::Type:
        t.kind = RowToken::Kind::AnyType;
        t.type = d.type;
        break;
      case DecodedModifier::Kind::Vector:
        t.kind = RowToken::Kind::VectorWidth;
        t.index = d.width;
        break;
      case DecodedModifier::Kind::Space:
        if (spacesSeen++ != 0) {
          t.kind = RowToken::Kind::SecondSpace;
        } else if (SpaceSpelling spelling = spaceSpellingOf(token);
                   spelling != SpaceSpelling::Plain) {
          t.kind = RowToken::Kind::SpelledSpace, t.space = d.space, t.spelling = spelling;
        } else if (token.find("::") == std::string_view::npos ||
                   d.space == StateSpace::SharedCluster) {
          t.kind = RowToken::Kind::Space, t.space = d.space;
        }
        break;
      case DecodedModifier::Kind::Other:
        t.kind = RowToken::Kind::Modifier;
        break;
    }
  }
  return t;
}

struct CompiledRequirements {
  std::vector<std::vector<CompiledRow>> byOpcode;
  std::vector<const Requirement*> specialRegisters;  // the SREG rows
};

const CompiledRequirements& compiledRequirements() {
  static const CompiledRequirements table = [] {
    CompiledRequirements out;
    out.byOpcode.resize(kOpcodeCount);
    for (const Requirement& r : kRequirements) {
      if (r.specialRegister) {
        out.specialRegisters.push_back(&r);
        continue;
      }
      CompiledRow compiled{&r, {}};
      unsigned spacesSeen = 0;
      forEachPiece(r.tokens, ' ', [&](std::string_view token) {
        compiled.tokens.push_back(decodeToken(token, spacesSeen));
      });
      out.byOpcode[static_cast<size_t>(r.opcode)].push_back(std::move(compiled));
    }
    return out;
  }();
  return table;
}

bool hasToken(const Instruction& inst, const RowToken& token) {
  switch (token.kind) {
    case RowToken::Kind::Modifier:
    case RowToken::Kind::SecondSpace:
      return inst.hasModifier(token.text);
    case RowToken::Kind::AnyType:
      for (ScalarType type : inst.types())
        if (type == token.type) return true;
      return false;
    case RowToken::Kind::TypeAt: {
      Span<ScalarType> types = inst.types();
      return token.index < types.size() && types[token.index] == token.type;
    }
    case RowToken::Kind::Space:
      return inst.space == token.space;
    case RowToken::Kind::SpelledSpace:
      return inst.space == token.space && inst.spaceSpelling == token.spelling;
    case RowToken::Kind::VectorWidth:
      return inst.vectorWidth == token.index;
    case RowToken::Kind::ThreeSources:
      return inst.operands().size() == 4;
    case RowToken::Kind::NoSpace:
      return inst.space == StateSpace::None;
    case RowToken::Kind::Never:
      return false;
  }
  return false;
}

bool matches(const Instruction& inst, const CompiledRow& row) {
  for (const RowToken& token : row.tokens)
    if (!hasToken(inst, token)) return false;
  return true;
}

bool matchesSpecialRegister(const Operand& op, std::string_view token) {
  if (op.kind != Operand::Kind::SpecialRegister) return false;
  std::string_view name = specialRegisterName(op.special());
  if (name == token) return true;
  if (name.size() > token.size() && name.substr(0, token.size()) == token &&
      name[token.size()] == '.')
    return true;  // %tid for %tid.x
  return isNumberedSpecialRegister(op.special()) && token.size() > name.size() &&
         token.substr(0, name.size()) == name;
}

bool inList(std::string_view list, std::string_view target) {
  bool found = false;
  forEachPiece(list, ',', [&](std::string_view piece) { found |= piece == target; });
  return found;
}

}  // namespace

void Parser::checkRequirements(const Instruction& inst, const Token& start) {
  const ModuleTarget& target = target_;
  if (!target.known && versionNumber_ == 0) return;
  // "cvt.rn.f32.bf16": the opcode, then the row's modifiers, then its types in position order.
  auto describeRow = [&](const Requirement& row) {
    if (row.specialRegister) return std::string(row.tokens);
    std::string text = opcodeName(inst.opcode);
    std::vector<std::string_view> positional;
    forEachPiece(row.tokens, ' ', [&](std::string_view token) {
      if (token[0] == '@')
        positional.push_back(token);
      else
        text += "." + std::string(token);
    });
    std::sort(positional.begin(), positional.end());
    for (std::string_view token : positional) text += "." + std::string(token.substr(3));
    return text;
  };
  const Requirement* versionRow = nullptr;  // the highest version requirement not met
  const Requirement* targetRow = nullptr;   // the highest target requirement not met
  auto consider = [&](const Requirement& row) {
    if (versionNumber_ != 0 && versionNumber_ < row.version &&
        (versionRow == nullptr || row.version > versionRow->version))
      versionRow = &row;
    if (!target.known) return;
    bool restricted = row.only[0] != '\0';
    bool refused = restricted ? !inList(row.only, target.name) && (row.sm == 0 || target.sm < row.sm)
                              : target.sm < row.sm;
    if (refused && (targetRow == nullptr || row.sm > targetRow->sm)) targetRow = &row;
  };
  const CompiledRequirements& table = compiledRequirements();
  for (const CompiledRow& row : table.byOpcode[static_cast<size_t>(inst.opcode)])
    if (matches(inst, row)) consider(*row.row);
  for (const Operand& op : inst.operands())
    if (op.kind == Operand::Kind::SpecialRegister)
      for (const Requirement* row : table.specialRegisters)
        if (matchesSpecialRegister(op, row->tokens)) consider(*row);
  if (versionRow != nullptr)
    error(start, versionRequirementMessage(describeRow(*versionRow), versionRow->version));
  if (targetRow != nullptr) {
    if (targetRow->only[0] != '\0' && targetRow->sm == 0) {
      std::string only(targetRow->only);
      std::replace(only.begin(), only.end(), ',', ' ');
      error(start, "'" + describeRow(*targetRow) + "' is not supported on .target " + target.name +
                       " (only on " + only + ")");
    } else {
      error(start, targetRequirementMessage(describeRow(*targetRow), targetRow->sm));
    }
  }
}

void Parser::checkStateSpaces(const FunctionState& state, const Instruction& inst,
                              const Token& start) {
  bool stores = inst.opcode == Opcode::st || inst.opcode == Opcode::atom ||
                inst.opcode == Opcode::red;
  bool accesses = stores || inst.opcode == Opcode::ld || inst.opcode == Opcode::ldu;
  if (!accesses && inst.opcode != Opcode::cvta) return;
  // "ld.shared", only spelled for a diagnostic (ld and st are the commonest instructions).
  auto name = [&] { return std::string(opcodeName(inst.opcode)) + "." + stateSpaceName(inst.space); };
  if (stores && inst.space == StateSpace::Const) {
    error(start, "'" + name() + "': .const memory is read-only");
    return;
  }
  if (inst.space == StateSpace::None || inst.hasModifier("to")) return;  // generic, or cvta.to
  for (size_t i = 0; i < inst.operands().size(); ++i) {
    const Operand& op = inst.operands()[i];
    std::string_view symbol;
    if (op.kind == Operand::Kind::Address && op.address().baseKind == Address::BaseKind::Symbol)
      symbol = op.address().symbol;
    else if (inst.opcode == Opcode::cvta && op.kind == Operand::Kind::Symbol)
      symbol = op.symbol();
    else
      continue;
    const SymbolSpace* found = nullptr;
    if (auto it = state.symbolSpaces.find(symbol); it != state.symbolSpaces.end())
      found = &it->second;
    else if (auto global = symbolSpaces_.find(symbol); global != symbolSpaces_.end())
      found = &global->second;
    if (found == nullptr) continue;  // a function, or declared later: nothing to compare
    StateSpace space = found->space;
    bool compatible = space == inst.space ||
                      (inst.space == StateSpace::SharedCluster && space == StateSpace::Shared);
    if (!compatible) {
      errorAt(kUnknownOffset, operandLocs_[i],
              "'" + name() + "' addresses '" + std::string(symbol) + "', a ." +
                  stateSpaceName(space) + " variable (state space mismatch)");
      return;
    }
    if (stores && i == 0 && found->readOnlyParameter) {
      errorAt(kUnknownOffset, operandLocs_[i],
              "'" + name() + "' writes to the input parameter '" + std::string(symbol) +
                  "' (parameters are read-only; only a .func's return values are written)");
      return;
    }
  }
}

void Parser::checkInstruction(const FunctionState& state, const Instruction& inst,
                              const Token& start) {
  const Function& function = *state.function;
  std::optional<uint32_t> guard = inst.guard();
  if (guard && *guard < function.registerCount() &&
      function.registerType(*guard) != ScalarType::Pred) {
    errorAt(kUnknownOffset, inst.loc,
            "guard '" + function.registerName(*guard) + "' is not a .pred register");
  }
  checkRequirements(inst, start);
  checkRemovedForms(inst, start);
  checkOperandTypes(function, inst);
  checkFragments(function, inst);
  checkStateSpaces(state, inst, start);
  Rule counted;
  if (!countRuleFor(inst, counted)) return;
  const Rule* rule = &counted;
  Span<Operand> operands = inst.operands();
  size_t found = operands.size();
  if (found < rule->min || found > rule->max) {
    std::string expected;
    if (rule->min == rule->max)
      expected = std::to_string(rule->min);
    else if (found < rule->min)
      expected = "at least " + std::to_string(rule->min);
    else
      expected = "at most " + std::to_string(rule->max);
    const char* plural = (rule->min == 1 && rule->max == 1) ? " operand" : " operands";
    error(start, "'" + std::string(opcodeName(inst.opcode)) + "' expects " + expected + plural +
                     ", found " + std::to_string(found));
    return;
  }
  if (rule->address >= 0 && static_cast<size_t>(rule->address) < found) {
    const Operand& op = operands[rule->address];
    if (op.kind != Operand::Kind::Address) {
      errorAt(kUnknownOffset, operandLocs_[rule->address],
              "'" + std::string(opcodeName(inst.opcode)) + "' expects an address in brackets " +
                  "as its " + ordinal(rule->address) + " operand");
    }
  }
}

void Parser::checkRedefinitions() {
  std::unordered_map<std::string_view, const Function*> defined;
  for (const Function& function : out_.module.functions) {
    if (function.isDeclaration) continue;
    auto [it, inserted] = defined.emplace(function.name, &function);
    if (!inserted)
      errorAt(kUnknownOffset, function.loc,
              "redefinition of function '" + function.name + "' (first defined at line " +
                  std::to_string(it->second->loc.line) + ")");
  }
  std::unordered_map<std::string_view, const Variable*> globals;
  for (const Variable& var : out_.module.globals) {
    if (var.linkage == Linkage::Extern) continue;
    auto [it, inserted] = globals.emplace(var.name, &var);
    if (!inserted)
      errorAt(kUnknownOffset, var.loc,
              "redefinition of variable '" + var.name + "' (first defined at line " +
                  std::to_string(it->second->loc.line) + ")");
  }
}

void Parser::checkModuleSymbols() {
  checkRedefinitions();
  checkAliases();
  std::unordered_set<std::string_view> globals;
  std::unordered_set<std::string_view> functions;
  for (const auto& var : out_.module.globals) globals.insert(var.name);
  for (const auto& function : out_.module.functions) functions.insert(function.name);
  for (const auto& alias : out_.module.aliases) functions.insert(alias.first);
  for (const FunctionState& state : functionStates_) {
    for (const PendingSymbol& symbol : state.pending) {
      if (state.labels.count(symbol.name) || globals.count(symbol.name) ||
          functions.count(symbol.name))
        continue;
      std::string name(symbol.name);
      if (symbol.opcode == Opcode::bra || symbol.opcode == Opcode::brx) {
        errorAt(symbol.offset, symbol.loc, "undefined label '" + name + "'");
      } else if (symbol.opcode == Opcode::call) {
        errorAt(symbol.offset, symbol.loc,
                "call to undeclared function '" + name + "' (declare it with .extern .func)");
      } else {
        errorAt(symbol.offset, symbol.loc, "undeclared identifier '" + name + "'");
      }
    }
  }
  // Initializers may take the address of globals and functions.
  for (const auto& var : out_.module.globals) {
    for (const auto& element : var.initializer) {
      if (element.kind() != InitializerElement::Kind::SymbolAddress) continue;
      if (globals.count(element.symbol()) || functions.count(element.symbol())) continue;
      errorAt(kUnknownOffset, var.loc,
              "undeclared identifier '" + std::string(element.symbol()) + "' in initializer of '" +
                  var.name + "'");
    }
  }
}

}  // namespace rocuda::ptx::detail
