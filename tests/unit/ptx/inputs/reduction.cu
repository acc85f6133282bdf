// Shared-memory reductions with __syncthreads, static and dynamic shared memory.
__global__ void __launch_bounds__(256, 2) reduceSum(const float* in, float* out, int n) {
  __shared__ float partial[256];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  partial[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

extern __shared__ double dynamicShared[];
__global__ void reduceMax(const double* in, double* out, int n) {
  int t = threadIdx.x;
  dynamicShared[t] = t < n ? in[t] : -1e300;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) dynamicShared[t] = fmax(dynamicShared[t], dynamicShared[t + s]);
    __syncthreads();
  }
  if (t == 0) *out = dynamicShared[0];
}

__global__ void syncCount(const int* in, int* out) {
  int v = in[threadIdx.x];
  out[0] = __syncthreads_count(v > 0);
  out[1] = __syncthreads_and(v > 0);
  out[2] = __syncthreads_or(v > 0);
}
