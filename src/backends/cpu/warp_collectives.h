// Warp collectives of the CPU device (shfl.sync, vote.sync, redux.sync, match.sync,
// bar.warp.sync, activemask): the results of a warp's lanes once every member has arrived, computed from all
// lanes' contributions as the PTX ISA defines them.
#pragma once

#include <array>
#include <cstdint>

#include "backends/cpu/execution.h"

namespace rocuda::backends::cpu {

inline constexpr uint32_t kWarpSize = 32;

// One warp's waiting lanes: requests[l] is lane l's contribution, or nullptr when lane l does
// not take part (absent from the block, exited, or elsewhere).
using WarpRequests = std::array<const WarpRequest*, kWarpSize>;

// The result of `lane`'s collective (WarpRequest::result encoding of compiler.h), given the
// lanes that take part with it (`participants`, one bit per lane, including `lane`; the caller
// names only lanes that have a request).
uint64_t warpResult(const WarpRequests& requests, uint32_t participants, uint32_t lane);

// The results of every lane in `participants` when all of them take part in one collective
// with the same operation, mode and member mask (results[l] for each such lane l): the same
// values as warpResult, computed once per warp where the answer is the same for every lane.
void uniformWarpResults(const WarpRequests& requests, uint32_t participants,
                        std::array<uint64_t, kWarpSize>& results);

// Whether the phase an mbarrier wait (WarpOp::MBarrier) names has completed (compiler.h's
// mbarrier layout).
bool mbarrierPhaseDone(const WarpRequest& wait);

// A warp matrix operation (WarpOp::Mma): its tile function run once over the records that the
// lanes in `participants` posted (compiler.h), which computes every lane's outputs; a lane
// absent from the block, or not among the participants, contributes a record of zeros.
void runMatrixTile(const WarpRequests& requests, uint32_t participants);

// A shuffle chain's steps (compiler.h) on one warp's posted values `in` (in[l] for the lanes in
// `present`; the others are absent) into `out` (every lane's, absent lanes' too), with the
// chain's mode, schedule and op as its wait site gives them.
void runShuffleChain(const uint32_t* in, uint32_t present, int32_t mode, int32_t schedule,
                     int32_t op, uint32_t* out);

// Lane `linearTid`'s request as posted in `lanes`.
WarpRequest requestOf(const compiler::WarpLanes& lanes, uint32_t linearTid);

// Lane `linearTid`'s value posted, its result given and read, in their two halves (WarpLanes).
void postLaneValue(compiler::WarpLanes& lanes, uint32_t linearTid, uint64_t value);
void setLaneResult(compiler::WarpLanes& lanes, uint32_t linearTid, uint64_t result);
uint64_t laneResult(const compiler::WarpLanes& lanes, uint32_t linearTid);

// shfl's result for thread `linearTid` of a block of `threadCount` threads once its collective
// was released: the source lane's snapshot (WarpLanes::result), computed as generated
// continuation code computes it itself (compiler.h).
uint64_t shuffleFromSnapshots(const compiler::WarpLanes& lanes, uint32_t linearTid,
                              uint32_t threadCount);

// Where shfl lane `lane` reads from (its own lane when the source is out of range), and whether
// the source was in range, as the PTX ISA defines shfl.sync.
struct ShuffleSource {
  uint32_t lane;
  bool inRange;
};
ShuffleSource shuffleSource(int32_t mode, int32_t b, int32_t c, uint32_t lane);


}  // namespace rocuda::backends::cpu
