// The CUresult side of errors: the one mapping from Rocuda's ErrorCode, and the name and text of
// every CUresult of CUDA 13 (cuGetErrorName / cuGetErrorString).
#pragma once

#include "rocuda/cuda_abi.h"
#include "support/result.h"

namespace rocuda::api {

// cudaErrorInvalidConfiguration's value, which cuda.h does not define as a CUresult: what a
// launch with a configuration the device cannot run returns when the CUDA runtime made the call
// (callFromRuntime(), boundary.h); a direct driver-API caller gets CUDA_ERROR_INVALID_VALUE.
inline constexpr cuda::CUresult kRuntimeInvalidConfiguration = static_cast<cuda::CUresult>(9);

// InvalidConfiguration depends on the caller (above); every other code maps to one CUresult.
cuda::CUresult toCuResult(ErrorCode code);
const char* resultName(cuda::CUresult code);         // nullptr for an unknown code
const char* resultDescription(cuda::CUresult code);  // nullptr for an unknown code

}  // namespace rocuda::api
