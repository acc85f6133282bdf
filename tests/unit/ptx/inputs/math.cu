// Math library calls that nvcc expands inline into long PTX.
__global__ void mathFloat(float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = v[i];
  v[i] = sinf(x) + cosf(x) + tanf(x) + expf(x) + logf(x) + powf(x, 2.5f) + erff(x) + sqrtf(x) +
         rsqrtf(x) + __sinf(x) + __expf(x) + fabsf(x) + floorf(x) + fmaf(x, x, 1.0f) +
         atan2f(x, 2.f) + tgammaf(x) + cbrtf(x) + fminf(x, 1.f) + __fdividef(x, 3.f) + exp2f(x) +
         log2f(x);
}

__global__ void mathDouble(double* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = v[i];
  v[i] = sin(x) + exp(x) + log(x) + pow(x, 1.5) + sqrt(x) + erf(x) + fma(x, x, 1.0) + x / 3.0 +
         rint(x) + (double)(long long)x + (double)(unsigned)x;
}

__global__ void conversions(const double* in, int* i32, long long* i64, float* f,
                            unsigned short* h) {
  int i = threadIdx.x;
  i32[i] = __double2int_rz(in[i]);
  i64[i] = __double2ll_rn(in[i]);
  f[i] = __double2float_rd(in[i]) + __int_as_float(i32[i]) + __uint2float_rn(i);
  h[i] = (unsigned short)(__brev(i) ^ __popc(i) ^ __clz(i) ^ __ffs(i) ^ __byte_perm(i, 3, 0x1234));
  i32[i + 1] = __mul24(i, 3) + __umulhi(i, 7) + __sad(i, 5, 1) + min(i, 7) + abs(i - 9);
}
