// Code that only a range of a block's threads runs, picked by the thread index: `if (tid < s)`,
// `if (threadIdx.x == 0)` and the like. The CPU device splits its loops over a block's threads
// where such a test changes its answer (host_thread_ranges.cpp), so every comparison, signed and
// unsigned, strict or not, against bounds before, inside and past the block (and an unsigned
// bound that would wrap when incremented) must pick exactly the threads CUDA does: in kernels
// with barriers (run in rounds) and without (one loop over the block), in 1-D and 2-D blocks.
// Tests of the global index (`blockIdx.x * blockDim.x + threadIdx.x < n`) are split too, where
// the index cannot wrap within the block: checked in grids whose index wraps past INT_MAX and
// UINT_MAX inside a block, with equality tests of either index against any bound beside them.
#include <climits>
#include <vector>

#include "e2e_check.h"

constexpr int kTests = 11;

// Marks, for each test the thread passes, its entry of that test's row of `out` (zeroed first).
// Each mark is a store of its own, so that the tests stay branches (stores to one place would
// become selects). `Between` runs between two tests (a barrier puts each in a round of its own).
template <typename Between>
__device__ void markRanges(int s, unsigned us, int* out, int total, Between between) {
  unsigned t = threadIdx.x;
  int block = blockIdx.x;
  int id = block * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
  if (t < us) out[0 * total + id] = 1;
  between();
  if (t <= us) out[1 * total + id] = 1;
  between();
  if (t > us) out[2 * total + id] = 1;
  between();
  if (t >= us) out[3 * total + id] = 1;
  between();
  if (static_cast<int>(t) < s) out[4 * total + id] = 1;
  between();
  if (static_cast<int>(t) <= s) out[5 * total + id] = 1;
  between();
  if (static_cast<int>(t) > s) out[6 * total + id] = 1;
  between();
  if (static_cast<int>(t) >= s) out[7 * total + id] = 1;
  between();
  if (t == 0) out[8 * total + id] = 1;
  between();
  if (t != 0) out[9 * total + id] = 1;
  between();
  if (static_cast<int>(t) < s + block) out[10 * total + id] = 1;  // a bound per block
}

__global__ void rangesWithoutBarriers(int s, unsigned us, int* out, int total) {
  markRanges(s, us, out, total, [] {});
}

// The same between barriers, and a block-wide sum of the marks of the first test through shared
// memory: values that live across the barriers around the tests.
__global__ void rangesBetweenBarriers(int s, unsigned us, int* out, int total, int* counts) {
  __shared__ int passed[1024];
  int linear = threadIdx.y * blockDim.x + threadIdx.x;
  int threads = blockDim.x * blockDim.y;
  passed[linear] = threadIdx.x < us ? 1 : 0;
  __syncthreads();
  markRanges(s, us, out, total, [] { __syncthreads(); });
  __syncthreads();
  for (int half = 512; half > 0; half >>= 1) {
    if (linear < half && linear + half < threads) passed[linear] += passed[linear + half];
    __syncthreads();
  }
  if (linear == 0) counts[blockIdx.x] = passed[0];
}

bool expected(int test, int t, int s, unsigned us, int block) {
  unsigned ut = static_cast<unsigned>(t);
  switch (test) {
    case 0:
      return ut < us;
    case 1:
      return ut <= us;
    case 2:
      return ut > us;
    case 3:
      return ut >= us;
    case 4:
      return t < s;
    case 5:
      return t <= s;
    case 6:
      return t > s;
    case 7:
      return t >= s;
    case 8:
      return t == 0;
    case 9:
      return t != 0;
    default:
      return t < s + block;
  }
}

// Tests of the global index, signed and unsigned, in the blocks named by `recorded` (the others
// do nothing): the index of 192-thread blocks wraps inside a block past INT_MAX and UINT_MAX.
constexpr int kGlobalTests = 5;
constexpr int kRecorded = 6;
struct Recorded {
  unsigned block[kRecorded];
};

// This block's slot among the recorded ones, or -1.
__device__ int recordedSlot(const Recorded& recorded) {
  int slot = -1;
  for (int k = 0; k < kRecorded; ++k)
    if (blockIdx.x == recorded.block[k]) slot = k;
  return slot;
}

__global__ void globalRanges(int n, unsigned un, Recorded recorded, int* out, int total) {
  int slot = recordedSlot(recorded);
  if (slot < 0) return;
  unsigned ug = blockIdx.x * blockDim.x + threadIdx.x;
  int g = static_cast<int>(ug);
  int id = slot * blockDim.x + threadIdx.x;
  if (g < n) out[0 * total + id] = 1;
  if (g <= n) out[1 * total + id] = 1;
  if (g >= n) out[2 * total + id] = 1;
  if (ug < un) out[3 * total + id] = 1;
  if (ug >= un) out[4 * total + id] = 1;
}

// Equality tests of either index against any bound (a stencil's `x == 0 || x == width - 1`),
// which hold at one index at most; only `threadIdx.x == 0` is split today, the others stay masks.
constexpr int kEqualityTests = 4;
__global__ void globalEqualities(int n, unsigned un, Recorded recorded, int* out, int total) {
  int slot = recordedSlot(recorded);
  if (slot < 0) return;
  unsigned ug = blockIdx.x * blockDim.x + threadIdx.x;
  int g = static_cast<int>(ug);
  int id = slot * blockDim.x + threadIdx.x;
  if (g == n) out[0 * total + id] = 1;
  if (ug != un) out[1 * total + id] = 1;
  if (threadIdx.x == un) out[2 * total + id] = 1;
  if (static_cast<int>(threadIdx.x) != n) out[3 * total + id] = 1;
}

void checkGlobalRanges(Checker& check) {
  struct Launch {
    unsigned grid, block;
    Recorded recorded;
  };
  const unsigned signedWrap = 11184810, unsignedWrap = 22369621;  // 2^31 / 192, 2^32 / 192
  const Launch launches[] = {{6, 256, {{0, 1, 2, 3, 4, 5}}},
                             {6, 37, {{0, 1, 2, 3, 4, 5}}},
                             {unsignedWrap + 2,
                              192,
                              {{signedWrap - 1, signedWrap, signedWrap + 1, unsignedWrap - 1,
                                unsignedWrap, unsignedWrap + 1}}}};
  struct Bounds {
    int n;
    unsigned un;
  };
  const Bounds bounds[] = {{-5, 0},
                           {0, 1},
                           {100, 300},
                           {300, 1000},
                           {1500, 1536},
                           {INT_MIN, 7},
                           {INT_MAX, UINT_MAX},
                           {INT_MAX - 100, UINT_MAX - 100},
                           {-1000, 2147483600u}};
  const int total = kRecorded * 256;
  int* dout;
  CHECK(cudaMalloc(&dout, kGlobalTests * total * sizeof(int)));
  // Runs `kernel` (marks a row per test) and counts the marks that differ from
  // `expected(test, g, ug, t)`, printing the first few.
  auto countWrong = [&](void (*kernel)(int, unsigned, Recorded, int*, int), int tests,
                        const char* what, const Launch& launch, const Bounds& b, auto expected) {
    CHECK(cudaMemset(dout, 0, tests * total * sizeof(int)));
    kernel<<<launch.grid, launch.block>>>(b.n, b.un, launch.recorded, dout, total);
    CHECK_LAUNCH();
    std::vector<int> out(tests * total);
    CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int slot = 0; slot < kRecorded; ++slot)
      for (unsigned t = 0; t < launch.block; ++t) {
        unsigned ug = launch.recorded.block[slot] * launch.block + t;
        int g = static_cast<int>(ug);
        for (int test = 0; test < tests; ++test) {
          int got = out[test * total + slot * static_cast<int>(launch.block) + t];
          if (got != (expected(test, g, ug, t) ? 1 : 0) && wrong++ < 5)
            std::fprintf(stderr, "%s: index %u (block %u, thread %u) n=%d un=%u test %d\n", what,
                         ug, launch.recorded.block[slot], t, b.n, b.un, test);
        }
      }
    return wrong;
  };
  for (const Launch& launch : launches)
    for (const Bounds& b : bounds) {
      int wrong = countWrong(
          globalRanges, kGlobalTests, "global", launch, b,
          [&](int test, int g, unsigned ug, unsigned) {
            const bool want[kGlobalTests] = {g < b.n, g <= b.n, g >= b.n, ug < b.un, ug >= b.un};
            return want[test];
          });
      check.eq("wrongly picked global indices", b.n, 0, wrong);
      wrong = countWrong(globalEqualities, kEqualityTests, "equality", launch, b,
                         [&](int test, int g, unsigned ug, unsigned t) {
                           const bool want[kEqualityTests] = {g == b.n, ug != b.un, t == b.un,
                                                              static_cast<int>(t) != b.n};
                           return want[test];
                         });
      check.eq("wrongly picked equal indices", b.n, 0, wrong);
    }
  CHECK(cudaFree(dout));
}

int main() {
  Checker check("thread_ranges");
  checkGlobalRanges(check);
  const int blocks = 3;
  struct Bounds {
    int s;
    unsigned us;
  };
  const Bounds bounds[] = {{-5, 0},     {0, 1},           {1, 7},
                           {7, 36},     {36, 37},         {37, 38},
                           {40, 1000},  {1000, UINT_MAX}, {INT_MIN, UINT_MAX - 1},
                           {INT_MAX, 2}};
  for (dim3 block : {dim3(37, 1, 1), dim3(256, 1, 1), dim3(40, 3, 1)}) {
    const int threads = block.x * block.y, total = blocks * threads;
    int *dout, *dcounts;
    CHECK(cudaMalloc(&dout, kTests * total * sizeof(int)));
    CHECK(cudaMalloc(&dcounts, blocks * sizeof(int)));
    for (const Bounds& b : bounds) {
      for (bool barriers : {false, true}) {
        CHECK(cudaMemset(dout, 0, kTests * total * sizeof(int)));
        if (barriers)
          rangesBetweenBarriers<<<blocks, block>>>(b.s, b.us, dout, total, dcounts);
        else
          rangesWithoutBarriers<<<blocks, block>>>(b.s, b.us, dout, total);
        CHECK_LAUNCH();
        std::vector<int> out(kTests * total);
        CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
        int wrong = 0;
        for (int test = 0; test < kTests; ++test)
          for (int id = 0; id < total; ++id) {
            int blockIndex = id / threads, t = id % threads % static_cast<int>(block.x);
            bool want = expected(test, t, b.s, b.us, blockIndex);
            if (out[test * total + id] != (want ? 1 : 0) && wrong++ < 5)
              std::fprintf(stderr, "block %ux%u s=%d us=%u barriers=%d test %d thread %d\n",
                           block.x, block.y, b.s, b.us, barriers, test, id);
          }
        check.eq("wrongly picked threads", b.s, 0, wrong);
        if (!barriers) continue;
        std::vector<int> counts(blocks);
        CHECK(cudaMemcpy(counts.data(), dcounts, blocks * sizeof(int), cudaMemcpyDeviceToHost));
        int perRow = b.us < block.x ? static_cast<int>(b.us) : static_cast<int>(block.x);
        for (int i = 0; i < blocks; ++i)
          check.eq("threads below us", i, perRow * static_cast<int>(block.y), counts[i]);
      }
    }
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dcounts));
  }
  std::printf("thread_ranges: %d index tests, with and without barriers, 1-D and 2-D blocks\n",
              kTests);
  return check.finish();
}
