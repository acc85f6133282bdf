#include "core/array.h"

#include <algorithm>
#include <string>

#include "core/context.h"
#include "core/platform.h"
#include "core/texture.h"

namespace rocuda::core {
namespace {

Error invalid(const std::string& why) { return makeError(ErrorCode::InvalidValue, why); }

}  // namespace

bool texelFormatOf(uint32_t cudaFormat, support::TexelFormat& out) {
  using support::TexelFormat;
  switch (cudaFormat) {
    case 1:
      out = TexelFormat::U8;
      return true;
    case 2:
      out = TexelFormat::U16;
      return true;
    case 3:
      out = TexelFormat::U32;
      return true;
    case 8:
      out = TexelFormat::S8;
      return true;
    case 9:
      out = TexelFormat::S16;
      return true;
    case 10:
      out = TexelFormat::S32;
      return true;
    case 16:
      out = TexelFormat::F16;
      return true;
    case 32:
      out = TexelFormat::F32;
      return true;
    default:
      // CU_AD_FORMAT_UNORM_INT8X1 (0xc0) .. SNORM_INT16X4 (0xcb): three channel counts each of
      // unsigned 8-bit, unsigned 16-bit, signed 8-bit and signed 16-bit normalized integers.
      if (cudaFormat >= 0xc0 && cudaFormat <= 0xcb) {
        static const TexelFormat kKinds[] = {TexelFormat::U8, TexelFormat::U16, TexelFormat::S8,
                                             TexelFormat::S16};
        out = kKinds[(cudaFormat - 0xc0) / 3];
        return true;
      }
      return false;
  }
}

uint32_t normalizedFormatChannels(uint32_t cudaFormat) {
  if (cudaFormat < 0xc0 || cudaFormat > 0xcb) return 0;
  static const uint32_t kChannels[] = {1, 2, 4};
  return kChannels[(cudaFormat - 0xc0) % 3];
}

Status validateTexelFormat(uint32_t cudaFormat, uint32_t channels) {
  support::TexelFormat texel;
  if (!texelFormatOf(cudaFormat, texel)) return invalid("unsupported texel format");
  if (channels != 1 && channels != 2 && channels != 4)
    return invalid("the number of channels must be 1, 2 or 4");
  if (uint32_t named = normalizedFormatChannels(cudaFormat); named != 0 && named != channels)
    return invalid("the number of channels must be the one the format names");
  return Status::success();
}

Status validateArrayDescriptor(const ArrayDescriptor& desc) {
  ROCUDA_TRY(validateTexelFormat(desc.format, desc.channels));
  if ((desc.flags & (kArraySparse | kArrayDeferredMapping)) != 0)
    return makeError(ErrorCode::NotSupported, "sparse and deferred-mapping arrays");
  constexpr uint32_t known = kArrayLayered | kArraySurfaceLoadStore | kArrayCubemap |
                             kArrayTextureGather | kArrayDepthTexture | kArrayColorAttachment;
  if ((desc.flags & ~known) != 0) return invalid("unknown array flags");
  if (desc.width == 0) return invalid("Width must not be 0");
  if (desc.height == 0 && desc.depth != 0 && (desc.flags & kArrayLayered) == 0)
    return invalid("a 3D array needs a height");
  bool layered = (desc.flags & kArrayLayered) != 0;
  bool cubemap = (desc.flags & kArrayCubemap) != 0;
  if (desc.width > kMaxArrayExtent || desc.height > kMaxArrayExtent)
    return invalid("array extent beyond the device limit");
  size_t maxDepth = layered && cubemap ? kMaxCubemapLayeredDepth
                    : layered          ? kMaxArrayLayers
                                       : kMaxArrayExtent;
  if (desc.depth > maxDepth)
    return invalid(layered ? "more layers than the device allows"
                           : "array depth beyond the device limit");
  if (layered && desc.depth == 0) return invalid("a layered array needs its layer count in Depth");
  if (cubemap) {
    if (desc.width != desc.height) return invalid("cubemap faces must be square");
    if (layered ? desc.depth % 6 != 0 : desc.depth != 6)
      return invalid("a cubemap needs Depth 6 (a multiple of 6 when layered)");
  }
  if ((desc.flags & kArrayTextureGather) != 0 && (desc.height == 0 || desc.depth != 0))
    return invalid("texture gather needs a 2D array");
  return Status::success();
}

Array::Array(Context& context, const ArrayDescriptor& desc, MipmappedArray* owner)
    : Object(ObjectKind::Array),
      context_(context),
      backend_(context.device().backend()),
      desc_(desc),
      owner_(owner) {}

Result<std::unique_ptr<Array>> Array::create(Context& context, const ArrayDescriptor& desc,
                                             MipmappedArray* owner) {
  if (Status ok = validateArrayDescriptor(desc); !ok) return ok.error();
  std::unique_ptr<Array> array(new Array(context, desc, owner));
  texelFormatOf(desc.format, array->texel_);
  array->texelBytes_ = support::texelChannelBytes(array->texel_) * desc.channels;
  backends::DeviceBackend& backend = array->backend_;
  Result<void*> storage = backend.allocateDevice(array->bytes());
  if (!storage) return storage.error();
  array->data_ = static_cast<uint8_t*>(*storage);
  if (Status zero = backend.fill(array->data_, 0, 1, array->bytes()); !zero) return zero.error();
  return array;
}

Array::~Array() {
  if (data_ != nullptr) backend_.freeDevice(data_);
}

ArrayDescriptor mipmapLevelDescriptor(const ArrayDescriptor& desc, unsigned level) {
  ArrayDescriptor out = desc;
  auto shrink = [level](size_t extent) -> size_t {
    if (extent == 0) return 0;
    size_t value = level >= 63 ? 0 : extent >> level;
    return value == 0 ? 1 : value;
  };
  out.width = shrink(desc.width);
  out.height = shrink(desc.height);
  // Layers and cubemap faces do not shrink; only a true 3D depth does.
  if ((desc.flags & (kArrayLayered | kArrayCubemap)) == 0) out.depth = shrink(desc.depth);
  return out;
}

MipmappedArray::MipmappedArray(const ArrayDescriptor& desc)
    : Object(ObjectKind::MipmappedArray), desc_(desc) {}

Result<std::unique_ptr<MipmappedArray>> MipmappedArray::create(Context& context,
                                                               const ArrayDescriptor& desc,
                                                               unsigned levels) {
  if (Status ok = validateArrayDescriptor(desc); !ok) return ok.error();
  size_t largest = desc.width;
  if (desc.height > largest) largest = desc.height;
  if ((desc.flags & (kArrayLayered | kArrayCubemap)) == 0 && desc.depth > largest)
    largest = desc.depth;
  unsigned maxLevels = 1;
  while ((largest >> maxLevels) != 0) ++maxLevels;
  // Clamped to [1, the full chain down to 1x1] as cuMipmappedArrayCreate documents.
  levels = std::clamp(levels, 1u, maxLevels);
  std::unique_ptr<MipmappedArray> mipmap(new MipmappedArray(desc));
  for (unsigned i = 0; i < levels; ++i) {
    Result<std::unique_ptr<Array>> level =
        Array::create(context, mipmapLevelDescriptor(desc, i), mipmap.get());
    if (!level) return level.error();
    mipmap->levels_.push_back(std::move(*level));
  }
  return mipmap;
}

MipmappedArray::~MipmappedArray() = default;

void destroyContextArrays(Context& context) {
  for (Object* object : liveObjects(ObjectKind::MipmappedArray)) {
    auto* mipmap = static_cast<MipmappedArray*>(object);
    if (&mipmap->context() == &context && !mipmap->ownedByResource()) delete mipmap;
  }
  // Levels went with their mipmapped arrays; what is left is stand-alone.
  for (Object* object : liveObjects(ObjectKind::Array)) {
    auto* array = static_cast<Array*>(object);
    if (&array->context() == &context && array->owner() == nullptr) delete array;
  }
}

Array* MipmappedArray::level(unsigned index) const {
  return index < levels_.size() ? levels_[index].get() : nullptr;
}

size_t MipmappedArray::bytes() const {
  size_t total = 0;
  for (const auto& level : levels_) total += level->bytes();
  return total;
}

}  // namespace rocuda::core
