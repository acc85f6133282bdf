// Declarations: variables, parameters, registers, initializers and performance directives.
#include <algorithm>
#include <charconv>

#include "ptx/parser_impl.h"

namespace rocuda::ptx::detail {

bool Parser::parseUint(uint64_t& out) {
  const Token& number = tok();
  if (number.kind != TokenKind::Number) {
    error(number, "expected a number, found " + describe(number));
    return false;
  }
  Immediate imm;
  if (!parseImmediate(number, false, imm)) return false;
  if (imm.kind != Immediate::Kind::Integer) {
    error(number, "expected an integer, found " + describe(number));
    return false;
  }
  out = imm.bits;
  advance();
  return true;
}

bool Parser::parseUintList(std::vector<uint32_t>& out, size_t maxCount) {
  out.clear();
  do {
    const Token& at = tok();
    uint64_t value = 0;
    if (!parseUint(value)) return false;
    if (value > UINT32_MAX) {
      error(at, "value " + std::string(text(at)) + " is too large");
      return false;
    }
    if (out.size() == maxCount) {
      error(at, "too many values (at most " + std::to_string(maxCount) + ")");
      return false;
    }
    out.push_back(static_cast<uint32_t>(value));
  } while (accept(TokenKind::Comma));
  return true;
}

// `[.align N] [.ptr .space .align N] [.vN] .type [.attribute(.managed)]` in any order, then the
// name.
bool Parser::parseVariableHead(Variable& var, bool allowPtr) {
  bool sawPtr = false;
  while (at(TokenKind::Directive)) {
    const Token& mod = tok();
    std::string_view name = text(mod).substr(1);
    if (name == "align") {
      advance();
      uint64_t alignment = 0;
      if (!parseUint(alignment)) return false;
      if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > (1u << 20)) {
        error(mod, "alignment must be a power of two, found " + std::to_string(alignment));
        return false;
      }
      (sawPtr ? var.pointeeAlignment : var.alignment) = static_cast<uint32_t>(alignment);
      continue;
    }
    if (name == "ptr" && allowPtr) {
      requireFeature(mod, "kernel parameter attribute .ptr");
      sawPtr = true;
      advance();
      continue;
    }
    if (name == "attribute") {
      advance();
      if (!expect(TokenKind::LParen, "after .attribute")) return false;
      while (at(TokenKind::Directive)) {
        std::string_view attribute = text(tok());
        if (attribute == ".managed") {
          requireFeature(tok(), ".attribute(.managed)");
          if (var.space != StateSpace::Global)
            error(tok(), "'.attribute(.managed)' applies to .global variables only");
          var.managed = true;
        } else if (attribute == ".unified") {
          requireFeature(tok(), ".attribute(.unified)");
        } else {
          error(tok(), "unknown attribute '" + std::string(attribute) + "'");
        }
        advance();
        accept(TokenKind::Comma);
      }
      if (!expect(TokenKind::RParen, "after .attribute list")) return false;
      continue;
    }
    DecodedModifier decoded = decodeModifier(name);
    if (decoded.kind == DecodedModifier::Kind::Type) {
      var.type = decoded.type;
      if (var.type == ScalarType::B128) requireFeature(mod, ".b128");
      if (var.type == ScalarType::SamplerRef && !texmodeIndependent_)
        error(mod,
              "'.samplerref' needs '.target ..., texmode_independent' (samplers are part "
              "of the texture in the default texmode_unified)");
    } else if (decoded.kind == DecodedModifier::Kind::Vector) {
      var.vectorWidth = decoded.width;
    } else if (decoded.kind == DecodedModifier::Kind::Space && sawPtr) {
      var.pointeeSpace = decoded.space;
    } else {
      error(mod, "unexpected '" + std::string(text(mod)) + "' in declaration");
      return false;
    }
    advance();
  }
  if (var.type == ScalarType::None) {
    error(tok(),
          "expected a type (.b32, .u64, .f32, ...) in declaration, found " + describe(tok()));
    return false;
  }
  if (!at(TokenKind::Identifier)) {
    error(tok(), "expected a name in declaration, found " + describe(tok()));
    return false;
  }
  var.name = text(tok());
  var.loc = locOf(tok());
  advance();
  return true;
}

bool Parser::parseDims(Variable& var) {
  while (accept(TokenKind::LBracket)) {
    if (accept(TokenKind::RBracket)) {
      var.dims.push_back(0);
      continue;
    }
    uint64_t dim = 0;
    const Token& at = tok();
    if (!parseUint(dim)) return false;
    if (dim == 0) {
      error(at, "array dimension must be positive");
      return false;
    }
    var.dims.push_back(dim);
    if (!expect(TokenKind::RBracket, "after array dimension")) return false;
    if (var.dims.size() > 16) {
      error(at, "too many array dimensions");
      return false;
    }
  }
  return true;
}

// `sym`, `sym+4`, `generic(sym)`, `generic(sym)+4`: the address of a variable or function.
bool Parser::parseAddressInitializer(Variable& var, uint8_t maskedByte) {
  const Token& start = tok();
  if (!at(TokenKind::Identifier)) {
    error(start, "expected a variable or function name, found " + describe(start));
    return false;
  }
  bool generic = false;
  std::string_view symbol;
  if (text(start) == "generic" && peekTok(1).kind == TokenKind::LParen) {
    requireFeature(start, "generic()");
    advance();
    advance();
    if (!at(TokenKind::Identifier)) {
      error(tok(), "expected a variable name in generic(), found " + describe(tok()));
      return false;
    }
    generic = true;
    symbol = text(tok());
    advance();
    if (!expect(TokenKind::RParen, "after generic(name")) return false;
  } else {
    symbol = text(start);
    advance();
  }
  int64_t offset = 0;
  if (at(TokenKind::Plus) || at(TokenKind::Minus)) {
    bool negative = at(TokenKind::Minus);
    advance();
    if (!negative && accept(TokenKind::Minus)) negative = true;  // sym+-4
    uint64_t magnitude = 0;
    if (!parseUint(magnitude)) return false;
    offset = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  }
  var.initializer.push_back(InitializerElement::makeSymbolAddress(
      newReference(arena().intern(symbol), offset, nullptr), generic, maskedByte));
  return true;
}

bool Parser::parseInitializerElement(Variable& var) {
  if (at(TokenKind::Identifier))
    return parseAddressInitializer(var, InitializerElement::kWholeAddress);
  bool negative = accept(TokenKind::Minus);
  if (!at(TokenKind::Number)) {
    error(tok(), "expected a constant in initializer, found " + describe(tok()));
    return false;
  }
  const Token& number = tok();
  Immediate value;
  if (!parseImmediate(number, negative, value)) return false;
  advance();
  if (!negative && at(TokenKind::LParen)) {
    // The mask operator (PTX 7.1): `0xFF0000(sym)` is byte 2 of sym's address.
    requireFeature(number, "mask() initializer");
    uint8_t byte = 0;
    while (byte < 8 && value.bits != (0xFFull << (8 * byte))) ++byte;
    if (value.kind != Immediate::Kind::Integer || byte == 8) {
      error(number, "invalid mask '" + std::string(text(number)) +
                        "' in initializer: a mask selects one byte (0xFF, 0xFF00, ... "
                        "0xFF00000000000000)");
      byte = 0;  // read on: the rest of the declaration is still checked
    }
    if (scalarTypeSize(var.type) != 1)
      error(number, "a masked address initializes a byte: '" + var.name + "' has ." +
                        scalarTypeName(var.type) + " elements (use .b8, .u8 or .s8)");
    advance();  // '('
    if (!parseAddressInitializer(var, byte)) return false;
    return expect(TokenKind::RParen, "after the masked address");
  }
  var.initializer.push_back(InitializerElement::makeNumber(value));
  return true;
}

bool Parser::parseInitializerList(Variable& var, unsigned depth) {
  if (depth > kMaxInitializerDepth) {
    error(tok(), "initializer braces nested too deeply");
    return false;
  }
  if (!accept(TokenKind::LBrace)) return parseInitializerElement(var);
  if (accept(TokenKind::RBrace)) return true;
  do {
    if (!parseInitializerList(var, depth + 1)) return false;
  } while (accept(TokenKind::Comma));
  return expect(TokenKind::RBrace, "at end of initializer list");
}

bool Parser::parseInitializer(Variable& var) {
  var.hasInitializer = true;
  if (var.type == ScalarType::F16)
    error(tok(), "'" + var.name + "' is .f16, which takes no initial value (declare it .b16)");
  if (var.type == ScalarType::TexRef || var.type == ScalarType::SamplerRef ||
      var.type == ScalarType::SurfRef) {
    // `{ addr_mode_0 = clamp_to_edge, filter_mode = linear, width = 64 }`
    if (!expect(TokenKind::LBrace, "to start the fields of a texture or sampler")) return false;
    if (accept(TokenKind::RBrace)) return true;
    do {
      if (!at(TokenKind::Identifier)) {
        error(tok(), "expected a field name, found " + describe(tok()));
        return false;
      }
      std::string field(text(tok()));
      advance();
      if (!expect(TokenKind::Equal, "after the field name")) return false;
      if (!at(TokenKind::Identifier) && !at(TokenKind::Number)) {
        error(tok(), "expected a value for '" + field + "', found " + describe(tok()));
        return false;
      }
      var.opaqueFields.emplace_back(std::move(field), std::string(text(tok())));
      advance();
    } while (accept(TokenKind::Comma));
    return expect(TokenKind::RBrace, "at end of the fields");
  }
  return parseInitializerList(var, 0);
}

// `.global .u32 a[] = {1, 2, 3}` declares a[3]: the initializer sizes the outer dimension.
static void inferUnsizedDimension(Variable& var) {
  if (!var.hasInitializer || var.dims.empty() || var.dims[0] != 0) return;
  uint64_t inner = var.vectorWidth;
  for (size_t i = 1; i < var.dims.size(); ++i) inner *= var.dims[i] == 0 ? 1 : var.dims[i];
  if (inner == 0) inner = 1;
  var.dims[0] = (var.initializer.size() + inner - 1) / inner;
}

bool Parser::parseVariableDeclaration(StateSpace space, Linkage linkage,
                                      std::vector<Variable>& out) {
  advance();  // the state space
  Variable head;
  head.space = space;
  head.linkage = linkage;
  if (!parseVariableHead(head, false)) return false;
  while (true) {
    Variable var = head;
    if (!parseDims(var)) return false;
    if (accept(TokenKind::Equal) && !parseInitializer(var)) return false;
    inferUnsizedDimension(var);
    out.push_back(std::move(var));
    if (!accept(TokenKind::Comma)) break;
    if (!at(TokenKind::Identifier)) {
      error(tok(), "expected a name after ',' in declaration, found " + describe(tok()));
      return false;
    }
    head.name = text(tok());
    head.loc = locOf(tok());
    advance();
  }
  return expect(TokenKind::Semicolon, "after declaration");
}

bool Parser::parseParamList(std::vector<Variable>& out, FunctionState* state) {
  advance();  // '('
  if (accept(TokenKind::RParen)) return true;
  do {
    const Token& start = tok();
    Variable param;
    if (atDirective(".param")) {
      param.space = StateSpace::Param;
    } else if (atDirective(".reg")) {
      param.space = StateSpace::Reg;
    } else {
      error(start, "expected .param or .reg in parameter list, found " + describe(start));
      return false;
    }
    advance();
    if (!parseVariableHead(param, param.space == StateSpace::Param) || !parseDims(param))
      return false;
    out.push_back(std::move(param));
  } while (accept(TokenKind::Comma));
  return expect(TokenKind::RParen, "after parameter list");
}

bool Parser::parsePerformanceDirective(Function& function) {
  const Token& start = tok();
  std::string_view name = text(start);
  PerformanceDirectives& perf = function.performance;
  checkPerformanceDirective(function, start);
  advance();
  auto single = [&](std::optional<uint32_t>& slot) {
    std::vector<uint32_t> values;
    if (!parseUintList(values, 1)) return false;
    slot = values[0];
    return true;
  };
  if (name == ".maxntid") return parseUintList(perf.maxntid, 3);
  if (name == ".reqntid") return parseUintList(perf.reqntid, 3);
  if (name == ".reqnctapercluster") return parseUintList(perf.reqnctapercluster, 3);
  if (name == ".minnctapersm") return single(perf.minnctapersm);
  if (name == ".maxnctapersm") return single(perf.maxnctapersm);
  if (name == ".maxnreg") return single(perf.maxnreg);
  if (name == ".maxclusterrank") return single(perf.maxclusterrank);
  if (name == ".explicitcluster") return perf.explicitCluster = true;
  if (name == ".noreturn") return perf.noreturn = true;
  if (name == ".blocksareclusters") return perf.blocksAreClusters = true;
  if (name == ".abi_preserve" || name == ".abi_preserve_control") {
    // Registers a callee keeps for its callers (an ABI hint of ptxas; our calls save nothing).
    std::vector<uint32_t> values;
    return parseUintList(values, 1);
  }
  if (name == ".pragma") {
    if (at(TokenKind::String)) {
      checkPragma(start, text(tok()), true);
      perf.pragmas.emplace_back(text(tok()));
    }
    return expect(TokenKind::String, "after .pragma") &&
           expect(TokenKind::Semicolon, "after .pragma");
  }
  error(start, "unknown directive '" + std::string(name) + "' after function header");
  return false;
}

void Parser::addRegisters(FunctionState& state, std::string_view name, uint32_t count,
                          bool isRange, const Token& at, const Variable& head) {
  Function& function = *state.function;
  RegisterDeclaration declaration;
  declaration.name = arena().intern(name);
  declaration.first = function.registerCount();
  declaration.count = count;
  declaration.isRange = isRange;
  declaration.type = head.type;
  declaration.vectorWidth = head.vectorWidth;
  declaration.loc = locOf(at);
  function.registerDeclarations.push_back(declaration);
}

// Unique name after flattening: "%r5", then "%r5#1", "%r5#2" for redeclarations in other
// blocks ('#' cannot occur in PTX names, so renamed names never collide with real ones).
void Parser::renameRegister(FunctionState& state, uint32_t reg, std::string_view name) {
  std::string unique(name);
  unique += "#" + std::to_string(++state.shadowCounts[unique]);
  state.function->renamedRegisters.emplace_back(reg, arena().intern(unique));
}

bool Parser::declareRegister(FunctionState& state, std::string_view name, const Token& at,
                             const Variable& head) {
  Function& function = *state.function;
  if (function.registerCount() >= kMaxRegistersPerFunction) {
    error(at, "too many registers in function '" + function.name + "'");
    return false;
  }
  std::string_view prefix;
  uint32_t number = 0;
  bool numbered = splitNumberedName(name, prefix, number);
  bool taken = state.exactNames.count(name) != 0;
  if (numbered) {
    auto range = state.rangeCounts.find(prefix);
    taken |= range != state.rangeCounts.end() && number < range->second;
    uint32_t& highest = state.numberedExact[prefix];
    highest = std::max(highest, number + 1);
  }
  state.exactNames.insert(name);
  uint32_t reg = function.registerCount();
  addRegisters(state, name, 1, false, at, head);
  if (taken) renameRegister(state, reg, name);
  state.scopes.back().registers.emplace(name, reg);
  return true;
}

bool Parser::declareRegisterRange(FunctionState& state, std::string_view prefix, uint32_t count,
                                  const Token& at, const Variable& head) {
  Function& function = *state.function;
  if (count > kMaxRegistersPerFunction - function.registerCount()) {
    error(at, "too many registers in function '" + function.name + "'");
    return false;
  }
  uint32_t first = function.registerCount();
  uint32_t& declared = state.rangeCounts[prefix];
  bool mayCollide = declared != 0 || state.numberedExact.count(prefix) != 0;
  if (count != 0) addRegisters(state, prefix, count, true, at, head);
  if (mayCollide) {
    std::string name(prefix);
    for (uint32_t i = 0; i < count; ++i) {
      name.resize(prefix.size());
      name += std::to_string(i);
      if (i < declared || state.exactNames.count(name) != 0) renameRegister(state, first + i, name);
    }
  }
  declared = std::max(declared, count);
  state.scopes.back().ranges.emplace(prefix, std::make_pair(first, count));
  return true;
}

void Parser::parseRegisterDeclaration(FunctionState& state) {
  advance();  // .reg
  Variable head;
  if (!parseVariableHead(head, false)) return skipStatement();
  // parseVariableHead consumed the first name; step back to treat all names alike.
  --pos_;
  do {
    const Token& nameToken = tok();
    if (!at(TokenKind::Identifier)) {
      error(nameToken, "expected a register name, found " + describe(nameToken));
      return skipStatement();
    }
    std::string_view name = text(nameToken);
    advance();
    Scope& scope = state.scopes.back();
    uint32_t existing = 0;
    // `.reg .pred r;` and `.reg .b32 r<4>;` coexist (r vs r0..r3); two ranges of one prefix
    // in one block, or a name declared twice, do not.
    bool rangeExists = scope.ranges.count(name) != 0;
    bool exists = rangeExists || lookupInScope(scope, name, existing);
    if (accept(TokenKind::Less)) {
      exists = rangeExists;
      uint64_t count = 0;
      if (!parseUint(count) || !expect(TokenKind::Greater, "after register count"))
        return skipStatement();
      if (exists) {
        error(nameToken, "redeclaration of registers '" + std::string(name) + "<N>'");
        continue;
      }
      if (count > kMaxRegistersPerFunction) {
        error(nameToken, "too many registers in function '" + state.function->name + "'");
        return skipStatement();
      }
      if (!declareRegisterRange(state, name, static_cast<uint32_t>(count), nameToken, head))
        return skipStatement();
    } else {
      if (exists) {
        error(nameToken, "redeclaration of register '" + std::string(name) + "'");
        continue;
      }
      if (!declareRegister(state, name, nameToken, head)) return skipStatement();
    }
  } while (accept(TokenKind::Comma));
  if (!expect(TokenKind::Semicolon, "after register declaration")) skipStatement();
}

void Parser::parseLocalDeclaration(FunctionState& state, StateSpace space) {
  Function& function = *state.function;
  size_t first = function.locals.size();
  if (!parseVariableDeclaration(space, Linkage::Default, function.locals)) skipStatement();
  for (size_t i = first; i < function.locals.size(); ++i) {
    Variable& var = function.locals[i];
    // Names of locals in sibling blocks (callseq .param blocks) repeat: make them unique like
    // registers; operands find them through the scope.
    std::string original = var.name;
    if (!state.usedLocalNames.insert(var.name).second) {
      for (unsigned n = 1;; ++n) {
        std::string candidate = original + "#" + std::to_string(n);
        if (state.usedLocalNames.insert(candidate).second) {
          var.name = std::move(candidate);
          break;
        }
      }
    }
    state.scopes.back().locals[std::move(original)] = static_cast<uint32_t>(i);
    state.symbolSpaces[arena().intern(var.name)] = SymbolSpace{var.space, false};
  }
}

void Parser::parseCallPrototype(FunctionState& state, const Token& labelToken) {
  advance();  // .callprototype
  CallPrototype proto;
  proto.label = text(labelToken);
  proto.loc = locOf(labelToken);
  // .callprototype [(ret)] _ (params) [.noreturn];
  if (at(TokenKind::LParen) && !parseParamList(proto.returnParams, nullptr)) return skipStatement();
  if (!at(TokenKind::Identifier) || text(tok()) != "_") {
    error(tok(), "expected '_' in .callprototype, found " + describe(tok()));
    return skipStatement();
  }
  advance();
  if (at(TokenKind::LParen) && !parseParamList(proto.params, nullptr)) return skipStatement();
  while (atDirective(".noreturn") || atDirective(".abi_preserve") ||
         atDirective(".abi_preserve_control"))
    advance();
  if (!state.labels.emplace(text(labelToken), proto.loc).second)
    error(labelToken, "redefinition of label '" + proto.label + "'");
  state.function->callPrototypes.push_back(std::move(proto));
  if (!expect(TokenKind::Semicolon, "after .callprototype")) skipStatement();
}

void Parser::parseTargetList(FunctionState& state, const Token& labelToken, bool isCall) {
  advance();  // .branchtargets / .calltargets
  TargetList list;
  list.label = text(labelToken);
  list.isCallTargets = isCall;
  list.loc = locOf(labelToken);
  do {
    if (!at(TokenKind::Identifier)) {
      error(tok(), "expected a target name, found " + describe(tok()));
      return skipStatement();
    }
    const Token& target = tok();
    list.targets.emplace_back(text(target));
    state.pending.push_back(
        {text(target), isCall ? Opcode::call : Opcode::bra, target.offset, locOf(target)});
    advance();
  } while (accept(TokenKind::Comma));
  if (!state.labels.emplace(text(labelToken), list.loc).second)
    error(labelToken, "redefinition of label '" + list.label + "'");
  state.function->targetLists.push_back(std::move(list));
  if (!expect(TokenKind::Semicolon, "after target list")) skipStatement();
}

}  // namespace rocuda::ptx::detail
