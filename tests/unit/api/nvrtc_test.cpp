// libnvrtc.so.13 loaded with dlopen, as CuPy and cuda.core load it: every call reaches NVIDIA's
// NVRTC, except that a real architecture (-arch=sm_86) is compiled to PTX and nvrtcGetCUBIN
// answers with that PTX, which libcuda.so.1 then loads and runs. Skipped without NVIDIA's NVRTC.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "rocuda/nvrtc_abi.h"
#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::nvrtc::testing {
namespace {

using cuda::CUDA_SUCCESS;
using cuda::CUdeviceptr;
using cuda::CUresult;
using cuda::CUfunction;
using cuda::CUmodule;
using cuda::CUstream;

void* nvrtcLibrary() {
  static void* handle = dlopen(ROCUDA_NVRTC_PATH, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

template <class F>
F entry(const char* name) {
  auto f = reinterpret_cast<F>(dlsym(nvrtcLibrary(), name));
  EXPECT_NE(f, nullptr) << name;
  return f;
}

const char* kSource = R"(
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

class Nvrtc : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(nvrtcLibrary(), nullptr) << dlerror();
    int major = 0, minor = 0;
    if (version_(&major, &minor) != NVRTC_SUCCESS)
      GTEST_SKIP() << "NVIDIA's libnvrtc.so.13 is not installed";
    EXPECT_EQ(major, 13);
  }

  // Compiles kSource with `options`; returns the result and fills `log`.
  nvrtcResult compile(nvrtcProgram* prog, std::vector<const char*> options, std::string& log) {
    EXPECT_EQ(create_(prog, kSource, "axpy.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    nvrtcResult r = compile_(*prog, static_cast<int>(options.size()), options.data());
    size_t size = 0;
    EXPECT_EQ(logSize_(*prog, &size), NVRTC_SUCCESS);
    log.assign(size, '\0');
    EXPECT_EQ(log_(*prog, log.data()), NVRTC_SUCCESS);
    return r;
  }

  // Loads `image` through libcuda and runs axpy over 300 elements.
  void expectAxpyRuns(const std::vector<char>& image) {
    ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
    cuda::CUcontext context = nullptr;
    ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, cuda::CUcontext*, cuda::CUdevice)(&context, 0),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSetCurrent, cuda::CUcontext)(context), CUDA_SUCCESS);
    CUmodule module = nullptr;
    ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, image.data()), CUDA_SUCCESS);
    CUfunction f = nullptr;
    ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&f, module, "axpy"),
              CUDA_SUCCESS);
    constexpr int kN = 300;
    std::vector<float> x(kN), y(kN);
    for (int i = 0; i < kN; ++i) {
      x[i] = 0.5f * static_cast<float>(i);
      y[i] = static_cast<float>(kN - i);
    }
    CUdeviceptr dx = 0, dy = 0;
    ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&dx, kN * 4), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&dy, kN * 4), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(dx, x.data(), kN * 4),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(dy, y.data(), kN * 4),
              CUDA_SUCCESS);
    float a = 3.0f;
    int n = kN;
    void* params[] = {&a, &dx, &dy, &n};
    ASSERT_EQ(
        CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
           unsigned, CUstream, void**, void**)(f, 3, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr),
        CUDA_SUCCESS);
    std::vector<float> out(kN);
    ASSERT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(out.data(), dy, kN * 4), CUDA_SUCCESS);
    for (int i = 0; i < kN; ++i) EXPECT_EQ(out[i], 3.0f * x[i] + y[i]) << i;
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(dx), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(dy), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuDevicePrimaryCtxRelease, cuda::CUdevice)(0), CUDA_SUCCESS);
  }

  nvrtcResult (*version_)(int*, int*) = entry<nvrtcResult (*)(int*, int*)>("nvrtcVersion");
  using Create = nvrtcResult (*)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                 const char* const*);
  Create create_ = entry<Create>("nvrtcCreateProgram");
  nvrtcResult (*destroy_)(nvrtcProgram*) =
      entry<nvrtcResult (*)(nvrtcProgram*)>("nvrtcDestroyProgram");
  using Compile = nvrtcResult (*)(nvrtcProgram, int, const char* const*);
  Compile compile_ = entry<Compile>("nvrtcCompileProgram");
  using GetSize = nvrtcResult (*)(nvrtcProgram, size_t*);
  using Get = nvrtcResult (*)(nvrtcProgram, char*);
  GetSize cubinSize_ = entry<GetSize>("nvrtcGetCUBINSize");
  Get cubin_ = entry<Get>("nvrtcGetCUBIN");
  GetSize ptxSize_ = entry<GetSize>("nvrtcGetPTXSize");
  Get ptx_ = entry<Get>("nvrtcGetPTX");
  GetSize logSize_ = entry<GetSize>("nvrtcGetProgramLogSize");
  Get log_ = entry<Get>("nvrtcGetProgramLog");
  const char* (*errorString_)(nvrtcResult) =
      entry<const char* (*)(nvrtcResult)>("nvrtcGetErrorString");
};

TEST_F(Nvrtc, RealArchitectureGivesPtxAsTheCubinAndItRuns) {
  for (std::vector<const char*> options : {std::vector<const char*>{"-arch=sm_86"},
                                           {"--gpu-architecture", "sm_80", "-lineinfo"},
                                           {"--gpu-architecture=sm_90a", "-default-device"}}) {
    nvrtcProgram prog = nullptr;
    std::string log;
    ASSERT_EQ(compile(&prog, options, log), NVRTC_SUCCESS) << log;
    size_t size = 0;
    ASSERT_EQ(cubinSize_(prog, &size), NVRTC_SUCCESS);
    std::vector<char> image(size);
    ASSERT_EQ(cubin_(prog, image.data()), NVRTC_SUCCESS);
    std::string text(image.data());
    EXPECT_NE(text.find(".entry axpy"), std::string::npos) << text;
    EXPECT_NE(text.find(".target sm_"), std::string::npos);
    // The same text through the PTX query.
    size_t ptxBytes = 0;
    ASSERT_EQ(ptxSize_(prog, &ptxBytes), NVRTC_SUCCESS);
    EXPECT_EQ(ptxBytes, size);
    expectAxpyRuns(image);
    EXPECT_EQ(destroy_(&prog), NVRTC_SUCCESS);
  }
}

TEST_F(Nvrtc, VirtualArchitectureAndErrorsAreNvrtcsOwn) {
  nvrtcProgram prog = nullptr;
  std::string log;
  ASSERT_EQ(compile(&prog, {"-arch=compute_80"}, log), NVRTC_SUCCESS) << log;
  size_t size = 0;
  // NVIDIA's answer: a PTX-only compilation has no cubin.
  size = 1234;
  EXPECT_EQ(cubinSize_(prog, &size), NVRTC_SUCCESS);
  EXPECT_EQ(size, 0u);
  ASSERT_EQ(ptxSize_(prog, &size), NVRTC_SUCCESS);
  std::vector<char> ptx(size);
  ASSERT_EQ(ptx_(prog, ptx.data()), NVRTC_SUCCESS);
  expectAxpyRuns(ptx);
  EXPECT_EQ(destroy_(&prog), NVRTC_SUCCESS);

  // A compilation error comes back with NVRTC's log.
  const char* broken = "extern \"C\" __global__ void k() { undeclared(); }";
  ASSERT_EQ(create_(&prog, broken, "broken.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  const char* arch[] = {"-arch=sm_86"};
  EXPECT_EQ(compile_(prog, 1, arch), NVRTC_ERROR_COMPILATION);
  ASSERT_EQ(logSize_(prog, &size), NVRTC_SUCCESS);
  std::string text(size, '\0');
  ASSERT_EQ(log_(prog, text.data()), NVRTC_SUCCESS);
  EXPECT_NE(text.find("undeclared"), std::string::npos) << text;
  size = 1234;
  EXPECT_EQ(cubinSize_(prog, &size), NVRTC_SUCCESS);
  EXPECT_EQ(size, 0u);  // nothing was produced (NVIDIA's answer; not the PTX either)
  EXPECT_EQ(destroy_(&prog), NVRTC_SUCCESS);
  EXPECT_STREQ(errorString_(NVRTC_ERROR_COMPILATION), "NVRTC_ERROR_COMPILATION");
  const char* badOption[] = {"--no-such-option"};
  ASSERT_EQ(create_(&prog, kSource, "axpy.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  EXPECT_EQ(compile_(prog, 1, badOption), NVRTC_ERROR_INVALID_OPTION);
  EXPECT_EQ(destroy_(&prog), NVRTC_SUCCESS);
}

}  // namespace
}  // namespace rocuda::nvrtc::testing
