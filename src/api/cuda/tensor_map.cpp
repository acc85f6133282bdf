// Tensor maps: cuTensorMapEncodeTiled checks its arguments as NVIDIA's documentation lists them
// and writes a support::TensorMapDescriptor into the CUtensorMap, which kernels hand to
// cp.async.bulk.tensor (device_library/tensor_copies.h); cuTensorMapReplaceAddress changes the
// base of one. The encoding needs no device or context: it is host-side bytes, read by kernels.
#include "support/tensor_map.h"

#include <cstring>
#include <string>

#include "api/cuda/boundary.h"

namespace rocuda::api {
namespace {

using namespace cuda;
using support::TensorMapDescriptor;

struct ElementType {
  uint8_t bytes;
  uint8_t floatKind;  // TensorMapDescriptor::floatKind
};

// The element of each data type; the packed sub-byte types (16U4, 16U6: sm_100's) are refused.
bool elementTypeOf(CUtensorMapDataType type, ElementType& out) {
  switch (type) {
    case CU_TENSOR_MAP_DATA_TYPE_UINT8:
      out = {1, 0};
      return true;
    case CU_TENSOR_MAP_DATA_TYPE_UINT16:
      out = {2, 0};
      return true;
    case CU_TENSOR_MAP_DATA_TYPE_UINT32:
    case CU_TENSOR_MAP_DATA_TYPE_INT32:
      out = {4, 0};
      return true;
    case CU_TENSOR_MAP_DATA_TYPE_UINT64:
    case CU_TENSOR_MAP_DATA_TYPE_INT64:
      out = {8, 0};
      return true;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
      out = {2, 1};
      return true;
    case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
      out = {2, 2};
      return true;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
    case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
      out = {4, 3};
      return true;
    case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
      out = {8, 4};
      return true;
    default:
      return false;
  }
}

Outcome encodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType dataType, cuuint32_t rank,
                    void* globalAddress, const cuuint64_t* globalDim,
                    const cuuint64_t* globalStrides, const cuuint32_t* boxDim,
                    const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
                    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                    CUtensorMapFloatOOBfill oobFill) {
  if (tensorMap == nullptr) return invalidValue("tensorMap is NULL");
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64 != 0)
    return invalidValue("tensorMap is not aligned to 64 bytes");
  if (dataType >= CU_TENSOR_MAP_DATA_TYPE_16U4_ALIGN8B &&
      dataType <= CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B)
    return {CUDA_ERROR_NOT_SUPPORTED, "packed 4- and 6-bit tensor data types (sm_100)"};
  ElementType element{};
  if (!elementTypeOf(dataType, element)) return invalidValue("unknown tensorDataType");
  if (rank == 0 || rank > support::kTensorMapMaxRank)
    return invalidValue("tensorRank must be 1 to 5");
  if (interleave < CU_TENSOR_MAP_INTERLEAVE_NONE || interleave > CU_TENSOR_MAP_INTERLEAVE_32B)
    return invalidValue("unknown interleave layout");
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3)
    return invalidValue("an interleaved layout needs tensorRank >= 3");
  if (swizzle < CU_TENSOR_MAP_SWIZZLE_NONE || swizzle > CU_TENSOR_MAP_SWIZZLE_128B_ATOM_64B)
    return invalidValue("unknown swizzle mode");
  if (l2Promotion < CU_TENSOR_MAP_L2_PROMOTION_NONE ||
      l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
    return invalidValue("unknown L2 promotion");
  if (oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE &&
      oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return invalidValue("unknown out-of-bounds fill");
  if (oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA && element.floatKind == 0)
    return invalidValue("a NaN fill needs a floating-point tensorDataType");
  auto address = reinterpret_cast<uintptr_t>(globalAddress);
  unsigned addressAlignment = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  if (globalAddress == nullptr || address % addressAlignment != 0)
    return invalidValue("globalAddress is NULL or not aligned to 16 bytes (32 when interleaved)");
  if (globalDim == nullptr || boxDim == nullptr || elementStrides == nullptr ||
      (rank > 1 && globalStrides == nullptr))
    return invalidValue("globalDim, globalStrides, boxDim or elementStrides is NULL");
  for (cuuint32_t i = 0; i < rank; ++i) {
    if (globalDim[i] == 0 || globalDim[i] > (1ull << 32))
      return invalidValue("globalDim must be 1 to 2^32");
    if (boxDim[i] == 0 || boxDim[i] > 256) return invalidValue("boxDim must be 1 to 256");
    if (elementStrides[i] == 0 || elementStrides[i] > 8)
      return invalidValue("elementStrides must be 1 to 8");
  }
  unsigned strideAlignment = interleave == CU_TENSOR_MAP_INTERLEAVE_32B ? 32 : 16;
  for (cuuint32_t i = 0; i + 1 < rank; ++i)
    if (globalStrides[i] % strideAlignment != 0 || globalStrides[i] >= (1ull << 40))
      return invalidValue("globalStrides must be multiples of 16 (32 when interleaved) below 2^40");
  uint64_t innerBytes = uint64_t(boxDim[0]) * element.bytes;
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    if (innerBytes % 16 != 0)
      return invalidValue("boxDim[0] times the element size must be a multiple of 16 bytes");
    static const unsigned kSpan[] = {0, 32, 64, 128, 128, 128, 128};
    if (swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && innerBytes > kSpan[swizzle])
      return invalidValue("the box's inner dimension is wider than the swizzle span");
  } else if (interleave == CU_TENSOR_MAP_INTERLEAVE_32B && swizzle != CU_TENSOR_MAP_SWIZZLE_32B) {
    return invalidValue("the 32-byte interleave needs CU_TENSOR_MAP_SWIZZLE_32B");
  }
  // Valid, but not what the tensor copies implement: say so rather than copy wrongly.
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE)
    return {CUDA_ERROR_NOT_SUPPORTED, "interleaved tensor layouts (NC/8HWC8, NC/16HWC16)"};
  if (swizzle > CU_TENSOR_MAP_SWIZZLE_128B)
    return {CUDA_ERROR_NOT_SUPPORTED, "swizzle modes with 32- and 64-byte atoms (sm_100)"};

  TensorMapDescriptor d{};
  d.magic = support::kTensorMapMagic;
  d.rank = static_cast<uint8_t>(rank);
  d.dataType = static_cast<uint8_t>(dataType);
  d.elementBytes = element.bytes;
  d.swizzle = static_cast<support::TensorMapSwizzle>(swizzle);
  d.fillWithNaN = oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA ? 1 : 0;
  d.floatKind = element.floatKind;
  d.globalAddress = address;
  for (cuuint32_t i = 0; i < rank; ++i) {
    d.globalDim[i] = globalDim[i];
    d.globalStride[i] = i == 0 ? element.bytes : globalStrides[i - 1];
    d.boxDim[i] = static_cast<uint16_t>(boxDim[i]);
    // The stride along dimension 0 is ignored (the documentation: TMA has none there).
    d.elementStride[i] = static_cast<uint8_t>(i == 0 ? 1 : elementStrides[i]);
  }
  std::memset(tensorMap, 0, sizeof(CUtensorMap));
  std::memcpy(tensorMap, &d, sizeof d);
  return {};
}

Outcome replaceAddress(CUtensorMap* tensorMap, void* globalAddress) {
  if (tensorMap == nullptr) return invalidValue("tensorMap is NULL");
  TensorMapDescriptor d;
  std::memcpy(&d, tensorMap, sizeof d);
  if (d.magic != support::kTensorMapMagic)
    return invalidValue("tensorMap was not made by cuTensorMapEncodeTiled");
  if (globalAddress == nullptr || reinterpret_cast<uintptr_t>(globalAddress) % 16 != 0)
    return invalidValue("globalAddress is NULL or not aligned to 16 bytes");
  d.globalAddress = reinterpret_cast<uintptr_t>(globalAddress);
  std::memcpy(tensorMap, &d, sizeof d);
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuTensorMapEncodeTiled(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    const cuuint32_t* boxDim, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  return ROCUDA_API((tensorMap, tensorDataType, tensorRank, globalAddress, globalDim, globalStrides,
                     boxDim, elementStrides, interleave, swizzle, l2Promotion, oobFill),
                    [&] {
                      return api::encodeTiled(tensorMap, tensorDataType, tensorRank, globalAddress,
                                              globalDim, globalStrides, boxDim, elementStrides,
                                              interleave, swizzle, l2Promotion, oobFill);
                    });
}

ROCUDA_EXPORT CUresult cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void* globalAddress) {
  return ROCUDA_API((tensorMap, globalAddress),
                    [&] { return api::replaceAddress(tensorMap, globalAddress); });
}

}  // extern "C"
}  // namespace rocuda::cuda
