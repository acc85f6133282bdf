// Texture and surface objects. cuTexObjectCreate validates the descriptors and builds the
// immutable support::TextureView that the handle points at; translated kernels sample through it
// without calling back into the driver.
#include "core/texture.h"

#include <cstring>
#include <memory>
#include <optional>

#include "api/cuda/array_handles.h"
#include "api/cuda/boundary.h"
#include "core/array.h"
#include "core/context.h"
#include "core/memory.h"

namespace rocuda::api {
namespace {

using namespace cuda;
using support::TextureView;

template <class T>
std::vector<uint8_t> bytesOf(const T& value) {
  std::vector<uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

Outcome linearFormat(TextureView& view, CUarray_format format, unsigned channels) {
  if (Status valid = core::validateTexelFormat(format, channels); !valid) return valid;
  core::texelFormatOf(static_cast<uint32_t>(format), view.format);
  view.normalizedFormat = core::normalizedFormatChannels(static_cast<uint32_t>(format)) != 0;
  view.channels = static_cast<uint8_t>(channels);
  view.texelBytes = static_cast<uint8_t>(support::texelChannelBytes(view.format) * channels);
  return {};
}

// Shape, layout and format of the resource.
Outcome describeResource(TextureView& view, const CUDA_RESOURCE_DESC& res, bool surface) {
  if (res.flags != 0) return invalidValue("CUDA_RESOURCE_DESC::flags must be 0");
  switch (res.resType) {
    case CU_RESOURCE_TYPE_ARRAY: {
      Result<core::Array*> array = lookupArray(res.res.array.hArray);
      if (!array) return invalidValue("res.array.hArray is not a live CUDA array");
      if (surface && ((*array)->descriptor().flags & core::kArraySurfaceLoadStore) == 0)
        return invalidValue("the array was not created with CUDA_ARRAY3D_SURFACE_LDST");
      core::describeArray(view, **array);
      return {};
    }
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY: {
      if (surface) return invalidValue("surfaces need a CUDA array resource");
      Result<core::MipmappedArray*> mipmap = lookupMipmappedArray(res.res.mipmap.hMipmappedArray);
      if (!mipmap) return invalidValue("res.mipmap.hMipmappedArray is not a live mipmapped array");
      core::describeArray(view, *(*mipmap)->level(0));  // the levels: describeLevels
      view.levels = (*mipmap)->levelCount();
      return {};
    }
    case CU_RESOURCE_TYPE_LINEAR: {
      if (surface) return invalidValue("surfaces need a CUDA array resource");
      Outcome ok = linearFormat(view, res.res.linear.format, res.res.linear.numChannels);
      if (!ok.ok()) return ok;
      void* base = reinterpret_cast<void*>(res.res.linear.devPtr);
      if (base == nullptr || res.res.linear.sizeInBytes < view.texelBytes ||
          !core::isInsideAllocation(base, res.res.linear.sizeInBytes))
        return invalidValue("res.linear does not describe allocated device memory");
      if (res.res.linear.devPtr % core::kTextureAlignment != 0)
        return invalidValue("res.linear.devPtr is not aligned to the texture alignment (512)");
      if (res.res.linear.sizeInBytes / view.texelBytes > core::kMaxLinearTexels)
        return invalidValue(
            "more texels than CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH allows");
      view.shape = support::TextureShape::Linear1D;
      view.data = static_cast<uint8_t*>(base);
      view.width = res.res.linear.sizeInBytes / view.texelBytes;
      view.rowPitch = view.slicePitch = res.res.linear.sizeInBytes;
      return {};
    }
    case CU_RESOURCE_TYPE_PITCH2D: {
      if (surface) return invalidValue("surfaces need a CUDA array resource");
      const auto& p = res.res.pitch2D;
      Outcome ok = linearFormat(view, p.format, p.numChannels);
      if (!ok.ok()) return ok;
      void* base = reinterpret_cast<void*>(p.devPtr);
      if (p.width == 0 || p.height == 0 || p.pitchInBytes < p.width * view.texelBytes)
        return invalidValue("res.pitch2D extent or pitch is invalid");
      if (p.width > core::kMaxPitch2DExtent || p.height > core::kMaxPitch2DExtent ||
          p.pitchInBytes > core::kMaxPitch2DPitch)
        return invalidValue(
            "res.pitch2D beyond CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, _HEIGHT or "
            "_PITCH");
      if (p.devPtr % core::kTextureAlignment != 0)
        return invalidValue("res.pitch2D.devPtr is not aligned to the texture alignment (512)");
      if (p.pitchInBytes % core::kTexturePitchAlignment != 0)
        return invalidValue(
            "res.pitch2D.pitchInBytes is not a multiple of the pitch alignment (32)");
      size_t bytes = (p.height - 1) * p.pitchInBytes + p.width * view.texelBytes;
      if (base == nullptr || !core::isInsideAllocation(base, bytes))
        return invalidValue("res.pitch2D does not describe allocated device memory");
      view.shape = support::TextureShape::Pitch2D;
      view.data = static_cast<uint8_t*>(base);
      view.width = p.width;
      view.height = p.height;
      view.rowPitch = p.pitchInBytes;
      view.slicePitch = p.pitchInBytes * p.height;
      return {};
    }
    default:
      return invalidValue("unknown resource type");
  }
}

bool isInteger32(support::TexelFormat f) {
  return f == support::TexelFormat::U32 || f == support::TexelFormat::S32;
}
bool isFloat(support::TexelFormat f) {
  return f == support::TexelFormat::F32 || f == support::TexelFormat::F16;
}

Outcome describeSampling(TextureView& view, const CUDA_TEXTURE_DESC& tex) {
  // Over linear memory (tex1Dfetch) the address and filter modes "are ignored".
  const bool linear = view.shape == support::TextureShape::Linear1D;
  for (int i = 0; i < 3 && !linear; ++i) {
    if (tex.addressMode[i] < CU_TR_ADDRESS_MODE_WRAP ||
        tex.addressMode[i] > CU_TR_ADDRESS_MODE_BORDER)
      return invalidValue("unknown address mode");
    view.address[i] = static_cast<support::TextureAddressMode>(tex.addressMode[i]);
  }
  if (!linear && tex.filterMode != CU_TR_FILTER_MODE_POINT &&
      tex.filterMode != CU_TR_FILTER_MODE_LINEAR)
    return invalidValue("unknown filter mode");
  constexpr unsigned known = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES |
                             CU_TRSF_SRGB | CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION |
                             CU_TRSF_SEAMLESS_CUBEMAP;
  if ((tex.flags & ~known) != 0) return invalidValue("unknown texture flags");
  if ((tex.flags & CU_TRSF_SEAMLESS_CUBEMAP) != 0 && !view.cubemap)
    return invalidValue("CU_TRSF_SEAMLESS_CUBEMAP needs a cubemap array");
  view.seamlessCubemap = (tex.flags & CU_TRSF_SEAMLESS_CUBEMAP) != 0;
  view.filter =
      linear ? support::TextureFilter::Point : static_cast<support::TextureFilter>(tex.filterMode);
  view.normalizedCoords = (tex.flags & CU_TRSF_NORMALIZED_COORDINATES) != 0;
  view.srgb = (tex.flags & CU_TRSF_SRGB) != 0;
  // 32-bit integers are always returned as integers; floats need no conversion.
  view.readAsInteger = (tex.flags & CU_TRSF_READ_AS_INTEGER) != 0 || isInteger32(view.format);
  if (isFloat(view.format) || view.normalizedFormat) view.readAsInteger = false;
  if (view.filter == support::TextureFilter::Linear && view.readAsInteger)
    return invalidValue("linear filtering needs a texture that returns floating point");
  // Wrap and mirror need normalized coordinates; CUDA clamps otherwise.
  if (!view.normalizedCoords) {
    for (auto& mode : view.address)
      if (mode == support::TextureAddressMode::Wrap || mode == support::TextureAddressMode::Mirror)
        mode = support::TextureAddressMode::Clamp;
  }
  for (int i = 0; i < 4; ++i) view.borderColor[i] = tex.borderColor[i];
  return {};
}

// A mipmapped texture's level views, each with the texture's sampling state, and the level
// selection of tex.level / tex.grad (mipmap filter, bias and clamps).
void describeLevels(core::TextureObject& object, const CUDA_RESOURCE_DESC& res,
                    const CUDA_TEXTURE_DESC& tex) {
  core::MipmappedArray* mipmap = lookupMipmappedArray(res.res.mipmap.hMipmappedArray).value();
  TextureView& view = object.view();
  view.mipFilter = tex.mipmapFilterMode == CU_TR_FILTER_MODE_LINEAR ? support::TextureFilter::Linear
                                                                    : support::TextureFilter::Point;
  view.mipBias = tex.mipmapLevelBias;
  view.minLod = tex.minMipmapLevelClamp;
  view.maxLod = tex.maxMipmapLevelClamp;
  object.levelViews.assign(view.levels, view);
  for (uint32_t level = 0; level < view.levels; ++level) {
    TextureView& levelView = object.levelViews[level];
    core::describeArray(levelView, *mipmap->level(level));
    levelView.levels = 1;
  }
  view.mipLevels = object.levelViews.data();
}

// A resource view's element type: the channel format and count of CU_RES_VIEW_FORMAT_* (not
// the block-compressed ones, whose texels Rocuda does not decode).
struct ViewFormat {
  support::TexelFormat format;
  uint8_t channels;
};
std::optional<ViewFormat> viewFormatOf(CUresourceViewFormat format) {
  using F = support::TexelFormat;
  if (format < CU_RES_VIEW_FORMAT_UINT_1X8 || format > CU_RES_VIEW_FORMAT_FLOAT_4X32)
    return std::nullopt;
  // Groups of three (1, 2 and 4 channels) in cuda.h's order.
  static const F kGroups[] = {F::U8, F::S8, F::U16, F::S16, F::U32, F::S32, F::F16, F::F32};
  int index = static_cast<int>(format) - CU_RES_VIEW_FORMAT_UINT_1X8;
  static const uint8_t kChannels[] = {1, 2, 4};
  return ViewFormat{kGroups[index / 3], kChannels[index % 3]};
}

// The part of an array or mipmapped array a resource view shows (CUDA_RESOURCE_VIEW_DESC): its
// texels read as another format of the same size, a window of layers [firstLayer, lastLayer]
// and of levels [firstMipmapLevel, lastMipmapLevel]. The extent must be the resource's.
Outcome checkResourceView(const CUDA_RESOURCE_VIEW_DESC& v, const CUDA_RESOURCE_DESC& res,
                          const TextureView& view) {
  // "pResViewDesc can only be specified if the type of resource is a CUDA array or a CUDA
  // mipmapped array".
  if (res.resType != CU_RESOURCE_TYPE_ARRAY && res.resType != CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
    return invalidValue("a resource view needs a CUDA array or mipmapped array");
  for (unsigned r : v.reserved)
    if (r != 0) return invalidValue("CUDA_RESOURCE_VIEW_DESC::reserved must be 0");
  if (v.format >= CU_RES_VIEW_FORMAT_UNSIGNED_BC1 && v.format <= CU_RES_VIEW_FORMAT_UNSIGNED_BC7)
    return {CUDA_ERROR_NOT_SUPPORTED, "block-compressed resource views are not supported"};
  if (v.format != CU_RES_VIEW_FORMAT_NONE) {
    std::optional<ViewFormat> format = viewFormatOf(v.format);
    if (!format) return invalidValue("unknown resource view format");
    if (support::texelChannelBytes(format->format) * format->channels != view.texelBytes)
      return invalidValue("a resource view's format must have the resource's element size");
  }
  // "For non block compressed formats, this value has to be equal to that of the original
  // resource" (width, height and depth; depth counts layers of a layered array).
  size_t height = view.shape == support::TextureShape::Array1D ? 0 : view.height;
  size_t depth = view.layered || view.cubemap ? view.layers : view.depth > 1 ? view.depth : 0;
  if (v.width != view.width || v.height != height || v.depth != depth)
    return {CUDA_ERROR_INVALID_VALUE,
            "a resource view's extent (" + std::to_string(v.width) + "x" +
                std::to_string(v.height) + "x" + std::to_string(v.depth) +
                ") must be the resource's (" + std::to_string(view.width) + "x" +
                std::to_string(height) + "x" + std::to_string(depth) + ")"};
  size_t layers = view.layered || view.cubemap ? view.layers : 1;
  if (v.firstLayer > v.lastLayer || v.lastLayer >= layers)
    return invalidValue("the view's layers lie outside the resource");
  if (view.cubemap && (v.firstLayer % 6 != 0 || (v.lastLayer + 1) % 6 != 0))
    return invalidValue("a cubemap view takes whole cubes of six faces");
  if (v.firstMipmapLevel > v.lastMipmapLevel || v.lastMipmapLevel >= view.levels)
    return invalidValue("the view's mipmap levels lie outside the resource");
  return {};
}

void applyViewFormat(TextureView& view, const CUDA_RESOURCE_VIEW_DESC& v) {
  if (std::optional<ViewFormat> format = viewFormatOf(v.format)) {
    view.format = format->format;
    view.channels = format->channels;
    view.normalizedFormat = false;  // the view's integers are read as the view says
  }
}

// The view's window of layers (of a view of one level).
void applyViewLayers(TextureView& view, const CUDA_RESOURCE_VIEW_DESC& v) {
  if (!(view.layered || view.cubemap)) return;
  view.data += v.firstLayer * view.slicePitch;
  view.layers = v.lastLayer - v.firstLayer + 1;
}

Outcome texCreate(CUtexObject* out, const CUDA_RESOURCE_DESC* res, const CUDA_TEXTURE_DESC* tex,
                  const CUDA_RESOURCE_VIEW_DESC* viewDesc) {
  if (out == nullptr || res == nullptr || tex == nullptr)
    return invalidValue("pTexObject, pResDesc or pTexDesc is NULL");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  auto object = std::make_unique<core::TextureObject>(**context, false);
  TextureView& view = object->view();
  Outcome ok = describeResource(view, *res, false);
  if (!ok.ok()) return ok;
  if (viewDesc != nullptr) {
    if (ok = checkResourceView(*viewDesc, *res, view); !ok.ok()) return ok;
    applyViewFormat(view, *viewDesc);  // before the sampling state, which depends on it
  }
  ok = describeSampling(view, *tex);
  if (!ok.ok()) return ok;
  if (res->resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY &&
      (tex->flags & CU_TRSF_NORMALIZED_COORDINATES) == 0)
    return invalidValue("a mipmapped texture needs CU_TRSF_NORMALIZED_COORDINATES");
  if (res->resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY) describeLevels(*object, *res, *tex);
  if (viewDesc != nullptr) {
    if (!object->levelViews.empty()) {
      // Levels [first, last] become the texture's levels 0..; the view is its first.
      auto& levels = object->levelViews;
      levels.erase(levels.begin() + viewDesc->lastMipmapLevel + 1, levels.end());
      levels.erase(levels.begin(), levels.begin() + viewDesc->firstMipmapLevel);
      for (TextureView& level : levels) {
        applyViewFormat(level, *viewDesc);
        applyViewLayers(level, *viewDesc);
      }
      const TextureView& first = levels.front();
      view.data = first.data;
      view.width = first.width;
      view.height = first.height;
      view.depth = first.depth;
      view.layers = first.layers;
      view.rowPitch = first.rowPitch;
      view.slicePitch = first.slicePitch;
      view.levels = static_cast<uint32_t>(levels.size());
      view.mipLevels = levels.data();
    } else {
      applyViewLayers(view, *viewDesc);
    }
    object->viewDesc = bytesOf(*viewDesc);
  }
  object->resourceDesc = bytesOf(*res);
  object->textureDesc = bytesOf(*tex);
  Result<uint64_t> handle = core::registerTexture(std::move(object));
  if (!handle.ok()) return handle.error();
  *out = *handle;
  return {};
}

Result<core::TextureObject*> lookupTexture(CUtexObject handle, bool surface) {
  core::TextureObject* object = core::findTexture(handle, surface);
  if (object == nullptr)
    return makeError(ErrorCode::InvalidValue,
                     surface ? "not a live surface object" : "not a live texture object");
  return object;
}

template <class T>
Outcome copyOut(T* out, const std::vector<uint8_t>& bytes) {
  if (bytes.size() != sizeof(T)) return invalidValue("the object has no such descriptor");
  std::memcpy(out, bytes.data(), sizeof(T));
  return {};
}

Outcome texGetResourceDesc(CUDA_RESOURCE_DESC* out, CUtexObject handle, bool surface) {
  if (out == nullptr) return invalidValue("pResDesc is NULL");
  Result<core::TextureObject*> object = lookupTexture(handle, surface);
  if (!object) return object.error();
  return copyOut(out, (*object)->resourceDesc);
}

Outcome texGetTextureDesc(CUDA_TEXTURE_DESC* out, CUtexObject handle) {
  if (out == nullptr) return invalidValue("pTexDesc is NULL");
  Result<core::TextureObject*> object = lookupTexture(handle, false);
  if (!object) return object.error();
  return copyOut(out, (*object)->textureDesc);
}

Outcome texGetViewDesc(CUDA_RESOURCE_VIEW_DESC* out, CUtexObject handle) {
  if (out == nullptr) return invalidValue("pResViewDesc is NULL");
  Result<core::TextureObject*> object = lookupTexture(handle, false);
  if (!object) return object.error();
  return copyOut(out, (*object)->viewDesc);
}

Outcome destroy(unsigned long long handle, bool surface) {
  core::TextureObject* object = core::findTexture(handle, surface);
  if (object == nullptr)
    return invalidValue(surface ? "not a live surface object" : "not a live texture object");
  // Kernels queued earlier may still sample through the view (unless the context is gone).
  if (core::Context* context = core::lookupHandle<core::Context>(&object->context())) {
    if (Status drained = context->synchronize(); !drained) return drained;
  }
  return core::destroyTexture(handle, surface);
}

Outcome surfCreate(CUsurfObject* out, const CUDA_RESOURCE_DESC* res) {
  if (out == nullptr || res == nullptr) return invalidValue("pSurfObject or pResDesc is NULL");
  if (res->resType != CU_RESOURCE_TYPE_ARRAY)
    return invalidValue("surfaces need a CUDA array resource");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  auto object = std::make_unique<core::TextureObject>(**context, true);
  Outcome ok = describeResource(object->view(), *res, true);
  if (!ok.ok()) return ok;
  object->view().surface = true;
  object->view().readAsInteger = true;
  object->resourceDesc = bytesOf(*res);
  Result<uint64_t> handle = core::registerTexture(std::move(object));
  if (!handle.ok()) return handle.error();
  *out = *handle;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuTexObjectCreate(CUtexObject* pTexObject,
                                         const CUDA_RESOURCE_DESC* pResDesc,
                                         const CUDA_TEXTURE_DESC* pTexDesc,
                                         const CUDA_RESOURCE_VIEW_DESC* pResViewDesc) {
  return ROCUDA_API((pTexObject, pResDesc, pTexDesc, pResViewDesc),
                    [&] { return api::texCreate(pTexObject, pResDesc, pTexDesc, pResViewDesc); });
}
ROCUDA_EXPORT CUresult cuTexObjectDestroy(CUtexObject texObject) {
  return ROCUDA_API((texObject), [&] { return api::destroy(texObject, false); });
}
ROCUDA_EXPORT CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc,
                                                  CUtexObject texObject) {
  return ROCUDA_API((pResDesc, texObject),
                    [&] { return api::texGetResourceDesc(pResDesc, texObject, false); });
}
ROCUDA_EXPORT CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc,
                                                 CUtexObject texObject) {
  return ROCUDA_API((pTexDesc, texObject),
                    [&] { return api::texGetTextureDesc(pTexDesc, texObject); });
}
ROCUDA_EXPORT CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* pResViewDesc,
                                                      CUtexObject texObject) {
  return ROCUDA_API((pResViewDesc, texObject),
                    [&] { return api::texGetViewDesc(pResViewDesc, texObject); });
}
ROCUDA_EXPORT CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject,
                                          const CUDA_RESOURCE_DESC* pResDesc) {
  return ROCUDA_API((pSurfObject, pResDesc),
                    [&] { return api::surfCreate(pSurfObject, pResDesc); });
}
ROCUDA_EXPORT CUresult cuSurfObjectDestroy(CUsurfObject surfObject) {
  return ROCUDA_API((surfObject), [&] { return api::destroy(surfObject, true); });
}
ROCUDA_EXPORT CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc,
                                                   CUsurfObject surfObject) {
  return ROCUDA_API((pResDesc, surfObject),
                    [&] { return api::texGetResourceDesc(pResDesc, surfObject, true); });
}

}  // extern "C"
}  // namespace rocuda::cuda
