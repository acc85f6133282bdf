// The one boundary every exported entry point goes through (ROCUDA_API): the cuInit check,
// catching every exception (nothing crosses extern "C"), conversion of errors to CUresult, and
// ROCUDA_LOG tracing of the call with its arguments and result. Also the handle helpers that
// validate an application's handle through the core registry before anything dereferences it.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#include "api/cuda/proc_table.h"
#include "api/cuda/result_codes.h"
#include "rocuda/cuda_abi.h"
#include "support/log.h"
#include "support/result.h"

#define ROCUDA_EXPORT __attribute__((visibility("default")))

namespace rocuda::backends {
struct DeviceDescription;
}

namespace rocuda::core {
class Context;
struct CurrentContext;
class Device;
class Stream;
class Event;
class Kernel;
class Module;
}  // namespace rocuda::core

namespace rocuda::api {

using cuda::CUresult;

// What an entry point's body returns: CUDA_SUCCESS or a CUresult with the reason.
class Outcome {
 public:
  Outcome() = default;
  Outcome(CUresult code, std::string message = {}) : code_(code), message_(std::move(message)) {}
  Outcome(const Error& error);
  Outcome(const Status& status);

  CUresult code() const { return code_; }
  const std::string& message() const { return message_; }
  bool ok() const { return code_ == cuda::CUDA_SUCCESS; }

 private:
  CUresult code_ = cuda::CUDA_SUCCESS;
  std::string message_;
};

inline Outcome invalidValue(const char* why) { return {cuda::CUDA_ERROR_INVALID_VALUE, why}; }

// CU_DEVICE_ATTRIBUTE_MAX_PITCH: the largest pitch a 2D or 3D copy accepts.
inline constexpr size_t kMaxPitch = 2147483647;

// JIT options (cuModuleLoadDataEx, cuLinkCreate/AddData/AddFile): each must be a CUjit_option.
inline Outcome checkJitOptions(unsigned count, const cuda::CUjit_option* options) {
  for (unsigned i = 0; options != nullptr && i < count; ++i)
    if (options[i] < 0 || options[i] >= cuda::CU_JIT_NUM_OPTIONS)
      return {cuda::CUDA_ERROR_INVALID_VALUE,
              "unknown JIT option " + std::to_string(static_cast<int>(options[i]))};
  return {};
}

// CU_JIT_WALL_TIME (cuModuleLoadDataEx, cuLinkCreate): the option's value slot receives the
// milliseconds spent compiling and linking, as a float.
inline void writeJitWallTime(void** slot, float milliseconds) {
  std::memcpy(slot, &milliseconds, sizeof milliseconds);
}
inline float millisecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// ---- Argument formatting for the trace ----
template <class T>
std::string formatArg(const T& value) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, const char*>) {  // names and paths; output buffers are pointers
    return value == nullptr ? std::string("NULL") : "\"" + std::string(value) + "\"";
  } else if constexpr (std::is_pointer_v<U>) {
    if (value == nullptr) return "NULL";
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "%p", reinterpret_cast<const void*>(value));
    return buffer;
  } else if constexpr (std::is_same_v<U, unsigned long long>) {  // CUdeviceptr
    char buffer[24];
    std::snprintf(buffer, sizeof buffer, "0x%llx", value);
    return buffer;
  } else if constexpr (std::is_enum_v<U>) {
    return std::to_string(static_cast<long long>(value));
  } else if constexpr (std::is_arithmetic_v<U>) {
    return std::to_string(value);
  } else {
    return "?";
  }
}

// "(a, b)" and {1, 2} -> "a=1, b=2".
std::string joinArgs(const char* names, const std::string* values, size_t count);

bool platformInitialized();
// Why a call that needs cuInit cannot run (not called yet, or called before fork()).
std::string notInitializedReason();
void finishCall(const char* function, CUresult result, const std::string& message,
                const std::string& arguments);

enum class Needs : uint8_t { Nothing, Init };

// Whether this entry point was called by the CUDA runtime on an application's behalf. cudart reads
// its per-context state through export table 5 at the start of every runtime call, so a table-5
// slot marks the thread (markNextCallFromRuntime) and the next entry point of that thread takes
// the mark. Only the launch-configuration error differs: NVIDIA's driver reports it to a direct
// caller as CUDA_ERROR_INVALID_VALUE and to cudart as cudaErrorInvalidConfiguration (cudart passes
// the driver's code on unchanged).
extern thread_local bool tNextCallFromRuntime;
extern thread_local bool tCallFromRuntime;
inline void markNextCallFromRuntime() { tNextCallFromRuntime = true; }
inline bool callFromRuntime() { return tCallFromRuntime; }

template <class Body, class... Args>
CUresult call(const char* function, Needs needs, Body&& body, const char* names,
              const Args&... args) {
  CUresult result = cuda::CUDA_ERROR_UNKNOWN;
  std::string message;
  tCallFromRuntime = std::exchange(tNextCallFromRuntime, false);
  try {
    if (needs == Needs::Init && !platformInitialized()) {
      result = cuda::CUDA_ERROR_NOT_INITIALIZED;
      message = notInitializedReason();
    } else {
      Outcome outcome = body();
      result = outcome.code();
      message = outcome.message();
    }
  } catch (const std::bad_alloc&) {
    result = cuda::CUDA_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    result = cuda::CUDA_ERROR_UNKNOWN;
    message = e.what();
  } catch (...) {
    result = cuda::CUDA_ERROR_UNKNOWN;
  }
  try {
    if (result != cuda::CUDA_SUCCESS || log::enabled(log::Level::Trace)) {
      std::string values[sizeof...(Args) + 1];
      size_t i = 0;
      ((values[i++] = formatArg(args)), ...);
      finishCall(function, result, message, joinArgs(names, values, sizeof...(Args)));
    }
  } catch (...) {
    // Logging must never change the result.
  }
  return result;
}

// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: managed memory the host and the device use at
// once, as a device sharing the host's memory does (managed memory pools need it).
bool concurrentManagedAccess(const backends::DeviceDescription& description);

// ---- Handles ----
// The calling thread's current context, validated. InvalidContext when none or destroyed.
Result<core::Context*> currentContext();
// A context handle, or a green context's (cuCtxFromGreenCtx), which names the primary context.
Result<core::Context*> lookupContext(cuda::CUcontext handle);  // InvalidContext
// The same, with the green context a green context's handle names.
Result<core::CurrentContext> lookupContextEntry(cuda::CUcontext handle);
// The handle of a context, or of the green context when the entry holds one.
cuda::CUcontext contextHandle(const core::CurrentContext& entry);
Result<core::Device*> lookupDevice(cuda::CUdevice ordinal);    // InvalidDevice
// cuDeviceGetAttribute's answer (device.cpp): InvalidDevice, or InvalidValue for an unknown
// attribute.
Outcome deviceAttributeOf(int* value, int attribute, int device);
// cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags' answer (launch.cpp).
Outcome maxActiveBlocks(int* numBlocks, cuda::CUfunction func, int blockSize, size_t dynamicShared,
                        unsigned flags);
Result<core::Event*> lookupEvent(cuda::CUevent handle);        // InvalidHandle
Result<core::Module*> lookupModule(cuda::CUmodule handle);     // InvalidHandle
// CUfunction and CUkernel are both core::Kernel (cudart passes a CUkernel as a CUfunction).
Result<core::Kernel*> lookupKernel(const void* handle);  // InvalidHandle
// NULL (legacy, or per-thread in a _ptds/_ptsz variant), CU_STREAM_LEGACY, CU_STREAM_PER_THREAD,
// or a created stream. The special handles need a current context.
Result<core::Stream*> resolveStream(cuda::CUstream handle, StreamVariant variant);
// The same for the batch calls (cuMemcpyBatchAsync, cuMemPrefetchBatchAsync...), which refuse the
// legacy NULL stream (InvalidValue).
Result<core::Stream*> resolveBatchStream(cuda::CUstream handle, StreamVariant variant);

// "System-allocated pageable memory" the current context's device reads
// (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS): [pointer, pointer + bytes) mapped in the process
// and held by no allocation of Rocuda's (managed.cpp).
bool isPageableMemoryTheDeviceReads(const void* pointer, size_t bytes);

}  // namespace rocuda::api

// The body of every exported function: ROCUDA_API((arg1, arg2), [&]() -> Outcome { ... }).
// The arguments come first, parenthesised, so that the body may contain any commas.
#define ROCUDA_API(args, ...)                                            \
  ::rocuda::api::call(__func__, ::rocuda::api::Needs::Init, __VA_ARGS__, \
                      #args ROCUDA_COMMA_ARGS args)
// The same for the few entry points that work before cuInit.
#define ROCUDA_API_NOINIT(args, ...)                                        \
  ::rocuda::api::call(__func__, ::rocuda::api::Needs::Nothing, __VA_ARGS__, \
                      #args ROCUDA_COMMA_ARGS args)
#define ROCUDA_COMMA_ARGS(...) __VA_OPT__(, ) __VA_ARGS__
#define ROCUDA_UNPARENS(...) __VA_ARGS__

// An entry point and its per-thread-default-stream twin (_ptds/_ptsz), both calling
// impl(args..., StreamVariant): the variant only changes what the NULL stream means.
#define ROCUDA_STREAM_PAIR(legacyName, perThreadName, params, args, impl)                        \
  ROCUDA_EXPORT CUresult legacyName params {                                                     \
    return ROCUDA_API(                                                                           \
        args, [&] { return impl(ROCUDA_UNPARENS args, ::rocuda::api::StreamVariant::Legacy); }); \
  }                                                                                              \
  ROCUDA_EXPORT CUresult perThreadName params {                                                  \
    return ROCUDA_API(args, [&] {                                                                \
      return impl(ROCUDA_UNPARENS args, ::rocuda::api::StreamVariant::PerThread);                \
    });                                                                                          \
  }
