// The CPU device's warp collectives as a pure function: each lane's result from all lanes'
// contributions, checked against the PTX ISA's definitions.
#include "backends/cpu/warp_collectives.h"

#include <gtest/gtest.h>

#include <array>
#include <vector>

namespace rocuda::backends::cpu {
namespace {

constexpr uint32_t kFull = 0xffffffffu;

WarpRequest request(WarpOp op, int32_t mode, uint64_t value, int32_t b, int32_t c, uint32_t mask) {
  return WarpRequest{op, mode, value, b, c, mask};
}

struct Warp {
  std::array<WarpRequest, kWarpSize> lanes{};
  WarpRequests requests{};
  uint32_t participants = 0;

  // Lanes in `members` take part with the same operation; value(l) is lane l's contribution.
  template <class Value>
  Warp(WarpOp op, int32_t mode, uint32_t members, Value value, int32_t b = 0, int32_t c = 0) {
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if ((members >> l & 1u) == 0) continue;
      lanes[l] = request(op, mode, static_cast<uint64_t>(value(l)), b, c, members);
      requests[l] = &lanes[l];
      participants |= 1u << l;
    }
  }
  uint64_t result(uint32_t lane) const { return warpResult(requests, participants, lane); }
};

uint32_t valueOf(uint64_t result) { return static_cast<uint32_t>(result); }
bool predicateOf(uint64_t result) { return (result >> 32 & 1u) != 0; }

enum ShflMode { kUp = 0, kDown = 1, kBfly = 2, kIdx = 3 };

TEST(WarpCollectives, ShuffleIndexBroadcasts) {
  Warp warp(WarpOp::Shfl, kIdx, kFull, [](uint32_t l) { return 100 + l; }, /*b=*/5, /*c=*/0x1f);
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    EXPECT_EQ(valueOf(warp.result(l)), 105u) << "lane " << l;
    EXPECT_TRUE(predicateOf(warp.result(l)));
  }
}

TEST(WarpCollectives, ShuffleDownClampsAtTheLastLane) {
  Warp warp(WarpOp::Shfl, kDown, kFull, [](uint32_t l) { return l * 10; }, /*b=*/1, /*c=*/0x1f);
  for (uint32_t l = 0; l < 31; ++l) {
    EXPECT_EQ(valueOf(warp.result(l)), (l + 1) * 10) << "lane " << l;
    EXPECT_TRUE(predicateOf(warp.result(l)));
  }
  EXPECT_EQ(valueOf(warp.result(31)), 310u) << "out of range: a lane keeps its own value";
  EXPECT_FALSE(predicateOf(warp.result(31)));
}

TEST(WarpCollectives, ShuffleUpWithinSegmentsOfEight) {
  // __shfl_up_sync(mask, v, 2, 8): c = (32 - 8) << 8, clamp 0.
  Warp warp(WarpOp::Shfl, kUp, kFull, [](uint32_t l) { return l; }, /*b=*/2, /*c=*/(24 << 8));
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    bool inRange = l % 8 >= 2;
    EXPECT_EQ(valueOf(warp.result(l)), inRange ? l - 2 : l) << "lane " << l;
    EXPECT_EQ(predicateOf(warp.result(l)), inRange) << "lane " << l;
  }
}

TEST(WarpCollectives, ButterflyWithinSegmentsOfSixteen) {
  // __shfl_xor_sync(mask, v, 4, 16): c = ((32 - 16) << 8) | 0x1f.
  Warp warp(WarpOp::Shfl, kBfly, kFull, [](uint32_t l) { return 1000 + l; }, 4, (16 << 8) | 0x1f);
  for (uint32_t l = 0; l < kWarpSize; ++l) EXPECT_EQ(valueOf(warp.result(l)), 1000 + (l ^ 4));
}

enum VoteMode { kAll = 0, kAny = 1, kUni = 2, kBallot = 3 };

TEST(WarpCollectives, VotesOverAPartialWarp) {
  const uint32_t members = 0x000fffffu;  // lanes 0..19, as in a block of 20 threads
  auto divisibleBy3 = [](uint32_t l) { return l % 3 == 0 ? 1 : 0; };
  Warp ballot(WarpOp::Vote, kBallot, members, divisibleBy3);
  uint32_t expected = 0;
  for (uint32_t l = 0; l < 20; ++l) expected |= (l % 3 == 0 ? 1u : 0u) << l;
  for (uint32_t l = 0; l < 20; ++l) EXPECT_EQ(valueOf(ballot.result(l)), expected);
  Warp all(WarpOp::Vote, kAll, members, divisibleBy3);
  Warp any(WarpOp::Vote, kAny, members, divisibleBy3);
  Warp uni(WarpOp::Vote, kUni, members, [](uint32_t) { return 1; });
  EXPECT_EQ(valueOf(all.result(0)), 0u);
  EXPECT_EQ(valueOf(any.result(7)), 1u);
  EXPECT_EQ(valueOf(uni.result(19)), 1u);
}

TEST(WarpCollectives, ReduxAddAndMaxOverParticipants) {
  const uint32_t members = 0x0000ff0fu;
  Warp add(WarpOp::Redux, /*add=*/0, members, [](uint32_t l) { return l + 1; });
  uint32_t sum = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l)
    if (members >> l & 1u) sum += l + 1;
  EXPECT_EQ(valueOf(add.result(0)), sum);
  EXPECT_EQ(valueOf(add.result(15)), sum);
  Warp maxSigned(WarpOp::Redux, /*max.s32=*/4, members,
                 [](uint32_t l) { return static_cast<uint32_t>(static_cast<int32_t>(l) - 10); });
  EXPECT_EQ(static_cast<int32_t>(valueOf(maxSigned.result(3))), 15 - 10);
}

TEST(WarpCollectives, MatchAnyGroupsEqualValues) {
  Warp match(WarpOp::Match, /*any=*/0, kFull, [](uint32_t l) { return l % 4; });
  for (uint32_t l = 0; l < kWarpSize; ++l) EXPECT_EQ(valueOf(match.result(l)), 0x11111111u << (l % 4));
  Warp matchAll(WarpOp::Match, /*all=*/1, kFull, [](uint32_t) { return 7; });
  EXPECT_EQ(valueOf(matchAll.result(9)), kFull);
  EXPECT_TRUE(predicateOf(matchAll.result(9)));
}

}  // namespace
}  // namespace rocuda::backends::cpu

namespace rocuda::backends::cpu {
namespace {

// The once-per-warp computation gives every lane what the per-lane definition gives it.
TEST(WarpCollectives, UniformResultsMatchPerLaneResults) {
  const uint32_t members = 0x00ffffffu;  // a partial warp of 24 lanes
  auto value = [](uint32_t l) { return (l * 7 + 3) % 11; };
  struct Case {
    WarpOp op;
    int32_t mode;
    int32_t b, c;
  } cases[] = {{WarpOp::Shfl, 1, 3, 0x1f},      {WarpOp::Shfl, 3, 5, 0x1f},
               {WarpOp::Vote, 0, 0, 0},         {WarpOp::Vote, 1, 0, 0},
               {WarpOp::Vote, 3, 0, 0},         {WarpOp::Redux, 0, 0, 0},
               {WarpOp::Redux, 4, 0, 0},        {WarpOp::Match, 0, 0, 0}};
  for (const Case& c : cases) {
    std::array<WarpRequest, kWarpSize> lanes{};
    WarpRequests requests{};
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      if ((members >> l & 1u) == 0) continue;
      lanes[l] = request(c.op, c.mode, value(l), c.b, c.c, members);
      requests[l] = &lanes[l];
    }
    std::array<uint64_t, kWarpSize> results{};
    uniformWarpResults(requests, members, results);
    for (uint32_t l = 0; l < 24; ++l)
      EXPECT_EQ(results[l], warpResult(requests, members, l))
          << "op " << static_cast<int>(c.op) << " mode " << c.mode << " lane " << l;
  }
}


// Released shuffles read their source lane's snapshot (what generated continuation code does
// inline): the per-warp definition's answers, with sources beyond the block's last thread
// giving the lane its own value.
TEST(WarpCollectives, ShuffleFromSnapshotsMatchesDefinition) {
  const uint32_t threadCount = 56;  // one full warp and a partial one of 24 lanes
  struct Case {
    int32_t mode, b, c;
  } cases[] = {{0, 1, 0}, {1, 16, 0x1f}, {2, 4, 0x1f}, {3, 7, 0x1f}, {1, 2, (8 << 8) | 0x7}};
  for (const Case& c : cases) {
    std::vector<uint32_t> posts(threadCount), snapshots(threadCount), highs(threadCount);
    std::vector<int32_t> ops(threadCount, 1), modes(threadCount, c.mode), bs(threadCount, c.b),
        cs(threadCount, c.c);
    std::vector<uint32_t> masks(threadCount, kFull);
    for (uint32_t t = 0; t < threadCount; ++t) snapshots[t] = 1000 + t;
    compiler::WarpLanes lanes{posts.data(), snapshots.data(), highs.data(),
                              highs.data(), ops.data(),       modes.data(),
                              bs.data(),    cs.data(),        masks.data()};
    Warp full(WarpOp::Shfl, c.mode, kFull, [](uint32_t l) { return 1000 + l; }, c.b, c.c);
    Warp partial(WarpOp::Shfl, c.mode, 0x00ffffffu, [](uint32_t l) { return 1032 + l; }, c.b, c.c);
    for (uint32_t t = 0; t < threadCount; ++t) {
      uint64_t expected = t < 32 ? full.result(t) : partial.result(t - 32);
      EXPECT_EQ(shuffleFromSnapshots(lanes, t, threadCount), expected)
          << "mode " << c.mode << " thread " << t;
    }
  }
}

// Values and results travel in 32-bit halves: the high half of a value is read only for the
// collectives that post wide values (match.b64, mbarrier waits, mma records); results keep both.
TEST(WarpCollectives, WideValuesAndResultsKeepTheirHighHalves) {
  std::vector<uint32_t> values(2), results(2), valueHighs(2), resultHighs(2);
  std::vector<int32_t> ops{static_cast<int32_t>(WarpOp::Match), static_cast<int32_t>(WarpOp::Shfl)};
  std::vector<int32_t> zeros(2);
  std::vector<uint32_t> masks(2, kFull);
  compiler::WarpLanes lanes{values.data(),      results.data(), valueHighs.data(),
                            resultHighs.data(), ops.data(),     zeros.data(),
                            zeros.data(),       zeros.data(),   masks.data()};
  postLaneValue(lanes, 0, 0x123456789abcdef0u);
  postLaneValue(lanes, 1, 0xfedcba9876543210u);
  EXPECT_EQ(requestOf(lanes, 0).value, 0x123456789abcdef0u);
  EXPECT_EQ(requestOf(lanes, 1).value, 0x76543210u);  // a shfl's value is its low half
  setLaneResult(lanes, 1, 0x1'0000'0042u);
  EXPECT_EQ(laneResult(lanes, 1), 0x1'0000'0042u);
}

}  // namespace
}  // namespace rocuda::backends::cpu
