// Cooperative launches: a kernel that synchronises its whole grid with
// cooperative_groups::this_grid().sync() three times per iteration (smoothing, a grid-wide sum,
// a step that every element takes from that sum), over several times as many blocks as the
// device has multiprocessors, launched with cudaLaunchCooperativeKernel and with
// cudaLaunchKernelEx + cudaLaunchAttributeCooperative; checked against the same steps on the
// host. grid_group::is_valid() must be false under an ordinary launch and true under a
// cooperative one, and a grid larger than the occupancy allows must be refused.
#include <cooperative_groups.h>

#include <vector>

#include "e2e_check.h"

namespace cg = cooperative_groups;

constexpr int kThreads = 128;
constexpr int kIterations = 10;

__device__ __host__ inline long long initial(int i) { return (i * 37 + 11) % 1000; }

// The step each element takes from the iteration's grid-wide sum.
__device__ __host__ inline long long adjust(int i, long long sum) { return (i % 7) * (sum % 101); }

__global__ void iterate(long long* x, long long* y, unsigned long long* sums, int n,
                        int iterations) {
  cg::grid_group grid = cg::this_grid();
  __shared__ unsigned long long partial[kThreads];
  int stride = gridDim.x * blockDim.x;
  int first = blockIdx.x * blockDim.x + threadIdx.x;
  for (int it = 0; it < iterations; ++it) {
    // 1. Smoothing: reads neighbours other blocks wrote in the previous iteration.
    for (int i = first; i < n; i += stride) {
      long long left = x[i > 0 ? i - 1 : 0], right = x[i + 1 < n ? i + 1 : n - 1];
      y[i] = (left + 2 * x[i] + right) / 4;
    }
    grid.sync();
    // 2. A grid-wide sum: per-block tree reduction, then one atomic per block.
    unsigned long long mine = 0;
    for (int i = first; i < n; i += stride) mine += static_cast<unsigned long long>(y[i]);
    partial[threadIdx.x] = mine;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(&sums[it], partial[0]);
    grid.sync();
    // 3. Every element uses the complete sum.
    long long sum = static_cast<long long>(sums[it]);
    for (int i = first; i < n; i += stride) x[i] = y[i] + adjust(i, sum);
    grid.sync();
  }
}

__global__ void gridValidity(int* valid) {
  if (threadIdx.x == 0) valid[blockIdx.x] = cg::this_grid().is_valid() ? 1 : 0;
}

void hostReference(std::vector<long long>& x, std::vector<unsigned long long>& sums) {
  int n = static_cast<int>(x.size());
  std::vector<long long> y(n);
  for (int it = 0; it < kIterations; ++it) {
    for (int i = 0; i < n; ++i) {
      long long left = x[i > 0 ? i - 1 : 0], right = x[i + 1 < n ? i + 1 : n - 1];
      y[i] = (left + 2 * x[i] + right) / 4;
    }
    unsigned long long sum = 0;
    for (int i = 0; i < n; ++i) sum += static_cast<unsigned long long>(y[i]);
    sums[it] = sum;
    for (int i = 0; i < n; ++i) x[i] = y[i] + adjust(i, static_cast<long long>(sum));
  }
}

// Runs `iterate` once through `launch` and compares with the host.
template <class Launch>
void runAndCheck(Checker& check, const char* how, int blocks, int n, Launch launch) {
  long long *x, *y;
  unsigned long long* sums;
  CHECK(cudaMalloc(&x, n * sizeof(long long)));
  CHECK(cudaMalloc(&y, n * sizeof(long long)));
  CHECK(cudaMalloc(&sums, kIterations * sizeof(unsigned long long)));
  std::vector<long long> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = initial(i);
  CHECK(cudaMemcpy(x, hx.data(), n * sizeof(long long), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(sums, 0, kIterations * sizeof(unsigned long long)));
  int iterations = kIterations;
  void* args[] = {&x, &y, &sums, &n, &iterations};
  CHECK(launch(args));
  CHECK(cudaDeviceSynchronize());
  std::vector<long long> got(n);
  std::vector<unsigned long long> gotSums(kIterations), wantSums(kIterations);
  CHECK(cudaMemcpy(got.data(), x, n * sizeof(long long), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(gotSums.data(), sums, kIterations * sizeof(unsigned long long),
                   cudaMemcpyDeviceToHost));
  hostReference(hx, wantSums);
  for (int it = 0; it < kIterations; ++it) check.eq(how, it, wantSums[it], gotSums[it]);
  for (int i = 0; i < n; ++i) check.eq(how, i, hx[i], got[i]);
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(sums));
  std::printf("cooperative_groups: %s: %d blocks x %d threads, %d elements, %d grid syncs\n", how,
              blocks, kThreads, n, 3 * kIterations);
}

int main() {
  Checker check("cooperative_groups");
  int device = 0, cooperative = 0, multiprocessors = 0, perMultiprocessor = 0;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  check.expect(cooperative == 1, "cudaDevAttrCooperativeLaunch is 1");
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perMultiprocessor, iterate, kThreads, 0));
  check.expect(perMultiprocessor >= 1, "at least one block per multiprocessor");
  // Several blocks per multiprocessor: more blocks than cores wait for one another.
  int blocks = multiprocessors * (perMultiprocessor < 4 ? perMultiprocessor : 4);
  int n = blocks * kThreads * 3 + 17;

  runAndCheck(check, "cudaLaunchCooperativeKernel", blocks, n, [&](void** args) {
    return cudaLaunchCooperativeKernel(reinterpret_cast<void*>(iterate), dim3(blocks),
                                       dim3(kThreads), args, 0, nullptr);
  });
  cudaStream_t stream;
  CHECK(cudaStreamCreate(&stream));
  runAndCheck(check, "cudaLaunchKernelEx", blocks, n, [&](void** args) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeCooperative;
    attribute.val.cooperative = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(kThreads);
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelExC(&config, reinterpret_cast<void*>(iterate), args);
  });
  CHECK(cudaStreamDestroy(stream));

  // is_valid(): only a cooperative launch has a grid workspace.
  int* valid;
  CHECK(cudaMalloc(&valid, blocks * sizeof(int)));
  std::vector<int> hostValid(blocks);
  CHECK(cudaMemset(valid, 0xff, blocks * sizeof(int)));
  gridValidity<<<blocks, 32>>>(valid);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(hostValid.data(), valid, blocks * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) check.eq("is_valid (ordinary launch)", b, 0, hostValid[b]);
  void* validArgs[] = {&valid};
  CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(gridValidity), dim3(blocks), dim3(32),
                                    validArgs, 0, nullptr));
  CHECK(cudaMemcpy(hostValid.data(), valid, blocks * sizeof(int), cudaMemcpyDeviceToHost));
  for (int b = 0; b < blocks; ++b) check.eq("is_valid (cooperative launch)", b, 1, hostValid[b]);
  CHECK(cudaFree(valid));

  // One block more than the device holds at once is refused, and the error is not sticky.
  int tooMany = multiprocessors * perMultiprocessor + 1;
  long long* unused = nullptr;
  unsigned long long* unusedSums = nullptr;
  int zero = 0;
  void* args[] = {&unused, &unused, &unusedSums, &zero, &zero};
  cudaError_t refused = cudaLaunchCooperativeKernel(reinterpret_cast<void*>(iterate), dim3(tooMany),
                                                    dim3(kThreads), args, 0, nullptr);
  check.expect(refused == cudaErrorCooperativeLaunchTooLarge,
               "a grid over the occupancy gives cudaErrorCooperativeLaunchTooLarge");
  (void)cudaGetLastError();
  CHECK(cudaDeviceSynchronize());
  return check.finish();
}
