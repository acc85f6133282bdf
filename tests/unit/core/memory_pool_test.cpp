#include "core/memory_pool.h"

#include <gtest/gtest.h>

#include "core/memory.h"
#include "core_test_support.h"

namespace rocuda::core {
namespace {

TEST(MemoryPool, CountsUseAndHighWaterMark) {
  Context& context = testing::primaryContext();
  MemoryPool pool(context.device(), /*isDefault=*/false, /*maxSize=*/0);
  auto a = allocateFromPool(context, pool, 1000);
  auto b = allocateFromPool(context, pool, 3000);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::UsedMemCurrent), 4000u);
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 4000u);
  ASSERT_TRUE(freeDevice(*b).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::UsedMemCurrent), 1000u);
  EXPECT_EQ(*pool.attribute(PoolAttribute::UsedMemHigh), 4000u);
  EXPECT_FALSE(pool.setAttribute(PoolAttribute::UsedMemHigh, 5).ok())
      << "a high-water mark can only be reset to 0";
  EXPECT_TRUE(pool.setAttribute(PoolAttribute::UsedMemHigh, 0).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::UsedMemHigh), 1000u);
  EXPECT_FALSE(pool.setAttribute(PoolAttribute::UsedMemCurrent, 0).ok()) << "read-only";
  ASSERT_TRUE(freeDevice(*a).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::UsedMemCurrent), 0u);
}

TEST(MemoryPool, MaximumSizeIsEnforced) {
  Context& context = testing::primaryContext();
  MemoryPool pool(context.device(), false, /*maxSize=*/4096);
  auto a = allocateFromPool(context, pool, 4000);
  ASSERT_TRUE(a.ok());
  auto b = allocateFromPool(context, pool, 200);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, ErrorCode::OutOfMemory);
  ASSERT_TRUE(freeDevice(*a).ok());
  EXPECT_TRUE(allocateFromPool(context, pool, 200).ok());
}

TEST(MemoryPool, SettableAttributesRoundTrip) {
  Context& context = testing::primaryContext();
  MemoryPool& pool = context.device().defaultMemPool();
  EXPECT_TRUE(pool.isDefault());
  EXPECT_EQ(&context.device().currentMemPool(), &pool);
  ASSERT_TRUE(pool.setAttribute(PoolAttribute::ReleaseThreshold, 1u << 30).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReleaseThreshold), 1u << 30);
  ASSERT_TRUE(pool.setAttribute(PoolAttribute::ReuseAllowOpportunistic, 0).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReuseAllowOpportunistic), 0u);
}

}  // namespace
}  // namespace rocuda::core
