// libcuda.so.1 loaded with dlopen and reached through cuGetProcAddress_v2, as cudart reaches it.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include "rocuda/cuda_abi.h"

namespace rocuda::cuda::testing {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

inline void* library() {
  static void* handle = dlopen(ROCUDA_LIBCUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

template <class F>
F proc(const char* name, int version = 13000, cuuint64_t flags = 0) {
  static auto getProc = reinterpret_cast<GetProcAddress>(dlsym(library(), "cuGetProcAddress_v2"));
  void* pfn = nullptr;
  CUresult result = getProc(name, &pfn, version, flags, nullptr);
  EXPECT_EQ(result, CUDA_SUCCESS) << name;
  return reinterpret_cast<F>(pfn);
}

// The entry point `name` as a CUDA 12.9 runtime sees it (13.0 changed cuCtxSynchronize and
// cuCtxGetDevice), and as a 13.0 runtime sees it (for the entry points new in 13.0).
#define CU(name, ...) ::rocuda::cuda::testing::proc<CUresult (*)(__VA_ARGS__)>(#name, 12090)
#define CU13(name, ...) ::rocuda::cuda::testing::proc<CUresult (*)(__VA_ARGS__)>(#name, 13000)

// Every test runs with device 0's primary context current.
class Driver : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_NE(library(), nullptr) << dlerror();
    ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
  }
  void SetUp() override {
    ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, CUcontext*, CUdevice)(&context_, 0), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuDevicePrimaryCtxRelease, CUdevice)(0), CUDA_SUCCESS);
  }
  CUcontext context_ = nullptr;
};

}  // namespace rocuda::cuda::testing
