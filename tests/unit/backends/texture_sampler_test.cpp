// The CPU device's software sampler, called as translated kernels call it, with exact expected
// values from CUDA's texture fetching formulas (9-bit fixed-point linear weights).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "backends/cpu/device_library_runtime.h"
#include "support/texture_view.h"

namespace rocuda::backends::cpu {
namespace {

using support::TexelFormat;
using support::TextureAddressMode;
using support::TextureFilter;
using support::TextureShape;
using support::TextureView;

uint64_t handle(const TextureView& view) { return reinterpret_cast<uint64_t>(&view); }

TextureView floatView(std::vector<float>& texels, size_t width, size_t height = 1,
                      size_t depth = 1) {
  TextureView v;
  v.format = TexelFormat::F32;
  v.channels = 1;
  v.texelBytes = 4;
  v.shape = depth > 1 ? TextureShape::Array3D
                      : (height > 1 ? TextureShape::Array2D : TextureShape::Array1D);
  v.data = reinterpret_cast<uint8_t*>(texels.data());
  v.width = width;
  v.height = height;
  v.depth = depth;
  v.rowPitch = width * 4;
  v.slicePitch = width * height * 4;
  return v;
}

float fetch1D(const TextureView& v, float x) {
  float out[4];
  __rocuda_tex_fetch_f(out, handle(v), 0, x, 0, 0, 0);
  return out[0];
}

class Sampler1D : public testing::Test {
 protected:
  std::vector<float> texels{0, 10, 20, 30};
  TextureView view = floatView(texels, 4);
};

TEST_F(Sampler1D, PointFilteringReadsFloorTexel) {
  view.address[0] = TextureAddressMode::Clamp;
  EXPECT_EQ(fetch1D(view, 1.7f), 10.0f);
  EXPECT_EQ(fetch1D(view, 0.0f), 0.0f);
  EXPECT_EQ(fetch1D(view, 3.99f), 30.0f);
}

TEST_F(Sampler1D, LinearFilteringUsesNineBitWeights) {
  view.filter = TextureFilter::Linear;
  view.address[0] = TextureAddressMode::Clamp;
  // x - 0.5 = 1.2: alpha 0.2 rounds to 51/256.
  EXPECT_EQ(fetch1D(view, 1.7f), 10.0f + 10.0f * 51.0f / 256.0f);
  EXPECT_EQ(fetch1D(view, 2.5f), 20.0f);  // texel centre
  EXPECT_EQ(fetch1D(view, 2.0f), 15.0f);  // half way
  EXPECT_EQ(fetch1D(view, 0.1f), 0.0f);   // clamped below
  EXPECT_EQ(fetch1D(view, 3.9f), 30.0f);  // clamped above
}

TEST_F(Sampler1D, ClampMode) {
  view.address[0] = TextureAddressMode::Clamp;
  EXPECT_EQ(fetch1D(view, -3.0f), 0.0f);
  EXPECT_EQ(fetch1D(view, 10.0f), 30.0f);
}

TEST_F(Sampler1D, BorderMode) {
  view.address[0] = TextureAddressMode::Border;
  view.borderColor[0] = 99.0f;
  EXPECT_EQ(fetch1D(view, -0.5f), 99.0f);
  EXPECT_EQ(fetch1D(view, 4.0f), 99.0f);
  EXPECT_EQ(fetch1D(view, 3.5f), 30.0f);
  view.filter = TextureFilter::Linear;
  // x - 0.5 = -0.25: 0.25 of the border, 0.75 of texel 0.
  EXPECT_EQ(fetch1D(view, 0.25f), 0.25f * 99.0f);
}

TEST_F(Sampler1D, WrapModeWithNormalizedCoordinates) {
  view.normalizedCoords = true;
  view.address[0] = TextureAddressMode::Wrap;
  EXPECT_EQ(fetch1D(view, 1.125f), 0.0f);    // 4.5 -> texel 4 -> 0
  EXPECT_EQ(fetch1D(view, -0.125f), 30.0f);  // -0.5 -> texel -1 -> 3
  EXPECT_EQ(fetch1D(view, 0.375f), 10.0f);
  view.filter = TextureFilter::Linear;
  EXPECT_EQ(fetch1D(view, 0.0f), 15.0f);  // half texel 3, half texel 0
}

TEST_F(Sampler1D, MirrorModeWithNormalizedCoordinates) {
  view.normalizedCoords = true;
  view.address[0] = TextureAddressMode::Mirror;
  EXPECT_EQ(fetch1D(view, 1.125f), 30.0f);   // texel 4 mirrors to 3
  EXPECT_EQ(fetch1D(view, 1.375f), 20.0f);   // texel 5 mirrors to 2
  EXPECT_EQ(fetch1D(view, -0.125f), 0.0f);   // texel -1 mirrors to 0
  EXPECT_EQ(fetch1D(view, -0.375f), 10.0f);  // texel -2 mirrors to 1
}

TEST(Sampler2D, BilinearOfNormalizedBytes) {
  std::vector<uint8_t> texels{0, 255, 51, 102};
  TextureView v;
  v.format = TexelFormat::U8;
  v.channels = 1;
  v.texelBytes = 1;
  v.shape = TextureShape::Array2D;
  v.data = texels.data();
  v.width = 2;
  v.height = 2;
  v.rowPitch = 2;
  v.slicePitch = 4;
  v.filter = TextureFilter::Linear;
  v.address[0] = v.address[1] = TextureAddressMode::Clamp;
  float out[4];
  __rocuda_tex_fetch_f(out, handle(v), 1, 1.0f, 1.0f, 0, 0);
  EXPECT_FLOAT_EQ(out[0], (0.0f + 1.0f + 0.2f + 0.4f) / 4);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[3], 1.0f);  // absent alpha reads 1
  __rocuda_tex_fetch_f(out, handle(v), 1, 1.5f, 0.5f, 0, 0);
  EXPECT_EQ(out[0], 1.0f);
  // Read as integers: the raw element.
  v.filter = TextureFilter::Point;
  v.readAsInteger = true;
  uint32_t raw[4];
  __rocuda_tex_fetch_f(raw, handle(v), 1, 1.5f, 0.5f, 0, 0);
  EXPECT_EQ(raw[0], 255u);
}

TEST(SamplerFormats, SignedNormalizedHalfAndSrgb) {
  int8_t s8[2] = {-128, 127};
  TextureView v;
  v.format = TexelFormat::S8;
  v.channels = 1;
  v.texelBytes = 1;
  v.data = reinterpret_cast<uint8_t*>(s8);
  v.width = 2;
  v.rowPitch = 2;
  v.address[0] = TextureAddressMode::Clamp;
  float out[4];
  __rocuda_tex_fetch_f(out, handle(v), 0, 0.5f, 0, 0, 0);
  EXPECT_EQ(out[0], -1.0f);
  __rocuda_tex_fetch_f(out, handle(v), 0, 1.5f, 0, 0, 0);
  EXPECT_EQ(out[0], 1.0f);

  uint16_t half[2] = {0x3e00, 0xc100};  // 1.5, -2.5
  v.format = TexelFormat::F16;
  v.texelBytes = 2;
  v.data = reinterpret_cast<uint8_t*>(half);
  v.rowPitch = 4;
  __rocuda_tex_fetch_f(out, handle(v), 0, 0.5f, 0, 0, 0);
  EXPECT_EQ(out[0], 1.5f);
  __rocuda_tex_fetch_f(out, handle(v), 0, 1.5f, 0, 0, 0);
  EXPECT_EQ(out[0], -2.5f);

  uint8_t rgba[4] = {255, 0, 255, 51};
  v.format = TexelFormat::U8;
  v.channels = 4;
  v.texelBytes = 4;
  v.width = 1;
  v.rowPitch = 4;
  v.data = rgba;
  v.srgb = true;
  __rocuda_tex_fetch_f(out, handle(v), 0, 0.5f, 0, 0, 0);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_FLOAT_EQ(out[3], 0.2f);  // alpha is never sRGB-decoded
}

TEST(Sampler3D, PointAndTrilinear) {
  std::vector<float> texels(8);
  for (int i = 0; i < 8; ++i) texels[i] = static_cast<float>(i);  // x + 2y + 4z
  TextureView v = floatView(texels, 2, 2, 2);
  v.address[0] = v.address[1] = v.address[2] = TextureAddressMode::Clamp;
  float out[4];
  __rocuda_tex_fetch_f(out, handle(v), 2, 1.5f, 0.5f, 1.5f, 0);
  EXPECT_EQ(out[0], 5.0f);
  v.filter = TextureFilter::Linear;
  __rocuda_tex_fetch_f(out, handle(v), 2, 1.0f, 1.0f, 1.0f, 0);
  EXPECT_EQ(out[0], 3.5f);  // mean of 0..7
}

TEST(SamplerLayers, LayeredAndCubemap) {
  std::vector<float> faces(6 * 4);
  for (int f = 0; f < 6; ++f)
    for (int i = 0; i < 4; ++i) faces[f * 4 + i] = static_cast<float>(f);
  TextureView v = floatView(faces, 2, 2);
  v.layered = true;
  v.layers = 6;
  float out[4];
  __rocuda_tex_fetch_f(out, handle(v), 4, 0.5f, 0.5f, 0, 4);  // a2d layer 4
  EXPECT_EQ(out[0], 4.0f);
  __rocuda_tex_fetch_f(out, handle(v), 4, 0.5f, 0.5f, 0, 99);  // layer index clamps
  EXPECT_EQ(out[0], 5.0f);
  v.layered = false;
  v.cubemap = true;
  const float directions[6][3] = {{1, 0, 0},  {-1, 0, 0}, {0, 1, 0},
                                  {0, -1, 0}, {0, 0, 1},  {0, 0, -1}};
  for (int f = 0; f < 6; ++f) {
    __rocuda_tex_fetch_f(out, handle(v), 5, directions[f][0], directions[f][1], directions[f][2],
                         0);
    EXPECT_EQ(out[0], static_cast<float>(f)) << "face " << f;
  }
}

TEST(SamplerGather, FootprintOrder) {
  std::vector<float> texels{1, 2, 3, 4};
  TextureView v = floatView(texels, 2, 2);
  v.address[0] = v.address[1] = TextureAddressMode::Clamp;
  float out[4];
  __rocuda_tex_gather(out, handle(v), 0, 1.0f, 1.0f, 0);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[1], 4.0f);
  EXPECT_EQ(out[2], 2.0f);
  EXPECT_EQ(out[3], 1.0f);
}

TEST(SamplerLinearMemory, IntegerFetchOutOfRangeReadsZero) {
  int32_t texels[3] = {7, -8, 9};
  TextureView v;
  v.format = TexelFormat::S32;
  v.readAsInteger = true;
  v.shape = TextureShape::Linear1D;
  v.data = reinterpret_cast<uint8_t*>(texels);
  v.width = 3;
  v.rowPitch = v.slicePitch = 12;
  int32_t out[4];
  __rocuda_tex_fetch_i(out, handle(v), 0, 1, 0, 0, 0);
  EXPECT_EQ(out[0], -8);
  __rocuda_tex_fetch_i(out, handle(v), 0, 3, 0, 0, 0);
  EXPECT_EQ(out[0], 0);
  __rocuda_tex_fetch_i(out, handle(v), 0, -1, 0, 0, 0);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(__rocuda_tex_query(handle(v), 0), 3);
  float bad[4] = {1, 1, 1, 1};
  __rocuda_tex_fetch_f(bad, 0, 0, 0.5f, 0, 0, 0);  // a NULL handle reads zeros
  EXPECT_EQ(bad[0], 0.0f);
}

TEST(Surfaces, LoadStoreAndBoundaryModes) {
  std::vector<uint32_t> texels(4 * 2, 0);
  TextureView v;
  v.format = TexelFormat::U32;
  v.surface = true;
  v.readAsInteger = true;
  v.shape = TextureShape::Array2D;
  v.data = reinterpret_cast<uint8_t*>(texels.data());
  v.width = 4;
  v.height = 2;
  v.rowPitch = 16;
  v.slicePitch = 32;
  uint32_t value = 0xabcd1234;
  EXPECT_EQ(__rocuda_surf_store(&value, handle(v), 1, 8, 1, 0, 0, 4, 0), 0);
  EXPECT_EQ(texels[4 + 2], value);
  uint32_t loaded = 0;
  EXPECT_EQ(__rocuda_surf_load(&loaded, handle(v), 1, 8, 1, 0, 0, 4, 0), 0);
  EXPECT_EQ(loaded, value);
  // Out of range: trap reports, zero reads zero, clamp reads the edge.
  EXPECT_EQ(__rocuda_surf_load(&loaded, handle(v), 1, 16, 1, 0, 0, 4, 0), 1);
  loaded = 5;
  EXPECT_EQ(__rocuda_surf_load(&loaded, handle(v), 1, 16, 1, 0, 0, 4, 2), 0);
  EXPECT_EQ(loaded, 0u);
  texels[4 + 3] = 77;
  EXPECT_EQ(__rocuda_surf_load(&loaded, handle(v), 1, 100, 5, 0, 0, 4, 1), 0);
  EXPECT_EQ(loaded, 77u);
  EXPECT_EQ(__rocuda_surf_store(&value, handle(v), 1, -4, 0, 0, 0, 4, 2), 0);  // dropped
  EXPECT_EQ(texels[0], 0u);
  EXPECT_EQ(__rocuda_surf_query(handle(v), 1), 2);

  // Formatted store converts to the surface's format.
  uint8_t bytes[4] = {0, 0, 0, 0};
  v.format = TexelFormat::U8;
  v.channels = 4;
  v.texelBytes = 4;
  v.data = bytes;
  v.width = 1;
  v.height = 1;
  v.rowPitch = 4;
  float rgba[4] = {0.5f, 1.0f, -3.0f, 0.2f};
  EXPECT_EQ(__rocuda_surf_store_p(rgba, handle(v), 0, 0, 0, 0, 0, 0, 0), 0);
  EXPECT_EQ(bytes[0], 128);
  EXPECT_EQ(bytes[1], 255);
  EXPECT_EQ(bytes[2], 0);
  EXPECT_EQ(bytes[3], 51);
}

// tex.level / tex.grad on a mipmapped view: three levels of one texel each (values 0, 10, 20).
TEST(SamplerMipmaps, LevelOfDetailChoosesAndMixesLevels) {
  float values[3] = {0, 10, 20};
  TextureView levels[3];
  for (int l = 0; l < 3; ++l) {
    levels[l].format = TexelFormat::F32;
    levels[l].data = reinterpret_cast<uint8_t*>(&values[l]);
    levels[l].width = 1;
    levels[l].rowPitch = levels[l].slicePitch = 4;
    levels[l].shape = support::TextureShape::Array1D;
    levels[l].address[0] = support::TextureAddressMode::Clamp;
  }
  TextureView v = levels[0];
  v.levels = 3;
  v.mipLevels = levels;
  v.maxLod = 2;
  float out[4];
  auto at = [&](float lod) {
    __rocuda_tex_fetch_lod(out, handle(v), 0, 0.5f, 0, 0, 0, lod);
    return out[0];
  };
  EXPECT_EQ(at(0.4f), 0.0f);  // nearest level
  EXPECT_EQ(at(0.6f), 10.0f);
  EXPECT_EQ(at(9.0f), 20.0f);  // clamped to the last level
  EXPECT_EQ(at(-3.0f), 0.0f);
  v.maxLod = 1;  // maxMipmapLevelClamp
  EXPECT_EQ(at(9.0f), 10.0f);
  v.maxLod = 2;
  v.mipBias = 1;
  EXPECT_EQ(at(0.4f), 10.0f);
  v.mipBias = 0;
  v.mipFilter = support::TextureFilter::Linear;
  EXPECT_FLOAT_EQ(at(0.25f), 2.5f);
  EXPECT_FLOAT_EQ(at(1.5f), 15.0f);
  // Gradients in texels (unnormalized coordinates): the longer one's log2 is the level.
  __rocuda_tex_fetch_grad(out, handle(v), 0, 0.5f, 0, 0, 0, 2.0f, 0, 0, 0, 1.0f, 0);
  EXPECT_FLOAT_EQ(out[0], 10.0f);
  __rocuda_tex_fetch_grad(out, handle(v), 0, 0.5f, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  EXPECT_FLOAT_EQ(out[0], 0.0f);                    // no gradient: level 0
  EXPECT_EQ(__rocuda_tex_query(handle(v), 11), 3);  // txq.num_mipmap_levels
}

// sured: atomic reductions on surface elements from many threads at once; .p addresses samples
// and takes the sign from the surface's format; out-of-range and misaligned elements follow the
// boundary mode.
TEST(SurfaceAccess, ReductionsAreAtomicAndFollowTheFormat) {
  std::vector<int32_t> texels(4 * 2, 0);
  TextureView v;
  v.format = TexelFormat::S32;
  v.channels = 1;
  v.texelBytes = 4;
  v.surface = v.readAsInteger = true;
  v.data = reinterpret_cast<uint8_t*>(texels.data());
  v.width = 4;
  v.height = 2;
  v.rowPitch = 16;
  v.slicePitch = 32;
  constexpr int kAdd = 0, kMin = 1, kMax = 2, kAnd = 3, kOr = 4;
  constexpr int kU32 = 0, kS32 = 1, kU64 = 2, kB32 = 4, kB64 = 5;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      for (int n = 0; n < 10000; ++n)
        EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 4, 1, 0, 0, 1, kAdd, kU32, 0, 0), 0);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(texels[4 + 1], 40000);  // byte 4 of row 1
  // .p .b32 on a signed surface: sample 2 of row 0; -7 is less than 0.
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 2, 0, 0, 0, uint32_t(-7), kMin, kB32, 1, 0), 0);
  EXPECT_EQ(texels[2], -7);
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 8, 0, 0, 0, uint32_t(-9), kMax, kS32, 0, 0), 0);
  EXPECT_EQ(texels[2], -7);  // .b .s32: -9 < -7
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 8, 0, 0, 0, 0xf0, kOr, kB32, 0, 0), 0);
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 8, 0, 0, 0, 0xff, kAnd, kB32, 0, 0), 0);
  EXPECT_EQ(texels[2], 0xf9);  // (-7 | 0xf0) & 0xff
  // 64-bit elements: texels 0 and 1 of row 0 as one u64 (unsigned max), and .p .b64 max on the
  // signed format.
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 0, 0, 0, 0, 0x100000002ull, kMax, kU64, 0, 0), 0);
  EXPECT_EQ(texels[0], 2);
  EXPECT_EQ(texels[1], 1);
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 0, 0, 0, 0, uint64_t(-1), kMax, kB64, 1, 0), 0);
  EXPECT_EQ(texels[0], 2);  // -1 is less than 0x100000002 when signed
  // Out of range: trap reports, zero drops, clamp reduces the edge element; misaligned traps.
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 16, 0, 0, 0, 1, kAdd, kU32, 0, 0), 1);
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 16, 0, 0, 0, 1, kAdd, kU32, 0, 2), 0);
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 100, 0, 0, 0, 3, kAdd, kU32, 0, 1), 0);
  EXPECT_EQ(texels[3], 3);
  EXPECT_EQ(__rocuda_surf_reduce(handle(v), 1, 2, 0, 0, 0, 1, kAdd, kU32, 0, 0), 1);
  EXPECT_EQ(__rocuda_surf_reduce(0, 1, 0, 0, 0, 0, 1, kAdd, kU32, 0, 0), 1);  // no surface
}

}  // namespace
}  // namespace rocuda::backends::cpu
