// The CUresult side of errors: the one mapping from Rocuda's ErrorCode, and the name and text of
// every CUresult of CUDA 13 (cuGetErrorName / cuGetErrorString).
#pragma once

#include "rocuda/cuda_abi.h"
#include "support/result.h"

namespace rocuda::api {

cuda::CUresult toCuResult(ErrorCode code);
const char* resultName(cuda::CUresult code);         // nullptr for an unknown code
const char* resultDescription(cuda::CUresult code);  // nullptr for an unknown code

}  // namespace rocuda::api
