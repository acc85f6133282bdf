// Warp votes and matches: __all_sync, __any_sync, __ballot_sync, __activemask, __match_any_sync
// (32- and 64-bit values), __match_all_sync under the full mask and under partial masks (lanes of
// a diverged branch, the 8 lanes of a 200-thread block's last warp), __syncwarp ordering
// shared-memory exchanges, and a cooperative_groups tiled_partition reduction, and collectives
// among the lanes left after others exited; checked against host references.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <vector>

#include "e2e_check.h"

namespace cg = cooperative_groups;

constexpr int kOutputs = 11;

__device__ __host__ inline bool predicate(int block, int thread) {
  return ((block * 5 + thread * 3) % 7) < (block % 3 == 0 ? 7 : 3);  // block%3==0: all true
}
__device__ __host__ inline int matchValue(int block, int thread) {
  int warp = thread / 32;
  return warp % 2 == 0 ? (thread * 5 + block) % 4 : 42;  // odd warps: every lane the same
}

// 64-bit values whose low halves are all equal: lanes match on the high half alone.
__device__ __host__ inline unsigned long long wideMatchValue(int block, int thread) {
  return static_cast<unsigned long long>((thread * 3 + block) % 5) << 32 | 7u;
}

__device__ inline unsigned existingLanes() {
  int base = threadIdx.x / 32 * 32;
  int lanes = min(32, static_cast<int>(blockDim.x) - base);
  return lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
}

__global__ void votes(unsigned* out, int total) {
  __shared__ int exchange[256];
  int t = threadIdx.x, g = blockIdx.x * blockDim.x + t, lane = t % 32;
  unsigned mask = existingLanes();
  bool p = predicate(blockIdx.x, t);
  unsigned* o = out + g;
  o[0 * total] = __all_sync(mask, p);
  o[1 * total] = __any_sync(mask, p && lane == 3);
  o[2 * total] = __ballot_sync(mask, p);
  o[3 * total] = mask == 0xffffffffu ? __activemask() : 0xffffffffu;
  o[4 * total] = __match_any_sync(mask, matchValue(blockIdx.x, t));
  int allPred = -1;
  o[5 * total] = __match_all_sync(mask, matchValue(blockIdx.x, t), &allPred);
  o[6 * total] = static_cast<unsigned>(allPred);
  o[10 * total] = __match_any_sync(mask, wideMatchValue(blockIdx.x, t));
  // A diverged branch: only the even lanes vote, naming exactly themselves.
  unsigned even = 0x55555555u & mask;
  o[7 * total] = lane % 2 == 0 ? __ballot_sync(even, p) : 0u;
  // __syncwarp orders the lanes' shared-memory writes before their neighbours' reads.
  exchange[t] = t * 11 + blockIdx.x;
  __syncwarp(mask);
  int neighbour = t ^ 1;
  o[8 * total] = neighbour < static_cast<int>(blockDim.x) ? exchange[neighbour] : 0u;
  __syncwarp(mask);
  exchange[t] = 0;  // the reads above are all done before anyone clears
  __syncwarp(mask);
  // cooperative_groups: a reduction over tiles of 32 and 16 lanes (full warps only).
  unsigned tileSums = 0;
  if (mask == 0xffffffffu) {
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cg::this_thread_block());
    cg::thread_block_tile<16> tile16 = cg::tiled_partition<16>(tile32);
    int v = t % 23;
    tileSums = cg::reduce(tile32, v, cg::plus<int>()) * 1000 + cg::reduce(tile16, v,
                                                                         cg::plus<int>());
  }
  o[9 * total] = tileSums;
}

// Lanes 20..31 of every warp exit first; the remaining lanes then vote, shuffle and sync among
// themselves (masks naming only lanes that still run).
__global__ void afterExit(unsigned* out) {
  int t = threadIdx.x, lane = t % 32;
  if (lane >= 20) return;
  const unsigned remaining = 0x000fffffu;
  unsigned* o = out + 3 * (blockIdx.x * blockDim.x + t);
  bool p = predicate(blockIdx.x, t);
  o[0] = __ballot_sync(remaining, p);
  __syncwarp(remaining);
  o[1] = __shfl_xor_sync(remaining, t * 3 + 1, 4, 16);  // within lanes 0..15 and 16..19
  o[2] = __all_sync(remaining, p);
}

void checkAfterExit(Checker& check, int blocks, int threads) {
  int total = blocks * threads;
  unsigned* out;
  CHECK(cudaMalloc(&out, 3 * total * sizeof(unsigned)));
  CHECK(cudaMemset(out, 0, 3 * total * sizeof(unsigned)));
  afterExit<<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  std::vector<unsigned> got(3 * total);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(out));
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) {
      int lane = t % 32, base = t - lane, g = b * threads + t;
      unsigned ballot = 0;
      for (int l = 0; l < 20; ++l)
        if (predicate(b, base + l)) ballot |= 1u << l;
      unsigned e[3] = {ballot, static_cast<unsigned>((base + (lane ^ 4)) * 3 + 1),
                       ballot == 0x000fffffu ? 1u : 0u};
      if (lane >= 20) e[0] = e[1] = e[2] = 0;  // exited before writing
      static const char* names[3] = {"exitBallot", "exitShfl", "exitAll"};
      for (int k = 0; k < 3; ++k) {
        // Lanes 16..19 read lanes 20..23, which exited: undefined, so not checked.
        if (k == 1 && lane >= 16 && lane < 20) continue;
        check.eq(names[k], g, e[k], got[3 * g + k]);
      }
    }
  }
}

struct Expected {
  std::vector<unsigned> v = std::vector<unsigned>(kOutputs);
  std::vector<bool> checked = std::vector<bool>(kOutputs, true);
};

Expected expected(int b, int t, int threads) {
  Expected e;
  int base = t / 32 * 32, lanes = std::min(32, threads - base), lane = t % 32;
  unsigned mask = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  unsigned ballot = 0, evenBallot = 0, same = 0, sameWide = 0;
  bool any3 = false;
  for (int l = 0; l < lanes; ++l) {
    bool p = predicate(b, base + l);
    if (p) ballot |= 1u << l;
    if (p && l % 2 == 0) evenBallot |= 1u << l;
    if (p && l == 3) any3 = true;
    if (matchValue(b, base + l) == matchValue(b, t)) same |= 1u << l;
    if (wideMatchValue(b, base + l) == wideMatchValue(b, t)) sameWide |= 1u << l;
  }
  e.v[0] = ballot == mask;
  e.v[1] = any3;
  e.v[2] = ballot;
  e.v[3] = 0xffffffffu;
  e.v[4] = same;
  e.v[5] = same == mask ? mask : 0;
  e.v[6] = same == mask ? 1 : 0;
  e.v[7] = lane % 2 == 0 ? evenBallot : 0;
  e.v[8] = (t ^ 1) < threads ? static_cast<unsigned>((t ^ 1) * 11 + b) : 0;
  unsigned tileSums = 0;
  if (lanes == 32) {
    int s32 = 0, s16 = 0;
    for (int l = 0; l < 32; ++l) s32 += (base + l) % 23;
    int base16 = t / 16 * 16;
    for (int l = 0; l < 16; ++l) s16 += (base16 + l) % 23;
    tileSums = s32 * 1000 + s16;
  }
  e.v[9] = tileSums;
  e.v[10] = sameWide;
  return e;
}

void checkVotes(Checker& check, int blocks, int threads) {
  int total = blocks * threads;
  unsigned* out;
  CHECK(cudaMalloc(&out, kOutputs * total * sizeof(unsigned)));
  votes<<<blocks, threads>>>(out, total);
  CHECK_LAUNCH();
  std::vector<unsigned> got(kOutputs * total);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(out));
  static const char* names[kOutputs] = {"all",      "any",      "ballot",       "activemask",
                                        "matchAny", "matchAll", "matchAllPred", "evenBallot",
                                        "syncwarp", "cgReduce", "matchAny64"};
  for (int b = 0; b < blocks; ++b) {
    for (int t = 0; t < threads; ++t) {
      Expected e = expected(b, t, threads);
      int g = b * threads + t;
      for (int k = 0; k < kOutputs; ++k) check.eq(names[k], g, e.v[k], got[k * total + g]);
    }
  }
}

int main() {
  Checker check("warp_vote");
  checkVotes(check, 6, 256);
  checkVotes(check, 5, 200);
  checkAfterExit(check, 3, 128);
  std::printf("warp_vote: votes, matches, __syncwarp and cg reductions, blocks of 256 and 200\n");
  return check.finish();
}
