// Module-level PTX parsing: directives, functions and their bodies.
#include <algorithm>
#include <limits>

#include "ptx/parser_impl.h"

namespace rocuda::ptx {
namespace detail {

Parser::Parser(std::string_view text, std::string_view fileName, ParseResult& out)
    : text_(text), out_(out) {
  out_.module.name = fileName.empty() ? "<memory>" : std::string(fileName);
}

void Parser::run() {
  if (text_.size() >= std::numeric_limits<uint32_t>::max()) {
    errorAt(0, {1, 1}, "PTX module is too large (4 GiB or more)");
    return;
  }
  LexResult lexed = lex(text_);
  tokens_ = std::move(lexed.tokens);
  for (const Token& bad : lexed.errors) {
    error(bad, text_[bad.offset] == '"' ? "unterminated string" : "unterminated comment");
  }
  while (!at(TokenKind::End) && !tooManyErrors()) {
    size_t before = pos_;
    parseTopLevel();
    if (pos_ == before) advance();  // every iteration consumes input
  }
  checkModuleSymbols();
  std::stable_sort(out_.diagnostics.begin(), out_.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) {
                     return a.loc.line != b.loc.line ? a.loc.line < b.loc.line
                                                     : a.loc.column < b.loc.column;
                   });
}

void Parser::parseTopLevel() {
  const Token& start = tok();
  if (start.kind != TokenKind::Directive) {
    if (start.kind == TokenKind::Invalid) {
      error(start, "invalid character '" + std::string(text(start)) + "'");
    } else {
      error(start, "expected a directive at module scope, found " + describe(start));
    }
    skipStatement();
    if (at(TokenKind::RBrace)) advance();
    return;
  }
  std::string_view name = text(start);
  if (name == ".version") return parseVersion();
  if (name == ".target") return parseTarget();
  if (name == ".address_size") {
    advance();
    uint64_t size = 0;
    if (!parseUint(size)) return skipStatement();
    if (size != 32 && size != 64) error(start, ".address_size must be 32 or 64");
    out_.module.addressSize = static_cast<uint32_t>(size);
    return;
  }
  if (name == ".file") return parseFile();
  if (name == ".loc") return parseLoc();
  if (name == ".section") return skipSection();
  if (name == ".alias") return parseAlias();
  if (name == ".pragma") {
    advance();
    if (at(TokenKind::String)) checkPragma(start, text(tok()), false);
    if (!expect(TokenKind::String, "after .pragma")) return skipStatement();
    expect(TokenKind::Semicolon, "after .pragma");
    return;
  }
  parseDeclaration();
}

void Parser::parseVersion() {
  advance();
  const Token& number = tok();
  std::string_view value = text(number);
  size_t dot = value.find('.');
  uint64_t major = 0, minor = 0;
  if (number.kind != TokenKind::Number || dot == std::string_view::npos ||
      !parseIntegerText(value.substr(0, dot), number, major) ||
      !parseIntegerText(value.substr(dot + 1), number, minor) || major > 1000 || minor > 1000) {
    error(number, "expected a version number like 9.0 after .version");
    skipRestOfLine(number.line);
    return;
  }
  advance();
  out_.module.versionMajor = static_cast<uint32_t>(major);
  out_.module.versionMinor = static_cast<uint32_t>(minor);
  versionNumber_ = minor < 10 ? static_cast<unsigned>(major * 10 + minor) : 0;
}

bool parseTargetName(std::string_view name, ModuleTarget& out) {
  if (name.size() < 4 || name.substr(0, 3) != "sm_") return false;
  unsigned sm = 0;
  size_t i = 3;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9' && i < 7; ++i)
    sm = sm * 10 + static_cast<unsigned>(name[i] - '0');
  if (i == 3 || (i < name.size() && (i + 1 != name.size() || (name[i] != 'a' && name[i] != 'f'))))
    return false;
  out.known = true;
  out.name = name;
  out.sm = sm;
  return true;
}

namespace {

// The first PTX ISA version that knows each target (ptxas 13.0; older ones from the manual).
unsigned minimumVersionFor(std::string_view target) {
  static const std::pair<const char*, unsigned> kTargets[] = {
      {"sm_10", 10},  {"sm_11", 10},  {"sm_12", 12},  {"sm_13", 12},  {"sm_20", 20},
      {"sm_21", 20},  {"sm_30", 30},  {"sm_32", 40},  {"sm_35", 31},  {"sm_37", 41},
      {"sm_50", 40},  {"sm_52", 41},  {"sm_53", 42},  {"sm_60", 50},  {"sm_61", 50},
      {"sm_62", 50},  {"sm_70", 60},  {"sm_72", 61},  {"sm_75", 63},  {"sm_80", 70},
      {"sm_86", 71},  {"sm_87", 74},  {"sm_88", 73},  {"sm_89", 78},  {"sm_90", 78},
      {"sm_90a", 80}, {"sm_100", 86}, {"sm_100a", 86}, {"sm_100f", 88}, {"sm_101", 86},
      {"sm_101a", 86}, {"sm_101f", 88}, {"sm_103", 88}, {"sm_103a", 88}, {"sm_103f", 88},
      {"sm_110", 90}, {"sm_110a", 90}, {"sm_110f", 90}, {"sm_120", 87}, {"sm_120a", 87},
      {"sm_120f", 88}, {"sm_121", 88}, {"sm_121a", 88}, {"sm_121f", 88},
  };
  for (const auto& [name, version] : kTargets)
    if (target == name) return version;
  return 0;
}

}  // namespace

void Parser::parseTarget() {
  advance();
  do {
    if (!at(TokenKind::Identifier)) {
      error(tok(), "expected a target name like sm_90 after .target, found " + describe(tok()));
      skipRestOfLine(tok().line);
      return;
    }
    const Token& name = tok();
    out_.module.targets.emplace_back(text(name));
    if (text(name) == "texmode_independent") {
      requireFeature(name, "texmode_independent");
      texmodeIndependent_ = true;
    }
    if (!target_.known && parseTargetName(text(name), target_)) {
      unsigned needed = minimumVersionFor(target_.name);
      if (needed != 0 && versionNumber_ != 0 && versionNumber_ < needed)
        error(name, "PTX ISA .version " + versionText(versionNumber_) +
                        " does not support .target " + target_.name + " (it needs .version " +
                        versionText(needed) + " or later)");
    }
    advance();
  } while (accept(TokenKind::Comma));
}

void Parser::parseFile() {
  const Token& start = tok();
  advance();
  uint64_t index = 0;
  if (!parseUint(index)) return skipRestOfLine(start.line);
  if (!at(TokenKind::String)) {
    error(tok(), "expected a file name string after .file " + std::to_string(index));
    return skipRestOfLine(start.line);
  }
  std::string_view quoted = text(tok());
  advance();
  if (index < 65536) {
    auto& files = out_.module.files;
    if (files.size() <= index) files.resize(index + 1);
    files[index].assign(quoted.substr(1, quoted.size() >= 2 ? quoted.size() - 2 : 0));
  }
  // Optional ", timestamp, size".
  if (at(TokenKind::Comma) && tok().line == start.line)
    requireFeature(tok(), "timestamp and file size in .file");
  while (at(TokenKind::Comma) && tok().line == start.line) {
    advance();
    if (at(TokenKind::Number)) advance();
  }
}

void Parser::parseLoc() {
  const Token& start = tok();
  advance();
  // .loc file line column [, function_name label, inlined_at file line column]: no ';'.
  uint64_t numbers[3] = {0, 0, 0};
  for (int i = 0; i < 3; ++i) {
    if (!at(TokenKind::Number) || tok().line != start.line) {
      error(tok(), "expected file, line and column numbers after .loc");
      return skipRestOfLine(start.line);
    }
    if (!parseIntegerText(text(tok()), tok(), numbers[i])) return skipRestOfLine(start.line);
    advance();
  }
  // ptxas checks the inlining attributes only above .version 3.2.
  if (at(TokenKind::Comma) && tok().line == start.line && versionNumber_ > 32)
    requireFeature(tok(), "function_name and inlined_at in .loc");
  // Later instructions carry it (memcheck reports name the CUDA line): for code inlined from a
  // header, the line of the program's call it was inlined into.
  auto key = [](uint64_t file, uint64_t line, uint64_t column) {
    return (file & 0xffff) << 48 | (line & 0xffffffff) << 16 | (column & 0xffff);
  };
  uint32_t file = numbers[0] < 65536 ? static_cast<uint32_t>(numbers[0]) : 0;
  uint32_t line = numbers[1] <= UINT32_MAX ? static_cast<uint32_t>(numbers[1]) : 0;
  std::pair<uint32_t, uint32_t> outermost{file, line};
  while (!at(TokenKind::End) && tok().line == start.line && !at(TokenKind::Semicolon)) {
    if (at(TokenKind::Identifier) && text(tok()) == "inlined_at") {
      advance();
      uint64_t caller[3] = {0, 0, 0};
      int count = 0;
      for (; count < 3 && at(TokenKind::Number) && tok().line == start.line; ++count) {
        if (!parseIntegerText(text(tok()), tok(), caller[count])) break;
        advance();
      }
      if (count == 3 && caller[0] < 65536 && caller[1] <= UINT32_MAX) {
        auto it = inlinedCallers_.find(key(caller[0], caller[1], caller[2]));
        outermost = it != inlinedCallers_.end()
                        ? it->second
                        : std::pair<uint32_t, uint32_t>{static_cast<uint32_t>(caller[0]),
                                                        static_cast<uint32_t>(caller[1])};
        inlinedCallers_[key(numbers[0], numbers[1], numbers[2])] = outermost;
      }
      break;
    }
    advance();
  }
  locFile_ = outermost.first;
  locLine_ = outermost.second;
  skipRestOfLine(start.line);
}

void Parser::skipSection() {
  // .section .debug_xxx { ... }: debug data we do not need; braces may nest.
  const Token& start = tok();
  advance();
  if (at(TokenKind::Directive) || at(TokenKind::Identifier)) advance();
  if (!at(TokenKind::LBrace)) {
    error(tok(), "expected '{' after .section name, found " + describe(tok()));
    return skipStatement();
  }
  unsigned depth = 0;
  while (!at(TokenKind::End)) {
    if (at(TokenKind::LBrace)) ++depth;
    if (at(TokenKind::RBrace) && --depth == 0) {
      advance();
      return;
    }
    advance();
  }
  error(start, "unterminated .section (missing '}')");
}

void Parser::parseAlias() {
  requireFeature(tok(), ".alias");
  aliasLocs_.push_back(locOf(tok()));
  advance();
  std::pair<std::string, std::string> alias;
  if (!at(TokenKind::Identifier)) {
    error(tok(), "expected an alias name after .alias, found " + describe(tok()));
    return skipStatement();
  }
  alias.first = text(tok());
  advance();
  if (!expect(TokenKind::Comma, "in .alias")) return skipStatement();
  if (!at(TokenKind::Identifier)) {
    error(tok(), "expected the aliased function after ',', found " + describe(tok()));
    return skipStatement();
  }
  alias.second = text(tok());
  advance();
  out_.module.aliases.push_back(std::move(alias));
  if (!expect(TokenKind::Semicolon, "after .alias")) skipStatement();
}

static bool linkageFor(std::string_view name, Linkage& out) {
  if (name == ".visible")
    out = Linkage::Visible;
  else if (name == ".extern")
    out = Linkage::Extern;
  else if (name == ".weak")
    out = Linkage::Weak;
  else if (name == ".common")
    out = Linkage::Common;
  else
    return false;
  return true;
}

void Parser::parseDeclaration() {
  const Token& start = tok();
  Linkage linkage = Linkage::Default;
  const Token* common = nullptr;
  while (at(TokenKind::Directive) && linkageFor(text(tok()), linkage)) {
    if (linkage == Linkage::Weak) requireFeature(tok(), ".weak");
    if (linkage == Linkage::Common) requireFeature(tok(), ".common"), common = &tok();
    advance();
  }
  if (!at(TokenKind::Directive)) {
    error(tok(), "expected .entry, .func or a variable declaration, found " + describe(tok()));
    return skipStatement();
  }
  std::string_view name = text(tok());
  if (common != nullptr && name != ".global")
    error(*common, "'.common' applies to .global variables only");
  if (name == ".entry" || name == ".func") return parseFunction(linkage, name == ".entry", start);
  DecodedModifier decoded = decodeModifier(name.substr(1));
  if (decoded.space == StateSpace::Local && versionNumber_ >= 30)
    error(tok(),
          "module-scope .local variables are not allowed from PTX ISA .version 3.0 "
          "(declare them in a function)");
  if (decoded.kind == DecodedModifier::Kind::Space && decoded.space != StateSpace::Reg &&
      decoded.space != StateSpace::Param) {
    size_t first = out_.module.globals.size();
    if (!parseVariableDeclaration(decoded.space, linkage, out_.module.globals)) skipStatement();
    for (size_t i = first; i < out_.module.globals.size(); ++i) {
      const Variable& var = out_.module.globals[i];
      symbolSpaces_.emplace(arena().intern(var.name), SymbolSpace{var.space, false});
    }
    return;
  }
  error(tok(), "unknown directive '" + std::string(name) + "'");
  skipStatement();
}

void Parser::parseFunction(Linkage linkage, bool isEntry, const Token& start) {
  const char* kind = isEntry ? ".entry" : ".func";
  advance();
  Function function;
  function.isEntry = isEntry;
  function.linkage = linkage;
  function.loc = locOf(start);
  FunctionState state;
  state.scopes.emplace_back();
  if (!isEntry && at(TokenKind::LParen) && !parseParamList(function.returnParams, &state))
    return skipStatement();
  if (!at(TokenKind::Identifier)) {
    error(tok(),
          std::string("expected a function name after ") + kind + ", found " + describe(tok()));
    return skipStatement();
  }
  function.name = text(tok());
  advance();
  if (at(TokenKind::LParen) && !parseParamList(function.params, &state)) return skipStatement();
  if (!isEntry)
    for (const Variable& param : function.params)
      if (param.pointeeSpace != StateSpace::None || param.pointeeAlignment != 0)
        errorAt(kUnknownOffset, param.loc,
                "'.ptr' attributes apply to kernel parameters only, not to .func '" +
                    function.name + "'");
  const Token* blocksAreClusters = nullptr;
  while (at(TokenKind::Directive)) {
    if (atDirective(".blocksareclusters")) blocksAreClusters = &tok();
    if (!parsePerformanceDirective(function)) return skipStatement();
  }
  checkPerformanceValues(function, blocksAreClusters ? *blocksAreClusters : start);
  out_.module.functions.push_back(std::move(function));
  state.index = out_.module.functions.size() - 1;
  state.function = &out_.module.functions.back();
  // Registers declared as .reg parameters live in the function's register table.
  for (auto* list : {&state.function->returnParams, &state.function->params}) {
    for (const Variable& param : *list) {
      if (param.space == StateSpace::Reg) {
        declareRegister(state, param.name, start, param);
      } else {
        state.params.insert(param.name);
        // Parameters other than a .func's return values are read-only.
        bool input = list == &state.function->params;
        state.symbolSpaces[arena().intern(param.name)] = SymbolSpace{StateSpace::Param, input};
      }
    }
  }
  if (accept(TokenKind::Semicolon)) {
    state.function->isDeclaration = true;
  } else if (at(TokenKind::LBrace)) {
    advance();
    parseBody(state);
    resolveScopedLabels(state);
    // Growth left up to half of these unused; a module's AST is kept while it is compiled.
    state.function->body.shrink_to_fit();
    state.function->registerDeclarations.shrink_to_fit();
  } else {
    error(tok(), std::string("expected '{' or ';' after ") + kind + " " + state.function->name +
                     " header, found " + describe(tok()));
    skipStatement();
    state.function->isDeclaration = true;
  }
  // Keep only what the module-wide symbol check needs.
  state.function = nullptr;
  state.scopes.clear();
  state.exactNames.clear();
  state.rangeCounts.clear();
  state.numberedExact.clear();
  state.shadowCounts.clear();
  state.labelDefinitions.clear();
  state.statementBlock.clear();
  state.blockParent.clear();
  state.usedLocalNames.clear();
  functionStates_.push_back(std::move(state));
}

void Parser::parseBody(FunctionState& state) {
  unsigned depth = 0;
  locFile_ = locLine_ = 0;
  inlinedCallers_.clear();
  while (!tooManyErrors()) {
    if (at(TokenKind::End)) {
      error(tok(), "expected '}' at end of function '" + state.function->name + "'");
      return;
    }
    size_t before = pos_;
    if (!parseBodyStatement(state, depth)) return;  // closing brace of the body
    if (pos_ == before) advance();
  }
}

// One statement of a body; false once the body's closing brace was consumed.
bool Parser::parseBodyStatement(FunctionState& state, unsigned& depth) {
  const Token& start = tok();
  switch (start.kind) {
    case TokenKind::RBrace:
      advance();
      if (depth == 0) return false;
      --depth;
      state.scopes.pop_back();
      return true;
    case TokenKind::LBrace:
      advance();
      if (depth + 1 >= kMaxBlockDepth) {
        error(start,
              "blocks nested too deeply (more than " + std::to_string(kMaxBlockDepth) + " levels)");
        // Skip the whole block so the nesting cannot grow further.
        unsigned skip = 1;
        while (!at(TokenKind::End) && skip > 0) {
          if (at(TokenKind::LBrace)) ++skip;
          if (at(TokenKind::RBrace)) --skip;
          advance();
        }
        return true;
      }
      ++depth;
      state.scopes.emplace_back();
      state.scopes.back().block = static_cast<uint32_t>(state.blockParent.size());
      state.blockParent.push_back(state.scopes[state.scopes.size() - 2].block);
      return true;
    case TokenKind::Directive: {
      std::string_view name = text(start);
      if (name == ".reg") {
        parseRegisterDeclaration(state);
      } else if (name == ".loc") {
        parseLoc();
      } else if (name == ".file") {
        parseFile();
      } else if (name == ".pragma") {
        advance();
        if (at(TokenKind::String)) {
          checkPragma(start, text(tok()), true);
          state.function->performance.pragmas.emplace_back(text(tok()));
        }
        if (!expect(TokenKind::String, "after .pragma") ||
            !expect(TokenKind::Semicolon, "after .pragma"))
          skipStatement();
      } else if (name == ".local" || name == ".shared" || name == ".param" || name == ".const" ||
                 name == ".global" || name == ".shared::cta") {
        parseLocalDeclaration(state, decodeModifier(name.substr(1)).space);
      } else {
        error(start, "unknown directive '" + std::string(name) + "' in function body");
        skipStatement();
      }
      return true;
    }
    case TokenKind::Identifier:
      if (peekTok(1).kind == TokenKind::Colon) {
        parseLabelStatement(state);
        return true;
      }
      parseInstruction(state);
      return true;
    case TokenKind::At:
      parseInstruction(state);
      return true;
    default:
      error(start, "expected an instruction, found " + describe(start));
      skipStatement();
      return true;
  }
}

void Parser::parseLabelStatement(FunctionState& state) {
  const Token& label = tok();
  advance();
  advance();  // ':'
  for (std::string_view directive : {".callprototype", ".branchtargets", ".calltargets"})
    if (atDirective(directive)) requireFeature(tok(), directive);
  if (atDirective(".callprototype")) return parseCallPrototype(state, label);
  if (atDirective(".branchtargets")) return parseTargetList(state, label, false);
  if (atDirective(".calltargets")) return parseTargetList(state, label, true);
  std::string_view name = text(label);
  uint32_t block = state.scopes.back().block;
  auto& definitions = state.labelDefinitions[name];
  for (const LabelDefinition& previous : definitions) {
    if (previous.block != block) continue;
    error(label, "redefinition of label '" + std::string(name) + "' (first defined at line " +
                     std::to_string(previous.loc.line) + ")");
    return;
  }
  if (state.labels.count(name) && definitions.empty()) {  // a .callprototype/.branchtargets
    error(label, "redefinition of label '" + std::string(name) + "'");
    return;
  }
  state.labels.emplace(name, locOf(label));
  std::string unique(name);
  if (!definitions.empty()) {  // same name in another block: unique like registers
    unique += "#" + std::to_string(definitions.size());
    state.duplicateLabels = true;
  }
  Statement statement = Statement::makeLabel(arena(), unique, locOf(label));
  definitions.push_back(
      {block, static_cast<uint32_t>(state.function->body.size()), statement.loc()});
  appendStatement(state, std::move(statement));
}

void Parser::appendStatement(FunctionState& state, Statement&& statement) {
  state.function->body.push_back(std::move(statement));
  state.statementBlock.push_back(state.scopes.back().block);
}

// Points branch operands at the label visible from their block when a name is defined in
// several blocks (forward references are why this runs after the body).
void Parser::resolveScopedLabels(FunctionState& state) {
  if (!state.duplicateLabels) return;
  std::vector<Statement>& body = state.function->body;
  // The label name a branch in statement `index` means by `name`, or `name` itself.
  auto resolve = [&](size_t index, std::string_view name) -> std::string_view {
    auto it = state.labelDefinitions.find(name);
    if (it == state.labelDefinitions.end() || it->second.size() < 2) return name;
    for (uint32_t block = state.statementBlock[index];; block = state.blockParent[block]) {
      for (const LabelDefinition& definition : it->second)
        if (definition.block == block) return body[definition.statement].labelName();
      if (block == 0) return name;
    }
  };
  std::vector<Operand> operands;
  for (size_t i = 0; i < body.size(); ++i) {
    Instruction& inst = body[i].instruction;
    bool changed = false;
    operands.assign(inst.operands().begin(), inst.operands().end());
    for (Operand& op : operands) {
      if (op.kind != Operand::Kind::Symbol) continue;
      std::string_view target = resolve(i, op.symbol());
      if (target == op.symbol()) continue;
      op = Operand::makeSymbol(newReference(target, op.symbolOffset(), nullptr));
      changed = true;
    }
    // Branch targets are plain symbols, never elements of lists: only top-level operands.
    if (changed) inst.setOperands(arena(), operands.data(), operands.size());
  }
}

}  // namespace detail

ParseResult parseModule(std::string_view text, std::string_view fileName) {
  ParseResult result;
  detail::Parser parser(text, fileName, result);
  parser.run();
  return result;
}

}  // namespace rocuda::ptx
