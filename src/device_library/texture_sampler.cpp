// Software texture sampling and surface access, following the CUDA programming guide's
// "Texture fetching" appendix: coordinates are scaled by the extent when normalized, point
// filtering reads T[floor(x)], linear filtering reads T[i] and T[i+1] around x - 0.5 with the
// fraction held in 9-bit fixed point (8 fractional bits), and every texel index goes through the
// address mode (wrap and mirror repeat the texture, clamp stays at the edge, border reads the
// border colour). Mipmapped textures choose their level in tex.level / tex.grad.
//
// Part of the device library (texture_sampler.h): portable C++ with no standard library, built
// into the CPU device and compiled to AMD GPU bitcode that the AMD lowering links into modules
// that sample, so both devices run this same code.
#include "device_library/texture_sampler.h"

#include "device_library/float_bits.h"
#include "support/texture_view.h"

namespace rocuda::device_library {
namespace {

template <class T>
T minOf(T a, T b) {
  return b < a ? b : a;
}
template <class T>
T maxOf(T a, T b) {
  return a < b ? b : a;
}
template <class T>
T clampTo(T x, T low, T high) {
  return x < low ? low : high < x ? high : x;
}

using support::TexelFormat;
using support::TextureAddressMode;
using support::TextureView;

const TextureView* viewOf(uint64_t handle) {
  const auto* view = reinterpret_cast<const TextureView*>(handle);
  if (view == nullptr || view->magic != support::kTextureViewMagic || view->data == nullptr)
    return nullptr;
  return view;
}

// Four 32-bit lanes: floats for textures that filter, integers for those read as integers.
struct Value {
  float f[4] = {0, 0, 0, 1};
  uint32_t u[4] = {0, 0, 0, 1};
};

float srgbToLinear(float c) {
  return c <= 0.04045f ? c / 12.92f : __builtin_powf((c + 0.055f) / 1.055f, 2.4f);
}

// One texel at `p`, converted as the texture's read mode says.
Value loadTexel(const TextureView& v, const uint8_t* p) {
  Value out;
  for (unsigned c = 0; c < v.channels && c < 4; ++c) {
    float f = 0;
    uint32_t u = 0;
    switch (v.format) {
      case TexelFormat::U8:
        u = p[c];
        f = u / 255.0f;
        break;
      case TexelFormat::S8: {
        int8_t s;
        __builtin_memcpy(&s, p + c, 1);
        u = static_cast<uint32_t>(static_cast<int32_t>(s));
        f = maxOf(s / 127.0f, -1.0f);
        break;
      }
      case TexelFormat::U16: {
        uint16_t s;
        __builtin_memcpy(&s, p + 2 * c, 2);
        u = s;
        f = s / 65535.0f;
        break;
      }
      case TexelFormat::S16: {
        int16_t s;
        __builtin_memcpy(&s, p + 2 * c, 2);
        u = static_cast<uint32_t>(static_cast<int32_t>(s));
        f = maxOf(s / 32767.0f, -1.0f);
        break;
      }
      case TexelFormat::U32:
      case TexelFormat::S32:
        __builtin_memcpy(&u, p + 4 * c, 4);
        f = static_cast<float>(u);
        break;
      case TexelFormat::F16: {
        uint16_t s;
        __builtin_memcpy(&s, p + 2 * c, 2);
        f = halfToFloat(s);
        __builtin_memcpy(&u, &f, 4);
        break;
      }
      case TexelFormat::F32:
        __builtin_memcpy(&f, p + 4 * c, 4);
        __builtin_memcpy(&u, &f, 4);
        break;
    }
    if (v.srgb && !v.readAsInteger && c < 3 && v.format == TexelFormat::U8) f = srgbToLinear(f);
    out.f[c] = f;
    out.u[c] = u;
  }
  return out;
}

Value borderValue(const TextureView& v) {
  Value out;
  for (int c = 0; c < 4; ++c) {
    out.f[c] = v.borderColor[c];
    out.u[c] = static_cast<uint32_t>(static_cast<int32_t>(v.borderColor[c]));
  }
  return out;
}

// A texel index through the address mode; false when it falls on the border.
bool addressIndex(int64_t i, int64_t n, TextureAddressMode mode, int64_t& out) {
  if (n <= 0) return false;
  switch (mode) {
    case TextureAddressMode::Wrap:
      out = ((i % n) + n) % n;
      return true;
    case TextureAddressMode::Mirror: {
      int64_t m = ((i % (2 * n)) + 2 * n) % (2 * n);
      out = m < n ? m : 2 * n - 1 - m;
      return true;
    }
    case TextureAddressMode::Border:
      if (i < 0 || i >= n) return false;
      out = i;
      return true;
    case TextureAddressMode::Clamp:
    default:
      out = clampTo<int64_t>(i, 0, n - 1);
      return true;
  }
}

struct Extent {
  int64_t n[3];
  int dims;
};

// The texel at integer indices (before addressing) of slice `slice`.
Value texelAt(const TextureView& v, const Extent& e, const int64_t index[3], size_t slice) {
  int64_t at[3] = {0, 0, 0};
  for (int d = 0; d < e.dims; ++d)
    if (!addressIndex(index[d], e.n[d], v.address[d], at[d])) return borderValue(v);
  const uint8_t* p = v.data + slice * v.slicePitch + static_cast<size_t>(at[2]) * v.slicePitch +
                     static_cast<size_t>(at[1]) * v.rowPitch +
                     static_cast<size_t>(at[0]) * v.texelBytes;
  return loadTexel(v, p);
}

// A texel-space coordinate bounded so that its floor fits an index (1e30 or infinity would
// overflow the conversion, and infinity makes linear weights NaN); far beyond any texture, the
// address modes see it as they would the true value. NaN reads as 0.
float boundedCoordinate(float x) {
  constexpr float kFar = 1099511627776.0f;  // 2^40
  return __builtin_isnan(x) ? 0.0f : clampTo(x, -kFar, kFar);
}

Value sample(const TextureView& v, const Extent& e, const float coords[3], size_t slice) {
  float u[3];
  for (int d = 0; d < e.dims; ++d)
    u[d] =
        boundedCoordinate(v.normalizedCoords ? coords[d] * static_cast<float>(e.n[d]) : coords[d]);
  if (v.filter == support::TextureFilter::Point || v.readAsInteger) {
    int64_t index[3] = {0, 0, 0};
    for (int d = 0; d < e.dims; ++d) index[d] = static_cast<int64_t>(__builtin_floorf(u[d]));
    return texelAt(v, e, index, slice);
  }
  int64_t base[3] = {0, 0, 0};
  float alpha[3] = {0, 0, 0};
  for (int d = 0; d < e.dims; ++d) {
    float shifted = u[d] - 0.5f;
    float whole = __builtin_floorf(shifted);
    base[d] = static_cast<int64_t>(whole);
    alpha[d] = __builtin_roundf((shifted - whole) * 256.0f) / 256.0f;  // 9-bit fixed point
  }
  Value out;
  for (int c = 0; c < 4; ++c) out.f[c] = 0;
  for (int corner = 0; corner < (1 << e.dims); ++corner) {
    int64_t index[3] = {0, 0, 0};
    float weight = 1;
    for (int d = 0; d < e.dims; ++d) {
      bool upper = (corner >> d) & 1;
      index[d] = base[d] + (upper ? 1 : 0);
      weight *= upper ? alpha[d] : 1 - alpha[d];
    }
    if (weight == 0) continue;
    Value t = texelAt(v, e, index, slice);
    for (int c = 0; c < 4; ++c) out.f[c] += weight * t.f[c];
  }
  return out;
}

void store(void* out, const TextureView& v, const Value& value) {
  __builtin_memcpy(
      out, v.readAsInteger ? static_cast<const void*>(value.u) : static_cast<const void*>(value.f),
      16);
}

size_t layerIndex(const TextureView& v, int32_t layer) {
  int64_t count = static_cast<int64_t>(v.layers);
  return static_cast<size_t>(clampTo<int64_t>(layer, 0, count - 1));
}

// Cubemap direction -> face and normalized face coordinates (the cube map selection table).
void cubeFace(float x, float y, float z, int& face, float& s, float& t) {
  float ax = __builtin_fabsf(x), ay = __builtin_fabsf(y), az = __builtin_fabsf(z);
  float sc, tc, ma;
  if (ax >= ay && ax >= az) {
    face = x >= 0 ? 0 : 1;
    ma = ax;
    sc = x >= 0 ? -z : z;
    tc = -y;
  } else if (ay >= az) {
    face = y >= 0 ? 2 : 3;
    ma = ay;
    sc = x;
    tc = y >= 0 ? z : -z;
  } else {
    face = z >= 0 ? 4 : 5;
    ma = az;
    sc = z >= 0 ? x : -x;
    tc = -y;
  }
  if (ma == 0) ma = 1;
  s = (sc / ma + 1) * 0.5f;
  t = (tc / ma + 1) * 0.5f;
}

// The direction of face coordinates (sc, tc) in [-1, 1] (beyond for taps past the edge) of
// `face`: cubeFace's selection table backwards, on the unit cube.
void cubeDirection(int face, float sc, float tc, float& x, float& y, float& z) {
  switch (face) {
    case 0:
      x = 1, y = -tc, z = -sc;
      break;
    case 1:
      x = -1, y = -tc, z = sc;
      break;
    case 2:
      x = sc, y = 1, z = tc;
      break;
    case 3:
      x = sc, y = -1, z = -tc;
      break;
    case 4:
      x = sc, y = -tc, z = 1;
      break;
    default:
      x = -sc, y = -tc, z = -1;
      break;
  }
}

// Seamless cube map filtering (CU_TRSF_SEAMLESS_CUBEMAP with linear filtering): the bilinear
// footprint at (s, t) of `face`; a tap past the face's edge reads the texel of the neighbouring
// face that its centre's direction selects (at a corner, one of the two neighbours).
Value sampleCubeSeamless(const TextureView& faceView, int face, float s, float t, size_t cube) {
  int64_t n = static_cast<int64_t>(faceView.width);
  Extent e{{n, n, 1}, 2};
  float u = s * static_cast<float>(n) - 0.5f, w = t * static_cast<float>(n) - 0.5f;
  float fu = __builtin_floorf(u), fw = __builtin_floorf(w);
  float alpha = __builtin_roundf((u - fu) * 256.0f) / 256.0f;  // 9-bit fixed point, as sample()
  float beta = __builtin_roundf((w - fw) * 256.0f) / 256.0f;
  Value out;
  for (int c = 0; c < 4; ++c) out.f[c] = 0;
  for (int corner = 0; corner < 4; ++corner) {
    int64_t index[3] = {static_cast<int64_t>(fu) + (corner & 1),
                        static_cast<int64_t>(fw) + (corner >> 1), 0};
    float weight = ((corner & 1) ? alpha : 1 - alpha) * ((corner >> 1) ? beta : 1 - beta);
    if (weight == 0) continue;
    int tapFace = face;
    if (index[0] < 0 || index[0] >= n || index[1] < 0 || index[1] >= n) {
      float x, y, z, s2, t2;
      cubeDirection(face, (static_cast<float>(index[0]) + 0.5f) / static_cast<float>(n) * 2 - 1,
                    (static_cast<float>(index[1]) + 0.5f) / static_cast<float>(n) * 2 - 1, x, y, z);
      cubeFace(x, y, z, tapFace, s2, t2);
      index[0] = clampTo<int64_t>(static_cast<int64_t>(__builtin_floorf(s2 * n)), 0, n - 1);
      index[1] = clampTo<int64_t>(static_cast<int64_t>(__builtin_floorf(t2 * n)), 0, n - 1);
    }
    Value texel = texelAt(faceView, e, index, cube * 6 + static_cast<size_t>(tapFace));
    for (int c = 0; c < 4; ++c) out.f[c] += weight * texel.f[c];
  }
  return out;
}

Value fetchFloat(const TextureView& v, int32_t geometry, float x, float y, float z, int32_t layer) {
  Extent e{{static_cast<int64_t>(v.width), static_cast<int64_t>(v.height),
            static_cast<int64_t>(v.depth)},
           1};
  float coords[3] = {x, y, z};
  size_t slice = 0;
  switch (static_cast<TexGeometry>(geometry)) {
    case TexGeometry::D1:
      e.dims = 1;
      break;
    case TexGeometry::D2:
      e.dims = 2;
      break;
    case TexGeometry::D3:
      e.dims = 3;
      break;
    case TexGeometry::A1D:
      e.dims = 1;
      slice = layerIndex(v, layer);
      break;
    case TexGeometry::A2D:
      e.dims = 2;
      slice = layerIndex(v, layer);
      break;
    case TexGeometry::Cube:
    case TexGeometry::ACube: {
      int face;
      cubeFace(x, y, z, face, coords[0], coords[1]);
      TextureView faceView = v;  // faces are sampled with normalized, clamped coordinates
      faceView.normalizedCoords = true;
      faceView.address[0] = faceView.address[1] = TextureAddressMode::Clamp;
      size_t cube = static_cast<TexGeometry>(geometry) == TexGeometry::ACube
                        ? static_cast<size_t>(
                              clampTo<int64_t>(layer, 0, static_cast<int64_t>(v.layers / 6) - 1))
                        : 0;
      if (v.seamlessCubemap && v.filter == support::TextureFilter::Linear && !v.readAsInteger)
        return sampleCubeSeamless(faceView, face, coords[0], coords[1], cube);
      e.dims = 2;
      return sample(faceView, e, coords, cube * 6 + static_cast<size_t>(face));
    }
    default:
      return Value{};
  }
  return sample(v, e, coords, slice);
}

// Surface coordinates -> texel address, or nullptr when out of range under `mode` (clamp
// moves the coordinates to the edge instead).
uint8_t* surfaceAddress(const TextureView& v, int32_t geometry, int64_t x, int64_t y, int64_t z,
                        int64_t layer, int32_t bytes, int32_t mode, bool& trap) {
  trap = false;
  int64_t rowBytes = static_cast<int64_t>(v.width * v.texelBytes);
  int64_t height = static_cast<int64_t>(v.height), depth = static_cast<int64_t>(v.depth);
  int64_t layers = static_cast<int64_t>(v.layers);
  switch (static_cast<TexGeometry>(geometry)) {
    case TexGeometry::D1:
      y = 0;
      z = 0;
      layer = 0;
      break;
    case TexGeometry::D2:
      z = 0;
      layer = 0;
      break;
    case TexGeometry::D3:
      layer = 0;
      break;
    case TexGeometry::A1D:
      y = 0;
      z = 0;
      break;
    case TexGeometry::A2D:
      z = 0;
      break;
    default:
      trap = mode == 0;
      return nullptr;
  }
  bool inside = x >= 0 && x + bytes <= rowBytes && y >= 0 && y < height && z >= 0 && z < depth &&
                layer >= 0 && layer < layers;
  if (!inside) {
    if (mode == 0) {
      trap = true;
      return nullptr;
    }
    if (mode == 2) return nullptr;
    x = clampTo<int64_t>(x, 0, maxOf<int64_t>(rowBytes - bytes, 0));
    x -= x % maxOf<int32_t>(bytes, 1);
    y = clampTo<int64_t>(y, 0, height - 1);
    z = clampTo<int64_t>(z, 0, depth - 1);
    layer = clampTo<int64_t>(layer, 0, layers - 1);
  }
  return v.data + static_cast<size_t>(layer + z) * v.slicePitch +
         static_cast<size_t>(y) * v.rowPitch + static_cast<size_t>(x);
}

int32_t query(const TextureView* v, int32_t which) {
  if (v == nullptr) return 0;
  switch (which) {
    case 0:
      return static_cast<int32_t>(v->width);
    case 1:
      return static_cast<int32_t>(v->height);
    case 2:
      return static_cast<int32_t>(v->depth);
    case 3:
      return static_cast<int32_t>(v->format);
    case 4:
      return v->channels;
    case 5:
      return v->normalizedCoords ? 1 : 0;
    case 6:
      return static_cast<int32_t>(v->filter);
    case 7:
    case 8:
    case 9:
      return static_cast<int32_t>(v->address[which - 7]);
    case 10:
      return static_cast<int32_t>(v->cubemap ? v->layers / 6 : v->layers);
    case 11:
      return static_cast<int32_t>(v->levels);
    default:
      return 0;
  }
}

// A formatted value (sust.p) converted to one channel of the surface's format.
void storeChannel(const TextureView& v, uint8_t* p, unsigned c, uint32_t bits, int32_t kind) {
  float f;
  __builtin_memcpy(&f, &bits, 4);
  auto integer = [&](double lo, double hi, double scale) -> int64_t {
    if (kind == 0)
      return static_cast<int64_t>(__builtin_nearbyint(clampTo<double>(f, lo, hi) * scale));
    return kind == 1 ? static_cast<int32_t>(bits) : static_cast<int64_t>(bits);
  };
  switch (v.format) {
    case TexelFormat::U8: {
      uint8_t s = static_cast<uint8_t>(integer(0, 1, 255));
      p[c] = s;
      break;
    }
    case TexelFormat::S8: {
      int8_t s = static_cast<int8_t>(integer(-1, 1, 127));
      __builtin_memcpy(p + c, &s, 1);
      break;
    }
    case TexelFormat::U16: {
      uint16_t s = static_cast<uint16_t>(integer(0, 1, 65535));
      __builtin_memcpy(p + 2 * c, &s, 2);
      break;
    }
    case TexelFormat::S16: {
      int16_t s = static_cast<int16_t>(integer(-1, 1, 32767));
      __builtin_memcpy(p + 2 * c, &s, 2);
      break;
    }
    case TexelFormat::U32:
    case TexelFormat::S32:
      __builtin_memcpy(p + 4 * c, &bits, 4);
      break;
    case TexelFormat::F16: {
      float value = kind == 0   ? f
                    : kind == 1 ? static_cast<float>(static_cast<int32_t>(bits))
                                : static_cast<float>(bits);
      uint16_t h = floatToHalf(value);
      __builtin_memcpy(p + 2 * c, &h, 2);
      break;
    }
    case TexelFormat::F32: {
      float value = kind == 0   ? f
                    : kind == 1 ? static_cast<float>(static_cast<int32_t>(bits))
                                : static_cast<float>(bits);
      __builtin_memcpy(p + 4 * c, &value, 4);
      break;
    }
  }
}

// tex.level on a mipmapped texture: the level of detail after bias and clamps (to the texture's
// [minLod, maxLod] and its levels), then the nearest level (point) or the two around it mixed
// (linear). A texture without levels samples its one level.
Value fetchAtLod(const TextureView& v, int32_t geometry, float x, float y, float z, int32_t layer,
                 float lod) {
  if (v.levels <= 1 || v.mipLevels == nullptr) return fetchFloat(v, geometry, x, y, z, layer);
  float top = static_cast<float>(v.levels - 1);
  lod = clampTo(lod + v.mipBias, v.minLod, maxOf(v.minLod, v.maxLod));
  lod = clampTo(__builtin_isnan(lod) ? 0.0f : lod, 0.0f, top);
  if (v.mipFilter == support::TextureFilter::Point) {
    auto level = static_cast<uint32_t>(__builtin_floorf(lod + 0.5f));
    return fetchFloat(v.mipLevels[minOf(level, v.levels - 1)], geometry, x, y, z, layer);
  }
  auto lower = static_cast<uint32_t>(__builtin_floorf(lod));
  uint32_t upper = minOf(lower + 1, v.levels - 1);
  float t = lod - static_cast<float>(lower);
  Value a = fetchFloat(v.mipLevels[lower], geometry, x, y, z, layer);
  if (t == 0.0f || upper == lower) return a;
  Value b = fetchFloat(v.mipLevels[upper], geometry, x, y, z, layer);
  for (int c = 0; c < 4; ++c) a.f[c] += (b.f[c] - a.f[c]) * t;
  return a;
}

// tex.grad: the level of detail of the larger gradient, measured in level-0 texels.
float lodOfGradients(const TextureView& v, const float dx[3], const float dy[3]) {
  float scale[3] = {1, 1, 1};
  if (v.normalizedCoords) {
    scale[0] = static_cast<float>(v.width);
    scale[1] = static_cast<float>(v.height);
    scale[2] = static_cast<float>(v.depth);
  }
  float lx = 0, ly = 0;
  for (int i = 0; i < 3; ++i) {
    lx += dx[i] * scale[i] * dx[i] * scale[i];
    ly += dy[i] * scale[i] * dy[i] * scale[i];
  }
  float longest = __builtin_sqrtf(maxOf(lx, ly));
  return longest > 0 ? __builtin_log2f(longest) : -1e30f;  // no gradient: level 0 (after clamping)
}

// One atomic read-modify-write of sured on an aligned element: op 0 add, 1 min, 2 max, 3 and, 4 or.
template <class T>
void reduceAtomically(void* element, T value, int32_t op) {
  T* target = static_cast<T*>(element);
  switch (op) {
    case 0:
      __atomic_fetch_add(target, value, __ATOMIC_SEQ_CST);
      return;
    case 3:
      __atomic_fetch_and(target, value, __ATOMIC_SEQ_CST);
      return;
    case 4:
      __atomic_fetch_or(target, value, __ATOMIC_SEQ_CST);
      return;
    default: {
      T current = __atomic_load_n(target, __ATOMIC_SEQ_CST);
      while ((op == 1 ? value < current : value > current) &&
             !__atomic_compare_exchange_n(target, &current, value, /*weak=*/true, __ATOMIC_SEQ_CST,
                                          __ATOMIC_SEQ_CST)) {
      }
    }
  }
}

bool signedFormat(const TextureView& v) {
  using rocuda::support::TexelFormat;
  return v.format == TexelFormat::S8 || v.format == TexelFormat::S16 ||
         v.format == TexelFormat::S32;
}

}  // namespace

}  // namespace rocuda::device_library

using namespace rocuda::device_library;

extern "C" {

void __rocuda_tex_fetch_f(void* out, uint64_t tex, int32_t geometry, float x, float y, float z,
                          int32_t layer) {
  const rocuda::support::TextureView* v = viewOf(tex);
  if (v == nullptr) {
    __builtin_memset(out, 0, 16);
    return;
  }
  store(out, *v, fetchFloat(*v, geometry, x, y, z, layer));
}

void __rocuda_tex_fetch_i(void* out, uint64_t tex, int32_t geometry, int32_t x, int32_t y,
                          int32_t z, int32_t layer) {
  const rocuda::support::TextureView* v = viewOf(tex);
  if (v == nullptr) {
    __builtin_memset(out, 0, 16);
    return;
  }
  if (v->shape == rocuda::support::TextureShape::Linear1D) {
    // tex1Dfetch: out-of-range indices read zero.
    Value value;
    if (x >= 0 && static_cast<size_t>(x) < v->width)
      value = loadTexel(*v, v->data + static_cast<size_t>(x) * v->texelBytes);
    else
      value = Value{{0, 0, 0, 0}, {0, 0, 0, 0}};
    store(out, *v, value);
    return;
  }
  rocuda::support::TextureView texelView = *v;  // integer coordinates address texels directly
  texelView.normalizedCoords = false;
  texelView.filter = rocuda::support::TextureFilter::Point;
  store(out, *v,
        fetchFloat(texelView, geometry, static_cast<float>(x) + 0.5f, static_cast<float>(y) + 0.5f,
                   static_cast<float>(z) + 0.5f, layer));
}

void __rocuda_tex_gather(void* out, uint64_t tex, int32_t component, float x, float y,
                         int32_t layer) {
  const rocuda::support::TextureView* v = viewOf(tex);
  if (v == nullptr || component < 0 || component > 3) {
    __builtin_memset(out, 0, 16);
    return;
  }
  Extent e{{static_cast<int64_t>(v->width), static_cast<int64_t>(v->height), 1}, 2};
  float u = boundedCoordinate(v->normalizedCoords ? x * static_cast<float>(e.n[0]) : x);
  float w = boundedCoordinate(v->normalizedCoords ? y * static_cast<float>(e.n[1]) : y);
  int64_t i = static_cast<int64_t>(__builtin_floorf(u - 0.5f));
  int64_t j = static_cast<int64_t>(__builtin_floorf(w - 0.5f));
  // The bilinear footprint in Direct3D gather order: (i, j+1), (i+1, j+1), (i+1, j), (i, j).
  const int64_t corners[4][3] = {{i, j + 1, 0}, {i + 1, j + 1, 0}, {i + 1, j, 0}, {i, j, 0}};
  size_t slice = v->layered ? layerIndex(*v, layer) : 0;
  Value result;
  for (int k = 0; k < 4; ++k) {
    Value t = texelAt(*v, e, corners[k], slice);
    result.f[k] = t.f[component];
    result.u[k] = t.u[component];
  }
  store(out, *v, result);
}

void __rocuda_tex_fetch_lod(void* out, uint64_t tex, int32_t geometry, float x, float y, float z,
                            int32_t layer, float lod) {
  const rocuda::support::TextureView* v = viewOf(tex);
  if (v == nullptr) {
    __builtin_memset(out, 0, 16);
    return;
  }
  store(out, *v, fetchAtLod(*v, geometry, x, y, z, layer, lod));
}

void __rocuda_tex_fetch_grad(void* out, uint64_t tex, int32_t geometry, float x, float y, float z,
                             int32_t layer, float dxx, float dxy, float dxz, float dyx, float dyy,
                             float dyz) {
  const rocuda::support::TextureView* v = viewOf(tex);
  if (v == nullptr) {
    __builtin_memset(out, 0, 16);
    return;
  }
  const float dx[3] = {dxx, dxy, dxz}, dy[3] = {dyx, dyy, dyz};
  store(out, *v, fetchAtLod(*v, geometry, x, y, z, layer, lodOfGradients(*v, dx, dy)));
}

int32_t __rocuda_tex_query(uint64_t tex, int32_t which) { return query(viewOf(tex), which); }
int32_t __rocuda_surf_query(uint64_t surf, int32_t which) { return query(viewOf(surf), which); }

int32_t __rocuda_surf_load(void* out, uint64_t surf, int32_t geometry, int32_t x, int32_t y,
                           int32_t z, int32_t layer, int32_t bytes, int32_t mode) {
  __builtin_memset(out, 0, static_cast<size_t>(clampTo(bytes, 0, 16)));
  const rocuda::support::TextureView* v = viewOf(surf);
  if (v == nullptr || bytes <= 0 || bytes > 16) return mode == 0 ? 1 : 0;
  bool trap = false;
  uint8_t* p = surfaceAddress(*v, geometry, x, y, z, layer, bytes, mode, trap);
  if (p != nullptr) __builtin_memcpy(out, p, static_cast<size_t>(bytes));
  return trap ? 1 : 0;
}

int32_t __rocuda_surf_store(const void* in, uint64_t surf, int32_t geometry, int32_t x, int32_t y,
                            int32_t z, int32_t layer, int32_t bytes, int32_t mode) {
  const rocuda::support::TextureView* v = viewOf(surf);
  if (v == nullptr || bytes <= 0 || bytes > 16) return mode == 0 ? 1 : 0;
  bool trap = false;
  uint8_t* p = surfaceAddress(*v, geometry, x, y, z, layer, bytes, mode, trap);
  if (p != nullptr) __builtin_memcpy(p, in, static_cast<size_t>(bytes));
  return trap ? 1 : 0;
}

int32_t __rocuda_surf_store_p(const void* in, uint64_t surf, int32_t geometry, int32_t x, int32_t y,
                              int32_t z, int32_t layer, int32_t kind, int32_t mode) {
  const rocuda::support::TextureView* v = viewOf(surf);
  if (v == nullptr) return mode == 0 ? 1 : 0;
  bool trap = false;
  // Sample addressing: x counts texels.
  uint8_t* p = surfaceAddress(*v, geometry, int64_t(x) * int64_t(v->texelBytes), y, z, layer,
                              v->texelBytes, mode, trap);
  if (p == nullptr) return trap ? 1 : 0;
  uint32_t values[4];
  __builtin_memcpy(values, in, 16);
  if (kind < 0) {  // the values' type follows the surface's channel type
    using rocuda::support::TexelFormat;
    bool isFloat = v->format == TexelFormat::F16 || v->format == TexelFormat::F32;
    kind = isFloat ? 0 : signedFormat(*v) ? 1 : 2;
  }
  for (unsigned c = 0; c < v->channels && c < 4; ++c) storeChannel(*v, p, c, values[c], kind);
  return 0;
}

int32_t __rocuda_surf_reduce(uint64_t surf, int32_t geometry, int32_t x, int32_t y, int32_t z,
                             int32_t layer, uint64_t value, int32_t op, int32_t type,
                             int32_t samples, int32_t mode) {
  const rocuda::support::TextureView* v = viewOf(surf);
  bool wide = type == 2 || type == 3 || type == 5;
  int32_t bytes = wide ? 8 : 4;
  if (v == nullptr || op < 0 || op > 4 || type < 0 || type > 5) return mode == 0 ? 1 : 0;
  bool isSigned = type == 1 || type == 3 || (type >= 4 && signedFormat(*v));
  int64_t byteX = samples != 0 ? int64_t(x) * int64_t(v->texelBytes) : int64_t(x);
  bool trap = false;
  uint8_t* p = surfaceAddress(*v, geometry, byteX, y, z, layer, bytes, mode, trap);
  if (p == nullptr) return trap ? 1 : 0;
  if (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) != 0)
    return mode == 0 ? 1 : 0;  // a misaligned element cannot be updated atomically
  if (wide && isSigned)
    reduceAtomically<int64_t>(p, static_cast<int64_t>(value), op);
  else if (wide)
    reduceAtomically<uint64_t>(p, value, op);
  else if (isSigned)
    reduceAtomically<int32_t>(p, static_cast<int32_t>(static_cast<uint32_t>(value)), op);
  else
    reduceAtomically<uint32_t>(p, static_cast<uint32_t>(value), op);
  return 0;
}

}  // extern "C"
