// Tests of values that all the threads of a block's row share: a 2-D block's `y < height` at the
// edges of the data, the block's own index, a kernel argument. The CPU device gives each loop over
// a row of threads a copy with such tests answered the way that lets the threads work, entered
// only when every one of them is answered so (host_thread_ranges.cpp): the rows and blocks that
// answer otherwise run the original, and every combination must pick exactly the threads CUDA
// does. Sizes that are not multiples of the block put rows of every kind in one launch.
#include <vector>

#include "e2e_check.h"

constexpr int kTile = 32;  // transpose tile edge: 32 x 8 threads, 4 rows each
constexpr int kTileRows = 8;
constexpr int kShapes = 8;  // marks per thread in uniformShapes

// out (width x height) = transpose of in (height x width), through a padded shared tile; every
// access guarded by a test of the row (uniform) and one of the column (per thread).
__global__ void transposeTiled(const float* in, float* out, int width, int height) {
  __shared__ float tile[kTile][kTile + 1];
  int x = blockIdx.x * kTile + threadIdx.x;
  int y = blockIdx.y * kTile + threadIdx.y;
  for (int r = 0; r < kTile; r += kTileRows)
    if (x < width && y + r < height) tile[threadIdx.y + r][threadIdx.x] = in[(y + r) * width + x];
  __syncthreads();
  x = blockIdx.y * kTile + threadIdx.x;
  y = blockIdx.x * kTile + threadIdx.y;
  for (int r = 0; r < kTile; r += kTileRows)
    if (x < height && y + r < width) out[(y + r) * height + x] = tile[threadIdx.x][threadIdx.y + r];
}

// 5-point stencil with its border copied: row tests and column tests in one `||`.
__global__ void stencil(const float* in, float* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  int i = y * width + x;
  if (x == 0 || y == 0 || x == width - 1 || y == height - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]);
}

// Uniform tests in every shape, each marking its own entry (a store of its own, so that the tests
// stay branches). `Between` runs between two of them (a barrier puts each in a round of its own).
template <typename Between>
__device__ void markShapes(int flag, int limit, int* out, int width, int height, Between between) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  bool inside = x < width && y < height;
  int* mark = out + (y * width + x) * kShapes;
  if (inside && threadIdx.y == 0) mark[0] = 1;  // work for one row only
  between();
  if (inside && y < limit && x > 2) mark[1] = 1;  // uniform && per-thread
  between();
  if (inside) {
    if (flag) {  // if/else on an argument
      mark[2] = 1;
    } else {
      mark[3] = 1;
    }
  }
  between();
  if (inside && (blockIdx.y != 1 || threadIdx.x == 5)) mark[4] = 1;  // uniform || per-thread
  between();
  if (inside && (y == 0 || y == limit) && x < 7) mark[5] = 1;  // nested
  between();
  if (inside && blockIdx.x == 0 && flag) mark[6] = 1;  // two uniform tests
  between();
  if (inside && !(y >= limit || x >= limit)) mark[7] = 1;  // negated ||
}

__global__ void shapesWithoutBarriers(int flag, int limit, int* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;  // an early exit on a row test
  markShapes(flag, limit, out, width, height, [] {});
}

__global__ void shapesBetweenBarriers(int flag, int limit, int* out, int width, int height) {
  markShapes(flag, limit, out, width, height, [] { __syncthreads(); });
}

void checkTranspose(Checker& check, int width, int height) {
  std::vector<float> in(static_cast<size_t>(width) * height);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 1000) + 0.25f;
  float* dIn = upload(in);
  float* dOut = nullptr;
  CHECK(cudaMalloc(&dOut, in.size() * sizeof(float)));
  CHECK(cudaMemset(dOut, 0, in.size() * sizeof(float)));
  dim3 grid((width + kTile - 1) / kTile, (height + kTile - 1) / kTile);
  transposeTiled<<<grid, dim3(kTile, kTileRows)>>>(dIn, dOut, width, height);
  CHECK_LAUNCH();
  std::vector<float> out = download(dOut, in.size());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      check.eq("transpose", static_cast<long long>(x) * height + y, in[y * width + x],
               out[x * height + y]);
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
}

void checkStencil(Checker& check, int width, int height, dim3 block) {
  std::vector<float> in(static_cast<size_t>(width) * height);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((i * 7) % 101) - 50.0f;
  float* dIn = upload(in);
  float* dOut = nullptr;
  CHECK(cudaMalloc(&dOut, in.size() * sizeof(float)));
  dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
  stencil<<<grid, block>>>(dIn, dOut, width, height);
  CHECK_LAUNCH();
  std::vector<float> out = download(dOut, in.size());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      int i = y * width + x;
      float expected =
          x == 0 || y == 0 || x == width - 1 || y == height - 1
              ? in[i]
              : 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]);
      check.near("stencil", i, expected, out[i], 1e-5, 1e-6);
    }
  CHECK(cudaFree(dIn));
  CHECK(cudaFree(dOut));
}

// What markShapes marks for the thread at (x, y) of block (bx, by), thread (tx, ty).
bool expectedMark(int shape, int flag, int limit, int x, int y, int bx, int by, int tx, int ty) {
  switch (shape) {
    case 0:
      return ty == 0;
    case 1:
      return y < limit && x > 2;
    case 2:
      return flag != 0;
    case 3:
      return flag == 0;
    case 4:
      return by != 1 || tx == 5;
    case 5:
      return (y == 0 || y == limit) && x < 7;
    case 6:
      return bx == 0 && flag != 0;
    default:
      return !(y >= limit || x >= limit);
  }
}

void checkShapes(Checker& check, bool barriers, int flag, int limit, int width, int height,
                 dim3 block) {
  dim3 grid((width + block.x - 1) / block.x, (height + block.y - 1) / block.y);
  // Room for the threads past the edges too (they mark nothing), so any stray mark is seen.
  size_t cells = static_cast<size_t>(grid.x * block.x) * (grid.y * block.y) * kShapes;
  int* dOut = nullptr;
  CHECK(cudaMalloc(&dOut, cells * sizeof(int)));
  CHECK(cudaMemset(dOut, 0, cells * sizeof(int)));
  if (barriers)
    shapesBetweenBarriers<<<grid, block>>>(flag, limit, dOut, width, height);
  else
    shapesWithoutBarriers<<<grid, block>>>(flag, limit, dOut, width, height);
  CHECK_LAUNCH();
  std::vector<int> out = download(dOut, cells);
  const char* what = barriers ? "shapes between barriers" : "shapes";
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int shape = 0; shape < kShapes; ++shape) {
        bool marked = expectedMark(shape, flag, limit, x, y, x / block.x, y / block.y, x % block.x,
                                   y % block.y);
        long long index = (static_cast<long long>(y) * width + x) * kShapes + shape;
        check.eq(what, index, marked ? 1 : 0, out[index]);
      }
  // Nothing past the data's last cell.
  size_t used = static_cast<size_t>(width) * height * kShapes;
  for (size_t i = used; i < cells; ++i) check.eq(what, static_cast<long long>(i), 0, out[i]);
  CHECK(cudaFree(dOut));
}

int main() {
  Checker check("uniform_tests");
  for (auto [width, height] : {std::pair{128, 64}, {100, 70}, {33, 97}, {1, 40}, {40, 1}})
    checkTranspose(check, width, height);
  for (auto [width, height] : {std::pair{256, 64}, {67, 45}, {5, 3}, {32, 9}})
    for (dim3 block : {dim3(32, 8), dim3(16, 4), dim3(64, 1)})
      checkStencil(check, width, height, block);
  for (bool barriers : {false, true})
    for (int flag : {0, 1})
      for (int limit : {0, 5, 9, 40})
        for (auto [width, height] : {std::pair{64, 24}, {37, 19}})
          for (dim3 block : {dim3(32, 8), dim3(16, 4)})
            checkShapes(check, barriers, flag, limit, width, height, block);
  return check.finish();
}
