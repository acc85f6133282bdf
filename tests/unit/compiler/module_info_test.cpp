// ModuleInfo: binary round trip and rejection of malformed bytes.
#include <gtest/gtest.h>

#include "compiler/compiler.h"

namespace rocuda::compiler {
namespace {

ModuleInfo sample() {
  ModuleInfo info;
  KernelInfo k;
  k.name = "kernel_one";
  k.params = {{0, 8, 8}, {8, 4, 4}, {16, 24, 8}};
  k.paramBufferSize = 40;
  k.staticSharedBytes = 1024;
  k.dynamicSharedOffset = 1024;
  k.localBytesPerThread = 64;
  k.maxntid = {256, 1, 1};
  k.reqntid = {0, 0, 0};
  k.reqnctapercluster = {4, 2, 1};
  k.usesBarriers = true;
  k.usesWarpCollectives = true;
  k.launchesGraphs = true;
  k.updatesGraphNodes = true;
  k.cpuChainsBlocks = true;
  k.cpuExecution = CpuExecution::Continuation;
  k.cpuFrameBytes = 48;
  k.cpuUniformFrameBytes = 32;
  k.cpuLockstep = true;
  k.cpuLockstepFrameBytes = 16;
  k.cpuLockstepUniformFrameBytes = 64;
  WarpWaitSite shuffle;
  shuffle.op = 1;
  shuffle.constants = WarpWaitSite::kMode | WarpWaitSite::kMask;
  shuffle.mode = 3;
  shuffle.mask = 0xffff0000u;
  k.cpuWarpSites = {shuffle, WarpWaitSite{}};
  info.kernels.push_back(k);
  KernelInfo k2;
  k2.name = "";
  k2.cpuSlowPathReason = "a reason";
  k2.launchesGrids = true;
  info.kernels.push_back(k2);
  info.globals.push_back({"coeffs", ptx::StateSpace::Const, 16, true});
  info.globals.push_back({"table", ptx::StateSpace::Global, 1ull << 40});
  info.kernelsCompiledSeparately = true;
  return info;
}

TEST(ModuleInfo, RoundTrip) {
  ModuleInfo info = sample();
  std::vector<uint8_t> bytes = info.serialize();
  auto back = ModuleInfo::deserialize(bytes.data(), bytes.size());
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->kernels.size(), 2u);
  const KernelInfo& k = back->kernels[0];
  EXPECT_EQ(k.name, "kernel_one");
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[2].offset, 16u);
  EXPECT_EQ(k.params[2].size, 24u);
  EXPECT_EQ(k.params[2].alignment, 8u);
  EXPECT_EQ(k.paramBufferSize, 40u);
  EXPECT_EQ(k.staticSharedBytes, 1024u);
  EXPECT_EQ(k.localBytesPerThread, 64u);
  EXPECT_EQ(k.maxntid[0], 256u);
  EXPECT_EQ(k.reqnctapercluster[0], 4u);
  EXPECT_EQ(k.reqnctapercluster[1], 2u);
  EXPECT_TRUE(k.usesBarriers);
  EXPECT_TRUE(k.usesWarpCollectives);
  EXPECT_FALSE(back->kernels[1].usesBarriers);
  EXPECT_FALSE(back->kernels[1].usesWarpCollectives);
  EXPECT_FALSE(k.launchesGrids);
  EXPECT_TRUE(k.launchesGraphs);
  EXPECT_TRUE(k.updatesGraphNodes);
  EXPECT_TRUE(k.cpuChainsBlocks);
  EXPECT_TRUE(back->kernels[1].launchesGrids);
  EXPECT_FALSE(back->kernels[1].launchesGraphs);
  EXPECT_FALSE(back->kernels[1].updatesGraphNodes);
  EXPECT_FALSE(back->kernels[1].cpuChainsBlocks);
  EXPECT_EQ(k.cpuExecution, CpuExecution::Continuation);
  EXPECT_EQ(k.cpuFrameBytes, 48u);
  EXPECT_EQ(k.cpuUniformFrameBytes, 32u);
  EXPECT_TRUE(k.cpuLockstep);
  EXPECT_EQ(k.cpuLockstepFrameBytes, 16u);
  EXPECT_EQ(k.cpuLockstepUniformFrameBytes, 64u);
  ASSERT_EQ(k.cpuWarpSites.size(), 2u);
  EXPECT_EQ(k.cpuWarpSites[0].op, 1);
  EXPECT_EQ(k.cpuWarpSites[0].constants, WarpWaitSite::kMode | WarpWaitSite::kMask);
  EXPECT_EQ(k.cpuWarpSites[0].mode, 3);
  EXPECT_EQ(k.cpuWarpSites[0].mask, 0xffff0000u);
  EXPECT_EQ(k.cpuWarpSites[1].op, -1);
  EXPECT_EQ(back->kernels[1].cpuExecution, CpuExecution::ThreadEntry);
  EXPECT_EQ(back->kernels[1].cpuSlowPathReason, "a reason");
  ASSERT_EQ(back->globals.size(), 2u);
  EXPECT_EQ(back->globals[1].size, 1ull << 40);
  EXPECT_EQ(back->globals[0].space, ptx::StateSpace::Const);
  EXPECT_TRUE(back->globals[0].initialized);
  EXPECT_FALSE(back->globals[1].initialized);
  EXPECT_EQ(back->findKernel("kernel_one"), &back->kernels[0]);
  EXPECT_EQ(back->findGlobal("table"), &back->globals[1]);
  EXPECT_EQ(back->findGlobal("nope"), nullptr);
  EXPECT_TRUE(back->kernelsCompiledSeparately);
  EXPECT_EQ(back->serialize(), bytes);
}

TEST(ModuleInfo, EveryTruncationIsRejected) {
  std::vector<uint8_t> bytes = sample().serialize();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = ModuleInfo::deserialize(bytes.data(), n);
    EXPECT_FALSE(r.ok()) << "prefix of " << n << " bytes accepted";
  }
}

TEST(ModuleInfo, CorruptBytesNeverCrash) {
  std::vector<uint8_t> bytes = sample().serialize();
  uint32_t seed = 12345;
  int accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> copy = bytes;
    for (int k = 0; k < 3; ++k) {
      seed = seed * 1103515245u + 12345u;
      copy[(seed >> 8) % copy.size()] ^= static_cast<uint8_t>(seed >> 24 | 1);
    }
    auto r = ModuleInfo::deserialize(copy.data(), copy.size());
    if (r.ok()) ++accepted;  // flips inside names or numbers are legitimately accepted
  }
  EXPECT_LT(accepted, 2000);
  EXPECT_FALSE(ModuleInfo::deserialize(nullptr, 0).ok());
  std::vector<uint8_t> huge = {'R', 'C', 'M', 'I', 2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  EXPECT_FALSE(ModuleInfo::deserialize(huge.data(), huge.size()).ok());
  std::vector<uint8_t> trailing = bytes;
  trailing.push_back(0);
  EXPECT_FALSE(ModuleInfo::deserialize(trailing.data(), trailing.size()).ok());
}

}  // namespace
}  // namespace rocuda::compiler
