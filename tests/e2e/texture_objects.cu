// Texture and surface objects through the runtime API: CUDA arrays (2D, 3D, layered), copies to
// and from them, linear filtering with normalized coordinates under each address mode,
// tex1Dfetch on linear memory, tex3D, layered textures, normalized-float reads of bytes and
// surf2Dwrite/surf2Dread. The host reference follows the CUDA programming guide's "Texture
// fetching" appendix (linear weights in 9-bit fixed point).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "e2e_check.h"

namespace {

// ---- Host reference sampler ----

int addressIndex(int i, int n, cudaTextureAddressMode mode, bool& border) {
  border = false;
  switch (mode) {
    case cudaAddressModeWrap: return ((i % n) + n) % n;
    case cudaAddressModeMirror: {
      int m = ((i % (2 * n)) + 2 * n) % (2 * n);
      return m < n ? m : 2 * n - 1 - m;
    }
    case cudaAddressModeBorder:
      border = i < 0 || i >= n;
      return i;
    default: return i < 0 ? 0 : (i >= n ? n - 1 : i);
  }
}

float texel2D(const std::vector<float>& t, int w, int h, int i, int j,
              cudaTextureAddressMode mode) {
  bool bi, bj;
  int x = addressIndex(i, w, mode, bi), y = addressIndex(j, h, mode, bj);
  if (bi || bj) return 0.0f;  // border colour 0
  return t[y * w + x];
}

float fixedPointFraction(float v) { return std::round(v * 256.0f) / 256.0f; }

// tex2D with linear filtering and normalized coordinates.
float linear2D(const std::vector<float>& t, int w, int h, float x, float y,
               cudaTextureAddressMode mode) {
  float xb = x * w - 0.5f, yb = y * h - 0.5f;
  float fi = std::floor(xb), fj = std::floor(yb);
  float a = fixedPointFraction(xb - fi), b = fixedPointFraction(yb - fj);
  int i = static_cast<int>(fi), j = static_cast<int>(fj);
  return (1 - a) * (1 - b) * texel2D(t, w, h, i, j, mode) +
         a * (1 - b) * texel2D(t, w, h, i + 1, j, mode) +
         (1 - a) * b * texel2D(t, w, h, i, j + 1, mode) + a * b * texel2D(t, w, h, i + 1, j + 1, mode);
}

// ---- Kernels ----

__global__ void sample2D(cudaTextureObject_t tex, const float2* coords, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex2D<float>(tex, coords[i].x, coords[i].y);
}

__global__ void fetchLinear(cudaTextureObject_t tex, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int>(tex, i);
}

__global__ void sample3D(cudaTextureObject_t tex, float* out, int w, int h, int d) {
  int x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
  if (x < w && y < h && z < d) out[(z * h + y) * w + x] = tex3D<float>(tex, x + 0.5f, y + 0.5f, z + 0.5f);
}

__global__ void sampleLayers(cudaTextureObject_t tex, float* out, int w, int h, int layers) {
  int x = threadIdx.x, y = threadIdx.y, layer = threadIdx.z;
  if (x < w && y < h && layer < layers)
    out[(layer * h + y) * w + x] = tex2DLayered<float>(tex, x + 0.5f, y + 0.5f, layer);
}

__global__ void sampleLayerBits(cudaTextureObject_t tex, unsigned* out, int w, int h, int layers) {
  int x = threadIdx.x, y = threadIdx.y, layer = threadIdx.z;
  if (x < w && y < h && layer < layers)
    out[(layer * h + y) * w + x] = tex2DLayered<unsigned>(tex, x + 0.5f, y + 0.5f, layer);
}

__global__ void sampleCube(cudaTextureObject_t tex, const float3* directions, float* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = texCubemap<float>(tex, directions[i].x, directions[i].y, directions[i].z);
}

__global__ void sampleTexelCentres(cudaTextureObject_t tex, float* out, int w, int h) {
  int x = threadIdx.x, y = threadIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

__global__ void sampleBytes(cudaTextureObject_t tex, float4* out, int w, int h) {
  int x = threadIdx.x, y = threadIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float4>(tex, x + 0.5f, y + 0.5f);
}

__global__ void writeSurface(cudaSurfaceObject_t surf, int w, int h) {
  int x = threadIdx.x, y = threadIdx.y;
  if (x < w && y < h) surf2Dwrite(static_cast<float>(x * 10 + y), surf, x * 4, y);
}

__global__ void readSurface(cudaSurfaceObject_t surf, float* out, int w, int h) {
  int x = threadIdx.x, y = threadIdx.y;
  if (x >= w || y >= h) return;
  float v;
  surf2Dread(&v, surf, x * 4, y);
  out[y * w + x] = v + 0.5f;
  surf2Dwrite(v * 2.0f, surf, x * 4, y);
}

cudaTextureObject_t arrayTexture(cudaArray_t array, cudaTextureAddressMode mode,
                                 cudaTextureFilterMode filter, bool normalized,
                                 cudaTextureReadMode read = cudaReadModeElementType) {
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaTextureDesc desc{};
  desc.addressMode[0] = desc.addressMode[1] = desc.addressMode[2] = mode;
  desc.filterMode = filter;
  desc.readMode = read;
  desc.normalizedCoords = normalized ? 1 : 0;
  cudaTextureObject_t tex = 0;
  CHECK(cudaCreateTextureObject(&tex, &res, &desc, nullptr));
  return tex;
}

void filtering2D(Checker& check) {
  const int w = 8, h = 6;
  std::vector<float> texels(w * h);
  for (int i = 0; i < w * h; ++i) texels[i] = static_cast<float>((i * 37) % 23) - 5.0f;
  cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &format, w, h));
  CHECK(cudaMemcpy2DToArray(array, 0, 0, texels.data(), w * sizeof(float), w * sizeof(float), h,
                            cudaMemcpyHostToDevice));
  // Coordinates inside and outside [0, 1) so that every address mode matters.
  std::vector<float2> coords;
  for (int i = 0; i < 40; ++i)
    coords.push_back(make_float2(-1.3f + i * 0.091f, 1.7f - i * 0.077f));
  int n = static_cast<int>(coords.size());
  float2* dCoords;
  float* dOut;
  CHECK(cudaMalloc(&dCoords, n * sizeof(float2)));
  CHECK(cudaMalloc(&dOut, n * sizeof(float)));
  CHECK(cudaMemcpy(dCoords, coords.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
  const cudaTextureAddressMode modes[] = {cudaAddressModeWrap, cudaAddressModeClamp,
                                          cudaAddressModeMirror, cudaAddressModeBorder};
  const char* names[] = {"linear2D.wrap", "linear2D.clamp", "linear2D.mirror", "linear2D.border"};
  for (int m = 0; m < 4; ++m) {
    cudaTextureObject_t tex = arrayTexture(array, modes[m], cudaFilterModeLinear, true);
    sample2D<<<1, 64>>>(tex, dCoords, dOut, n);
    CHECK_LAUNCH();
    std::vector<float> got(n);
    CHECK(cudaMemcpy(got.data(), dOut, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      check.near(names[m], i, linear2D(texels, w, h, coords[i].x, coords[i].y, modes[m]), got[i],
                 1e-4);
    CHECK(cudaDestroyTextureObject(tex));
  }
  // Coordinates far beyond the texture (huge and infinite): clamp reads the edge texels, border
  // its colour, as for any coordinate outside.
  const float far[4] = {1e30f, -1e30f, INFINITY, -INFINITY};
  std::vector<float2> outside;
  for (float x : far) outside.push_back(make_float2(x, 2.5f / h));
  CHECK(cudaMemcpy(dCoords, outside.data(), 4 * sizeof(float2), cudaMemcpyHostToDevice));
  for (int m : {1, 3}) {
    for (cudaTextureFilterMode filter : {cudaFilterModePoint, cudaFilterModeLinear}) {
      cudaTextureObject_t tex = arrayTexture(array, modes[m], filter, true);
      sample2D<<<1, 32>>>(tex, dCoords, dOut, 4);
      CHECK_LAUNCH();
      float got[4];
      CHECK(cudaMemcpy(got, dOut, sizeof got, cudaMemcpyDeviceToHost));
      for (int i = 0; i < 4; ++i) {
        float edge = texels[2 * w + (far[i] > 0 ? w - 1 : 0)];
        check.eq(m == 1 ? "far coordinate, clamp" : "far coordinate, border", i,
                 m == 1 ? edge : 0.0f, got[i]);
      }
      CHECK(cudaDestroyTextureObject(tex));
    }
  }
  // The array reads back unchanged.
  std::vector<float> back(w * h);
  CHECK(cudaMemcpy2DFromArray(back.data(), w * sizeof(float), array, 0, 0, w * sizeof(float), h,
                              cudaMemcpyDeviceToHost));
  for (int i = 0; i < w * h; ++i) check.eq("array2D.readback", i, texels[i], back[i]);
  CHECK(cudaFree(dCoords));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeArray(array));
}

void linearMemory(Checker& check) {
  const int n = 300;
  std::vector<int> values(n);
  for (int i = 0; i < n; ++i) values[i] = i * i - 1000;
  int *dValues, *dOut;
  CHECK(cudaMalloc(&dValues, n * sizeof(int)));
  CHECK(cudaMalloc(&dOut, n * sizeof(int)));
  CHECK(cudaMemcpy(dValues, values.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = dValues;
  res.res.linear.desc = cudaCreateChannelDesc<int>();
  res.res.linear.sizeInBytes = n * sizeof(int);
  cudaTextureDesc desc{};
  desc.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &res, &desc, nullptr));
  fetchLinear<<<(n + 127) / 128, 128>>>(tex, dOut, n);
  CHECK_LAUNCH();
  std::vector<int> got(n);
  CHECK(cudaMemcpy(got.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) check.eq("tex1Dfetch", i, values[i], got[i]);
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(dValues));
  CHECK(cudaFree(dOut));
}

// 3D (point filtering at texel centres) and 2D layered arrays, filled with cudaMemcpy3D.
void volumes(Checker& check, bool layered) {
  const int w = 4, h = 3, d = 5;
  std::vector<float> texels(w * h * d);
  for (int i = 0; i < w * h * d; ++i) texels[i] = 0.25f * i - 3.0f;
  cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMalloc3DArray(&array, &format, make_cudaExtent(w, h, d),
                          layered ? cudaArrayLayered : 0));
  cudaMemcpy3DParms copy{};
  copy.srcPtr = make_cudaPitchedPtr(texels.data(), w * sizeof(float), w, h);
  copy.dstArray = array;
  copy.extent = make_cudaExtent(w, h, d);
  copy.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&copy));
  cudaTextureObject_t tex = arrayTexture(array, cudaAddressModeClamp, cudaFilterModePoint, false);
  float* dOut;
  CHECK(cudaMalloc(&dOut, texels.size() * sizeof(float)));
  CHECK(cudaMemset(dOut, 0, texels.size() * sizeof(float)));
  if (layered)
    sampleLayers<<<1, dim3(w, h, d)>>>(tex, dOut, w, h, d);
  else
    sample3D<<<1, dim3(w, h, d)>>>(tex, dOut, w, h, d);
  CHECK_LAUNCH();
  std::vector<float> got(texels.size());
  CHECK(cudaMemcpy(got.data(), dOut, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < got.size(); ++i)
    check.eq(layered ? "tex2DLayered" : "tex3D", static_cast<long long>(i), texels[i], got[i]);
  CHECK(cudaDestroyTextureObject(tex));
  if (layered) {
    // A resource view of layers 1..3, read as 32-bit unsigned integers: layer 0 of the view is
    // the array's layer 1, a layer beyond the view clamps to its last, and the texels are the
    // floats' bits.
    cudaResourceDesc res{};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = array;
    cudaTextureDesc desc{};
    desc.addressMode[0] = desc.addressMode[1] = cudaAddressModeClamp;
    desc.filterMode = cudaFilterModePoint;
    desc.readMode = cudaReadModeElementType;
    cudaResourceViewDesc view{};
    view.format = cudaResViewFormatUnsignedInt1;
    view.width = w;
    view.height = h;
    view.depth = d;
    view.firstLayer = 1;
    view.lastLayer = 3;
    CHECK(cudaCreateTextureObject(&tex, &res, &desc, &view));
    sampleLayerBits<<<1, dim3(w, h, 5)>>>(tex, reinterpret_cast<unsigned*>(dOut), w, h, 5);
    CHECK_LAUNCH();
    std::vector<unsigned> bits = download(reinterpret_cast<unsigned*>(dOut), w * h * 5);
    for (int layer = 0; layer < 5; ++layer)
      for (int i = 0; i < w * h; ++i) {
        unsigned want;
        std::memcpy(&want, &texels[(1 + std::min(layer, 2)) * w * h + i], 4);
        check.eq("resource view of layers 1..3", layer * w * h + i, want, bits[layer * w * h + i]);
      }
    CHECK(cudaDestroyTextureObject(tex));
    view.width = w - 1;  // "has to be equal to that of the original resource"
    check.expect(cudaCreateTextureObject(&tex, &res, &desc, &view) == cudaErrorInvalidValue,
                 "a resource view of another extent is refused");
    cudaGetLastError();  // the refusal is also the last error: clear it
  }
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeArray(array));
}

void normalizedBytes(Checker& check) {
  const int w = 5, h = 2;
  std::vector<uchar4> texels(w * h);
  for (int i = 0; i < w * h; ++i)
    texels[i] = make_uchar4(i * 25, 255 - i * 20, i, 128);
  cudaChannelFormatDesc format = cudaCreateChannelDesc<uchar4>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &format, w, h));
  CHECK(cudaMemcpy2DToArray(array, 0, 0, texels.data(), w * sizeof(uchar4), w * sizeof(uchar4), h,
                            cudaMemcpyHostToDevice));
  cudaTextureObject_t tex = arrayTexture(array, cudaAddressModeClamp, cudaFilterModePoint, false,
                                         cudaReadModeNormalizedFloat);
  float4* dOut;
  CHECK(cudaMalloc(&dOut, w * h * sizeof(float4)));
  sampleBytes<<<1, dim3(w, h)>>>(tex, dOut, w, h);
  CHECK_LAUNCH();
  std::vector<float4> got(w * h);
  CHECK(cudaMemcpy(got.data(), dOut, w * h * sizeof(float4), cudaMemcpyDeviceToHost));
  for (int i = 0; i < w * h; ++i) {
    check.near("uchar4.x", i, texels[i].x / 255.0, got[i].x, 1e-6);
    check.near("uchar4.y", i, texels[i].y / 255.0, got[i].y, 1e-6);
    check.near("uchar4.z", i, texels[i].z / 255.0, got[i].z, 1e-6);
    check.near("uchar4.w", i, texels[i].w / 255.0, got[i].w, 1e-6);
  }
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeArray(array));

  // A signed-normalized 16-bit format: read as floats in [-1, 1].
  std::vector<short> shorts(w * h);
  for (int i = 0; i < w * h; ++i) shorts[i] = static_cast<short>(i * 7000 - 32768);
  format = cudaCreateChannelDesc(16, 0, 0, 0, cudaChannelFormatKindSignedNormalized16X1);
  CHECK(cudaMallocArray(&array, &format, w, h));
  CHECK(cudaMemcpy2DToArray(array, 0, 0, shorts.data(), w * sizeof(short), w * sizeof(short), h,
                            cudaMemcpyHostToDevice));
  tex = arrayTexture(array, cudaAddressModeClamp, cudaFilterModePoint, false,
                     cudaReadModeNormalizedFloat);
  float* dValues;
  CHECK(cudaMalloc(&dValues, w * h * sizeof(float)));
  sampleTexelCentres<<<1, dim3(w, h)>>>(tex, dValues, w, h);
  CHECK_LAUNCH();
  std::vector<float> values = download(dValues, w * h);
  for (int i = 0; i < w * h; ++i)
    check.near("snorm16", i, std::max(-1.0, shorts[i] / 32767.0), values[i], 1e-6);
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(dValues));
  CHECK(cudaFreeArray(array));
}

// A texture over pitched linear memory (cudaMallocPitch), point-sampled at texel centres and
// linearly filtered half way between rows.
void pitched(Checker& check) {
  const int w = 6, h = 4;
  std::vector<float> texels(w * h);
  for (int i = 0; i < w * h; ++i) texels[i] = static_cast<float>(i * 3 % 11);
  float* dTexels;
  size_t pitch = 0;
  CHECK(cudaMallocPitch(reinterpret_cast<void**>(&dTexels), &pitch, w * sizeof(float), h));
  CHECK(cudaMemcpy2D(dTexels, pitch, texels.data(), w * sizeof(float), w * sizeof(float), h,
                     cudaMemcpyHostToDevice));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypePitch2D;
  res.res.pitch2D.devPtr = dTexels;
  res.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  res.res.pitch2D.width = w;
  res.res.pitch2D.height = h;
  res.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc desc{};
  desc.addressMode[0] = desc.addressMode[1] = cudaAddressModeClamp;
  desc.filterMode = cudaFilterModeLinear;
  desc.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  CHECK(cudaCreateTextureObject(&tex, &res, &desc, nullptr));
  std::vector<float2> coords;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) coords.push_back(make_float2(x + 0.5f, y + 1.0f));
  int n = static_cast<int>(coords.size());
  float2* dCoords;
  float* dOut;
  CHECK(cudaMalloc(&dCoords, n * sizeof(float2)));
  CHECK(cudaMalloc(&dOut, n * sizeof(float)));
  CHECK(cudaMemcpy(dCoords, coords.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
  sample2D<<<1, 64>>>(tex, dCoords, dOut, n);
  CHECK_LAUNCH();
  std::vector<float> got(n);
  CHECK(cudaMemcpy(got.data(), dOut, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      int below = y + 1 < h ? y + 1 : h - 1;  // clamp at the last row
      float expected = 0.5f * texels[y * w + x] + 0.5f * texels[below * w + x];
      check.near("pitch2D", y * w + x, expected, got[y * w + x], 1e-5);
    }
  CHECK(cudaDestroyTextureObject(tex));
  CHECK(cudaFree(dCoords));
  CHECK(cudaFree(dOut));
  CHECK(cudaFree(dTexels));
}

void surfaces(Checker& check) {
  const int w = 7, h = 5;
  cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMallocArray(&array, &format, w, h, cudaArraySurfaceLoadStore));
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = array;
  cudaSurfaceObject_t surf;
  CHECK(cudaCreateSurfaceObject(&surf, &res));
  float* dOut;
  CHECK(cudaMalloc(&dOut, w * h * sizeof(float)));
  writeSurface<<<1, dim3(w, h)>>>(surf, w, h);
  CHECK_LAUNCH();
  readSurface<<<1, dim3(w, h)>>>(surf, dOut, w, h);
  CHECK_LAUNCH();
  std::vector<float> got(w * h), back(w * h);
  CHECK(cudaMemcpy(got.data(), dOut, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy2DFromArray(back.data(), w * sizeof(float), array, 0, 0, w * sizeof(float), h,
                              cudaMemcpyDeviceToHost));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      float v = static_cast<float>(x * 10 + y);
      check.eq("surf2Dread", y * w + x, v + 0.5f, got[y * w + x]);
      check.eq("surf2Dwrite", y * w + x, v * 2.0f, back[y * w + x]);
    }
  CHECK(cudaDestroySurfaceObject(surf));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeArray(array));
}

// Mipmapped textures: level l of an 8x8 float texture holds the value 10 * l everywhere.
// tex2DLod picks the nearest level (point mipmap filter) or mixes the two around the level of
// detail (linear), after the bias and clamps; tex2DGrad derives the level from the gradients
// (in level-0 texels: a gradient of 4 texels is level 2).
__global__ void sampleLevels(cudaTextureObject_t point, cudaTextureObject_t linear,
                             const float* lods, float* out, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  out[3 * i] = tex2DLod<float>(point, 0.5f, 0.5f, lods[i]);
  out[3 * i + 1] = tex2DLod<float>(linear, 0.5f, 0.5f, lods[i]);
  float g = exp2f(lods[i]) / 8.0f;  // normalized coordinates: 8 texels per unit
  out[3 * i + 2] = tex2DGrad<float>(point, 0.5f, 0.5f, make_float2(g, 0), make_float2(0, g / 2));
}

void mipmaps(Checker& check) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mipmap;
  const unsigned levels = 4;
  CHECK(cudaMallocMipmappedArray(&mipmap, &desc, make_cudaExtent(8, 8, 0), levels));
  for (unsigned l = 0; l < levels; ++l) {
    cudaArray_t level;
    CHECK(cudaGetMipmappedArrayLevel(&level, mipmap, l));
    int side = 8 >> l;
    std::vector<float> values(side * side, 10.0f * l);
    CHECK(cudaMemcpy2DToArray(level, 0, 0, values.data(), side * sizeof(float),
                              side * sizeof(float), side, cudaMemcpyHostToDevice));
  }
  cudaResourceDesc res{};
  res.resType = cudaResourceTypeMipmappedArray;
  res.res.mipmap.mipmap = mipmap;
  cudaTextureDesc point{};
  point.normalizedCoords = 1;
  point.filterMode = cudaFilterModePoint;
  point.mipmapFilterMode = cudaFilterModePoint;
  point.minMipmapLevelClamp = 0;
  point.maxMipmapLevelClamp = 3;
  cudaTextureDesc linear = point;
  linear.mipmapFilterMode = cudaFilterModeLinear;
  linear.mipmapLevelBias = 0.25f;
  linear.maxMipmapLevelClamp = 2;
  cudaTextureObject_t pointTex, linearTex;
  CHECK(cudaCreateTextureObject(&pointTex, &res, &point, nullptr));
  CHECK(cudaCreateTextureObject(&linearTex, &res, &linear, nullptr));
  // No level of detail on a rounding boundary (x.5): which way hardware rounds those is not
  // specified.
  const std::vector<float> lods = {0.0f, 0.4f, 0.6f, 1.0f, 1.45f, 2.25f, 3.0f, 7.0f, -2.0f};
  const int n = static_cast<int>(lods.size());
  float* dLods = upload(lods);
  float* out = nullptr;
  CHECK(cudaMalloc(&out, 3 * n * sizeof(float)));
  sampleLevels<<<1, 32>>>(pointTex, linearTex, dLods, out, n);
  CHECK_LAUNCH();
  std::vector<float> got = download(out, 3 * n);
  for (int i = 0; i < n; ++i) {
    float lod = std::min(std::max(lods[i], 0.0f), 3.0f);
    float nearest = 10.0f * std::floor(lod + 0.5f);
    float biased = std::min(std::max(lods[i] + 0.25f, 0.0f), 2.0f);
    float lower = std::floor(biased);
    float mixed = 10.0f * lower + 10.0f * (biased - lower);
    check.eq("tex2DLod point", i, nearest, got[3 * i]);
    // NVIDIA's filtering weights are 8-bit fixed point: within half a step of 10.
    check.near("tex2DLod linear", i, mixed, got[3 * i + 1], 0.05);
    check.eq("tex2DGrad", i, nearest, got[3 * i + 2]);
  }
  CHECK(cudaDestroyTextureObject(pointTex));
  CHECK(cudaDestroyTextureObject(linearTex));

  // A resource view of levels 1..2: its level 0 is the array's level 1, and no level of detail
  // reaches beyond level 2.
  cudaResourceViewDesc view{};
  view.format = cudaResViewFormatFloat1;
  view.width = 8;
  view.height = 8;
  view.firstMipmapLevel = 1;
  view.lastMipmapLevel = 2;
  CHECK(cudaCreateTextureObject(&pointTex, &res, &point, &view));
  sampleLevels<<<1, 32>>>(pointTex, pointTex, dLods, out, n);
  CHECK_LAUNCH();
  got = download(out, 3 * n);
  for (int i = 0; i < n; ++i) {
    float lod = std::min(std::max(lods[i], 0.0f), 1.0f);
    check.eq("tex2DLod through a view of levels 1..2", i, 10.0f + 10.0f * std::floor(lod + 0.5f),
             got[3 * i]);
  }
  CHECK(cudaDestroyTextureObject(pointTex));
  CHECK(cudaFree(dLods));
  CHECK(cudaFree(out));
  CHECK(cudaFreeMipmappedArray(mipmap));
}

// A cubemap whose face f holds 10 * f everywhere, filtered linearly: next to a face's edge a
// seamless texture blends in the neighbouring face (direction (1, 0.1, 0.99) meets +X at texel
// coordinate 0.02 of 4, so the tap left of it is on +Z), a plain one clamps within the face.
void seamlessCubemap(Checker& check) {
  const int w = 4;
  cudaChannelFormatDesc format = cudaCreateChannelDesc<float>();
  cudaArray_t array;
  CHECK(cudaMalloc3DArray(&array, &format, make_cudaExtent(w, w, 6), cudaArrayCubemap));
  std::vector<float> texels(w * w * 6);
  for (int f = 0; f < 6; ++f)
    for (int i = 0; i < w * w; ++i) texels[f * w * w + i] = 10.0f * f;
  cudaMemcpy3DParms copy{};
  copy.srcPtr = make_cudaPitchedPtr(texels.data(), w * sizeof(float), w, w);
  copy.dstArray = array;
  copy.extent = make_cudaExtent(w, w, 6);
  copy.kind = cudaMemcpyHostToDevice;
  CHECK(cudaMemcpy3D(&copy));
  const std::vector<float3> directions = {make_float3(1.0f, 0.1f, 0.99f),
                                          make_float3(0.1f, 0.2f, -1.0f)};
  const int n = static_cast<int>(directions.size());
  float3* dDirections = upload(directions);
  float* dOut = nullptr;
  CHECK(cudaMalloc(&dOut, n * sizeof(float)));
  for (bool seamless : {false, true}) {
    cudaResourceDesc res{};
    res.resType = cudaResourceTypeArray;
    res.res.array.array = array;
    cudaTextureDesc desc{};
    desc.filterMode = cudaFilterModeLinear;
    desc.normalizedCoords = 1;
    desc.seamlessCubemap = seamless ? 1 : 0;
    cudaTextureObject_t tex;
    CHECK(cudaCreateTextureObject(&tex, &res, &desc, nullptr));
    sampleCube<<<1, 32>>>(tex, dDirections, dOut, n);
    CHECK_LAUNCH();
    std::vector<float> got = download(dOut, n);
    // 0.48 of +Z's 40 (NVIDIA's 8-bit weights: within a step of it).
    check.near(seamless ? "seamless cube edge" : "cube edge, clamped", 0, seamless ? 19.2 : 0.0,
               got[0], 0.3);
    check.eq("inside -Z", 1, 50.0f, got[1]);
    CHECK(cudaDestroyTextureObject(tex));
  }
  CHECK(cudaFree(dDirections));
  CHECK(cudaFree(dOut));
  CHECK(cudaFreeArray(array));
}

}  // namespace

int main() {
  Checker check("texture_objects");
  filtering2D(check);
  seamlessCubemap(check);
  linearMemory(check);
  volumes(check, false);
  volumes(check, true);
  normalizedBytes(check);
  pitched(check);
  surfaces(check);
  mipmaps(check);
  return check.finish();
}
