// Instructions: opcodes, modifier decoding, guards and every operand form.
#include <gtest/gtest.h>

#include "ptx/printer.h"
#include "ptx_test_util.h"

namespace rocuda::ptx {
namespace {

using test::onlyInstruction;
using test::parseKernel;
using test::registerName;

// Parses one instruction in the test kernel; fails the test on any diagnostic.
struct One {
  ParseResult result;
  const Instruction* inst = nullptr;
  const Function* function = nullptr;
  explicit One(std::string_view body, std::string_view moduleScope = "") {
    result = parseKernel(body, moduleScope);
    EXPECT_FALSE(result.hasErrors()) << result.formatDiagnostics();
    inst = onlyInstruction(result);
    function = test::firstFunction(result);
  }
  std::string reg(size_t operand) const { return registerName(*function, inst->operands()[operand]); }
};

TEST(PtxInstruction, ModifiersTypesSpaceAndVectorAreDecoded) {
  One ld("ld.global.nc.v4.f32 {%f1, %f2, _, %f4}, [%rd1+16];");
  ASSERT_NE(ld.inst, nullptr);
  EXPECT_EQ(ld.inst->opcode, Opcode::ld);
  EXPECT_EQ(ld.inst->space, StateSpace::Global);
  EXPECT_EQ(ld.inst->vectorWidth, 4);
  EXPECT_EQ(test::strings(ld.inst->modifiers()), std::vector<std::string>{"nc"});
  EXPECT_EQ(test::toVector(ld.inst->types()), std::vector<ScalarType>{ScalarType::F32});
  ASSERT_EQ(ld.inst->operands().size(), 2u);
  const Operand& vec = ld.inst->operands()[0];
  ASSERT_EQ(vec.kind, Operand::Kind::Vector);
  ASSERT_EQ(vec.elements().size(), 4u);
  EXPECT_EQ(registerName(*ld.function, vec.elements()[1]), "%f2");
  EXPECT_EQ(vec.elements()[2].kind, Operand::Kind::Sink);
  const Operand& addr = ld.inst->operands()[1];
  ASSERT_EQ(addr.kind, Operand::Kind::Address);
  EXPECT_EQ(addr.address().baseKind, Address::BaseKind::Register);
  EXPECT_EQ(ld.function->registerName(addr.address().reg), "%rd1");
  EXPECT_EQ(addr.address().offset, 16);

  One cvt("cvt.rn.ftz.f32.f64 %f1, %fd1;");
  EXPECT_EQ(test::strings(cvt.inst->modifiers()), (std::vector<std::string>{"rn", "ftz"}));
  EXPECT_EQ(test::toVector(cvt.inst->types()), (std::vector<ScalarType>{ScalarType::F32, ScalarType::F64}));
  EXPECT_TRUE(cvt.inst->hasModifier("ftz"));
  EXPECT_FALSE(cvt.inst->hasModifier("rz"));

  One setp("setp.lt.and.f32 %p1, %f1, %f2, !%p2;");
  EXPECT_EQ(test::strings(setp.inst->modifiers()), (std::vector<std::string>{"lt", "and"}));
  ASSERT_EQ(setp.inst->operands().size(), 4u);
  EXPECT_TRUE(setp.inst->operands()[3].negated);
  EXPECT_EQ(setp.reg(3), "%p2");

  One wide("mul.wide.s32 %rd1, %r1, 4;");
  EXPECT_EQ(test::strings(wide.inst->modifiers()), std::vector<std::string>{"wide"});
  EXPECT_EQ(wide.inst->operands()[2].kind, Operand::Kind::Immediate);
  EXPECT_EQ(wide.inst->operands()[2].imm().bits, 4u);
}

TEST(PtxInstruction, ScopedModifiersAndSharedSpaces) {
  One atom("atom.global.add.u32 %r1, [%rd1], 1;");
  EXPECT_EQ(test::strings(atom.inst->modifiers()), std::vector<std::string>{"add"});
  EXPECT_EQ(atom.inst->space, StateSpace::Global);

  One hint("ld.global.L1::evict_last.L2::cache_hint.b32 %r1, [%rd1], %rd2;");
  EXPECT_EQ(test::strings(hint.inst->modifiers()), (std::vector<std::string>{"L1::evict_last", "L2::cache_hint"}));
  EXPECT_EQ(hint.inst->operands().size(), 3u);

  One acquire("ld.acquire.gpu.shared::cta.u32 %r1, [%r2];");
  EXPECT_EQ(acquire.inst->space, StateSpace::Shared);
  EXPECT_EQ(test::strings(acquire.inst->modifiers()), (std::vector<std::string>{"acquire", "gpu"}));

  One cluster("st.shared::cluster.u32 [%r1], %r2;");
  EXPECT_EQ(cluster.inst->space, StateSpace::SharedCluster);

  One bulk(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
      "[%r1], [%rd1], %r2, [%r3];");
  EXPECT_EQ(bulk.inst->opcode, Opcode::cp_async);
  EXPECT_EQ(bulk.inst->space, StateSpace::SharedCluster);
  EXPECT_EQ(test::strings(bulk.inst->modifiers()),
            (std::vector<std::string>{"bulk", "global", "mbarrier::complete_tx::bytes"}));

  One bar("bar.sync 0;");
  EXPECT_EQ(bar.inst->opcode, Opcode::bar);
  EXPECT_EQ(test::strings(bar.inst->modifiers()), std::vector<std::string>{"sync"});

  One pack("cvt.pack.sat.u8.s32.b32 %r1, %r2, %r3, %r4;");
  EXPECT_EQ(pack.inst->opcode, Opcode::cvt_pack);
  EXPECT_EQ(test::strings(pack.inst->modifiers()), std::vector<std::string>{"sat"});

  One keyword("and.pred %p1, %p2, %p3;");
  EXPECT_EQ(keyword.inst->opcode, Opcode::and_);
  EXPECT_EQ(test::toVector(keyword.inst->types()), std::vector<ScalarType>{ScalarType::Pred});
}

TEST(PtxInstruction, GuardsAndPredicatePairs) {
  One guarded("@%p1 bra $L;\n$L: ");
  ParseResult r = parseKernel("@!%p3 add.s32 %r1, %r2, %r3;");
  ASSERT_FALSE(r.hasErrors()) << r.formatDiagnostics();
  const Instruction* inst = onlyInstruction(r);
  ASSERT_NE(inst, nullptr);
  ASSERT_TRUE(inst->guard().has_value());
  EXPECT_TRUE(inst->guardNegated);
  EXPECT_EQ(test::firstFunction(r)->registerName(*inst->guard()), "%p3");

  One pair("setp.gt.s32 %p1|%p2, %r1, %r2;");
  ASSERT_EQ(pair.inst->operands().size(), 4u);
  EXPECT_EQ(pair.reg(0), "%p1");
  EXPECT_EQ(pair.reg(1), "%p2");
  EXPECT_TRUE(pair.inst->destinationPair);
  One single("setp.gt.s32 %p1, %r1, %r2;");
  EXPECT_FALSE(single.inst->destinationPair);
}

TEST(PtxInstruction, SpecialRegisters) {
  struct Case {
    const char* text;
    SpecialRegister reg;
    uint32_t index;
  };
  const Case cases[] = {
      {"%tid.x", SpecialRegister::TidX, 0},
      {"%ntid.z", SpecialRegister::NtidZ, 0},
      {"%ctaid.y", SpecialRegister::CtaidY, 0},
      {"%nctaid.x", SpecialRegister::NctaidX, 0},
      {"%laneid", SpecialRegister::LaneId, 0},
      {"%warpid", SpecialRegister::WarpId, 0},
      {"%smid", SpecialRegister::SmId, 0},
      {"%lanemask_lt", SpecialRegister::LanemaskLt, 0},
      {"%clock", SpecialRegister::Clock, 0},
      {"%cluster_ctarank", SpecialRegister::ClusterCtaRank, 0},
      {"%cluster_nctaid.y", SpecialRegister::ClusterNctaIdY, 0},
      {"%dynamic_smem_size", SpecialRegister::DynamicSmemSize, 0},
      {"%envreg3", SpecialRegister::Envreg, 3},
      {"%pm7", SpecialRegister::Pm, 7},
      {"%reserved_smem_offset_1", SpecialRegister::ReservedSmemOffsetN, 1},
  };
  for (const Case& c : cases) {
    One mov(std::string("mov.u32 %r1, ") + c.text + ";");
    ASSERT_NE(mov.inst, nullptr) << c.text;
    const Operand& op = mov.inst->operands()[1];
    EXPECT_EQ(op.kind, Operand::Kind::SpecialRegister) << c.text;
    EXPECT_EQ(op.special(), c.reg) << c.text;
    EXPECT_EQ(op.envregIndex(), c.index) << c.text;
  }
  One clock("mov.u64 %rd1, %clock64;");
  EXPECT_EQ(clock.inst->operands()[1].special(), SpecialRegister::Clock64);
  One warpSize("mov.u32 %r1, WARP_SZ;");
  EXPECT_EQ(warpSize.inst->operands()[1].kind, Operand::Kind::SpecialRegister);
  EXPECT_EQ(warpSize.inst->operands()[1].special(), SpecialRegister::WarpSize);
  EXPECT_EQ(printInstruction(*warpSize.function, *warpSize.inst), "mov.u32 %r1, WARP_SZ;");
  One timer("mov.u64 %rd1, %globaltimer;");
  EXPECT_EQ(timer.inst->operands()[1].special(), SpecialRegister::GlobalTimer);
}

TEST(PtxInstruction, Immediates) {
  struct Case {
    const char* text;
    Immediate::Kind kind;
    uint64_t bits;
  };
  const Case cases[] = {
      {"42", Immediate::Kind::Integer, 42},
      {"-1", Immediate::Kind::Integer, UINT64_MAX},
      {"0x7fffffff", Immediate::Kind::Integer, 0x7fffffff},
      {"0XFFU", Immediate::Kind::Integer, 255},
      {"017", Immediate::Kind::Integer, 15},
      {"0b1011", Immediate::Kind::Integer, 11},
      {"4294967295U", Immediate::Kind::Integer, 4294967295u},
      {"0", Immediate::Kind::Integer, 0},
      {"0f3F800000", Immediate::Kind::F32Bits, 0x3F800000},
      {"0FBF800000", Immediate::Kind::F32Bits, 0xBF800000},
      {"-0f3F800000", Immediate::Kind::F32Bits, 0xBF800000},
      {"0d3FF0000000000000", Immediate::Kind::F64Bits, 0x3FF0000000000000},
      {"0D7FF0000000000000", Immediate::Kind::F64Bits, 0x7FF0000000000000},
      {"-9223372036854775808", Immediate::Kind::Integer, 0x8000000000000000ull},
  };
  for (const Case& c : cases) {
    // ptxas takes 0f constants in 32-bit moves only.
    bool f32 = c.kind == Immediate::Kind::F32Bits;
    One mov(std::string(f32 ? "mov.f32 %f1, " : "mov.b64 %rd1, ") + c.text + ";");
    ASSERT_NE(mov.inst, nullptr) << c.text;
    const Operand& op = mov.inst->operands()[1];
    ASSERT_EQ(op.kind, Operand::Kind::Immediate) << c.text;
    EXPECT_EQ(op.imm().kind, c.kind) << c.text;
    EXPECT_EQ(op.imm().bits, c.bits) << c.text;
  }
  One decimal("mov.f64 %fd1, 1.5e-3;");
  EXPECT_EQ(decimal.inst->operands()[1].imm().kind, Immediate::Kind::Double);
  EXPECT_DOUBLE_EQ(decimal.inst->operands()[1].imm().value, 1.5e-3);
  One negative("mov.f32 %f1, -2.25;");
  EXPECT_DOUBLE_EQ(negative.inst->operands()[1].imm().value, -2.25);
}

TEST(PtxInstruction, AddressForms) {
  const char* scope = ".global .align 4 .b8 buf[64];";
  One neg("ld.global.u32 %r1, [%rd1+-4];", scope);
  EXPECT_EQ(neg.inst->operands()[1].address().offset, -4);
  One minus("ld.global.u32 %r1, [%rd1-8];", scope);
  EXPECT_EQ(minus.inst->operands()[1].address().offset, -8);
  One sym("ld.global.u32 %r1, [buf];", scope);
  EXPECT_EQ(sym.inst->operands()[1].address().baseKind, Address::BaseKind::Symbol);
  EXPECT_EQ(sym.inst->operands()[1].address().symbol, "buf");
  One symOffset("ld.global.u32 %r1, [buf+8];", scope);
  EXPECT_EQ(symOffset.inst->operands()[1].address().offset, 8);
  One absolute("ld.shared.u32 %r1, [1024];", scope);
  EXPECT_EQ(absolute.inst->operands()[1].address().baseKind, Address::BaseKind::None);
  EXPECT_EQ(absolute.inst->operands()[1].address().offset, 1024);
  One param("ld.param.u64 %rd1, [k_param_0];");
  EXPECT_EQ(param.inst->operands()[1].address().symbol, "k_param_0");
  One hex("st.global.u32 [%rd2+0x10], %r1;", scope);
  EXPECT_EQ(hex.inst->operands()[0].address().offset, 16);
  One tex("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f6}];");
  const Operand& texAddr = tex.inst->operands()[1];
  EXPECT_EQ(texAddr.kind, Operand::Kind::Address);
  ASSERT_EQ(texAddr.elements().size(), 1u);
  EXPECT_EQ(texAddr.elements()[0].kind, Operand::Kind::Vector);
  EXPECT_EQ(texAddr.elements()[0].elements().size(), 2u);
}

TEST(PtxInstruction, SymbolOperands) {
  const char* scope = ".global .align 4 .b8 buf[64];";
  One mov("mov.u64 %rd1, buf;", scope);
  EXPECT_EQ(mov.inst->operands()[1].kind, Operand::Kind::Symbol);
  EXPECT_EQ(mov.inst->operands()[1].symbol(), "buf");
  One offset("mov.u64 %rd1, buf+4;", scope);
  EXPECT_EQ(offset.inst->operands()[1].symbolOffset(), 4);
  One cvta("cvta.global.u64 %rd1, buf;", scope);
  EXPECT_EQ(cvta.inst->space, StateSpace::Global);
}

TEST(PtxInstruction, VectorMovAndPackedRegisters) {
  One pack("mov.b64 %rd1, {%r1, %r2};");
  ASSERT_EQ(pack.inst->operands()[1].kind, Operand::Kind::Vector);
  EXPECT_EQ(pack.inst->operands()[1].elements().size(), 2u);
  One unpack("mov.b32 {%h1, _}, %r1;");
  EXPECT_EQ(unpack.inst->operands()[0].elements()[1].kind, Operand::Kind::Sink);
  One imm("st.global.v2.u32 [%rd1], {%r1, 0};");
  EXPECT_EQ(imm.inst->operands()[1].elements()[1].kind, Operand::Kind::Immediate);
}

TEST(PtxInstruction, CallsUseListOperands) {
  const char* scope = ".func (.param .b32 r) _Z3fooi(.param .b32 a) { ret; }";
  One call(
      "{ .param .b32 param0; .param .b32 retval0;\n"
      "call.uni (retval0), _Z3fooi, (param0); }",
      scope);
  ASSERT_NE(call.inst, nullptr);
  EXPECT_EQ(test::strings(call.inst->modifiers()), std::vector<std::string>{"uni"});
  ASSERT_EQ(call.inst->operands().size(), 3u);
  EXPECT_EQ(call.inst->operands()[0].kind, Operand::Kind::List);
  EXPECT_EQ(call.inst->operands()[1].symbol(), "_Z3fooi");
  EXPECT_EQ(call.inst->operands()[2].elements().size(), 1u);
  One noArgs("call.uni _Z3fooi, ();", scope);
  EXPECT_EQ(noArgs.inst->operands()[1].kind, Operand::Kind::List);
  EXPECT_TRUE(noArgs.inst->operands()[1].elements().empty());
}

TEST(PtxInstruction, InlineAsmRegistersWithoutPercent) {
  One body("{ .reg .pred p; .reg .b32 t; setp.ne.u32 p, %r1, 0; @p add.u32 t, %r1, 1; }");
  EXPECT_EQ(body.inst, nullptr);  // two instructions
  const Function* k = body.function;
  ASSERT_EQ(k->body.size(), 2u);
  const Instruction& add = k->body[1].instruction;
  ASSERT_TRUE(add.guard().has_value());
  EXPECT_EQ(k->registerName(*add.guard()), "p");
  EXPECT_EQ(registerName(*k, add.operands()[0]), "t");
}

TEST(PtxInstruction, EveryOpcodeSpellingIsRecognised) {
  // A handful of rarely seen opcodes, each in a minimal valid form.
  const char* bodies[] = {
      "trap;",
      "exit;",
      "brkpt;",
      "membar.gl;",
      "fence.sc.gpu;",
      "activemask.b32 %r1;",
      "nanosleep.u32 100;",
      "griddepcontrol.wait;",
      "elect.sync %r1|%p1, -1;",
      "redux.sync.add.u32 %r1, %r2, -1;",
      "lop3.b32 %r1, %r2, %r3, %r4, 0x96;",
      "prmt.b32 %r1, %r2, %r3, 0x3210;",
      "vote.sync.ballot.b32 %r1, %p1, -1;",
      "shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1;",
      "dp4a.u32.u32 %r1, %r2, %r3, %r4;",
      "tanh.approx.f32 %f1, %f2;",
      "copysign.f32 %f1, %f2, %f3;",
      "bfind.u32 %r1, %r2;",
      "testp.finite.f32 %p1, %f1;",
      "isspacep.global %p1, %rd1;",
      "stacksave.u64 %rd1;",
      "discard.global.L2 [%rd1], 128;",
      "applypriority.global.L2::evict_normal [%rd1], 128;",
      "mapa.u64 %rd1, %rd2, %r1;",
  };
  for (const char* body : bodies) {
    ParseResult r = parseKernel(body);
    EXPECT_FALSE(r.hasErrors()) << body << "\n" << r.formatDiagnostics();
    EXPECT_NE(onlyInstruction(r), nullptr) << body;
  }
}

TEST(PtxInstruction, PrinterSpellsInstructionsBack) {
  const char* cases[][2] = {
      {"ld.global.nc.v4.f32 {%f1, %f2, _, %f4}, [%rd1+16];",
       "ld.global.nc.v4.f32 {%f1, %f2, _, %f4}, [%rd1+16];"},
      {"@!%p1 st.shared::cta.u32 [%r1+-4], %r2;", "@!%p1 st.shared::cta.u32 [%r1+-4], %r2;"},
      {"ld.param::entry.u32 %r1, [%rd1+4];", "ld.param::entry.u32 %r1, [%rd1+4];"},
      {"setp.lt.and.f32 %p1|%p2, %f1, 0f3F800000, !%p3;",
       "setp.lt.and.f32 %p1|%p2, %f1, 0f3F800000, !%p3;"},
      {"mov.u32 %r1, %ctaid.y;", "mov.u32 %r1, %ctaid.y;"},
      {"mov.b64 %rd1, 0x10;", "mov.b64 %rd1, 16;"},
      {"cvt.rn.f32.f64 %f1, 1.5;", "cvt.rn.f32.f64 %f1, 1.5;"},
  };
  for (const auto& c : cases) {
    One one(c[0]);
    ASSERT_NE(one.inst, nullptr) << c[0];
    EXPECT_EQ(printInstruction(*one.function, *one.inst), c[1]);
  }
}

}  // namespace
TEST(PtxInstruction, VideoSelectorsAndNegatedSources) {
  One vadd("vadd.s32.u32.s32.sat.add %r1, %r2.b0, %r3.h1, %r4;");
  ASSERT_NE(vadd.inst, nullptr);
  EXPECT_EQ(vadd.inst->operands()[0].component(), "");
  EXPECT_EQ(vadd.inst->operands()[1].component(), "b0");
  EXPECT_EQ(vadd.inst->operands()[2].component(), "h1");
  One simd("vadd4.u32.u32.u32.sat %r1.b3210, %r2.b7654, %r3.b0123, %r4;");
  ASSERT_NE(simd.inst, nullptr);
  EXPECT_EQ(simd.inst->operands()[1].component(), "b7654");
  One vmad("vmad.s32.u32.u32 %r1, -%r2, %r3.h0, %r4;");
  ASSERT_NE(vmad.inst, nullptr);
  EXPECT_TRUE(vmad.inst->operands()[1].minus());
  EXPECT_FALSE(vmad.inst->operands()[2].minus());
  ParseResult bad = parseKernel("vadd.s32.u32.s32 %r1, %r2.b8, %r3, %r4;");
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].message, "invalid register component '.b8'");
}

TEST(PtxInstruction, VectorSpecialRegisters) {
  One w("mov.u32 %r1, %ctaid.w;");
  ASSERT_NE(w.inst, nullptr);
  EXPECT_EQ(w.inst->operands()[1].special(), SpecialRegister::CtaidX);
  EXPECT_EQ(w.inst->operands()[1].vectorForm(), Operand::VectorForm::W);
  One whole("mov.v4.u32 {%r1, %r2, %r3, %r4}, %tid;");
  ASSERT_NE(whole.inst, nullptr);
  EXPECT_EQ(whole.inst->operands()[1].vectorForm(), Operand::VectorForm::Whole);
  One x("mov.u32 %r1, %tid.y;");
  EXPECT_EQ(x.inst->operands()[1].special(), SpecialRegister::TidY);
  EXPECT_EQ(x.inst->operands()[1].vectorForm(), Operand::VectorForm::Component);
}

TEST(PtxInstruction, TextureSamplerAndSurfaceReferences) {
  const char* scope =
      ".global .texref t;\n"
      ".global .samplerref s = { addr_mode_0 = clamp_to_edge, filter_mode = linear };\n"
      ".global .surfref u;\n";
  // Separate samplers exist only in texmode_independent.
  std::string text =
      test::wrapKernel("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [t, s, {%f5, %f6}];", scope);
  text.replace(text.find(".target sm_90"), 13, ".target sm_90, texmode_independent");
  ParseResult r = parseModule(text, "test.ptx");
  ASSERT_FALSE(r.hasErrors()) << r.formatDiagnostics();
  const Variable* sampler = r.module.findGlobal("s");
  ASSERT_NE(sampler, nullptr);
  EXPECT_EQ(sampler->type, ScalarType::SamplerRef);
  EXPECT_EQ(sampler->opaqueFields,
            (std::vector<std::pair<std::string, std::string>>{{"addr_mode_0", "clamp_to_edge"},
                                                              {"filter_mode", "linear"}}));
  EXPECT_EQ(r.module.findGlobal("t")->type, ScalarType::TexRef);
  EXPECT_EQ(r.module.findGlobal("u")->sizeInBytes(), 8u);
  const Instruction* tex = onlyInstruction(r);
  ASSERT_NE(tex, nullptr);
  const Operand& address = tex->operands()[1];
  EXPECT_EQ(address.address().symbol, "t");
  ASSERT_EQ(address.elements().size(), 2u);
  EXPECT_EQ(address.elements()[0].symbol(), "s");
  EXPECT_EQ(address.elements()[1].kind, Operand::Kind::Vector);
}

}  // namespace rocuda::ptx
