// Tiled SGEMM (C = A * B, row-major) with 16x16 shared-memory tiles and __syncthreads between
// the load and compute phases. Two cases: square 256x256 with small integer values (every
// product and partial sum is an integer below 2^24, so the result is exact in any summation
// order), and a ragged 200x136x264 case with fractional values checked with a tolerance.
#include <vector>

#include "e2e_check.h"

constexpr int kTile = 16;

__global__ void sgemm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float tileA[kTile][kTile];
  __shared__ float tileB[kTile][kTile];
  int row = blockIdx.y * kTile + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kTile) {
    int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    tileA[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    tileB[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < kTile; ++k) acc += tileA[threadIdx.y][k] * tileB[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

// Runs one case; `exact` selects exact comparison vs the tolerance below.
static void runCase(Checker& check, const char* what, int M, int N, int K, bool exact) {
  std::vector<float> A(M * K), B(K * N), C(M * N);
  for (int i = 0; i < M * K; ++i)
    A[i] = exact ? static_cast<float>(i * 7 % 9 - 4) : static_cast<float>(i % 13) / 8.0f - 0.7f;
  for (int i = 0; i < K * N; ++i)
    B[i] = exact ? static_cast<float>(i * 5 % 7 - 3) : static_cast<float>(i % 11) / 16.0f - 0.3f;

  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, A.size() * sizeof(float)));
  CHECK(cudaMalloc(&dB, B.size() * sizeof(float)));
  CHECK(cudaMalloc(&dC, C.size() * sizeof(float)));
  CHECK(cudaMemcpy(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));
  dim3 block(kTile, kTile);
  dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
  sgemm<<<grid, block>>>(dA, dB, dC, M, N, K);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(C.data(), dC, C.size() * sizeof(float), cudaMemcpyDeviceToHost));

  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      double ref = 0.0;
      double absSum = 0.0;
      for (int k = 0; k < K; ++k) {
        ref += static_cast<double>(A[r * K + k]) * B[k * N + c];
        absSum += std::fabs(static_cast<double>(A[r * K + k]) * B[k * N + c]);
      }
      if (exact) {
        check.eq(what, r * N + c, static_cast<float>(ref), C[r * N + c]);
      } else {
        // K float roundings (with or without fused multiply-add) each err by at most
        // 2^-24 of the running magnitude, bounded by absSum: K * 2^-24 * absSum, doubled.
        check.near(what, r * N + c, ref, C[r * N + c], 2.0 * K * absSum / 16777216.0);
      }
    }
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
}

int main() {
  Checker check("matrix_mul");
  runCase(check, "C 256x256 exact", 256, 256, 256, true);
  runCase(check, "C 200x136 (K=264)", 200, 136, 264, false);
  std::printf("matrix_mul: 256x256x256 and 200x136x264\n");
  return check.finish();
}
