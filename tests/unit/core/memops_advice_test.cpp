// Stream memory operations (wait conditions, ordering) and managed-memory advice ranges in the
// core.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/memory.h"
#include "core/stream.h"
#include "core_test_support.h"

namespace rocuda::core {
namespace {

TEST(WaitCondition, CyclicGreaterOrEqual) {
  EXPECT_TRUE(waitConditionHolds(WaitCondition::Geq, 5, 5, false));
  EXPECT_TRUE(waitConditionHolds(WaitCondition::Geq, 6, 5, false));
  EXPECT_FALSE(waitConditionHolds(WaitCondition::Geq, 4, 5, false));
  // Wrap-around: 3 is "after" 0xFFFFFFF0 in 32-bit cyclic order, but not in 64-bit order.
  EXPECT_TRUE(waitConditionHolds(WaitCondition::Geq, 3, 0xFFFFFFF0u, false));
  EXPECT_FALSE(waitConditionHolds(WaitCondition::Geq, 3, 0xFFFFFFF0u, true));
  EXPECT_TRUE(waitConditionHolds(WaitCondition::Geq, 3, ~uint64_t{0} - 4, true));
  // The upper half of a 64-bit read is ignored by a 32-bit wait.
  EXPECT_TRUE(waitConditionHolds(WaitCondition::Eq, 0xABCD00000007ull, 7, false));
  EXPECT_FALSE(waitConditionHolds(WaitCondition::Eq, 0xABCD00000007ull, 7, true));
}

TEST(WaitCondition, AndAndNor) {
  EXPECT_TRUE(waitConditionHolds(WaitCondition::And, 0b0110, 0b0100, false));
  EXPECT_FALSE(waitConditionHolds(WaitCondition::And, 0b0110, 0b1001, false));
  // NOR holds while some bit is clear in both.
  EXPECT_TRUE(waitConditionHolds(WaitCondition::Nor, 0b0110, 0b1001, false));
  EXPECT_FALSE(waitConditionHolds(WaitCondition::Nor, 0xFFFF0000u, 0x0000FFFFu, false));
  EXPECT_TRUE(waitConditionHolds(WaitCondition::Nor, 0xFFFF0000u, 0x0000FFFFu, true));
}

TEST(MemoryOperations, WaitHoldsBackLaterCommandsOfItsStreamOnly) {
  Context& context = testing::primaryContext();
  auto stream = context.createStream(1, 0);
  auto other = context.createStream(1, 0);
  ASSERT_TRUE(stream.ok() && other.ok());
  alignas(8) static std::atomic<uint32_t> flag{0}, out{0}, otherOut{0};
  MemoryOperation wait{MemoryOperation::Kind::Wait, &flag, 2, false, WaitCondition::Geq};
  MemoryOperation write{MemoryOperation::Kind::Write, &out, 1, false, WaitCondition::Geq};
  ASSERT_TRUE(enqueueMemoryOperations(**stream, {wait, write}).ok());
  MemoryOperation otherWrite{MemoryOperation::Kind::Write, &otherOut, 3, false, WaitCondition::Geq};
  ASSERT_TRUE(enqueueMemoryOperations(**other, {otherWrite}).ok());
  ASSERT_TRUE((*other)->synchronize().ok());
  EXPECT_EQ(otherOut.load(), 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE((*stream)->idle());
  EXPECT_EQ(out.load(), 0u);
  flag.store(1);  // not yet >= 2
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(out.load(), 0u);
  flag.store(2);
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(out.load(), 1u);
  EXPECT_TRUE(context.destroyStream(*stream).ok());
  EXPECT_TRUE(context.destroyStream(*other).ok());
}

TEST(MemoryOperations, DestroyingAStreamEndsAWaitThatNeverHolds) {
  Context& context = testing::primaryContext();
  auto stream = context.createStream(1, 0);
  ASSERT_TRUE(stream.ok());
  alignas(8) static std::atomic<uint32_t> never{0};
  MemoryOperation wait{MemoryOperation::Kind::Wait, &never, 1, false, WaitCondition::Eq};
  ASSERT_TRUE(enqueueMemoryOperations(**stream, {wait}).ok());
  EXPECT_TRUE(context.destroyStream(*stream).ok());  // returns instead of hanging
}

TEST(ManagedAdvice, RangesSplitAndSummarise) {
  Context& context = testing::primaryContext();
  auto memory = allocateManaged(context, 3000, 1);
  ASSERT_TRUE(memory.ok());
  auto* base = static_cast<char*>(*memory);
  MemoryLocation device0{MemoryLocation::Type::Device, 0};
  MemoryLocation host{MemoryLocation::Type::Host, 0};
  ManagedRangeSummary initial = managedRangeSummary(base, 3000);
  EXPECT_FALSE(initial.readMostly);
  ASSERT_TRUE(initial.preferred.has_value());
  EXPECT_EQ(initial.preferred->type, MemoryLocation::Type::None);

  adviseManaged(base + 1000, 1000, ManagedAdvice::SetReadMostly, {});
  EXPECT_TRUE(managedRangeSummary(base + 1000, 1000).readMostly);
  EXPECT_TRUE(managedRangeSummary(base + 1200, 10).readMostly);
  EXPECT_FALSE(managedRangeSummary(base + 999, 2).readMostly);
  EXPECT_FALSE(managedRangeSummary(base + 1999, 2).readMostly);

  adviseManaged(base, 3000, ManagedAdvice::SetPreferredLocation, device0);
  adviseManaged(base + 2000, 1000, ManagedAdvice::SetPreferredLocation, host);
  EXPECT_EQ(managedRangeSummary(base, 2000).preferred, device0);
  EXPECT_EQ(managedRangeSummary(base + 2500, 10).preferred, host);
  EXPECT_FALSE(managedRangeSummary(base, 3000).preferred.has_value());

  adviseManaged(base, 3000, ManagedAdvice::SetAccessedBy, device0);
  adviseManaged(base, 10, ManagedAdvice::SetAccessedBy, host);
  EXPECT_EQ(managedRangeSummary(base, 3000).accessedBy, 1u);
  EXPECT_EQ(managedRangeSummary(base, 10).accessedBy, 1u | (uint64_t{1} << kHostAccessBit));
  adviseManaged(base + 100, 100, ManagedAdvice::UnsetAccessedBy, device0);
  EXPECT_EQ(managedRangeSummary(base, 3000).accessedBy, 0u);

  recordManagedPrefetch(base, 3000, host);
  EXPECT_EQ(managedRangeSummary(base + 5, 2990).lastPrefetch, host);
  ASSERT_TRUE(freeDevice(base).ok());
  // Freed memory keeps no advice for whatever is allocated there next.
  ManagedRangeSummary after = managedRangeSummary(base, 3000);
  EXPECT_FALSE(after.readMostly);
  EXPECT_EQ(after.accessedBy, 0u);
  EXPECT_EQ(after.lastPrefetch, MemoryLocation{});
}

}  // namespace
}  // namespace rocuda::core
