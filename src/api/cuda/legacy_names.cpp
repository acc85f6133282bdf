// The CUDA 3.x names of entry points whose signature the _v2 forms kept (context, stream and
// event destruction, the context stack, host registration). cuda.h maps them onto _v2, but
// NVIDIA's driver still exports them and loaders that look a driver function up by its plain
// name (the runtime inside cuDNN) find them there. The 3.x names with 32-bit device pointers
// (cuMemAlloc, cuMemcpyHtoD...) are not exported: no CUDA 4.0 or later binary calls them.
#include "api/cuda/boundary.h"

namespace rocuda::cuda {
extern "C" {
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent_v2(CUcontext* pctx);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuEventDestroy_v2(CUevent hEvent);
CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags);

ROCUDA_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }
ROCUDA_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) { return cuCtxPushCurrent_v2(ctx); }
ROCUDA_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) { return cuCtxPopCurrent_v2(pctx); }
ROCUDA_EXPORT CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }
ROCUDA_EXPORT CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }
ROCUDA_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return cuMemHostRegister_v2(p, bytesize, Flags);
}

}  // extern "C"
}  // namespace rocuda::cuda
