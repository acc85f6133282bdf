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

// `add_one(u32* data, u32 n)`: data[i] += 1 for every i < n (one thread per element).
inline constexpr const char* kAddOnePtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .entry add_one(.param .u64 data, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [data];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r6, [%rd4];
  add.s32 %r7, %r6, 1;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}
)";

using Launch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, unsigned, CUstream, void**, void**);

// add_one of kAddOnePtx, loaded into the current context.
inline CUfunction loadAddOne() {
  CUmodule module = nullptr;
  CUfunction f = nullptr;
  EXPECT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, kAddOnePtx), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, "add_one"),
            CUDA_SUCCESS);
  return f;
}

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
