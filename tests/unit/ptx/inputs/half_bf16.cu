// Half and bfloat16 arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__global__ void halfOps(__half* h, __half2* h2, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  __half a = h[i];
  h[i] = __hadd(a, __hmul(a, __float2half(0.5f))) + hsqrt(a) + hexp(a);
  h2[i] = __hfma2(h2[i], h2[i], __floats2half2_rn(1.0f, 2.0f));
  if (__hgt(a, __float2half(1.0f))) h[i] = __hneg(a);
}

__global__ void bf16Ops(__nv_bfloat16* b, __nv_bfloat162* b2, float* f) {
  int i = threadIdx.x;
  b[i] = __hadd(b[i], __float2bfloat16(f[i]));
  b2[i] = __hmul2(b2[i], b2[i]);
  f[i] = __bfloat162float(b[i]) + __low2float(b2[i]);
}
