// Discovery of AMD GPUs: without HIP, with Debian's real HIP runtime on a machine without an AMD
// GPU, with a runtime missing a function, and (ordering and error paths only) with an in-process
// HIP double.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/hip/hip_api.h"
#include "backends/hip/hip_backend.h"
#include "backends/hip/hip_device.h"
#include "support/env.h"

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
  void SetUp() override {
    handle_ = dlopen(ROCUDA_FAKE_HIP_FULL, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    log_ = reinterpret_cast<const char* (*)()>(dlsym(handle_, "fakeHipCallLog"));
    reset_ = reinterpret_cast<void (*)()>(dlsym(handle_, "fakeHipResetLog"));
    ASSERT_NE(log_, nullptr);
    reset_();
  }
  void TearDown() override { dlclose(handle_); }
  std::string calls() {
    std::string text = log_();
    reset_();
    return text;
  }

  void* handle_ = nullptr;
  const char* (*log_)() = nullptr;
  void (*reset_)() = nullptr;
};

TEST_F(HipDouble, InitialisesBeforeCountingAndDescribesEachDevice) {
  ScopedEnv count("FAKE_HIP_COUNT", "2");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 2u) << result.unavailableReason;
  EXPECT_TRUE(result.unavailableReason.empty());
  EXPECT_EQ(calls(),
            "hipRuntimeGetVersion;hipInit;hipGetDeviceCount;"
            "hipDeviceGetName;hipGetDeviceProperties;hipDeviceGetName;hipGetDeviceProperties;");
  const DeviceDescription& second = result.devices[1]->description();
  EXPECT_EQ(second.name, "Fake GPU 1");
  EXPECT_EQ(second.nativeTarget, "gfx1100");
  EXPECT_EQ(second.pciBus, 4);
  EXPECT_EQ(second.multiprocessorCount, 48);
}

TEST(HipDoubleRocm6, TargetNameComesFromTheR0000LayoutNeverR0600) {
  void* handle = dlopen(ROCUDA_FAKE_HIP_ROCM6, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto log = reinterpret_cast<const char* (*)()>(dlsym(handle, "fakeHipCallLog"));
  ScopedEnv arch("FAKE_HIP_ARCH", "gfx942:sramecc+:xnack-");
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_ROCM6});
  ASSERT_EQ(result.devices.size(), 1u) << result.unavailableReason;
  EXPECT_EQ(result.devices[0]->description().nativeTarget, "gfx942:sramecc+:xnack-");
  std::string calls = log();
  EXPECT_TRUE(contains(calls, "hipGetDevicePropertiesR0000;")) << calls;
  EXPECT_FALSE(contains(calls, "hipGetDeviceProperties;")) << calls;
  EXPECT_FALSE(contains(calls, "R0600")) << calls;
  dlclose(handle);
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

TEST_F(HipDouble, EveryOperationSelectsTheDeviceAndWaits) {
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
  EXPECT_EQ(calls(), "hipSetDevice;hipMemcpy(default);hipDeviceSynchronize;");
  ASSERT_TRUE(device.fill(*memory, 0xbeef, 2, 8).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemsetD16;hipDeviceSynchronize;");
  ASSERT_TRUE(device.fill(*memory, 7, 4, 8).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipMemsetD32;hipDeviceSynchronize;");
  Status odd = device.fill(*memory, 7, 3, 8);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().code, ErrorCode::InvalidValue);
  ASSERT_TRUE(device.copy2D(*memory, 16, host, 16, 8, 2).ok());
  EXPECT_EQ(calls(), "hipSetDevice;hipSetDevice;hipMemcpy2D;hipDeviceSynchronize;");
  device.freeDevice(*memory);
  EXPECT_EQ(calls(), "hipSetDevice;hipFree;");
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

TEST_F(HipDouble, CodeLoadingIsNotSupportedYet) {
  HipDiscovery result = discoverHipDevices({ROCUDA_FAKE_HIP_FULL});
  ASSERT_EQ(result.devices.size(), 1u);
  auto module = result.devices[0]->loadPtx(".version 8.0\n.target sm_86\n", "m");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.error().code, ErrorCode::NotSupported);
  EXPECT_TRUE(contains(module.error().message, "set ROCUDA_DEVICES=cpu"));
}

}  // namespace
}  // namespace rocuda::backends
