#include "backends/cpu/warp_collectives.h"

#include <algorithm>
#include <atomic>
#include <bit>

namespace rocuda::backends::cpu {
namespace {

uint32_t bit(uint32_t lane) { return 1u << lane; }

// shfl.sync among the arrived lanes (before snapshots: the unit tests' reference).
uint64_t shuffle(const WarpRequests& requests, uint32_t participants, uint32_t lane) {
  const WarpRequest& self = *requests[lane];
  ShuffleSource source = shuffleSource(self.mode, self.b, self.c, lane);
  // Reading a lane that does not take part is undefined in PTX: give the lane its own value.
  uint32_t value = static_cast<uint32_t>(self.value);
  if ((participants & bit(source.lane)) && requests[source.lane] != nullptr)
    value = static_cast<uint32_t>(requests[source.lane]->value);
  return uint64_t(value) | (source.inRange ? uint64_t(1) << 32 : 0);
}

// vote.sync: mode 0 all, 1 any, 2 uni, 3 ballot.
uint64_t vote(const WarpRequests& requests, uint32_t participants, uint32_t lane) {
  uint32_t ballot = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l)
    if ((participants & bit(l)) && requests[l] && requests[l]->value != 0) ballot |= bit(l);
  switch (requests[lane]->mode) {
    case 0:
      return ballot == participants ? 1 : 0;
    case 1:
      return ballot != 0 ? 1 : 0;
    case 2:
      return ballot == 0 || ballot == participants ? 1 : 0;
    default:
      return ballot;
  }
}

// redux.sync: op 0 add, 1 min.u32, 2 max.u32, 3 min.s32, 4 max.s32, 5 and, 6 or, 7 xor.
uint64_t reduce(const WarpRequests& requests, uint32_t participants, uint32_t lane) {
  int32_t op = requests[lane]->mode;
  uint32_t acc = 0;
  bool first = true;
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    if (!(participants & bit(l)) || requests[l] == nullptr) continue;
    uint32_t v = static_cast<uint32_t>(requests[l]->value);
    if (first) {
      acc = v;
      first = false;
      continue;
    }
    auto s = [](uint32_t x) { return static_cast<int32_t>(x); };
    switch (op) {
      case 0:
        acc += v;
        break;
      case 1:
        acc = std::min(acc, v);
        break;
      case 2:
        acc = std::max(acc, v);
        break;
      case 3:
        acc = static_cast<uint32_t>(std::min(s(acc), s(v)));
        break;
      case 4:
        acc = static_cast<uint32_t>(std::max(s(acc), s(v)));
        break;
      case 5:
        acc &= v;
        break;
      case 6:
        acc |= v;
        break;
      default:
        acc ^= v;
        break;
    }
  }
  return acc;
}

// match.sync: mode 0 any (the lanes holding this lane's value), 1 all (every lane, or none).
uint64_t match(const WarpRequests& requests, uint32_t participants, uint32_t lane) {
  uint64_t mine = requests[lane]->value;
  uint32_t same = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l)
    if ((participants & bit(l)) && requests[l] && requests[l]->value == mine) same |= bit(l);
  if (requests[lane]->mode == 0) return same;
  return same == participants ? (uint64_t(1) << 32) | participants : 0;
}

// activemask: the lanes waiting at the same activemask call site.
uint64_t active(const WarpRequests& requests, uint32_t participants, uint32_t lane) {
  uint32_t same = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l)
    if ((participants & bit(l)) && requests[l] && requests[l]->op == WarpOp::Active &&
        requests[l]->value == requests[lane]->value)
      same |= bit(l);
  return same;
}

}  // namespace

// After PTX's pseudo-code: c packs the clamp value in bits 0..4 and the segment mask in 8..12.
ShuffleSource shuffleSource(int32_t mode, int32_t b, int32_t c, uint32_t lane) {
  int32_t bval = b & 0x1f;
  int32_t clamp = c & 0x1f;
  int32_t segmask = (c >> 8) & 0x1f;
  int32_t me = static_cast<int32_t>(lane);
  int32_t maxLane = (me & segmask) | (clamp & ~segmask);
  int32_t minLane = me & segmask;
  int32_t source = me;
  bool inRange = false;
  switch (mode) {
    case 0:
      source = me - bval;
      inRange = source >= maxLane;
      break;
    case 1:
      source = me + bval;
      inRange = source <= maxLane;
      break;
    case 2:
      source = me ^ bval;
      inRange = source <= maxLane;
      break;
    default:
      source = minLane | (bval & ~segmask);
      inRange = source <= maxLane;
      break;
  }
  return {inRange ? static_cast<uint32_t>(source) : lane, inRange};
}

bool mbarrierPhaseDone(const WarpRequest& wait) {
  auto* word = reinterpret_cast<const std::atomic<uint64_t>*>(static_cast<uintptr_t>(wait.value));
  uint64_t phase = word->load(std::memory_order_acquire) >> 63;
  uint64_t state = uint64_t(static_cast<uint32_t>(wait.c)) << 32 | static_cast<uint32_t>(wait.b);
  // A parity names the phase to wait for; a state the phase it arrived in.
  return wait.mode != 0 ? phase != (state & 1) : phase != state >> 63;
}

void runMatrixTile(const WarpRequests& requests, uint32_t participants) {
  using Tile = void (*)(void* const* records);
  std::array<uint64_t, compiler::kMatrixRecordSlots> absent{};  // zeros in, outputs discarded
  std::array<void*, kWarpSize> records{};
  Tile tile = nullptr;
  for (uint32_t l = 0; l < kWarpSize; ++l) {
    const WarpRequest* request = requests[l];
    if (!(participants & bit(l)) || request == nullptr) {
      records[l] = absent.data();
      continue;
    }
    records[l] = reinterpret_cast<void*>(static_cast<uintptr_t>(request->value));
    if (tile == nullptr)
      tile = reinterpret_cast<Tile>(static_cast<uintptr_t>(
          uint64_t(static_cast<uint32_t>(request->c)) << 32 | static_cast<uint32_t>(request->b)));
  }
  if (tile != nullptr) tile(records.data());
}

WarpRequest requestOf(const compiler::WarpLanes& lanes, uint32_t linearTid) {
  int32_t op = lanes.op[linearTid];
  uint64_t value = lanes.value[linearTid];
  if (compiler::postsWideValue(op)) value |= uint64_t{lanes.valueHigh[linearTid]} << 32;
  return WarpRequest{static_cast<WarpOp>(op), lanes.mode[linearTid], value,
                     lanes.b[linearTid],      lanes.c[linearTid],    lanes.mask[linearTid]};
}

void postLaneValue(compiler::WarpLanes& lanes, uint32_t linearTid, uint64_t value) {
  lanes.value[linearTid] = static_cast<uint32_t>(value);
  lanes.valueHigh[linearTid] = static_cast<uint32_t>(value >> 32);
}

void setLaneResult(compiler::WarpLanes& lanes, uint32_t linearTid, uint64_t result) {
  lanes.result[linearTid] = static_cast<uint32_t>(result);
  lanes.resultHigh[linearTid] = static_cast<uint32_t>(result >> 32);
}

uint64_t laneResult(const compiler::WarpLanes& lanes, uint32_t linearTid) {
  return lanes.result[linearTid] | uint64_t{lanes.resultHigh[linearTid]} << 32;
}

uint64_t shuffleFromSnapshots(const compiler::WarpLanes& lanes, uint32_t linearTid,
                              uint32_t threadCount) {
  uint32_t lane = linearTid % kWarpSize;
  ShuffleSource source =
      shuffleSource(lanes.mode[linearTid], lanes.b[linearTid], lanes.c[linearTid], lane);
  uint32_t from = linearTid - lane + source.lane;
  if (from >= threadCount) from = linearTid;
  return lanes.result[from] | (source.inRange ? uint64_t(1) << 32 : 0);
}

namespace {

// A shuffle chain among the participants: the steps run on the whole warp, this lane's result.
// Every lane's result, as `lane`'s chain (its mode, schedule and op) computes them.
std::array<uint32_t, kWarpSize> shuffleChainResults(const WarpRequests& requests,
                                                    uint32_t participants, uint32_t lane) {
  std::array<uint32_t, kWarpSize> in{}, out{};
  uint32_t present = 0;
  for (uint32_t l = 0; l < kWarpSize; ++l)
    if ((participants & bit(l)) && requests[l] != nullptr) {
      present |= bit(l);
      in[l] = static_cast<uint32_t>(requests[l]->value);
    }
  const WarpRequest& self = *requests[lane];
  runShuffleChain(in.data(), present, self.mode, self.b, self.c, out.data());
  return out;
}

uint64_t shuffleChain(const WarpRequests& requests, uint32_t participants, uint32_t lane) {
  return shuffleChainResults(requests, participants, lane)[lane];
}

}  // namespace

namespace {

template <typename Combine>
void runChainSteps(std::array<uint32_t, kWarpSize>& cur, uint32_t present, int32_t mode,
                   int32_t schedule, Combine combine) {
  for (uint32_t k = 0; k < compiler::shuffleChainSteps(schedule); ++k) {
    uint32_t offset = compiler::shuffleChainOffset(schedule, k);
    std::array<uint32_t, kWarpSize> next;
    for (uint32_t l = 0; l < kWarpSize; ++l) {
      uint32_t source = compiler::shuffleChainSource(mode, offset, l);
      next[l] = combine(cur[l], (present & bit(source)) ? cur[source] : cur[l]);
    }
    cur = next;
  }
}

}  // namespace

void runShuffleChain(const uint32_t* in, uint32_t present, int32_t mode, int32_t schedule,
                     int32_t op, uint32_t* out) {
  using Op = compiler::ShuffleChainOp;
  std::array<uint32_t, kWarpSize> cur{};
  for (uint32_t l = 0; l < kWarpSize; ++l) cur[l] = (present & bit(l)) ? in[l] : 0;
  auto run = [&](auto combine) { runChainSteps(cur, present, mode, schedule, combine); };
  auto s = [](uint32_t v) { return static_cast<int32_t>(v); };
  switch (static_cast<Op>(op)) {
    case Op::FAdd:
      run([](uint32_t a, uint32_t b) {
        return std::bit_cast<uint32_t>(std::bit_cast<float>(a) + std::bit_cast<float>(b));
      });
      break;
    case Op::Add:
      run([](uint32_t a, uint32_t b) { return a + b; });
      break;
    case Op::And:
      run([](uint32_t a, uint32_t b) { return a & b; });
      break;
    case Op::Or:
      run([](uint32_t a, uint32_t b) { return a | b; });
      break;
    case Op::Xor:
      run([](uint32_t a, uint32_t b) { return a ^ b; });
      break;
    case Op::SMax:
      run([&](uint32_t a, uint32_t b) { return static_cast<uint32_t>(std::max(s(a), s(b))); });
      break;
    case Op::SMin:
      run([&](uint32_t a, uint32_t b) { return static_cast<uint32_t>(std::min(s(a), s(b))); });
      break;
    case Op::UMax:
      run([](uint32_t a, uint32_t b) { return std::max(a, b); });
      break;
    case Op::UMin:
      run([](uint32_t a, uint32_t b) { return std::min(a, b); });
      break;
  }
  std::copy(cur.begin(), cur.end(), out);
}

uint64_t warpResult(const WarpRequests& requests, uint32_t participants, uint32_t lane) {
  if (lane >= kWarpSize || requests[lane] == nullptr) return 0;
  participants |= bit(lane);
  switch (requests[lane]->op) {
    case WarpOp::Shfl:
      return shuffle(requests, participants, lane);
    case WarpOp::Vote:
      return vote(requests, participants, lane);
    case WarpOp::Redux:
      return reduce(requests, participants, lane);
    case WarpOp::Match:
      return match(requests, participants, lane);
    case WarpOp::Active:
      return active(requests, participants, lane);
    case WarpOp::ShflChain:
      return shuffleChain(requests, participants, lane);
    case WarpOp::Sync:
    case WarpOp::MBarrier:  // released by the scheduler itself
    case WarpOp::NamedBarrier:
    case WarpOp::Mma:  // outputs in the lanes' records (runMatrixTile)
    case WarpOp::Lockstep:
      break;
  }
  return 0;
}

void uniformWarpResults(const WarpRequests& requests, uint32_t participants,
                        std::array<uint64_t, kWarpSize>& results) {
  uint32_t first = 0;
  while (first < kWarpSize && !(participants & bit(first))) ++first;
  if (first == kWarpSize) return;
  // Votes and reductions give every lane the same answer: compute it once, not once per lane.
  WarpOp op = requests[first]->op;
  bool shared = op == WarpOp::Vote || op == WarpOp::Redux || op == WarpOp::Sync ||
                op == WarpOp::Active || op == WarpOp::Lockstep;
  for (uint32_t l = first + 1; l < kWarpSize && shared; ++l)
    shared = !(participants & bit(l)) || requests[l]->mode == requests[first]->mode;
  // Lanes of one chain (its mode, schedule and op alike): one run of its steps gives every
  // lane's result.
  bool oneChain = op == WarpOp::ShflChain;
  for (uint32_t l = first + 1; l < kWarpSize && oneChain; ++l)
    oneChain = !(participants & bit(l)) ||
               (requests[l]->mode == requests[first]->mode &&
                requests[l]->b == requests[first]->b && requests[l]->c == requests[first]->c);
  if (oneChain) {
    std::array<uint32_t, kWarpSize> chain = shuffleChainResults(requests, participants, first);
    for (uint32_t l = 0; l < kWarpSize; ++l)
      if (participants & bit(l)) results[l] = chain[l];
    return;
  }
  uint64_t common = shared ? warpResult(requests, participants, first) : 0;
  for (uint32_t l = 0; l < kWarpSize; ++l)
    if (participants & bit(l)) results[l] = shared ? common : warpResult(requests, participants, l);
}

}  // namespace rocuda::backends::cpu
