// The mapping from HIP's device attributes to Rocuda's device description, fed with the values
// of real GPUs. Sources (AMD's published specifications):
//  - ROCm "GPU hardware specifications"
//  (rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html):
//    LLVM target, compute units, wavefront size, LDS, L2 cache, VRAM.
//  - AMD product pages (amd.com/en/products/graphics/desktops/radeon/..., amd.com/en/products/
//    accelerators/instinct/mi300/mi300x.html): boost / peak engine clock, memory speed, bus width.
// HIP reports clocks in kHz; RDNA's "multiprocessors" are work-group processors (2 CUs: HIP runs
// RDNA in WGP mode, so hipDeviceAttributeMultiprocessorCount is CUs / 2 there, and
// hipDeviceAttributePhysicalMultiProcessorCount the CU count); the memory clock is the data rate
// per pin / 16 for GDDR6 (20 Gbps -> 1250 MHz) and / 4 for HBM3 (5.2 Gbps -> 1300 MHz).
#include <gtest/gtest.h>

#include "backends/hip/hip_api.h"
#include "backends/hip/hip_backend.h"

namespace rocuda::backends::hip {
namespace {

constexpr uint64_t kGiB = uint64_t(1) << 30;

struct RecordedGpu {
  const char* label;
  HipRawDevice raw;
  int computeUnits;   // published CU count
  int wavefrontSize;  // published wavefront size
};

HipRawDevice commonLimits() {
  HipRawDevice raw;
  raw.maxThreadsPerBlock = 1024;
  raw.maxBlockDim = {1024, 1024, 1024};
  raw.maxGridDim = {2147483647, 2147483647, 2147483647};
  raw.maxSharedMemoryPerBlock = 64 * 1024;  // LDS per workgroup: 64 KiB on all four
  raw.registersPerBlock = 65536;
  raw.totalConstantMemory = 2147483647;  // HIP: constant memory is ordinary global memory
  raw.canMapHostMemory = 1;
  raw.concurrentKernels = 1;
  raw.cooperativeLaunch = 1;
  raw.integrated = 0;
  return raw;
}

RecordedGpu rx6800xt() {
  RecordedGpu gpu{"Radeon RX 6800 XT", commonLimits(), 72, 32};
  HipRawDevice& raw = gpu.raw;
  raw.name = "AMD Radeon RX 6800 XT";
  raw.gcnArchName = "gfx1030";
  raw.pciBusId = "0000:0b:00.0";
  raw.totalMemory = 16 * kGiB;
  raw.multiprocessorCount = 36;  // 72 CUs in WGP mode
  raw.physicalMultiprocessorCount = 72;
  raw.clockRateKHz = 2250000;        // boost 2250 MHz
  raw.memoryClockRateKHz = 1000000;  // 16 Gbps GDDR6
  raw.memoryBusWidthBits = 256;
  raw.l2CacheBytes = 4 * 1024 * 1024;
  raw.warpSize = 32;
  return gpu;
}

RecordedGpu rx7900xtx() {
  RecordedGpu gpu{"Radeon RX 7900 XTX", commonLimits(), 96, 32};
  HipRawDevice& raw = gpu.raw;
  raw.name = "AMD Radeon RX 7900 XTX";
  raw.gcnArchName = "gfx1100";
  raw.pciBusId = "0000:03:00.0";
  raw.totalMemory = 24 * kGiB;
  raw.multiprocessorCount = 48;
  raw.physicalMultiprocessorCount = 96;
  raw.clockRateKHz = 2500000;        // boost 2500 MHz
  raw.memoryClockRateKHz = 1250000;  // 20 Gbps GDDR6
  raw.memoryBusWidthBits = 384;
  raw.l2CacheBytes = 6 * 1024 * 1024;
  raw.warpSize = 32;
  return gpu;
}

RecordedGpu rx9070xt() {
  RecordedGpu gpu{"Radeon RX 9070 XT", commonLimits(), 64, 32};
  HipRawDevice& raw = gpu.raw;
  raw.name = "AMD Radeon RX 9070 XT";
  raw.gcnArchName = "gfx1201";
  raw.pciBusId = "0000:2d:00.0";
  raw.totalMemory = 16 * kGiB;
  raw.multiprocessorCount = 32;
  raw.physicalMultiprocessorCount = 64;
  raw.clockRateKHz = 2970000;        // boost 2970 MHz
  raw.memoryClockRateKHz = 1250000;  // 20 Gbps GDDR6
  raw.memoryBusWidthBits = 256;
  raw.l2CacheBytes = 8 * 1024 * 1024;
  raw.warpSize = 32;
  return gpu;
}

RecordedGpu mi300x() {
  RecordedGpu gpu{"Instinct MI300X", commonLimits(), 304, 64};
  HipRawDevice& raw = gpu.raw;
  raw.name = "AMD Instinct MI300X";
  raw.gcnArchName = "gfx942:sramecc+:xnack-";
  raw.pciBusId = "0000:c1:00.0";
  raw.hasUuid = true;
  raw.uuid = {'8', 'f', '3', 'a', '1', 'c', '2', 'b', '9', 'e', '4', 'd', '7', '0', '6', '5'};
  raw.totalMemory = 192 * kGiB;
  raw.multiprocessorCount = 304;  // CDNA has no WGP mode: CUs
  raw.physicalMultiprocessorCount = 304;
  raw.clockRateKHz = 2100000;        // peak engine clock 2100 MHz
  raw.memoryClockRateKHz = 1300000;  // 5.2 Gbps HBM3
  raw.memoryBusWidthBits = 8192;
  raw.l2CacheBytes = 4 * 1024 * 1024;  // 4 MiB per XCD
  raw.warpSize = 64;
  raw.managedMemory = 1;
  return gpu;
}

class RecordedGpuTest : public ::testing::TestWithParam<RecordedGpu (*)()> {};

TEST_P(RecordedGpuTest, MapsPublishedValues) {
  RecordedGpu gpu = GetParam()();
  const HipRawDevice& raw = gpu.raw;
  DeviceDescription d = describeHipDevice(raw, 8, 6);
  SCOPED_TRACE(gpu.label);
  EXPECT_EQ(d.backendName, "hip");
  EXPECT_EQ(d.name, raw.name);
  EXPECT_EQ(d.nativeTarget, raw.gcnArchName);  // feature suffixes kept: the compiler needs them
  EXPECT_EQ(d.totalMemory, raw.totalMemory);
  EXPECT_EQ(d.clockRateKHz, raw.clockRateKHz);
  EXPECT_EQ(d.memoryClockRateKHz, raw.memoryClockRateKHz);
  EXPECT_EQ(d.memoryBusWidthBits, raw.memoryBusWidthBits);
  EXPECT_EQ(d.l2CacheBytes, raw.l2CacheBytes);
  EXPECT_EQ(d.multiprocessorCount, raw.multiprocessorCount);
  EXPECT_EQ(raw.physicalMultiprocessorCount, gpu.computeUnits);
  EXPECT_EQ(nativeWavefrontSize(processorOf(raw.gcnArchName)), gpu.wavefrontSize);
  EXPECT_EQ(raw.warpSize, gpu.wavefrontSize);
  EXPECT_EQ(d.warpSize, 32);  // a CUDA warp, on wave32 and wave64 hardware alike
  EXPECT_TRUE(isSupportedProcessor(processorOf(raw.gcnArchName)));
  // 64 KiB of LDS: 48 KiB without opt-in, as CUDA programs expect; all of it with opt-in.
  EXPECT_EQ(d.sharedMemPerBlock, 48 * 1024);
  EXPECT_EQ(d.sharedMemPerBlockOptin, 64 * 1024);
  EXPECT_GE(d.sharedMemPerMultiprocessor, 64 * 1024);
  EXPECT_EQ(d.maxThreadsPerBlock, 1024);
  EXPECT_EQ(d.maxBlockDim, (std::array<int, 3>{1024, 1024, 64}));
  EXPECT_EQ(d.maxGridDim, (std::array<int, 3>{2147483647, 65535, 65535}));
  EXPECT_EQ(d.totalConstantMemory, 64 * 1024);
  EXPECT_EQ(d.computeCapabilityMajor, 8);
  EXPECT_EQ(d.computeCapabilityMinor, 6);
  int domain = -1, bus = -1, device = -1;
  ASSERT_TRUE(parsePciBusId(raw.pciBusId, &domain, &bus, &device));
  EXPECT_EQ(d.pciBus, bus);  // attributes not reported: taken from the bus id string
  EXPECT_EQ(d.pciDevice, device);
  EXPECT_FALSE(d.integrated);
  EXPECT_TRUE(d.canMapHostMemory);
  // Not an attribute: the device probes HIP's own calls (HipDevice::probeVirtualMemory).
  EXPECT_FALSE(d.virtualMemoryManagement);
  if (raw.hasUuid) {
    EXPECT_EQ(d.uuid, raw.uuid);
  }
}

INSTANTIATE_TEST_SUITE_P(RealGpus, RecordedGpuTest,
                         ::testing::Values(&rx6800xt, &rx7900xtx, &rx9070xt, &mi300x));

TEST(HipMapping, ComputeCapabilityIsTheConfiguredOne) {
  DeviceDescription d = describeHipDevice(rx7900xtx().raw, 9, 0);
  EXPECT_EQ(d.computeCapabilityMajor, 9);
  EXPECT_EQ(d.computeCapabilityMinor, 0);
}

TEST(HipMapping, UuidWithoutHipsIsStableAndPerBoard) {
  HipRawDevice a = rx7900xtx().raw;
  HipRawDevice b = a;
  b.pciBusId = "0000:04:00.0";
  EXPECT_EQ(describeHipDevice(a, 8, 6).uuid, describeHipDevice(a, 8, 6).uuid);
  EXPECT_NE(describeHipDevice(a, 8, 6).uuid, describeHipDevice(b, 8, 6).uuid);
  EXPECT_NE(describeHipDevice(a, 8, 6).uuid, (std::array<uint8_t, 16>{}));
}

TEST(HipMapping, ReportedPciAttributesWin) {
  HipRawDevice raw = rx6800xt().raw;
  raw.pciDomain = 1;
  raw.pciBus = 0x42;
  raw.pciDevice = 3;
  DeviceDescription d = describeHipDevice(raw, 8, 6);
  EXPECT_EQ(d.pciDomain, 1);
  EXPECT_EQ(d.pciBus, 0x42);
  EXPECT_EQ(d.pciDevice, 3);
}

TEST(HipMapping, MissingAttributesGetSafeDefaults) {
  HipRawDevice raw;
  raw.gcnArchName = "gfx90a:sramecc+:xnack-";
  DeviceDescription d = describeHipDevice(raw, 8, 6);
  EXPECT_EQ(d.name, "AMD GPU (gfx90a)");
  EXPECT_EQ(d.multiprocessorCount, 1);
  EXPECT_EQ(d.maxThreadsPerBlock, 1024);
  EXPECT_EQ(d.sharedMemPerBlock, 48 * 1024);
  EXPECT_EQ(d.sharedMemPerBlockOptin, 64 * 1024);
  EXPECT_EQ(d.l2CacheBytes, 0);
  EXPECT_EQ(d.warpSize, 32);
}

TEST(HipTargets, ProcessorAndWavefront) {
  EXPECT_EQ(processorOf("gfx942:sramecc+:xnack-"), "gfx942");
  EXPECT_EQ(processorOf("gfx1151"), "gfx1151");
  EXPECT_EQ(processorOf(""), "");
  EXPECT_EQ(processorOf("sm_86"), "");
  EXPECT_EQ(nativeWavefrontSize("gfx90a"), 64);
  EXPECT_EQ(nativeWavefrontSize("gfx1150"), 32);
  EXPECT_EQ(nativeWavefrontSize("gfx1200"), 32);
  EXPECT_EQ(nativeWavefrontSize("x86_64"), 0);
  for (const char* target : {"gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151",
                             "gfx1200", "gfx1201", "gfx90a", "gfx942"})
    EXPECT_TRUE(isSupportedProcessor(target)) << target;
  EXPECT_FALSE(isSupportedProcessor("gfx906"));
  EXPECT_FALSE(isSupportedProcessor("gfx1100:xnack-"));
}

TEST(HipTargets, PciBusId) {
  int domain = -1, bus = -1, device = -1;
  EXPECT_TRUE(parsePciBusId("0001:c1:1f.0", &domain, &bus, &device));
  EXPECT_EQ(domain, 1);
  EXPECT_EQ(bus, 0xc1);
  EXPECT_EQ(device, 0x1f);
  EXPECT_FALSE(parsePciBusId("", &domain, &bus, &device));
  EXPECT_FALSE(parsePciBusId("0000:03:00", &domain, &bus, &device));
  EXPECT_FALSE(parsePciBusId("0000:03:00.0trailing", &domain, &bus, &device));
}

// The hipDeviceAttribute_t numbers, as recorded from ROCm 5.2's hip_runtime_api.h (Debian's
// libamdhip64-dev) and ROCm 7's (ROCm/rocm-systems projects/hip): the same for every one read.
TEST(HipAttributeTable, MatchesRocm5And7Headers) {
  for (int version : {50000000, 50221153, 60200000, 70000000, 70100000}) {
    const HipAttributeTable* table = attributeTableForVersion(version);
    ASSERT_NE(table, nullptr) << version;
    EXPECT_EQ(table->clockRate, 5);
    EXPECT_EQ(table->l2CacheSize, 19);
    EXPECT_EQ(table->maxBlockDimX, 26);
    EXPECT_EQ(table->maxGridDimZ, 31);
    EXPECT_EQ(table->maxThreadsPerBlock, 56);
    EXPECT_EQ(table->memoryBusWidth, 59);
    EXPECT_EQ(table->memoryClockRate, 60);
    EXPECT_EQ(table->multiprocessorCount, 63);
    EXPECT_EQ(table->pciBusId, 67);
    EXPECT_EQ(table->pciDomainId, 69);
    EXPECT_EQ(table->maxSharedMemoryPerBlock, 74);
    EXPECT_EQ(table->totalConstantMemory, 83);
    EXPECT_EQ(table->warpSize, 87);
    EXPECT_EQ(table->maxSharedMemoryPerMultiprocessor, 10002);
    EXPECT_EQ(table->physicalMultiProcessorCount, 10015);
  }
  EXPECT_EQ(attributeTableForVersion(40200000), nullptr);  // ROCm 4.2: not supported
  EXPECT_EQ(attributeTableForVersion(0), nullptr);
  EXPECT_EQ(hipVersionString(50221153), "5.2.21153");
}

TEST(HipErrors, TranslateToRocudaCodes) {
  EXPECT_EQ(errorCodeForHip(hipErrorOutOfMemory), ErrorCode::OutOfMemory);
  EXPECT_EQ(errorCodeForHip(hipErrorInvalidValue), ErrorCode::InvalidValue);
  EXPECT_EQ(errorCodeForHip(hipErrorNoDevice), ErrorCode::NoDevice);
  EXPECT_EQ(errorCodeForHip(hipErrorInvalidDevice), ErrorCode::InvalidDevice);
  EXPECT_EQ(errorCodeForHip(hipErrorIllegalAddress), ErrorCode::IllegalAddress);
  EXPECT_EQ(errorCodeForHip(hipErrorLaunchFailure), ErrorCode::LaunchFailed);
  EXPECT_EQ(errorCodeForHip(hipErrorNotSupported), ErrorCode::NotSupported);
  EXPECT_EQ(errorCodeForHip(hipErrorNotReady), ErrorCode::NotReady);
  EXPECT_EQ(errorCodeForHip(12345), ErrorCode::Internal);
}

TEST(HipLibrarySearch, OrderFollowsTheDocumentedPlaces) {
  auto list = hipLibraryCandidates("/custom/libamdhip64.so.6", "/opt/rocm-6.2.0");
  ASSERT_GE(list.size(), 4u);
  EXPECT_EQ(list.front(), "/custom/libamdhip64.so.6");
  auto position = [&](const std::string& entry) {
    return std::find(list.begin(), list.end(), entry) - list.begin();
  };
  auto rocmPath = position("/opt/rocm-6.2.0/lib/libamdhip64.so");
  auto optRocm = position("/opt/rocm/lib/libamdhip64.so.7");
  auto loaderPath = position("libamdhip64.so.5");
  EXPECT_LT(rocmPath, optRocm);
  EXPECT_LT(optRocm, loaderPath);
  EXPECT_LT(loaderPath, static_cast<long>(list.size()));
  EXPECT_EQ(list.back(), "libamdhip64.so.5");  // newest first, the loader's path last
  // Without settings: /opt/rocm/lib and the loader path only.
  auto plain = hipLibraryCandidates("", "");
  EXPECT_EQ(plain.front(), "/opt/rocm/lib/libamdhip64.so");
  EXPECT_EQ(plain.size(), 8u);
}

}  // namespace
}  // namespace rocuda::backends::hip
