// Texture and surface instructions translated by the compiler and run against the CPU device's
// software sampler (texture handles are addresses of support::TextureView built here).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backends/cpu/device_library_runtime.h"
#include "support/texture_view.h"
#include "test_runtime.h"

namespace rocuda::compiler::test {
namespace {

const char* kTexturePtx = R"(
.version 8.0
.target sm_75
.address_size 64

.visible .entry textures(.param .u64 ptex, .param .u64 psurf, .param .u64 pcube,
                         .param .u64 pout)
{
  .reg .b16 %rs<8>;
  .reg .b32 %r<32>;
  .reg .pred %p<2>;
  .reg .f32 %f<24>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [ptex];
  ld.param.u64 %rd2, [psurf];
  ld.param.u64 %rd3, [pcube];
  ld.param.u64 %rd4, [pout];
  mov.f32 %f1, 0f3F800000;   // 1.0
  tld4.r.2d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1, %f1}];
  st.global.v4.f32 [%rd4], {%f2, %f3, %f4, %f5};
  txq.width.b32 %r1, [%rd1];
  txq.height.b32 %r2, [%rd1];
  suq.width.b32 %r3, [%rd2];
  st.global.v4.u32 [%rd4+16], {%r1, %r2, %r3, %r3};
  mov.u32 %r4, 1;
  mov.f32 %f6, 0f3FC00000;   // 1.5
  tex.a1d.v4.f32.f32 {%f7, %f8, %f9, %f10}, [%rd1, {%r4, %f6}];
  st.global.f32 [%rd4+32], %f7;
  mov.f32 %f11, 0fBF800000;  // -1.0
  mov.f32 %f12, 0f00000000;
  tex.cube.v4.f32.f32 {%f13, %f14, %f15, %f16}, [%rd3, {%f11, %f12, %f12, %f12}];
  st.global.f32 [%rd4+36], %f13;
  mov.u32 %r5, 4;
  mov.u32 %r6, 1;
  tex.2d.v4.s32.s32 {%r7, %r8, %r9, %r10}, [%rd1, {%r6, %r6}];
  st.global.u32 [%rd4+40], %r7;
  // Surface: x in bytes. Out of range reads zero (.zero) or the edge (.clamp).
  mov.u32 %r11, 400;
  suld.b.2d.b32.zero {%r12}, [%rd2, {%r11, %r6}];
  st.global.u32 [%rd4+44], %r12;
  suld.b.2d.b32.clamp {%r12}, [%rd2, {%r11, %r6}];
  st.global.u32 [%rd4+48], %r12;
  mov.u32 %r13, 0x00070005;
  sust.b.2d.b32.trap [%rd2, {%r5, %r6}], {%r13};
  suld.b.2d.v2.b16.trap {%rs1, %rs2}, [%rd2, {%r5, %r6}];
  cvt.u32.u16 %r14, %rs2;
  st.global.u32 [%rd4+52], %r14;
  sust.b.2d.b32.zero [%rd2, {%r11, %r11}], {%r13};
  // Half results (.f16 one per register, .f16x2 two) and the residency predicate (PTX 7.1).
  tex.2d.v4.f16.s32 {%rs3, %rs4, %rs5, %rs6}, [%rd1, {%r6, %r6}];
  mov.b32 %r15, {%rs3, %rs4};
  mov.b32 %r16, {%rs5, %rs6};
  mov.u32 %r19, 0;
  tex.2d.v2.f16x2.s32 {%r17, %r18}|%p1, [%rd1, {%r19, %r6}];
  st.global.v4.u32 [%rd4+56], {%r15, %r16, %r17, %r18};
  selp.u32 %r19, 1, 0, %p1;
  st.global.u32 [%rd4+72], %r19;
  // sured: .b at byte 4 of row 0 (texel 1) adds 5 twice; .p at sample 2 of row 1 takes the max;
  // an out-of-range .zero reduction does nothing. sust.p at sample 2 of row 0.
  mov.u32 %r20, 4;
  mov.u32 %r21, 0;
  mov.u32 %r22, 5;
  sured.b.add.2d.u32.trap [%rd2, {%r20, %r21}], %r22;
  sured.b.add.2d.u32.trap [%rd2, {%r20, %r21}], %r22;
  mov.u32 %r23, 2;
  mov.u32 %r24, 1;
  mov.u32 %r25, 120;
  sured.p.max.2d.b32.trap [%rd2, {%r23, %r24}], %r25;
  sured.b.min.2d.s32.zero [%rd2, {%r11, %r24}], %r21;
  mov.u32 %r26, 77;
  sust.p.2d.v4.b32.trap [%rd2, {%r23, %r21}], {%r26, %r26, %r26, %r26};
  ret;
}
)";

TEST(TexturePtx, TranslatedInstructionsSample) {
  // 2 layers of a 2x2 float texture (also read as a 2D texture: layer 0).
  std::vector<float> texels{1, 2, 3, 4, 10, 20, 30, 40};
  support::TextureView tex;
  tex.format = support::TexelFormat::F32;
  tex.shape = support::TextureShape::Array2D;
  tex.data = reinterpret_cast<uint8_t*>(texels.data());
  tex.width = tex.height = 2;
  tex.layers = 2;
  tex.layered = true;
  tex.rowPitch = 8;
  tex.slicePitch = 16;
  tex.address[0] = tex.address[1] = support::TextureAddressMode::Clamp;
  std::vector<uint32_t> surfaceTexels(3 * 2, 0);
  surfaceTexels[3 + 2] = 99;  // the edge texel of row 1
  support::TextureView surf;
  surf.format = support::TexelFormat::U32;
  surf.surface = surf.readAsInteger = true;
  surf.data = reinterpret_cast<uint8_t*>(surfaceTexels.data());
  surf.width = 3;
  surf.height = 2;
  surf.rowPitch = 12;
  surf.slicePitch = 24;
  std::vector<float> faces(6);
  for (int f = 0; f < 6; ++f) faces[f] = 100.0f + f;
  support::TextureView cube;
  cube.format = support::TexelFormat::F32;
  cube.data = reinterpret_cast<uint8_t*>(faces.data());
  cube.width = cube.height = 1;
  cube.cubemap = true;
  cube.layers = 6;
  cube.rowPitch = cube.slicePitch = 4;

  auto object = compileForHost(kTexturePtx, "textures", CompileOptions{2, false});
  ASSERT_TRUE(object.ok()) << object.error().message;
  RuntimeSymbols symbols = testRuntimeSymbols();
  for (auto& s : backends::cpu::deviceLibrarySymbols()) symbols.push_back(s);
  Loaded loaded;
  loaded.object = std::move(*object);
  auto code = loadHostCode(loaded.object, symbols);
  ASSERT_TRUE(code.ok()) << code.error().message;
  loaded.code = std::move(*code);

  uint64_t texHandle = reinterpret_cast<uint64_t>(&tex);
  uint64_t surfHandle = reinterpret_cast<uint64_t>(&surf);
  uint64_t cubeHandle = reinterpret_cast<uint64_t>(&cube);
  uint32_t out[20] = {};
  void* outPtr = out;
  ASSERT_TRUE(launch(loaded, "textures", {}, {}, {&texHandle, &surfHandle, &cubeHandle, &outPtr}));
  float f[4];
  std::memcpy(f, out, 16);
  EXPECT_EQ(f[0], 3.0f);  // gather order (0,1) (1,1) (1,0) (0,0)
  EXPECT_EQ(f[1], 4.0f);
  EXPECT_EQ(f[2], 2.0f);
  EXPECT_EQ(f[3], 1.0f);
  EXPECT_EQ(out[4], 2u);  // txq.width
  EXPECT_EQ(out[5], 2u);  // txq.height
  EXPECT_EQ(out[6], 3u);  // suq.width
  float layered, face;
  std::memcpy(&layered, &out[8], 4);
  std::memcpy(&face, &out[9], 4);
  EXPECT_EQ(layered, 20.0f);  // layer 1, texel (1, 0)
  EXPECT_EQ(face, 101.0f);    // -x is face 1
  uint32_t integerTexel = out[10];
  float asFloat;
  std::memcpy(&asFloat, &integerTexel, 4);
  EXPECT_EQ(asFloat, 4.0f);  // s32 coordinates (1, 1) of layer 0
  EXPECT_EQ(out[11], 0u);    // .zero
  EXPECT_EQ(out[12], 99u);   // .clamp
  EXPECT_EQ(surfaceTexels[3 + 1], 0x00070005u);
  EXPECT_EQ(out[13], 7u);  // second b16 lane
  // The same fetches as f16, rounded to nearest: texel (1, 1) = 4.0 (0x4400), texel (0, 1) = 3.0
  // (0x4200); a one-channel float texture reads (x, 0, 0, 1).
  EXPECT_EQ(out[14], 0x00004400u);
  EXPECT_EQ(out[15], 0x3c000000u);
  EXPECT_EQ(out[16], 0x00004200u);
  EXPECT_EQ(out[17], 0x3c000000u);
  EXPECT_EQ(out[18], 1u);  // resident
  EXPECT_EQ(surfaceTexels[1], 10u);       // sured.b.add twice
  EXPECT_EQ(surfaceTexels[3 + 2], 120u);  // sured.p.max over the 99
  EXPECT_EQ(surfaceTexels[2], 77u);       // sust.p: x counts samples
  EXPECT_EQ(surfaceTexels[0], 0u);
}

}  // namespace
}  // namespace rocuda::compiler::test
