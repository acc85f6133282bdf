// Validation of CUarray / CUmipmappedArray handles, shared by the array, copy and texture entry
// points.
#pragma once

#include "rocuda/cuda_abi.h"
#include "support/result.h"

namespace rocuda::core {
class Array;
class MipmappedArray;
}  // namespace rocuda::core

namespace rocuda::api {

Result<core::Array*> lookupArray(cuda::CUarray handle);                             // InvalidHandle
Result<core::MipmappedArray*> lookupMipmappedArray(cuda::CUmipmappedArray handle);  // InvalidHandle

}  // namespace rocuda::api
