// Entry points of facilities that cannot exist on this platform: EGL and VDPAU interop (OpenGL
// interop is in graphics.cpp), external semaphores and NvSciSync (sharing between
// processes, external memory and shareable memory pools are in ipc.cpp), and hardware features
// no Rocuda device has (multicast, im2col tensor maps, checkpoints). They
// are exported and handed out by cuGetProcAddress, so that applications probing for them get
// NVIDIA's documented error for an unavailable facility (not a missing symbol) and a log line
// naming what is missing.
//
// No argument is read: every row of entry_points.def marked ROCUDA_UNAVAILABLE becomes a function
// that returns a CUresult, which the C calling convention allows whatever the caller passes.
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "api/cuda/boundary.h"

namespace rocuda::api {
namespace {

using namespace cuda;

struct Unavailable {
  CUresult code;
  const char* facility;
};

bool startsWith(std::string_view name, std::string_view prefix) {
  return name.substr(0, prefix.size()) == prefix;
}

// The documented code per call (cuda.h, cudaGL.h, cudaEGL.h, cudaVDPAU.h), chosen among those
// each function lists for the condition "this kind of object cannot exist here".
Unavailable classify(std::string_view api) {
  if (api == "cuImportExternalSemaphore" || api == "cuSignalExternalSemaphoresAsync" ||
      api == "cuWaitExternalSemaphoresAsync")
    return {CUDA_ERROR_NOT_SUPPORTED, "external semaphores (Vulkan, Direct3D, NvSci interop)"};
  if (api == "cuDestroyExternalSemaphore")
    return {CUDA_ERROR_INVALID_HANDLE, "external semaphores (none can be imported)"};
  if (api == "cuDeviceGetNvSciSyncAttributes") return {CUDA_ERROR_NOT_SUPPORTED, "NvSciSync"};
  if (startsWith(api, "cuVDPAU")) return {CUDA_ERROR_INVALID_VALUE, "VDPAU interop"};
  if (startsWith(api, "cuGraphicsVDPAU")) return {CUDA_ERROR_INVALID_HANDLE, "VDPAU interop"};
  if (startsWith(api, "cuEGL") || startsWith(api, "cuGraphicsEGL") ||
      api == "cuGraphicsResourceGetMappedEglFrame")
    return {CUDA_ERROR_INVALID_HANDLE, "EGL interop"};
  // Nodes of kinds no graph can hold: adding one is refused, any other call names another kind.
  if (api == "cuGraphAddExternalSemaphoresSignalNode" ||
      api == "cuGraphAddExternalSemaphoresWaitNode")
    return {CUDA_ERROR_NOT_SUPPORTED, "external-semaphore graph nodes"};
  if (api.find("ExternalSemaphores") != std::string_view::npos)
    return {CUDA_ERROR_INVALID_VALUE, "external-semaphore graph nodes"};
  if (startsWith(api, "cuTensorMap"))
    return {CUDA_ERROR_NOT_SUPPORTED, "im2col tensor maps (tiled ones are implemented)"};
  if (startsWith(api, "cuMulticast"))
    return {CUDA_ERROR_NOT_SUPPORTED,
            "multicast objects (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED is 0)"};
  if (startsWith(api, "cuCheckpoint"))
    return {CUDA_ERROR_NOT_SUPPORTED, "checkpointing a process's device state"};
  if (api == "cuDeviceGetLuid") return {CUDA_ERROR_NOT_SUPPORTED, "LUIDs (Windows only)"};
  if (api == "cuLaunchCooperativeKernelMultiDevice")
    return {CUDA_ERROR_NOT_SUPPORTED,
            "multi-device cooperative launches "
            "(CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH is 0)"};
  if (api == "cuMemGetHandleForAddressRange")
    return {CUDA_ERROR_NOT_SUPPORTED,
            "dma-buf export (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)"};
  if (api == "cuMemMapArrayAsync") return {CUDA_ERROR_NOT_SUPPORTED, "sparse CUDA arrays"};
  if (api == "cuMemBatchDecompressAsync")
    return {CUDA_ERROR_NOT_SUPPORTED, "the hardware decompression engine"};
  // Any other call on a graphics resource of these kinds: none can have been registered.
  return {CUDA_ERROR_INVALID_HANDLE, "graphics interop resources"};
}

// The API name of a versioned symbol: cuIpcOpenMemHandle_v2 -> cuIpcOpenMemHandle.
std::string_view apiName(std::string_view symbol) {
  for (std::string_view suffix : {"_v2_ptsz", "_v2_ptds", "_ptsz", "_ptds", "_v2"})
    if (symbol.size() > suffix.size() && symbol.substr(symbol.size() - suffix.size()) == suffix)
      return symbol.substr(0, symbol.size() - suffix.size());
  return symbol;
}

// One log line per entry point and process: probing code may call them in loops.
void logOnce(std::string_view symbol, const Unavailable& u) {
  static std::mutex mutex;
  static std::set<std::string, std::less<>> logged;
  std::lock_guard lock(mutex);
  if (!logged.emplace(symbol).second) return;
  log::warning(std::string(symbol) + ": no " + u.facility + " on this platform");
}

CUresult unavailable(const char* symbol) {
  return call(
      symbol, Needs::Init,
      [symbol]() -> Outcome {
        Unavailable u = classify(apiName(symbol));
        logOnce(symbol, u);
        return {u.code, std::string("no ") + u.facility + " on this platform"};
      },
      "()");
}

}  // namespace
}  // namespace rocuda::api

namespace rocuda::cuda {
extern "C" {

#define ROCUDA_ENTRY(name, version, symbol, stream)
#define ROCUDA_UNAVAILABLE(name, version, symbol, stream) \
  ROCUDA_EXPORT CUresult symbol() { return ::rocuda::api::unavailable(#symbol); }
#include "api/cuda/entry_points.def"

}  // extern "C"
}  // namespace rocuda::cuda
