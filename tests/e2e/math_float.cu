// Arithmetic semantics. Single IEEE operations (+, -, *, /, sqrt, fma, conversions with each
// rounding mode, min/max) are correctly rounded both on the device (nvcc's defaults
// -prec-div=true -prec-sqrt=true) and on the host, so they compare exactly; each output is a
// single operation of loaded inputs so nvcc's multiply-add contraction cannot change a result.
// Integer division/modulo, shifts and bit intrinsics are exact. sinf/expf/logf use the
// documented CUDA error bounds (a few ulp), checked with a relative tolerance of 1e-5.
#include <cmath>
#include <vector>

#include "e2e_check.h"

constexpr int kFloatOuts = 17;
constexpr int kIntOuts = 16;

__global__ void floatOps(const float* a, const float* b, const float* c, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i], z = c[i];
  float* o = out + i * kFloatOuts;
  o[0] = x + y;
  o[1] = x - y;
  o[2] = x * y;
  o[3] = x / y;
  o[4] = sqrtf(fabsf(x));
  o[5] = fmaf(x, y, z);
  o[6] = fminf(x, y);
  o[7] = fmaxf(x, y);
  o[8] = floorf(x);
  o[9] = ceilf(x);
  o[10] = truncf(x);
  o[11] = roundf(x);  // halfway cases away from zero
  o[12] = rintf(x);   // halfway cases to even
  o[13] = static_cast<float>(static_cast<double>(x) * static_cast<double>(y) / 3.0);
  o[14] = sinf(x * 0.001f);
  o[15] = expf(y * 0.01f);
  o[16] = logf(fabsf(y) + 1.0f);
}

__global__ void intOps(const float* a, const int* p, const int* q, long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = p[i], y = q[i];
  unsigned ux = static_cast<unsigned>(x), uy = static_cast<unsigned>(y);
  long long wide = static_cast<long long>(x) * 1000003LL;
  long long* o = out + i * kIntOuts;
  o[0] = x / y;
  o[1] = x % y;
  o[2] = ux / uy;
  o[3] = ux % uy;
  o[4] = wide / y;
  o[5] = wide % y;
  o[6] = x >> (i % 31);           // arithmetic shift of negatives
  o[7] = static_cast<int>(a[i]);  // truncation toward zero
  o[8] = __float2int_rn(a[i]);
  o[9] = __float2int_rd(a[i]);
  o[10] = __float2int_ru(a[i]);
  o[11] = __popc(ux);
  o[12] = __clz(ux);
  o[13] = __ffs(x);
  o[14] = __brev(ux);
  o[15] = __umulhi(ux, uy);
}

__global__ void doubleOps(const double* a, const double* b, double* out, float* narrowed,
                          float* fromInt, const int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = a[i], y = b[i];
  double* o = out + i * 5;
  o[0] = x + y;
  o[1] = x * y;
  o[2] = x / y;
  o[3] = sqrt(fabs(x));
  o[4] = fma(x, y, 1.0 / 3.0);
  narrowed[i] = static_cast<float>(x / y);           // double -> float, round to nearest
  fromInt[i] = static_cast<float>((p[i] >> 4) * 3);  // int -> float: rounds above 2^24
}

static unsigned hostBrev(unsigned v) {
  unsigned r = 0;
  for (int k = 0; k < 32; ++k) r |= ((v >> k) & 1u) << (31 - k);
  return r;
}

int main() {
  const int n = 1 << 16;
  Checker check("math_float");
  std::vector<float> a(n), b(n), c(n);
  std::vector<int> p(n), q(n);
  std::vector<double> da(n), db(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i - n / 2) * 0.25f;  // includes exact .5 ties for the roundings
    b[i] = static_cast<float>((i * 37) % 2001 - 1000) * 0.37f + 0.01f;  // never zero
    c[i] = static_cast<float>(i % 97) * 1.1f - 50.0f;
    p[i] = static_cast<int>(static_cast<unsigned>(i) * 2654435761u);
    q[i] = (i * 7919) % 20011 - 10005;
    if (q[i] == 0) q[i] = 7;
    da[i] = (i - n / 3) * 1.0000001;
    db[i] = (i % 1000) * 0.001 + 0.5;
  }

  float *dA, *dB, *dC, *dOut, *dNarrowed, *dFromInt;
  int *dP, *dQ;
  long long* dIntOut;
  double *dDa, *dDb, *dDOut;
  CHECK(cudaMalloc(&dA, n * sizeof(float)));
  CHECK(cudaMalloc(&dB, n * sizeof(float)));
  CHECK(cudaMalloc(&dC, n * sizeof(float)));
  CHECK(cudaMalloc(&dOut, n * kFloatOuts * sizeof(float)));
  CHECK(cudaMalloc(&dNarrowed, n * sizeof(float)));
  CHECK(cudaMalloc(&dFromInt, n * sizeof(float)));
  CHECK(cudaMalloc(&dP, n * sizeof(int)));
  CHECK(cudaMalloc(&dQ, n * sizeof(int)));
  CHECK(cudaMalloc(&dIntOut, n * kIntOuts * sizeof(long long)));
  CHECK(cudaMalloc(&dDa, n * sizeof(double)));
  CHECK(cudaMalloc(&dDb, n * sizeof(double)));
  CHECK(cudaMalloc(&dDOut, n * 5 * sizeof(double)));
  CHECK(cudaMemcpy(dA, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dC, c.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dP, p.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dQ, q.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dDa, da.data(), n * sizeof(double), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dDb, db.data(), n * sizeof(double), cudaMemcpyHostToDevice));

  const int block = 128, grid = n / block;
  floatOps<<<grid, block>>>(dA, dB, dC, dOut, n);
  CHECK_LAUNCH();
  intOps<<<grid, block>>>(dA, dP, dQ, dIntOut, n);
  CHECK_LAUNCH();
  doubleOps<<<grid, block>>>(dDa, dDb, dDOut, dNarrowed, dFromInt, dP, n);
  CHECK_LAUNCH();

  std::vector<float> out(n * kFloatOuts), narrowed(n), fromInt(n);
  std::vector<long long> intOut(n * kIntOuts);
  std::vector<double> dOutH(n * 5);
  CHECK(cudaMemcpy(out.data(), dOut, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(intOut.data(), dIntOut, intOut.size() * sizeof(long long),
                   cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dOutH.data(), dDOut, dOutH.size() * sizeof(double), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(narrowed.data(), dNarrowed, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(fromInt.data(), dFromInt, n * sizeof(float), cudaMemcpyDeviceToHost));

  static const char* floatNames[kFloatOuts] = {
      "add",   "sub",    "mul",   "div",    "sqrtf",  "fmaf",  "fminf",
      "fmaxf", "floorf", "ceilf", "truncf", "roundf", "rintf", "double mul/div narrowed",
      "sinf",  "expf",   "logf"};
  for (int i = 0; i < n; ++i) {
    float x = a[i], y = b[i], z = c[i];
    const float exact[13] = {x + y,
                             x - y,
                             x * y,
                             x / y,
                             std::sqrt(std::fabs(x)),
                             std::fma(x, y, z),
                             std::fmin(x, y),
                             std::fmax(x, y),
                             std::floor(x),
                             std::ceil(x),
                             std::trunc(x),
                             std::round(x),
                             std::nearbyint(x)};
    for (int k = 0; k < 13; ++k) check.eq(floatNames[k], i, exact[k], out[i * kFloatOuts + k]);
    check.eq(floatNames[13], i,
             static_cast<float>(static_cast<double>(x) * static_cast<double>(y) / 3.0),
             out[i * kFloatOuts + 13]);
    check.near(floatNames[14], i, std::sin(static_cast<double>(x * 0.001f)),
               out[i * kFloatOuts + 14], 1e-6, 1e-5);
    check.near(floatNames[15], i, std::exp(static_cast<double>(y * 0.01f)),
               out[i * kFloatOuts + 15], 0.0, 1e-5);
    check.near(floatNames[16], i, std::log(static_cast<double>(std::fabs(y) + 1.0f)),
               out[i * kFloatOuts + 16], 1e-6, 1e-5);

    int xi = p[i], yi = q[i];
    unsigned ux = static_cast<unsigned>(xi), uy = static_cast<unsigned>(yi);
    long long wide = static_cast<long long>(xi) * 1000003LL;
    const long long expectI[kIntOuts] = {
        xi / yi,
        xi % yi,
        ux / uy,
        ux % uy,
        wide / yi,
        wide % yi,
        xi >> (i % 31),
        static_cast<int>(a[i]),
        static_cast<int>(std::nearbyint(a[i])),
        static_cast<int>(std::floor(a[i])),
        static_cast<int>(std::ceil(a[i])),
        __builtin_popcount(ux),
        ux == 0 ? 32 : __builtin_clz(ux),
        __builtin_ffs(xi),
        hostBrev(ux),
        static_cast<long long>((static_cast<unsigned long long>(ux) * uy) >> 32)};
    static const char* intNames[kIntOuts] = {
        "int div",        "int mod",        "unsigned div",   "unsigned mod",
        "int64 div",      "int64 mod",      "shift right",    "float->int trunc",
        "__float2int_rn", "__float2int_rd", "__float2int_ru", "__popc",
        "__clz",          "__ffs",          "__brev",         "__umulhi"};
    for (int k = 0; k < kIntOuts; ++k)
      check.eq(intNames[k], i, expectI[k], intOut[i * kIntOuts + k]);

    double dx = da[i], dy = db[i];
    const double expectD[5] = {dx + dy, dx * dy, dx / dy, std::sqrt(std::fabs(dx)),
                               std::fma(dx, dy, 1.0 / 3.0)};
    static const char* doubleNames[5] = {"double add", "double mul", "double div", "sqrt", "fma"};
    for (int k = 0; k < 5; ++k) check.eq(doubleNames[k], i, expectD[k], dOutH[i * 5 + k]);
    check.eq("double->float", i, static_cast<float>(dx / dy), narrowed[i]);
    check.eq("int->float", i, static_cast<float>((xi >> 4) * 3), fromInt[i]);
  }
  std::printf("math_float: %d elements, %d float + %d integer + 7 double checks each\n", n,
              kFloatOuts, kIntOuts);
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  CHECK(cudaFree(dOut));
  CHECK(cudaFree(dNarrowed));
  CHECK(cudaFree(dFromInt));
  CHECK(cudaFree(dP));
  CHECK(cudaFree(dQ));
  CHECK(cudaFree(dIntOut));
  CHECK(cudaFree(dDa));
  CHECK(cudaFree(dDb));
  CHECK(cudaFree(dDOut));
  return check.finish();
}
