// Device memory of the CPU device: allocations of 2 MiB and more start on a 2 MiB boundary (so
// that the kernel can back them with huge pages, as GPU memory is), smaller ones on a page; all
// of an allocation is usable, and freed memory can be allocated again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "backends/device_backend.h"

namespace rocuda::backends {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

TEST(CpuDeviceMemory, LargeAllocationsStartOnA2MiBBoundary) {
  auto device = createCpuBackend();
  for (size_t bytes : {size_t{2} << 20, (size_t{3} << 20) + 5, size_t{64} << 20}) {
    auto memory = device->allocateDevice(bytes);
    ASSERT_TRUE(memory.ok()) << memory.error().message;
    uintptr_t address = reinterpret_cast<uintptr_t>(*memory);
    EXPECT_EQ(address % kHugePage, 0u) << bytes << " bytes at " << *memory;
    auto* data = static_cast<uint8_t*>(*memory);
    std::memset(data, 0x5a, bytes);
    EXPECT_EQ(data[0], 0x5a);
    EXPECT_EQ(data[bytes - 1], 0x5a);
    device->freeDevice(*memory);
  }
}

TEST(CpuDeviceMemory, SmallAllocationsArePageAlignedAndReusable) {
  auto device = createCpuBackend();
  uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto first = device->allocateDevice(100);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*first) % page, 0u);
  std::memset(*first, 1, 100);
  device->freeDevice(*first);
  auto second = device->allocateDevice(100);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*second) % page, 0u);
  device->freeDevice(*second);
}

}  // namespace
}  // namespace rocuda::backends
