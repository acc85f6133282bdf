// Grid-stride loops the CPU device may run over the loop's index instead of block by block (the
// flat form: a kernel that is one `for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i +=
// blockDim.x * gridDim.x)` loop whose body knows its thread only through i), and near misses it
// must run as CUDA defines them: each result is checked against a host model of CUDA's threads.
//  * flattened: int, unsigned and 64-bit indices; blockDim and gridDim read as data, the next
//    index too (the loop's own step, as a value); a value each iteration reads from an earlier
//    iteration of its own thread (each thread's iterations in order, though the device runs
//    many threads' at once), in grids of 32 to 102,400 threads;
//  * not flattened: the thread's indices read before the loop and used in it, a do-while (every
//    thread runs a first iteration, even past n), a loop only some threads enter, a 2-D block
//    (each x index taken by every row of threads), a per-thread sum added after the loop, and
//    writes through a stray pointer, which must fail the launch.
#include <cstdint>
#include <vector>

#include "e2e_check.h"

__global__ void scaleInt(int n, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = 3.0f * x[i] - 1.0f;
}

__global__ void scaleUnsigned(unsigned n, const float* x, float* y) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = x[i] * x[i];
}

__global__ void scaleWide(size_t n, const float* x, float* y) {
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += size_t(blockDim.x) * gridDim.x)
    y[i] = x[i] + 0.5f;
}

// The launch's extent as data.
__global__ void extentAsData(int n, int* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = i % gridDim.x * 1000 + blockDim.x;
}

// The next index as data: `i + blockDim.x * gridDim.x` is the loop's own step, which the flat form
// replaces (by one) only as the step.
__global__ void nextIndexAsData(int n, int* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = i + blockDim.x * gridDim.x;
}

// Each iteration reads what its thread wrote one stride earlier, y[i] = y[previous[i]] + 1 with
// previous[i] = i - stride (-1 for a thread's first), so that the count along each thread's
// indices comes out right only if its iterations run in order. (The index comes from memory: a
// y[i - stride] the compiler would forward from the last iteration as a value it carries.)
__global__ void chainPerThread(int n, const int* previous, int* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = (previous[i] >= 0 ? y[previous[i]] : 0) + 1;
}

// The thread's indices read before the loop and used in it: the body knows its thread otherwise
// than through i.
__global__ void indicesAsData(int n, int* y) {
  int t = threadIdx.x, b = blockIdx.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = t * 1000 + b;
}

// Every thread runs one iteration before the test: threads past n count one visit too.
__global__ void doWhileVisits(int n, int* visits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  do {
    atomicAdd(&visits[i % n], 1);
    i += blockDim.x * gridDim.x;
  } while (i < n);
}

// Only the first 5 threads of each block take the loop.
__global__ void someThreadsVisit(int n, int* visits) {
  if (threadIdx.x >= 5) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&visits[i], 1);
}

// In a 2-D block every row of threads takes every x index.
__global__ void rowsVisit(int n, int* visits) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&visits[i], 1);
}

// A per-thread sum, added to the total once the thread's loop is done.
__global__ void sumAfterLoop(int n, const int* x, unsigned long long* total, int* adds) {
  long long sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    sum += x[i];
  atomicAdd(total, static_cast<unsigned long long>(sum));
  atomicAdd(adds, 1);
}

int main() {
  Checker check("grid_stride_flat");
  const int n = 100000 + 77;
  std::vector<float> x(n);
  std::vector<int> xi(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 101) - 50.0f;
    xi[i] = i % 1000 - 300;
  }
  float *dx, *dy;
  int *dyi, *dxi;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMalloc(&dyi, n * sizeof(int)));
  CHECK(cudaMalloc(&dxi, n * sizeof(int)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dxi, xi.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  std::vector<float> y(n);
  std::vector<int> yi(n);
  auto countWrong = [&](auto expected) {
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += !expected(i);
    return wrong;
  };

  struct Grid {
    int blocks, threads;
  };
  for (Grid g : {Grid{1, 32}, Grid{1, 64}, Grid{3, 96}, Grid{40, 256}, Grid{400, 256}}) {
    const int stride = g.blocks * g.threads;
    CHECK(cudaMemset(dy, 0, n * sizeof(float)));
    scaleInt<<<g.blocks, g.threads>>>(n, dx, dy);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    check.eq("scaleInt wrong", stride, 0, countWrong([&](int i) { return y[i] == 3 * x[i] - 1; }));

    CHECK(cudaMemset(dy, 0, n * sizeof(float)));
    scaleUnsigned<<<g.blocks, g.threads>>>(n, dx, dy);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    check.eq("scaleUnsigned wrong", stride, 0,
             countWrong([&](int i) { return y[i] == x[i] * x[i]; }));

    CHECK(cudaMemset(dy, 0, n * sizeof(float)));
    scaleWide<<<g.blocks, g.threads>>>(n, dx, dy);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    check.eq("scaleWide wrong", stride, 0, countWrong([&](int i) { return y[i] == x[i] + 0.5f; }));

    extentAsData<<<g.blocks, g.threads>>>(n, dyi);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(yi.data(), dyi, n * sizeof(int), cudaMemcpyDeviceToHost));
    check.eq("extentAsData wrong", stride, 0,
             countWrong([&](int i) { return yi[i] == i % g.blocks * 1000 + g.threads; }));

    nextIndexAsData<<<g.blocks, g.threads>>>(n, dyi);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(yi.data(), dyi, n * sizeof(int), cudaMemcpyDeviceToHost));
    check.eq("nextIndexAsData wrong", stride, 0,
             countWrong([&](int i) { return yi[i] == i + stride; }));

    std::vector<int> previous(n);
    for (int i = 0; i < n; ++i) previous[i] = i - stride;
    CHECK(cudaMemcpy(dxi, previous.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    chainPerThread<<<g.blocks, g.threads>>>(n, dxi, dyi);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(yi.data(), dyi, n * sizeof(int), cudaMemcpyDeviceToHost));
    check.eq("chainPerThread wrong", stride, 0,
             countWrong([&](int i) { return yi[i] == i / stride + 1; }));

    // Near misses.
    indicesAsData<<<g.blocks, g.threads>>>(n, dyi);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(yi.data(), dyi, n * sizeof(int), cudaMemcpyDeviceToHost));
    check.eq("indicesAsData wrong", stride, 0, countWrong([&](int i) {
               int thread = i % stride;
               return yi[i] == thread % g.threads * 1000 + thread / g.threads;
             }));

    CHECK(cudaMemset(dyi, 0, n * sizeof(int)));
    doWhileVisits<<<g.blocks, g.threads>>>(n, dyi);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(yi.data(), dyi, n * sizeof(int), cudaMemcpyDeviceToHost));
    {
      std::vector<int> want(n, 0);
      for (int t = 0; t < stride; ++t) {
        int i = t;
        do {
          ++want[i % n];
          i += stride;
        } while (i < n);
      }
      check.eq("doWhileVisits wrong", stride, 0,
               countWrong([&](int i) { return yi[i] == want[i]; }));
    }

    CHECK(cudaMemset(dyi, 0, n * sizeof(int)));
    someThreadsVisit<<<g.blocks, g.threads>>>(n, dyi);
    CHECK_LAUNCH();
    CHECK(cudaMemcpy(yi.data(), dyi, n * sizeof(int), cudaMemcpyDeviceToHost));
    check.eq("someThreadsVisit wrong", stride, 0,
             countWrong([&](int i) { return yi[i] == (i % stride % g.threads < 5 ? 1 : 0); }));

    CHECK(cudaMemcpy(dxi, xi.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    unsigned long long* dtotal;
    int* dadds;
    CHECK(cudaMalloc(&dtotal, sizeof(unsigned long long)));
    CHECK(cudaMalloc(&dadds, sizeof(int)));
    CHECK(cudaMemset(dtotal, 0, sizeof(unsigned long long)));
    CHECK(cudaMemset(dadds, 0, sizeof(int)));
    sumAfterLoop<<<g.blocks, g.threads>>>(n, dxi, dtotal, dadds);
    CHECK_LAUNCH();
    unsigned long long total = 0;
    int adds = 0;
    CHECK(cudaMemcpy(&total, dtotal, sizeof total, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&adds, dadds, sizeof adds, cudaMemcpyDeviceToHost));
    long long want = 0;
    for (int v : xi) want += v;
    check.eq("sumAfterLoop total", stride, want, static_cast<long long>(total));
    check.eq("sumAfterLoop adds (one per thread)", stride, stride, adds);
    CHECK(cudaFree(dtotal));
    CHECK(cudaFree(dadds));
  }

  // A 2-D block: every row of threads takes every x index.
  CHECK(cudaMemset(dyi, 0, n * sizeof(int)));
  rowsVisit<<<20, dim3(64, 3)>>>(n, dyi);
  CHECK_LAUNCH();
  CHECK(cudaMemcpy(yi.data(), dyi, n * sizeof(int), cudaMemcpyDeviceToHost));
  check.eq("rowsVisit wrong", 0, 0, countWrong([&](int i) { return yi[i] == 3; }));

  // Writes through a stray pointer: the launch fails with an invalid address, as on a GPU.
  scaleInt<<<64, 256>>>(n, dx, reinterpret_cast<float*>(uintptr_t{1} << 46));
  check.eq("stray writes", 0, static_cast<int>(cudaErrorIllegalAddress),
           static_cast<int>(cudaDeviceSynchronize()));
  CHECK(cudaDeviceReset());

  std::printf("grid_stride_flat: grid-stride loops run over their index, and near misses\n");
  return check.finish();
}
