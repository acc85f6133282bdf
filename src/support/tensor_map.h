// What Rocuda keeps in a CUtensorMap: the 128 opaque bytes that cuTensorMapEncodeTiled fills and
// that translated kernels hand to the device library's tensor copies (cp.async.bulk.tensor,
// device_library/tensor_copies.h). A program only copies the bytes around (as a
// __grid_constant__ kernel parameter, or in global or constant memory), so the layout is ours.
#pragma once

#include <stdint.h>  // C headers: the device library compiles this for AMD GPUs too

namespace rocuda::support {

inline constexpr uint32_t kTensorMapMagic = 0x504d5452;  // "RTMP"
inline constexpr unsigned kTensorMapMaxRank = 5;

// CUtensorMapSwizzle values the copies implement: 16-byte chunks within 32, 64 or 128 bytes.
enum class TensorMapSwizzle : uint8_t { None = 0, Span32 = 1, Span64 = 2, Span128 = 3 };

struct TensorMapDescriptor {
  uint32_t magic;
  uint8_t rank;          // 1..5
  uint8_t dataType;      // CUtensorMapDataType, as encoded
  uint8_t elementBytes;  // 1, 2, 4 or 8
  TensorMapSwizzle swizzle;
  uint8_t fillWithNaN;  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
  uint8_t floatKind;    // 0 integer, 1 f16, 2 bf16, 3 f32, 4 f64: reductions and NaN fills
  uint8_t unused[6];
  uint64_t globalAddress;
  uint64_t globalDim[kTensorMapMaxRank];
  uint64_t globalStride[kTensorMapMaxRank];  // bytes; [0] is the element size
  uint16_t boxDim[kTensorMapMaxRank];        // elements traversed, 1..256
  uint8_t elementStride[kTensorMapMaxRank];  // 1..8 ([0] is 1)
};
static_assert(sizeof(TensorMapDescriptor) <= 128, "a CUtensorMap holds 128 bytes");

// Elements a box holds along dimension `i`: ceil(boxDim / elementStride).
inline uint32_t tensorBoxElements(const TensorMapDescriptor& map, unsigned i) {
  return (static_cast<uint32_t>(map.boxDim[i]) + map.elementStride[i] - 1) / map.elementStride[i];
}

// The bytes a box occupies in shared memory (the transaction count of a load).
inline uint32_t tensorBoxBytes(const TensorMapDescriptor& map) {
  uint32_t bytes = map.elementBytes;
  for (unsigned i = 0; i < map.rank; ++i) bytes *= tensorBoxElements(map, i);
  return bytes;
}

}  // namespace rocuda::support
