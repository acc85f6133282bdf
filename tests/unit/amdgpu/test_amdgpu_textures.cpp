// Texture and surface instructions on AMD GPUs: the device library's sampler (the CPU device's
// own code, compiled to amdgcn bitcode at build time) is linked into the module, so every
// instruction compiles for a wave32 and a wave64 target with no runtime function left to call.
// A build without the library refuses them by name instead, never producing wrong code.
#include <gtest/gtest.h>

#include <string>

#include "compiler/amdgpu/amdgpu_codegen.h"
#include "compiler/amdgpu/amdgpu_lowering.h"
#include "compiler/compiler.h"

namespace rocuda::compiler {
namespace {

std::string kernelWith(const std::string& body) {
  return R"(
.version 8.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 t, .param .u64 p)
{
  .reg .b32 %r<8>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [t];
  ld.param.u64 %rd2, [p];
  mov.f32 %f1, 0f3F000000;
  mov.u32 %r1, 4;
)" + body +
         "\n  ret;\n}\n";
}

TEST(AmdgpuTextures, CompileWithTheDeviceLibrarysSampler) {
  const std::pair<std::string, const char*> cases[] = {
      {kernelWith("tex.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];\n"
                  "st.global.f32 [%rd2], %f2;"),
       "__rocuda_tex_fetch_f"},
      {kernelWith("tld4.r.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];\n"
                  "st.global.f32 [%rd2], %f2;"),
       "__rocuda_tex_gather"},
      {kernelWith("suld.b.2d.b32.clamp {%r2}, [%rd1, {%r1, %r1}];\nst.global.u32 [%rd2], %r2;"),
       "__rocuda_surf_load"},
      {kernelWith("sust.b.1d.b32.zero [%rd1, {%r1}], {%r1};"), "__rocuda_surf_store"},
      {kernelWith("sured.b.add.1d.u32.zero [%rd1, {%r1}], %r1;"), "__rocuda_surf_reduce"},
      {kernelWith("txq.width.b32 %r2, [%rd1];\nst.global.u32 [%rd2], %r2;"), "__rocuda_tex_query"},
  };
  for (const auto& [ptx, name] : cases) {
    SCOPED_TRACE(name);
    for (const char* processor : {"gfx1100", "gfx90a"}) {
      AmdgpuTarget target{processor, "", 5};
      if (!amdgpu::hasDeviceLibrary()) {
        auto co = compileForAmdgpu(ptx, "textures", target);
        ASSERT_FALSE(co.ok()) << ptx;
        EXPECT_EQ(co.error().code, ErrorCode::UnsupportedPtx) << co.error().message;
        EXPECT_NE(co.error().message.find(name), std::string::npos) << co.error().message;
        continue;
      }
      AmdgpuCompileOptions ir;
      ir.output = AmdgpuOutput::LlvmIr;
      auto lowered = compileForAmdgpu(ptx, "textures", target, ir);
      ASSERT_TRUE(lowered.ok()) << lowered.error().message;
      std::string text(lowered->output.begin(), lowered->output.end());
      // Linked and inlined: neither a declaration nor a call of the function remains.
      EXPECT_EQ(text.find(std::string("@") + name), std::string::npos) << text;
      EXPECT_EQ(text.find("declare void @__rocuda"), std::string::npos);
      EXPECT_EQ(text.find("declare i32 @__rocuda"), std::string::npos);
      auto co = compileForAmdgpu(ptx, "textures", target);
      ASSERT_TRUE(co.ok()) << co.error().message;
      EXPECT_GT(co->output.size(), 64u);
    }
  }
}

}  // namespace
}  // namespace rocuda::compiler
