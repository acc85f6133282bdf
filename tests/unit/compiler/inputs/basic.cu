// Straight-line kernels: vector add, saxpy, integer intrinsics, a by-value struct parameter.
#include <cstdio>

extern "C" __global__ void vecAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

extern "C" __global__ void intOps(const unsigned* a, const unsigned* b, unsigned long long* out) {
  int i = threadIdx.x;
  unsigned x = a[i], y = b[i];
  unsigned long long* o = out + 8 * i;
  o[0] = __umulhi(x, y);
  o[1] = (unsigned)__mulhi((int)x, (int)y);
  o[2] = (unsigned long long)x * y + 7;
  o[3] = (unsigned long long)((long long)(int)x * (int)y);
  o[4] = y ? (x / y) * 1000 + x % y : 0;
  o[5] = __popc(x) + 100 * __clz(y);
  o[6] = __brev(x);
  o[7] = __byte_perm(x, y, 0x5140) ^ ((long long)(int)x / ((int)(y | 1)));
}

struct Mixed {
  char c;
  double d;
  int i;
};

extern "C" __global__ void structParam(Mixed m, char c2, short s, double* out) {
  out[0] = m.c + m.d + m.i + c2 + s;
}

extern "C" __global__ void hello(int* flag) {
  printf("hello from %d\n", threadIdx.x);
  flag[threadIdx.x] = 1;
}
