// NVIDIA's cuFFT on Rocuda's driver: plans of several kinds, sizes and precisions, each result
// checked against a direct DFT on the host. cuFFT finds the kernels of the modules it loads
// through a private export table (the module-functions table), then launches them as any
// program does.
#include <cufft.h>

#include <cmath>
#include <complex>
#include <vector>

#include "e2e_check.h"

#define CHECK_CUFFT(call)                                                       \
  do {                                                                          \
    cufftResult fftResult_ = (call);                                            \
    if (fftResult_ != CUFFT_SUCCESS) {                                          \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(fftResult_));                               \
      std::exit(2);                                                             \
    }                                                                           \
  } while (0)

using Complex = std::complex<double>;

// out[k] = sum_j in[j] * exp(sign * 2 pi i j k / n), over `dims` (row-major, last fastest).
std::vector<Complex> dft(const std::vector<Complex>& in, const std::vector<int>& dims, int sign) {
  std::vector<Complex> data = in;
  size_t total = data.size();
  size_t stride = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    size_t n = dims[d];
    std::vector<Complex> out(total);
    for (size_t base = 0; base < total; ++base) {
      if ((base / stride) % n != 0) continue;  // the first element of each line along d
      for (size_t k = 0; k < n; ++k) {
        Complex sum = 0;
        for (size_t j = 0; j < n; ++j)
          sum += data[base + j * stride] * std::polar(1.0, sign * 2 * M_PI * double(j * k) / n);
        out[base + k * stride] = sum;
      }
    }
    data = out;
    stride *= n;
  }
  return data;
}

Complex input(size_t i) { return {std::sin(0.3 * i) + (i % 5), std::cos(0.7 * i) - (i % 3)}; }

// A single-precision complex transform of `dims`, forward then back (unnormalised: n times).
void complexFloat(Checker& check, const std::vector<int>& dims, const char* what) {
  size_t total = 1;
  for (int d : dims) total *= d;
  std::vector<Complex> in(total);
  std::vector<cufftComplex> host(total);
  for (size_t i = 0; i < total; ++i) {
    in[i] = input(i);
    host[i] = {float(in[i].real()), float(in[i].imag())};
  }
  cufftComplex* data = upload(host);
  cufftHandle plan;
  if (dims.size() == 1)
    CHECK_CUFFT(cufftPlan1d(&plan, dims[0], CUFFT_C2C, 1));
  else if (dims.size() == 2)
    CHECK_CUFFT(cufftPlan2d(&plan, dims[0], dims[1], CUFFT_C2C));
  else
    CHECK_CUFFT(cufftPlan3d(&plan, dims[0], dims[1], dims[2], CUFFT_C2C));
  CHECK_CUFFT(cufftExecC2C(plan, data, data, CUFFT_FORWARD));
  std::vector<cufftComplex> got = download(data, total);
  std::vector<Complex> expected = dft(in, dims, -1);
  double scale = 1e-4 * std::sqrt(double(total)) * 10;
  for (size_t i = 0; i < total; ++i) {
    check.near(what, i, expected[i].real(), got[i].x, scale);
    check.near(what, i, expected[i].imag(), got[i].y, scale);
  }
  CHECK_CUFFT(cufftExecC2C(plan, data, data, CUFFT_INVERSE));
  got = download(data, total);
  for (size_t i = 0; i < total; ++i) {
    check.near(what, i, in[i].real() * total, got[i].x, scale);
    check.near(what, i, in[i].imag() * total, got[i].y, scale);
  }
  CHECK_CUFFT(cufftDestroy(plan));
  CHECK(cudaFree(data));
}

// A real-to-complex 2D transform: the non-redundant half of the last dimension.
void realToComplex(Checker& check, int rows, int columns) {
  std::vector<float> host(rows * columns);
  std::vector<Complex> in(host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    host[i] = float(input(i).real());
    in[i] = host[i];
  }
  float* data = upload(host);
  int half = columns / 2 + 1;
  cufftComplex* out = nullptr;
  CHECK(cudaMalloc(&out, rows * half * sizeof(cufftComplex)));
  cufftHandle plan;
  CHECK_CUFFT(cufftPlan2d(&plan, rows, columns, CUFFT_R2C));
  CHECK_CUFFT(cufftExecR2C(plan, data, out));
  std::vector<cufftComplex> got = download(out, rows * half);
  std::vector<Complex> expected = dft(in, {rows, columns}, -1);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < half; ++c) {
      check.near("R2C", r * half + c, expected[r * columns + c].real(), got[r * half + c].x, 1e-3);
      check.near("R2C", r * half + c, expected[r * columns + c].imag(), got[r * half + c].y, 1e-3);
    }
  CHECK_CUFFT(cufftDestroy(plan));
  CHECK(cudaFree(data));
  CHECK(cudaFree(out));
}

// A batch of double-precision transforms through cufftPlanMany.
void batchedDouble(Checker& check, int n, int batch) {
  std::vector<cufftDoubleComplex> host(n * batch);
  std::vector<Complex> in(host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    in[i] = input(i);
    host[i] = {in[i].real(), in[i].imag()};
  }
  cufftDoubleComplex* data = upload(host);
  cufftHandle plan;
  CHECK_CUFFT(cufftPlanMany(&plan, 1, &n, nullptr, 1, n, nullptr, 1, n, CUFFT_Z2Z, batch));
  CHECK_CUFFT(cufftExecZ2Z(plan, data, data, CUFFT_FORWARD));
  std::vector<cufftDoubleComplex> got = download(data, host.size());
  for (int b = 0; b < batch; ++b) {
    std::vector<Complex> one(in.begin() + b * n, in.begin() + (b + 1) * n);
    std::vector<Complex> expected = dft(one, {n}, -1);
    for (int k = 0; k < n; ++k) {
      check.near("Z2Z", b * n + k, expected[k].real(), got[b * n + k].x, 1e-9);
      check.near("Z2Z", b * n + k, expected[k].imag(), got[b * n + k].y, 1e-9);
    }
  }
  CHECK_CUFFT(cufftDestroy(plan));
  CHECK(cudaFree(data));
}

int main() {
  Checker check("cufft_transforms");
  complexFloat(check, {64}, "C2C 64");
  complexFloat(check, {210}, "C2C 210");
  complexFloat(check, {127}, "C2C 127 (prime)");
  complexFloat(check, {8, 12, 10}, "C2C 8x12x10");
  realToComplex(check, 16, 12);
  batchedDouble(check, 32, 3);
  return check.finish();
}
