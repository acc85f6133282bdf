// libnvJitLink.so.13 loaded with dlopen and called by the versioned names NVIDIA's nvJitLink.h
// uses (nvJitLinkCreate -> __nvJitLinkCreate_13_0); the linked image is loaded and run through
// libcuda.so.1. Inputs built by nvcc at build time: two -dc objects (one archived), LTO-IR.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rocuda/nvjitlink_abi.h"
#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::nvjitlink::testing {
namespace {

using cuda::CUDA_SUCCESS;
using cuda::CUdeviceptr;
using cuda::CUfunction;
using cuda::CUmodule;
using cuda::CUresult;
using cuda::CUstream;

void* nvJitLinkLibrary() {
  static void* handle = dlopen(ROCUDA_NVJITLINK_PATH, RTLD_NOW | RTLD_LOCAL);
  return handle;
}

template <class F>
F entry(const char* name) {
  auto f = reinterpret_cast<F>(dlsym(nvJitLinkLibrary(), name));
  EXPECT_NE(f, nullptr) << name;
  return f;
}

std::vector<uint8_t> readInput(const std::string& name) {
  std::ifstream file(std::string(ROCUDA_NVJITLINK_INPUTS) + "/" + name, std::ios::binary);
  EXPECT_TRUE(file.good()) << name;
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

const char* kCallerPtx = R"(
.version 7.0
.target sm_50
.address_size 64
.extern .func (.param .b32 out) triple(.param .b32 x);
.visible .entry run(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, 7;
  {
    .param .b32 x;
    .param .b32 y;
    st.param.b32 [x], %r1;
    call.uni (y), triple, (x);
    ld.param.b32 %r2, [y];
  }
  st.global.u32 [%rd1], %r2;
  ret;
}
)";

const char* kCalleePtx = R"(
.version 7.0
.target sm_50
.address_size 64
.visible .func (.param .b32 out) triple(.param .b32 x)
{
  .reg .b32 %r<3>;
  ld.param.b32 %r1, [x];
  mul.lo.u32 %r2, %r1, 3;
  st.param.b32 [out], %r2;
  ret;
}
)";

class NvJitLink : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(nvJitLinkLibrary(), nullptr) << dlerror();
    ASSERT_EQ(CU(cuInit, unsigned)(0), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuDevicePrimaryCtxRetain, cuda::CUcontext*, cuda::CUdevice)(&context_, 0),
              CUDA_SUCCESS);
    ASSERT_EQ(CU(cuCtxSetCurrent, cuda::CUcontext)(context_), CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(CU(cuDevicePrimaryCtxRelease, cuda::CUdevice)(0), CUDA_SUCCESS);
  }

  nvJitLinkResult create(nvJitLinkHandle* handle, std::vector<const char*> options) {
    return create_(handle, static_cast<uint32_t>(options.size()), options.data());
  }
  nvJitLinkResult addPtx(nvJitLinkHandle handle, const char* text, const char* name) {
    return addData_(handle, NVJITLINK_INPUT_PTX, text, std::strlen(text), name);
  }
  nvJitLinkResult addBytes(nvJitLinkHandle handle, nvJitLinkInputType type,
                           const std::vector<uint8_t>& bytes, const char* name) {
    return addData_(handle, type, bytes.data(), bytes.size(), name);
  }
  std::string errorLog(nvJitLinkHandle handle) {
    size_t size = 0;
    EXPECT_EQ(errorLogSize_(handle, &size), NVJITLINK_SUCCESS);
    std::string log(size, '\0');
    EXPECT_EQ(errorLog_(handle, log.data()), NVJITLINK_SUCCESS);
    return log.c_str();
  }
  // The linked "cubin" (Rocuda's linked PTX), loaded as an application would load it.
  CUmodule loadLinked(nvJitLinkHandle handle) {
    size_t size = 0;
    EXPECT_EQ(cubinSize_(handle, &size), NVJITLINK_SUCCESS);
    std::vector<char> image(size);
    EXPECT_EQ(cubin_(handle, image.data()), NVJITLINK_SUCCESS);
    CUmodule module = nullptr;
    EXPECT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, image.data()), CUDA_SUCCESS);
    return module;
  }
  // Runs `name(data, ...)` over `values` with 64 threads per block.
  template <class T, class... Extra>
  std::vector<T> run(CUmodule module, const char* name, std::vector<T> values, Extra... extra) {
    CUfunction function = nullptr;
    EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, name),
              CUDA_SUCCESS);
    CUdeviceptr data = 0;
    size_t bytes = values.size() * sizeof(T);
    EXPECT_EQ(CU(cuMemAlloc, CUdeviceptr*, size_t)(&data, bytes), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemcpyHtoD, CUdeviceptr, const void*, size_t)(data, values.data(), bytes),
              CUDA_SUCCESS);
    void* params[] = {&data, &extra...};
    unsigned blocks = static_cast<unsigned>((values.size() + 63) / 64);
    EXPECT_EQ(CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                 unsigned, unsigned, CUstream, void**,
                 void**)(function, blocks, 1, 1, 64, 1, 1, 0, nullptr, params, nullptr),
              CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemcpyDtoH, void*, CUdeviceptr, size_t)(values.data(), data, bytes),
              CUDA_SUCCESS);
    EXPECT_EQ(CU(cuMemFree, CUdeviceptr)(data), CUDA_SUCCESS);
    return values;
  }

  cuda::CUcontext context_ = nullptr;
  using Create = nvJitLinkResult (*)(nvJitLinkHandle*, uint32_t, const char**);
  Create create_ = entry<Create>("__nvJitLinkCreate_13_0");
  nvJitLinkResult (*destroy_)(nvJitLinkHandle*) =
      entry<nvJitLinkResult (*)(nvJitLinkHandle*)>("__nvJitLinkDestroy_13_0");
  using AddData = nvJitLinkResult (*)(nvJitLinkHandle, nvJitLinkInputType, const void*, size_t,
                                      const char*);
  AddData addData_ = entry<AddData>("__nvJitLinkAddData_13_0");
  using AddFile = nvJitLinkResult (*)(nvJitLinkHandle, nvJitLinkInputType, const char*);
  AddFile addFile_ = entry<AddFile>("__nvJitLinkAddFile_13_0");
  nvJitLinkResult (*complete_)(nvJitLinkHandle) =
      entry<nvJitLinkResult (*)(nvJitLinkHandle)>("__nvJitLinkComplete_13_0");
  using GetSize = nvJitLinkResult (*)(nvJitLinkHandle, size_t*);
  GetSize cubinSize_ = entry<GetSize>("__nvJitLinkGetLinkedCubinSize_13_0");
  nvJitLinkResult (*cubin_)(nvJitLinkHandle, void*) =
      entry<nvJitLinkResult (*)(nvJitLinkHandle, void*)>("__nvJitLinkGetLinkedCubin_13_0");
  GetSize ptxSize_ = entry<GetSize>("__nvJitLinkGetLinkedPtxSize_13_0");
  using GetText = nvJitLinkResult (*)(nvJitLinkHandle, char*);
  GetText ptx_ = entry<GetText>("__nvJitLinkGetLinkedPtx_13_0");
  GetSize errorLogSize_ = entry<GetSize>("__nvJitLinkGetErrorLogSize_13_0");
  GetText errorLog_ = entry<GetText>("__nvJitLinkGetErrorLog_13_0");
  GetSize infoLogSize_ = entry<GetSize>("__nvJitLinkGetInfoLogSize_13_0");
  GetText infoLog_ = entry<GetText>("__nvJitLinkGetInfoLog_13_0");
};

TEST_F(NvJitLink, VersionAndPlainNames) {
  unsigned major = 0, minor = 0;
  auto version = entry<nvJitLinkResult (*)(unsigned*, unsigned*)>("nvJitLinkVersion");
  ASSERT_EQ(version(&major, &minor), NVJITLINK_SUCCESS);
  EXPECT_EQ(major, 13u);
  EXPECT_EQ(minor, 0u);
  EXPECT_EQ(version(nullptr, &minor), NVJITLINK_ERROR_INVALID_INPUT);
  // Programs linked against the library directly (not through the header) use the plain names.
  for (const char* name :
       {"nvJitLinkCreate", "nvJitLinkDestroy", "nvJitLinkAddData", "nvJitLinkAddFile",
        "nvJitLinkComplete", "nvJitLinkGetLinkedCubinSize", "nvJitLinkGetLinkedCubin",
        "nvJitLinkGetLinkedPtxSize", "nvJitLinkGetLinkedPtx", "nvJitLinkGetErrorLogSize",
        "nvJitLinkGetErrorLog", "nvJitLinkGetInfoLogSize", "nvJitLinkGetInfoLog"})
    EXPECT_NE(dlsym(nvJitLinkLibrary(), name), nullptr) << name;
}

TEST_F(NvJitLink, OptionsAreChecked) {
  nvJitLinkHandle h = nullptr;
  EXPECT_EQ(create(&h, {}), NVJITLINK_ERROR_MISSING_ARCH);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(create(&h, {"-arch=sm_86", "-bogus"}), NVJITLINK_ERROR_UNRECOGNIZED_OPTION);
  EXPECT_EQ(create(&h, {"-arch=sm_8x"}), NVJITLINK_ERROR_UNRECOGNIZED_ARCH);
  EXPECT_EQ(create(&h, {"-arch=sm_86", nullptr}), NVJITLINK_ERROR_NULL_INPUT);
  EXPECT_EQ(create(nullptr, {"-arch=sm_86"}), NVJITLINK_ERROR_NULL_INPUT);
  // Every documented option is accepted, with the suffixed architectures.
  for (const char* arch : {"-arch=sm_86", "-arch=sm_90a", "-arch=sm_100f", "-arch=compute_80"}) {
    ASSERT_EQ(create(&h, {arch, "-O3", "-lineinfo", "-maxrregcount=64", "-ftz=1", "-prec-div=0",
                          "-Xptxas=-v", "-split-compile=0", "-no-cache"}),
              NVJITLINK_SUCCESS)
        << arch;
    EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);
    EXPECT_EQ(h, nullptr);
  }
}

TEST_F(NvJitLink, PtxFromMemoryAndFileLinksAndRuns) {
  nvJitLinkHandle h = nullptr;
  ASSERT_EQ(create(&h, {"-arch=sm_86"}), NVJITLINK_SUCCESS);
  ASSERT_EQ(addPtx(h, kCallerPtx, "caller.ptx"), NVJITLINK_SUCCESS);
  char path[] = "/tmp/rocuda_nvjitlink_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kCalleePtx, std::strlen(kCalleePtx)),
            static_cast<ssize_t>(std::strlen(kCalleePtx)));
  close(fd);
  ASSERT_EQ(addFile_(h, NVJITLINK_INPUT_ANY, path), NVJITLINK_SUCCESS);  // kind from the bytes
  std::remove(path);
  size_t size = 0;
  EXPECT_EQ(cubinSize_(h, &size), NVJITLINK_ERROR_INVALID_INPUT);  // not linked yet
  ASSERT_EQ(complete_(h), NVJITLINK_SUCCESS) << errorLog(h);
  // The PTX query gives the same linked module.
  ASSERT_EQ(ptxSize_(h, &size), NVJITLINK_SUCCESS);
  std::string ptx(size, '\0');
  ASSERT_EQ(ptx_(h, ptx.data()), NVJITLINK_SUCCESS);
  EXPECT_NE(ptx.find(".visible .func"), std::string::npos);
  EXPECT_EQ(ptx.find(".extern .func"), std::string::npos) << "the extern was resolved";
  ASSERT_EQ(infoLogSize_(h, &size), NVJITLINK_SUCCESS);
  std::string info(size, '\0');
  ASSERT_EQ(infoLog_(h, info.data()), NVJITLINK_SUCCESS);
  EXPECT_NE(info.find("2 input(s) for sm_86"), std::string::npos) << info;

  CUmodule module = loadLinked(h);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);  // the module keeps no reference to the image
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(run<uint32_t>(module, "run", {0})[0], 21u);  // triple(7)
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

// Rocuda's NVRTC answers nvrtcGetCUBIN with PTX: linked as a cubin, it links as the PTX it is.
TEST_F(NvJitLink, NvrtcCubinOfPtxTextLinksAsACubin) {
  nvJitLinkHandle h = nullptr;
  ASSERT_EQ(create(&h, {"-arch=sm_86"}), NVJITLINK_SUCCESS);
  ASSERT_EQ(addPtx(h, kCallerPtx, "caller.ptx"), NVJITLINK_SUCCESS);
  ASSERT_EQ(addData_(h, NVJITLINK_INPUT_CUBIN, kCalleePtx, std::strlen(kCalleePtx), "rtc.cubin"),
            NVJITLINK_SUCCESS)
      << errorLog(h);
  ASSERT_EQ(complete_(h), NVJITLINK_SUCCESS) << errorLog(h);
  CUmodule module = loadLinked(h);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);
  ASSERT_NE(module, nullptr);
  EXPECT_EQ(run<uint32_t>(module, "run", {0})[0], 21u);  // triple(7)
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
}

TEST_F(NvJitLink, ObjectAndLibraryOfRelocatableDeviceCode) {
  nvJitLinkHandle h = nullptr;
  ASSERT_EQ(create(&h, {"-arch=sm_86"}), NVJITLINK_SUCCESS);
  ASSERT_EQ(addBytes(h, NVJITLINK_INPUT_OBJECT, readInput("jitlink_caller.o"), "caller.o"),
            NVJITLINK_SUCCESS)
      << errorLog(h);
  ASSERT_EQ(addFile_(h, NVJITLINK_INPUT_LIBRARY,
                     (std::string(ROCUDA_NVJITLINK_INPUTS) + "/libjitlink_callee.a").c_str()),
            NVJITLINK_SUCCESS)
      << errorLog(h);
  ASSERT_EQ(complete_(h), NVJITLINK_SUCCESS) << errorLog(h);
  CUmodule module = loadLinked(h);
  ASSERT_NE(module, nullptr);
  std::vector<int32_t> in(200);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(i) - 100;
  std::vector<int32_t> out = run(module, "doubleAll", in, static_cast<int32_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], 2 * in[i] + 1) << i;
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);
}

TEST_F(NvJitLink, LtoIrGoesThroughNvidiasLinkerToPtx) {
  std::vector<uint8_t> ltoir = readInput("jitlink_lto.ltoir");
  nvJitLinkHandle h = nullptr;
  ASSERT_EQ(create(&h, {"-arch=sm_86"}), NVJITLINK_SUCCESS);
  EXPECT_EQ(addBytes(h, NVJITLINK_INPUT_LTOIR, ltoir, "lto.ltoir"),
            NVJITLINK_ERROR_LTO_NOT_ENABLED);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);

  ASSERT_EQ(create(&h, {"-arch=sm_86", "-lto"}), NVJITLINK_SUCCESS);
  ASSERT_EQ(addBytes(h, NVJITLINK_INPUT_ANY, ltoir, "lto.ltoir"), NVJITLINK_SUCCESS);
  ASSERT_EQ(addPtx(h, kCalleePtx, "callee.ptx"), NVJITLINK_SUCCESS);  // PTX beside LTO-IR
  nvJitLinkResult linked = complete_(h);
  if (linked == NVJITLINK_ERROR_NVVM_COMPILE &&
      errorLog(h).find("was not found") != std::string::npos)
    GTEST_SKIP() << "NVIDIA's libnvJitLink.so.13 is not installed: " << errorLog(h);
  ASSERT_EQ(linked, NVJITLINK_SUCCESS) << errorLog(h);
  CUmodule module = loadLinked(h);
  ASSERT_NE(module, nullptr);
  std::vector<float> in(300);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.25f - 7.0f;
  std::vector<float> out = run(module, "scaleAdd", in, 3.0f, static_cast<int32_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], in[i] * 3.0f + 1.0f) << i;
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);
}

// `nvcc -dc -arch=lto_86`: an object whose fatbin holds LTO-IR and no PTX; its LTO-IR is found and
// linked by NVIDIA's nvJitLink like plain LTO-IR input.
TEST_F(NvJitLink, ObjectCarryingOnlyLtoIrIsLinkedThroughItsLtoIr) {
  std::vector<uint8_t> object = readInput("jitlink_lto_only.o");
  nvJitLinkHandle h = nullptr;
  ASSERT_EQ(create(&h, {"-arch=sm_86"}), NVJITLINK_SUCCESS);
  EXPECT_EQ(addBytes(h, NVJITLINK_INPUT_OBJECT, object, "lto_only.o"),
            NVJITLINK_ERROR_LTO_NOT_ENABLED);
  EXPECT_NE(errorLog(h).find("lto_only.o carries LTO-IR without PTX"), std::string::npos)
      << errorLog(h);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);

  ASSERT_EQ(create(&h, {"-arch=sm_86", "-lto"}), NVJITLINK_SUCCESS);
  ASSERT_EQ(addBytes(h, NVJITLINK_INPUT_OBJECT, object, "lto_only.o"), NVJITLINK_SUCCESS)
      << errorLog(h);
  nvJitLinkResult linked = complete_(h);
  if (linked == NVJITLINK_ERROR_NVVM_COMPILE &&
      errorLog(h).find("was not found") != std::string::npos)
    GTEST_SKIP() << "NVIDIA's libnvJitLink.so.13 is not installed: " << errorLog(h);
  ASSERT_EQ(linked, NVJITLINK_SUCCESS) << errorLog(h);
  CUmodule module = loadLinked(h);
  ASSERT_NE(module, nullptr);
  std::vector<float> in(100);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f - 20.0f;
  std::vector<float> out = run(module, "scaleAdd", in, -2.0f, static_cast<int32_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], in[i] * -2.0f + 1.0f) << i;
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);
}

// A link of nothing completes, as NVIDIA's does, into an image with no code that loads; the link
// is then complete and takes no more inputs.
TEST_F(NvJitLink, AnEmptyLinkCompletes) {
  nvJitLinkHandle h = nullptr;
  ASSERT_EQ(create(&h, {"-arch=sm_86"}), NVJITLINK_SUCCESS);
  EXPECT_EQ(complete_(h), NVJITLINK_SUCCESS);
  CUmodule module = loadLinked(h);
  ASSERT_NE(module, nullptr);
  CUfunction function = nullptr;
  EXPECT_EQ(
      CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, module, "triple"),
      cuda::CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  EXPECT_EQ(addPtx(h, kCalleePtx, "late.ptx"), NVJITLINK_ERROR_INVALID_INPUT);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);
}

// A cubin of machine code only loads, as on NVIDIA's driver, with one warning per process that
// none of its kernels can run (cuFFT loads such modules for some sizes and then fails); looking a
// kernel up answers CUDA_ERROR_NO_BINARY_FOR_GPU.
TEST_F(NvJitLink, SassOnlyModuleLoadsWithOneWarning) {
  std::vector<uint8_t> cubin = readInput("jitlink_callee.cubin");
  auto load = CU(cuModuleLoadData, CUmodule*, const void*);
  auto unload = CU(cuModuleUnload, CUmodule);
  ::testing::internal::CaptureStderr();
  CUmodule first = nullptr, second = nullptr;
  EXPECT_EQ(load(&first, cubin.data()), CUDA_SUCCESS);
  EXPECT_EQ(load(&second, cubin.data()), CUDA_SUCCESS);
  std::string log = ::testing::internal::GetCapturedStderr();
  const std::string warning = "carries only machine code (SASS for sm_86), no PTX";
  size_t at = log.find(warning);
  EXPECT_NE(at, std::string::npos) << log;
  EXPECT_EQ(log.find(warning, at + 1), std::string::npos) << log;  // once
  CUfunction function = nullptr;
  EXPECT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function, first, "triple"),
            cuda::CUDA_ERROR_NO_BINARY_FOR_GPU);
  EXPECT_EQ(unload(first), CUDA_SUCCESS);
  EXPECT_EQ(unload(second), CUDA_SUCCESS);
}

TEST_F(NvJitLink, ErrorsAreReportedAndLogged) {
  nvJitLinkHandle h = nullptr;
  ASSERT_EQ(create(&h, {"-arch=sm_86"}), NVJITLINK_SUCCESS);
  EXPECT_EQ(addPtx(h, ".version 7.0\n.target sm_50\n.address_size 64\nbogus;\n", "bad.ptx"),
            NVJITLINK_ERROR_PTX_COMPILE);
  EXPECT_NE(errorLog(h).find("bad.ptx:4:1"), std::string::npos) << errorLog(h);
  EXPECT_EQ(addPtx(h, kCalleePtx, nullptr), NVJITLINK_SUCCESS);  // a name is optional
  EXPECT_EQ(addData_(h, NVJITLINK_INPUT_FATBIN, kCalleePtx, std::strlen(kCalleePtx), "x"),
            NVJITLINK_ERROR_INCORRECT_INPUT_TYPE);
  EXPECT_EQ(addData_(h, NVJITLINK_INPUT_PTX, nullptr, 10, "x"), NVJITLINK_ERROR_NULL_INPUT);
  EXPECT_EQ(addData_(h, NVJITLINK_INPUT_INDEX, kCalleePtx, 10, "x"),
            NVJITLINK_ERROR_INCORRECT_INPUT_TYPE);
  EXPECT_EQ(addFile_(h, NVJITLINK_INPUT_PTX, "/nonexistent/rocuda.ptx"),
            NVJITLINK_ERROR_INVALID_INPUT);
  // A cubin with only SASS has nothing Rocuda can link.
  EXPECT_EQ(addBytes(h, NVJITLINK_INPUT_CUBIN, readInput("jitlink_callee.cubin"), "sass.cubin"),
            NVJITLINK_ERROR_ARCH_MISMATCH);
  EXPECT_NE(errorLog(h).find("no PTX to link"), std::string::npos) << errorLog(h);
  EXPECT_EQ(addPtx(h, kCalleePtx, "again.ptx"), NVJITLINK_SUCCESS);
  EXPECT_EQ(complete_(h), NVJITLINK_ERROR_FINALIZE);  // two definitions of `triple`
  EXPECT_NE(errorLog(h).find("multiple definitions"), std::string::npos) << errorLog(h);
  EXPECT_EQ(destroy_(&h), NVJITLINK_SUCCESS);
  // A destroyed (or invented) handle is refused, not dereferenced.
  nvJitLinkHandle stale = reinterpret_cast<nvJitLinkHandle>(&h);
  EXPECT_EQ(addPtx(stale, kCalleePtx, "c.ptx"), NVJITLINK_ERROR_INVALID_INPUT);
  EXPECT_EQ(complete_(stale), NVJITLINK_ERROR_INVALID_INPUT);
  EXPECT_EQ(destroy_(&stale), NVJITLINK_ERROR_INVALID_INPUT);
  size_t size = 0;
  EXPECT_EQ(errorLogSize_(stale, &size), NVJITLINK_ERROR_INVALID_INPUT);
  EXPECT_EQ(destroy_(nullptr), NVJITLINK_ERROR_NULL_INPUT);
}

}  // namespace
}  // namespace rocuda::nvjitlink::testing
