// Grid-stride loops in kernels that also wait at barriers (the CPU device runs them as
// continuations: every thread's loop runs within one round, between the barriers around it).
// Threads leave the loop at different iterations when n is not a multiple of the grid's threads
// and wait at the barrier after it for the others; 1-D and 2-D blocks, power-of-two strides and
// others. Every result is checked against the host.
#include <vector>

#include "e2e_check.h"

constexpr int kBins = 256;

// Per-block bins in shared memory, merged into `bins` with global atomics.
__global__ void histogram(const unsigned char* data, unsigned* bins, int n) {
  __shared__ unsigned local[kBins];
  int linear = threadIdx.y * blockDim.x + threadIdx.x;
  int threads = blockDim.x * blockDim.y;
  for (int b = linear; b < kBins; b += threads) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * threads + linear; i < n; i += threads * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = linear; b < kBins; b += threads) atomicAdd(&bins[b], local[b]);
}

// Each thread sums its elements, then the block adds the sums in a tree: one partial per block.
__global__ void sumThenTree(const int* x, long long* partial, int n) {
  __shared__ long long sums[256];
  long long sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    sum += x[i];
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) sums[threadIdx.x] += sums[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

// Each thread records in shared memory how many iterations it took; after the barrier every
// thread reads its mirror's count (thread blockDim.x - 1 - tid): a thread that left the loop
// early must still see the count of one that was still looping.
__global__ void countsAfterLoop(const float* x, float* y, int* mirrored, int n) {
  __shared__ int taken[1024];
  int iterations = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = x[i] * 2.0f + 1.0f;
    ++iterations;
  }
  taken[threadIdx.x] = iterations;
  __syncthreads();
  mirrored[blockIdx.x * blockDim.x + threadIdx.x] = taken[blockDim.x - 1 - threadIdx.x];
}

int main() {
  Checker check("grid_stride_barriers");
  const int n = (1 << 20) + 12345;  // not a multiple of any grid's threads below
  std::vector<unsigned char> data(n);
  std::vector<int> xi(n);
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i) {
    data[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    xi[i] = i % 1000 - 400;
    x[i] = static_cast<float>(i % 77);
  }
  std::vector<unsigned> wantBins(kBins, 0);
  for (unsigned char d : data) ++wantBins[d];
  long long wantSum = 0;
  for (int v : xi) wantSum += v;

  unsigned char* ddata;
  unsigned* dbins;
  int* dxi;
  float *dx, *dy;
  CHECK(cudaMalloc(&ddata, n));
  CHECK(cudaMalloc(&dbins, kBins * sizeof(unsigned)));
  CHECK(cudaMalloc(&dxi, n * sizeof(int)));
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(ddata, data.data(), n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dxi, xi.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  for (dim3 block : {dim3(256), dim3(96), dim3(32, 4)}) {
    for (int blocks : {7, 64}) {
      CHECK(cudaMemset(dbins, 0, kBins * sizeof(unsigned)));
      histogram<<<blocks, block>>>(ddata, dbins, n);
      CHECK_LAUNCH();
      std::vector<unsigned> bins(kBins);
      CHECK(cudaMemcpy(bins.data(), dbins, kBins * sizeof(unsigned), cudaMemcpyDeviceToHost));
      for (int b = 0; b < kBins; ++b) check.eq("histogram bin", b, wantBins[b], bins[b]);
    }
  }

  for (int threads : {256, 128}) {
    for (int blocks : {5, 48}) {
      long long* dpartial;
      CHECK(cudaMalloc(&dpartial, blocks * sizeof(long long)));
      sumThenTree<<<blocks, threads>>>(dxi, dpartial, n);
      CHECK_LAUNCH();
      std::vector<long long> partial(blocks);
      CHECK(
          cudaMemcpy(partial.data(), dpartial, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
      long long total = 0;
      for (int b = 0; b < blocks; ++b) {
        long long want = 0;  // the block's threads' elements
        for (int t = 0; t < threads; ++t)
          for (long long i = b * threads + t; i < n; i += static_cast<long long>(threads) * blocks)
            want += xi[i];
        check.eq("sumThenTree partial", b, want, partial[b]);
        total += partial[b];
      }
      check.eq("sumThenTree total", blocks, wantSum, total);
      CHECK(cudaFree(dpartial));
    }
  }

  for (int blocks : {3, 40}) {
    const int threads = 192, stride = blocks * threads;
    int* dmirrored;
    CHECK(cudaMalloc(&dmirrored, stride * sizeof(int)));
    countsAfterLoop<<<blocks, threads>>>(dx, dy, dmirrored, n);
    CHECK_LAUNCH();
    std::vector<int> mirrored(stride);
    std::vector<float> y(n);
    CHECK(cudaMemcpy(mirrored.data(), dmirrored, stride * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int g = 0; g < stride; ++g) {
      int mirror = g / threads * threads + (threads - 1 - g % threads);
      int want = (n - 1 - mirror) / stride + 1;  // the mirror thread's iterations
      check.eq("countsAfterLoop mirrored", g, want, mirrored[g]);
    }
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += y[i] != x[i] * 2.0f + 1.0f;
    check.eq("countsAfterLoop wrong elements", blocks, 0, wrong);
    CHECK(cudaFree(dmirrored));
  }

  CHECK(cudaFree(ddata));
  CHECK(cudaFree(dbins));
  CHECK(cudaFree(dxi));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  std::printf("grid_stride_barriers: histograms, sums and counts around grid-stride loops\n");
  return check.finish();
}
