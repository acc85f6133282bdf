#include <gtest/gtest.h>

#include "core/memory.h"
#include "core_test_support.h"

namespace rocuda::core {
namespace {

TEST(Memory, AllocationsAreTrackedAndAligned) {
  Context& context = testing::primaryContext();
  auto pointer = allocateDevice(context, 1000);
  ASSERT_TRUE(pointer.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*pointer) % 256, 0u);
  auto* bytes = static_cast<uint8_t*>(*pointer);
  auto found = findAllocation(bytes + 999);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->base, reinterpret_cast<uintptr_t>(bytes));
  EXPECT_EQ(found->size, 1000u);
  EXPECT_EQ(found->kind, AllocationKind::Device);
  EXPECT_FALSE(findAllocation(bytes + 1000).has_value()) << "one past the end is outside";
  EXPECT_TRUE(isInsideAllocation(bytes + 10, 990));
  EXPECT_FALSE(isInsideAllocation(bytes + 10, 991));
  EXPECT_FALSE(freeDevice(bytes + 1).ok()) << "only the base may be freed";
  EXPECT_TRUE(freeDevice(bytes).ok());
  auto again = freeDevice(bytes);
  ASSERT_FALSE(again.ok()) << "double free is detected";
  EXPECT_EQ(again.error().code, ErrorCode::InvalidValue);
}

TEST(Memory, HostAndDeviceFreesDoNotMix) {
  Context& context = testing::primaryContext();
  auto host = allocateHost(context, 64, 0);
  auto device = allocateDevice(context, 64);
  ASSERT_TRUE(host.ok() && device.ok());
  EXPECT_FALSE(freeDevice(*host).ok());
  EXPECT_FALSE(freeHost(*device).ok());
  EXPECT_TRUE(freeHost(*host).ok());
  EXPECT_TRUE(freeDevice(*device).ok());
}

// Registered host memory: the backend's device address (the CPU device's is the host address)
// is where kernels reach each byte; overlapping registrations are refused.
TEST(Memory, RegisteredHostRangesKnowTheirDeviceAddress) {
  Context& context = testing::primaryContext();
  alignas(64) static char pages[256];
  ASSERT_TRUE(registerHostRange(context, pages, sizeof pages, 0).ok());
  auto found = findAllocation(pages + 100);
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(found->registered);
  EXPECT_EQ(hostDeviceAddress(*found, pages + 100), reinterpret_cast<uintptr_t>(pages + 100));
  Status twice = registerHostRange(context, pages + 128, 16, 0);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::HostMemoryAlreadyRegistered);
  EXPECT_TRUE(unregisterHostRange(pages));
  EXPECT_FALSE(unregisterHostRange(pages));

  Allocation mappedElsewhere{0x10000, 0x1000, AllocationKind::Host, &context, 0};
  mappedElsewhere.deviceAddress = 0x7f0000000000;
  EXPECT_EQ(hostDeviceAddress(mappedElsewhere, reinterpret_cast<void*>(0x10010)), 0x7f0000000010u);
}

TEST(Memory, ForeignPointerIsNotAnAllocation) {
  int onStack = 0;
  EXPECT_FALSE(findAllocation(&onStack).has_value());
  EXPECT_FALSE(freeDevice(&onStack).ok());
  EXPECT_FALSE(freeDevice(nullptr).ok());
}

}  // namespace
}  // namespace rocuda::core
