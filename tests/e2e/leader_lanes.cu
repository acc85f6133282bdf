// Leader lanes: one thread in every 8, 32 or 64 (`(threadIdx.x & (P - 1)) == L`) stores for its
// group after a barrier, as warp leaders do in block reductions. The CPU device unrolls such a
// round by the period instead of testing every thread (host_thread_ranges.cpp); block sizes that
// are not multiples of the period take the unrolled loop's remainder. Checked against the same
// selection made on the host, with every other output left as it was.
#include <vector>

#include "e2e_check.h"

constexpr int kUntouched = -7;

__host__ __device__ int cellValue(const int* in, int block, int n, int t) {
  return in[block * n + t] * 3 + 1;
}

// The leader's store is the round's only effect: the unrolled form.
template <int kPeriod, int kLane>
__global__ void leaders(const int* in, int* out) {
  __shared__ int cells[1024];
  int t = threadIdx.x, n = blockDim.x;
  cells[t] = cellValue(in, blockIdx.x, n, t);
  __syncthreads();
  if ((t & (kPeriod - 1)) == kLane) out[blockIdx.x * n + t] = cells[t] + cells[(t + 1) % n];
}

// The same selection written as `!=` with an early return.
__global__ void leadersByReturn(const int* in, int* out) {
  __shared__ int cells[1024];
  int t = threadIdx.x, n = blockDim.x;
  cells[t] = cellValue(in, blockIdx.x, n, t);
  __syncthreads();
  if ((t & 31) != 0) return;
  out[blockIdx.x * n + t] = cells[(t + n - 1) % n] - cells[t];
}

// Every thread also stores (not unrolled): the leaders' stores mixed with the others'.
__global__ void leadersAmongOthers(const int* in, int* out, int* all) {
  __shared__ int cells[1024];
  int t = threadIdx.x, n = blockDim.x;
  cells[t] = cellValue(in, blockIdx.x, n, t);
  __syncthreads();
  all[blockIdx.x * n + t] = cells[n - 1 - t];
  if ((t & 15) == 3) out[blockIdx.x * n + t] = cells[t] * 2;
}

struct Launch {
  const char* name;
  int period, lane;
  int (*expected)(const std::vector<int>& in, int block, int n, int t);
  void (*run)(int blocks, int n, const int* in, int* out, int* all);
};

template <int kPeriod, int kLane>
Launch leaderLaunch(const char* name) {
  return {name, kPeriod, kLane,
          [](const std::vector<int>& in, int b, int n, int t) {
            return cellValue(in.data(), b, n, t) + cellValue(in.data(), b, n, (t + 1) % n);
          },
          [](int blocks, int n, const int* in, int* out, int*) {
            leaders<kPeriod, kLane><<<blocks, n>>>(in, out);
          }};
}

int main() {
  Checker check("leader_lanes");
  const int blocks = 5;
  std::vector<Launch> launches = {
      leaderLaunch<32, 0>("period 32, lane 0"),
      leaderLaunch<32, 5>("period 32, lane 5"),
      leaderLaunch<8, 7>("period 8, lane 7"),
      leaderLaunch<64, 0>("period 64, lane 0"),
      {"period 32 by return", 32, 0,
       [](const std::vector<int>& in, int b, int n, int t) {
         return cellValue(in.data(), b, n, (t + n - 1) % n) - cellValue(in.data(), b, n, t);
       },
       [](int blocks, int n, const int* in, int* out, int*) {
         leadersByReturn<<<blocks, n>>>(in, out);
       }},
      {"period 16 among others", 16, 3,
       [](const std::vector<int>& in, int b, int n, int t) {
         return cellValue(in.data(), b, n, t) * 2;
       },
       [](int blocks, int n, const int* in, int* out, int* all) {
         leadersAmongOthers<<<blocks, n>>>(in, out, all);
       }},
  };
  for (int n : {256, 100, 1024, 40, 7}) {
    std::vector<int> in(blocks * n);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>((i * 2654435761u) % 1000) - 500;
    int *dIn, *dOut, *dAll;
    CHECK(cudaMalloc(&dIn, in.size() * sizeof(int)));
    CHECK(cudaMalloc(&dOut, in.size() * sizeof(int)));
    CHECK(cudaMalloc(&dAll, in.size() * sizeof(int)));
    CHECK(cudaMemcpy(dIn, in.data(), in.size() * sizeof(int), cudaMemcpyHostToDevice));
    for (const Launch& launch : launches) {
      std::vector<int> untouched(in.size(), kUntouched);
      CHECK(cudaMemcpy(dOut, untouched.data(), in.size() * sizeof(int), cudaMemcpyHostToDevice));
      launch.run(blocks, n, dIn, dOut, dAll);
      CHECK_LAUNCH();
      std::vector<int> out(in.size());
      CHECK(cudaMemcpy(out.data(), dOut, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
      for (int b = 0; b < blocks; ++b)
        for (int t = 0; t < n; ++t) {
          bool leader = (t & (launch.period - 1)) == launch.lane;
          int want = leader ? launch.expected(in, b, n, t) : kUntouched;
          check.eq(launch.name, static_cast<long long>(n) * 100000 + b * n + t, want,
                   out[b * n + t]);
        }
      if (launch.period == 16) {
        std::vector<int> all(in.size());
        CHECK(cudaMemcpy(all.data(), dAll, all.size() * sizeof(int), cudaMemcpyDeviceToHost));
        for (int b = 0; b < blocks; ++b)
          for (int t = 0; t < n; ++t)
            check.eq("all threads' stores", static_cast<long long>(n) * 100000 + b * n + t,
                     cellValue(in.data(), b, n, n - 1 - t), all[b * n + t]);
      }
    }
    CHECK(cudaFree(dIn));
    CHECK(cudaFree(dOut));
    CHECK(cudaFree(dAll));
  }
  return check.finish();
}
