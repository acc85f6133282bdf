// The device library's texture sampler and surface access: the `__rocuda_tex_*` and
// `__rocuda_surf_*` functions of the IR contract (compiler/compiler.h). Handles are addresses of
// support::TextureView; every function tolerates a bad handle (it reads zeros / ignores stores)
// rather than crash on a value that is not a live view.
//
// The device library (src/device_library) is code that runs on the devices themselves, written
// once in portable C++ (no standard library, builtins for math and atomics): the CPU device links
// it as it is, and the AMD GPU code generator links its LLVM bitcode for amdgcn, which clang
// builds from the same sources, into the modules that call it.
#pragma once

#include <stdint.h>

namespace rocuda::device_library {

// Geometries (the PTX .1d/.2d/... suffix), as the translator passes them.
enum class TexGeometry : int32_t { D1 = 0, D2 = 1, D3 = 2, A1D = 3, A2D = 4, Cube = 5, ACube = 6 };

}  // namespace rocuda::device_library

extern "C" {
// tex with f32 coordinates: out receives 4 x 32 bits (floats, or integers for textures read as
// integers). `layer` is the array index for a1d/a2d/acube.
void __rocuda_tex_fetch_f(void* out, uint64_t tex, int32_t geometry, float x, float y, float z,
                          int32_t layer);
// tex with s32 coordinates (texel indices; tex1Dfetch on linear memory).
void __rocuda_tex_fetch_i(void* out, uint64_t tex, int32_t geometry, int32_t x, int32_t y,
                          int32_t z, int32_t layer);
// tex.level (f32 coordinates): a mipmapped texture sampled at level of detail `lod` (the texture's
// bias, clamps and mipmap filter applied); other textures as __rocuda_tex_fetch_f.
void __rocuda_tex_fetch_lod(void* out, uint64_t tex, int32_t geometry, float x, float y, float z,
                            int32_t layer, float lod);
// tex.grad: the level of detail from the gradients of the coordinates along x and y.
void __rocuda_tex_fetch_grad(void* out, uint64_t tex, int32_t geometry, float x, float y, float z,
                             int32_t layer, float dxx, float dxy, float dxz, float dyx, float dyy,
                             float dyz);
// tld4.<component>.2d: component 0 r, 1 g, 2 b, 3 a of the four bilinear-footprint texels.
void __rocuda_tex_gather(void* out, uint64_t tex, int32_t component, float x, float y,
                         int32_t layer);
// txq: query 0 width, 1 height, 2 depth, 3 channel_data_type, 4 channel_order,
// 5 normalized_coords, 6 filter_mode, 7..9 addr_mode_0..2, 10 array_size, 11 num_mipmap_levels,
// 12 num_samples. Also suq (surfaces) with the same codes.
int32_t __rocuda_tex_query(uint64_t tex, int32_t query);
int32_t __rocuda_surf_query(uint64_t surf, int32_t query);
// suld.b / sust.b: x in bytes, `bytes` the access size (1..16). mode 0 trap, 1 clamp, 2 zero.
// Return 0, or 1 when an out-of-range access must trap.
int32_t __rocuda_surf_load(void* out, uint64_t surf, int32_t geometry, int32_t x, int32_t y,
                           int32_t z, int32_t layer, int32_t bytes, int32_t mode);
int32_t __rocuda_surf_store(const void* in, uint64_t surf, int32_t geometry, int32_t x, int32_t y,
                            int32_t z, int32_t layer, int32_t bytes, int32_t mode);
// sust.p: formatted store of 4 x 32-bit values (`kind` 0 f32, 1 s32, 2 u32, -1 the surface's
// channel type), x in samples (texels), as the PTX ISA's sample addressing says.
int32_t __rocuda_surf_store_p(const void* in, uint64_t surf, int32_t geometry, int32_t x, int32_t y,
                              int32_t z, int32_t layer, int32_t kind, int32_t mode);
// sured: an atomic `element = element op value` (op 0 add, 1 min, 2 max, 3 and, 4 or) on a 32- or
// 64-bit element (type 0 u32, 1 s32, 2 u64, 3 s64, 4 b32, 5 b64). `samples` 0: x in bytes (.b);
// 1: x in texels and b32/b64 signed when the surface's format is (.p). Returns as the others.
int32_t __rocuda_surf_reduce(uint64_t surf, int32_t geometry, int32_t x, int32_t y, int32_t z,
                             int32_t layer, uint64_t value, int32_t op, int32_t type,
                             int32_t samples, int32_t mode);
}
