// The pre-CUDA-4.0 driver API that NVIDIA's libcuda still exports and driver-API programs such as
// PyCUDA link: context usage counts, the stateful execution control (cuFuncSetBlockShape,
// cuParamSet*, cuLaunchGrid), 1D array copies, texture and surface references; and module
// unloading right after a launch, as PyCUDA does it.
#include <cstring>
#include <vector>

#include "tests/unit/api/libcuda_harness.h"

namespace rocuda::cuda::testing {
namespace {

TEST_F(Driver, CtxAttachCountsUsersUntilTheLastDetach) {
  auto attach = CU(cuCtxAttach, CUcontext*, unsigned);
  auto detach = CU(cuCtxDetach, CUcontext);
  auto apiVersion = CU(cuCtxGetApiVersion, CUcontext, unsigned*);
  auto create = proc<CUresult (*)(CUcontext*, unsigned, CUdevice)>("cuCtxCreate", 3020);
  CUcontext created = nullptr;
  ASSERT_EQ(create(&created, 0, 0), CUDA_SUCCESS);
  CUcontext attached = nullptr;
  EXPECT_EQ(attach(&attached, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(attach(nullptr, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(attach(&attached, 0), CUDA_SUCCESS);
  EXPECT_EQ(attached, created);
  ASSERT_EQ(attach(&attached, 0), CUDA_SUCCESS);
  unsigned version = 0;
  for (int users = 3; users > 1; --users) {
    ASSERT_EQ(detach(created), CUDA_SUCCESS);
    EXPECT_EQ(apiVersion(created, &version), CUDA_SUCCESS) << users - 1 << " users left";
  }
  ASSERT_EQ(detach(created), CUDA_SUCCESS);  // the creator's: destroyed
  EXPECT_EQ(apiVersion(created, &version), CUDA_ERROR_INVALID_CONTEXT);
  ASSERT_EQ(CU(cuCtxSetCurrent, CUcontext)(context_), CUDA_SUCCESS);
}

// A launch returns at once: unloading the module right after must wait for its kernel (the
// code would go while it runs), as NVIDIA's driver does.
TEST_F(Driver, ModuleUnloadWaitsForItsRunningKernels) {
  const char* spinPtx = R"(.version 7.0
.target sm_50
.address_size 64
.visible .entry spin(.param .u64 out, .param .u32 rounds)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [rounds];
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
LOOP:
  mad.lo.u32 %r3, %r3, 1664525, 1013904223;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, %r1;
  @%p1 bra LOOP;
  mov.u32 %r4, %tid.x;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
  ret;
}
)";
  auto alloc = proc<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020);
  auto launch = CU(cuLaunchKernel, CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                   unsigned, unsigned, CUstream, void**, void**);
  CUdeviceptr out = 0;
  ASSERT_EQ(alloc(&out, 64 * sizeof(uint32_t)), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);
  for (int round = 0; round < 3; ++round) {
    CUmodule module = nullptr;
    ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module, spinPtx), CUDA_SUCCESS);
    CUfunction spin = nullptr;
    ASSERT_EQ(CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&spin, module, "spin"),
              CUDA_SUCCESS);
    unsigned rounds = 2000000;
    void* params[] = {&out, &rounds};
    ASSERT_EQ(launch(spin, 1, 1, 1, 64, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(CU(cuModuleUnload, CUmodule)(module), CUDA_SUCCESS);
  }
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  std::vector<uint32_t> got(64);
  ASSERT_EQ(proc<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH", 3020)(
                got.data(), out, got.size() * sizeof(uint32_t)),
            CUDA_SUCCESS);
  for (uint32_t v : got) EXPECT_EQ(v, 2000000u);
  EXPECT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  EXPECT_EQ(proc<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020)(out), CUDA_SUCCESS);
}

class LegacyLaunch : public Driver {
 protected:
  void SetUp() override {
    Driver::SetUp();
    ASSERT_EQ(CU(cuModuleLoadData, CUmodule*, const void*)(&module_, kAddOnePtx), CUDA_SUCCESS);
    ASSERT_EQ(
        CU(cuModuleGetFunction, CUfunction*, CUmodule, const char*)(&function_, module_, "add_one"),
        CUDA_SUCCESS);
    ASSERT_EQ(proc<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020)(&data_, kBytes),
              CUDA_SUCCESS);
    ASSERT_EQ(proc<CUresult (*)(CUdeviceptr, unsigned, size_t)>("cuMemsetD32", 3020)(data_, 0, kN),
              CUDA_SUCCESS);
  }
  void TearDown() override {
    EXPECT_EQ(proc<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020)(data_), CUDA_SUCCESS);
    EXPECT_EQ(CU(cuModuleUnload, CUmodule)(module_), CUDA_SUCCESS);
    Driver::TearDown();
  }
  std::vector<uint32_t> download() {
    std::vector<uint32_t> out(kN);
    EXPECT_EQ(proc<CUresult (*)(void*, CUdeviceptr, size_t)>("cuMemcpyDtoH", 3020)(out.data(),
                                                                                   data_, kBytes),
              CUDA_SUCCESS);
    return out;
  }
  static constexpr unsigned kN = 300;
  static constexpr size_t kBytes = kN * sizeof(uint32_t);
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUdeviceptr data_ = 0;
};

// add_one(u32* data, u32 n) with its parameters set one by one, as CUDA 3 programs did.
TEST_F(LegacyLaunch, ParametersBlockShapeAndGrid) {
  auto blockShape = CU(cuFuncSetBlockShape, CUfunction, int, int, int);
  auto sharedSize = CU(cuFuncSetSharedSize, CUfunction, unsigned);
  auto paramSize = CU(cuParamSetSize, CUfunction, unsigned);
  auto paramv = CU(cuParamSetv, CUfunction, int, void*, unsigned);
  auto parami = CU(cuParamSeti, CUfunction, int, unsigned);
  auto paramf = CU(cuParamSetf, CUfunction, int, float);
  auto launch = CU(cuLaunch, CUfunction);
  auto launchGrid = CU(cuLaunchGrid, CUfunction, int, int);
  auto launchGridAsync = CU(cuLaunchGridAsync, CUfunction, int, int, CUstream);

  EXPECT_EQ(launchGrid(function_, 1, 1), CUDA_ERROR_INVALID_VALUE);  // no block shape yet
  EXPECT_EQ(blockShape(function_, 0, 1, 1), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(blockShape(nullptr, 64, 1, 1), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(blockShape(function_, 64, 1, 1), CUDA_SUCCESS);
  ASSERT_EQ(sharedSize(function_, 0), CUDA_SUCCESS);
  ASSERT_EQ(paramv(function_, 0, &data_, sizeof data_), CUDA_SUCCESS);
  ASSERT_EQ(parami(function_, 8, kN), CUDA_SUCCESS);
  ASSERT_EQ(paramSize(function_, 12), CUDA_SUCCESS);
  EXPECT_EQ(paramSize(function_, 4097), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(paramv(function_, 4090, &data_, sizeof data_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(paramf(function_, -4, 1.0f), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(launchGrid(function_, 0, 1), CUDA_ERROR_INVALID_VALUE);

  ASSERT_EQ(launch(function_), CUDA_SUCCESS);  // one block of 64
  std::vector<uint32_t> got = download();
  for (unsigned i = 0; i < kN; ++i) ASSERT_EQ(got[i], i < 64 ? 1u : 0u) << i;

  ASSERT_EQ(launchGrid(function_, 5, 1), CUDA_SUCCESS);  // 320 threads, n = 300
  CUstream stream = nullptr;
  ASSERT_EQ(CU(cuStreamCreate, CUstream*, unsigned)(&stream, 0), CUDA_SUCCESS);
  // 3 x 2 blocks: add_one indexes by blockIdx.x only, so elements 0..191 twice.
  ASSERT_EQ(launchGridAsync(function_, 3, 2, stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamSynchronize, CUstream)(stream), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuStreamDestroy, CUstream)(stream), CUDA_SUCCESS);
  got = download();
  for (unsigned i = 0; i < kN; ++i) ASSERT_EQ(got[i], (i < 64) + 1u + (i < 192 ? 2u : 0u)) << i;
}

TEST_F(Driver, OneDimensionalArrayCopies) {
  auto arrayCreate =
      proc<CUresult (*)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*)>("cuArrayCreate", 3020);
  auto htoa = proc<CUresult (*)(CUarray, size_t, const void*, size_t)>("cuMemcpyHtoA", 3020);
  auto atoh = proc<CUresult (*)(void*, CUarray, size_t, size_t)>("cuMemcpyAtoH", 3020);
  auto atoa = proc<CUresult (*)(CUarray, size_t, CUarray, size_t, size_t)>("cuMemcpyAtoA", 3020);
  auto atod = proc<CUresult (*)(CUdeviceptr, CUarray, size_t, size_t)>("cuMemcpyAtoD", 3020);
  auto dtoa = proc<CUresult (*)(CUarray, size_t, CUdeviceptr, size_t)>("cuMemcpyDtoA", 3020);
  auto htoaAsync =
      proc<CUresult (*)(CUarray, size_t, const void*, size_t, CUstream)>("cuMemcpyHtoAAsync", 3020);
  auto atohAsync =
      proc<CUresult (*)(void*, CUarray, size_t, size_t, CUstream)>("cuMemcpyAtoHAsync", 3020);
  CUDA_ARRAY_DESCRIPTOR desc{};
  desc.Width = 64;
  desc.Height = 0;
  desc.Format = CU_AD_FORMAT_FLOAT;
  desc.NumChannels = 1;
  CUarray first = nullptr, second = nullptr;
  ASSERT_EQ(arrayCreate(&first, &desc), CUDA_SUCCESS);
  ASSERT_EQ(arrayCreate(&second, &desc), CUDA_SUCCESS);
  std::vector<float> values(64), back(64, -1.0f);
  for (int i = 0; i < 64; ++i) values[i] = 0.5f * i;

  ASSERT_EQ(htoa(first, 0, values.data(), 256), CUDA_SUCCESS);
  ASSERT_EQ(atoh(back.data(), first, 0, 256), CUDA_SUCCESS);
  EXPECT_EQ(back, values);
  // 16 elements from element 8 of the first into element 40 of the second, through memory.
  CUdeviceptr staging = 0;
  ASSERT_EQ(proc<CUresult (*)(CUdeviceptr*, size_t)>("cuMemAlloc", 3020)(&staging, 64),
            CUDA_SUCCESS);
  ASSERT_EQ(atod(staging, first, 32, 64), CUDA_SUCCESS);
  ASSERT_EQ(dtoa(second, 160, staging, 64), CUDA_SUCCESS);
  ASSERT_EQ(atoa(second, 0, first, 0, 32), CUDA_SUCCESS);  // elements 0..7
  std::fill(back.begin(), back.end(), -1.0f);
  ASSERT_EQ(atohAsync(back.data(), second, 0, 256, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(CU(cuCtxSynchronize)(), CUDA_SUCCESS);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(back[i], values[i]) << i;
  for (int i = 40; i < 56; ++i) EXPECT_EQ(back[i], values[i - 32]) << i;
  ASSERT_EQ(htoaAsync(second, 4, values.data(), 4, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(atoh(back.data(), second, 4, 4), CUDA_SUCCESS);
  EXPECT_EQ(back[0], values[0]);

  EXPECT_EQ(htoa(first, 4, values.data(), 256), CUDA_ERROR_INVALID_VALUE);  // past the end
  EXPECT_EQ(htoa(first, 2, values.data(), 4), CUDA_ERROR_INVALID_VALUE);    // not an element
  EXPECT_EQ(atoh(back.data(), nullptr, 0, 4), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(proc<CUresult (*)(CUdeviceptr)>("cuMemFree", 3020)(staging), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(first), CUDA_SUCCESS);
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(second), CUDA_SUCCESS);
}

TEST_F(LegacyLaunch, TextureAndSurfaceReferences) {
  auto create = CU(cuTexRefCreate, CUtexref*);
  auto destroy = CU(cuTexRefDestroy, CUtexref);
  auto setArray = CU(cuTexRefSetArray, CUtexref, CUarray, unsigned);
  auto setAddress =
      proc<CUresult (*)(size_t*, CUtexref, CUdeviceptr, size_t)>("cuTexRefSetAddress", 3020);
  auto getAddress = proc<CUresult (*)(CUdeviceptr*, CUtexref)>("cuTexRefGetAddress", 3020);
  auto setAddress2D =
      proc<CUresult (*)(CUtexref, const CUDA_ARRAY_DESCRIPTOR*, CUdeviceptr, size_t)>(
          "cuTexRefSetAddress2D", 4010);
  auto getArray = CU(cuTexRefGetArray, CUarray*, CUtexref);
  auto setFormat = CU(cuTexRefSetFormat, CUtexref, CUarray_format, int);
  auto getFormat = CU(cuTexRefGetFormat, CUarray_format*, int*, CUtexref);
  auto setMode = CU(cuTexRefSetAddressMode, CUtexref, int, CUaddress_mode);
  auto getMode = CU(cuTexRefGetAddressMode, CUaddress_mode*, CUtexref, int);
  auto setFilter = CU(cuTexRefSetFilterMode, CUtexref, CUfilter_mode);
  auto getFilter = CU(cuTexRefGetFilterMode, CUfilter_mode*, CUtexref);
  auto setFlags = CU(cuTexRefSetFlags, CUtexref, unsigned);
  auto getFlags = CU(cuTexRefGetFlags, unsigned*, CUtexref);

  CUtexref ref = nullptr;
  ASSERT_EQ(create(&ref), CUDA_SUCCESS);
  CUarray_format format = CU_AD_FORMAT_HALF;
  int channels = 0;
  ASSERT_EQ(getFormat(&format, &channels, ref), CUDA_SUCCESS);
  EXPECT_EQ(format, CU_AD_FORMAT_FLOAT);
  EXPECT_EQ(channels, 1);
  CUdeviceptr address = 0;
  EXPECT_EQ(getAddress(&address, ref), CUDA_ERROR_INVALID_VALUE);  // nothing bound

  size_t offset = 99;
  ASSERT_EQ(setAddress(&offset, ref, data_, kBytes), CUDA_SUCCESS);
  EXPECT_EQ(offset, 0u);
  ASSERT_EQ(getAddress(&address, ref), CUDA_SUCCESS);
  EXPECT_EQ(address, data_);
  CUDA_ARRAY_DESCRIPTOR twoD{};
  twoD.Width = 16;
  twoD.Height = 4;
  twoD.Format = CU_AD_FORMAT_UNSIGNED_INT32;
  twoD.NumChannels = 2;
  ASSERT_EQ(setAddress2D(ref, &twoD, data_, 128), CUDA_SUCCESS);
  ASSERT_EQ(getFormat(&format, &channels, ref), CUDA_SUCCESS);
  EXPECT_EQ(format, CU_AD_FORMAT_UNSIGNED_INT32);
  EXPECT_EQ(channels, 2);

  CUDA_ARRAY_DESCRIPTOR desc{};
  desc.Width = 32;
  desc.Format = CU_AD_FORMAT_SIGNED_INT8;
  desc.NumChannels = 4;
  CUarray array = nullptr;
  ASSERT_EQ(proc<CUresult (*)(CUarray*, const CUDA_ARRAY_DESCRIPTOR*)>("cuArrayCreate", 3020)(
                &array, &desc),
            CUDA_SUCCESS);
  EXPECT_EQ(setArray(ref, array, 0), CUDA_ERROR_INVALID_VALUE);  // must override the format
  ASSERT_EQ(setArray(ref, array, CU_TRSA_OVERRIDE_FORMAT), CUDA_SUCCESS);
  CUarray bound = nullptr;
  ASSERT_EQ(getArray(&bound, ref), CUDA_SUCCESS);
  EXPECT_EQ(bound, array);
  EXPECT_EQ(getAddress(&address, ref), CUDA_ERROR_INVALID_VALUE);  // the array replaced it
  ASSERT_EQ(getFormat(&format, &channels, ref), CUDA_SUCCESS);
  EXPECT_EQ(format, CU_AD_FORMAT_SIGNED_INT8);
  EXPECT_EQ(channels, 4);

  ASSERT_EQ(setFormat(ref, CU_AD_FORMAT_HALF, 2), CUDA_SUCCESS);
  EXPECT_EQ(setFormat(ref, CU_AD_FORMAT_HALF, 3), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(setMode(ref, 1, CU_TR_ADDRESS_MODE_MIRROR), CUDA_SUCCESS);
  EXPECT_EQ(setMode(ref, 3, CU_TR_ADDRESS_MODE_CLAMP), CUDA_ERROR_INVALID_VALUE);
  CUaddress_mode mode = CU_TR_ADDRESS_MODE_BORDER;
  ASSERT_EQ(getMode(&mode, ref, 0), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_TR_ADDRESS_MODE_WRAP);
  ASSERT_EQ(getMode(&mode, ref, 1), CUDA_SUCCESS);
  EXPECT_EQ(mode, CU_TR_ADDRESS_MODE_MIRROR);
  ASSERT_EQ(setFilter(ref, CU_TR_FILTER_MODE_LINEAR), CUDA_SUCCESS);
  CUfilter_mode filter = CU_TR_FILTER_MODE_POINT;
  ASSERT_EQ(getFilter(&filter, ref), CUDA_SUCCESS);
  EXPECT_EQ(filter, CU_TR_FILTER_MODE_LINEAR);
  ASSERT_EQ(setFlags(ref, CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER), CUDA_SUCCESS);
  EXPECT_EQ(setFlags(ref, 0x80), CUDA_ERROR_INVALID_VALUE);
  unsigned flags = 0;
  ASSERT_EQ(getFlags(&flags, ref), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER);

  auto paramTexRef = CU(cuParamSetTexRef, CUfunction, int, CUtexref);
  EXPECT_EQ(paramTexRef(function_, CU_PARAM_TR_DEFAULT, ref), CUDA_SUCCESS);
  EXPECT_EQ(paramTexRef(function_, 0, ref), CUDA_ERROR_INVALID_VALUE);

  // CUDA 12 removed references from the language: no module has one.
  CUtexref fromModule = nullptr;
  EXPECT_EQ(CU(cuModuleGetTexRef, CUtexref*, CUmodule, const char*)(&fromModule, module_, "tex"),
            CUDA_ERROR_NOT_FOUND);
  CUsurfref surface = nullptr;
  EXPECT_EQ(CU(cuModuleGetSurfRef, CUsurfref*, CUmodule, const char*)(&surface, module_, "surf"),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(CU(cuSurfRefGetArray, CUarray*, CUsurfref)(&bound, surface), CUDA_ERROR_INVALID_VALUE);

  ASSERT_EQ(destroy(ref), CUDA_SUCCESS);
  EXPECT_EQ(getFlags(&flags, ref), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(destroy(ref), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(CU(cuArrayDestroy, CUarray)(array), CUDA_SUCCESS);
}

}  // namespace
}  // namespace rocuda::cuda::testing
