// Internal: the recursive-descent PTX parser shared by parser*.cpp and checker.cpp.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ptx/ast.h"
#include "ptx/lexer.h"
#include "ptx/parser.h"

namespace rocuda::ptx::detail {

// Limits that keep hostile input from exhausting the stack or memory.
inline constexpr unsigned kMaxBlockDepth = 256;
inline constexpr unsigned kMaxInitializerDepth = 32;
inline constexpr uint64_t kMaxRegistersPerFunction = 1u << 22;
inline constexpr size_t kMaxErrors = 10000;
inline constexpr uint32_t kUnknownOffset = UINT32_MAX;  // errorAt: derive it from the line
inline constexpr size_t kMaxOperands = 255;   // top-level operands of one instruction
inline constexpr size_t kMaxSuffixes = 255;   // modifiers, and types, of one instruction

// One `{ }` level of a function body: names declared there.
struct Scope {
  std::unordered_map<std::string_view, uint32_t> registers;  // exact name -> register index
  // `%r<100>` declares the prefix "%r" with 100 numbered registers starting at `first`.
  std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> ranges;
  std::unordered_map<std::string, uint32_t> locals;  // variable name -> Function::locals index
  uint32_t block = 0;  // id of this block (FunctionState::blockParent)
};

// A label definition; labels are block-scoped like registers (ptxas accepts `L:` in two
// sibling blocks, which inlined asm produces).
struct LabelDefinition {
  uint32_t block;
  uint32_t statement;  // index into Function::body
  SourceLocation loc;
};

// Splits "%r15" into "%r" and 15 (false unless it ends in canonical digits: %r05 does not).
bool splitNumberedName(std::string_view name, std::string_view& prefix, uint32_t& number);

// Looks a register name up in one scope (exact names first, then `%r<N>` ranges).
bool lookupInScope(const Scope& scope, std::string_view name, uint32_t& out);

// A symbol operand that did not name a local: checked once the whole module is known.
struct PendingSymbol {
  std::string_view name;
  Opcode opcode;
  uint32_t offset;
  SourceLocation loc;
};

// The state space of a variable an address may name, for the state-space checks.
struct SymbolSpace {
  StateSpace space = StateSpace::None;
  bool readOnlyParameter = false;  // an input parameter of the function
};

struct FunctionState {
  Function* function = nullptr;  // valid while its body is parsed
  size_t index = 0;              // into Module::functions
  std::vector<Scope> scopes;
  // Every register name declared so far in any scope, so that redeclarations in nested or
  // sibling blocks get unique names. Keys are views into the source (or parameter names).
  std::unordered_set<std::string_view> exactNames;
  std::unordered_map<std::string_view, uint32_t> rangeCounts;    // "%r" -> largest N of %r<N>
  std::unordered_map<std::string_view, uint32_t> numberedExact;  // "%r" -> 1 + largest n of %rn
  std::unordered_map<std::string, unsigned> shadowCounts;        // "%r5" -> renames so far
  std::unordered_set<std::string> usedLocalNames;
  std::unordered_map<std::string_view, SourceLocation> labels;  // first definition of each name
  std::unordered_map<std::string_view, std::vector<LabelDefinition>> labelDefinitions;
  std::vector<uint32_t> blockParent{0};  // block id -> enclosing block id (0: the body)
  std::vector<uint32_t> statementBlock;  // Function::body index -> block id
  bool duplicateLabels = false;
  std::unordered_set<std::string> params;  // .param parameter names
  // Parameters and locals (by their flattened names) -> state space.
  std::unordered_map<std::string_view, SymbolSpace> symbolSpaces;
  std::vector<PendingSymbol> pending;
};

// Result of decoding one `.xxx` modifier of an instruction or declaration.
struct DecodedModifier {
  enum class Kind : uint8_t { Other, Type, Space, Vector };
  Kind kind = Kind::Other;
  ScalarType type = ScalarType::None;
  StateSpace space = StateSpace::None;
  uint8_t width = 1;
};
DecodedModifier decodeModifier(std::string_view nameWithoutDot);
bool lookupOpcode(std::string_view name, Opcode& out);
// setp/set .and/.or/.xor: a predicate source more to combine the comparison with.
bool combinesPredicate(const Instruction& inst);
bool lookupSpecialRegister(std::string_view name, std::string_view component, SpecialRegister& out,
                           uint32_t& index, bool& needsComponent, Operand::VectorForm& form);

// The module's `.target` as far as the requirement checks need it: the first sm_XX entry.
struct ModuleTarget {
  bool known = false;
  std::string name;  // "sm_90a"
  unsigned sm = 0;   // 90
};
// Parses "sm_90a" / "sm_100f" / "sm_75"; false for anything else (texmode_*, debug, ...).
bool parseTargetName(std::string_view name, ModuleTarget& out);

// A PTX ISA version held as major * 10 + minor, spelled "7.8".
inline std::string versionText(unsigned version) {
  return std::to_string(version / 10) + "." + std::to_string(version % 10);
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view fileName, ParseResult& out);
  void run();

  // Token access.
  const Token& tok() const { return tokens_[pos_]; }
  const Token& peekTok(size_t ahead) const {
    size_t index = pos_ + ahead;
    return index < tokens_.size() ? tokens_[index] : tokens_.back();
  }
  std::string_view text(const Token& token) const {
    return text_.substr(token.offset, token.length);
  }
  bool at(TokenKind kind) const { return tok().kind == kind; }
  bool atDirective(std::string_view name) const {
    return at(TokenKind::Directive) && text(tok()) == name;
  }
  void advance() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool accept(TokenKind kind) {
    if (!at(kind)) return false;
    advance();
    return true;
  }
  static SourceLocation locOf(const Token& token) { return {token.line, token.column}; }

  // Diagnostics.
  void error(const Token& token, std::string message);
  void errorAt(uint32_t offset, SourceLocation loc, std::string message);
  bool expect(TokenKind kind, std::string_view context);  // "expected ';' after instruction"
  std::string describe(const Token& token) const;
  bool tooManyErrors() const { return errorCount_ >= kMaxErrors; }

  // Recovery: skip to after the next ';' (or before a '}' that closes the current block).
  void skipStatement();
  void skipRestOfLine(uint32_t line);

  // Module level (parser.cpp).
  void parseTopLevel();
  void parseVersion();
  void parseTarget();
  void parseFile();
  void parseLoc();
  void skipSection();
  void parseAlias();
  void parseDeclaration();
  void parseFunction(Linkage linkage, bool isEntry, const Token& start);
  void parseBody(FunctionState& state);
  bool parseBodyStatement(FunctionState& state, unsigned& depth);
  void parseLabelStatement(FunctionState& state);
  void appendStatement(FunctionState& state, Statement&& statement);
  void resolveScopedLabels(FunctionState& state);

  // Declarations (parser_directives.cpp).
  bool parseVariableHead(Variable& var, bool allowPtr);
  bool parseDims(Variable& var);
  bool parseInitializer(Variable& var);
  bool parseInitializerList(Variable& var, unsigned depth);
  bool parseInitializerElement(Variable& var);
  bool parseAddressInitializer(Variable& var, uint8_t maskedByte);
  bool parseVariableDeclaration(StateSpace space, Linkage linkage, std::vector<Variable>& out);
  bool parseParamList(std::vector<Variable>& out, FunctionState* state);
  bool parsePerformanceDirective(Function& function);
  bool parseUintList(std::vector<uint32_t>& out, size_t maxCount);
  bool parseUint(uint64_t& out);
  void parseRegisterDeclaration(FunctionState& state);
  void parseLocalDeclaration(FunctionState& state, StateSpace space);
  void parseCallPrototype(FunctionState& state, const Token& labelToken);
  void parseTargetList(FunctionState& state, const Token& labelToken, bool isCall);
  bool declareRegister(FunctionState& state, std::string_view name, const Token& at,
                       const Variable& head);
  bool declareRegisterRange(FunctionState& state, std::string_view prefix, uint32_t count,
                            const Token& at, const Variable& head);
  void addRegisters(FunctionState& state, std::string_view name, uint32_t count, bool isRange,
                    const Token& at, const Variable& head);
  void renameRegister(FunctionState& state, uint32_t reg, std::string_view name);

  // Instructions (parser_instructions.cpp).
  void parseInstruction(FunctionState& state);
  void parseModifiers(Instruction& inst);
  bool parseOperand(FunctionState& state, Instruction& inst, Operand& out, unsigned depth);
  bool parseAddress(FunctionState& state, Instruction& inst, Operand& out);
  bool parseNameOperand(FunctionState& state, Instruction& inst, Operand& out);
  bool parseImmediate(const Token& token, bool negative, Immediate& out);
  bool parseIntegerText(std::string_view digits, const Token& token, uint64_t& out);
  bool resolveRegister(FunctionState& state, const Token& token, uint32_t& out);
  // A register (with a component or selector: %v.x, %r.b0; minus: `-%r`) or special register.
  bool parseRegisterOrSpecial(FunctionState& state, Instruction& inst, Operand& out, bool negated,
                              bool minus);
  // The name an identifier operand refers to (a renamed local, or itself; interned), queued
  // for the module-wide check unless it is a local or a parameter.
  std::string_view resolveSymbol(FunctionState& state, Opcode opcode, const Token& token);
  const SymbolReference* newReference(std::string_view name, int64_t offset,
                                      const Operand* coordinates, size_t coordinateCount = 0);
  Arena& arena() { return out_.module.arena(); }

  // Semantic checks (checker.cpp).
  // Guard type, operand count and address operands, from the rule table in checker.cpp.
  void checkInstruction(const FunctionState& state, const Instruction& inst, const Token& start);
  // An explicit state space must be the space of the variable the address names; nothing
  // stores to .const or to a function's input parameters.
  void checkStateSpaces(const FunctionState& state, const Instruction& inst, const Token& start);
  // The PTX ISA version and target the instruction form needs (requirements.def).
  void checkRequirements(const Instruction& inst, const Token& start);
  // Register operands whose type does not fit the instruction type (ptxas's "Arguments
  // mismatch"), for the instructions where that rule is exact.
  void checkOperandTypes(const Function& function, const Instruction& inst);
  // Register sizes and counts of the `{...}` fragments of matrix and texture instructions.
  void checkFragments(const Function& function, const Instruction& inst);
  void checkModuleSymbols();
  void checkRedefinitions();
  // Directives and declarations (checker_directives.cpp).
  std::string versionRequirementMessage(std::string_view what, unsigned version) const;
  std::string targetRequirementMessage(std::string_view what, unsigned sm) const;
  // The module's .version and .target must allow the feature `name` (checker_directives.cpp's
  // table); reported at `at`.
  void requireFeature(const Token& at, std::string_view name);
  void checkPerformanceDirective(const Function& function, const Token& at);
  void checkPerformanceValues(const Function& function, const Token& blocksAreClusters);
  void checkPragma(const Token& at, std::string_view quoted, bool inFunction);
  void checkRemovedForms(const Instruction& inst, const Token& start);
  void checkAliases();

 private:
  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  ParseResult& out_;
  size_t errorCount_ = 0;
  std::vector<uint32_t> lineStarts_;  // built lazily for errors located by line only
  // Reused by parseInstruction: the operands, their positions (for the checks), the elements
  // of `{...}` / `(...)` operands (a stack), modifiers and types.
  std::vector<Operand> operandScratch_;
  std::vector<SourceLocation> operandLocs_;
  std::vector<Operand> elementStack_;
  std::vector<std::string_view> modifierScratch_;
  std::vector<ScalarType> typeScratch_;
  std::vector<FunctionState> functionStates_;  // kept until the module-wide symbol check
  uint32_t locFile_ = 0, locLine_ = 0;  // the last `.loc` of the current body
  // `.loc ..., inlined_at f l c`: each inlined location's outermost caller (the user's code, in
  // no inlined body), keyed by (file, line, column), so that instructions of code inlined from
  // headers carry the line of the program that called it. Per body.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> inlinedCallers_;
  unsigned versionNumber_ = 0;  // `.version` as major * 10 + minor; 0 before it (or unparsable)
  ModuleTarget target_;
  bool texmodeIndependent_ = false;        // `.target ..., texmode_independent`
  std::vector<SourceLocation> aliasLocs_;  // of Module::aliases, for checkAliases
  std::unordered_map<std::string_view, SymbolSpace> symbolSpaces_;  // module-scope variables
  friend class ParserAccess;
};

}  // namespace rocuda::ptx::detail
