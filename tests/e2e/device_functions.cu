// Device-side calls and kernel parameter layout: __noinline__ functions, recursion (factorial
// and Fibonacci), templates, structs passed by value (including an over-aligned and a large
// one), and a kernel with many parameters of mixed sizes whose values are echoed back.
#include <cstring>
#include <vector>

#include "e2e_check.h"

struct Mixed {
  char c;
  int i;
  double d;
  short s;
  float f[3];
};

struct alignas(16) Aligned {
  float x, y, z, w;
};

struct Big {
  int values[64];  // 256 bytes by value
};

__device__ __noinline__ int mixBits(int a, int b) { return (a * 31) ^ (b + 17); }

__device__ unsigned long long factorial(int n) {
  return n <= 1 ? 1ULL : static_cast<unsigned long long>(n) * factorial(n - 1);
}

__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

template <typename T>
__device__ __noinline__ T triple(T v) {
  return v + v + v;
}

__global__ void calls(int* mixed, unsigned long long* fact, int* fibs, int* tripledInt,
                      double* tripledDouble, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  mixed[i] = mixBits(i, n - i);
  fact[i] = factorial(i % 21);
  fibs[i] = fib(i % 16);
  tripledInt[i] = triple<int>(i - 100);
  tripledDouble[i] = triple<double>(i * 0.5);
}

// Every parameter is written back as a double / int64 so the host can check each one.
__global__ void manyParams(char c, short s, int i, double d, const int* ptr, Mixed m, long long ll,
                           unsigned char uc, float f, Aligned a, Big big, bool flag, double* outD,
                           long long* outI) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  outI[0] = c;
  outI[1] = s;
  outI[2] = i;
  outD[0] = d;
  outI[3] = ptr[0];
  outI[4] = m.c;
  outI[5] = m.i;
  outD[1] = m.d;
  outI[6] = m.s;
  outD[2] = m.f[0];
  outD[3] = m.f[1];
  outD[4] = m.f[2];
  outI[7] = ll;
  outI[8] = uc;
  outD[5] = f;
  outD[6] = a.x;
  outD[7] = a.y;
  outD[8] = a.z;
  outD[9] = a.w;
  long long sum = 0;
  for (int k = 0; k < 64; ++k) sum += big.values[k] * (k + 1);
  outI[9] = sum;
  outI[10] = big.values[63];
  outI[11] = flag ? 1 : 0;
}

static unsigned long long hostFactorial(int n) { return n <= 1 ? 1ULL : n * hostFactorial(n - 1); }
static int hostFib(int n) { return n < 2 ? n : hostFib(n - 1) + hostFib(n - 2); }

int main() {
  Checker check("device_functions");
  const int n = 4096;
  int *dMixed, *dFib, *dTripleI;
  unsigned long long* dFact;
  double* dTripleD;
  CHECK(cudaMalloc(&dMixed, n * sizeof(int)));
  CHECK(cudaMalloc(&dFib, n * sizeof(int)));
  CHECK(cudaMalloc(&dTripleI, n * sizeof(int)));
  CHECK(cudaMalloc(&dFact, n * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&dTripleD, n * sizeof(double)));
  calls<<<n / 128, 128>>>(dMixed, dFact, dFib, dTripleI, dTripleD, n);
  CHECK_LAUNCH();
  std::vector<int> mixed(n), fibs(n), tripledI(n);
  std::vector<unsigned long long> fact(n);
  std::vector<double> tripledD(n);
  CHECK(cudaMemcpy(mixed.data(), dMixed, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(fibs.data(), dFib, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(tripledI.data(), dTripleI, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(fact.data(), dFact, n * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(tripledD.data(), dTripleD, n * sizeof(double), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    check.eq("mixBits", i, (i * 31) ^ (n - i + 17), mixed[i]);
    check.eq("factorial", i, hostFactorial(i % 21), fact[i]);
    check.eq("fib", i, hostFib(i % 16), fibs[i]);
    check.eq("triple<int>", i, 3 * (i - 100), tripledI[i]);
    check.eq("triple<double>", i, 1.5 * i, tripledD[i]);  // exact: multiples of 0.5
  }

  int* dPtr;
  double* dOutD;
  long long* dOutI;
  const int pointee = -123456;
  CHECK(cudaMalloc(&dPtr, sizeof(int)));
  CHECK(cudaMalloc(&dOutD, 10 * sizeof(double)));
  CHECK(cudaMalloc(&dOutI, 12 * sizeof(long long)));
  CHECK(cudaMemcpy(dPtr, &pointee, sizeof pointee, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dOutD, 0, 10 * sizeof(double)));
  CHECK(cudaMemset(dOutI, 0, 12 * sizeof(long long)));
  Mixed m;
  std::memset(&m, 0, sizeof m);
  m.c = -5;
  m.i = 1 << 30;
  m.d = -2.718281828459045;
  m.s = -32000;
  m.f[0] = 1.5f;
  m.f[1] = -0.25f;
  m.f[2] = 1e30f;
  Aligned a = {10.0f, 20.5f, -30.25f, 40.125f};
  Big big;
  long long bigSum = 0;
  for (int k = 0; k < 64; ++k) {
    big.values[k] = k * k - 1000;
    bigSum += static_cast<long long>(big.values[k]) * (k + 1);
  }
  manyParams<<<2, 32>>>(static_cast<char>(-7), static_cast<short>(-1234), 2000000000,
                        3.141592653589793, dPtr, m, -9000000000000LL,
                        static_cast<unsigned char>(250), -6.5f, a, big, true, dOutD, dOutI);
  CHECK_LAUNCH();
  double outD[10];
  long long outI[12];
  CHECK(cudaMemcpy(outD, dOutD, sizeof outD, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(outI, dOutI, sizeof outI, cudaMemcpyDeviceToHost));
  const long long expectI[12] = {-7,  -1234,   2000000000,     pointee,
                                 -5,  1 << 30, -32000,         -9000000000000LL,
                                 250, bigSum,  63 * 63 - 1000, 1};
  const double expectD[10] = {3.141592653589793,
                              -2.718281828459045,
                              1.5,
                              -0.25,
                              static_cast<double>(1e30f),
                              -6.5,
                              10.0,
                              20.5,
                              -30.25,
                              40.125};
  for (int k = 0; k < 12; ++k) check.eq("int-like parameter", k, expectI[k], outI[k]);
  for (int k = 0; k < 10; ++k) check.eq("floating parameter", k, expectD[k], outD[k]);

  std::printf("device_functions: %d threads of calls, %zu-byte struct parameter\n", n, sizeof(Big));
  CHECK(cudaFree(dMixed));
  CHECK(cudaFree(dFib));
  CHECK(cudaFree(dTripleI));
  CHECK(cudaFree(dFact));
  CHECK(cudaFree(dTripleD));
  CHECK(cudaFree(dPtr));
  CHECK(cudaFree(dOutD));
  CHECK(cudaFree(dOutI));
  return check.finish();
}
