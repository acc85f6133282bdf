// The CUDA math library (inlined by nvcc as PTX): single and double precision functions.
extern "C" __global__ void mathF(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = in[i];
  float* o = out + 12 * i;
  o[0] = sinf(x);
  o[1] = cosf(x);
  o[2] = expf(x * 0.1f);
  o[3] = logf(fabsf(x) + 1.0f);
  o[4] = powf(fabsf(x) + 0.5f, 1.7f);
  o[5] = sqrtf(fabsf(x));
  o[6] = tanhf(x * 0.3f);
  o[7] = atan2f(x, 1.5f);
  o[8] = erff(x * 0.2f);
  o[9] = x / (x * x + 1.0f);
  o[10] = rsqrtf(fabsf(x) + 1.0f);
  o[11] = fmodf(x, 2.5f);
}

extern "C" __global__ void mathD(const double* in, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = in[i];
  double* o = out + 8 * i;
  o[0] = sin(x);
  o[1] = cos(x);
  o[2] = exp(x * 0.1);
  o[3] = log(fabs(x) + 1.0);
  o[4] = pow(fabs(x) + 0.5, 1.7);
  o[5] = sqrt(fabs(x));
  o[6] = x / (x * x + 1.0);
  o[7] = cbrt(x);
}
