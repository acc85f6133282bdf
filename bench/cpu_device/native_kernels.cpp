// The OpenMP baseline and STREAM triad. Built with -O3 -march=native -fopenmp (CMakeLists.txt);
// plain loops the compiler can vectorise, blocked where caches matter, no intrinsics.
#include "native_kernels.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "workload.h"

namespace rocuda::bench::native {

void emptyRegion() {
#pragma omp parallel
  {
    // An empty parallel region: the fork-join cost, OpenMP's analogue of launch + synchronize.
    asm volatile("" ::: "memory");
  }
}

void vectorAdd(const float* a, const float* b, float* c, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

void saxpy(float a, const float* x, const float* y, float* out, std::size_t n) {
#pragma omp parallel for simd schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = a * x[i] + y[i];
}

void reducePartials(const float* in, float* partial, std::size_t n, std::size_t chunk) {
  std::size_t chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
  for (std::size_t c = 0; c < chunks; ++c) {
    std::size_t begin = c * chunk;
    std::size_t end = std::min(n, begin + chunk);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::size_t i = begin; i < end; ++i) sum += in[i];
    partial[c] = sum;
  }
}

// Row-major C = A * B, blocked over k and j so a strip of B stays in cache; the inner loop runs
// along a row of B and C and vectorises.
void sgemm(const float* a, const float* b, float* c, int m, int n, int k) {
  constexpr int kBlockK = 128;
  constexpr int kBlockJ = 256;
#pragma omp parallel for schedule(static)
  for (int i = 0; i < m; ++i) {
    float* crow = c + static_cast<std::size_t>(i) * n;
    std::fill(crow, crow + n, 0.0f);
    for (int jj = 0; jj < n; jj += kBlockJ) {
      int jend = std::min(n, jj + kBlockJ);
      for (int kk = 0; kk < k; kk += kBlockK) {
        int kend = std::min(k, kk + kBlockK);
        for (int p = kk; p < kend; ++p) {
          float av = a[static_cast<std::size_t>(i) * k + p];
          const float* brow = b + static_cast<std::size_t>(p) * n;
#pragma omp simd
          for (int j = jj; j < jend; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

void stencil5(const float* in, float* out, int width, int height) {
#pragma omp parallel for schedule(static)
  for (int y = 0; y < height; ++y) {
    std::size_t row = static_cast<std::size_t>(y) * width;
    if (y == 0 || y == height - 1) {
      std::memcpy(out + row, in + row, sizeof(float) * width);
      continue;
    }
    out[row] = in[row];
    out[row + width - 1] = in[row + width - 1];
#pragma omp simd
    for (int x = 1; x < width - 1; ++x) {
      std::size_t i = row + x;
      out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]);
    }
  }
}

// Private bins per thread (four interleaved copies to break store-to-load dependencies on
// repeated bytes), merged at the end.
void histogram256(const unsigned char* data, unsigned* bins, std::size_t n) {
  std::fill(bins, bins + 256, 0u);
#pragma omp parallel
  {
    unsigned local[4][256] = {};
    std::size_t i = 0;
#pragma omp for schedule(static) nowait
    for (std::size_t block = 0; block < (n + 4095) / 4096; ++block) {
      std::size_t begin = block * 4096;
      std::size_t end = std::min(n, begin + 4096);
      for (i = begin; i + 4 <= end; i += 4) {
        ++local[0][data[i]];
        ++local[1][data[i + 1]];
        ++local[2][data[i + 2]];
        ++local[3][data[i + 3]];
      }
      for (; i < end; ++i) ++local[0][data[i]];
    }
    for (int b = 0; b < 256; ++b) {
      unsigned total = local[0][b] + local[1][b] + local[2][b] + local[3][b];
#pragma omp atomic
      bins[b] += total;
    }
  }
}

// out (width x height) = transpose of in (height x width), in 32 x 32 tiles.
void transpose(const float* in, float* out, int width, int height) {
  constexpr int kTile = 32;
#pragma omp parallel for collapse(2) schedule(static)
  for (int ty = 0; ty < height; ty += kTile) {
    for (int tx = 0; tx < width; tx += kTile) {
      int yend = std::min(height, ty + kTile);
      int xend = std::min(width, tx + kTile);
      for (int x = tx; x < xend; ++x)
        for (int y = ty; y < yend; ++y)
          out[static_cast<std::size_t>(x) * height + y] =
              in[static_cast<std::size_t>(y) * width + x];
    }
  }
}

}  // namespace rocuda::bench::native

namespace rocuda::bench {

double streamTriadBytesPerSecond(std::size_t n, int reps, int threads) {
  auto alloc = [n] { return std::unique_ptr<float[]>(new float[n]); };
  auto a = alloc(), b = alloc(), c = alloc();
  float* pa = a.get();
  float* pb = b.get();
  float* pc = c.get();
  // First touch in parallel, as STREAM does, so pages land where the threads run.
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    pa[i] = 0.0f;
    pb[i] = 1.0f;
    pc[i] = 2.0f;
  }
  const float s = 3.0f;
  double best = 1e30;
  for (int r = 0; r < reps + 1; ++r) {
    auto start = std::chrono::steady_clock::now();
#pragma omp parallel for simd schedule(static) num_threads(threads)
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0) best = std::min(best, seconds);  // r == 0 is the warm-up
  }
  if (pa[n / 2] != 7.0f) return 0.0;  // wrong result: report no bandwidth rather than a number
  return 3.0 * sizeof(float) * static_cast<double>(n) / best;
}

}  // namespace rocuda::bench
