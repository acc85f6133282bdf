// Discovery of AMD GPUs: without HIP, with Debian's real HIP runtime on a machine without an AMD
// GPU, with a runtime missing a function, and (ordering and error paths only) with an in-process
// HIP double.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "backends/hip/hip_api.h"
#include "backends/hip/hip_backend.h"
#include "backends/hip/hip_device.h"
#include "backends/hip/hip_printf.h"
#include "compiler/amdgpu/amdgpu_codegen.h"
#include "support/env.h"
#include "support/nvidia_library.h"
#include "support/texture_view.h"

namespace rocuda::backends {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// env::get asserts on names missing from support/env.cpp's table in builds with assertions.
bool canRead(const char* name) {
#ifdef NDEBUG
  (void)name;
  return true;
#else
  for (const auto& variable : env::variables())
    if (std::string(variable.name) == name) return true;
  return false;
#endif
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old, hadOld_ = true;
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (hadOld_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool hadOld_ = false;
};

TEST(HipDiscovery, NoLibraryListsThePathsTried) {
  HipDiscovery result = discoverHipDevices(
      {"/nonexistent/rocuda-test/libamdhip64.so", "/nonexistent/rocuda-test/libamdhip64.so.6"});
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason, "not found")) << result.unavailableReason;
  EXPECT_TRUE(contains(result.unavailableReason, "/nonexistent/rocuda-test/libamdhip64.so,"));
  EXPECT_TRUE(contains(result.unavailableReason, "/nonexistent/rocuda-test/libamdhip64.so.6"));
}

TEST(HipDiscovery, ExplicitLibraryThatDoesNotExistIsReportedFirst) {
  auto candidates = hip::hipLibraryCandidates("/nonexistent/rocuda-test/libamdhip64.so", "");
  candidates.resize(2);  // the explicit path and its directory form; no system search
  HipDiscovery result = discoverHipDevices(candidates);
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason, "tried: /nonexistent/rocuda-test/libamdhip64.so"))
      << result.unavailableReason;
}

TEST(HipDiscovery, RealRuntimeWithoutGpuNamesTheHipError) {
  void* probe = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
  if (probe == nullptr) GTEST_SKIP() << "Debian's libamdhip64-5 is not installed";
  dlclose(probe);
  HipDiscovery result = discoverHipDevices({"libamdhip64.so.5"});
  if (!result.devices.empty()) {  // a machine with an AMD GPU
    EXPECT_EQ(result.devices[0]->description().backendName, "hip");
    EXPECT_FALSE(hip::processorOf(result.devices[0]->description().nativeTarget).empty());
    return;
  }
  // ROCm 5.2 on a machine without a GPU: hipInit 101, hipGetDeviceCount 100.
  EXPECT_TRUE(contains(result.unavailableReason, "hipInit failed")) << result.unavailableReason;
  EXPECT_TRUE(contains(result.unavailableReason, "hipErrorInvalidDevice (101)"))
      << result.unavailableReason;
  EXPECT_TRUE(contains(result.unavailableReason, "hipErrorNoDevice (100)"))
      << result.unavailableReason;
}

TEST(HipDiscovery, MissingFunctionDisablesTheBackendByName) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_PARTIAL});
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason, "hipDeviceGetAttribute"))
      << result.unavailableReason;
  EXPECT_TRUE(contains(result.unavailableReason, ROCUDA_FAKE_HIP_PARTIAL));
}

TEST(HipDiscovery, DevicesOffListSkipsHip) {
  if (!canRead("ROCUDA_DEVICES")) GTEST_SKIP() << "ROCUDA_DEVICES not yet in support/env.cpp";
  ScopedEnv devices("ROCUDA_DEVICES", "cpu");
  HipDiscovery result = discoverHipDevices();
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason, "ROCUDA_DEVICES=cpu"));
  ScopedEnv both("ROCUDA_DEVICES", "hip,cpu");
  std::string reason;
  EXPECT_TRUE(hip::hipBackendEnabled(&reason));
}

// The HIP double: ordering and error paths.
class HipDouble : public ::testing::Test {
 protected:
  // The double's build: ROCm 5's exports (HipDoubleRocm6: ROCm 6/7's).
  virtual const char* library() const { return ROCUDA_FAKE_HIP_FULL; }
  void SetUp() override {
    handle_ = dlopen(library(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    log_ = reinterpret_cast<const char* (*)()>(dlsym(handle_, "fakeHipCallLog"));
    reset_ = reinterpret_cast<void (*)()>(dlsym(handle_, "fakeHipResetLog"));
    lastImage_ = reinterpret_cast<const char* (*)()>(dlsym(handle_, "fakeHipLastImage"));
    lastLaunch_ = reinterpret_cast<const char* (*)()>(dlsym(handle_, "fakeHipLastLaunch"));
    global_ = reinterpret_cast<void* (*)(const char*)>(dlsym(handle_, "fakeHipGlobal"));
    ASSERT_NE(log_, nullptr);
    ASSERT_NE(reset_, nullptr);
    ASSERT_NE(lastLaunch_, nullptr);
    ASSERT_NE(global_, nullptr);
    reset_();
  }
  void TearDown() override { dlclose(handle_); }
  std::string calls() {
    std::string text = log_();
    reset_();
    return text;
  }

  // What the double runs in place of each kernel (fakeHipSetLaunchHook); null removes it.
  void setLaunchHook(void (*hook)(const char* kernel, void** params, void* context),
                     void* context) {
    auto set = reinterpret_cast<void (*)(void (*)(const char*, void**, void*), void*)>(
        dlsym(handle_, "fakeHipSetLaunchHook"));
    ASSERT_NE(set, nullptr);
    set(hook, context);
  }

  std::string lastImage() { return lastImage_(); }
  std::string lastLaunch() { return lastLaunch_(); }
  void* global(const char* name) { return global_(name); }

  void* handle_ = nullptr;
  const char* (*log_)() = nullptr;
  void (*reset_)() = nullptr;
  const char* (*lastImage_)() = nullptr;
  const char* (*lastLaunch_)() = nullptr;
  void* (*global_)(const char*) = nullptr;
};

class HipDoubleRocm6 : public HipDouble {
 protected:
  const char* library() const override { return ROCUDA_FAKE_HIP_ROCM6; }
};

TEST_F(HipDouble, InitialisesBeforeCountingAndDescribesEachDevice) {
  ScopedEnv count("FAKE_HIP_COUNT", "2");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 2u) << result.unavailableReason;
  EXPECT_TRUE(result.unavailableReason.empty());
  EXPECT_EQ(calls(),
            "hipRuntimeGetVersion;hipInit;hipGetDeviceCount;"
            "hipDeviceGetName;hipGetDeviceProperties;hipSetDevice;"
            "hipMemGetAllocationGranularity(device 0, minimum);"
            "hipMemGetAllocationGranularity(device 0, recommended);"
            "hipDeviceGetName;hipGetDeviceProperties;hipSetDevice;"
            "hipMemGetAllocationGranularity(device 1, minimum);"
            "hipMemGetAllocationGranularity(device 1, recommended);");
  const DeviceDescription& second = result.devices[1]->description();
  EXPECT_EQ(second.name, "Fake GPU 1");
  EXPECT_EQ(second.nativeTarget, "gfx1100");
  EXPECT_EQ(second.pciBus, 4);
  EXPECT_EQ(second.multiprocessorCount, 48);
}

TEST_F(HipDoubleRocm6, TargetNameComesFromTheR0000LayoutNeverR0600) {
  ScopedEnv arch("FAKE_HIP_ARCH", "gfx942:sramecc+:xnack-");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_ROCM6});
  ASSERT_EQ(result.devices.size(), 1u) << result.unavailableReason;
  EXPECT_EQ(result.devices[0]->description().nativeTarget, "gfx942:sramecc+:xnack-");
  std::string discovery = calls();
  EXPECT_TRUE(contains(discovery, "hipGetDevicePropertiesR0000;")) << discovery;
  EXPECT_FALSE(contains(discovery, "hipGetDeviceProperties;")) << discovery;
  EXPECT_FALSE(contains(discovery, "R0600")) << discovery;
}

TEST_F(HipDouble, OldRuntimeIsRefusedBeforeInit) {
  ScopedEnv version("FAKE_HIP_VERSION", "40200000");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason, "4.2.0")) << result.unavailableReason;
  EXPECT_TRUE(contains(result.unavailableReason, "ROCm 5.0"));
  EXPECT_EQ(calls(), "hipRuntimeGetVersion;");
}

TEST_F(HipDouble, InitFailureNamesBothHipErrors) {
  ScopedEnv init("FAKE_HIP_INIT_ERROR", "101");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason,
                       "hipInit failed: hipErrorInvalidDevice (101): invalid device ordinal"))
      << result.unavailableReason;
  EXPECT_TRUE(contains(result.unavailableReason, "hipGetDeviceCount: hipErrorNoDevice (100)"));
}

TEST_F(HipDouble, NoDevices) {
  ScopedEnv count("FAKE_HIP_COUNT", "0");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason, "hipErrorNoDevice (100)"))
      << result.unavailableReason;
}

TEST_F(HipDouble, DeviceWithoutTargetNameIsSkipped) {
  ScopedEnv arch("FAKE_HIP_ARCH", "");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  EXPECT_TRUE(result.devices.empty());
  EXPECT_TRUE(contains(result.unavailableReason, "no gfx target name")) << result.unavailableReason;
}

// Each copy, fill and kernel runs on a non-blocking HIP stream (a lane, never the null stream,
// which would wait for every other stream) and is waited for on that stream alone.
TEST_F(HipDouble, EveryOperationSelectsTheDeviceAndWaitsForItsLane) {
  ScopedEnv count("FAKE_HIP_COUNT", "2");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 2u);
  DeviceBackend& device = *result.devices[1];
  calls();
  auto memory = device.allocateDevice(64);
  ASSERT_TRUE(memory.ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMalloc;");
  char host[64] = "payload";
  ASSERT_TRUE(device.copy(*memory, host, sizeof host).ok());
  // CUDA's priority 0 is HIP's least (1 in ROCm's range [1, -1]).
  EXPECT_EQ(calls(),
            "hipSetDevice;hipStreamCreateWithPriority(s1, flags 1, priority 0);"
            "hipMemcpyAsync(s1);hipStreamSynchronize(s1);");
  ASSERT_TRUE(device.fill(*memory, 0xbeef, 2, 8).ok());  // the idle lane is reused
  EXPECT_EQ(calls(), "hipSetDevice;hipMemsetD16Async(s1);hipStreamSynchronize(s1);");
  ASSERT_TRUE(device.fill(*memory, 7, 4, 8).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemsetD32Async(s1);hipStreamSynchronize(s1);");
  Status odd = device.fill(*memory, 7, 3, 8);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().code, ErrorCode::InvalidValue);
  EXPECT_EQ(calls(), "");
  ASSERT_TRUE(device.copy2D(*memory, 16, host, 16, 8, 2).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemcpy2DAsync(s1);hipStreamSynchronize(s1);");
  device.freeDevice(*memory);
  EXPECT_EQ(calls(), "hipSetDevice;hipFree;");
  auto live = reinterpret_cast<int (*)()>(dlsym(handle_, "fakeHipLiveStreams"));
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(live(), 1);
  result.devices.clear();  // the device destroys its lanes
  EXPECT_TRUE(contains(calls(), "hipSetDevice;hipStreamDestroy(s1);"));
  EXPECT_EQ(live(), 0);
}

// Two core stream workers with operations in flight at once get two lanes, so their work can
// overlap on the GPU: the double's hipStreamSynchronize returns only once both wait together.
TEST_F(HipDouble, ConcurrentOperationsRunOnSeparateLanes) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  auto memory = device.allocateDevice(128);
  ASSERT_TRUE(memory.ok());
  calls();
  ScopedEnv rendezvous("FAKE_HIP_SYNC_RENDEZVOUS", "2");
  char first[64] = "first", second[64] = "second";
  Status firstStatus, secondStatus;
  std::thread a([&] { firstStatus = device.copy(*memory, first, sizeof first); });
  std::thread b(
      [&] { secondStatus = device.copy(static_cast<char*>(*memory) + 64, second, sizeof second); });
  a.join();
  b.join();
  EXPECT_TRUE(firstStatus.ok()) << firstStatus.error().message;
  EXPECT_TRUE(secondStatus.ok()) << secondStatus.error().message;
  std::string log = calls();
  EXPECT_TRUE(contains(log, "hipStreamSynchronize(s1)")) << log;
  EXPECT_TRUE(contains(log, "hipStreamSynchronize(s2)")) << log;
  EXPECT_FALSE(contains(log, "(null)")) << log;
  device.freeDevice(*memory);
}

TEST_F(HipDouble, HipErrorsBecomeRocudaErrorsWithHipsText) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  ScopedEnv failure("FAKE_HIP_MALLOC_ERROR", "2");
  auto memory = result.devices[0]->allocateDevice(1 << 20);
  ASSERT_FALSE(memory.ok());
  EXPECT_EQ(memory.error().code, ErrorCode::OutOfMemory);
  EXPECT_TRUE(contains(memory.error().message, "hipErrorOutOfMemory (2): out of memory"))
      << memory.error().message;
  EXPECT_TRUE(contains(memory.error().message, "1048576 bytes"));
}

// cuMemHostRegister on an AMD GPU pins and maps the pages through HIP, and kernels get HIP's
// device address for them, which may differ from the host's (the double maps them 2^44 higher).
TEST_F(HipDouble, RegisteredHostMemoryIsPinnedAndMappedThroughHip) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  calls();
  alignas(4096) static char pages[8192];
  Result<void*> mapped = device.registerHost(pages, sizeof pages);
  ASSERT_TRUE(mapped.ok()) << mapped.error().message;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*mapped),
            reinterpret_cast<uintptr_t>(pages) + (uintptr_t(1) << 44));
  EXPECT_EQ(calls(), "hipSetDevice;hipHostRegister(8192, flags 2);hipHostGetDevicePointer;");
  device.unregisterHost(pages, sizeof pages);
  EXPECT_EQ(calls(), "hipSetDevice;hipHostUnregister;");

  ScopedEnv failure("FAKE_HIP_REGISTER_ERROR", "2");
  Result<void*> refused = device.registerHost(pages, sizeof pages);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::OutOfMemory);
  EXPECT_TRUE(contains(refused.error().message, "hipHostRegister of 8192 bytes"))
      << refused.error().message;
}

// cuMemAllocManaged on an AMD GPU is HIP's managed memory, freed with hipFree.
TEST_F(HipDouble, ManagedMemoryComesFromHipMallocManaged) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  calls();
  Result<void*> managed = device.allocateManaged(256);
  ASSERT_TRUE(managed.ok()) << managed.error().message;
  EXPECT_EQ(calls(), "hipSetDevice;hipMallocManaged(flags 1);");
  // Prefetches and advice are HIP's, on this device (0) or the host (hipCpuDeviceId, -1).
  ASSERT_TRUE(device.prefetchManaged(*managed, 256, true).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipStreamCreateWithPriority(s1, flags 1, priority 0);"
            "hipMemPrefetchAsync(256 to 0)(s1);hipStreamSynchronize(s1);");
  ASSERT_TRUE(device.prefetchManaged(*managed, 128, false).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemPrefetchAsync(128 to -1)(s1);hipStreamSynchronize(s1);");
  ASSERT_TRUE(device.adviseManaged(*managed, 256, ManagedAdvice::SetPreferredLocation, true).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemAdvise(256, advice 3, device 0);");
  ASSERT_TRUE(device.adviseManaged(*managed, 256, ManagedAdvice::SetAccessedBy, false).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemAdvise(256, advice 5, device -1);");
  device.freeManaged(*managed);
  EXPECT_EQ(calls(), "hipSetDevice;hipFree;");
}

// A kernel with CUDA-layout parameters of three sizes and a __device__ variable.
constexpr const char* kScalePtx = R"(
.version 7.0
.target sm_75
.address_size 64
.visible .global .align 4 .u32 counter;
.visible .entry scale(.param .u64 out, .param .u32 n, .param .f32 factor)
{
  .reg .b32 %r<4>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r1, [n];
  ld.param.f32 %f1, [factor];
  mov.u32 %r2, %tid.x;
  cvt.rn.f32.u32 %f2, %r2;
  mul.f32 %f2, %f2, %f1;
  mul.wide.u32 %rd2, %r2, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f2;
  atom.global.add.u32 %r3, [counter], %r1;
  ret;
}
)";

// The packed parameter buffer of scale(out, n, factor): 8 + 4 + 4 bytes.
struct ScaleParams {
  uint64_t out = 0x1122334455667788ull;
  uint32_t n = 7;
  float factor = 2.0f;  // 0x40000000
};

TEST_F(HipDouble, KernelsCompileForTheDeviceAndLaunchWithCudasParameterLayout) {
  ScopedEnv arch("FAKE_HIP_ARCH", "gfx90a:sramecc+:xnack-");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  calls();
  auto module = device.loadPtx(kScalePtx, "scale.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  EXPECT_EQ(calls(),
            "hipSetDevice;hipModuleLoadData;hipModuleGetFunction(scale);"
            "hipModuleGetGlobal(counter);");
  // An AMD GPU executable (EM_AMDGPU), code object v5 on ROCm 6 (ELFABIVERSION 3).
  EXPECT_EQ(lastImage(), "elf machine=224 abi=3");
  LoadedKernel* kernel = (*module)->kernel("scale");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ((*module)->kernel("absent"), nullptr);
  // Function attributes come from the code object (the double's answers).
  KernelResources resources = kernel->resources();
  EXPECT_EQ(resources.registersPerThread, 40);
  EXPECT_EQ(resources.localBytesPerThread, 16);
  EXPECT_EQ(resources.staticSharedBytes, 1040);
  EXPECT_EQ(resources.maxThreadsPerBlock, 256);
  EXPECT_NE((*module)->globalAddress("counter"), nullptr);
  EXPECT_EQ((*module)->globalAddress("absent"), nullptr);

  ScopedEnv sizes("FAKE_HIP_PARAM_SIZES", "8,4,4");
  LaunchConfig config;
  config.grid = {4, 2, 1};
  config.block = {64, 1, 1};
  config.dynamicSharedBytes = 128;
  ScaleParams params;
  ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipStreamCreateWithPriority(s1, flags 1, priority 0);"
            "hipModuleLaunchKernel(s1);hipStreamSynchronize(s1);");
  EXPECT_EQ(lastLaunch(),
            "grid 4,2,1 block 64,1,1 shared 128 stream lane extra null params "
            "[136 119 102 85 68 51 34 17] [7 0 0 0] [0 0 0 64]");
  module->reset();
  EXPECT_EQ(calls(), "hipSetDevice;hipModuleUnload;");
}

// A kernel reading the special registers that depend on the launch takes them as a hidden last
// argument (compiler::AmdgpuLaunchRegisters), which the backend fills from the launch.
TEST_F(HipDouble, LaunchRegistersFollowThePtxParameters) {
  ScopedEnv arch("FAKE_HIP_ARCH", "gfx90a:sramecc+:xnack-");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  constexpr const char* kSizesPtx = R"(
.version 8.1
.target sm_90
.address_size 64
.visible .entry sizes(.param .u64 out)
{
  .shared .align 16 .b8 tile[48];
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %dynamic_smem_size;
  mov.u32 %r2, %total_smem_size;
  mov.u32 %r3, %aggr_smem_size;
  mov.pred %p1, %is_explicit_cluster;
  selp.u32 %r4, 1, 0, %p1;
  st.shared.u32 [tile], %r4;
  ld.shared.u32 %r5, [tile];
  st.global.v4.u32 [%rd1], {%r1, %r2, %r3, %r5};
  ret;
}
)";
  auto module = device.loadPtx(kSizesPtx, "sizes.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  LoadedKernel* kernel = (*module)->kernel("sizes");
  ASSERT_NE(kernel, nullptr);
  calls();
  ScopedEnv sizes("FAKE_HIP_PARAM_SIZES", "8,16");
  LaunchConfig config;
  config.dynamicSharedBytes = 128;
  config.reservedSharedBytes = 1024;
  config.explicitCluster = true;
  uint64_t out = 0;
  ASSERT_TRUE(device.launch(*kernel, config, &out).ok());
  // 128 dynamic bytes after 48 static ones: 176, and 1,200 with the reserved 1 KB; explicit.
  EXPECT_EQ(lastLaunch(),
            "grid 1,1,1 block 1,1,1 shared 128 stream lane extra null params "
            "[0 0 0 0 0 0 0 0] [128 0 0 0 176 0 0 0 176 4 0 0 1 0 0 0]");
  module->reset();
}

// CUDA's priorities [greatest, 0] map onto HIP's levels counted from HIP's default, 0 (where
// other processes' default work runs; HIP's low level stays unused): with ROCm's [1, -1] the
// device offers [-1, 0], and each priority gets a lane of its own level.
TEST_F(HipDouble, StreamPrioritiesSelectLanesOfHipsLevels) {
  {
    ScopedEnv none("FAKE_HIP_NO_PRIORITIES", "1");
    HipDiscovery flat = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
    ASSERT_EQ(flat.devices.size(), 1u);
    EXPECT_EQ(flat.devices[0]->description().greatestStreamPriority, 0);
  }
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  EXPECT_EQ(device.description().greatestStreamPriority, -1);
  auto module = device.loadPtx(kScalePtx, "scale.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  LoadedKernel* kernel = (*module)->kernel("scale");
  ASSERT_NE(kernel, nullptr);
  ScaleParams params;
  LaunchConfig config;
  calls();
  config.priority = -1;
  ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipStreamCreateWithPriority(s1, flags 1, priority -1);"
            "hipModuleLaunchKernel(s1);hipStreamSynchronize(s1);");
  config.priority = 0;
  ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipStreamCreateWithPriority(s2, flags 1, priority 0);"
            "hipModuleLaunchKernel(s2);hipStreamSynchronize(s2);");
  config.priority = -1;  // its level's lane again
  ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipModuleLaunchKernel(s1);hipStreamSynchronize(s1);");
}

// A stream worker's queue (StreamQueue): with it active, kernels and copies are issued back to
// back on one lane and waited for once, at the drain; a kernel of another priority drains first
// and takes a lane of its own; a fault surfaces at the drain, naming the first operation.
TEST_F(HipDouble, AStreamQueueIssuesBackToBackAndWaitsAtItsDrain) {
  ScopedEnv count("FAKE_HIP_COUNT", "2");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 2u);
  DeviceBackend& device = *result.devices[0];
  auto module = device.loadPtx(kScalePtx, "scale.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  LoadedKernel* kernel = (*module)->kernel("scale");
  ASSERT_NE(kernel, nullptr);
  auto memory = device.allocateDevice(64);
  ASSERT_TRUE(memory.ok());
  std::unique_ptr<StreamQueue> queue = device.createStreamQueue();
  ASSERT_NE(queue, nullptr);
  ScaleParams params;
  LaunchConfig config;
  char host[64] = "payload";
  calls();
  {
    StreamQueue::Activation active(queue.get());
    ASSERT_TRUE(device.copy(*memory, host, sizeof host).ok());
    ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
    ASSERT_TRUE(device.fill(*memory, 7, 4, 8).ok());
    ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
    EXPECT_EQ(calls(),
              "hipSetDevice;hipStreamCreateWithPriority(s1, flags 1, priority 0);"
              "hipMemcpyAsync(s1);hipSetDevice;hipModuleLaunchKernel(s1);"
              "hipSetDevice;hipMemsetD32Async(s1);hipSetDevice;hipModuleLaunchKernel(s1);");
    // Another device's operations on this thread stay synchronous.
    auto other = result.devices[1]->allocateDevice(64);
    ASSERT_TRUE(other.ok());
    calls();
    ASSERT_TRUE(result.devices[1]->copy(*other, host, sizeof host).ok());
    EXPECT_EQ(calls(),
              "hipSetDevice;hipStreamCreateWithPriority(s2, flags 1, priority 0);"
              "hipMemcpyAsync(s2);hipStreamSynchronize(s2);");
    result.devices[1]->freeDevice(*other);
    calls();
    // A kernel of a higher priority: the lane so far is drained, a lane of that level taken.
    config.priority = -1;
    ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
    EXPECT_EQ(calls(),
              "hipSetDevice;hipSetDevice;hipStreamSynchronize(s1);"
              "hipStreamCreateWithPriority(s3, flags 1, priority -1);hipModuleLaunchKernel(s3);");
    // A copy goes on whatever lane the queue holds.
    ASSERT_TRUE(device.copy(*memory, host, sizeof host).ok());
    EXPECT_EQ(calls(), "hipSetDevice;hipMemcpyAsync(s3);");
  }
  ASSERT_TRUE(queue->drain().ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipStreamSynchronize(s3);");
  ASSERT_TRUE(queue->drain().ok());  // nothing queued: nothing to wait for
  EXPECT_EQ(calls(), "");
  // Without the queue active, operations finish before they return, as before.
  ASSERT_TRUE(device.copy(*memory, host, sizeof host).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemcpyAsync(s1);hipStreamSynchronize(s1);");

  // A fault of queued work is the drain's error, naming the first operation queued.
  config.priority = 0;
  {
    StreamQueue::Activation active(queue.get());
    ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
    ASSERT_TRUE(device.launch(*kernel, config, &params).ok());
    ASSERT_TRUE(device.copy(*memory, host, sizeof host).ok());
  }
  ScopedEnv fault("FAKE_HIP_SYNC_ERROR", "700");
  Status drained = queue->drain();
  ASSERT_FALSE(drained.ok());
  EXPECT_EQ(drained.error().code, ErrorCode::IllegalAddress);
  EXPECT_TRUE(contains(drained.error().message,
                       "hipStreamSynchronize for kernel 'scale' and the 2 operations queued "
                       "after it"))
      << drained.error().message;
  queue.reset();
  device.freeDevice(*memory);
}

// Peer access between two GPUs: the link as HIP reports it, none to a CPU device; HIP's
// setting is per device, so of two context pairs only the first enable and the last disable
// reach it.
TEST_F(HipDouble, PeerAccessFollowsHipsLinkAndIsEnabledOncePerDevice) {
  ScopedEnv count("FAKE_HIP_COUNT", "2");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 2u);
  DeviceBackend& first = *result.devices[0];
  DeviceBackend& second = *result.devices[1];
  calls();
  EXPECT_TRUE(first.peerLink(second).access);
  EXPECT_EQ(calls(), "hipDeviceCanAccessPeer(0, 1);");
  EXPECT_FALSE(first.peerLink(first).access);
  std::unique_ptr<DeviceBackend> cpu = createCpuBackend();
  EXPECT_FALSE(first.peerLink(*cpu).access);
  EXPECT_FALSE(first.enablePeerAccess(*cpu).ok());
  calls();
  ASSERT_TRUE(first.enablePeerAccess(second).ok());
  ASSERT_TRUE(first.enablePeerAccess(second).ok());
  EXPECT_EQ(calls(),
            "hipDeviceCanAccessPeer(0, 1);hipSetDevice;hipDeviceEnablePeerAccess(1);"
            "hipDeviceCanAccessPeer(0, 1);");
  first.disablePeerAccess(second);
  EXPECT_EQ(calls(), "");
  first.disablePeerAccess(second);
  EXPECT_EQ(calls(), "hipSetDevice;hipDeviceDisablePeerAccess(1);");
  {
    ScopedEnv none("FAKE_HIP_NO_PEERS", "1");
    EXPECT_FALSE(first.peerLink(second).access);
    Status refused = first.enablePeerAccess(second);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::NotSupported);
  }
}

// Virtual memory management through HIP's own calls, where the runtime answers a granularity
// for the GPU: addresses reserved by HIP, physical memory created on the device (exportable as a
// file descriptor when asked), mapped, given access and shared with another mapping.
TEST_F(HipDouble, VirtualMemoryGoesThroughHipsOwnCalls) {
  {
    ScopedEnv none("FAKE_HIP_NO_VMM", "1");
    HipDiscovery without = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
    ASSERT_EQ(without.devices.size(), 1u);
    EXPECT_FALSE(without.devices[0]->description().virtualMemoryManagement);
    EXPECT_EQ(without.devices[0]->virtualMemoryGranularity(false), 0u);
    auto refused = without.devices[0]->reserveAddresses(4096, 0, 0);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::NotSupported);
  }
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  EXPECT_TRUE(device.description().virtualMemoryManagement);
  EXPECT_EQ(device.virtualMemoryGranularity(false), 4096u);
  EXPECT_EQ(device.virtualMemoryGranularity(true), size_t{2} << 20);
  constexpr size_t kBytes = 2 * 4096;
  calls();
  auto first = device.reserveAddresses(kBytes, 0, 0);
  auto second = device.reserveAddresses(kBytes, 0, 0);
  ASSERT_TRUE(first.ok() && second.ok());
  auto handle = device.createPhysical(kBytes, /*exportable=*/true);
  ASSERT_TRUE(handle.ok()) << handle.error().message;
  ASSERT_TRUE(device.mapPhysical(*first, kBytes, *handle, 0).ok());
  ASSERT_TRUE(device.setAccess(*first, kBytes, {{&device, true, true}}).ok());
  std::strcpy(static_cast<char*>(*first) + 4096, "shared pages");
  EXPECT_EQ(calls(),
            "hipSetDevice;hipMemAddressReserve;hipSetDevice;hipMemAddressReserve;hipSetDevice;"
            "hipMemCreate(type 1, handle type 1, device 0);hipSetDevice;hipMemMap;hipSetDevice;"
            "hipMemSetAccess(device 0 flags 3);");
  // Exported and imported again: the same pages at the second range.
  auto fd = device.exportPhysical(*handle);
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  auto imported = device.importPhysical(*fd);
  ASSERT_TRUE(imported.ok()) << imported.error().message;
  EXPECT_EQ(fcntl(*fd, F_GETFD), -1);  // taken over and closed
  ASSERT_TRUE(device.mapPhysical(*second, kBytes, imported->handle, 0).ok());
  ASSERT_TRUE(device.setAccess(*second, kBytes, {{&device, true, false}}).ok());
  EXPECT_STREQ(static_cast<const char*>(*second) + 4096, "shared pages");
  std::string log = calls();
  EXPECT_TRUE(contains(log, "hipMemExportToShareableHandle(type 1)")) << log;
  EXPECT_TRUE(contains(log, "hipMemImportFromShareableHandle(type 1)")) << log;
  EXPECT_TRUE(contains(log, "hipMemSetAccess(device 0 flags 1)")) << log;
  for (void* base : {*first, *second}) {
    ASSERT_TRUE(device.unmapPhysical(base, kBytes).ok());
    device.freeAddresses(base, kBytes);
  }
  device.releasePhysical(*handle);
  device.releasePhysical(imported->handle);
  EXPECT_EQ(calls(),
            "hipSetDevice;hipMemUnmap;hipSetDevice;hipMemAddressFree;hipSetDevice;hipMemUnmap;"
            "hipSetDevice;hipMemAddressFree;hipSetDevice;hipMemRelease;hipSetDevice;"
            "hipMemRelease;");
}

// CUDA IPC memory handles on an AMD GPU are HIP's own: exported with hipIpcGetMemHandle, opened
// with hipIpcOpenMemHandle (with HIP's lazy-peer flag, whatever CUDA's flags: 1 from ROCm 6 on,
// 0 before, the only values each accepts) and sized with hipMemGetAddressRange, closed with
// hipIpcCloseMemHandle.
TEST_F(HipDouble, IpcMemoryHandlesAreHipsOwn) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  EXPECT_TRUE(device.description().ownIpcMemoryHandles);
  EXPECT_FALSE(device.description().sharesMemoryBetweenProcesses);
  auto memory = device.allocateDevice(4096);
  ASSERT_TRUE(memory.ok());
  calls();
  auto handle = device.exportIpcMemory(*memory);
  ASSERT_TRUE(handle.ok()) << handle.error().message;
  EXPECT_EQ(std::memcmp(handle->data(), "fakeipc", 8), 0);  // HIP's bytes, unchanged
  auto opened = device.openIpcMemory(*handle, 0);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EXPECT_EQ(opened->pointer, *memory);
  EXPECT_EQ(opened->bytes, 4096u);
  device.closeIpcMemory(opened->pointer);
  EXPECT_EQ(calls(),
            "hipSetDevice;hipIpcGetMemHandle;hipSetDevice;hipIpcOpenMemHandle(flags 1);"
            "hipMemGetAddressRange;hipSetDevice;hipIpcCloseMemHandle;");
  DeviceBackend::IpcMemoryHandle junk{};
  EXPECT_FALSE(device.openIpcMemory(junk, 0).ok());
  device.freeDevice(*memory);

  ScopedEnv rocm5("FAKE_HIP_VERSION", "50200000");
  HipDiscovery older = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(older.devices.size(), 1u);
  auto oldMemory = older.devices[0]->allocateDevice(4096);
  ASSERT_TRUE(oldMemory.ok());
  auto oldHandle = older.devices[0]->exportIpcMemory(*oldMemory);
  ASSERT_TRUE(oldHandle.ok());
  calls();
  auto oldOpened = older.devices[0]->openIpcMemory(*oldHandle, 1);
  ASSERT_TRUE(oldOpened.ok()) << oldOpened.error().message;
  EXPECT_EQ(calls(), "hipSetDevice;hipIpcOpenMemHandle(flags 0);hipMemGetAddressRange;");
  older.devices[0]->closeIpcMemory(oldOpened->pointer);
  older.devices[0]->freeDevice(*oldMemory);
}

// HIP's dispatch sizes are 32-bit counts of threads per dimension: a CUDA grid beyond that in
// one dimension is refused (NotSupported, named), not run wrapped to a smaller one.
TEST_F(HipDouble, GridsOfMoreThreadsThanHipDispatchesAreRefused) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  auto module = device.loadPtx(kScalePtx, "scale.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  LoadedKernel* kernel = (*module)->kernel("scale");
  ASSERT_NE(kernel, nullptr);
  ScaleParams params;
  LaunchConfig config;
  config.grid = {1u << 22, 1, 1};
  config.block = {1024, 1, 1};
  calls();
  Status refused = device.launch(*kernel, config, &params);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::NotSupported);
  EXPECT_TRUE(contains(refused.error().message, "4194304 blocks of 1024 threads in x"))
      << refused.error().message;
  EXPECT_EQ(calls().find("hipModuleLaunchKernel"), std::string::npos);
  config.grid = {(1u << 22) - 1, 1, 1};  // 2^32 - 1024 threads: one dispatch
  EXPECT_TRUE(device.launch(*kernel, config, &params).ok());
}

// HIP answers the errors CUDA has codes for with CUDA's numbers: each becomes the core's code.
TEST(HipErrors, HipsCodesBecomeTheCoresOwn) {
  using namespace rocuda::backends::hip;
  EXPECT_EQ(errorCodeForHip(hipErrorCooperativeLaunchTooLarge),
            ErrorCode::CooperativeLaunchTooLarge);
  EXPECT_EQ(errorCodeForHip(hipErrorContextIsDestroyed), ErrorCode::ContextIsDestroyed);
  EXPECT_EQ(errorCodeForHip(hipErrorHostMemoryAlreadyRegistered),
            ErrorCode::HostMemoryAlreadyRegistered);
  EXPECT_EQ(errorCodeForHip(hipErrorMapFailed), ErrorCode::MapFailed);
  EXPECT_EQ(errorCodeForHip(hipErrorAlreadyMapped), ErrorCode::AlreadyMapped);
  EXPECT_EQ(errorCodeForHip(hipErrorNotMapped), ErrorCode::NotMapped);
  EXPECT_EQ(errorCodeForHip(hipErrorLaunchTimeOut), ErrorCode::LaunchFailed);
  EXPECT_EQ(errorCodeForHip(hipErrorRuntimeMemory), ErrorCode::OutOfMemory);
  EXPECT_EQ(errorCodeForHip(hipErrorStreamCaptureInvalidated), ErrorCode::StreamCaptureInvalidated);
  EXPECT_EQ(errorCodeForHip(hipErrorUnknown), ErrorCode::Internal);
}

// GPUs that answer one placeholder UUID get distinct ones derived from their slots; a GPU's own
// UUID is kept.
TEST_F(HipDouble, SharedPlaceholderUuidsAreReplaced) {
  ScopedEnv count("FAKE_HIP_COUNT", "2");
  ScopedEnv uuid("FAKE_HIP_UUID", "GPU-XX");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 2u);
  const auto& first = result.devices[0]->description().uuid;
  const auto& second = result.devices[1]->description().uuid;
  EXPECT_EQ(std::memcmp(first.data(), "GPU-XX", 6), 0);
  EXPECT_NE(first, second);
}

// A library that lacks a required function is passed over for the next candidate.
TEST(HipDiscovery, AnUnusableLibraryIsPassedOverForTheNext) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_PARTIAL, ROCUDA_FAKE_HIP_FULL});
  EXPECT_EQ(result.devices.size(), 1u) << result.unavailableReason;
}

// Virtual memory management from ROCm 5.5 on, whose hipMemAllocationProp is CUDA's layout; ROCm
// 5.2's ordered its fields otherwise.
TEST_F(HipDouble, VirtualMemoryNeedsRocm55) {
  {
    ScopedEnv rocm52("FAKE_HIP_VERSION", "50200000");
    HipDiscovery older = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
    ASSERT_EQ(older.devices.size(), 1u);
    EXPECT_FALSE(older.devices[0]->description().virtualMemoryManagement);
  }
  ScopedEnv rocm55("FAKE_HIP_VERSION", "50500000");
  HipDiscovery newer = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(newer.devices.size(), 1u);
  EXPECT_TRUE(newer.devices[0]->description().virtualMemoryManagement);
}

// A mapping of one GPU's memory is given to its peers in the same hipMemSetAccess call, one
// descriptor per GPU; a CPU device is no GPU of the runtime.
TEST_F(HipDouble, MappedMemoryAccessCoversPeerGpus) {
  ScopedEnv count("FAKE_HIP_COUNT", "2");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 2u);
  DeviceBackend& owner = *result.devices[0];
  DeviceBackend& peer = *result.devices[1];
  auto base = owner.reserveAddresses(4096, 0, 0);
  auto handle = owner.createPhysical(4096, false);
  ASSERT_TRUE(base.ok() && handle.ok());
  ASSERT_TRUE(owner.mapPhysical(*base, 4096, *handle, 0).ok());
  calls();
  ASSERT_TRUE(owner.setAccess(*base, 4096, {{&owner, true, true}, {&peer, true, false}}).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemSetAccess(device 0 flags 3, device 1 flags 1);");
  std::unique_ptr<DeviceBackend> cpu = createCpuBackend();
  Status refused = owner.setAccess(*base, 4096, {{&owner, true, true}, {cpu.get(), true, true}});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::NotSupported);
  ASSERT_TRUE(owner.unmapPhysical(*base, 4096).ok());
  owner.freeAddresses(*base, 4096);
  owner.releasePhysical(*handle);
}

TEST_F(HipDouble, CodeObjectVersionFollowsTheRuntime) {
  ScopedEnv version("FAKE_HIP_VERSION", "50200000");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  ASSERT_TRUE(result.devices[0]->loadPtx(kScalePtx, "scale.ptx").ok());
  EXPECT_EQ(lastImage(), "elf machine=224 abi=2");  // code object v4 for ROCm 5
  if (!canRead("ROCUDA_AMDGPU_CODE_OBJECT")) GTEST_SKIP();
  ScopedEnv forced("ROCUDA_AMDGPU_CODE_OBJECT", "5");
  ASSERT_TRUE(result.devices[0]->loadPtx(kScalePtx, "scale.ptx").ok());
  EXPECT_EQ(lastImage(), "elf machine=224 abi=3");
}

TEST_F(HipDouble, LoadAndLaunchErrorsNameTheModuleKernelAndHipError) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];

  auto invalid = device.loadPtx(".version 7.0\n.target sm_75\nbogus;\n", "bad.ptx");
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().code, ErrorCode::InvalidPtx);
  EXPECT_FALSE(contains(calls(), "hipModuleLoadData"));  // nothing reaches HIP

  {
    ScopedEnv load("FAKE_HIP_LOAD_ERROR", "200");
    auto refused = device.loadPtx(kScalePtx, "scale.ptx");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, ErrorCode::InvalidImage);
    EXPECT_TRUE(contains(refused.error().message, "hipModuleLoadData of module 'scale.ptx'"))
        << refused.error().message;
  }

  auto module = device.loadPtx(kScalePtx, "scale.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  LoadedKernel& kernel = *(*module)->kernel("scale");
  ScaleParams params;
  LaunchConfig config;
  {
    ScopedEnv launch("FAKE_HIP_LAUNCH_ERROR", "9");
    Status status = device.launch(kernel, config, &params);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code, ErrorCode::InvalidConfiguration);
    EXPECT_TRUE(contains(status.error().message, "hipModuleLaunchKernel of 'scale'"));
  }
  {
    ScopedEnv fault("FAKE_HIP_SYNC_ERROR", "700");
    Status status = device.launch(kernel, config, &params);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code, ErrorCode::IllegalAddress);
    EXPECT_TRUE(contains(status.error().message, "kernel 'scale'")) << status.error().message;
  }
  // ROCm 5 has no hipModuleLaunchCooperativeKernel.
  config.cooperative = true;
  calls();
  Status cooperative = device.launch(kernel, config, &params);
  ASSERT_FALSE(cooperative.ok());
  EXPECT_EQ(cooperative.error().code, ErrorCode::NotSupported);
  EXPECT_TRUE(contains(cooperative.error().message, "hipModuleLaunchCooperativeKernel"));
  EXPECT_EQ(calls(), "");
}

// Cooperative groups' grid workspace (%envreg1/%envreg2) on AMD GPUs: the module's
// __rocuda_grid_workspace points at a fresh workspace (size 8, arrival counter 0) during a
// cooperative launch, made with hipModuleLaunchCooperativeKernel (ROCm 6), and is 0 for other
// launches, as NVIDIA's driver gives ordinary launches no workspace.
TEST_F(HipDoubleRocm6, CooperativeLaunchesGetAGridWorkspace) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_ROCM6});
  ASSERT_EQ(result.devices.size(), 1u) << result.unavailableReason;
  DeviceBackend& device = *result.devices[0];
  const char* ptx = R"(.version 8.0
.target sm_75
.address_size 64
.visible .entry grid_sync(.param .u64 out)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %envreg1;
  mov.u32 %r2, %envreg2;
  st.global.v2.u32 [%rd1], {%r1, %r2};
  ret;
}
)";
  calls();
  auto module = device.loadPtx(ptx, "grid_sync.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  std::string loading = calls();
  EXPECT_TRUE(contains(loading, "hipModuleGetGlobal(__rocuda_grid_workspace);hipMalloc;"))
      << loading;
  auto* symbol = static_cast<uint64_t*>(global("__rocuda_grid_workspace"));
  ASSERT_NE(symbol, nullptr);
  LoadedKernel* kernel = (*module)->kernel("grid_sync");
  ASSERT_NE(kernel, nullptr);
  uint64_t out = 0;
  void* outPointer = &out;
  LaunchConfig config;
  config.grid = {4, 1, 1};
  config.block = {64, 1, 1};
  config.cooperative = true;
  ASSERT_TRUE(device.launch(*kernel, config, &outPointer).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipStreamCreateWithPriority(s1, flags 1, priority 0);"
            "hipMemcpyAsync(s1);hipMemcpyAsync(s1);hipModuleLaunchCooperativeKernel(s1);"
            "hipStreamSynchronize(s1);");
  EXPECT_EQ(std::string(lastLaunch()), "cooperative grid 4,1,1 block 64,1,1 shared 0");
  ASSERT_NE(*symbol, 0u);
  const auto* workspace = reinterpret_cast<const uint32_t*>(*symbol);
  EXPECT_EQ(workspace[0], 8u);  // its size
  EXPECT_EQ(workspace[1], 0u);  // grid.sync()'s arrival counter
  // A second cooperative launch gets a fresh counter; the symbol already points at it.
  const_cast<uint32_t*>(workspace)[1] = 0x80000004u;
  ASSERT_TRUE(device.launch(*kernel, config, &outPointer).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipMemcpyAsync(s1);hipModuleLaunchCooperativeKernel(s1);"
            "hipStreamSynchronize(s1);");
  EXPECT_EQ(workspace[1], 0u);
  // An ordinary launch finds no workspace; the next one needs no copy.
  config.cooperative = false;
  ASSERT_TRUE(device.launch(*kernel, config, &outPointer).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipMemcpyAsync(s1);hipModuleLaunchKernel(s1);"
            "hipStreamSynchronize(s1);");
  EXPECT_EQ(*symbol, 0u);
  ASSERT_TRUE(device.launch(*kernel, config, &outPointer).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipModuleLaunchKernel(s1);hipStreamSynchronize(s1);");
  module->reset();
  EXPECT_TRUE(contains(calls(), "hipFree;hipModuleUnload;"));
  result.devices.clear();
}

// Device malloc on AMD GPUs: a module calling malloc points its __rocuda_device_heap at its
// context's heap on the GPU, made at the context's first such launch with
// cudaLimitMallocHeapSize bytes and a fresh AmdgpuDeviceHeapHeader, shared by the context's
// modules, written into each module once, and freed with the context's heap.
TEST_F(HipDoubleRocm6, DeviceMallocUsesTheContextsHeap) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_ROCM6});
  ASSERT_EQ(result.devices.size(), 1u) << result.unavailableReason;
  DeviceBackend& device = *result.devices[0];
  const char* ptx = R"(.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b64 r) malloc(.param .b64 s);
.visible .entry allocate(.param .u64 out)
{
  .reg .b64 %rd<3>;
  {
  .param .b64 s;
  .param .b64 r;
  st.param.b64 [s], 64;
  call.uni (r), malloc, (s);
  ld.param.b64 %rd1, [r];
  }
  ld.param.u64 %rd2, [out];
  st.global.u64 [%rd2], %rd1;
  ret;
}
)";
  calls();
  auto first = device.loadPtx(ptx, "allocate.ptx");
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(contains(calls(), "hipModuleGetGlobal(__rocuda_device_heap);"));
  auto* firstSymbol = static_cast<uint64_t*>(global("__rocuda_device_heap"));
  ASSERT_NE(firstSymbol, nullptr);
  EXPECT_EQ(*firstSymbol, 0u);  // no heap before a launch
  LoadedKernel* kernel = (*first)->kernel("allocate");
  ASSERT_NE(kernel, nullptr);

  DeviceMallocHeap contextHeap;
  uint64_t out = 0;
  void* outPointer = &out;
  LaunchConfig config;
  config.grid = {1, 1, 1};
  config.block = {32, 1, 1};
  config.mallocHeap = &contextHeap;
  config.mallocHeapLimit = 1 << 20;
  ASSERT_TRUE(device.launch(*kernel, config, &outPointer).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipMalloc;hipMemcpy(default);hipSetDevice;hipMemcpy(default);"
            "hipSetDevice;hipStreamCreateWithPriority(s1, flags 1, priority 0);"
            "hipModuleLaunchKernel(s1);hipStreamSynchronize(s1);");
  ASSERT_NE(*firstSymbol, 0u);
  const auto* header = reinterpret_cast<const compiler::AmdgpuDeviceHeapHeader*>(*firstSymbol);
  EXPECT_EQ(header->size, uint64_t(1) << 20);
  EXPECT_EQ(header->top, sizeof(compiler::AmdgpuDeviceHeapHeader));
  for (uint64_t list : header->freeLists) EXPECT_EQ(list, 0u);
  // The next launch finds the heap made and the symbol pointing at it.
  ASSERT_TRUE(device.launch(*kernel, config, &outPointer).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipModuleLaunchKernel(s1);hipStreamSynchronize(s1);");

  // Another module of the same context gets the same heap.
  auto second = device.loadPtx(ptx, "allocate_again.ptx");
  ASSERT_TRUE(second.ok()) << second.error().message;
  auto* secondSymbol = static_cast<uint64_t*>(global("__rocuda_device_heap"));
  ASSERT_NE(secondSymbol, firstSymbol);
  calls();
  ASSERT_TRUE(device.launch(*(*second)->kernel("allocate"), config, &outPointer).ok());
  EXPECT_EQ(calls(),
            "hipSetDevice;hipMemcpy(default);hipSetDevice;hipModuleLaunchKernel(s1);"
            "hipStreamSynchronize(s1);");
  EXPECT_EQ(*secondSymbol, *firstSymbol);

  // A launch without a context heap points the module at none: malloc returns NULL.
  config.mallocHeap = nullptr;
  ASSERT_TRUE(device.launch(*kernel, config, &outPointer).ok());
  EXPECT_EQ(*firstSymbol, 0u);
  calls();

  // The context's reset frees the heap; a heap that cannot be allocated fails the launch.
  contextHeap.release();
  EXPECT_EQ(calls(), "hipSetDevice;hipFree;");
  config.mallocHeap = &contextHeap;
  {
    ScopedEnv full("FAKE_HIP_MALLOC_ERROR", "2");  // hipErrorOutOfMemory
    Status status = device.launch(*kernel, config, &outPointer);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code, ErrorCode::OutOfMemory) << status.error().message;
    EXPECT_TRUE(contains(status.error().message, "device heap")) << status.error().message;
  }
  first->reset();
  second->reset();
  result.devices.clear();
}

// Texture and surface objects on AMD GPUs: kernels read the object's views in device memory
// (one allocation: the view, then its mipmap levels, `mipLevels` pointing at the copies); the
// handle is that address, given back with hipFree. A view without levels keeps none.
TEST_F(HipDoubleRocm6, TextureViewsLiveInDeviceMemory) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_ROCM6});
  ASSERT_EQ(result.devices.size(), 1u) << result.unavailableReason;
  DeviceBackend& device = *result.devices[0];
  uint8_t texels[64] = {};
  std::vector<support::TextureView> levels(2);
  levels[0].width = 8;
  levels[1].width = 4;
  support::TextureView view;
  view.width = 8;
  view.data = texels;
  view.levels = 2;
  view.mipLevels = levels.data();
  for (auto& level : levels) level.mipLevels = levels.data();
  calls();
  auto placed = device.placeTextureViews(view, levels);
  ASSERT_TRUE(placed.ok()) << placed.error().message;
  EXPECT_EQ(calls(), "hipSetDevice;hipMalloc;hipMemcpy(default);");
  const auto* views = reinterpret_cast<const support::TextureView*>(*placed);
  ASSERT_NE(views, &view);
  EXPECT_EQ(views[0].magic, support::kTextureViewMagic);
  EXPECT_EQ(views[0].data, texels);
  EXPECT_EQ(views[0].levels, 2u);
  EXPECT_EQ(views[0].mipLevels, views + 1);
  EXPECT_EQ(views[1].width, 8u);
  EXPECT_EQ(views[2].width, 4u);
  EXPECT_EQ(views[2].mipLevels, views + 1);
  device.releaseTextureViews(*placed);
  EXPECT_EQ(calls(), "hipSetDevice;hipFree;");

  support::TextureView plain;
  plain.data = texels;
  auto single = device.placeTextureViews(plain, {});
  ASSERT_TRUE(single.ok());
  EXPECT_EQ(reinterpret_cast<const support::TextureView*>(*single)->mipLevels, nullptr);
  device.releaseTextureViews(*single);
  {
    ScopedEnv full("FAKE_HIP_MALLOC_ERROR", "2");  // hipErrorOutOfMemory
    auto failed = device.placeTextureViews(plain, {});
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.error().code, ErrorCode::OutOfMemory);
  }
  result.devices.clear();
}

// A kernel launching another from the device (dynamic parallelism), as nvcc calls the device
// runtime.
constexpr const char* kLaunchingPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b64 func_retval0) __cudaCDP2GetParameterBufferV2(.param .b64 p0,
    .param .align 4 .b8 p1[12], .param .align 4 .b8 p2[12], .param .b32 p3);
.extern .func (.param .b32 func_retval0) __cudaCDP2LaunchDeviceV2(.param .b64 p0, .param .b64 p1);
.visible .entry child(.param .u64 out, .param .u32 value)
{
  ret;
}
.visible .entry parent(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  mov.u64 %rd1, child;
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd1;
  .param .align 4 .b8 p1[12];
  st.param.b32 [p1], 1;
  st.param.b32 [p1+4], 1;
  st.param.b32 [p1+8], 1;
  .param .align 4 .b8 p2[12];
  st.param.b32 [p2], 32;
  st.param.b32 [p2+4], 1;
  st.param.b32 [p2+8], 1;
  .param .b32 p3;
  st.param.b32 [p3], 0;
  .param .b64 r;
  call.uni (r), __cudaCDP2GetParameterBufferV2, (p0, p1, p2, p3);
  ld.param.b64 %rd2, [r];
  }
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd2;
  .param .b64 p1;
  st.param.b64 [p1], 0;
  .param .b32 r;
  call.uni (r), __cudaCDP2LaunchDeviceV2, (p0, p1);
  ld.param.b32 %r1, [r];
  }
  ret;
}
)";

// What the kernels of a launching module "did" in the double: each launch noted, and the records
// a kernel's threads would have written put into the module's launch buffer.
struct DeviceLaunchScript {
  void* (*global)(const char*) = nullptr;
  uint64_t childName = 0;        // the device address a parent's threads name `child` by
  std::vector<std::string> ran;  // "kernel(value)@depth"

  using Record = compiler::AmdgpuDeviceLaunchRecord;
  compiler::AmdgpuDeviceLaunchHeader* header() {
    auto* symbol = static_cast<uint64_t*>(global(compiler::kAmdgpuDeviceLaunchesSymbol));
    return reinterpret_cast<compiler::AmdgpuDeviceLaunchHeader*>(*symbol);
  }
  // A parameter buffer handed out for `child` with `value`, launched `sequence`th (0: never);
  // `paramBytes` 12 is the packed size cudaGetParameterBuffer callers ask for, 16 the buffer's.
  void write(uint32_t value, uint32_t gridX, uint32_t sequence, bool tail,
             uint32_t paramBytes = 16) {
    compiler::AmdgpuDeviceLaunchHeader* h = header();
    auto* at = reinterpret_cast<uint8_t*>(h + 1) + h->used;
    Record record;
    record.kernelName = childName;
    record.grid[0] = gridX;
    record.grid[1] = record.grid[2] = 1;
    record.block[0] = 32;
    record.block[1] = record.block[2] = 1;
    record.paramBytes = paramBytes;
    record.sequence = sequence;
    record.mode = tail ? 1 : 0;
    std::memcpy(at, &record, sizeof record);
    uint64_t out = 0x1000;
    std::memcpy(at + sizeof record, &out, 8);
    std::memcpy(at + sizeof record + 8, &value, 4);
    h->used += compiler::amdgpuDeviceLaunchRecordBytes(paramBytes);
    if (sequence != 0) ++h->launched;
  }
  static void run(const char* kernel, void** params, void* context) {
    auto& self = *static_cast<DeviceLaunchScript*>(context);
    std::string name = kernel;
    uint32_t depth = self.header()->depth;
    if (name == "parent") {
      self.ran.push_back("parent@" + std::to_string(depth));
      self.write(5, 1, 1, /*tail=*/true);
      self.write(7, 2, 2, false);
      self.write(8, 1, 0, false);  // handed out, never launched
      self.write(9, 1, 3, false, /*paramBytes=*/12);  // as cudaGetParameterBuffer's callers
      return;
    }
    uint32_t value = 0;
    std::memcpy(&value, params[1], 4);
    self.ran.push_back("child(" + std::to_string(value) + ")@" + std::to_string(depth));
    if (value == 9) self.write(11, 1, 1, false);  // a grandchild
  }
};

// The grids a kernel launched run after it, in launch order, each followed by the grids it
// launched in turn, tail launches last, with the parameters the threads wrote; a grid named
// by an address that is no kernel's fails the parent's launch.
TEST_F(HipDouble, GridsLaunchedOnTheDeviceRunAfterTheirParentInOrder) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  auto module = device.loadPtx(kLaunchingPtx, "launching.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  DeviceLaunchScript script;
  script.global = global_;
  auto* header = script.header();
  ASSERT_NE(header, nullptr);
  // The module's kernel name: a string the double's memory holds where device memory would.
  static const char childName[] = "child";
  script.childName = reinterpret_cast<uintptr_t>(childName);
  setLaunchHook(&DeviceLaunchScript::run, &script);
  LaunchConfig config;
  uint64_t out = 0x1000;
  calls();
  Status launched = device.launch(*(*module)->kernel("parent"), config, &out);
  ASSERT_TRUE(launched.ok()) << launched.error().message;
  EXPECT_EQ(script.ran, (std::vector<std::string>{"parent@0", "child(7)@1", "child(9)@1",
                                                  "child(11)@2", "child(5)@1"}));
  EXPECT_EQ(header->capacity,
            compiler::kAmdgpuPendingLaunches * (sizeof(compiler::AmdgpuDeviceLaunchRecord) + 16));
  EXPECT_EQ(lastLaunch().rfind("grid 1,1,1 block 32,1,1 shared 0 stream lane", 0), 0u)
      << lastLaunch();  // the tail launch, last

  // A record naming something else than a kernel of the module fails the launch.
  script.childName = reinterpret_cast<uintptr_t>("nothing");
  script.ran.clear();
  Status wrong = device.launch(*(*module)->kernel("parent"), config, &out);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::LaunchFailed);
  EXPECT_NE(wrong.error().message.find("not a kernel of its module"), std::string::npos);
  EXPECT_EQ(script.ran, (std::vector<std::string>{"parent@0"}));
  setLaunchHook(nullptr, nullptr);
}

// A kernel that sets a condition of the graph launch running it.
constexpr const char* kConditionPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func cudaGraphSetConditional(.param .b64 handle, .param .b32 value);
.visible .entry decide(.param .u64 handle)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [handle];
  {
  .param .b64 p0;
  st.param.b64 [p0], %rd1;
  .param .b32 p1;
  st.param.b32 [p1], 1;
  call.uni cudaGraphSetConditional, (p0, p1);
  }
  ret;
}
)";

// The graph launch running a kernel, as a test sees it.
class RecordedGraph final : public RunningGraph {
 public:
  bool setCondition(uint64_t handle, uint32_t value) override {
    if (handle > 100) return false;  // not of this graph
    values.emplace_back(handle, value);
    return true;
  }
  uint32_t launchGraph(uint64_t graphExec, uint64_t stream) override {
    launches.emplace_back(graphExec, stream);
    return graphExec == 0 ? 400 : 0;
  }
  uint64_t currentGraphExec() const override { return current; }
  std::vector<std::pair<uint64_t, uint32_t>> values;
  std::vector<std::pair<uint64_t, uint64_t>> launches;
  uint64_t current = 0;
};

// What `decide` "did" in the double: slots claimed for two handles (the slots empty before).
struct ConditionScript {
  void* (*global)(const char*) = nullptr;
  std::vector<std::pair<uint64_t, uint32_t>> claim;
  bool startedEmpty = true;
  static void run(const char*, void**, void* context) {
    auto& self = *static_cast<ConditionScript*>(context);
    auto* symbol = static_cast<uint64_t*>(self.global(compiler::kAmdgpuGraphConditionsSymbol));
    auto* slots = reinterpret_cast<compiler::AmdgpuGraphConditionSlot*>(*symbol);
    for (uint32_t i = 0; i < compiler::kAmdgpuGraphConditionSlots; ++i)
      if (slots[i].handle != 0) self.startedEmpty = false;
    for (size_t i = 0; i < self.claim.size(); ++i) {
      slots[i].handle = self.claim[i].first;
      slots[i].value = self.claim[i].second;
    }
  }
};

// cudaGraphSetConditional on an AMD GPU: the values kernels leave in the module's slots reach
// the graph launch running the kernel after it; the slots start empty for every launch.
TEST_F(HipDouble, GraphConditionsSetByKernelsReachTheGraphLaunch) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  auto module = device.loadPtx(kConditionPtx, "condition.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  ConditionScript script;
  script.global = global_;
  script.claim = {{5, 1}, {9, 0}};
  setLaunchHook(&ConditionScript::run, &script);
  RecordedGraph conditions;
  LaunchConfig config;
  config.graph = &conditions;
  uint64_t handle = 5;
  ASSERT_TRUE(device.launch(*(*module)->kernel("decide"), config, &handle).ok());
  EXPECT_EQ(conditions.values, (std::vector<std::pair<uint64_t, uint32_t>>{{5, 1}, {9, 0}}));
  // Again, with a handle not of the graph: ignored; the earlier claims were cleared first.
  script.claim = {{500, 1}};
  conditions.values.clear();
  ASSERT_TRUE(device.launch(*(*module)->kernel("decide"), config, &handle).ok());
  EXPECT_TRUE(script.startedEmpty);
  EXPECT_TRUE(conditions.values.empty());
  // Outside a graph launch: ignored too.
  config.graph = nullptr;
  EXPECT_TRUE(device.launch(*(*module)->kernel("decide"), config, &handle).ok());
  setLaunchHook(nullptr, nullptr);
}

// A kernel that launches a graph from the device and reads %current_graph_exec.
constexpr const char* kGraphLaunchingPtx = R"(
.version 8.0
.target sm_75
.address_size 64
.extern .func (.param .b32 r) cudaGraphLaunch(.param .b64 g, .param .b64 s);

.visible .entry relaunch(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, %current_graph_exec;
  st.global.u64 [%rd1], %rd2;
  {
  .param .b64 g;
  st.param.b64 [g], %rd2;
  .param .b64 s;
  st.param.b64 [s], 0x0100000000000000;
  .param .b32 r;
  call.uni (r), cudaGraphLaunch, (g, s);
  ld.param.b32 %r1, [r];
  }
  ret;
}
)";

// What `relaunch` "did" in the double: two graph launches recorded out of order (a tail launch
// numbered 2, a fire-and-forget launch numbered 1), with the launch's registers and whether the
// header said the grid runs in a graph noted.
struct GraphLaunchScript {
  void* (*global)(const char*) = nullptr;
  uint64_t current = 0;
  uint32_t inGraph = 99;
  static void run(const char*, void** params, void* context) {
    auto& self = *static_cast<GraphLaunchScript*>(context);
    auto* symbol = static_cast<uint64_t*>(self.global(compiler::kAmdgpuDeviceLaunchesSymbol));
    auto* header = reinterpret_cast<compiler::AmdgpuDeviceLaunchHeader*>(*symbol);
    self.inGraph = header->inGraph;
    compiler::AmdgpuLaunchRegisters registers;
    std::memcpy(&registers, params[1], sizeof registers);  // after the one PTX parameter
    self.current = registers.currentGraphExec;
    auto* at = reinterpret_cast<uint8_t*>(header + 1);
    uint32_t sequence = 2;
    for (uint32_t mode : {1u, 2u}) {
      compiler::AmdgpuDeviceLaunchRecord record;
      record.kernelName = 0xA0 + mode;
      record.sequence = sequence--;
      record.mode = compiler::kAmdgpuGraphLaunchMode + mode;
      std::memcpy(at + header->used, &record, sizeof record);
      header->used += compiler::amdgpuDeviceLaunchRecordBytes(0);
      ++header->launched;
    }
    // An update of a device-updatable node's parameters: 4 bytes at offset 8, numbered 3.
    compiler::AmdgpuDeviceLaunchRecord update;
    update.kernelName = 0xD0;
    update.grid[0] = 8;
    update.paramBytes = 4;
    update.sequence = 3;
    update.mode = compiler::kAmdgpuNodeUpdateMode + 2;
    std::memcpy(at + header->used, &update, sizeof update);
    uint32_t value = 77;
    std::memcpy(at + header->used + sizeof update, &value, 4);
    header->used += compiler::amdgpuDeviceLaunchRecordBytes(4);
    ++header->launched;
  }
};

// Device code's node updates, as a test sees them.
struct RecordedNodeUpdates final : DeviceNodeUpdates {
  uint32_t setParam(uint64_t node, uint64_t offset, const void* value,
                    uint64_t size) const override {
    uint32_t word = 0;
    if (size == 4) std::memcpy(&word, value, 4);
    params.push_back({node, offset, size, word});
    return 0;
  }
  uint32_t setEnabled(uint64_t, bool) const override { return 1; }
  uint32_t setGridDim(uint64_t, const std::array<uint32_t, 3>&) const override { return 1; }
  mutable std::vector<std::array<uint64_t, 4>> params;
};

// cudaGraphLaunch on an AMD GPU: the records the kernel's threads leave reach the graph launch
// running the grid after it, in launch order with their launch modes, and node updates reach
// the core's; the grid learns its graph (%current_graph_exec, a launch register) and whether it
// runs in one (outside: no launches).
TEST_F(HipDouble, GraphsLaunchedOnTheDeviceReachTheGraphLaunch) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  auto module = device.loadPtx(kGraphLaunchingPtx, "graph_launching.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  EXPECT_TRUE((*module)->kernel("relaunch")->info().readsLaunchRegisters);
  GraphLaunchScript script;
  script.global = global_;
  setLaunchHook(&GraphLaunchScript::run, &script);
  RecordedGraph graph;
  graph.current = 0x5000;
  RecordedNodeUpdates updates;
  LaunchConfig config;
  config.graph = &graph;
  config.nodeUpdates = &updates;
  uint64_t out = 0x1000;
  ASSERT_TRUE(device.launch(*(*module)->kernel("relaunch"), config, &out).ok());
  EXPECT_EQ(script.inGraph, 1u);
  EXPECT_EQ(script.current, 0x5000u);
  EXPECT_EQ(graph.launches, (std::vector<std::pair<uint64_t, uint64_t>>{
                                {0xA2, uint64_t{2} << 56}, {0xA1, uint64_t{1} << 56}}));
  // The node update record reaches the core's updates with its bytes.
  EXPECT_EQ(updates.params, (std::vector<std::array<uint64_t, 4>>{{0xD0, 8, 4, 77}}));
  config.graph = nullptr;
  ASSERT_TRUE(device.launch(*(*module)->kernel("relaunch"), config, &out).ok());
  EXPECT_EQ(script.inGraph, 0u);
  EXPECT_EQ(script.current, 0u);
  setLaunchHook(nullptr, nullptr);
}

constexpr const char* kPrintingPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 f, .param .b64 a);
.global .align 1 .b8 $str[8] = {116, 105, 100, 32, 37, 100, 10, 0};
.visible .entry hello()
{
  .local .align 8 .b8 depot[8];
  .reg .b32 %r<3>;
  .reg .b64 %rd<6>;
  mov.u64 %rd1, depot;
  cvta.local.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  st.local.u32 [%rd1], %r1;
  mov.u64 %rd3, $str;
  cvta.global.u64 %rd4, %rd3;
  {
  .param .b64 f;
  st.param.b64 [f], %rd4;
  .param .b64 a;
  st.param.b64 [a], %rd2;
  .param .b32 r;
  call.uni (r), vprintf, (f, a);
  ld.param.b32 %r2, [r];
  }
  ret;
}
)";

TEST_F(HipDouble, PrintingModulesGetABufferThatEachLaunchDrains) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  calls();
  auto module = device.loadPtx(kPrintingPtx, "hello.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  EXPECT_EQ(
      calls(),
      "hipSetDevice;hipModuleLoadData;"
      "hipModuleGetGlobal(__rocuda_printf_buffer);hipModuleGetGlobal(__rocuda_printf_formats);"
      "hipMemcpy(default);hipMalloc;hipMemcpy(default);hipMemcpy(default);"
      "hipModuleGetFunction(hello);hipModuleGetGlobal($str);");
  // The module's buffer symbol points at a header announcing 1 MiB of room.
  auto* symbol = static_cast<uint64_t**>(global("__rocuda_printf_buffer"));
  ASSERT_NE(symbol, nullptr);
  uint64_t* header = *symbol;
  ASSERT_NE(header, nullptr);
  EXPECT_EQ(header[0], 0u);
  EXPECT_EQ(header[1], uint64_t(1) << 20);

  // What a kernel would have written: one record naming a format the module does not have (the
  // double's formats symbol holds 256 empty ones).
  uint32_t record[4] = {4, 1000, 0, 0};
  std::memcpy(header + 3, record, sizeof record);
  header[0] = sizeof record;
  testing::internal::CaptureStdout();
  LaunchConfig config;
  ASSERT_TRUE(device.launch(*(*module)->kernel("hello"), config, nullptr).ok());
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "[rocuda: malformed printf record at offset 0]\n");
  EXPECT_EQ(header[0], 0u);  // emptied for the next launch
  EXPECT_EQ(header[1], uint64_t(1) << 20);

  // cudaLimitPrintfFifoSize: a launch with another limit gets a new empty buffer of that room
  // (the old one freed); the next launch with the same limit keeps it.
  calls();
  config.printfFifoBytes = 4096;
  ASSERT_TRUE(device.launch(*(*module)->kernel("hello"), config, nullptr).ok());
  EXPECT_TRUE(contains(calls(), "hipMalloc;hipMemcpy(default);hipMemcpy(default);hipFree;"));
  uint64_t* resized = *symbol;
  ASSERT_NE(resized, nullptr);
  EXPECT_EQ(resized[0], 0u);
  EXPECT_EQ(resized[1], 4096u);
  ASSERT_TRUE(device.launch(*(*module)->kernel("hello"), config, nullptr).ok());
  EXPECT_FALSE(contains(calls(), "hipMalloc"));
  EXPECT_EQ(*symbol, resized);

  // On a stream worker's queue, the printing kernel is still waited for before its buffer is
  // read, and with it what was queued before.
  auto memory = device.allocateDevice(64);
  ASSERT_TRUE(memory.ok());
  std::unique_ptr<StreamQueue> queue = device.createStreamQueue();
  {
    StreamQueue::Activation active(queue.get());
    ASSERT_TRUE(device.fill(*memory, 7, 4, 8).ok());
    calls();
    ASSERT_TRUE(device.launch(*(*module)->kernel("hello"), config, nullptr).ok());
  }
  std::string log = calls();
  EXPECT_TRUE(contains(log, "hipModuleLaunchKernel(s1);hipSetDevice;hipStreamSynchronize(s1);"))
      << log;
  ASSERT_TRUE(queue->drain().ok());
  EXPECT_EQ(calls(), "");
  device.freeDevice(*memory);
}

TEST(HipPrintf, RecordsFormatWithTheModulesFormats) {
  std::string formats("tid %d\n\0%s=%.1f\n\0", 17);
  std::vector<uint8_t> records(64, 0);
  auto put = [&](size_t at, uint64_t value, size_t size) { std::memcpy(&records[at], &value, size); };
  put(0, 4, 4);   // 4 argument bytes
  put(4, 0, 4);   // format 0
  put(8, 7, 4);   // tid 7
  put(16, 16, 4); // 16 argument bytes (pointer, double)
  put(20, 1, 4);  // format 1
  put(24, 0xabc, 8);
  double x = 2.5;
  std::memcpy(&records[32], &x, 8);
  auto reader = [](uint64_t address) {
    return address == 0xabc ? std::string("x") : std::string("?");
  };
  EXPECT_EQ(hip::formatPrintfRecords(records.data(), 40, formats, reader), "tid 7\nx=2.5\n");
  // A record running past the end is reported, not read.
  put(40, 100, 4);
  EXPECT_EQ(hip::formatPrintfRecords(records.data(), 48, formats, reader),
            "tid 7\nx=2.5\n[rocuda: malformed printf record at offset 40]\n");
}

// A format chosen at run time (compiler/amdgpu/lower_printf.cpp): the record holds the format's
// device address, which the host reads as it prints, then the caller's argument buffer (here 8
// bytes, of which the format reads 4).
TEST(HipPrintf, RecordsByFormatAddressReadTheFormatFromTheDevice) {
  std::vector<uint8_t> records(48, 0);
  auto put = [&](size_t at, uint64_t value, size_t size) {
    std::memcpy(&records[at], &value, size);
  };
  put(0, 16, 4);
  put(4, compiler::kAmdgpuPrintfFormatAddressIndex, 4);
  put(8, 0x5000, 8);  // the format's address
  put(16, 42, 4);
  put(24, 4, 4);  // too short to hold an address
  put(28, compiler::kAmdgpuPrintfFormatAddressIndex, 4);
  std::vector<uint64_t> read;
  auto reader = [&](uint64_t address) {
    read.push_back(address);
    return address == 0x5000 ? std::string("picked %u\n") : std::string("?");
  };
  EXPECT_EQ(hip::formatPrintfRecords(records.data(), 24, std::string_view(), reader),
            "picked 42\n");
  EXPECT_EQ(read, std::vector<uint64_t>{0x5000});
  EXPECT_EQ(hip::formatPrintfRecords(records.data(), 40, std::string_view(), reader),
            "picked 42\n[rocuda: malformed printf record at offset 24]\n");
}

// What nvcc makes of `assert(value > 0)`: the AMD code prints the message, raises the module's
// assert flag and ends the wavefront (compiler/amdgpu/lower_assert.cpp).
constexpr const char* kAssertingPtx = R"(
.version 7.0
.target sm_75
.address_size 64
.extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c, .param .b64 d, .param .b64 e);
.global .align 1 .b8 $str[4] = {118, 62, 48, 0};
.visible .entry check(.param .u32 value)
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<3>;
  ld.param.u32 %r1, [value];
  setp.gt.s32 %p1, %r1, 0;
  @%p1 bra $L__ok;
  mov.u64 %rd1, $str;
  cvta.global.u64 %rd2, %rd1;
  {
  .param .b64 a;
  st.param.b64 [a], %rd2;
  .param .b64 b;
  st.param.b64 [b], %rd2;
  .param .b32 c;
  st.param.b32 [c], 7;
  .param .b64 d;
  st.param.b64 [d], %rd2;
  .param .b64 e;
  st.param.b64 [e], 1;
  call.uni __assertfail, (a, b, c, d, e);
  }
$L__ok:
  ret;
}
)";

TEST_F(HipDouble, AFailedAssertFailsTheLaunchAndIsClearedForTheNext) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  DeviceBackend& device = *result.devices[0];
  calls();
  auto module = device.loadPtx(kAssertingPtx, "check.ptx");
  ASSERT_TRUE(module.ok()) << module.error().message;
  EXPECT_TRUE(contains(calls(), "hipModuleGetGlobal(__rocuda_assert_failed)"));
  auto* flag = static_cast<uint32_t*>(global("__rocuda_assert_failed"));
  ASSERT_NE(flag, nullptr);
  LoadedKernel& kernel = *(*module)->kernel("check");
  LaunchConfig config;
  uint32_t params = 1;
  EXPECT_TRUE(device.launch(kernel, config, &params).ok());  // flag down: no assert
  *flag = 1;                                                 // what a failing thread leaves behind
  Status failed = device.launch(kernel, config, &params);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, ErrorCode::Assert);
  EXPECT_TRUE(contains(failed.error().message, "kernel 'check' failed a device-side assert"))
      << failed.error().message;
  EXPECT_EQ(*flag, 0u);
  EXPECT_TRUE(device.launch(kernel, config, &params).ok());
}

// The assertion message comes through the printf records, as NVIDIA's driver prints it.
TEST(HipPrintf, AssertRecordPrintsCudasAssertionMessage) {
  std::string formats(device_printf::kAssertFormat);
  formats.push_back('\0');
  std::vector<uint8_t> records(64, 0);
  auto put = [&](size_t at, uint64_t value, size_t size) {
    std::memcpy(&records[at], &value, size);
  };
  put(0, 56, 4);                                                             // 56 argument bytes
  put(4, 0, 4);                                                              // format 0
  put(8, 0x100, 8);                                                          // file
  put(16, 42, 4);                                                            // line
  put(24, 0x200, 8);                                                         // function
  for (int i = 0; i < 6; ++i) put(32 + 4 * i, static_cast<uint64_t>(i), 4);  // block, thread
  put(56, 0x300, 8);                                                         // condition
  auto reader = [](uint64_t address) {
    return address == 0x100   ? std::string("k.cu")
           : address == 0x200 ? std::string("void f()")
                              : std::string("x > 0");
  };
  EXPECT_EQ(hip::formatPrintfRecords(records.data(), 64, formats, reader),
            "k.cu:42: void f(): block: [0,1,2], thread: [3,4,5] Assertion `x > 0` failed.\n");
}

TEST_F(HipDouble, GpusRocudaDoesNotTargetRefuseCodeByName) {
  ScopedEnv arch("FAKE_HIP_ARCH", "gfx803");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  auto module = result.devices[0]->loadPtx(kScalePtx, "scale.ptx");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error().code, ErrorCode::NotSupported);
  EXPECT_TRUE(contains(module.error().message, "gfx803")) << module.error().message;
  EXPECT_TRUE(contains(module.error().message, "docs/amd.md"));
}

// NVIDIA's copy of a toolkit library is looked for beside the libraries the process loaded
// first (a Python wheel's nvidia/cu13/lib, whose libnvvm made the LTO-IR to link), before
// /usr/local/cuda: here a library found only that way, by one of its symbols.
TEST(NvidiaLibrary, IsFoundBesideALibraryTheProcessLoaded) {
  ScopedEnv unset("ROCUDA_NVIDIA_NVJITLINK", "");
  std::string path = ROCUDA_FAKE_HIP_FULL;
  std::string name = path.substr(path.rfind('/') + 1);
  void* loaded = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(loaded, nullptr) << dlerror();
  static int self = 0;
  std::optional<platform::NvidiaLibrary> found =
      platform::openNvidiaLibrary("ROCUDA_NVIDIA_NVJITLINK", name, {"hipInit"}, &self);
  ASSERT_TRUE(found.has_value());
  char resolved[PATH_MAX];
  ASSERT_NE(realpath(path.c_str(), resolved), nullptr);
  EXPECT_EQ(found->path, std::string(resolved));
  EXPECT_FALSE(platform::openNvidiaLibrary("ROCUDA_NVIDIA_NVJITLINK", name, {"noSuchSymbol"}, &self)
                   .has_value());
  dlclose(found->handle);
  dlclose(loaded);
}

}  // namespace
}  // namespace rocuda::backends
