// Texture and surface objects (cuTexObjectCreate, cuSurfObjectCreate). The handle the
// application gets is the address of the object's support::TextureView where its device's
// kernels read it (DeviceBackend::placeTextureViews: the CPU device reads the object's own view,
// a GPU a copy in its memory); core keeps a table of live handles so that API calls can
// validate them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "support/result.h"
#include "support/texture_view.h"

namespace rocuda::core {

// What textures over linear memory require of their memory (CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT
// and _TEXTURE_PITCH_ALIGNMENT; NVIDIA's values): device allocations and pool blocks start at
// multiples of the first, pitched allocations' rows of the second.
inline constexpr size_t kTextureAlignment = 512;
inline constexpr size_t kTexturePitchAlignment = 32;

// The largest CUDA array extent, layer count and layered cubemap depth (6 faces a layer), and the
// largest textures over linear memory (CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE*: the device reports
// these; cuArrayCreate and cuTexObjectCreate enforce them). They keep every size computation far
// from overflow.
inline constexpr size_t kMaxArrayExtent = size_t(1) << 16;
inline constexpr size_t kMaxArrayLayers = 2048;
inline constexpr size_t kMaxCubemapLayeredDepth = kMaxArrayLayers / 6 * 6;  // 2046, as NVIDIA's
inline constexpr size_t kMaxLinearTexels = size_t(1) << 28;
inline constexpr size_t kMaxPitch2DExtent = size_t(1) << 16;
inline constexpr size_t kMaxPitch2DPitch = size_t(1) << 21;

class Array;
class Context;

class TextureObject {
 public:
  TextureObject(Context& context, bool surface) : context_(context), surface_(surface) {}
  TextureObject(const TextureObject&) = delete;
  TextureObject& operator=(const TextureObject&) = delete;
  ~TextureObject();  // gives the device's copy of its views back

  Context& context() { return context_; }
  bool isSurface() const { return surface_; }
  support::TextureView& view() { return view_; }
  const support::TextureView& view() const { return view_; }
  // The handle registerTexture gave it (0 before).
  uint64_t handle() const { return handle_; }

  // A mipmapped texture's levels (TextureView::mipLevels points here); empty otherwise.
  std::vector<support::TextureView> levelViews;

  // The application's descriptors as given (opaque bytes to core), for the Get*Desc queries.
  std::vector<uint8_t> resourceDesc;
  std::vector<uint8_t> textureDesc;
  std::vector<uint8_t> viewDesc;  // empty when created without a view

 private:
  friend Result<uint64_t> registerTexture(std::unique_ptr<TextureObject> object);
  Context& context_;
  bool surface_;
  support::TextureView view_;
  uint64_t handle_ = 0;
};

// Point `view` at level 0 of `array` (shape, layout, format). Sampling state is left alone.
void describeArray(support::TextureView& view, const Array& array);

// Take ownership of `object` once its device has placed its views, making its handle live.
// Returns the handle; the device's error when it could not place them.
Result<uint64_t> registerTexture(std::unique_ptr<TextureObject> object);
// The live object with that handle and kind, or nullptr.
TextureObject* findTexture(uint64_t handle, bool surface);
// InvalidHandle when `handle` is not a live object of that kind.
Status destroyTexture(uint64_t handle, bool surface);
// cuDevicePrimaryCtxReset: every texture and surface object of `context` is destroyed.
void destroyContextTextures(Context& context);

}  // namespace rocuda::core
