// Semantic checks: operand counts (table-driven), the PTX ISA version and target each
// instruction form needs (requirements.def), and symbol resolution across the module.
#include <algorithm>
#include <cstring>
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
    // Miscellaneous.
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

const char* ordinal(size_t index) {
  static const char* const kNames[] = {"first", "second", "third", "fourth", "fifth"};
  return index < 5 ? kNames[index] : "later";
}

// ---- PTX ISA version and target requirements ----
//
// requirements.def was measured with ptxas 13.0: for every instruction form, the lowest
// `.version` and `.target` at which ptxas accepts it (ptxas checks the module's `.target`
// directive, so forms of targets older than ptxas itself still measure). A form is a set of
// suffix tokens; every row whose tokens an instruction carries applies. A token this checker
// cannot evaluate (a spelling the parser folds, like `shared::cta`) matches nothing, so unclear
// rows never reject valid PTX.

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

const std::vector<std::vector<const Requirement*>>& requirementsByOpcode() {
  static const auto table = [] {
    std::vector<std::vector<const Requirement*>> byOpcode(kOpcodeCount);
    for (const Requirement& r : kRequirements)
      if (!r.specialRegister) byOpcode[static_cast<size_t>(r.opcode)].push_back(&r);
    return byOpcode;
  }();
  return table;
}

// Whether the instruction carries one suffix token of a row. State spaces are positional: the
// first space token of a row is the instruction's space, the second one (cp.async.bulk's source)
// is kept among the modifiers.
bool hasToken(const Instruction& inst, std::string_view token, unsigned& spacesSeen) {
  if (token == "3src") return inst.operands().size() == 4;
  if (token.size() > 3 && token[0] == '@' && token[2] == ':') {  // @1:bf16: the second type
    size_t index = static_cast<size_t>(token[1] - '0');
    Span<ScalarType> types = inst.types();
    return index < types.size() && token.substr(3) == scalarTypeName(types[index]);
  }
  if (token == "generic") return inst.space == StateSpace::None;
  if (token.size() >= 2 && token[0] == 'v' && token[1] >= '1' && token[1] <= '9')
    return std::to_string(inst.vectorWidth) == token.substr(1);
  if (decodeModifier(token).kind == DecodedModifier::Kind::Space) {
    if (spacesSeen++ == 0) {
      // `.shared` and `.shared::cta` decode to one space: only plain spellings can match.
      return inst.space != StateSpace::None && token.find("::") == std::string_view::npos &&
             token == stateSpaceName(inst.space);
    }
    return inst.hasModifier(token);
  }
  if (inst.hasModifier(token)) return true;
  for (ScalarType type : inst.types())
    if (token == scalarTypeName(type)) return true;
  return false;
}

bool matches(const Instruction& inst, std::string_view tokens) {
  unsigned spacesSeen = 0;
  while (!tokens.empty()) {
    size_t space = tokens.find(' ');
    if (!hasToken(inst, tokens.substr(0, space), spacesSeen)) return false;
    if (space == std::string_view::npos) break;
    tokens.remove_prefix(space + 1);
  }
  return true;
}

bool matchesSpecialRegister(const Operand& op, std::string_view token) {
  if (op.kind != Operand::Kind::SpecialRegister) return false;
  std::string_view name = specialRegisterName(op.special());
  if (name == token) return true;
  if (name.size() > token.size() && name.substr(0, token.size()) == token &&
      name[token.size()] == '.')
    return true;  // %tid for %tid.x
  bool numbered = op.special() == SpecialRegister::Envreg || op.special() == SpecialRegister::Pm ||
                  op.special() == SpecialRegister::ReservedSmemOffsetN;
  return numbered && token.size() > name.size() && token.substr(0, name.size()) == name;
}

bool inList(std::string_view list, std::string_view target) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (list.substr(0, comma) == target) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::string versionText(unsigned version) {
  return std::to_string(version / 10) + "." + std::to_string(version % 10);
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
    for (std::string_view t = row.tokens; !t.empty();) {
      size_t space = t.find(' ');
      std::string_view token = t.substr(0, space);
      if (token[0] == '@')
        positional.push_back(token);
      else
        text += "." + std::string(token);
      if (space == std::string_view::npos) break;
      t.remove_prefix(space + 1);
    }
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
  for (const Requirement* row : requirementsByOpcode()[static_cast<size_t>(inst.opcode)])
    if (matches(inst, row->tokens)) consider(*row);
  for (const Operand& op : inst.operands())
    if (op.kind == Operand::Kind::SpecialRegister)
      for (const Requirement& row : kRequirements)
        if (row.specialRegister && matchesSpecialRegister(op, row.tokens)) consider(row);
  if (versionRow != nullptr)
    error(start, "'" + describeRow(*versionRow) + "' requires PTX ISA .version " +
                     versionText(versionRow->version) + " or later (the module declares .version " +
                     versionText(versionNumber_) + ")");
  if (targetRow != nullptr) {
    if (targetRow->only[0] != '\0' && targetRow->sm == 0) {
      std::string only(targetRow->only);
      std::replace(only.begin(), only.end(), ',', ' ');
      error(start, "'" + describeRow(*targetRow) + "' is not supported on .target " + target.name +
                       " (only on " + only + ")");
    } else {
      error(start, "'" + describeRow(*targetRow) + "' requires .target sm_" +
                       std::to_string(targetRow->sm) + " or higher (the module targets " +
                       target.name + ")");
    }
  }
}

OperandCount operandCountFor(Opcode opcode) {
  const Rule* rule = ruleFor(opcode);
  return rule ? OperandCount{rule->min, rule->max} : OperandCount{};
}

void Parser::checkInstruction(const Function& function, const Instruction& inst,
                              const Token& start) {
  std::optional<uint32_t> guard = inst.guard();
  if (guard && *guard < function.registerCount() &&
      function.registerType(*guard) != ScalarType::Pred) {
    errorAt(kUnknownOffset, inst.loc,
            "guard '" + function.registerName(*guard) + "' is not a .pred register");
  }
  checkRequirements(inst, start);
  const Rule* rule = ruleFor(inst.opcode);
  if (rule == nullptr) return;
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
