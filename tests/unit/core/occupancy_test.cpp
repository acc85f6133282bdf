// The occupancy calculator (core::blocksPerMultiprocessor): the blocks of a kernel a
// multiprocessor holds, limited by threads, blocks, shared memory and registers.
#include <gtest/gtest.h>

#include "core/launch.h"

namespace rocuda::core {
namespace {

// NVIDIA's figures for an sm_80 multiprocessor (A100): 2048 threads and 32 blocks, 164 KiB of
// shared memory (163 KiB for one block), 64 Ki 32-bit registers.
backends::DeviceDescription sm80() {
  backends::DeviceDescription d;
  d.warpSize = 32;
  d.maxThreadsPerBlock = 1024;
  d.maxThreadsPerMultiprocessor = 2048;
  d.maxBlocksPerMultiprocessor = 32;
  d.sharedMemPerMultiprocessor = 167936;
  d.sharedMemPerBlockOptin = 166912;
  d.registersPerBlock = 65536;
  d.registersPerMultiprocessor = 65536;
  return d;
}

KernelFootprint footprint(int registers, uint64_t shared = 0, int maxThreads = 1024) {
  KernelFootprint k;
  k.maxThreadsPerBlock = maxThreads;
  k.staticSharedBytes = shared;
  k.registersPerThread = registers;
  return k;
}

TEST(Occupancy, ThreadsAndBlocksLimitWithoutRegisters) {
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0), 256, 0), 8);
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0), 1024, 0), 2);
  // 33 threads take two whole warps: 2048 / 64 = 32, which is also the block limit.
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0), 33, 0), 32);
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0), 32, 0), 32);
}

TEST(Occupancy, RegistersLimitTheBlocks) {
  // 64 registers x 256 threads = 16 Ki per block: four fit in 64 Ki.
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(64), 256, 0), 4);
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(32), 256, 0), 8);  // threads limit first
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(128), 128, 0), 4);
  // Registers are allocated for whole warps: 100 threads count as 128.
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(128), 100, 0), 4);
  // More registers than one block may have: the block cannot run at all.
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(255), 512, 0), 0);
}

TEST(Occupancy, SharedMemoryLimitsTheBlocks) {
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0, 48 * 1024), 128, 0), 3);
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0, 16 * 1024), 128, 32 * 1024), 3);
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0), 128, 166912), 1);
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0), 128, 166913), 0);  // over the opt-in
}

TEST(Occupancy, BlocksLargerThanTheKernelAllowsHaveNone) {
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0, 0, 96), 128, 0), 0);
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0, 0, 96), 96, 0), 21);  // 2048 / 96
  EXPECT_EQ(blocksPerMultiprocessor(sm80(), footprint(0), 0, 0), 0);
}

}  // namespace
}  // namespace rocuda::core
