// The benchmark's kernels: sizes, launch shapes, inputs, host references and checks. Inputs are
// small integers stored as floats wherever the kernel is a sum or product, so every variant's
// result is exact and is compared for equality (FMA contraction and summation order cannot
// change it); SAXPY is the one tolerance check.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

#include "native_kernels.h"
#include "workload.h"

namespace rocuda::bench {
namespace {

constexpr unsigned kBlock1d = 256;

template <class T>
std::vector<std::byte> bytesOf(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// Small integers 0..range-1 (or -range/2.. when centred) as floats.
std::vector<float> smallIntegers(std::size_t n, int range, int offset, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> out(n);
  for (auto& v : out) v = static_cast<float>(static_cast<int>(rng() % range) + offset);
  return out;
}

unsigned ceilDiv(std::size_t a, unsigned b) { return static_cast<unsigned>((a + b - 1) / b); }

// Exact comparison of `n` floats (or unsigned) against a reference; names the first mismatch.
template <class T>
std::string compareExact(const void* got, const std::vector<T>& want) {
  const T* g = static_cast<const T*>(got);
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (g[i] != want[i]) {
      std::ostringstream msg;
      msg << "element " << i << ": got " << g[i] << ", expected " << want[i];
      return msg.str();
    }
  }
  return {};
}

std::unique_ptr<Workload> emptyKernel(bool quick) {
  auto w = std::make_unique<Workload>();
  w->name = "empty kernel (latency)";
  w->kernel = "empty_kernel";
  w->launchesPerRun = quick ? 10 : 1000;
  w->size = "<<<1,1>>> x" + std::to_string(w->launchesPerRun);
  w->native = [](const BufferPointers&) { native::emptyRegion(); };
  w->verify = [](const BufferPointers&) { return std::string(); };
  return w;
}

// c = a + b (vectorAdd) or out = 2.5 x + y (saxpy); `gridStride`: SAXPY as a grid-stride loop
// over a grid of 256 blocks (each thread loops; the OpenCL version has the same loop).
std::unique_ptr<Workload> elementwise(bool quick, bool isSaxpy, bool gridStride = false) {
  std::size_t n = quick ? 1000 : (std::size_t{1} << 24);
  auto w = std::make_unique<Workload>();
  w->name = gridStride ? "SAXPY, grid-stride loop" : isSaxpy ? "SAXPY" : "vector add";
  w->kernel = gridStride ? "saxpy_grid_stride" : isSaxpy ? "saxpy" : "vector_add";
  w->size = "n=" + std::to_string(n);
  w->grid[0] = gridStride ? std::min<std::size_t>(256, ceilDiv(n, kBlock1d)) : ceilDiv(n, kBlock1d);
  w->block[0] = kBlock1d;
  auto x = smallIntegers(n, 100, 0, 1);
  auto y = smallIntegers(n, 100, 0, 2);
  const float alpha = 2.5f;
  std::vector<float> want(n);
  for (std::size_t i = 0; i < n; ++i) want[i] = isSaxpy ? alpha * x[i] + y[i] : x[i] + y[i];
  w->buffers = {{n * 4, bytesOf(x)}, {n * 4, bytesOf(y)}, {n * 4, {}, true}};
  int count = static_cast<int>(n);
  if (isSaxpy) {
    w->args = {KernelArg::f32(alpha), KernelArg::buf(0), KernelArg::buf(1), KernelArg::buf(2),
               KernelArg::i32(count)};
    w->native = [n, alpha](const BufferPointers& b) {
      native::saxpy(alpha, static_cast<float*>(b[0]), static_cast<float*>(b[1]),
                    static_cast<float*>(b[2]), n);
    };
  } else {
    w->args = {KernelArg::buf(0), KernelArg::buf(1), KernelArg::buf(2), KernelArg::i32(count)};
    w->native = [n](const BufferPointers& b) {
      native::vectorAdd(static_cast<float*>(b[0]), static_cast<float*>(b[1]),
                        static_cast<float*>(b[2]), n);
    };
  }
  w->bytes = 12.0 * n;
  w->memoryBound = true;
  w->verify = [want = std::move(want)](const BufferPointers& b) -> std::string {
    const float* got = static_cast<const float*>(b[2]);
    for (std::size_t i = 0; i < want.size(); ++i)
      if (std::fabs(got[i] - want[i]) > 1e-5f * (1.0f + std::fabs(want[i])))
        return "element " + std::to_string(i) + ": got " + std::to_string(got[i]) + ", expected " +
               std::to_string(want[i]);
    return {};
  };
  return w;
}

// Per-block partial sums (512 elements each; exact, as the inputs are 0..3); the check adds
// the partials in double.
std::unique_ptr<Workload> reduction(bool quick, bool shuffle) {
  std::size_t n = quick ? 5000 : (std::size_t{1} << 24);
  auto w = std::make_unique<Workload>();
  w->name = shuffle ? "reduction, warp shuffle" : "reduction, shared memory";
  w->kernel = shuffle ? "reduce_shuffle" : "reduce_shared";
  w->size = "n=" + std::to_string(n);
  unsigned blocks = ceilDiv(n, 2 * kBlock1d);
  w->grid[0] = blocks;
  w->block[0] = kBlock1d;
  auto in = smallIntegers(n, 4, 0, 3);
  double want = 0.0;
  for (float v : in) want += v;
  w->buffers = {{n * 4, bytesOf(in)}, {std::size_t{blocks} * 4, {}, true}};
  w->args = {KernelArg::buf(0), KernelArg::buf(1), KernelArg::i32(static_cast<int>(n))};
  w->native = [n](const BufferPointers& b) {
    native::reducePartials(static_cast<const float*>(b[0]), static_cast<float*>(b[1]), n,
                           2 * kBlock1d);
  };
  w->bytes = 4.0 * n;
  w->memoryBound = true;
  w->verify = [want, blocks](const BufferPointers& b) -> std::string {
    const float* partial = static_cast<const float*>(b[1]);
    double got = 0.0;
    for (unsigned i = 0; i < blocks; ++i) got += partial[i];
    if (got == want) return {};
    return "sum " + std::to_string(got) + ", expected " + std::to_string(want);
  };
  return w;
}

std::unique_ptr<Workload> sgemm(bool quick) {
  int dim = quick ? 64 : 1024;
  std::size_t elems = std::size_t(dim) * dim;
  auto w = std::make_unique<Workload>();
  w->name = "SGEMM, 16x16 shared tiles";
  w->kernel = "sgemm_tiled";
  w->size = std::to_string(dim) + "^3";
  w->grid[0] = w->grid[1] = dim / 16;
  w->block[0] = w->block[1] = 16;
  auto a = smallIntegers(elems, 5, -2, 4);
  auto b = smallIntegers(elems, 5, -2, 5);
  std::vector<float> want(elems, 0.0f);
  for (int i = 0; i < dim; ++i)
    for (int p = 0; p < dim; ++p)
      for (int j = 0; j < dim; ++j) want[i * dim + j] += a[i * dim + p] * b[p * dim + j];
  w->buffers = {{elems * 4, bytesOf(a)}, {elems * 4, bytesOf(b)}, {elems * 4, {}, true}};
  w->args = {KernelArg::buf(0),   KernelArg::buf(1),   KernelArg::buf(2),
             KernelArg::i32(dim), KernelArg::i32(dim), KernelArg::i32(dim)};
  w->native = [dim](const BufferPointers& p) {
    native::sgemm(static_cast<float*>(p[0]), static_cast<float*>(p[1]), static_cast<float*>(p[2]),
                  dim, dim, dim);
  };
  w->flops = 2.0 * dim * elems;
  w->verify = [want = std::move(want)](const BufferPointers& p) {
    return compareExact(p[2], want);
  };
  return w;
}

std::unique_ptr<Workload> stencil(bool quick) {
  int width = quick ? 100 : 4096;
  int height = quick ? 70 : 4096;
  std::size_t elems = std::size_t(width) * height;
  auto w = std::make_unique<Workload>();
  w->name = "2D 5-point stencil";
  w->kernel = "stencil5";
  w->size = std::to_string(width) + "x" + std::to_string(height);
  w->block[0] = 32;
  w->block[1] = 8;
  w->grid[0] = ceilDiv(width, 32);
  w->grid[1] = ceilDiv(height, 8);
  auto in = smallIntegers(elems, 256, 0, 6);
  std::vector<float> want(in);
  for (int y = 1; y < height - 1; ++y)
    for (int x = 1; x < width - 1; ++x) {
      std::size_t i = std::size_t(y) * width + x;
      want[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - width] + in[i + width]);
    }
  w->buffers = {{elems * 4, bytesOf(in)}, {elems * 4, {}, true}};
  w->args = {KernelArg::buf(0), KernelArg::buf(1), KernelArg::i32(width), KernelArg::i32(height)};
  w->native = [width, height](const BufferPointers& p) {
    native::stencil5(static_cast<float*>(p[0]), static_cast<float*>(p[1]), width, height);
  };
  w->bytes = 8.0 * elems;
  w->memoryBound = true;
  w->verify = [want = std::move(want)](const BufferPointers& p) {
    return compareExact(p[1], want);
  };
  return w;
}

std::unique_ptr<Workload> histogram(bool quick) {
  std::size_t n = quick ? 10000 : (std::size_t{1} << 24);
  auto w = std::make_unique<Workload>();
  w->name = "histogram 256, shared atomics";
  w->kernel = "histogram256";
  w->size = "n=" + std::to_string(n) + " bytes";
  w->grid[0] = quick ? 4 : 256;
  w->block[0] = kBlock1d;
  std::mt19937 rng(7);
  std::vector<unsigned char> data(n);
  // Skewed so that some bins are hot, as in real data: half uniform, half from 16 values.
  for (auto& d : data) d = static_cast<unsigned char>(rng() & 1 ? rng() : (rng() % 16) * 16);
  std::vector<unsigned> want(256, 0);
  for (unsigned char d : data) ++want[d];
  w->buffers = {{n, bytesOf(data)}, {256 * 4, {}, true, true}};
  w->args = {KernelArg::buf(0), KernelArg::buf(1), KernelArg::i32(static_cast<int>(n))};
  w->native = [n](const BufferPointers& p) {
    native::histogram256(static_cast<unsigned char*>(p[0]), static_cast<unsigned*>(p[1]), n);
  };
  w->bytes = static_cast<double>(n);
  w->verify = [want = std::move(want)](const BufferPointers& p) {
    return compareExact(p[1], want);
  };
  return w;
}

std::unique_ptr<Workload> transpose(bool quick) {
  // 4000, not 4096: a power-of-two row pitch maps a tile's column onto one cache set.
  int width = quick ? 96 : 4000;
  int height = quick ? 64 : 4000;
  std::size_t elems = std::size_t(width) * height;
  auto w = std::make_unique<Workload>();
  w->name = "transpose, shared tiles";
  w->kernel = "transpose_tiled";
  w->size = std::to_string(width) + "x" + std::to_string(height);
  w->block[0] = 32;
  w->block[1] = 8;
  w->grid[0] = ceilDiv(width, 32);
  w->grid[1] = ceilDiv(height, 32);
  auto in = smallIntegers(elems, 1 << 20, 0, 8);
  std::vector<float> want(elems);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      want[std::size_t(x) * height + y] = in[std::size_t(y) * width + x];
  w->buffers = {{elems * 4, bytesOf(in)}, {elems * 4, {}, true}};
  w->args = {KernelArg::buf(0), KernelArg::buf(1), KernelArg::i32(width), KernelArg::i32(height)};
  w->native = [width, height](const BufferPointers& p) {
    native::transpose(static_cast<float*>(p[0]), static_cast<float*>(p[1]), width, height);
  };
  w->bytes = 8.0 * elems;
  w->memoryBound = true;
  w->verify = [want = std::move(want)](const BufferPointers& p) {
    return compareExact(p[1], want);
  };
  return w;
}

}  // namespace

std::vector<WorkloadFactory> workloadFactories() {
  return {
      [](bool q) { return elementwise(q, false); },
      [](bool q) { return elementwise(q, true); },
      [](bool q) { return elementwise(q, true, true); },
      [](bool q) { return reduction(q, false); },
      [](bool q) { return reduction(q, true); },
      sgemm,
      stencil,
      histogram,
      transpose,
      emptyKernel,
  };
}

std::string measure(const MeasureOptions& options, int launchesPerRun, const Step& prepare,
                    const Step& run, Timing& timing) {
  std::vector<double> times;
  double spent = 0.0;
  std::size_t minimumReps = 3;
  // Repetition 0 is the warm-up (first-launch compilation, page faults) and is not counted.
  for (int r = 0; r <= options.reps; ++r) {
    if (std::string err = prepare(); !err.empty()) return err;
    auto start = std::chrono::steady_clock::now();
    if (std::string err = run(); !err.empty()) return err;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r == 0) {
      // A variant so slow that three runs would blow the budget is timed once: its ratio to
      // the others is large enough that the noise of one sample does not matter.
      if (seconds > options.budgetSeconds / 3) minimumReps = 1;
      continue;
    }
    times.push_back(seconds / launchesPerRun);
    spent += seconds;
    if (times.size() >= minimumReps && spent > options.budgetSeconds) break;
  }
  std::sort(times.begin(), times.end());
  timing.best = times.front();
  timing.median = times[times.size() / 2];
  timing.reps = static_cast<int>(times.size());
  return {};
}

}  // namespace rocuda::bench
