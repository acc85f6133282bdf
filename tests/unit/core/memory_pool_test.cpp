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
  // Blocks of 512-byte steps: 1024 + 3072.
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 4096u);
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

// A freed block stays in the pool (still reserved) and serves the next allocation of its size
// class; a synchronisation gives back what is kept beyond the release threshold, and
// cuMemPoolTrimTo down to the bytes asked to keep.
TEST(MemoryPool, FreedBlocksAreKeptForReuseUntilTrimmed) {
  EXPECT_EQ(MemoryPool::blockSize(1), 512u);
  EXPECT_EQ(MemoryPool::blockSize(512), 512u);
  EXPECT_EQ(MemoryPool::blockSize(513), 1024u);
  EXPECT_EQ(MemoryPool::blockSize(3u << 20), 4u << 20);
  Context& context = testing::primaryContext();
  MemoryPool pool(context.device(), /*isDefault=*/false, /*maxSize=*/0);
  auto a = allocateFromPool(context, pool, 3000);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(freeDevice(*a).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::UsedMemCurrent), 0u);
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 3072u);
  auto b = allocateFromPool(context, pool, 2900);  // the same class: the same block
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a);
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 3072u);
  auto c = allocateFromPool(context, pool, 100);  // another class: a new block
  ASSERT_TRUE(c.ok());
  EXPECT_NE(*c, *a);
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 3584u);
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemHigh), 3584u);
  ASSERT_TRUE(freeDevice(*b).ok());
  ASSERT_TRUE(freeDevice(*c).ok());
  ASSERT_TRUE(pool.setAttribute(PoolAttribute::ReleaseThreshold, 1000).ok());
  pool.trimToThreshold();  // the largest kept block goes first: 512 bytes stay
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 512u);
  pool.trimTo(0);
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 0u);
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemHigh), 3584u);
  EXPECT_TRUE(pool.setAttribute(PoolAttribute::ReservedMemHigh, 0).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemHigh), 0u);
}

// A stream synchronisation trims every pool of the device to its release threshold (0 by
// default: everything kept goes back).
TEST(MemoryPool, SynchronisationsGiveBackWhatIsKeptBeyondTheThreshold) {
  Context& context = testing::primaryContext();
  MemoryPool pool(context.device(), /*isDefault=*/false, /*maxSize=*/0);
  auto a = allocateFromPool(context, pool, 5000);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(freeDevice(*a).ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 5120u);
  auto stream = context.createStream(1, 0);
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE((*stream)->synchronize().ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 0u);
  ASSERT_TRUE(pool.setAttribute(PoolAttribute::ReleaseThreshold, ~uint64_t(0)).ok());
  a = allocateFromPool(context, pool, 5000);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(freeDevice(*a).ok());
  ASSERT_TRUE(context.synchronize().ok());
  EXPECT_EQ(*pool.attribute(PoolAttribute::ReservedMemCurrent), 5120u);  // under the threshold
  ASSERT_TRUE(context.destroyStream(*stream).ok());
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
