// What a texture or surface object handle points at: an immutable description of the texels and
// of how to sample them, shared by core (which builds it in cuTexObjectCreate/cuSurfObjectCreate)
// and by device runtimes (which read it in translated kernels without calling into core).
//
// A CUtexObject / CUsurfObject is the address of a TextureView. The view never changes while the
// handle is live, so kernels may read it without synchronisation.
#pragma once

#include <stddef.h>  // C headers: the device library compiles this for AMD GPUs too
#include <stdint.h>

namespace rocuda::support {

// Element type of one channel (CUarray_format without the packed/compressed formats).
enum class TexelFormat : uint8_t { U8, U16, U32, S8, S16, S32, F16, F32 };

enum class TextureAddressMode : uint8_t { Wrap = 0, Clamp = 1, Mirror = 2, Border = 3 };
enum class TextureFilter : uint8_t { Point = 0, Linear = 1 };

// The shape of the resource (what tex.1d/.2d/... expects of it).
enum class TextureShape : uint8_t { Linear1D, Array1D, Array2D, Array3D, Pitch2D };

inline constexpr uint32_t kTextureViewMagic = 0x54584f52;  // "ROXT"

struct TextureView {
  uint32_t magic = kTextureViewMagic;
  TexelFormat format = TexelFormat::F32;
  uint8_t channels = 1;    // 1, 2 or 4
  uint8_t texelBytes = 4;  // channels * channel size
  TextureShape shape = TextureShape::Linear1D;
  bool layered = false;  // `layers` layers of width x height (x depth 1)
  bool cubemap = false;  // 6 (x layers) faces of width x width
  bool surface = false;  // a surface object (no sampling state)
  TextureFilter filter = TextureFilter::Point;
  TextureAddressMode address[3] = {TextureAddressMode::Wrap, TextureAddressMode::Wrap,
                                   TextureAddressMode::Wrap};
  bool readAsInteger = false;     // CU_TRSF_READ_AS_INTEGER: no conversion to [0,1]/[-1,1]
  bool normalizedFormat = false;  // a UNORM/SNORM format: always converted, whatever the mode
  bool normalizedCoords = false;  // CU_TRSF_NORMALIZED_COORDINATES
  bool srgb = false;              // CU_TRSF_SRGB
  bool seamlessCubemap = false;   // CU_TRSF_SEAMLESS_CUBEMAP: linear taps cross face edges
  float borderColor[4] = {0, 0, 0, 0};
  uint8_t* data = nullptr;  // texel (0, 0, 0) of layer/face 0
  size_t width = 0;         // texels
  size_t height = 1;
  size_t depth = 1;       // 3D depth (1 otherwise)
  size_t layers = 1;      // layered: layer count; cubemap: 6 * cubemap layers
  size_t rowPitch = 0;    // bytes between rows
  size_t slicePitch = 0;  // bytes between 3D slices, layers or faces
  // Mipmapped textures: `levels` views (mipLevels[0] describes the same level 0 as this one),
  // each with this view's sampling state, and how tex.level / tex.grad choose among them.
  uint32_t levels = 1;
  const TextureView* mipLevels = nullptr;
  TextureFilter mipFilter = TextureFilter::Point;
  float mipBias = 0, minLod = 0, maxLod = 0;
};

inline size_t texelChannelBytes(TexelFormat format) {
  switch (format) {
    case TexelFormat::U8:
    case TexelFormat::S8:
      return 1;
    case TexelFormat::U16:
    case TexelFormat::S16:
    case TexelFormat::F16:
      return 2;
    default:
      return 4;
  }
}

}  // namespace rocuda::support
