// CUDA arrays (cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate): texel storage with a
// fixed layout, in the device's memory. Rows are packed (row pitch = width * texel size), slices,
// layers and cubemap faces follow each other. Textures and surfaces read this layout directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/object.h"
#include "support/result.h"
#include "support/texture_view.h"

namespace rocuda::core {

class Context;
class MipmappedArray;
}  // namespace rocuda::core

namespace rocuda::backends {
class DeviceBackend;
}  // namespace rocuda::backends

namespace rocuda::core {

// CUarray_format values Rocuda stores (the plain integer and float formats).
// Returns false for any other format (packed, block-compressed, planar video formats).
bool texelFormatOf(uint32_t cudaFormat, support::TexelFormat& out);
// The channel count a normalized-integer format names (CU_AD_FORMAT_UNORM_INT8X2: 2); 0 for the
// other formats. Textures read those as floats in [0, 1] or [-1, 1] whatever the read mode.
uint32_t normalizedFormatChannels(uint32_t cudaFormat);
// InvalidValue unless `cudaFormat` is one texelFormatOf knows and `channels` is 1, 2 or 4: the
// element of every array, linear texture and texture reference.
Status validateTexelFormat(uint32_t cudaFormat, uint32_t channels);

// CUDA_ARRAY3D_* flags.
inline constexpr uint32_t kArrayLayered = 0x01;
inline constexpr uint32_t kArraySurfaceLoadStore = 0x02;
inline constexpr uint32_t kArrayCubemap = 0x04;
inline constexpr uint32_t kArrayTextureGather = 0x08;
inline constexpr uint32_t kArrayDepthTexture = 0x10;
inline constexpr uint32_t kArrayColorAttachment = 0x20;
inline constexpr uint32_t kArraySparse = 0x40;
inline constexpr uint32_t kArrayDeferredMapping = 0x80;

// An array's shape as the application described it (CUDA_ARRAY3D_DESCRIPTOR): 0 for an absent
// dimension (a 1D array has height 0 and depth 0; a layered one keeps its layers in depth).
struct ArrayDescriptor {
  size_t width = 0;
  size_t height = 0;
  size_t depth = 0;
  uint32_t format = 0;  // CUarray_format
  uint32_t channels = 1;
  uint32_t flags = 0;
};

// InvalidValue (with the reason) when `desc` is not an array CUDA could create; NotSupported
// for sparse and deferred-mapping arrays.
Status validateArrayDescriptor(const ArrayDescriptor& desc);

class Array : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::Array;
  // Validates `desc` and allocates the storage in `context`'s device memory (zero-filled).
  static Result<std::unique_ptr<Array>> create(Context& context, const ArrayDescriptor& desc,
                                               MipmappedArray* owner = nullptr);
  ~Array() override;

  // The context the array was created in (check it is still live before using it).
  Context& context() { return context_; }
  const ArrayDescriptor& descriptor() const { return desc_; }
  support::TexelFormat texelFormat() const { return texel_; }
  // The level's mipmapped array, or nullptr for a stand-alone array (cuArrayDestroy refuses
  // levels).
  MipmappedArray* owner() const { return owner_; }

  uint8_t* data() const { return data_; }
  size_t texelBytes() const { return texelBytes_; }
  size_t rowPitch() const { return texelBytes_ * desc_.width; }
  size_t rows() const { return desc_.height == 0 ? 1 : desc_.height; }
  size_t slicePitch() const { return rowPitch() * rows(); }
  size_t slices() const { return desc_.depth == 0 ? 1 : desc_.depth; }
  size_t bytes() const { return slicePitch() * slices(); }

 private:
  Array(Context& context, const ArrayDescriptor& desc, MipmappedArray* owner);

  Context& context_;
  backends::DeviceBackend& backend_;  // frees the storage even after the context is gone
  ArrayDescriptor desc_;
  support::TexelFormat texel_ = support::TexelFormat::U8;
  size_t texelBytes_ = 0;
  MipmappedArray* owner_;
  uint8_t* data_ = nullptr;
};

class MipmappedArray : public Object {
 public:
  static constexpr ObjectKind kKind = ObjectKind::MipmappedArray;
  // levels >= 1; InvalidValue when a level count exceeds what the largest dimension allows.
  static Result<std::unique_ptr<MipmappedArray>> create(Context& context,
                                                        const ArrayDescriptor& desc,
                                                        unsigned levels);
  ~MipmappedArray() override;

  const ArrayDescriptor& descriptor() const { return desc_; }
  Context& context() const { return levels_.front()->context(); }
  unsigned levelCount() const { return static_cast<unsigned>(levels_.size()); }
  // A graphics resource's mapped image (graphics.h) belongs to the resource, not to the
  // application: destroyContextArrays leaves it alone.
  void setOwnedByResource() { ownedByResource_ = true; }
  bool ownedByResource() const { return ownedByResource_; }
  Array* level(unsigned index) const;  // nullptr when out of range
  size_t bytes() const;

 private:
  explicit MipmappedArray(const ArrayDescriptor& desc);

  ArrayDescriptor desc_;
  std::vector<std::unique_ptr<Array>> levels_;
  bool ownedByResource_ = false;
};

// cuDevicePrimaryCtxReset: the arrays and mipmapped arrays the application created in
// `context` are destroyed (their handles are stale afterwards).
void destroyContextArrays(Context& context);

// The shape of mipmap level `level` of an array described by `desc` (each present, non-layer
// dimension halves, down to 1).
ArrayDescriptor mipmapLevelDescriptor(const ArrayDescriptor& desc, unsigned level);

}  // namespace rocuda::core
