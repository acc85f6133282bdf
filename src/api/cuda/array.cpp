// CUDA arrays and mipmapped arrays: creation, descriptors, destruction, and the sparse/planar/
// deferred-mapping queries (Rocuda has no sparse, planar or deferred-mapping arrays, so those
// answer CUDA's documented error for arrays without them).
#include "core/array.h"

#include <memory>

#include "api/cuda/array_handles.h"
#include "api/cuda/boundary.h"
#include "core/context.h"

namespace rocuda::api {

Result<core::Array*> lookupArray(cuda::CUarray handle) {
  core::Array* array = core::lookupHandle<core::Array>(handle);
  if (array == nullptr) return makeError(ErrorCode::InvalidHandle, "not a live CUDA array");
  return array;
}

Result<core::MipmappedArray*> lookupMipmappedArray(cuda::CUmipmappedArray handle) {
  core::MipmappedArray* mipmap = core::lookupHandle<core::MipmappedArray>(handle);
  if (mipmap == nullptr)
    return makeError(ErrorCode::InvalidHandle, "not a live mipmapped CUDA array");
  return mipmap;
}

namespace {

using namespace cuda;

// Work queued earlier in the array's context may still read or write it; a context destroyed
// since (cudaDeviceReset) has nothing left to wait for.
Status drainContextOf(core::Array& array) {
  core::Context* context = core::lookupHandle<core::Context>(&array.context());
  return context == nullptr ? Status::success() : context->synchronize();
}

core::ArrayDescriptor fromCuda(const CUDA_ARRAY3D_DESCRIPTOR& d) {
  core::ArrayDescriptor out;
  out.width = d.Width;
  out.height = d.Height;
  out.depth = d.Depth;
  out.format = static_cast<uint32_t>(d.Format);
  out.channels = d.NumChannels;
  out.flags = d.Flags;
  return out;
}

CUDA_ARRAY3D_DESCRIPTOR toCuda(const core::ArrayDescriptor& d) {
  CUDA_ARRAY3D_DESCRIPTOR out{};
  out.Width = d.width;
  out.Height = d.height;
  out.Depth = d.depth;
  out.Format = static_cast<CUarray_format>(d.format);
  out.NumChannels = d.channels;
  out.Flags = d.flags;
  return out;
}

Outcome createArray(CUarray* out, const core::ArrayDescriptor& desc) {
  if (out == nullptr) return invalidValue("pHandle is NULL");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  Result<std::unique_ptr<core::Array>> array = core::Array::create(**context, desc);
  if (!array) return array.error();
  *out = reinterpret_cast<CUarray>(array->release());
  return {};
}

Outcome array2DCreate(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* desc) {
  if (desc == nullptr) return invalidValue("pAllocateArray is NULL");
  core::ArrayDescriptor d;
  d.width = desc->Width;
  d.height = desc->Height;
  d.format = static_cast<uint32_t>(desc->Format);
  d.channels = desc->NumChannels;
  return createArray(out, d);
}

Outcome array3DCreate(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  if (desc == nullptr) return invalidValue("pAllocateArray is NULL");
  return createArray(out, fromCuda(*desc));
}

Outcome arrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR* out, CUarray handle) {
  if (out == nullptr) return invalidValue("pArrayDescriptor is NULL");
  Result<core::Array*> array = lookupArray(handle);
  if (!array) return array.error();
  const core::ArrayDescriptor& d = (*array)->descriptor();
  out->Width = d.width;
  out->Height = d.height;
  out->Format = static_cast<CUarray_format>(d.format);
  out->NumChannels = d.channels;
  return {};
}

Outcome array3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray handle) {
  if (out == nullptr) return invalidValue("pArrayDescriptor is NULL");
  Result<core::Array*> array = lookupArray(handle);
  if (!array) return array.error();
  *out = toCuda((*array)->descriptor());
  return {};
}

Outcome arrayDestroy(CUarray handle) {
  Result<core::Array*> array = lookupArray(handle);
  if (!array) return array.error();
  if ((*array)->owner() != nullptr)
    return {CUDA_ERROR_INVALID_HANDLE, "a mipmap level is destroyed with its mipmapped array"};
  if (Status drained = drainContextOf(**array); !drained) return drained;
  delete *array;
  return {};
}

Outcome arrayGetPlane(CUarray* out, CUarray handle, unsigned plane) {
  if (out == nullptr) return invalidValue("pPlaneArray is NULL");
  Result<core::Array*> array = lookupArray(handle);
  if (!array) return array.error();
  (void)plane;
  return invalidValue("the array does not have a planar format");
}

Outcome arraySparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* out, CUarray handle) {
  if (out == nullptr) return invalidValue("sparseProperties is NULL");
  Result<core::Array*> array = lookupArray(handle);
  if (!array) return array.error();
  return invalidValue("the array was not created with CUDA_ARRAY3D_SPARSE");
}

Outcome mipmapSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* out, CUmipmappedArray handle) {
  if (out == nullptr) return invalidValue("sparseProperties is NULL");
  Result<core::MipmappedArray*> mipmap = lookupMipmappedArray(handle);
  if (!mipmap) return mipmap.error();
  return invalidValue("the mipmapped array was not created with CUDA_ARRAY3D_SPARSE");
}

Outcome arrayMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUarray handle,
                                CUdevice device) {
  if (out == nullptr) return invalidValue("memoryRequirements is NULL");
  Result<core::Array*> array = lookupArray(handle);
  if (!array) return array.error();
  if (Result<core::Device*> d = lookupDevice(device); !d) return d.error();
  return invalidValue("the array was not created with CUDA_ARRAY3D_DEFERRED_MAPPING");
}

Outcome mipmapMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* out, CUmipmappedArray handle,
                                 CUdevice device) {
  if (out == nullptr) return invalidValue("memoryRequirements is NULL");
  Result<core::MipmappedArray*> mipmap = lookupMipmappedArray(handle);
  if (!mipmap) return mipmap.error();
  if (Result<core::Device*> d = lookupDevice(device); !d) return d.error();
  return invalidValue("the mipmapped array was not created with CUDA_ARRAY3D_DEFERRED_MAPPING");
}

Outcome mipmapCreate(CUmipmappedArray* out, const CUDA_ARRAY3D_DESCRIPTOR* desc, unsigned levels) {
  if (out == nullptr || desc == nullptr) return invalidValue("pHandle or pMipmappedArrayDesc NULL");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  Result<std::unique_ptr<core::MipmappedArray>> mipmap =
      core::MipmappedArray::create(**context, fromCuda(*desc), levels);
  if (!mipmap) return mipmap.error();
  *out = reinterpret_cast<CUmipmappedArray>(mipmap->release());
  return {};
}

Outcome mipmapGetLevel(CUarray* out, CUmipmappedArray handle, unsigned level) {
  if (out == nullptr) return invalidValue("pLevelArray is NULL");
  Result<core::MipmappedArray*> mipmap = lookupMipmappedArray(handle);
  if (!mipmap) return mipmap.error();
  core::Array* array = (*mipmap)->level(level);
  if (array == nullptr) return invalidValue("level is beyond the mipmapped array's levels");
  *out = reinterpret_cast<CUarray>(array);
  return {};
}

Outcome mipmapDestroy(CUmipmappedArray handle) {
  Result<core::MipmappedArray*> mipmap = lookupMipmappedArray(handle);
  if (!mipmap) return mipmap.error();
  if (Status drained = drainContextOf(*(*mipmap)->level(0)); !drained) return drained;
  delete *mipmap;
  return {};
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pDesc) {
  return ROCUDA_API((pHandle, pDesc), [&] { return api::array2DCreate(pHandle, pDesc); });
}
ROCUDA_EXPORT CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pDesc) {
  return ROCUDA_API((pHandle, pDesc), [&] { return api::array3DCreate(pHandle, pDesc); });
}
ROCUDA_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pDesc, CUarray hArray) {
  return ROCUDA_API((pDesc, hArray), [&] { return api::arrayGetDescriptor(pDesc, hArray); });
}
ROCUDA_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pDesc, CUarray hArray) {
  return ROCUDA_API((pDesc, hArray), [&] { return api::array3DGetDescriptor(pDesc, hArray); });
}
ROCUDA_EXPORT CUresult cuArrayDestroy(CUarray hArray) {
  return ROCUDA_API((hArray), [&] { return api::arrayDestroy(hArray); });
}
ROCUDA_EXPORT CUresult cuArrayGetPlane(CUarray* pPlaneArray, CUarray hArray,
                                       unsigned int planeIdx) {
  return ROCUDA_API((pPlaneArray, hArray, planeIdx),
                    [&] { return api::arrayGetPlane(pPlaneArray, hArray, planeIdx); });
}
ROCUDA_EXPORT CUresult cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* props,
                                                  CUarray array) {
  return ROCUDA_API((props, array), [&] { return api::arraySparseProperties(props, array); });
}
ROCUDA_EXPORT CUresult cuMipmappedArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* props,
                                                           CUmipmappedArray mipmap) {
  return ROCUDA_API((props, mipmap), [&] { return api::mipmapSparseProperties(props, mipmap); });
}
ROCUDA_EXPORT CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req,
                                                    CUarray array, CUdevice device) {
  return ROCUDA_API((req, array, device),
                    [&] { return api::arrayMemoryRequirements(req, array, device); });
}
ROCUDA_EXPORT CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req,
                                                             CUmipmappedArray mipmap,
                                                             CUdevice device) {
  return ROCUDA_API((req, mipmap, device),
                    [&] { return api::mipmapMemoryRequirements(req, mipmap, device); });
}
ROCUDA_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray* pHandle,
                                              const CUDA_ARRAY3D_DESCRIPTOR* pDesc,
                                              unsigned int numMipmapLevels) {
  return ROCUDA_API((pHandle, pDesc, numMipmapLevels),
                    [&] { return api::mipmapCreate(pHandle, pDesc, numMipmapLevels); });
}
ROCUDA_EXPORT CUresult cuMipmappedArrayGetLevel(CUarray* pLevelArray, CUmipmappedArray hMipmap,
                                                unsigned int level) {
  return ROCUDA_API((pLevelArray, hMipmap, level),
                    [&] { return api::mipmapGetLevel(pLevelArray, hMipmap, level); });
}
ROCUDA_EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmap) {
  return ROCUDA_API((hMipmap), [&] { return api::mipmapDestroy(hMipmap); });
}

}  // extern "C"
}  // namespace rocuda::cuda
