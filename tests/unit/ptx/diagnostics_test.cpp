// Diagnostics: one negative test per kind, asserting exact line, column and message, plus
// recovery (every error of a file is reported) and the formatted output.
#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace rocuda::ptx {
namespace {

using test::kBodyFirstLine;
using test::parseKernel;

struct Expected {
  uint32_t line;
  uint32_t column;
  std::string message;
};

void expectDiagnostics(const ParseResult& result, const std::vector<Expected>& expected) {
  ASSERT_EQ(result.diagnostics.size(), expected.size()) << result.formatDiagnostics();
  for (size_t i = 0; i < expected.size(); ++i) {
    const Diagnostic& d = result.diagnostics[i];
    EXPECT_EQ(d.severity, Diagnostic::Severity::Error);
    EXPECT_EQ(d.loc.line, expected[i].line) << d.message;
    EXPECT_EQ(d.loc.column, expected[i].column) << d.message;
    EXPECT_EQ(d.message, expected[i].message);
  }
  EXPECT_TRUE(result.hasErrors());
}

void expectBodyError(std::string_view body, uint32_t column, const std::string& message,
                     uint32_t lineInBody = 0) {
  SCOPED_TRACE(std::string(body));
  expectDiagnostics(parseKernel(body), {{kBodyFirstLine + lineInBody, column, message}});
}

void expectModuleError(std::string_view text, uint32_t line, uint32_t column,
                       const std::string& message) {
  SCOPED_TRACE(std::string(text));
  expectDiagnostics(parseModule(text, "m.ptx"), {{line, column, message}});
}

TEST(PtxDiagnostics, UnknownInstruction) {
  expectBodyError("foo.u32 %r1, %r2;", 1, "unknown instruction 'foo'");
  expectBodyError("  @%p1 addd.s32 %r1, %r2, %r3;", 8, "unknown instruction 'addd'");
}

TEST(PtxDiagnostics, UndeclaredRegister) {
  expectBodyError("add.s32 %r1, %r99, 1;", 14, "undeclared register '%r99'");
  expectBodyError("@%q1 ret;", 2, "undeclared register '%q1'");
  expectBodyError("ld.global.u32 %r1, [%rd16];", 21, "undeclared register '%rd16'");
  expectBodyError("{ .reg .b32 %t; }\nmov.u32 %t, 1;", 9, "undeclared register '%t'", 1);
}

TEST(PtxDiagnostics, MissingSemicolon) {
  expectBodyError("add.s32 %r1, %r2, 1\nret;", 20, "expected ';' after instruction, found 'ret'");
  // At the end of a line, the next line still parses (and is checked) as a statement.
  ParseResult r = parseKernel("mov.u32 %r1, 1\nL: bra.uni L;");
  ASSERT_EQ(r.diagnostics.size(), 1u) << r.formatDiagnostics();
  EXPECT_EQ(r.diagnostics[0].loc.column, 15u);
  ASSERT_EQ(test::firstFunction(r)->body.size(), 3u);
  EXPECT_EQ(test::firstFunction(r)->body[1].kind(), Statement::Kind::Label);
}

TEST(PtxDiagnostics, UndefinedLabel) {
  expectBodyError("bra.uni $L__BB0_9;", 9, "undefined label '$L__BB0_9'");
}

TEST(PtxDiagnostics, UndeclaredFunctionAndSymbol) {
  expectBodyError("call.uni vprintf, ();", 10,
                  "call to undeclared function 'vprintf' (declare it with .extern .func)");
  expectBodyError("mov.u64 %rd1, nothere;", 15, "undeclared identifier 'nothere'");
  expectBodyError("ld.global.u32 %r1, [gone+4];", 21, "undeclared identifier 'gone'");
}

TEST(PtxDiagnostics, OperandCount) {
  expectBodyError("add.s32 %r1, %r2;", 1, "'add' expects 3 operands, found 2");
  expectBodyError("ret %r1;", 1, "'ret' expects 0 operands, found 1");
  expectBodyError("bra L, L;\nL:", 1, "'bra' expects 1 operand, found 2");
  expectBodyError("ld.global.u32 %r1;", 1, "'ld' expects at least 2 operands, found 1");
  expectBodyError("mov.u32 %r1, %r2, %r3;", 1, "'mov' expects 2 operands, found 3");
  // Counts that depend on the modifiers (each refused by ptxas as well).
  expectBodyError("atom.global.cas.b32 %r1, [%rd1], %r2;", 1,
                  "'atom' expects at least 4 operands, found 3");
  expectBodyError("setp.lt.and.s32 %p1, %r1, %r2;", 1, "'setp' expects 4 operands, found 3");
  expectBodyError("shfl.sync.idx.b32 %r1, %r2, 0, 31;", 1, "'shfl' expects 5 operands, found 4");
  expectBodyError("vote.sync.ballot.b32 %r1, %p1;", 1, "'vote' expects 3 operands, found 2");
  expectBodyError("vadd2.u32.u32.u32 %r1, %r2, %r3;", 1, "'vadd2' expects 4 operands, found 3");
  expectBodyError("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r2], %r3;", 1,
                  "'ldmatrix' expects 2 operands, found 3");
  expectBodyError("stmatrix.sync.aligned.m8n8.x1.shared.b16 %r2, {%r1};", 42,
                  "'stmatrix' expects an address in brackets as its first operand");
}

TEST(PtxDiagnostics, OperandKinds) {
  expectBodyError("ld.global.u32 %r1, %rd1;", 20,
                  "'ld' expects an address in brackets as its second operand");
  expectBodyError("st.global.u32 %rd1, %r1;", 15,
                  "'st' expects an address in brackets as its first operand");
  expectBodyError("@%r1 ret;", 1, "guard '%r1' is not a .pred register");
}

TEST(PtxDiagnostics, ModuleRedefinitions) {
  expectModuleError(".func f() { ret; }\n.func f() { ret; }\n", 2, 1,
                    "redefinition of function 'f' (first defined at line 1)");
  expectModuleError(".global .u32 g;\n.const .u32 g;\n", 2, 13,
                    "redefinition of variable 'g' (first defined at line 1)");
  // Declarations may repeat and precede the definition.
  ParseResult ok = parseModule(
      ".func f();\n.func f() { ret; }\n.extern .global .u32 g;\n"
      ".global .u32 g;\n",
      "ok.ptx");
  EXPECT_FALSE(ok.hasErrors()) << ok.formatDiagnostics();
}

TEST(PtxDiagnostics, SpecialRegisterWithoutComponent) {
  expectBodyError("mov.u32 %r1, %tid;", 14,
                  "special register '%tid' needs a component (.x, .y, .z or .w) or a .v4 "
                  "instruction");
  expectBodyError("mov.u32 %r1, %ctaid.q;", 14,
                  "special register '%ctaid' needs a component (.x, .y, .z or .w) or a .v4 "
                  "instruction");
  // ptxas accepts the unused fourth component and the whole vector in a .v4 move.
  EXPECT_FALSE(parseKernel("mov.u32 %r1, %ctaid.w;").hasErrors());
  EXPECT_FALSE(parseKernel("mov.v4.u32 {%r1, %r2, %r3, %r4}, %ntid;").hasErrors());
}

TEST(PtxDiagnostics, Redefinitions) {
  expectBodyError("L: ret;\nL: ret;", 1, "redefinition of label 'L' (first defined at line 12)", 1);
  expectBodyError(".reg .b32 %r1;", 11, "redeclaration of register '%r1'");
  expectBodyError(".reg .b32 %x; .reg .f32 %x;", 25, "redeclaration of register '%x'");
}

TEST(PtxDiagnostics, UnknownDirectives) {
  expectBodyError(".foo .u32 x;", 1, "unknown directive '.foo' in function body");
  expectModuleError(".version 9.0\n.bogus 1;\n", 2, 1, "unknown directive '.bogus'");
  expectModuleError(".entry k() .maxthreads 4 { ret; }", 1, 12,
                    "unknown directive '.maxthreads' after function header");
}

TEST(PtxDiagnostics, BadNumbers) {
  expectBodyError("mov.f32 %f1, 0f3F80;", 14,
                  "invalid floating-point constant '0f3F80' (expected 0f and 8 hex digits)");
  expectBodyError("mov.b64 %rd1, 0x1FFFFFFFFFFFFFFFF;", 15,
                  "integer constant '0x1FFFFFFFFFFFFFFFF' does not fit in 64 bits");
  expectBodyError("mov.u32 %r1, 12abc;", 14, "invalid number '12abc'");
  expectBodyError("mov.u32 %r1, 089;", 14, "invalid number '089'");
}

TEST(PtxDiagnostics, ModuleScope) {
  expectModuleError("add.s32 %r1, %r2, %r3;", 1, 1,
                    "expected a directive at module scope, found 'add'");
  expectModuleError(".address_size 48\n", 1, 1, ".address_size must be 32 or 64");
  expectModuleError(".version x\n", 1, 10, "expected a version number like 9.0 after .version");
  expectModuleError(".global .align 3 .u32 x;", 1, 9, "alignment must be a power of two, found 3");
  expectModuleError(".global .align 4 x;", 1, 18,
                    "expected a type (.b32, .u64, .f32, ...) in declaration, found 'x'");
  expectModuleError(".global .u32 x[0];", 1, 16, "array dimension must be positive");
  expectModuleError(".global .u64 p = {nothing};", 1, 14,
                    "undeclared identifier 'nothing' in initializer of 'p'");
  expectModuleError(".global .attribute(.fancy) .u32 x;", 1, 20, "unknown attribute '.fancy'");
}

TEST(PtxDiagnostics, UnterminatedInput) {
  expectModuleError(".version 9.0 /* open", 1, 14, "unterminated comment");
  expectModuleError(".entry k()\n{\n ret;\n", 4, 1, "expected '}' at end of function 'k'");
  expectModuleError(".pragma \"abc\n;", 1, 9, "unterminated string");
}

// Every remaining message of the parser, each with its exact position.
TEST(PtxDiagnostics, EveryOtherMessage) {
  struct Case {
    const char* text;
    uint32_t line, column;
    const char* message;
  };
  const Case cases[] = {
      {".entry ( ) { ret; }", 1, 8, "expected a function name after .entry, found '('"},
      {".func f() ret;", 1, 11, "expected '{' or ';' after .func f header, found 'ret'"},
      {".func f(.u32 x) { ret; }", 1, 9, "expected .param or .reg in parameter list, found '.u32'"},
      {".target 90", 1, 9, "expected a target name like sm_90 after .target, found '90'"},
      {".file 1 x.cu", 1, 9, "expected a file name string after .file 1"},
      {".loc 1 2", 1, 9, "expected file, line and column numbers after .loc"},
      {".section .debug_info .b8 1", 1, 22, "expected '{' after .section name, found '.b8'"},
      {".section .debug_str { .b8 1, 0", 1, 1, "unterminated .section (missing '}')"},
      {".alias 1, f;", 1, 8, "expected an alias name after .alias, found '1'"},
      {".alias g, ;", 1, 11, "expected the aliased function after ',', found ';'"},
      {".visible ;", 1, 10, "expected .entry, .func or a variable declaration, found ';'"},
      {"#include", 1, 1, "invalid character '#'"},
      {".entry k() { .reg .b32 %r1; 5; }", 1, 29, "expected an instruction, found '5'"},
      {".entry k() { @5 ret; }", 1, 15, "expected a predicate register after '@', found '5'"},
      {".entry k() { .reg .b32 %r<2>; ld.u32 %r1, [%r0+x]; }", 1, 48,
       "expected an address offset, found 'x'"},
      {".entry k() { .reg .b32 %r<2>; ld.u32 %r1, [%r0+1.5]; }", 1, 48,
       "address offset must be an integer"},
      {".entry k() { .reg .b32 %r<2>; add.u32 %r1, %r0, ]; }", 1, 49,
       "expected an operand, found ']'"},
      {".entry k() { .reg .v2 .b32 %v; .reg .b32 %r; mov.u32 %r, %v.q; }", 1, 60,
       "invalid register component '.q'"},
      {".entry k() { .reg .pred %p; not.pred %p, !5; }", 1, 43,
       "expected a predicate register after '!', found '5'"},
      {".entry k() { .reg .b32 %r; mov.u32 %r, -x; }", 1, 41,
       "expected a number after '-', found 'x'"},
      {".global .u32 g; .entry k() { .reg .b64 %r; mov.u64 %r, g+0f3F800000; }", 1, 58,
       "symbol offset must be an integer"},
      {".entry k() { .reg .b32 %r<2>; .reg .b32 %r<4>; }", 1, 41,
       "redeclaration of registers '%r<N>'"},
      {".entry k() { .reg .b32 5; }", 1, 24, "expected a name in declaration, found '5'"},
      {".entry k() { .reg .b32 %a, 5; }", 1, 28, "expected a register name, found '5'"},
      {".entry k() .maxntid 1, 2, 3, 4 { ret; }", 1, 30, "too many values (at most 3)"},
      {".entry k() .maxnreg 4294967296 { ret; }", 1, 21, "value 4294967296 is too large"},
      {".entry k() .maxnreg x { ret; }", 1, 21, "expected a number, found 'x'"},
      {".entry k() .maxnreg 1.5 { ret; }", 1, 21, "expected an integer, found '1.5'"},
      {".global .b32 .shared x;", 1, 14, "unexpected '.shared' in declaration"},
      {".global .u32 x = {1, (};", 1, 22, "expected a constant in initializer, found '('"},
      {".global .u64 x = generic(1);", 1, 26, "expected a variable name in generic(), found '1'"},
      {".global .u32 x[1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1][1];", 1, 64,
       "too many array dimensions"},
      {".entry k() { p: .callprototype (.param .b32 _) x (); }", 1, 48,
       "expected '_' in .callprototype, found 'x'"},
      {".entry k() { t: .branchtargets 1; }", 1, 32, "expected a target name, found '1'"},
      {".entry k() { L: ret; L: .callprototype _ (); }", 1, 22, "redefinition of label 'L'"},
      {".entry k() { t: .branchtargets L9; ret; }", 1, 32, "undefined label 'L9'"},
      {".entry k() { t: .calltargets nof; ret; }", 1, 30,
       "call to undeclared function 'nof' (declare it with .extern .func)"},
      {".global .u32 x = {1, 2;", 1, 23, "expected '}' at end of initializer list, found ';'"},
      {".entry k() { .reg .b32 %r; mov.u32 %r, {%r, %r; }", 1, 47,
       "expected '}' at end of vector operand, found ';'"},
      {".entry k() { .reg .b32 %r; mov.u32 %r, (%r; }", 1, 43,
       "expected ')' at end of operand list, found ';'"},
      {".entry k() { .reg .b32 %r; ld.u32 %r, [%r; }", 1, 42,
       "expected ']' at end of address, found ';'"},
      {".entry k() { .reg .b32 %r<2 ; }", 1, 29, "expected '>' after register count, found ';'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    ParseResult r = parseModule(c.text, "c.ptx");
    ASSERT_FALSE(r.diagnostics.empty());
    const Diagnostic& d = r.diagnostics[0];
    EXPECT_EQ(d.message, c.message);
    EXPECT_EQ(d.loc.line, c.line);
    EXPECT_EQ(d.loc.column, c.column);
  }
}

TEST(PtxDiagnostics, RecoveryReportsEveryError) {
  ParseResult r = parseKernel(
      "bogus %r1;\n"
      "add.s32 %r1, %r77, 1;\n"
      "mov.u32 %r1, %r2;\n"
      "bra.uni $nowhere;\n"
      "add.s32 %r1, %r2 %r3;\n"
      "ret;");
  expectDiagnostics(r, {
                           {kBodyFirstLine, 1, "unknown instruction 'bogus'"},
                           {kBodyFirstLine + 1, 14, "undeclared register '%r77'"},
                           {kBodyFirstLine + 3, 9, "undefined label '$nowhere'"},
                           {kBodyFirstLine + 4, 17, "expected ';' after instruction, found '%r3'"},
                       });
  // The valid statements around the errors are kept.
  const Function* k = test::firstFunction(r);
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->body.size(), 3u);
  EXPECT_EQ(k->body[0].instruction.opcode, Opcode::mov);
  EXPECT_EQ(k->body[1].instruction.opcode, Opcode::bra);
  EXPECT_EQ(k->body[2].instruction.opcode, Opcode::ret);
}

TEST(PtxDiagnostics, RecoveryAcrossFunctions) {
  ParseResult r = parseModule(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".entry a()\n{\n .reg .b32 %r<2>;\n mov.u32 %r1, %r5;\n ret;\n}\n"
      ".global .u32 ok;\n"
      ".entry b()\n{\n .reg .b32 %r<2>;\n nope;\n ret;\n}\n",
      "two.ptx");
  expectDiagnostics(r,
                    {{7, 15, "undeclared register '%r5'"}, {14, 2, "unknown instruction 'nope'"}});
  ASSERT_EQ(r.module.functions.size(), 2u);
  EXPECT_EQ(r.module.functions[1].name, "b");
  EXPECT_EQ(r.module.globals.size(), 1u);
}

TEST(PtxDiagnostics, FormatShowsFileLineColumnSourceAndCaret) {
  ParseResult r = parseModule(".version 9.0\n.entry k()\n{\n\tfoo.u32 x;\n}\n", "kern.ptx");
  ASSERT_EQ(r.diagnostics.size(), 1u);
  const Diagnostic& d = r.diagnostics[0];
  EXPECT_EQ(d.file, "kern.ptx");
  EXPECT_EQ(d.sourceLine, "\tfoo.u32 x;");
  EXPECT_EQ(d.format(), "kern.ptx:4:2: error: unknown instruction 'foo'\n\tfoo.u32 x;\n\t^\n");
  EXPECT_EQ(r.formatDiagnostics(), d.format());
  ParseResult clean = parseModule(".version 9.0\n", "");
  EXPECT_FALSE(clean.hasErrors());
  EXPECT_EQ(clean.module.name, "<memory>");
  EXPECT_EQ(clean.formatDiagnostics(), "");
}

// PTX ISA version and target requirements, as ptxas enforces them (requirements.def).
std::string moduleWith(std::string_view version, std::string_view target, std::string_view body) {
  return ".version " + std::string(version) + "\n.target " + std::string(target) +
         "\n.address_size 64\n.entry k()\n{\n.reg .b16 %rs<4>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n" +
         std::string(body) + "\nret;\n}\n";
}

TEST(PtxDiagnostics, InstructionNewerThanTheDeclaredVersion) {
  expectModuleError(moduleWith("7.8", "sm_90", "  add.u16x2 %r1, %r2, %r3;"), 9, 3,
                    "'add.u16x2' requires PTX ISA .version 8.0 or later (the module declares "
                    ".version 7.8)");
  expectModuleError(moduleWith("5.0", "sm_60", "shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;"), 9, 1,
                    "'shfl.sync' requires PTX ISA .version 6.0 or later (the module declares "
                    ".version 5.0)");
  // The same instructions at their versions are fine.
  EXPECT_FALSE(parseModule(moduleWith("8.0", "sm_90", "add.u16x2 %r1, %r2, %r3;"), "m").hasErrors());
  EXPECT_FALSE(
      parseModule(moduleWith("6.0", "sm_60", "shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;"), "m")
          .hasErrors());
}

TEST(PtxDiagnostics, InstructionNewerThanTheTarget) {
  expectModuleError(moduleWith("9.0", "sm_89", "add.u16x2 %r1, %r2, %r3;"), 9, 1,
                    "'add.u16x2' requires .target sm_90 or higher (the module targets sm_89)");
  // Types count: cvt from bf16 to f16 needs sm_90, not cvt in general.
  expectDiagnostics(
      parseModule(moduleWith("7.0", "sm_75", "cvt.rn.f32.f16 %r1, %rs1;\ncvt.f32.bf16 %r1, %rs2;"),
                  "m.ptx"),
      {{10, 1, "'cvt.f32.bf16' requires PTX ISA .version 7.1 or later (the module declares "
               ".version 7.0)"},
       {10, 1, "'cvt.f32.bf16' requires .target sm_80 or higher (the module targets sm_75)"}});
  // Special registers have targets too.
  expectModuleError(moduleWith("8.0", "sm_80", "mov.u32 %r1, %clusterid.x;"), 9, 1,
                    "'%clusterid' requires .target sm_90 or higher (the module targets sm_80)");
}

TEST(PtxDiagnostics, ArchitectureSpecificInstructionOnAnotherTarget) {
  expectModuleError(moduleWith("8.0", "sm_90", "wgmma.fence.sync.aligned;"), 9, 1,
                    "'wgmma.fence' is not supported on .target sm_90 (only on sm_90a)");
  EXPECT_FALSE(parseModule(moduleWith("8.0", "sm_90a", "wgmma.fence.sync.aligned;"), "m").hasErrors());
}

// ptxas's "Arguments mismatch", with the operand located (each case checked against ptxas).
TEST(PtxDiagnostics, RegisterTypeDoesNotFitTheInstruction) {
  expectBodyError("add.s32 %r1, %f1, %r2;", 14,
                  "operand 2 of 'add' is the .f32 register '%f1', which does not fit .s32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("add.u32 %r1, %rd1, %r2;", 14,
                  "operand 2 of 'add' is the .b64 register '%rd1', which does not fit .u32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("mul.wide.u32 %r1, %r2, %r3;", 14,
                  "operand 1 of 'mul' is the .b32 register '%r1', which does not fit .u64 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("selp.b32 %r1, %r2, %r3, %r4;", 25,
                  "operand 4 of 'selp' is the .b32 register '%r4', which does not fit .pred "
                  "(ptxas: arguments mismatch)");
  expectBodyError("shl.b32 %r1, %r2, %rd1;", 19,
                  "operand 3 of 'shl' is the .b64 register '%rd1', which does not fit .u32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("popc.b64 %rd1, %rd2;", 10,
                  "operand 1 of 'popc' is the .b64 register '%rd1', which does not fit .u32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("testp.finite.f32 %p1, %rd1;", 23,
                  "operand 2 of 'testp' is the .b64 register '%rd1', which does not fit .f32 "
                  "(ptxas: arguments mismatch)");
  // What the rules allow: bit-size registers anywhere of their size, signed and unsigned
  // integers together, wide results, predicates combined by setp, 32-bit shift amounts and
  // counts of 64-bit operations.
  for (const char* ok : {"add.f32 %f1, %r1, %r2;", "xor.b32 %r1, %f1, %r2;",
                         "shl.b64 %rd1, %rd2, %r1;", "popc.b64 %r1, %rd1;",
                         "bfe.u64 %rd1, %rd2, %r1, %r2;", "mov.b32 %f1, %r1;",
                         "mul.wide.s32 %rd1, %r1, %r2;", "mad.wide.u32 %rd1, %r1, %r2, %rd2;",
                         "setp.eq.and.b32 %p1|%p2, %r1, %r2, %p3;", "add.f16 %rs1, %rs2, %rs3;"})
    EXPECT_FALSE(parseKernel(ok).hasErrors()) << ok << parseKernel(ok).formatDiagnostics();
}

// The relaxed rules of ld, st and cvt, addresses, constants, sinks and vector operands (each
// case checked against ptxas 13.0, which rejects every one of the first group).
TEST(PtxDiagnostics, OperandsOfMemoryConversionAndWarpInstructions) {
  const char* mismatch = " (ptxas: arguments mismatch)";
  struct Case {
    const char* body;
    uint32_t column;
    std::string message;
  };
  const Case cases[] = {
      {"ld.global.u32 %rs1, [%rd1];", 15,
       "operand 1 of 'ld' is the .b16 register '%rs1', which does not fit .u32 (or a wider "
       "register of its kind)" +
           std::string(mismatch)},
      {"cvt.rn.f32.u32 %f1, %f2;", 21,
       "operand 2 of 'cvt' is the .f32 register '%f2', which does not fit .u32 (or a wider "
       "register of its kind)" +
           std::string(mismatch)},
      {"cvt.rn.bf16.f32 %r1, %f1;", 17,
       "operand 1 of 'cvt' is the .b32 register '%r1', which does not fit .bf16" +
           std::string(mismatch)},
      {"ld.global.u32 %r1, [%f1];", 20,
       "operand 2 of 'ld' addresses memory through the .f32 register '%f1' (an address is an "
       "integer: .u64, .b64, ...)"},
      {"ld.global.u32 %r1, [%r2];", 20,
       "operand 2 of 'ld' addresses .global memory through the 32-bit register '%r2' (64-bit "
       "addressing takes a 64-bit register)"},
      {"add.f32 %f1, %f2, 1;", 19,
       "operand 3 of 'add' is the integer constant, which does not fit .f32 (write "
       "floating-point constants as 0f or 0d hex)"},
      {"mov.b64 %rd1, 0f3F800000;", 15,
       "operand 2 of 'mov' is the 0f constant, which does not fit .b64"},
      {"add.f16 %rs1, %rs2, 0;", 21,
       "operand 3 of 'add' is the integer constant, which does not fit .f16"},
      {"add.s32 1, %r1, %r2;", 9,
       "operand 1 of 'add' is a constant or a name; the result goes to a register"},
      {"add.s32 _, %r1, %r2;", 9,
       "operand 1 of 'add' is '_': the result of 'add' cannot be discarded"},
      {"add.s32 %r1, _, %r2;", 14, "operand 2 of 'add' is '_', which only discards results"},
      {"ld.global.v4.u32 {%r1, %r2, %r3}, [%rd1];", 18,
       "operand 1 of 'ld' has 3 elements; '.v4' takes 4"},
      {"ld.global.v2.u32 {%r1, %fd1}, [%rd1];", 18,
       "operand 1 of 'ld' has the .f64 register '%fd1' among its elements, which does not fit "
       ".u32" +
           std::string(mismatch)},
      {"ld.global.v2.b32 {%r1, %rd1}, [%rd1];", 18,
       "operand 1 of 'ld' mixes .b32 and .b64 elements (the elements of a vector are one size)"},
      {"mov.b64 %rd1, {%r1, %r2, %r3};", 15,
       "operand 2 of 'mov' packs 3 elements into .b64 (2 or 4 parts of 8 bits or more)"},
      {"shfl.sync.idx.b32 %r1, %r2, 0, 31, %f1;", 36,
       "operand 5 of 'shfl' is the .f32 register '%f1', which does not fit .u32" +
           std::string(mismatch)},
      {"atom.global.add.u32 %r1, [%rd1], %f1;", 34,
       "operand 3 of 'atom' is the .f32 register '%f1', which does not fit .u32" +
           std::string(mismatch)},
  };
  for (const Case& c : cases) expectBodyError(c.body, c.column, c.message);
  // What ptxas accepts: narrow data in wide registers, bit registers for floats, 32-bit
  // addresses of shared memory, discarded atomic results and setp predicates, packing.
  for (const char* ok : {"ld.global.u8 %r1, [%rd1];",
                         "ld.global.f32 %rd1, [%rd1];",
                         "ld.global.v2.f32 {%r1, %r2}, [%rd1];",
                         "st.global.u8 [%rd1], %rd2;",
                         "st.global.f32 [%rd1], %r1;",
                         "cvt.u32.u16 %r1, %rs1;",
                         "cvt.rn.f32.s64 %f1, %rd1;",
                         "cvt.rn.bf16.f32 %rs1, %f1;",
                         "ld.shared.u32 %r1, [%r2];",
                         "atom.global.cas.b32 _, [%rd1], 1, 2;",
                         "mov.b64 %rd1, {%r1, %r2};",
                         "mov.b32 {%rs1, %rs2}, %r1;",
                         "add.f32 %f1, %f2, 0f3F800000;",
                         "mov.b32 %r1, 0f3F800000;",
                         "setp.eq.s32 _|%p1, %r1, 2;",
                         "dp4a.u32.s32 %r1, %r2, %r3, %r4;",
                         "bar.red.popc.u32 %r1, 0, %p1;",
                         "vote.sync.ballot.b32 %r1, %p1, -1;",
                         "match.any.sync.b64 %r1, %rd1, -1;",
                         "isspacep.global %p1, %rd1;",
                         "lop3.b32 %r1, %r2, %r3, %r4, 0x96;",
                         "add.f32 %f1, %f2, 1.5;"})
    EXPECT_FALSE(parseKernel(ok).hasErrors()) << ok << parseKernel(ok).formatDiagnostics();
}

// mbarrier, video, surface, async-copy, multimem and createpolicy operands (each case refused
// by ptxas too, each accepted one accepted).
TEST(PtxDiagnostics, MBarrierVideoAndSurfaceOperands) {
  expectBodyError("mbarrier.init.shared.b64 [%r1], %f1;", 33,
                  "operand 2 of 'mbarrier' is the .f32 register '%f1', which does not fit .u32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("mbarrier.arrive.shared.b64 %r2, [%r1];", 28,
                  "operand 1 of 'mbarrier' is the .b32 register '%r2', which does not fit .b64 "
                  "(ptxas: arguments mismatch)");
  expectBodyError(
      "vadd2.u32.u32.u32 %r1, %r2, 1, %r3;", 29,
      "operand 3 of 'vadd2' is a constant; SIMD video instructions take registers only");
  expectBodyError("vadd.s32.u32.s32 %r1, %rd2, %r3;", 23,
                  "operand 2 of 'vadd' is the .b64 register '%rd2', which does not fit .u32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("suld.b.1d.b32.trap %rs1, [%rd1, {%r1}];", 20,
                  "operand 1 of 'suld' is the .b16 register '%rs1', which does not fit .b32 (or a "
                  "wider register of its kind) (ptxas: arguments mismatch)");
  expectBodyError("cp.async.ca.shared.global [%r1], [%f1], 16;", 34,
                  "operand 2 of 'cp.async' addresses memory through the .f32 register '%f1' (an "
                  "address is an integer: .u64, .b64, ...)");
  expectBodyError("cp.async.bulk.global.shared::cta.bulk_group [%r1], [%r2], %f1;", 59,
                  "operand 3 of 'cp.async' is the .f32 register '%f1', which does not fit .u32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("multimem.st.relaxed.sys.global.f32 [%rd1], %rd2;", 44,
                  "operand 2 of 'multimem' is the .b64 register '%rd2', which does not fit .f32 "
                  "(ptxas: arguments mismatch)");
  expectBodyError("createpolicy.fractional.L2::evict_last.b64 %r1, 1.0;", 44,
                  "operand 1 of 'createpolicy' is the .b32 register '%r1', which does not fit "
                  ".b64 (ptxas: arguments mismatch)");
  for (const char* ok :
       {"cp.async.ca.shared.global [%r1], [%r2], 16;",
        "cp.async.bulk.global.shared::cta.bulk_group [%r1], [%r2], 256;",
        "multimem.ld_reduce.relaxed.sys.global.add.f32 %r1, [%rd1];",
        "createpolicy.fractional.L2::evict_last.b64 %rd1, 1.0;",
        "mbarrier.try_wait.parity.shared.b64 %p1, [%r1], %r2, %r3;",
        "vadd.s32.u32.s32.sat %r1, %r2, %r3;", "suld.b.1d.b8.trap %r1, [%rd1, {%r1}];"})
    EXPECT_FALSE(parseKernel(ok).hasErrors()) << ok << parseKernel(ok).formatDiagnostics();
}

// Fragments of matrix and texture instructions: 32-bit registers (64-bit for .f64 data, the
// destination's size for tex), as many as the shape takes (each case refused by ptxas too).
TEST(PtxDiagnostics, MatrixAndTextureFragments) {
  expectBodyError("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2}, [%r3];", 42,
                  "operand 1 of 'ldmatrix' has 2 registers; this shape takes 4");
  expectBodyError("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r1, %rd2}, [%r3];", 42,
                  "operand 1 of 'ldmatrix' has the .b64 register '%rd2' among its elements; the "
                  "fragment holds 32-bit registers (ptxas: arguments mismatch)");
  expectBodyError(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1, %f2, %f3, %f4}, "
      "{%r1, %r2, %r3, %rd4}, {%r5, %r6}, {%f5, %f6, %f7, %f8};",
      73,
      "operand 2 of 'mma' has the .b64 register '%rd4' among its elements; the fragment holds "
      "32-bit registers (ptxas: arguments mismatch)");
  expectBodyError("tex.1d.v4.f32.s32 {%f1, %f2, %f3, %rs1}, [%rd1, {%r1}];", 19,
                  "operand 1 of 'tex' has the .b16 register '%rs1' among its elements; the "
                  "fragment holds 32-bit registers (ptxas: arguments mismatch)");
  EXPECT_FALSE(parseKernel("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%fd1, %fd2}, {%fd3}, "
                           "{%fd4}, {%fd5, %fd6};")
                   .hasErrors());
}

// State spaces: an explicit space must be that of the variable addressed (each checked against
// ptxas, which calls it "State space mismatch between instruction and address").
TEST(PtxDiagnostics, StateSpaceOfTheAddressedVariable) {
  const char* scope = ".global .u32 g;\n.shared .u32 s;\n.const .u32 c;\n";
  auto expectError = [&](const char* body, uint32_t column, const std::string& message) {
    SCOPED_TRACE(body);
    // The three lines of module scope come before the body.
    expectDiagnostics(parseKernel(body, scope), {{kBodyFirstLine + 3, column, message}});
  };
  expectError("ld.shared.u32 %r1, [g];", 20,
              "'ld.shared' addresses 'g', a .global variable (state space mismatch)");
  expectError("atom.global.add.u32 %r1, [s], 1;", 26,
              "'atom.global' addresses 's', a .shared variable (state space mismatch)");
  expectError("cvta.global.u64 %rd1, s;", 23,
              "'cvta.global' addresses 's', a .shared variable (state space mismatch)");
  expectError("st.const.u32 [c], %r1;", 1, "'st.const': .const memory is read-only");
  for (const char* ok : {"ld.const.u32 %r1, [c];", "ld.u32 %r1, [s];", "cvta.shared.u64 %rd1, s;",
                         "ld.shared::cluster.u32 %r1, [s];", "ld.global.u32 %r1, [g+4];"})
    EXPECT_FALSE(parseKernel(ok, scope).hasErrors()) << ok;
}

TEST(PtxDiagnostics, WritesToInputParameters) {
  expectModuleError(
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".func (.param .b32 r) f(.param .b32 a)\n{\n.reg .b32 %r<2>;\n"
      "st.param.b32 [r], %r1;\nst.param.b32 [a], %r1;\nret;\n}\n",
      8, 14,
      "'st.param' writes to the input parameter 'a' (parameters are read-only; only a .func's "
      "return values are written)");
}

// `.shared::cta` is a spelling of its own where ptxas says so (.version 7.8), and prints back.
TEST(PtxDiagnostics, ExplicitSharedCtaNeedsItsVersion) {
  expectModuleError(moduleWith("7.0", "sm_80", ".shared .b32 s;\nld.shared::cta.u32 %r1, [s];"),
                    10, 1,
                    "'ld.shared::cta' requires PTX ISA .version 7.8 or later (the module declares "
                    ".version 7.0)");
  EXPECT_FALSE(
      parseModule(moduleWith("7.0", "sm_80", ".shared .b32 s;\nld.shared.u32 %r1, [s];"), "m")
          .hasErrors());
}

TEST(PtxDiagnostics, TargetNewerThanTheDeclaredVersion) {
  expectModuleError(".version 7.0\n.target sm_90\n.address_size 64\n", 2, 9,
                    "PTX ISA .version 7.0 does not support .target sm_90 (it needs .version 7.8 "
                    "or later)");
  EXPECT_FALSE(parseModule(".version 7.8\n.target sm_90\n.address_size 64\n", "m").hasErrors());
}

// Directives and declarations have versions and targets too (each measured with ptxas 13.0).
std::string headerModule(std::string_view version, std::string_view target,
                         std::string_view moduleScope, std::string_view function) {
  return ".version " + std::string(version) + "\n.target " + std::string(target) +
         "\n.address_size 64\n" + std::string(moduleScope) + "\n" + std::string(function) + "\n";
}

TEST(PtxDiagnostics, DirectiveNewerThanTheVersionOrTarget) {
  expectDiagnostics(
      parseModule(headerModule("7.0", "sm_80", "", ".entry k() .maxclusterrank 2\n{ ret; }"), "m"),
      {{5, 12,
        "'.maxclusterrank' requires PTX ISA .version 7.8 or later (the module declares "
        ".version 7.0)"},
       {5, 12, "'.maxclusterrank' requires .target sm_90 or higher (the module targets sm_80)"}});
  expectDiagnostics(
      parseModule(headerModule("7.8", "sm_80", "", ".entry k() .explicitcluster\n{ ret; }"), "m"),
      {{5, 12, "'.explicitcluster' requires .target sm_90 or higher (the module targets sm_80)"}});
  expectModuleError(headerModule("6.3", "sm_75", "", ".func f() .noreturn\n{ ret; }"), 5, 11,
                    "'.noreturn' requires PTX ISA .version 6.4 or later (the module declares "
                    ".version 6.3)");
  expectModuleError(
      headerModule("8.8", "sm_90", "", ".func f() .abi_preserve 8\n{ ret; }"), 5, 11,
      "'.abi_preserve' requires PTX ISA .version 9.0 or later (the module declares .version 8.8)");
  expectModuleError(headerModule("6.2", "sm_70", ".func f() { ret; }\n.alias g, f;", ""), 5, 1,
                    "'.alias' requires PTX ISA .version 6.3 or later (the module declares "
                    ".version 6.2)");
  expectModuleError(
      headerModule("7.0", "sm_80", ".global .u32 g;\n.global .u8 b[1] = {0xFF(g)};", ""), 5, 21,
      "'mask() initializer' requires PTX ISA .version 7.1 or later (the module "
      "declares .version 7.0)");
  expectModuleError(headerModule("8.2", "sm_90", ".global .b128 wide;", ""), 4, 9,
                    "'.b128' requires PTX ISA .version 8.3 or later (the module declares .version "
                    "8.2)");
  expectModuleError(
      headerModule("8.0", "sm_80", ".global .attribute(.unified) .u32 u;", ""), 4, 20,
      "'.attribute(.unified)' requires .target sm_90 or higher (the module targets sm_80)");
  expectModuleError(
      headerModule("5.0", "sm_60", "", ".entry k()\n{\nL: .branchtargets L;\nret;\n}"), 7, 4,
      "'.branchtargets' requires PTX ISA .version 6.0 or later (the module declares "
      ".version 5.0)");
  expectModuleError(
      headerModule("8.2", "sm_90", "", ".entry k()\n{\n.pragma \"used_bytes_mask 0xf\";\nret;\n}"),
      7, 1,
      "'used_bytes_mask' requires PTX ISA .version 8.3 or later (the module declares .version "
      "8.2)");
  // At their versions and targets, all of it is accepted.
  EXPECT_FALSE(parseModule(headerModule("8.0", "sm_90", ".func f() { ret; }\n.alias g, f;",
                                        ".entry k() .maxclusterrank 2 .explicitcluster\n{\n"
                                        "L: .branchtargets L;\n.pragma \"nounroll\";\nret;\n}"),
                           "m")
                   .hasErrors());
}

TEST(PtxDiagnostics, PerformanceDirectivesWhereTheyBelong) {
  expectModuleError(headerModule("8.0", "sm_90", "", ".func f() .maxntid 64\n{ ret; }"), 5, 11,
                    "'.maxntid' applies to kernels only (.entry), not to .func 'f'");
  expectModuleError(headerModule("8.0", "sm_90", "", ".entry k() .noreturn\n{ ret; }"), 5, 12,
                    "'.noreturn' applies to .func only, not to the kernel 'k'");
  expectModuleError(headerModule("8.0", "sm_90", "", ".func (.reg .b32 r) f() .noreturn\n{ ret; }"),
                    5, 25, "'.noreturn' on function 'f', which returns a value");
  expectModuleError(
      headerModule("8.0", "sm_90", "", ".entry k() .maxntid 64 .reqntid 64\n{ ret; }"), 5, 24,
      "'.reqntid' and '.maxntid' exclude each other");
  expectModuleError(headerModule("8.0", "sm_90", "",
                                 ".entry k() .reqnctapercluster 2 .maxclusterrank 4\n{ ret; }"),
                    5, 33, "'.maxclusterrank' and '.reqnctapercluster' exclude each other");
  expectModuleError(headerModule("8.0", "sm_90", "", ".entry k() .maxntid 64, 0\n{ ret; }"), 5, 1,
                    "'.maxntid' of 'k' must be positive");
  expectModuleError(
      headerModule("9.0", "sm_90", "", ".entry k() .reqntid 64 .blocksareclusters\n{ ret; }"), 5,
      24, "'.blocksareclusters' needs .reqntid and .reqnctapercluster on 'k'");
  expectModuleError(headerModule("8.0", "sm_90", "", ".entry k() .maxnctapersm 2\n{ ret; }"), 5, 12,
                    "'.maxnctapersm' was removed in PTX ISA .version 2.1 (use .minnctapersm)");
  expectModuleError(
      headerModule("8.0", "sm_90", "", ".func f(.param .u64 .ptr .global .align 8 p)\n{ ret; }"), 5,
      43, "'.ptr' attributes apply to kernel parameters only, not to .func 'f'");
}

TEST(PtxDiagnostics, DeclarationRules) {
  expectModuleError(
      headerModule("8.0", "sm_90", ".global .u32 g;\n.global .u16 h[1] = {0xFF(g)};", ""), 5, 22,
      "a masked address initializes a byte: 'h' has .u16 elements (use .b8, .u8 or "
      ".s8)");
  expectModuleError(
      headerModule("8.0", "sm_90", ".global .u32 g;\n.global .u8 h[1] = {0xFFFF(g)};", ""), 5, 21,
      "invalid mask '0xFFFF' in initializer: a mask selects one byte (0xFF, 0xFF00, "
      "... 0xFF00000000000000)");
  expectModuleError(headerModule("8.0", "sm_90", ".global .samplerref s;", ""), 4, 9,
                    "'.samplerref' needs '.target ..., texmode_independent' (samplers are part of "
                    "the texture in the default texmode_unified)");
  expectModuleError(headerModule("8.0", "sm_90", ".shared .attribute(.managed) .u32 m;", ""), 4, 20,
                    "'.attribute(.managed)' applies to .global variables only");
  expectModuleError(headerModule("8.0", "sm_90", ".common .shared .u32 c;", ""), 4, 1,
                    "'.common' applies to .global variables only");
  expectModuleError(headerModule("8.0", "sm_90", ".local .u32 l;", ""), 4, 1,
                    "module-scope .local variables are not allowed from PTX ISA .version 3.0 "
                    "(declare them in a function)");
  expectModuleError(headerModule("8.0", "sm_90", ".global .f16 x = 0;", ""), 4, 18,
                    "'x' is .f16, which takes no initial value (declare it .b16)");
  expectModuleError(headerModule("8.0", "sm_90", ".entry k() { ret; }\n.alias a, k;", ""), 5, 1,
                    "'.alias a' names the kernel 'k' (an alias names a .func)");
  expectModuleError(headerModule("8.0", "sm_90", ".extern .func f();\n.alias a, f;", ""), 5, 1,
                    "'.alias a' names 'f', which must be defined here (not only declared)");
  expectModuleError(headerModule("8.0", "sm_90", ".global .u32 v;\n.alias a, v;", ""), 5, 1,
                    "'.alias a' names the variable 'v' (an alias names a function)");
}

// Forms later PTX ISA versions removed: ptxas refuses them although they once existed.
TEST(PtxDiagnostics, RemovedInstructionForms) {
  expectModuleError(moduleWith("6.4", "sm_70", "shfl.idx.b32 %r1, %r2, 0, 31;"), 9, 1,
                    "'shfl' without '.sync' is not supported on .target sm_70 and higher from PTX "
                    "ISA .version 6.4 (use shfl.sync)");
  expectModuleError(moduleWith("7.0", "sm_80", ".reg .pred %p<2>;\nvote.any.pred %p1, %p0;"), 10, 1,
                    "'vote' without '.sync' is not supported on .target sm_70 and higher from PTX "
                    "ISA .version 6.4 (use vote.sync)");
  expectModuleError(moduleWith("8.0", "sm_90", "mov.f16 %rs1, %rs2;"), 9, 1,
                    "'mov' does not take .f16 (use mov.b16)");
  // Still accepted where ptxas accepts them: before 6.4, or on older targets.
  EXPECT_FALSE(
      parseModule(moduleWith("6.3", "sm_70", "shfl.idx.b32 %r1, %r2, 0, 31;"), "m").hasErrors());
  EXPECT_FALSE(
      parseModule(moduleWith("6.4", "sm_60", "shfl.idx.b32 %r1, %r2, 0, 31;"), "m").hasErrors());
}

}  // namespace
}  // namespace rocuda::ptx
