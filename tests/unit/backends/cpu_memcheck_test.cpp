// The memcheck allocation map: lookups, the quarantine of freed ranges, report wording, and
// lookups racing with changes from other threads.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backends/cpu/memcheck.h"

namespace rocuda::backends::cpu {
namespace {

using Verdict = AllocationMap::Verdict;

void* at(uintptr_t address) { return reinterpret_cast<void*>(address); }

TEST(MemcheckMap, InsideOverrunAndOutside) {
  AllocationMap map;
  map.add(at(0x10000), 4000, true);
  map.add(at(0x20000), 256, true);
  EXPECT_EQ(map.find(0x10000, 4).verdict, Verdict::Inside);
  EXPECT_EQ(map.find(0x10000 + 3996, 4).verdict, Verdict::Inside);
  EXPECT_EQ(map.find(0x20000 + 255, 1).verdict, Verdict::Inside);

  auto overrun = map.find(0x10000 + 3998, 4);
  EXPECT_EQ(overrun.verdict, Verdict::Overrun);
  EXPECT_EQ(overrun.range.base, 0x10000u);
  EXPECT_EQ(describeLookup(0x10000 + 3998, 4, overrun),
            "2 bytes past the end of the allocation at 0x10000 of 4000 bytes");

  auto after = map.find(0x10000 + 4012, 4);
  EXPECT_EQ(after.verdict, Verdict::Outside);
  ASSERT_TRUE(after.found);
  EXPECT_EQ(after.range.base, 0x10000u);
  EXPECT_EQ(describeLookup(0x10000 + 4012, 4, after),
            "12 bytes after the end of the allocation at 0x10000 of 4000 bytes");

  auto before = map.find(0x20000 - 8, 4);  // nearer the second allocation's start
  EXPECT_EQ(before.verdict, Verdict::Outside);
  EXPECT_EQ(before.range.base, 0x20000u);
  EXPECT_EQ(describeLookup(0x20000 - 8, 4, before),
            "8 bytes before the start of the allocation at 0x20000 of 256 bytes");

  uintptr_t far = uintptr_t{1} << 40;
  EXPECT_EQ(describeLookup(far, 4, map.find(far, 4)), "not within any allocation");
}

TEST(MemcheckMap, EmptyMapFindsNothing) {
  AllocationMap map;
  auto lookup = map.find(0x1234, 4);
  EXPECT_EQ(lookup.verdict, Verdict::Outside);
  EXPECT_FALSE(lookup.found);
  EXPECT_EQ(describeLookup(0x1234, 4, lookup), "not within any allocation");
}

TEST(MemcheckMap, FreedRangesAreReportedAsUseAfterFree) {
  AllocationMap map;
  map.add(at(0x10000), 1024, true);
  uint64_t generation = map.generation();
  EXPECT_TRUE(map.remove(at(0x10000), true).empty());  // quarantined, not released yet
  EXPECT_NE(map.generation(), generation);
  auto lookup = map.find(0x10000 + 16, 4);
  EXPECT_EQ(lookup.verdict, Verdict::AfterFree);
  EXPECT_EQ(describeLookup(0x10000 + 16, 4, lookup),
            "use after free of the allocation at 0x10000 of 1024 bytes");
  // A new allocation at the same address is live again.
  map.add(at(0x10000), 64, true);
  EXPECT_EQ(map.find(0x10000 + 16, 4).verdict, Verdict::Inside);
}

TEST(MemcheckMap, QuarantineReleasesOldestOwnedMemory) {
  AllocationMap map(/*quarantineBytes=*/999, /*quarantineCount=*/2);
  map.add(at(0x1000), 100, true);
  map.add(at(0x2000), 100, false);  // a registered host range: not ours to release
  map.add(at(0x3000), 100, true);
  map.add(at(0x4000), 900, true);
  EXPECT_TRUE(map.remove(at(0x1000), true).empty());
  EXPECT_TRUE(map.remove(at(0x2000), false).empty());
  // A third entry exceeds the count: 0x1000 (owned) leaves the quarantine.
  EXPECT_EQ(map.remove(at(0x3000), true), std::vector<void*>{at(0x1000)});
  EXPECT_EQ(map.find(0x1000, 4).verdict, Verdict::Outside);
  // 900 more bytes exceed the byte limit: 0x2000 (not owned) and 0x3000 leave.
  EXPECT_EQ(map.remove(at(0x4000), true), std::vector<void*>{at(0x3000)});
  EXPECT_EQ(map.find(0x4000, 4).verdict, Verdict::AfterFree);
  // Freeing what is not live returns owned memory at once (nothing to quarantine).
  EXPECT_EQ(map.remove(at(0x9000), true), std::vector<void*>{at(0x9000)});
  EXPECT_TRUE(map.remove(at(0x9000), false).empty());
}

TEST(MemcheckMap, ZeroSizeAllocationOwnsItsBase) {
  AllocationMap map;
  map.add(at(0x5000), 0, true);
  EXPECT_EQ(map.find(0x5000, 0).verdict, Verdict::Inside);
  EXPECT_EQ(map.find(0x5000, 1).verdict, Verdict::Overrun);
}

TEST(MemcheckMap, LookupsRaceWithChanges) {
  AllocationMap map(/*quarantineBytes=*/1 << 20, /*quarantineCount=*/16);
  map.add(at(0x100000), 4096, true);  // stays live throughout
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (map.find(0x100000 + 100, 8).verdict != Verdict::Inside) ++wrong;
        if (map.find(0x100000 + 4095, 2).verdict != Verdict::Overrun) ++wrong;
      }
    });
  for (int i = 0; i < 20000; ++i) {
    uintptr_t base = 0x200000 + uintptr_t(i % 64) * 0x1000;
    map.add(at(base), 512, false);
    map.remove(at(base), false);
  }
  stop = true;
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace rocuda::backends::cpu
