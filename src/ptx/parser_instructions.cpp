// Instructions and operands: opcode and modifier decoding, registers, immediates, addresses.
#include <charconv>
#include <cstring>

#include "ptx/parser_impl.h"

namespace rocuda::ptx::detail {

namespace {

std::unordered_map<std::string_view, DecodedModifier> buildModifierTable() {
  std::unordered_map<std::string_view, DecodedModifier> table;
  auto type = [&](std::string_view name, ScalarType t) {
    DecodedModifier m;
    m.kind = DecodedModifier::Kind::Type;
    m.type = t;
    table.emplace(name, m);
  };
  auto space = [&](std::string_view name, StateSpace s) {
    DecodedModifier m;
    m.kind = DecodedModifier::Kind::Space;
    m.space = s;
    table.emplace(name, m);
  };
  auto vector = [&](std::string_view name, uint8_t width) {
    DecodedModifier m;
    m.kind = DecodedModifier::Kind::Vector;
    m.width = width;
    table.emplace(name, m);
  };
  type("b8", ScalarType::B8), type("b16", ScalarType::B16), type("b32", ScalarType::B32);
  type("b64", ScalarType::B64), type("b128", ScalarType::B128);
  type("u8", ScalarType::U8), type("u16", ScalarType::U16), type("u32", ScalarType::U32);
  type("u64", ScalarType::U64);
  type("s8", ScalarType::S8), type("s16", ScalarType::S16), type("s32", ScalarType::S32);
  type("s64", ScalarType::S64);
  type("f16", ScalarType::F16), type("f16x2", ScalarType::F16x2), type("bf16", ScalarType::BF16);
  type("bf16x2", ScalarType::BF16x2), type("tf32", ScalarType::TF32);
  type("f32", ScalarType::F32), type("f64", ScalarType::F64);
  type("e4m3", ScalarType::E4M3), type("e5m2", ScalarType::E5M2);
  type("e4m3x2", ScalarType::E4M3x2), type("e5m2x2", ScalarType::E5M2x2);
  type("e2m3x2", ScalarType::E2M3x2), type("e3m2x2", ScalarType::E3M2x2);
  type("e2m1x2", ScalarType::E2M1x2), type("ue8m0x2", ScalarType::UE8M0x2);
  type("s4", ScalarType::S4), type("u4", ScalarType::U4), type("s2", ScalarType::S2);
  type("u2", ScalarType::U2), type("b1", ScalarType::B1), type("pred", ScalarType::Pred);
  type("s16x2", ScalarType::S16x2), type("u16x2", ScalarType::U16x2);
  type("texref", ScalarType::TexRef), type("samplerref", ScalarType::SamplerRef);
  type("surfref", ScalarType::SurfRef);
  space("global", StateSpace::Global), space("shared", StateSpace::Shared);
  space("shared::cta", StateSpace::Shared), space("shared::cluster", StateSpace::SharedCluster);
  space("local", StateSpace::Local), space("const", StateSpace::Const);
  space("param", StateSpace::Param), space("param::entry", StateSpace::Param);
  space("param::func", StateSpace::Param), space("tex", StateSpace::Tex);
  space("reg", StateSpace::Reg), space("sreg", StateSpace::Sreg);
  vector("v2", 2), vector("v4", 4), vector("v8", 8), vector("v16", 16);
  return table;
}

}  // namespace

DecodedModifier decodeModifier(std::string_view name) {
  static const auto table = buildModifierTable();
  auto it = table.find(name);
  return it == table.end() ? DecodedModifier{} : it->second;
}

bool lookupOpcode(std::string_view name, Opcode& out) {
  static const std::unordered_map<std::string_view, Opcode> table = [] {
    std::unordered_map<std::string_view, Opcode> map;
#define ROCUDA_PTX_OPCODE_COUNT(name, ...) +1
    constexpr size_t count = 0 ROCUDA_PTX_OPCODES(ROCUDA_PTX_OPCODE_COUNT);
#undef ROCUDA_PTX_OPCODE_COUNT
    for (size_t i = 0; i < count; ++i) {
      auto opcode = static_cast<Opcode>(i);
      map.emplace(opcodeName(opcode), opcode);
    }
    return map;
  }();
  auto it = table.find(name);
  if (it == table.end()) return false;
  out = it->second;
  return true;
}

bool lookupSpecialRegister(std::string_view name, std::string_view component, SpecialRegister& out,
                           uint32_t& index, bool& needsComponent, Operand::VectorForm& form) {
  struct Vector {
    const char* name;
    SpecialRegister x;
  };
  static const Vector kVectors[] = {
      {"%tid", SpecialRegister::TidX},
      {"%ntid", SpecialRegister::NtidX},
      {"%ctaid", SpecialRegister::CtaidX},
      {"%nctaid", SpecialRegister::NctaidX},
      {"%clusterid", SpecialRegister::ClusterIdX},
      {"%nclusterid", SpecialRegister::NclusterIdX},
      {"%cluster_ctaid", SpecialRegister::ClusterCtaIdX},
      {"%cluster_nctaid", SpecialRegister::ClusterNctaIdX},
  };
  needsComponent = false;
  index = 0;
  form = Operand::VectorForm::Component;
  for (const auto& entry : kVectors) {
    if (name != entry.name) continue;
    needsComponent = true;
    out = entry.x;
    if (component == ".w") {  // the fourth, unused component of the .v4 register
      form = Operand::VectorForm::W;
      return true;
    }
    if (component.size() != 2 || component[0] != '.' || component[1] < 'x' || component[1] > 'z')
      return false;
    out = static_cast<SpecialRegister>(static_cast<int>(entry.x) + (component[1] - 'x'));
    return true;
  }
  // Scalar ones: the enum order matches specialRegisterName.
  static const auto scalars = [] {
    std::unordered_map<std::string_view, SpecialRegister> map;
    for (int i = static_cast<int>(SpecialRegister::ClusterCtaRank);
         i <= static_cast<int>(SpecialRegister::ReservedSmemOffsetCap); ++i) {
      auto reg = static_cast<SpecialRegister>(i);
      if (reg != SpecialRegister::Envreg && reg != SpecialRegister::Pm)  // numbered
        map.emplace(specialRegisterName(reg), reg);
    }
    return map;
  }();
  if (auto it = scalars.find(name); it != scalars.end()) {
    out = it->second;
    return true;
  }
  auto numbered = [&](std::string_view prefix, uint32_t limit, SpecialRegister reg) {
    if (name.substr(0, prefix.size()) != prefix || name.size() == prefix.size()) return false;
    std::string_view digits = name.substr(prefix.size());
    bool wide = reg == SpecialRegister::Pm && digits.size() > 3 &&
                digits.substr(digits.size() - 3) == "_64";
    if (wide) digits.remove_suffix(3);
    uint32_t value = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || value >= limit) return false;
    out = wide ? SpecialRegister::Pm64 : reg;
    index = value;
    return true;
  };
  return numbered("%envreg", 32, SpecialRegister::Envreg) ||
         numbered("%pm", 8, SpecialRegister::Pm) ||
         numbered("%reserved_smem_offset_", 2, SpecialRegister::ReservedSmemOffsetN);
}

bool Parser::parseIntegerText(std::string_view digits, const Token& token, uint64_t& out) {
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  } else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B')) {
    base = 2;
    digits.remove_prefix(2);
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    digits.remove_prefix(1);
  }
  if (!digits.empty() && (digits.back() == 'U' || digits.back() == 'u')) digits.remove_suffix(1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out, base);
  if (digits.empty() || ptr != digits.data() + digits.size()) {
    error(token, "invalid number '" + std::string(text(token)) + "'");
    return false;
  }
  if (ec == std::errc::result_out_of_range) {
    error(token, "integer constant '" + std::string(text(token)) + "' does not fit in 64 bits");
    return false;
  }
  return ec == std::errc();
}

bool Parser::parseImmediate(const Token& token, bool negative, Immediate& out) {
  std::string_view value = text(token);
  char c1 = value.size() > 1 ? value[1] : '\0';
  if (value.size() > 1 && value[0] == '0' && (c1 == 'f' || c1 == 'F' || c1 == 'd' || c1 == 'D')) {
    bool isDouble = c1 == 'd' || c1 == 'D';
    std::string_view hex = value.substr(2);
    size_t want = isDouble ? 16 : 8;
    uint64_t bits = 0;
    auto [ptr, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), bits, 16);
    if (hex.size() != want || ec != std::errc() || ptr != hex.data() + hex.size()) {
      error(token, "invalid floating-point constant '" + std::string(value) + "' (expected " +
                       std::string(value.substr(0, 2)) + " and " + std::to_string(want) +
                       " hex digits)");
      return false;
    }
    if (negative) bits ^= isDouble ? (uint64_t{1} << 63) : (uint64_t{1} << 31);
    out.kind = isDouble ? Immediate::Kind::F64Bits : Immediate::Kind::F32Bits;
    out.bits = bits;
    return true;
  }
  bool hexOrBinary =
      value.size() > 1 && value[0] == '0' && (c1 == 'x' || c1 == 'X' || c1 == 'b' || c1 == 'B');
  if (!hexOrBinary && value.find_first_of(".eE") != std::string_view::npos) {
    double parsed = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (ec != std::errc() || ptr != value.data() + value.size()) {
      error(token, "invalid number '" + std::string(value) + "'");
      return false;
    }
    out.kind = Immediate::Kind::Double;
    out.value = negative ? -parsed : parsed;
    return true;
  }
  uint64_t bits = 0;
  if (!parseIntegerText(value, token, bits)) return false;
  out.kind = Immediate::Kind::Integer;
  out.bits = negative ? uint64_t{0} - bits : bits;
  return true;
}

bool splitNumberedName(std::string_view name, std::string_view& prefix, uint32_t& number) {
  size_t digitsAt = name.size();
  while (digitsAt > 1 && name[digitsAt - 1] >= '0' && name[digitsAt - 1] <= '9') --digitsAt;
  std::string_view digits = name.substr(digitsAt);
  if (digits.empty() || digits.size() > 9 || (digits[0] == '0' && digits.size() > 1)) return false;
  prefix = name.substr(0, digitsAt);
  number = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), number);
  return true;
}

bool lookupInScope(const Scope& scope, std::string_view name, uint32_t& out) {
  auto exact = scope.registers.find(name);
  if (exact != scope.registers.end()) {
    out = exact->second;
    return true;
  }
  if (scope.ranges.empty()) return false;
  std::string_view prefix;
  uint32_t number = 0;
  if (!splitNumberedName(name, prefix, number)) return false;
  auto range = scope.ranges.find(prefix);
  if (range == scope.ranges.end() || number >= range->second.second) return false;
  out = range->second.first + number;
  return true;
}

bool Parser::resolveRegister(FunctionState& state, const Token& token, uint32_t& out) {
  std::string_view name = text(token);
  for (auto scope = state.scopes.rbegin(); scope != state.scopes.rend(); ++scope)
    if (lookupInScope(*scope, name, out)) return true;
  return false;
}

namespace {

// `.x` .. `.w` / `.r` .. `.a` of a vector register, or a video-instruction selector: `.b0`-`.b7`
// bytes (up to four of them: .b3210), `.h0`-`.h3` halves (up to two: .h10).
bool isRegisterComponent(std::string_view c) {
  if (c.size() == 1) return std::string_view("xyzwrgba").find(c[0]) != std::string_view::npos;
  if (c.size() < 2 || (c[0] != 'b' && c[0] != 'h')) return false;
  char highest = c[0] == 'b' ? '7' : '3';
  if (c.size() - 1 > (c[0] == 'b' ? 4u : 2u)) return false;
  for (char d : c.substr(1))
    if (d < '0' || d > highest) return false;
  return true;
}

}  // namespace

bool Parser::parseRegisterOrSpecial(FunctionState& state, Instruction& inst, Operand& out,
                                    bool negated, bool minus) {
  const Token& token = tok();
  uint32_t reg = 0;
  if (resolveRegister(state, token, reg)) {
    advance();
    const std::string_view* component = nullptr;
    if (at(TokenKind::Directive) && tok().offset == token.offset + token.length) {
      std::string_view text = this->text(tok()).substr(1);
      if (!isRegisterComponent(text)) {
        error(tok(), "invalid register component '." + std::string(text) + "'");
        return false;
      }
      component = arena().create(arena().intern(text));
      advance();
    }
    out = Operand::makeRegister(reg, negated, component, minus);
    return true;
  }
  if (minus) {
    error(token, "expected a register after '-', found " + describe(token));
    return false;
  }
  std::string_view component;
  const Token& next = peekTok(1);
  if (next.kind == TokenKind::Directive && next.offset == token.offset + token.length)
    component = text(next);
  uint32_t index = 0;
  bool needsComponent = false;
  SpecialRegister special = SpecialRegister::TidX;
  Operand::VectorForm form = Operand::VectorForm::Component;
  if (lookupSpecialRegister(text(token), component, special, index, needsComponent, form)) {
    out = Operand::makeSpecial(special, index, negated, form);
    advance();
    if (needsComponent) advance();
    return true;
  }
  if (needsComponent && component.empty() && inst.vectorWidth == 4) {
    // `mov.v4.u32 {a, b, c, d}, %tid`: the whole vector register.
    out = Operand::makeSpecial(special, 0, negated, Operand::VectorForm::Whole);
    advance();
    return true;
  }
  if (needsComponent) {
    error(token, "special register '" + std::string(text(token)) +
                     "' needs a component (.x, .y, .z or .w) or a .v4 instruction");
  } else {
    error(token, "undeclared register '" + std::string(text(token)) + "'");
  }
  return false;
}

std::string_view Parser::resolveSymbol(FunctionState& state, Opcode opcode, const Token& token) {
  std::string_view name = text(token);
  for (auto scope = state.scopes.rbegin(); scope != state.scopes.rend(); ++scope) {
    if (scope->locals.empty()) continue;
    auto it = scope->locals.find(std::string(name));
    if (it != scope->locals.end()) return arena().intern(state.function->locals[it->second].name);
  }
  if (state.params.count(std::string(name)) == 0)
    state.pending.push_back({name, opcode, token.offset, locOf(token)});
  return arena().intern(name);
}

const SymbolReference* Parser::newReference(std::string_view name, int64_t offset,
                                            const Operand* coordinates, size_t coordinateCount) {
  return arena().create(
      SymbolReference{name, offset, coordinates, static_cast<uint32_t>(coordinateCount)});
}

bool Parser::parseAddress(FunctionState& state, Instruction& inst, Operand& out) {
  advance();  // '['
  Address::BaseKind baseKind = Address::BaseKind::None;
  uint32_t reg = 0;
  std::string_view symbol;
  int64_t offset = 0;
  const Token& base = tok();
  bool haveBase = true;
  if (at(TokenKind::Identifier) && (text(base)[0] == '%' || resolveRegister(state, base, reg))) {
    if (!resolveRegister(state, base, reg)) {
      error(base, "undeclared register '" + std::string(text(base)) + "'");
      return false;
    }
    baseKind = Address::BaseKind::Register;
    advance();
  } else if (at(TokenKind::Identifier)) {
    baseKind = Address::BaseKind::Symbol;
    symbol = resolveSymbol(state, inst.opcode, base);
    advance();
  } else {
    haveBase = false;
  }
  if (!haveBase || at(TokenKind::Plus) || at(TokenKind::Minus)) {
    bool negative = false;
    if (haveBase) {
      negative = at(TokenKind::Minus);
      advance();
    }
    if (accept(TokenKind::Minus)) negative = !negative;
    if (!at(TokenKind::Number)) {
      error(tok(), "expected an address offset, found " + describe(tok()));
      return false;
    }
    Immediate imm;
    if (!parseImmediate(tok(), negative, imm)) return false;
    if (imm.kind != Immediate::Kind::Integer) {
      error(tok(), "address offset must be an integer");
      return false;
    }
    offset = static_cast<int64_t>(imm.bits);
    advance();
  }
  // Texture/surface forms: [tex, {coordinates}] and [tex, sampler, {coordinates}] keep the
  // parts after the base as elements.
  Operand parts[2];
  size_t partCount = 0;
  while (accept(TokenKind::Comma)) {
    if (partCount == 2) {
      error(tok(), "too many parts in a texture address (at most [tex, sampler, coordinates])");
      return false;
    }
    if (!parseOperand(state, inst, parts[partCount], 1)) return false;
    ++partCount;
  }
  const SymbolReference* ref = nullptr;
  if (baseKind == Address::BaseKind::Symbol || partCount != 0) {
    ref = newReference(symbol, offset, arena().copy(parts, partCount), partCount);
  }
  out = Operand::makeAddress(baseKind, reg, offset, ref);
  return expect(TokenKind::RBracket, "at end of address");
}

// `_`, a register (with or without '%'), a special register, or a symbol with optional offset.
bool Parser::parseNameOperand(FunctionState& state, Instruction& inst, Operand& out) {
  const Token& start = tok();
  std::string_view name = text(start);
  if (name == "_") {
    out = Operand::makeSink();
    advance();
    return true;
  }
  if (name[0] == '%') return parseRegisterOrSpecial(state, inst, out, false, false);
  // Inline asm declares registers without '%' (`.reg .pred p;`): they win over symbols.
  uint32_t reg = 0;
  if (resolveRegister(state, start, reg)) return parseRegisterOrSpecial(state, inst, out, false, false);
  if (name == "WARP_SZ") {  // predefined identifier, a run-time constant
    out = Operand::makeSpecial(SpecialRegister::WarpSize, 0);
    advance();
    return true;
  }
  std::string_view symbol = resolveSymbol(state, inst.opcode, start);
  advance();
  int64_t offset = 0;
  // sym+4, sym-4 and sym+-4 (the form the printer and nvcc use for negative offsets).
  bool plusMinus = at(TokenKind::Plus) && peekTok(1).kind == TokenKind::Minus &&
                   peekTok(2).kind == TokenKind::Number;
  if (plusMinus ||
      ((at(TokenKind::Plus) || at(TokenKind::Minus)) && peekTok(1).kind == TokenKind::Number)) {
    bool negative = plusMinus || at(TokenKind::Minus);
    advance();
    if (plusMinus) advance();
    Immediate imm;
    if (!parseImmediate(tok(), negative, imm)) return false;
    if (imm.kind != Immediate::Kind::Integer) {
      error(tok(), "symbol offset must be an integer");
      return false;
    }
    offset = static_cast<int64_t>(imm.bits);
    advance();
  }
  out = Operand::makeSymbol(newReference(symbol, offset, nullptr));
  return true;
}

bool Parser::parseOperand(FunctionState& state, Instruction& inst, Operand& out, unsigned depth) {
  const Token& start = tok();
  switch (start.kind) {
    case TokenKind::Bang:
      advance();
      if (!at(TokenKind::Identifier)) {
        error(tok(), "expected a predicate register after '!', found " + describe(tok()));
        return false;
      }
      return parseRegisterOrSpecial(state, inst, out, true, false);
    case TokenKind::Minus:
    case TokenKind::Number: {
      bool negative = accept(TokenKind::Minus);
      // `-%r` (vmad's negated sources; ptxas takes it for registers only).
      if (negative && at(TokenKind::Identifier) && (text(tok())[0] == '%' || [&] {
            uint32_t reg = 0;
            return resolveRegister(state, tok(), reg);
          }()))
        return parseRegisterOrSpecial(state, inst, out, false, true);
      if (!at(TokenKind::Number)) {
        error(tok(), "expected a number after '-', found " + describe(tok()));
        return false;
      }
      Immediate imm;
      if (!parseImmediate(tok(), negative, imm)) return false;
      out = Operand::makeImmediate(imm);
      advance();
      return true;
    }
    case TokenKind::LBracket:
      return parseAddress(state, inst, out);
    case TokenKind::LBrace:
    case TokenKind::LParen: {
      bool isVector = start.kind == TokenKind::LBrace;
      if (depth >= 2) {
        error(start, "unexpected nested operand list");
        return false;
      }
      Operand::Kind kind = isVector ? Operand::Kind::Vector : Operand::Kind::List;
      advance();
      TokenKind close = isVector ? TokenKind::RBrace : TokenKind::RParen;
      // Elements collect on a stack shared by all nesting levels: a nested list is complete
      // (and popped) before its parent appends the next element.
      size_t first = elementStack_.size();
      if (!accept(close)) {
        do {
          Operand element;
          if (!parseOperand(state, inst, element, depth + 1)) {
            elementStack_.resize(first);
            return false;
          }
          elementStack_.push_back(element);
        } while (accept(TokenKind::Comma));
        if (!expect(close, isVector ? "at end of vector operand" : "at end of operand list")) {
          elementStack_.resize(first);
          return false;
        }
      }
      size_t count = elementStack_.size() - first;
      out = Operand::makeList(kind, arena().copy(elementStack_.data() + first, count), count);
      elementStack_.resize(first);
      return true;
    }
    case TokenKind::Identifier: {
      return parseNameOperand(state, inst, out);
    }
    default:
      error(start, "expected an operand, found " + describe(start));
      return false;
  }
}

void Parser::parseModifiers(Instruction& inst) {
  modifierScratch_.clear();
  typeScratch_.clear();
  size_t i = 0;
  for (; at(TokenKind::Directive); ++i) {
    std::string_view name = text(tok()).substr(1);
    DecodedModifier d = decodeModifier(name);
    uint32_t slot = 0;
    switch (d.kind) {
      case DecodedModifier::Kind::Type:
        typeScratch_.push_back(d.type);
        slot = 1;
        break;
      case DecodedModifier::Kind::Vector:
        inst.vectorWidth = d.width;
        slot = 3;
        break;
      case DecodedModifier::Kind::Space:
        // A second space (cp.async.bulk.shared::cluster.global) stays a modifier, in order.
        if (inst.space == StateSpace::None) {
          inst.space = d.space;
          inst.spaceSpelling = spaceSpellingOf(name);
          slot = 2;
          break;
        }
        [[fallthrough]];
      case DecodedModifier::Kind::Other:
        modifierScratch_.push_back(arena().intern(name));
        break;
    }
    if (i < 16) inst.suffixLayout |= slot << (2 * i);
    advance();
  }
  inst.suffixCount = i <= 16 ? static_cast<uint8_t>(i) : 0;
}

void Parser::parseInstruction(FunctionState& state) {
  const Token& start = tok();
  Statement statement;
  Instruction& inst = statement.instruction;
  inst.loc = locOf(start);
  inst.sourceFile = locFile_;
  inst.sourceLine = locLine_;
  if (accept(TokenKind::At)) {
    inst.guardNegated = accept(TokenKind::Bang);
    const Token& guard = tok();
    uint32_t reg = 0;
    if (!at(TokenKind::Identifier) || !resolveRegister(state, guard, reg)) {
      if (at(TokenKind::Identifier)) {
        error(guard, "undeclared register '" + std::string(text(guard)) + "'");
      } else {
        error(guard, "expected a predicate register after '@', found " + describe(guard));
      }
      return skipStatement();
    }
    inst.setGuard(reg);
    advance();
  }
  const Token& opcodeToken = tok();
  if (!at(TokenKind::Identifier)) {
    error(opcodeToken, "expected an instruction, found " + describe(opcodeToken));
    return skipStatement();
  }
  if (!lookupOpcode(text(opcodeToken), inst.opcode)) {
    error(opcodeToken, "unknown instruction '" + std::string(text(opcodeToken)) + "'");
    return skipStatement();
  }
  advance();
  // The dotted opcodes (cp.async, st.async, red.async, cvt.pack) are matched first.
  if (at(TokenKind::Directive) && tok().offset == opcodeToken.offset + opcodeToken.length) {
    std::string_view first = text(tok());
    Opcode opcode = inst.opcode;
    if (first == ".async" && opcode == Opcode::cp)
      inst.opcode = Opcode::cp_async;
    else if (first == ".async" && opcode == Opcode::st)
      inst.opcode = Opcode::st_async;
    else if (first == ".async" && opcode == Opcode::red)
      inst.opcode = Opcode::red_async;
    else if (first == ".pack" && opcode == Opcode::cvt)
      inst.opcode = Opcode::cvt_pack;
    if (inst.opcode != opcode) advance();
  }
  parseModifiers(inst);
  if (modifierScratch_.size() > kMaxSuffixes || typeScratch_.size() > kMaxSuffixes) {
    error(opcodeToken, "too many suffixes on instruction '" + std::string(text(opcodeToken)) +
                           "'");
    return skipStatement();
  }
  // Operands (and their positions, for the checks below) go to reused scratch lists; the
  // instruction gets one exactly sized block in the arena.
  std::vector<Operand>& operands = operandScratch_;
  operands.clear();
  operandLocs_.clear();
  if (!at(TokenKind::Semicolon)) {
    do {
      operandLocs_.push_back(locOf(tok()));
      operands.emplace_back();
      if (!parseOperand(state, inst, operands.back(), 0)) return skipStatement();
      // `setp ... p|q, a, b`: the second destination is one more operand.
      if (operands.size() == 1 && at(TokenKind::Pipe)) inst.destinationPair = true;
      if (operands.size() > kMaxOperands) {
        error(opcodeToken, "too many operands for instruction '" +
                               std::string(text(opcodeToken)) + "'");
        return skipStatement();
      }
    } while (accept(TokenKind::Comma) || accept(TokenKind::Pipe));
  }
  if (!at(TokenKind::Semicolon)) {
    // Point just past the last token of the instruction, where the ';' belongs.
    const Token& last = tokens_[pos_ > 0 ? pos_ - 1 : 0];
    errorAt(last.offset + last.length, {last.line, last.column + last.length},
            "expected ';' after instruction, found " + describe(tok()));
    // A ';' forgotten at the end of a line: the next line is a fresh statement.
    if (tok().line == last.line || at(TokenKind::End)) return skipStatement();
  } else {
    advance();
  }
  inst.setParts(arena(), operands.data(), operands.size(), modifierScratch_.data(),
                modifierScratch_.size(), typeScratch_.data(), typeScratch_.size());
  checkInstruction(state, inst, opcodeToken);
  appendStatement(state, std::move(statement));
}

}  // namespace rocuda::ptx::detail
