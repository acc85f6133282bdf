// Linking parsed PTX modules: extern resolution, duplicate and weak definitions, renaming of
// colliding module-local names, headers; the result prints to PTX that parses back.
#include "ptx/link.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ptx/parser.h"
#include "ptx/printer.h"

namespace rocuda::ptx {
namespace {

Module parse(const std::string& text) {
  ParseResult parsed = parseModule(text, "<test>");
  EXPECT_FALSE(parsed.hasErrors()) << parsed.formatDiagnostics();
  return std::move(parsed.module);
}

const char* kCaller = R"(
.version 7.0
.target sm_50
.address_size 64
.extern .func (.param .b32 ret) twice(.param .b32 x);
.extern .global .align 4 .u32 scale;
.global .align 4 .u32 helper_state = 1;
.func (.param .b32 r) helper(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [x];
  ld.global.u32 %r2, [helper_state];
  add.s32 %r1, %r1, %r2;
  st.param.b32 [r], %r1;
  ret;
}
.visible .entry run(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 3;
  {
    .param .b32 a;
    .param .b32 b;
    st.param.b32 [a], %r1;
    call.uni (b), twice, (a);
    ld.param.b32 %r2, [b];
  }
  ld.global.u32 %r3, [scale];
  mul.lo.s32 %r2, %r2, %r3;
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

const char* kCallee = R"(
.version 7.8
.target sm_80
.address_size 64
.visible .global .align 4 .u32 scale = 10;
.global .align 4 .u32 helper_state = 2;
.func (.param .b32 r) helper(.param .b32 x)
{
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [x];
  st.param.b32 [r], %r1;
  ret;
}
.visible .func (.param .b32 r) twice(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.u32 %r1, [x];
  add.s32 %r2, %r1, %r1;
  st.param.b32 [r], %r2;
  ret;
}
)";

const Function* findFunction(const Module& m, const std::string& name, bool definition) {
  for (const Function& f : m.functions)
    if (f.name == name && f.isDeclaration != definition) return &f;
  return nullptr;
}

TEST(PtxLink, ExternsBindToDefinitionsInOtherModules) {
  LinkResult linked = linkModules({parse(kCaller), parse(kCallee)});
  ASSERT_TRUE(linked.ok()) << linked.errors.front();
  const Module& m = linked.module;
  EXPECT_EQ(m.versionMajor * 10 + m.versionMinor, 78u);
  ASSERT_FALSE(m.targets.empty());
  EXPECT_EQ(m.targets[0], "sm_80");
  ASSERT_NE(findFunction(m, "twice", true), nullptr);
  EXPECT_EQ(findFunction(m, "twice", false), nullptr) << "the extern declaration is resolved";
  const Variable* scale = m.findGlobal("scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->linkage, Linkage::Visible);
  EXPECT_TRUE(scale->hasInitializer);
  // Both modules' local `helper` and `helper_state` survive under distinct names: the first
  // module's are renamed, after which the second module's no longer collide.
  EXPECT_NE(findFunction(m, "helper_rl0", true), nullptr);
  EXPECT_NE(findFunction(m, "helper", true), nullptr);
  ASSERT_NE(m.findGlobal("helper_state_rl0"), nullptr);
  ASSERT_NE(m.findGlobal("helper_state"), nullptr);
  EXPECT_EQ(m.findGlobal("helper_state_rl0")->initializer[0].number().bits, 1u);
  EXPECT_EQ(m.findGlobal("helper_state")->initializer[0].number().bits, 2u);
  // References were renamed with them: the printed module parses back and names them.
  std::string text = printModule(m);
  ParseResult again = parseModule(text, "<linked>");
  EXPECT_FALSE(again.hasErrors()) << again.formatDiagnostics() << "\n" << text;
  EXPECT_NE(text.find("[helper_state_rl0]"), std::string::npos) << text;
  const Function* run = findFunction(m, "run", true);
  ASSERT_NE(run, nullptr);
  bool callsTwice = false;
  for (const Statement& s : run->body)
    for (const Operand& op : s.instruction.operands())
      callsTwice = callsTwice || (op.kind == Operand::Kind::Symbol && op.symbol() == "twice");
  EXPECT_TRUE(callsTwice);
}

TEST(PtxLink, UnresolvedExternsStayDeclarations) {
  LinkResult linked = linkModules({parse(kCaller)});
  ASSERT_TRUE(linked.ok());
  const Function* twice = findFunction(linked.module, "twice", false);
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(twice->linkage, Linkage::Extern);
  const Variable* scale = linked.module.findGlobal("scale");
  ASSERT_NE(scale, nullptr);
  EXPECT_EQ(scale->linkage, Linkage::Extern);
  EXPECT_NE(findFunction(linked.module, "helper", true), nullptr) << "nothing to rename alone";
}

TEST(PtxLink, DuplicateStrongDefinitionsFail) {
  LinkResult linked = linkModules({parse(kCallee), parse(kCallee)});
  ASSERT_FALSE(linked.ok());
  bool named = false;
  for (const std::string& e : linked.errors)
    named = named || e.find("'scale'") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_FALSE(linkModules({}).ok());
}

TEST(PtxLink, WeakYieldsToStrong) {
  const char* weak = R"(
.version 7.0
.target sm_50
.address_size 64
.weak .global .align 4 .u32 level = 1;
)";
  const char* strong = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .global .align 4 .u32 level = 2;
)";
  LinkResult linked = linkModules({parse(weak), parse(strong), parse(weak)});
  ASSERT_TRUE(linked.ok()) << linked.errors.front();
  ASSERT_EQ(linked.module.globals.size(), 1u);
  EXPECT_EQ(linked.module.globals[0].linkage, Linkage::Visible);
  ASSERT_EQ(linked.module.globals[0].initializer.size(), 1u);
  EXPECT_EQ(linked.module.globals[0].initializer[0].number().bits, 2u);
}

TEST(PtxLink, AddressSizesMustAgree) {
  const char* narrow = R"(
.version 7.0
.target sm_50
.address_size 32
)";
  EXPECT_FALSE(linkModules({parse(kCallee), parse(narrow)}).ok());
}

}  // namespace
}  // namespace rocuda::ptx
