// Module-level syntax: directives, functions, parameters, variables and initializers.
#include <gtest/gtest.h>

#include "ptx/printer.h"
#include "ptx_test_util.h"

namespace rocuda::ptx {
namespace {

using test::firstFunction;

ParseResult parseOk(std::string_view text) {
  ParseResult result = parseModule(text, "t.ptx");
  EXPECT_FALSE(result.hasErrors()) << result.formatDiagnostics();
  return result;
}

TEST(PtxSyntax, VersionTargetsAndAddressSize) {
  ParseResult r = parseOk(
      ".version 8.5\n.target sm_90a, texmode_independent, debug\n"
      ".address_size 32\n");
  EXPECT_EQ(r.module.versionMajor, 8u);
  EXPECT_EQ(r.module.versionMinor, 5u);
  EXPECT_EQ(r.module.targets, (std::vector<std::string>{"sm_90a", "texmode_independent", "debug"}));
  EXPECT_EQ(r.module.addressSize, 32u);
  EXPECT_EQ(r.module.name, "t.ptx");
}

TEST(PtxSyntax, EntryWithPointerParametersAndPerformanceDirectives) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".visible .entry k(.param .u64 .ptr .global .align 16 p, .param .align 8 .b8 s[24],\n"
      "  .param .u32 n)\n"
      ".maxntid 256, 1, 1\n.minnctapersm 2\n.maxnreg 64\n.maxclusterrank 8\n"
      ".explicitcluster\n.pragma \"nounroll\";\n"
      "{\nret;\n}\n"
      // .reqntid excludes .maxntid, .reqnctapercluster excludes .maxclusterrank.
      ".entry clusters() .reqntid 128 .reqnctapercluster 2, 1, 1 .blocksareclusters\n{\nret;\n}\n");
  ASSERT_EQ(r.module.functions.size(), 2u);
  const Function& k = r.module.functions[0];
  EXPECT_TRUE(k.isEntry);
  EXPECT_FALSE(k.isDeclaration);
  EXPECT_EQ(k.linkage, Linkage::Visible);
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].name, "p");
  EXPECT_EQ(k.params[0].type, ScalarType::U64);
  EXPECT_EQ(k.params[0].space, StateSpace::Param);
  EXPECT_EQ(k.params[0].pointeeSpace, StateSpace::Global);
  EXPECT_EQ(k.params[0].pointeeAlignment, 16u);
  EXPECT_EQ(k.params[0].alignment, 0u);
  EXPECT_EQ(k.params[1].alignment, 8u);
  EXPECT_EQ(k.params[1].dims, std::vector<uint64_t>{24});
  EXPECT_EQ(k.params[1].sizeInBytes(), 24u);
  EXPECT_EQ(k.params[2].type, ScalarType::U32);
  const PerformanceDirectives& perf = k.performance;
  EXPECT_EQ(perf.maxntid, (std::vector<uint32_t>{256, 1, 1}));
  EXPECT_EQ(perf.minnctapersm, 2u);
  EXPECT_EQ(perf.maxnreg, 64u);
  EXPECT_EQ(perf.maxclusterrank, 8u);
  EXPECT_TRUE(perf.explicitCluster);
  EXPECT_FALSE(perf.blocksAreClusters);
  EXPECT_EQ(perf.pragmas, std::vector<std::string>{"\"nounroll\""});
  const PerformanceDirectives& clusters = r.module.functions[1].performance;
  EXPECT_EQ(clusters.reqntid, std::vector<uint32_t>{128});
  EXPECT_EQ(clusters.reqnctapercluster, (std::vector<uint32_t>{2, 1, 1}));
  EXPECT_TRUE(clusters.blocksAreClusters);
}

TEST(PtxSyntax, FunctionsWithReturnParamsDeclarationsAndRegParams) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_80\n.address_size 64\n"
      ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n"
      ".weak .func (.reg .b32 out) twice(.reg .b32 in)\n{\n add.s32 out, in, in;\n ret;\n}\n"
      ".func noargs\n{\n ret;\n}\n"
      ".func stop() .noreturn\n{\n trap;\n}\n");
  ASSERT_EQ(r.module.functions.size(), 4u);
  const Function& vprintf = r.module.functions[0];
  EXPECT_TRUE(vprintf.isDeclaration);
  EXPECT_EQ(vprintf.linkage, Linkage::Extern);
  ASSERT_EQ(vprintf.returnParams.size(), 1u);
  EXPECT_EQ(vprintf.returnParams[0].name, "func_retval0");
  EXPECT_EQ(vprintf.params.size(), 2u);
  const Function& twice = r.module.functions[1];
  EXPECT_EQ(twice.linkage, Linkage::Weak);
  EXPECT_EQ(twice.params[0].space, StateSpace::Reg);
  ASSERT_EQ(twice.registerCount(), 2u);  // the .reg parameters are registers
  EXPECT_EQ(twice.registerName(0), "out");
  EXPECT_EQ(twice.registerName(1), "in");
  ASSERT_EQ(twice.body.size(), 2u);
  const Instruction& add = twice.body[0].instruction;
  EXPECT_EQ(add.operands()[0].kind, Operand::Kind::Register);
  EXPECT_EQ(add.operands()[0].reg(), 0u);
  EXPECT_EQ(add.operands()[2].reg(), 1u);
  EXPECT_TRUE(r.module.functions[2].params.empty());
  EXPECT_TRUE(r.module.functions[3].performance.noreturn);
  EXPECT_EQ(r.module.findFunction("noargs"), &r.module.functions[2]);
}

TEST(PtxSyntax, GlobalVariablesInEveryStateSpace) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".global .align 4 .u32 counter;\n"
      ".const .align 16 .b8 table[4][16];\n"
      ".shared .align 8 .f64 tile[32];\n"
      ".extern .shared .align 16 .b8 dyn[];\n"
      ".global .v4 .f32 vec;\n"
      ".global .align 8 .v2 .u64 vecs[3];\n"
      ".common .global .u32 weakish;\n"
      ".visible .global .attribute(.managed) .align 4 .u32 managed;\n"
      ".global .u32 a, b[2], c;\n"
      ".tex .u64 texref;\n");
  const auto& g = r.module.globals;
  ASSERT_EQ(g.size(), 12u);
  EXPECT_EQ(g[0].space, StateSpace::Global);
  EXPECT_EQ(g[0].alignment, 4u);
  EXPECT_EQ(g[1].space, StateSpace::Const);
  EXPECT_EQ(g[1].dims, (std::vector<uint64_t>{4, 16}));
  EXPECT_EQ(g[1].sizeInBytes(), 64u);
  EXPECT_EQ(g[2].space, StateSpace::Shared);
  EXPECT_EQ(g[2].sizeInBytes(), 256u);
  EXPECT_EQ(g[3].linkage, Linkage::Extern);
  EXPECT_EQ(g[3].dims, std::vector<uint64_t>{0});
  EXPECT_EQ(g[3].sizeInBytes(), 0u);
  EXPECT_EQ(g[4].vectorWidth, 4);
  EXPECT_EQ(g[4].sizeInBytes(), 16u);
  EXPECT_EQ(g[5].sizeInBytes(), 48u);
  EXPECT_EQ(g[6].linkage, Linkage::Common);
  EXPECT_TRUE(g[7].managed);
  EXPECT_EQ(g[7].linkage, Linkage::Visible);
  EXPECT_EQ(g[8].name, "a");
  EXPECT_EQ(g[9].name, "b");
  EXPECT_EQ(g[9].dims, std::vector<uint64_t>{2});
  EXPECT_EQ(g[10].name, "c");
  EXPECT_TRUE(g[10].dims.empty());
  EXPECT_EQ(g[11].space, StateSpace::Tex);
  EXPECT_EQ(r.module.findGlobal("managed"), &g[7]);
}

TEST(PtxSyntax, Initializers) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".global .align 1 .b8 str[4] = {104, 105, 0, -1};\n"
      ".global .f32 one = 0f3F800000;\n"
      ".global .f64 two = 0d4000000000000000;\n"
      ".global .s32 grid[2][2] = {{1, 2}, {3, 0x10}};\n"
      ".global .f32 half = 0.5;\n"
      ".global .u64 ptrs[3] = {generic(str), str+2, one};\n"
      ".global .u32 empty[2] = {};\n"
      ".global .u32 inferred[] = {1, 2, 3};\n"
      ".global .u32 rows[][2] = {{1, 2}, {3, 4}, {5, 6}};\n"
      ".extern .global .u32 unsized[];\n");
  const auto& g = r.module.globals;
  ASSERT_EQ(g.size(), 10u);
  EXPECT_EQ(g[7].dims, std::vector<uint64_t>{3});
  EXPECT_EQ(g[7].sizeInBytes(), 12u);
  EXPECT_EQ(g[8].dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(g[9].dims, std::vector<uint64_t>{0});
  ASSERT_EQ(g[0].initializer.size(), 4u);
  EXPECT_TRUE(g[0].hasInitializer);
  EXPECT_EQ(g[0].initializer[1].number().bits, 105u);
  EXPECT_EQ(g[0].initializer[3].number().bits, UINT64_MAX);
  EXPECT_EQ(g[1].initializer[0].number().kind, Immediate::Kind::F32Bits);
  EXPECT_EQ(g[1].initializer[0].number().bits, 0x3F800000u);
  EXPECT_EQ(g[2].initializer[0].number().kind, Immediate::Kind::F64Bits);
  EXPECT_EQ(g[2].initializer[0].number().bits, 0x4000000000000000ull);
  ASSERT_EQ(g[3].initializer.size(), 4u);
  EXPECT_EQ(g[3].initializer[3].number().bits, 16u);
  EXPECT_EQ(g[4].initializer[0].number().kind, Immediate::Kind::Double);
  EXPECT_DOUBLE_EQ(g[4].initializer[0].number().value, 0.5);
  ASSERT_EQ(g[5].initializer.size(), 3u);
  EXPECT_EQ(g[5].initializer[0].kind(), InitializerElement::Kind::SymbolAddress);
  EXPECT_TRUE(g[5].initializer[0].generic());
  EXPECT_EQ(g[5].initializer[0].symbol(), "str");
  EXPECT_EQ(g[5].initializer[1].offset(), 2);
  EXPECT_FALSE(g[5].initializer[1].generic());
  EXPECT_EQ(g[5].initializer[2].symbol(), "one");
  EXPECT_TRUE(g[6].hasInitializer);
  EXPECT_TRUE(g[6].initializer.empty());
}

// The mask operator (PTX 7.1): one byte of an address, as nvcc writes pointers in packed structs.
TEST(PtxSyntax, MaskedAddressInitializers) {
  ParseResult r = parseOk(
      ".version 7.1\n.target sm_80\n.address_size 64\n.global .u32 g[2];\n"
      ".global .align 1 .u8 s[4] = {7, 0XFF(generic(g)+4), 0xFF00(generic(g)+4), "
      "0xFF00000000000000(g)};\n");
  const Variable& s = r.module.globals[1];
  ASSERT_EQ(s.initializer.size(), 4u);
  EXPECT_FALSE(s.initializer[0].kind() == InitializerElement::Kind::SymbolAddress);
  EXPECT_EQ(s.initializer[1].maskedByte(), 0u);
  EXPECT_TRUE(s.initializer[1].generic());
  EXPECT_EQ(s.initializer[1].offset(), 4);
  EXPECT_EQ(s.initializer[2].maskedByte(), 1u);
  EXPECT_EQ(s.initializer[3].maskedByte(), 7u);
  EXPECT_FALSE(s.initializer[3].generic());
  EXPECT_EQ(s.initializer[3].symbol(), "g");
  // Printed back in the same form, which parses to the same elements.
  std::string printed = printModule(r.module);
  EXPECT_NE(printed.find("0xFF00(generic(g)+4)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("0xFF00000000000000(g)"), std::string::npos) << printed;
  ParseResult again = parseOk(printed);
  EXPECT_EQ(again.module.globals[1].initializer[2].maskedByte(), 1u);
}

TEST(PtxSyntax, FileLocSectionAliasAndPragma) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".file 1 \"/src/a.cu\"\n.file 3 \"b.cuh\", 1700000000, 1234\n"
      ".func f()\n{\n.loc 1 5 3\n.loc 1 6 1, function_name $L__info_string0, inlined_at 1 9 2\n"
      " ret;\n}\n"
      ".alias g, f;\n.pragma \"nounroll\";\n"
      ".section .debug_info\n{\n.b32 10\n.b8 2, 0\n$L__info: .b64 $L__func_begin0\n"
      "{ .b8 1 } /* nested */\n}\n"
      ".section .debug_str { $L__info_string0: .b8 95, 0 }\n");
  ASSERT_EQ(r.module.files.size(), 4u);
  EXPECT_EQ(r.module.files[1], "/src/a.cu");
  EXPECT_EQ(r.module.files[3], "b.cuh");
  EXPECT_TRUE(r.module.files[2].empty());
  ASSERT_EQ(r.module.aliases.size(), 1u);
  EXPECT_EQ(r.module.aliases[0].first, "g");
  EXPECT_EQ(r.module.aliases[0].second, "f");
  ASSERT_EQ(r.module.functions.size(), 1u);
  EXPECT_EQ(r.module.functions[0].body.size(), 1u);
}

TEST(PtxSyntax, RegisterRangesVectorsAndShadowing) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".entry k()\n{\n .reg .b32 %r<3>;\n .reg .v4 .f32 %v;\n .reg .pred p, q;\n"
      " mov.u32 %r2, 1;\n"
      " {\n  .reg .b32 %r2;\n  mov.u32 %r2, 2;\n  { .reg .b32 %r<3>; mov.u32 %r2, 3; }\n }\n"
      " { .reg .b32 %r2; mov.u32 %r2, 4; }\n"
      " mov.u32 %r2, 5;\n ret;\n}\n");
  const Function* k = firstFunction(r);
  ASSERT_NE(k, nullptr);
  std::vector<std::string> names;
  for (uint32_t i = 0; i < k->registerCount(); ++i) names.push_back(k->registerName(i));
  std::vector<std::string> expected = {"%r0",   "%r1",   "%r2",   "%v",    "p",    "q",
                                       "%r2#1", "%r0#1", "%r1#1", "%r2#2", "%r2#3"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(k->declarationOf(3).vectorWidth, 4);
  EXPECT_EQ(k->registerType(3), ScalarType::F32);
  EXPECT_EQ(k->registerType(4), ScalarType::Pred);
  ASSERT_EQ(k->body.size(), 6u);
  std::vector<std::string> targets;
  for (const auto& s : k->body)
    if (!s.instruction.operands().empty())
      targets.push_back(test::registerName(*k, s.instruction.operands()[0]));
  EXPECT_EQ(targets, (std::vector<std::string>{"%r2", "%r2#1", "%r2#2", "%r2#3", "%r2"}));
}

TEST(PtxSyntax, CallSequencesRenameRepeatedParamLocals) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".func (.param .b32 ret) f(.param .b32 x)\n{\n .reg .b32 %r<2>;\n"
      " ld.param.b32 %r0, [x];\n st.param.b32 [ret], %r0;\n ret;\n}\n"
      ".entry k()\n{\n .reg .b32 %r<4>;\n .local .align 8 .b8 __local_depot0[16];\n"
      " { .param .b32 param0; st.param.b32 [param0], %r1; .param .b32 retval0;\n"
      "   call.uni (retval0), f, (param0); ld.param.b32 %r2, [retval0]; }\n"
      " { .param .b32 param0; st.param.b32 [param0], %r2; .param .b32 retval0;\n"
      "   call.uni (retval0), f, (param0); ld.param.b32 %r3, [retval0]; }\n ret;\n}\n");
  const Function& k = r.module.functions[1];
  ASSERT_EQ(k.locals.size(), 5u);
  EXPECT_EQ(k.locals[0].name, "__local_depot0");
  EXPECT_EQ(k.locals[0].space, StateSpace::Local);
  EXPECT_EQ(k.locals[1].name, "param0");
  EXPECT_EQ(k.locals[2].name, "retval0");
  EXPECT_EQ(k.locals[3].name, "param0#1");
  EXPECT_EQ(k.locals[4].name, "retval0#1");
  const Instruction& secondCall = k.body[4].instruction;
  ASSERT_EQ(secondCall.opcode, Opcode::call);
  ASSERT_EQ(secondCall.operands().size(), 3u);
  EXPECT_EQ(secondCall.operands()[0].kind, Operand::Kind::List);
  EXPECT_EQ(secondCall.operands()[0].elements()[0].symbol(), "retval0#1");
  EXPECT_EQ(secondCall.operands()[1].symbol(), "f");
  EXPECT_EQ(secondCall.operands()[2].elements()[0].symbol(), "param0#1");
  EXPECT_EQ(k.body[3].instruction.operands()[0].address().symbol, "param0#1");
  EXPECT_EQ(k.body[0].instruction.operands()[0].address().symbol, "param0");
}

TEST(PtxSyntax, CallPrototypesAndTargetLists) {
  ParseResult r = parseOk(
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".func a() { ret; }\n.func b() { ret; }\n"
      ".entry k(.param .u64 fp)\n{\n .reg .b64 %rd<2>;\n .reg .b32 %r<2>;\n"
      " ld.param.u64 %rd1, [fp];\n"
      " proto: .callprototype (.param .b32 _) _ (.param .b64 _, .param .b32 _);\n"
      " noret: .callprototype _ ();\n"
      " { .param .b64 p0; .param .b32 p1; .param .b32 rv;\n"
      "   call (rv), %rd1, (p0, p1), proto; }\n"
      " ts: .branchtargets L0, L1;\n"
      " fs: .calltargets a, b;\n"
      " brx.idx %r1, ts;\n"
      "L0: call %rd1, (), fs;\n"
      "L1: ret;\n}\n");
  const Function& k = r.module.functions[2];
  ASSERT_EQ(k.callPrototypes.size(), 2u);
  EXPECT_EQ(k.callPrototypes[0].label, "proto");
  EXPECT_EQ(k.callPrototypes[0].returnParams.size(), 1u);
  ASSERT_EQ(k.callPrototypes[0].params.size(), 2u);
  EXPECT_EQ(k.callPrototypes[0].params[0].type, ScalarType::B64);
  EXPECT_TRUE(k.callPrototypes[1].params.empty());
  ASSERT_EQ(k.targetLists.size(), 2u);
  EXPECT_FALSE(k.targetLists[0].isCallTargets);
  EXPECT_EQ(k.targetLists[0].targets, (std::vector<std::string>{"L0", "L1"}));
  EXPECT_TRUE(k.targetLists[1].isCallTargets);
  const Instruction& call = k.body[1].instruction;
  ASSERT_EQ(call.operands().size(), 4u);
  EXPECT_EQ(call.operands()[1].kind, Operand::Kind::Register);
  EXPECT_EQ(call.operands()[3].kind, Operand::Kind::Symbol);
  EXPECT_EQ(call.operands()[3].symbol(), "proto");
}

TEST(PtxSyntax, LabelsAndNestedBlocksAreFlattened) {
  ParseResult r = parseOk(test::wrapKernel(
      "$L__BB0_1:\n{\n add.s32 %r1, %r1, 1;\n{\nloop: bra.uni $L__BB0_1;\n}\n}\nret;"));
  const Function* k = firstFunction(r);
  ASSERT_EQ(k->body.size(), 5u);
  EXPECT_EQ(k->body[0].kind(), Statement::Kind::Label);
  EXPECT_EQ(k->body[0].labelName(), "$L__BB0_1");
  EXPECT_EQ(k->body[0].loc().line, test::kBodyFirstLine);
  EXPECT_EQ(k->body[2].labelName(), "loop");
  EXPECT_EQ(k->body[3].instruction.operands()[0].symbol(), "$L__BB0_1");
  EXPECT_EQ(k->body[4].instruction.opcode, Opcode::ret);
}

TEST(PtxSyntax, LabelsAreBlockScopedLikeInlinedAsm) {
  // The same inline asm inlined twice: `L1` in two sibling blocks, plus an outer `L1`.
  ParseResult r =
      parseOk(test::wrapKernel("{ bra.uni L1;\nL1: add.s32 %r1, %r1, 1; }\n"
                               "{ L1: add.s32 %r2, %r2, 1;\n @%p1 bra.uni L1; }\n"
                               "bra.uni L1;\nL1: ret;"));
  const Function* k = test::firstFunction(r);
  ASSERT_NE(k, nullptr);
  std::vector<std::string> labels;
  std::vector<std::string> targets;
  for (const Statement& s : k->body) {
    if (s.isLabel())
      labels.emplace_back(s.labelName());
    else if (s.instruction.opcode == Opcode::bra)
      targets.emplace_back(s.instruction.operands()[0].symbol());
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"L1", "L1#1", "L1#2"}));
  EXPECT_EQ(targets, (std::vector<std::string>{"L1", "L1#1", "L1#2"}));
  std::string printed = printModule(r.module);
  ParseResult again = parseModule(printed, "printed.ptx");
  EXPECT_FALSE(again.hasErrors()) << again.formatDiagnostics() << printed;
  EXPECT_NE(printed.find("L1$1:"), std::string::npos);
}

// nvcc -lineinfo: each instruction carries the CUDA position of the last .loc before it (for
// memcheck reports), for code inlined from elsewhere the outermost caller's (inlined_at); a new
// body starts without one.
TEST(PtxSyntax, LocDirectivesGiveInstructionsTheirSourceLine) {
  ParseResult r = parseOk(
      ".version 8.0\n.target sm_75\n.address_size 64\n.file 1 \"/src/k.cu\"\n"
      ".visible .entry k(.param .u64 p)\n{\n.reg .b64 %rd<2>;\n"
      "ld.param.u64 %rd1, [p];\n"
      ".loc 1 12 5\nst.global.u64 [%rd1], %rd1;\n"
      ".loc 1 14 3, function_name $L__info_string0, inlined_at 1 20 1\nret;\n}\n"
      ".visible .entry k2()\n{\nret;\n}\n");
  ASSERT_EQ(r.module.functions.size(), 2u);
  ASSERT_GE(r.module.files.size(), 2u);
  EXPECT_EQ(r.module.files[1], "/src/k.cu");
  const Function& k = r.module.functions[0];
  ASSERT_EQ(k.body.size(), 3u);
  EXPECT_EQ(k.body[0].instruction.sourceLine, 0u);
  EXPECT_EQ(k.body[1].instruction.sourceFile, 1u);
  EXPECT_EQ(k.body[1].instruction.sourceLine, 12u);
  EXPECT_EQ(k.body[2].instruction.sourceLine, 20u);  // inlined: the caller's line
  EXPECT_EQ(r.module.functions[1].body[0].instruction.sourceLine, 0u);
}

}  // namespace
}  // namespace rocuda::ptx
