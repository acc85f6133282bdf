// Grid-stride and block-stride loops, the CUDA idiom for grids sized to the machine rather than
// to the data. The CPU device runs such kernels as work-item loops interchanged with their stride
// loop where it can (passes of one iteration of every thread), else small grids in their
// lockstep form (a block's threads take their iterations together) and large ones as plain
// work-item loops: all must give the same results, for ragged ends (n not a multiple of the
// stride), per-thread accumulators, 1-D, 2-D and 3-D blocks.
#include <vector>

#include "e2e_check.h"

__global__ void saxpyGridStride(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

// Each thread sums its strided elements, then adds its sum to the total: a value carried from
// iteration to iteration and used after the loop.
__global__ void sumGridStride(int n, const int* x, unsigned long long* total) {
  unsigned long long sum = 0;
  int threads = blockDim.x * blockDim.y * blockDim.z;
  int tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  for (int i = blockIdx.x * threads + tid; i < n; i += threads * gridDim.x) sum += x[i];
  atomicAdd(total, sum);
}

// A block-stride loop inside a grid-stride loop over rows: each block takes whole rows.
__global__ void rowScale(int rows, int columns, const float* scale, float* m) {
  for (int row = blockIdx.x; row < rows; row += gridDim.x)
    for (int column = threadIdx.x; column < columns; column += blockDim.x)
      m[row * columns + column] *= scale[row];
}

// Only some threads take the loop (the others skip it), the stride is the grid's threads over
// a pointer, and each thread records where its loop stopped: the threads of a round are at one
// iteration though they leave the loop at different ones.
__global__ void someThreadsStride(int n, const float* x, float* y, int* stoppedAt) {
  int first = blockIdx.x * blockDim.x + threadIdx.x;
  int stride = blockDim.x * gridDim.x;
  if (threadIdx.x % 3 == 1) {
    stoppedAt[first] = -1;
    return;
  }
  const float* end = x + n;
  const float* p = x + first;
  float* out = y + first;
  for (; p < end; p += stride, out += stride) *out = *p * 3.0f - 1.0f;
  stoppedAt[first] = static_cast<int>(p - x);
}

int main() {
  Checker check("grid_stride_loops");
  const int n = (1 << 20) + 333;
  std::vector<float> x(n), y(n);
  std::vector<int> xi(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 97);
    y[i] = static_cast<float>(i % 13) - 6.0f;
    xi[i] = i % 1000 - 300;
  }
  float *dx, *dy;
  int* dxi;
  unsigned long long* dtotal;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMalloc(&dxi, n * sizeof(int)));
  CHECK(cudaMalloc(&dtotal, sizeof(unsigned long long)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dxi, xi.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  long long expectedSum = 0;
  for (int v : xi) expectedSum += v;

  // Small grids (many iterations per thread) and a grid covering the data (one iteration).
  for (int blocks : {7, 256, (n + 255) / 256}) {
    CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    saxpyGridStride<<<blocks, 256>>>(n, 2.0f, dx, dy);
    CHECK_LAUNCH();
    std::vector<float> got(n);
    CHECK(cudaMemcpy(got.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += got[i] != 2.0f * x[i] + y[i];
    check.eq("saxpy wrong elements", blocks, 0, wrong);
  }
  for (dim3 block : {dim3(128, 1, 1), dim3(32, 4, 1), dim3(8, 4, 2)}) {
    CHECK(cudaMemset(dtotal, 0, sizeof(unsigned long long)));
    sumGridStride<<<40, block>>>(n, dxi, dtotal);
    CHECK_LAUNCH();
    unsigned long long total = 0;
    CHECK(cudaMemcpy(&total, dtotal, sizeof total, cudaMemcpyDeviceToHost));
    check.eq("sum", static_cast<int>(block.x * block.y * block.z), expectedSum,
             static_cast<long long>(total));
  }

  // someThreadsStride over 7 blocks of 96 threads (672 threads, n not a multiple of it).
  {
    const int blocks = 7, threads = 96, total = blocks * threads;
    CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    int* dstopped;
    CHECK(cudaMalloc(&dstopped, total * sizeof(int)));
    someThreadsStride<<<blocks, threads>>>(n, dx, dy, dstopped);
    CHECK_LAUNCH();
    std::vector<float> got(n);
    std::vector<int> stopped(total);
    CHECK(cudaMemcpy(got.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(stopped.data(), dstopped, total * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(dstopped));
    int wrong = 0;
    for (int i = 0; i < n; ++i) {
      bool taken = (i % total) % threads % 3 != 1;
      wrong += got[i] != (taken ? x[i] * 3.0f - 1.0f : y[i]);
    }
    check.eq("someThreadsStride wrong elements", 0, 0, wrong);
    for (int t = 0; t < total; ++t) {
      int last = t + (n - 1 - t) / total * total;  // the thread's last element
      check.eq("someThreadsStride stopped at", t, t % threads % 3 == 1 ? -1 : last + total,
               stopped[t]);
    }
  }

  const int rows = 300, columns = 1000;
  std::vector<float> m(rows * columns), scale(rows);
  for (int i = 0; i < rows * columns; ++i) m[i] = static_cast<float>(i % 31);
  for (int r = 0; r < rows; ++r) scale[r] = static_cast<float>(r % 5) - 2.0f;
  float *dm, *dscale;
  CHECK(cudaMalloc(&dm, m.size() * sizeof(float)));
  CHECK(cudaMalloc(&dscale, scale.size() * sizeof(float)));
  CHECK(cudaMemcpy(dm, m.data(), m.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dscale, scale.data(), scale.size() * sizeof(float), cudaMemcpyHostToDevice));
  rowScale<<<16, 96>>>(rows, columns, dscale, dm);
  CHECK_LAUNCH();
  std::vector<float> got(m.size());
  CHECK(cudaMemcpy(got.data(), dm, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < rows * columns; ++i) wrong += got[i] != m[i] * scale[i / columns];
  check.eq("rowScale wrong elements", 0, 0, wrong);

  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dxi));
  CHECK(cudaFree(dtotal));
  CHECK(cudaFree(dm));
  CHECK(cudaFree(dscale));
  std::printf("grid_stride_loops: saxpy, sums and row scaling over grid- and block-stride loops\n");
  return check.finish();
}
