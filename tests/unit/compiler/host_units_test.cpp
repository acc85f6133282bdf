// compileForHost's units (compiler::HostUnit): the Globals unit of a module holds its variables
// and describes every kernel, a Kernel unit holds one kernel and what it calls with the globals
// left to the Globals unit, and modules that take a function's address stay whole.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/compiler.h"
#include "test_runtime.h"

namespace rocuda::compiler {
namespace {

const char* kModulePtx = R"(.version 7.0
.target sm_75
.address_size 64
.visible .global .align 8 .u64 base = 40;
.visible .const .align 4 .u32 step[2] = {1, 2};
.func (.param .b64 r) add_base(.param .b64 x)
{
  .reg .b64 %rd<4>;
  ld.param.b64 %rd1, [x];
  ld.global.u64 %rd2, [base];
  add.s64 %rd3, %rd1, %rd2;
  st.param.b64 [r], %rd3;
  ret;
}
.visible .entry first(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [out];
  ld.const.u32 %r1, [step+4];
  cvt.u64.u32 %rd2, %r1;
  {
  .param .b64 a;
  .param .b64 b;
  st.param.b64 [a], %rd2;
  call.uni (b), add_base, (a);
  ld.param.b64 %rd3, [b];
  }
  st.global.u64 [%rd1], %rd3;
  ret;
}
.visible .entry second(.param .u64 out, .param .u32 n)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  st.global.u32 [%rd1], %r1;
  ret;
}
)";

CompileOptions threadEntries() {
  CompileOptions options;
  options.blockFunctions = false;  // the test runtime's symbols drive one thread per call
  return options;
}

TEST(HostUnits, GlobalsUnitDescribesEveryKernelAndDefinesOnlyVariables) {
  auto globals =
      compileForHost(kModulePtx, "units", threadEntries(), {HostUnit::Kind::Globals, {}});
  ASSERT_TRUE(globals.ok()) << globals.error().message;
  EXPECT_TRUE(globals->info.kernelsCompiledSeparately);
  ASSERT_EQ(globals->info.kernels.size(), 2u);
  EXPECT_EQ(globals->info.kernels[1].name, "second");
  EXPECT_EQ(globals->info.kernels[1].params.size(), 2u);
  EXPECT_EQ(globals->info.kernels[1].paramBufferSize, 16u);
  ASSERT_EQ(globals->info.globals.size(), 2u);
  auto code = loadHostCode(*globals, test::testRuntimeSymbols());
  ASSERT_TRUE(code.ok()) << code.error().message;
  EXPECT_EQ(*static_cast<uint64_t*>((*code)->lookup("base")), 40u);
  EXPECT_EQ((*code)->lookup("first"), nullptr);  // no kernel in this unit
  EXPECT_EQ((*code)->lookup("second"), nullptr);
}

TEST(HostUnits, KernelUnitLinksAgainstTheGlobalsUnit) {
  auto globals =
      compileForHost(kModulePtx, "units", threadEntries(), {HostUnit::Kind::Globals, {}});
  ASSERT_TRUE(globals.ok()) << globals.error().message;
  auto code = loadHostCode(*globals, test::testRuntimeSymbols());
  ASSERT_TRUE(code.ok()) << code.error().message;

  auto first =
      compileForHost(kModulePtx, "units", threadEntries(), {HostUnit::Kind::Kernel, "first"});
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_FALSE(first->info.kernelsCompiledSeparately);
  ASSERT_EQ(first->info.kernels.size(), 1u);
  EXPECT_EQ(first->info.kernels[0].name, "first");
  EXPECT_TRUE(first->info.globals.empty());  // defined by the Globals unit
  ASSERT_TRUE((*code)->add(*first).ok());

  auto* entry = reinterpret_cast<void (*)(void*)>((*code)->lookup("first"));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ((*code)->lookup("second"), nullptr);  // not compiled by this unit
  uint64_t out = 0;
  void* o = &out;
  std::vector<uint8_t> params = test::packParams(first->info.kernels[0], {&o});
  *static_cast<uint64_t*>((*code)->lookup("base")) = 1000;  // the one copy of `base`
  entry(params.data());
  EXPECT_EQ(out, 1002u);
}

TEST(HostUnits, UnitThatDoesNotLinkIsRemovedAgain) {
  auto globals =
      compileForHost(kModulePtx, "units", threadEntries(), {HostUnit::Kind::Globals, {}});
  ASSERT_TRUE(globals.ok()) << globals.error().message;
  auto code = loadHostCode(*globals, test::testRuntimeSymbols());
  ASSERT_TRUE(code.ok()) << code.error().message;
  // `second` calling a runtime function this runtime does not supply (as a cached object left by
  // another build of Rocuda may): refused, and the replacement defining the same symbols links.
  const char* unlinkable = R"(.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b32 r) __cudaCDP2StreamDestroy(.param .b64 s);
.visible .entry second(.param .u64 out, .param .u32 n)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  cvt.u64.u32 %rd1, %r1;
  {
  .param .b64 a;
  .param .b32 r;
  st.param.b64 [a], %rd1;
  call.uni (r), __cudaCDP2StreamDestroy, (a);
  ld.param.b32 %r1, [r];
  }
  ret;
}
)";
  auto bad =
      compileForHost(unlinkable, "units", threadEntries(), {HostUnit::Kind::Kernel, "second"});
  ASSERT_TRUE(bad.ok()) << bad.error().message;
  Status added = (*code)->add(*bad);
  ASSERT_FALSE(added.ok());
  EXPECT_EQ(added.error().code, ErrorCode::InvalidImage);
  EXPECT_NE(added.error().message.find("__cudaCDP2StreamDestroy"), std::string::npos)
      << added.error().message;

  auto good =
      compileForHost(kModulePtx, "units", threadEntries(), {HostUnit::Kind::Kernel, "second"});
  ASSERT_TRUE(good.ok()) << good.error().message;
  added = (*code)->add(*good);
  ASSERT_TRUE(added.ok()) << added.error().message;
  auto* entry = reinterpret_cast<void (*)(void*)>((*code)->lookup("second"));
  ASSERT_NE(entry, nullptr);
  uint32_t out = 0, n = 77;
  void* o = &out;
  std::vector<uint8_t> params = test::packParams(good->info.kernels[0], {&o, &n});
  entry(params.data());
  EXPECT_EQ(out, 77u);
}

TEST(HostUnits, UnknownKernelIsNotFound) {
  auto unit =
      compileForHost(kModulePtx, "units", threadEntries(), {HostUnit::Kind::Kernel, "nope"});
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.error().code, ErrorCode::NotFound);
  // A function that is not a kernel is not a unit either.
  unit = compileForHost(kModulePtx, "units", threadEntries(), {HostUnit::Kind::Kernel, "add_base"});
  ASSERT_FALSE(unit.ok());
  EXPECT_EQ(unit.error().code, ErrorCode::NotFound);
}

TEST(HostUnits, ModuleTakingAFunctionsAddressStaysWhole) {
  // A table of function pointers: every kernel must see the same address of `add_base`.
  std::string ptx = kModulePtx;
  ptx += ".visible .global .align 8 .u64 table[1] = {add_base};\n";
  auto globals = compileForHost(ptx, "whole", threadEntries(), {HostUnit::Kind::Globals, {}});
  ASSERT_TRUE(globals.ok()) << globals.error().message;
  EXPECT_FALSE(globals->info.kernelsCompiledSeparately);
  auto code = loadHostCode(*globals, test::testRuntimeSymbols());
  ASSERT_TRUE(code.ok()) << code.error().message;
  EXPECT_NE((*code)->lookup("first"), nullptr);
  EXPECT_NE((*code)->lookup("second"), nullptr);
}

TEST(HostUnits, InvalidPtxFailsTheGlobalsUnit) {
  // A module that cannot be compiled fails when it is loaded, not at a kernel's first launch.
  std::string ptx = kModulePtx;
  ptx += ".visible .entry broken() { frobnicate.u32 %r1; }\n";
  auto globals = compileForHost(ptx, "broken", threadEntries(), {HostUnit::Kind::Globals, {}});
  ASSERT_FALSE(globals.ok());
  EXPECT_EQ(globals.error().code, ErrorCode::InvalidPtx);
}

}  // namespace
}  // namespace rocuda::compiler
