// OpenGL interop: cuGraphicsGLRegisterBuffer and the graphics-resource calls (cuGraphics*), the
// legacy buffer-object calls (cuGLRegisterBufferObject...) on top of them, and cuGLGetDevices.
// The work is in core/graphics.cpp; this file checks arguments and converts handles. Images
// (cuGraphicsGLRegisterImage) are GL_TEXTURE_2D textures copied into CUDA arrays while mapped.
#include "core/graphics.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "api/cuda/boundary.h"
#include "core/array.h"
#include "core/context.h"
#include "core/platform.h"
#include "core/stream.h"

namespace rocuda::api {
namespace {

using namespace cuda;

Result<core::GraphicsResource*> lookupResource(CUgraphicsResource handle) {
  if (auto* resource = core::lookupHandle<core::GraphicsResource>(handle)) return resource;
  return makeError(ErrorCode::InvalidHandle, "not a registered graphics resource");
}

Outcome registerBuffer(CUgraphicsResource* out, unsigned buffer, unsigned flags) {
  if (out == nullptr) return invalidValue("pCudaResource is NULL");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  Result<core::GraphicsResource*> resource =
      core::GraphicsResource::registerGlBuffer(**context, buffer, flags);
  if (!resource) return resource.error();
  *out = reinterpret_cast<CUgraphicsResource>(*resource);
  return {};
}

// The resources of a map/unmap call, each registered, none twice.
Result<std::vector<core::GraphicsResource*>> lookupResources(unsigned count,
                                                             CUgraphicsResource* handles) {
  if (count == 0 || handles == nullptr)
    return makeError(ErrorCode::InvalidValue, "no resources given");
  std::vector<core::GraphicsResource*> resources;
  for (unsigned i = 0; i < count; ++i) {
    Result<core::GraphicsResource*> resource = lookupResource(handles[i]);
    if (!resource) return resource.takeError();
    for (core::GraphicsResource* seen : resources)
      if (seen == *resource)
        return makeError(ErrorCode::InvalidValue, "a resource is listed twice");
    resources.push_back(*resource);
  }
  return resources;
}

Outcome mapResources(unsigned count, CUgraphicsResource* handles, CUstream hStream,
                     StreamVariant variant, bool map) {
  Result<std::vector<core::GraphicsResource*>> resources = lookupResources(count, handles);
  if (!resources) return resources.error();
  Result<core::Stream*> stream = resolveStream(hStream, variant);
  if (!stream) return stream.error();
  for (core::GraphicsResource* resource : *resources)
    if (&resource->context() != &(*stream)->context())
      return {CUDA_ERROR_INVALID_CONTEXT, "a resource was registered in another context"};
  if ((*stream)->capture() != nullptr)
    return {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            "graphics resources cannot be mapped or unmapped in a capturing stream"};
  return map ? core::GraphicsResource::map(*resources, **stream)
             : core::GraphicsResource::unmap(*resources, **stream);
}

Outcome registerImage(CUgraphicsResource* out, unsigned image, unsigned target, unsigned flags) {
  if (out == nullptr) return invalidValue("pCudaResource is NULL");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  Result<core::GraphicsResource*> resource =
      core::GraphicsResource::registerGlImage(**context, image, target, flags);
  if (!resource) return resource.error();
  *out = reinterpret_cast<CUgraphicsResource>(*resource);
  return {};
}

Outcome mappedPointer(CUdeviceptr* pointer, size_t* bytes, CUgraphicsResource handle) {
  Result<core::GraphicsResource*> resource = lookupResource(handle);
  if (!resource) return resource.error();
  if ((*resource)->isImage())
    return (*resource)->mapped()
               ? Outcome{CUDA_ERROR_NOT_MAPPED_AS_POINTER, "an image is mapped as arrays"}
               : Outcome{CUDA_ERROR_NOT_MAPPED, "the resource is not mapped"};
  size_t size = 0;
  Result<void*> mapped = (*resource)->mappedPointer(&size);
  if (!mapped) return mapped.error();
  if (pointer != nullptr) *pointer = reinterpret_cast<uintptr_t>(*mapped);
  if (bytes != nullptr) *bytes = size;
  return {};
}

// The 32-bit forms of CUDA 2.x/3.0 can only answer for mappings below 4 GiB.
template <class Narrow>
Outcome narrowPointer(Narrow* out32, unsigned* size32, CUdeviceptr pointer, size_t bytes) {
  if (pointer > 0xffffffffu || bytes > 0xffffffffu)
    return invalidValue("the mapping does not fit the 32-bit form of this call (use the _v2 one)");
  if (out32 != nullptr) *out32 = static_cast<Narrow>(pointer);
  if (size32 != nullptr) *size32 = static_cast<unsigned>(bytes);
  return {};
}

// The mapped levels of an image resource.
Outcome mappedArrays(CUgraphicsResource handle, core::MipmappedArray** out) {
  Result<core::GraphicsResource*> resource = lookupResource(handle);
  if (!resource) return resource.error();
  if (!(*resource)->mapped()) return {CUDA_ERROR_NOT_MAPPED, "the resource is not mapped"};
  if (!(*resource)->isImage())
    return {CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "a buffer object is mapped as a pointer, not an array"};
  Result<core::MipmappedArray*> arrays = (*resource)->mappedArrays();
  if (!arrays) return arrays.error();
  *out = *arrays;
  return {};
}

Outcome mappedArray(CUarray* out, CUgraphicsResource handle, unsigned index, unsigned level) {
  core::MipmappedArray* arrays = nullptr;
  if (Outcome found = mappedArrays(handle, &arrays); !found.ok()) return found;
  if (index != 0) return invalidValue("a GL_TEXTURE_2D image has only array index 0");
  core::Array* array = arrays->level(level);
  if (array == nullptr) return invalidValue("mipLevel is beyond the texture's levels");
  *out = reinterpret_cast<CUarray>(array);
  return {};
}

Outcome mappedMipmappedArray(CUmipmappedArray* out, CUgraphicsResource handle) {
  core::MipmappedArray* arrays = nullptr;
  if (Outcome found = mappedArrays(handle, &arrays); !found.ok()) return found;
  *out = reinterpret_cast<CUmipmappedArray>(arrays);
  return {};
}

Outcome glDevices(unsigned* count, CUdevice* devices, unsigned capacity, unsigned list) {
  if (count == nullptr) return invalidValue("pCudaDeviceCount is NULL");
  if (list < CU_GL_DEVICE_LIST_ALL || list > CU_GL_DEVICE_LIST_NEXT_FRAME)
    return invalidValue("unknown CUGLDeviceList value");
  if (capacity > 0 && devices == nullptr) return invalidValue("pCudaDevices is NULL");
  Result<std::vector<core::Device*>> found = core::glDevices();
  if (!found) return found.error();
  if (found->empty())
    return {CUDA_ERROR_NO_DEVICE, "no device can map the current OpenGL context's buffers"};
  *count = static_cast<unsigned>(found->size());
  for (unsigned i = 0; i < capacity && i < found->size(); ++i) devices[i] = (*found)[i]->ordinal();
  return {};
}

// ---- Legacy buffer objects (cuGLRegisterBufferObject...): one resource per context and name ----

struct LegacyBuffers {
  std::mutex mutex;
  std::map<std::pair<core::Context*, unsigned>, core::GraphicsResource*> byName;
};

LegacyBuffers& legacyBuffers() {
  static LegacyBuffers* buffers = new LegacyBuffers;  // outlives static destruction
  return *buffers;
}

// The resource cuGLRegisterBufferObject made for `buffer` in the current context.
Result<core::GraphicsResource*> legacyResource(unsigned buffer) {
  Result<core::Context*> context = currentContext();
  if (!context) return context.takeError();
  LegacyBuffers& table = legacyBuffers();
  std::lock_guard lock(table.mutex);
  auto it = table.byName.find({*context, buffer});
  if (it == table.byName.end() || core::lookupHandle<core::GraphicsResource>(it->second) == nullptr)
    return makeError(ErrorCode::InvalidValue, "the buffer object is not registered");
  return it->second;
}

Outcome legacyRegister(unsigned buffer) {
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  LegacyBuffers& table = legacyBuffers();
  std::lock_guard lock(table.mutex);
  if (table.byName.contains({*context, buffer}))
    return {CUDA_ERROR_ALREADY_MAPPED, "the buffer object is already registered"};
  Result<core::GraphicsResource*> resource =
      core::GraphicsResource::registerGlBuffer(**context, buffer, 0);
  if (!resource) return resource.error();
  table.byName[{*context, buffer}] = *resource;
  return {};
}

Outcome legacyUnregister(unsigned buffer) {
  Result<core::GraphicsResource*> resource = legacyResource(buffer);
  if (!resource) return resource.error();
  {
    LegacyBuffers& table = legacyBuffers();
    std::lock_guard lock(table.mutex);
    table.byName.erase({&(*resource)->context(), buffer});
  }
  return core::GraphicsResource::unregister(*resource);
}

Outcome legacyMap(CUdeviceptr* pointer, size_t* bytes, unsigned buffer, CUstream hStream,
                  StreamVariant variant) {
  Result<core::GraphicsResource*> resource = legacyResource(buffer);
  if (!resource) return resource.error();
  auto handle = reinterpret_cast<CUgraphicsResource>(*resource);
  if (Outcome mapped = mapResources(1, &handle, hStream, variant, true); !mapped.ok())
    return mapped;
  return mappedPointer(pointer, bytes, handle);
}

Outcome legacyMap32(CUdeviceptr_v1* pointer, unsigned* bytes, unsigned buffer, CUstream hStream) {
  CUdeviceptr wide = 0;
  size_t size = 0;
  if (Outcome mapped = legacyMap(&wide, &size, buffer, hStream, StreamVariant::Legacy);
      !mapped.ok())
    return mapped;
  return narrowPointer(pointer, bytes, wide, size);
}

Outcome legacyUnmap(unsigned buffer, CUstream hStream) {
  Result<core::GraphicsResource*> resource = legacyResource(buffer);
  if (!resource) return resource.error();
  auto handle = reinterpret_cast<CUgraphicsResource>(*resource);
  return mapResources(1, &handle, hStream, StreamVariant::Legacy, false);
}

Outcome legacySetMapFlags(unsigned buffer, unsigned flags) {
  Result<core::GraphicsResource*> resource = legacyResource(buffer);
  if (!resource) return resource.error();
  return (*resource)->setMapFlags(flags);
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);

ROCUDA_EXPORT CUresult cuGraphicsGLRegisterBuffer(CUgraphicsResource* pCudaResource,
                                                  unsigned int buffer, unsigned int Flags) {
  return ROCUDA_API((pCudaResource, buffer, Flags),
                    [&] { return api::registerBuffer(pCudaResource, buffer, Flags); });
}

ROCUDA_EXPORT CUresult cuGraphicsGLRegisterImage(CUgraphicsResource* pCudaResource,
                                                 unsigned int image, unsigned int target,
                                                 unsigned int Flags) {
  return ROCUDA_API((pCudaResource, image, target, Flags),
                    [&] { return api::registerImage(pCudaResource, image, target, Flags); });
}

ROCUDA_EXPORT CUresult cuGraphicsUnregisterResource(CUgraphicsResource resource) {
  return ROCUDA_API((resource), [&]() -> api::Outcome {
    Result<core::GraphicsResource*> found = api::lookupResource(resource);
    if (!found) return found.error();
    return core::GraphicsResource::unregister(*found);
  });
}

ROCUDA_EXPORT CUresult cuGraphicsResourceSetMapFlags(CUgraphicsResource resource,
                                                     unsigned int flags) {
  return ROCUDA_API((resource, flags), [&]() -> api::Outcome {
    Result<core::GraphicsResource*> found = api::lookupResource(resource);
    if (!found) return found.error();
    return (*found)->setMapFlags(flags);
  });
}

ROCUDA_EXPORT CUresult cuGraphicsResourceSetMapFlags_v2(CUgraphicsResource resource,
                                                        unsigned int flags) {
  return cuGraphicsResourceSetMapFlags(resource, flags);
}

static api::Outcome mapImpl(unsigned count, CUgraphicsResource* resources, CUstream hStream,
                            api::StreamVariant variant) {
  return api::mapResources(count, resources, hStream, variant, true);
}
static api::Outcome unmapImpl(unsigned count, CUgraphicsResource* resources, CUstream hStream,
                              api::StreamVariant variant) {
  return api::mapResources(count, resources, hStream, variant, false);
}

ROCUDA_STREAM_PAIR(cuGraphicsMapResources, cuGraphicsMapResources_ptsz,
                   (unsigned int count, CUgraphicsResource* resources, CUstream hStream),
                   (count, resources, hStream), mapImpl)
ROCUDA_STREAM_PAIR(cuGraphicsUnmapResources, cuGraphicsUnmapResources_ptsz,
                   (unsigned int count, CUgraphicsResource* resources, CUstream hStream),
                   (count, resources, hStream), unmapImpl)

ROCUDA_EXPORT CUresult cuGraphicsResourceGetMappedPointer_v2(CUdeviceptr* pDevPtr, size_t* pSize,
                                                             CUgraphicsResource resource) {
  return ROCUDA_API((pDevPtr, pSize, resource),
                    [&] { return api::mappedPointer(pDevPtr, pSize, resource); });
}

ROCUDA_EXPORT CUresult cuGraphicsResourceGetMappedPointer(CUdeviceptr_v1* pDevPtr,
                                                          unsigned int* pSize,
                                                          CUgraphicsResource resource) {
  return ROCUDA_API((pDevPtr, pSize, resource), [&]() -> api::Outcome {
    CUdeviceptr pointer = 0;
    size_t bytes = 0;
    if (api::Outcome found = api::mappedPointer(&pointer, &bytes, resource); !found.ok())
      return found;
    return api::narrowPointer(pDevPtr, pSize, pointer, bytes);
  });
}

ROCUDA_EXPORT CUresult cuGraphicsSubResourceGetMappedArray(CUarray* pArray,
                                                           CUgraphicsResource resource,
                                                           unsigned int arrayIndex,
                                                           unsigned int mipLevel) {
  return ROCUDA_API((pArray, resource, arrayIndex, mipLevel), [&]() -> api::Outcome {
    if (pArray == nullptr) return api::invalidValue("pArray is NULL");
    return api::mappedArray(pArray, resource, arrayIndex, mipLevel);
  });
}

ROCUDA_EXPORT CUresult cuGraphicsResourceGetMappedMipmappedArray(CUmipmappedArray* pMipmappedArray,
                                                                 CUgraphicsResource resource) {
  return ROCUDA_API((pMipmappedArray, resource), [&]() -> api::Outcome {
    if (pMipmappedArray == nullptr) return api::invalidValue("pMipmappedArray is NULL");
    return api::mappedMipmappedArray(pMipmappedArray, resource);
  });
}

ROCUDA_EXPORT CUresult cuGLGetDevices(unsigned int* pCudaDeviceCount, CUdevice* pCudaDevices,
                                      unsigned int cudaDeviceCount, unsigned int deviceList) {
  return ROCUDA_API((pCudaDeviceCount, pCudaDevices, cudaDeviceCount, deviceList), [&] {
    return api::glDevices(pCudaDeviceCount, pCudaDevices, cudaDeviceCount, deviceList);
  });
}

ROCUDA_EXPORT CUresult cuGLGetDevices_v2(unsigned int* pCudaDeviceCount, CUdevice* pCudaDevices,
                                         unsigned int cudaDeviceCount, unsigned int deviceList) {
  return cuGLGetDevices(pCudaDeviceCount, pCudaDevices, cudaDeviceCount, deviceList);
}

// ---- Legacy (deprecated since CUDA 3.0) ----

ROCUDA_EXPORT CUresult cuGLInit() {
  return ROCUDA_API((), []() -> api::Outcome { return {}; });  // nothing to set up
}

// A context for use with OpenGL is an ordinary context here.
ROCUDA_EXPORT CUresult cuGLCtxCreate_v2(CUcontext* pCtx, unsigned int Flags, CUdevice device) {
  return cuCtxCreate_v2(pCtx, Flags, device);
}

ROCUDA_EXPORT CUresult cuGLCtxCreate(CUcontext* pCtx, unsigned int Flags, CUdevice device) {
  return cuCtxCreate_v2(pCtx, Flags, device);
}

ROCUDA_EXPORT CUresult cuGLRegisterBufferObject(unsigned int buffer) {
  return ROCUDA_API((buffer), [&] { return api::legacyRegister(buffer); });
}

ROCUDA_EXPORT CUresult cuGLUnregisterBufferObject(unsigned int buffer) {
  return ROCUDA_API((buffer), [&] { return api::legacyUnregister(buffer); });
}

ROCUDA_EXPORT CUresult cuGLSetBufferObjectMapFlags(unsigned int buffer, unsigned int Flags) {
  return ROCUDA_API((buffer, Flags), [&] { return api::legacySetMapFlags(buffer, Flags); });
}

static api::Outcome legacyMapImpl(CUdeviceptr* dptr, size_t* size, unsigned buffer,
                                  api::StreamVariant variant) {
  return api::legacyMap(dptr, size, buffer, nullptr, variant);
}
static api::Outcome legacyMapAsyncImpl(CUdeviceptr* dptr, size_t* size, unsigned buffer,
                                       CUstream hStream, api::StreamVariant variant) {
  return api::legacyMap(dptr, size, buffer, hStream, variant);
}

ROCUDA_STREAM_PAIR(cuGLMapBufferObject_v2, cuGLMapBufferObject_v2_ptds,
                   (CUdeviceptr * dptr, size_t* size, unsigned int buffer), (dptr, size, buffer),
                   legacyMapImpl)
ROCUDA_STREAM_PAIR(cuGLMapBufferObjectAsync_v2, cuGLMapBufferObjectAsync_v2_ptsz,
                   (CUdeviceptr * dptr, size_t* size, unsigned int buffer, CUstream hStream),
                   (dptr, size, buffer, hStream), legacyMapAsyncImpl)

ROCUDA_EXPORT CUresult cuGLMapBufferObject(CUdeviceptr_v1* dptr, unsigned int* size,
                                           unsigned int buffer) {
  return ROCUDA_API((dptr, size, buffer),
                    [&] { return api::legacyMap32(dptr, size, buffer, nullptr); });
}

ROCUDA_EXPORT CUresult cuGLMapBufferObjectAsync(CUdeviceptr_v1* dptr, unsigned int* size,
                                                unsigned int buffer, CUstream hStream) {
  return ROCUDA_API((dptr, size, buffer, hStream),
                    [&] { return api::legacyMap32(dptr, size, buffer, hStream); });
}

ROCUDA_EXPORT CUresult cuGLUnmapBufferObject(unsigned int buffer) {
  return ROCUDA_API((buffer), [&] { return api::legacyUnmap(buffer, nullptr); });
}

ROCUDA_EXPORT CUresult cuGLUnmapBufferObjectAsync(unsigned int buffer, CUstream hStream) {
  return ROCUDA_API((buffer, hStream), [&] { return api::legacyUnmap(buffer, hStream); });
}

}  // extern "C"
}  // namespace rocuda::cuda
