// Grid-stride loops in kernels that also wait at barriers (the CPU device runs them as
// continuations: every thread's loop runs within one round, between the barriers around it,
// interchanged with the round's loop over the threads where that is exact).
// Threads leave the loop at different iterations when n is not a multiple of the grid's threads
// and wait at the barrier after it for the others; 1-D and 2-D blocks, power-of-two strides and
// others. Every result is checked against the host.
#include <cstdint>
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

// A grid-stride loop whose coefficient comes from shared memory, read before the loop (the
// interchanged passes may read it again: the loop writes only global memory).
__global__ void scaleBySharedCoefficient(const float* x, float* y, int n, float a) {
  __shared__ float coefficient;
  if (threadIdx.x == 0) coefficient = a;
  __syncthreads();
  float c = coefficient;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = c * x[i] + 1.0f;
}

// Each thread reads its shared counter before its loop and increments it in every iteration:
// every element must get the value from before the loop (code before a loop that writes shared
// memory must not run again).
__global__ void counterBeforeLoop(int* out, int n) {
  __shared__ int counters[1024];
  counters[threadIdx.x] = 1000 * threadIdx.x;
  __syncthreads();
  int before = counters[threadIdx.x];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&counters[threadIdx.x], 1);
    out[i] = before;
  }
}

// The CUDA samples' reduce6 shape: an unsigned grid-stride loop taking two elements a block
// apart, the second under its own test, into a per-thread sum; then a tree.
template <unsigned kBlock>
__global__ void twoLoadsThenTree(const int* in, long long* out, unsigned n) {
  __shared__ long long sums[kBlock];
  unsigned tid = threadIdx.x;
  long long sum = 0;
  for (unsigned i = blockIdx.x * (kBlock * 2) + tid; i < n; i += kBlock * 2 * gridDim.x) {
    sum += in[i];
    if (i + kBlock < n) sum += in[i + kBlock];
  }
  sums[tid] = sum;
  __syncthreads();
  for (unsigned s = kBlock / 2; s > 0; s >>= 1) {
    if (tid < s) sums[tid] += sums[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sums[0];
}

// Per-warp sub-histograms cleared by a block-stride loop over all of them, filled by a
// grid-stride loop, merged by a block-stride loop over the bins.
__global__ void warpHistograms(const unsigned char* data, unsigned* bins, int n) {
  __shared__ unsigned sub[8][kBins];
  for (int j = threadIdx.x; j < 8 * kBins; j += blockDim.x) (&sub[0][0])[j] = 0;
  __syncthreads();
  unsigned* mine = sub[threadIdx.x / 32 % 8];
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&mine[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
    unsigned total = 0;
    for (int w = 0; w < 8; ++w) total += sub[w][b];
    atomicAdd(&bins[b], total);
  }
}

// A stride loop that reads shared memory other threads wrote before the barrier.
__global__ void mirroredStage(const int* x, int* out, int n) {
  __shared__ int stage[1024];
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) stage[j] = j < n ? x[j] : 0;
  __syncthreads();
  int sum = 0;
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) sum += stage[1023 - j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

// A stride loop near the ends of its type's range. The CPU device runs a round's stride loops
// interchanged (iteration k of every thread, then k + 1) when no thread's index can wrap before
// it leaves, and as written otherwise; either way each thread takes exactly the iterations its
// own loop takes, which the shared counters record (atomics: no register can hold them).
template <typename Index>
__global__ void strideCounts(Index base, Index n, unsigned* hits, unsigned* sums) {
  __shared__ unsigned count[256], total[256];
  count[threadIdx.x] = 0;
  total[threadIdx.x] = 0;
  __syncthreads();
  // (The start computed unsigned: a signed overflow would be undefined in C++.)
  for (Index i = static_cast<Index>(static_cast<unsigned>(base) + threadIdx.x); i < n;
       i += 2 * blockDim.x) {
    atomicAdd(&count[threadIdx.x], 1u);
    atomicAdd(&total[threadIdx.x], static_cast<unsigned>(i));
  }
  __syncthreads();
  hits[threadIdx.x] = count[threadIdx.x];
  sums[threadIdx.x] = total[threadIdx.x];
}

// The host's answer for thread `t`, with the device's wrapping 32-bit arithmetic.
template <typename Index>
void strideCountsOnHost(Index base, Index n, unsigned threads, unsigned t, unsigned& hits,
                        unsigned& sums) {
  hits = sums = 0;
  auto wrapped = [](uint32_t v) { return static_cast<Index>(v); };
  for (Index i = wrapped(static_cast<uint32_t>(base) + t); i < n;
       i = wrapped(static_cast<uint32_t>(i) + 2 * threads)) {
    ++hits;
    sums += static_cast<unsigned>(i);
  }
}

template <typename Index>
void checkStrideCounts(Checker& check, const char* what, Index base, Index n) {
  const unsigned threads = 64;
  unsigned *dhits, *dsums;
  CHECK(cudaMalloc(&dhits, threads * sizeof(unsigned)));
  CHECK(cudaMalloc(&dsums, threads * sizeof(unsigned)));
  strideCounts<Index><<<1, threads>>>(base, n, dhits, dsums);
  CHECK_LAUNCH();
  std::vector<unsigned> hits(threads), sums(threads);
  CHECK(cudaMemcpy(hits.data(), dhits, threads * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sums.data(), dsums, threads * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (unsigned t = 0; t < threads; ++t) {
    unsigned wantHits, wantSums;
    strideCountsOnHost(base, n, threads, t, wantHits, wantSums);
    check.eq(what, static_cast<int>(t), wantHits, hits[t]);
    check.eq(what, static_cast<int>(t), wantSums, sums[t]);
  }
  CHECK(cudaFree(dhits));
  CHECK(cudaFree(dsums));
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

  {
    const int blocks = 6, threads = 128;
    scaleBySharedCoefficient<<<blocks, threads>>>(dx, dy, n, 3.0f);
    CHECK_LAUNCH();
    std::vector<float> y(n);
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += y[i] != 3.0f * x[i] + 1.0f;
    check.eq("scaleBySharedCoefficient wrong elements", 0, 0, wrong);
    int* dout;
    CHECK(cudaMalloc(&dout, n * sizeof(int)));
    counterBeforeLoop<<<blocks, threads>>>(dout, n);
    CHECK_LAUNCH();
    std::vector<int> out(n);
    CHECK(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < n; ++i) wrong += out[i] != 1000 * (i % (blocks * threads) % threads);
    check.eq("counterBeforeLoop wrong elements", 0, 0, wrong);
    CHECK(cudaFree(dout));
  }

  for (int blocks : {1, 7, 64}) {
    long long* dpartial;
    CHECK(cudaMalloc(&dpartial, blocks * sizeof(long long)));
    twoLoadsThenTree<256><<<blocks, 256>>>(dxi, dpartial, n);
    CHECK_LAUNCH();
    std::vector<long long> partial(blocks);
    CHECK(cudaMemcpy(partial.data(), dpartial, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
    long long total = 0;
    for (long long p : partial) total += p;
    check.eq("twoLoadsThenTree total", blocks, wantSum, total);
    CHECK(cudaFree(dpartial));
  }
  for (int blocks : {3, 40}) {
    for (int threads : {96, 256}) {
      CHECK(cudaMemset(dbins, 0, kBins * sizeof(unsigned)));
      warpHistograms<<<blocks, threads>>>(ddata, dbins, n);
      CHECK_LAUNCH();
      std::vector<unsigned> bins(kBins);
      CHECK(cudaMemcpy(bins.data(), dbins, kBins * sizeof(unsigned), cudaMemcpyDeviceToHost));
      for (int b = 0; b < kBins; ++b) check.eq("warpHistograms bin", b, wantBins[b], bins[b]);
    }
  }
  for (int threads : {64, 192}) {
    const int blocks = 2, staged = 700;
    int* dout;
    CHECK(cudaMalloc(&dout, blocks * threads * sizeof(int)));
    mirroredStage<<<blocks, threads>>>(dxi, dout, staged);
    CHECK_LAUNCH();
    std::vector<int> out(blocks * threads);
    CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(int), cudaMemcpyDeviceToHost));
    for (int t = 0; t < blocks * threads; ++t) {
      int want = 0;
      for (int j = t % threads; j < 1024; j += threads)
        want += 1023 - j < staged ? xi[1023 - j] : 0;
      check.eq("mirroredStage", t, want, out[t]);
    }
    CHECK(cudaFree(dout));
  }

  // Signed: an ordinary range; indices near INT_MAX that cannot wrap (n + stride - 1 fits);
  // n + stride - 1 past INT_MAX although no thread wraps (the loops as written); starts that
  // wrap (INT_MAX - 10 + tid: threads 11 and up start near INT_MIN, below n).
  const int intMax = 2147483647, intMin = -intMax - 1;
  checkStrideCounts<int>(check, "signed strides", -300, 5000);
  checkStrideCounts<int>(check, "signed strides near INT_MAX", intMax - 200 - 768, intMax - 200);
  checkStrideCounts<int>(check, "signed bound past INT_MAX", intMax - 100 - 768, intMax - 100);
  checkStrideCounts<int>(check, "signed starts that wrap", intMax - 10, intMin + 1000);
  // Unsigned: past INT_MAX (indices compared unsigned); a bound past UINT_MAX - stride.
  checkStrideCounts<unsigned>(check, "unsigned strides", 4000000000u - 5000, 4000000000u);
  checkStrideCounts<unsigned>(check, "unsigned bound past UINT_MAX", 4294967295u - 100 - 768,
                              4294967295u - 100);

  CHECK(cudaFree(ddata));
  CHECK(cudaFree(dbins));
  CHECK(cudaFree(dxi));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  std::printf("grid_stride_barriers: histograms, sums and counts around grid-stride loops\n");
  return check.finish();
}
