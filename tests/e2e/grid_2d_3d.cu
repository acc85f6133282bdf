// Multi-dimensional launches: a ragged 2D grid over an image, a 3D grid of 3D blocks where each
// thread records every index component, and a 1D grid wider than 65535 blocks.
#include <vector>

#include "e2e_check.h"

__global__ void image2d(unsigned* out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) out[y * width + x] = (static_cast<unsigned>(y) << 16) | x;
}

constexpr int kFields = 8;

__global__ void record3d(int* out) {
  int block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  int linear = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
  int* rec = out + linear * kFields;
  rec[0] = threadIdx.x;
  rec[1] = threadIdx.y;
  rec[2] = threadIdx.z;
  rec[3] = blockIdx.x;
  rec[4] = blockIdx.y;
  rec[5] = blockIdx.z;
  rec[6] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
  rec[7] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
}

__global__ void wide1d(unsigned* out) {
  if (threadIdx.x == 0) out[blockIdx.x] = blockIdx.x * 3u + 1u;
}

int main() {
  Checker check("grid_2d_3d");

  // 2D: 1000x300 image, 16x8 blocks: ragged in x (1000 % 16 != 0) and y (300 % 8 != 0).
  const int width = 1000, height = 300, guard = 32;
  unsigned* dImg;
  CHECK(cudaMalloc(&dImg, (width * height + guard) * sizeof(unsigned)));
  CHECK(cudaMemset(dImg, 0xFF, (width * height + guard) * sizeof(unsigned)));
  dim3 block2(16, 8);
  dim3 grid2((width + block2.x - 1) / block2.x, (height + block2.y - 1) / block2.y);
  image2d<<<grid2, block2>>>(dImg, width, height);
  CHECK_LAUNCH();
  std::vector<unsigned> img(width * height + guard);
  CHECK(cudaMemcpy(img.data(), dImg, img.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      check.eq("image", y * width + x, (static_cast<unsigned>(y) << 16) | x, img[y * width + x]);
  for (int i = width * height; i < width * height + guard; ++i)
    check.eq("image guard", i, 0xFFFFFFFFu, img[i]);

  // 3D: grid 5x6x7 of blocks 8x4x2.
  const dim3 grid3(5, 6, 7), block3(8, 4, 2);
  const int threads = 5 * 6 * 7 * 8 * 4 * 2;
  int* dRec;
  CHECK(cudaMalloc(&dRec, threads * kFields * sizeof(int)));
  CHECK(cudaMemset(dRec, 0xFF, threads * kFields * sizeof(int)));
  record3d<<<grid3, block3>>>(dRec);
  CHECK_LAUNCH();
  std::vector<int> rec(threads * kFields);
  CHECK(cudaMemcpy(rec.data(), dRec, rec.size() * sizeof(int), cudaMemcpyDeviceToHost));
  for (int bz = 0; bz < 7; ++bz)
    for (int by = 0; by < 6; ++by)
      for (int bx = 0; bx < 5; ++bx)
        for (int tz = 0; tz < 2; ++tz)
          for (int ty = 0; ty < 4; ++ty)
            for (int tx = 0; tx < 8; ++tx) {
              int b = (bz * 6 + by) * 5 + bx;
              int t = (tz * 4 + ty) * 8 + tx;
              int linear = b * 64 + t;
              const int expected[kFields] = {tx, ty, tz, bx, by, bz, 80402, 50607};
              for (int f = 0; f < kFields; ++f)
                check.eq("record3d", linear * kFields + f, expected[f], rec[linear * kFields + f]);
            }

  // 1D grid past the 16-bit range of the y/z dimensions.
  const int wide = 70000;
  unsigned* dWide;
  CHECK(cudaMalloc(&dWide, wide * sizeof(unsigned)));
  CHECK(cudaMemset(dWide, 0, wide * sizeof(unsigned)));
  wide1d<<<wide, 4>>>(dWide);
  CHECK_LAUNCH();
  std::vector<unsigned> w(wide);
  CHECK(cudaMemcpy(w.data(), dWide, wide * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int i = 0; i < wide; ++i) check.eq("wide", i, i * 3u + 1u, w[i]);

  std::printf("grid_2d_3d: 2D %ux%u blocks, 3D %d threads, 1D %d blocks\n", grid2.x, grid2.y,
              threads, wide);
  CHECK(cudaFree(dImg));
  CHECK(cudaFree(dRec));
  CHECK(cudaFree(dWide));
  return check.finish();
}
