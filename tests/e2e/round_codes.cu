// Rounds whose threads stop at different waits: odd and even lanes of every warp synchronise at
// two different __syncwarp sites between block barriers, so each such round of the CPU device
// ends with mixed codes, which the runtime reads per thread. A kernel with a few waits (its
// rounds store the codes as bytes) and one with more than 62 (as 32-bit words); both checked
// against the same rotations done on the host.
#include <vector>

#include "e2e_check.h"

template <int kStages>
__global__ void rotateStages(int* out) {
  __shared__ int values[256];
  int t = threadIdx.x, n = blockDim.x;
  values[t] = t * 3 + blockIdx.x;
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kStages; ++k) {
    int v = values[(t + 1) % n];
    if (t & 1) {
      v += 1;
      __syncwarp(0xaaaaaaaau);
    } else {
      v += 2;
      __syncwarp(0x55555555u);
    }
    __syncthreads();
    values[t] = v + k;
    __syncthreads();
  }
  out[blockIdx.x * n + t] = values[t];
}

std::vector<int> expectedStages(int block, int n, int stages) {
  std::vector<int> values(n), next(n);
  for (int t = 0; t < n; ++t) values[t] = t * 3 + block;
  for (int k = 0; k < stages; ++k) {
    for (int t = 0; t < n; ++t) next[t] = values[(t + 1) % n] + ((t & 1) ? 1 : 2) + k;
    values = next;
  }
  return values;
}

template <int kStages>
void checkStages(Checker& check, const char* name, int blocks, int threads) {
  int* out;
  CHECK(cudaMalloc(&out, blocks * threads * sizeof(int)));
  rotateStages<kStages><<<blocks, threads>>>(out);
  CHECK_LAUNCH();
  std::vector<int> got(blocks * threads);
  CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) {
    std::vector<int> want = expectedStages(b, threads, kStages);
    for (int t = 0; t < threads; ++t)
      check.eq(name, b * threads + t, want[t], got[b * threads + t]);
  }
  CHECK(cudaFree(out));
}

int main() {
  Checker check("round_codes");
  for (int threads : {64, 96, 256}) {
    checkStages<3>(check, "few waits", 5, threads);    // 10 waits
    checkStages<24>(check, "many waits", 5, threads);  // 73 waits
  }
  std::printf("round_codes: rotations through mixed rounds, 10 and 73 waits\n");
  return check.finish();
}
