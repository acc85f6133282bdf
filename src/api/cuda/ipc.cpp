// Sharing between processes: CUDA IPC of device memory and events (cuIpc*), and external memory
// imported from a file descriptor (cuImportExternalMemory and its buffers). The work is in
// core/ipc.cpp; this file checks arguments and converts handles.
#include "core/ipc.h"

#include <cstring>

#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/memory.h"
#include "core/memory_pool.h"
#include "core/platform.h"
#include "core/stream.h"
#include "support/log.h"

namespace rocuda::api {
namespace {

using namespace cuda;

template <class CudaHandle>
core::IpcHandle fromCuda(const CudaHandle& handle) {
  core::IpcHandle out;
  std::memcpy(out.data(), handle.reserved, out.size());
  return out;
}

template <class CudaHandle>
void toCuda(const core::IpcHandle& handle, CudaHandle* out) {
  std::memcpy(out->reserved, handle.data(), handle.size());
}

Outcome openMemHandle(CUdeviceptr* pdptr, const CUipcMemHandle& handle, unsigned flags) {
  if (pdptr == nullptr) return invalidValue("pdptr is NULL");
  if ((flags & ~unsigned{CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}) != 0)
    return invalidValue("unknown flags");
  Result<core::Context*> context = currentContext();
  if (!context) return context.error();
  Result<void*> pointer = core::openMemory(**context, fromCuda(handle), flags);
  if (!pointer) return pointer.error();
  *pdptr = reinterpret_cast<uintptr_t>(*pointer);
  return {};
}

core::ExternalMemory* lookupExternalMemory(CUexternalMemory handle) {
  return core::lookupHandle<core::ExternalMemory>(handle);
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

ROCUDA_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr) {
  return ROCUDA_API((pHandle, dptr), [&]() -> api::Outcome {
    if (pHandle == nullptr) return api::invalidValue("pHandle is NULL");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    Result<core::IpcHandle> handle = core::exportMemory(reinterpret_cast<void*>(dptr));
    if (!handle) return handle.error();
    api::toCuda(*handle, pHandle);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle,
                                          unsigned int Flags) {
  return ROCUDA_API((pdptr, Flags), [&]() { return api::openMemHandle(pdptr, handle, Flags); });
}

ROCUDA_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle,
                                             unsigned int Flags) {
  return ROCUDA_API((pdptr, Flags), [&]() { return api::openMemHandle(pdptr, handle, Flags); });
}

ROCUDA_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  return ROCUDA_API((dptr), [&]() -> api::Outcome {
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    // Work queued on the mapping must finish before it goes away (as cuMemFree waits).
    if (auto allocation = core::findAllocation(reinterpret_cast<void*>(dptr));
        allocation && allocation->mappedFrom == core::MappedFrom::Ipc &&
        core::lookupHandle<core::Context>(allocation->context) != nullptr)
      (void)allocation->context->synchronize();
    return core::closeMemory(reinterpret_cast<void*>(dptr));
  });
}

ROCUDA_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event) {
  return ROCUDA_API((pHandle, event), [&]() -> api::Outcome {
    if (pHandle == nullptr) return api::invalidValue("pHandle is NULL");
    Result<core::Event*> found = api::lookupEvent(event);
    if (!found) return found.error();
    Result<core::IpcHandle> handle = core::exportEvent(**found);
    if (!handle) return handle.error();
    api::toCuda(*handle, pHandle);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle) {
  return ROCUDA_API((phEvent), [&]() -> api::Outcome {
    if (phEvent == nullptr) return api::invalidValue("phEvent is NULL");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    Result<core::Event*> event = core::openEvent(**context, api::fromCuda(handle));
    if (!event) return event.error();
    *phEvent = reinterpret_cast<CUevent>(*event);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuImportExternalMemory(CUexternalMemory* extMem_out,
                                              const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc) {
  return ROCUDA_API((extMem_out, desc), [&]() -> api::Outcome {
    if (extMem_out == nullptr || desc == nullptr) return api::invalidValue("NULL argument");
    if (desc->type != CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD) {
      // Windows, Direct3D and NvSciBuf handles cannot exist here.
      log::warning("cuImportExternalMemory: handle type " + std::to_string(desc->type) +
                   " is not available on this platform (only CU_EXTERNAL_MEMORY_HANDLE_TYPE_"
                   "OPAQUE_FD)");
      return {CUDA_ERROR_OPERATING_SYSTEM, "handle type not available on this platform"};
    }
    if ((desc->flags & ~CUDA_EXTERNAL_MEMORY_DEDICATED) != 0) return api::invalidValue("flags");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    Result<core::ExternalMemory*> memory =
        core::ExternalMemory::importFd(**context, desc->handle.fd, desc->size);
    if (!memory) return memory.error();
    *extMem_out = reinterpret_cast<CUexternalMemory>(*memory);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuExternalMemoryGetMappedBuffer(
    CUdeviceptr* devPtr, CUexternalMemory extMem, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* desc) {
  return ROCUDA_API((devPtr, extMem, desc), [&]() -> api::Outcome {
    if (devPtr == nullptr || desc == nullptr) return api::invalidValue("NULL argument");
    core::ExternalMemory* memory = api::lookupExternalMemory(extMem);
    if (memory == nullptr) return {CUDA_ERROR_INVALID_HANDLE, "not an external memory object"};
    if (desc->flags != 0) return api::invalidValue("flags must be 0");
    Result<void*> buffer = memory->mapBuffer(desc->offset, desc->size);
    if (!buffer) return buffer.error();
    *devPtr = reinterpret_cast<uintptr_t>(*buffer);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuExternalMemoryGetMappedMipmappedArray(CUmipmappedArray* mipmap,
                                                               CUexternalMemory extMem,
                                                               const void* mipmapDesc) {
  return ROCUDA_API((mipmap, extMem, mipmapDesc), [&]() -> api::Outcome {
    if (mipmap == nullptr || mipmapDesc == nullptr) return api::invalidValue("NULL argument");
    if (api::lookupExternalMemory(extMem) == nullptr)
      return {CUDA_ERROR_INVALID_HANDLE, "not an external memory object"};
    // The CPU device's arrays own their texel storage (core/array.cpp) and cannot alias an
    // external buffer yet.
    log::warning("cuExternalMemoryGetMappedMipmappedArray: CUDA arrays cannot be backed by "
                 "external memory yet (map a buffer with cuExternalMemoryGetMappedBuffer)");
    return {CUDA_ERROR_NOT_SUPPORTED, "arrays on external memory are not supported"};
  });
}

ROCUDA_EXPORT CUresult cuDestroyExternalMemory(CUexternalMemory extMem) {
  return ROCUDA_API((extMem), [&]() -> api::Outcome {
    core::ExternalMemory* memory = api::lookupExternalMemory(extMem);
    if (memory == nullptr) return {CUDA_ERROR_INVALID_HANDLE, "not an external memory object"};
    return core::ExternalMemory::destroy(memory);
  });
}

// ---- Memory pools shared between processes ----

ROCUDA_EXPORT CUresult cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool,
                                                        CUmemAllocationHandleType handleType,
                                                        unsigned long long flags) {
  return ROCUDA_API((handle_out, pool, handleType, flags), [&]() -> api::Outcome {
    if (handle_out == nullptr || flags != 0) return api::invalidValue("handle_out NULL or flags");
    core::MemoryPool* found = core::lookupHandle<core::MemoryPool>(pool);
    if (found == nullptr) return api::invalidValue("not a live memory pool");
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
      return api::invalidValue("only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR handles exist here");
    Result<int> fd = core::exportPool(*found);
    if (!fd) return fd.error();
    *static_cast<int*>(handle_out) = *fd;
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                                          CUmemAllocationHandleType handleType,
                                                          unsigned long long flags) {
  return ROCUDA_API((pool_out, handle, handleType, flags), [&]() -> api::Outcome {
    if (pool_out == nullptr || flags != 0) return api::invalidValue("pool_out NULL or flags");
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
      return api::invalidValue("only CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR handles exist here");
    // A POSIX handle is the descriptor itself, passed as (void*)(uintptr_t)fd. The pool's
    // device comes with it: no current context is needed (NVIDIA documents none).
    int fd = static_cast<int>(reinterpret_cast<uintptr_t>(handle));
    Result<core::MemoryPool*> imported = core::importPool(fd);
    if (!imported) return imported.error();
    *pool_out = reinterpret_cast<CUmemoryPool>(*imported);
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out,
                                              CUdeviceptr ptr) {
  return ROCUDA_API((shareData_out, ptr), [&]() -> api::Outcome {
    if (shareData_out == nullptr) return api::invalidValue("shareData_out is NULL");
    Result<core::IpcHandle> data = core::exportPoolPointer(reinterpret_cast<void*>(ptr));
    if (!data) return data.error();
    std::memcpy(shareData_out->reserved, data->data(), data->size());
    return {};
  });
}

ROCUDA_EXPORT CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool,
                                              CUmemPoolPtrExportData* shareData) {
  return ROCUDA_API((ptr_out, pool, shareData), [&]() -> api::Outcome {
    if (ptr_out == nullptr || shareData == nullptr) return api::invalidValue("NULL argument");
    core::MemoryPool* found = core::lookupHandle<core::MemoryPool>(pool);
    if (found == nullptr) return api::invalidValue("not a live memory pool");
    Result<core::Context*> context = api::currentContext();
    if (!context) return context.error();
    core::IpcHandle data;
    std::memcpy(data.data(), shareData->reserved, data.size());
    Result<void*> pointer = core::importPoolPointer(**context, *found, data);
    if (!pointer) return pointer.error();
    *ptr_out = reinterpret_cast<uintptr_t>(*pointer);
    return {};
  });
}

}  // extern "C"
}  // namespace rocuda::cuda
