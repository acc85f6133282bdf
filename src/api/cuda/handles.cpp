// Validation of application handles through the core's object registry.
#include "api/cuda/boundary.h"
#include "core/context.h"
#include "core/green_context.h"
#include "core/module.h"
#include "core/platform.h"
#include "core/stream.h"

namespace rocuda::api {

Result<core::Context*> currentContext() {
  core::Context* context = core::currentContext();
  if (context == nullptr) return makeError(ErrorCode::InvalidContext, "no current context");
  // The thread's stack may still name a context another thread destroyed: "attempting to access
  // ctx from those threads will result in the error CUDA_ERROR_CONTEXT_IS_DESTROYED".
  if (core::lookupHandle<core::Context>(context) == nullptr)
    return makeError(ErrorCode::ContextIsDestroyed, "the current context was destroyed");
  if (core::GreenContext* green = core::currentGreenContext(); green && green->destroyed())
    return makeError(ErrorCode::ContextIsDestroyed, "the current green context was destroyed");
  return context;
}

Result<core::CurrentContext> lookupContextEntry(cuda::CUcontext handle) {
  if (core::Context* context = core::lookupHandle<core::Context>(handle))
    return core::CurrentContext{context, nullptr};
  if (core::GreenContext* green = core::GreenContext::fromContextHandle(handle))
    return core::CurrentContext{&green->primary(), green};
  return makeError(ErrorCode::InvalidContext, "not a live context");
}

Result<core::Context*> lookupContext(cuda::CUcontext handle) {
  Result<core::CurrentContext> entry = lookupContextEntry(handle);
  if (!entry) return entry.error();
  return entry->context;
}

cuda::CUcontext contextHandle(const core::CurrentContext& entry) {
  if (entry.green != nullptr)
    return reinterpret_cast<cuda::CUcontext>(const_cast<void*>(entry.green->contextHandle()));
  return reinterpret_cast<cuda::CUcontext>(entry.context);
}

Result<core::Device*> lookupDevice(cuda::CUdevice ordinal) {
  core::Device* device = core::Platform::instance().device(ordinal);
  if (device == nullptr)
    return makeError(ErrorCode::InvalidDevice, "no device " + std::to_string(ordinal));
  return device;
}

Result<core::Event*> lookupEvent(cuda::CUevent handle) {
  core::Event* event = core::lookupHandle<core::Event>(handle);
  if (event == nullptr) return makeError(ErrorCode::InvalidHandle, "not a live event");
  return event;
}

Result<core::Module*> lookupModule(cuda::CUmodule handle) {
  core::Module* module = core::lookupHandle<core::Module>(handle);
  if (module == nullptr) return makeError(ErrorCode::InvalidHandle, "not a loaded module");
  return module;
}

Result<core::Kernel*> lookupKernel(const void* handle) {
  core::Kernel* kernel = core::lookupHandle<core::Kernel>(handle);
  if (kernel == nullptr) return makeError(ErrorCode::InvalidHandle, "not a live function/kernel");
  // Modules outlive a destroyed context (the core keeps them for cudart's exit path); their
  // kernels must not reach the dead context.
  if (core::lookupHandle<core::Context>(&kernel->module().context()) == nullptr)
    return makeError(ErrorCode::InvalidContext, "the function's context was destroyed");
  return kernel;
}

Result<core::Stream*> resolveStream(cuda::CUstream handle, StreamVariant variant) {
  bool perThread = handle == cuda::CU_STREAM_PER_THREAD ||
                   (handle == nullptr && variant == StreamVariant::PerThread);
  if (handle == nullptr || handle == cuda::CU_STREAM_LEGACY || perThread) {
    Result<core::Context*> context = currentContext();
    if (!context) return context.takeError();
    // A green context has a default stream of its own, and no per-thread ones.
    if (core::GreenContext* green = core::currentGreenContext()) {
      if (handle == cuda::CU_STREAM_PER_THREAD)
        return makeError(ErrorCode::InvalidHandle,
                         "CU_STREAM_PER_THREAD while a green context is current");
      return green->defaultStream();
    }
    return perThread ? &(*context)->perThreadStream() : &(*context)->legacyStream();
  }
  core::Stream* stream = core::lookupHandle<core::Stream>(handle);
  if (stream == nullptr) return makeError(ErrorCode::InvalidHandle, "not a live stream");
  if (core::GreenContext* green = stream->greenContext(); green && green->destroyed())
    return makeError(ErrorCode::ContextIsDestroyed, "the stream's green context was destroyed");
  return stream;
}

Result<core::Stream*> resolveBatchStream(cuda::CUstream handle, StreamVariant variant) {
  Result<core::Stream*> stream = resolveStream(handle, variant);
  if (stream && (*stream)->streamKind() == core::StreamKind::Legacy)
    return makeError(ErrorCode::InvalidValue, "the batch forms refuse the legacy NULL stream");
  return stream;
}

}  // namespace rocuda::api
