// Shared memory, barriers and atomics.
extern "C" __global__ void reduceSum(const float* in, float* out) {
  extern __shared__ float sdata[];
  unsigned t = threadIdx.x;
  sdata[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) sdata[t] += sdata[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = sdata[0];
}

extern "C" __global__ void sharedAtomics(int* out) {
  __shared__ int s;
  if (threadIdx.x == 0) s = 100;
  __syncthreads();
  atomicAdd(&s, (int)threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}

extern "C" __global__ void atomics(int* i, unsigned* u, float* f, unsigned long long* ull,
                                   double* d) {
  int t = threadIdx.x;
  atomicAdd(&i[0], 1);
  atomicMax(&i[1], t);
  atomicMin(&i[2], -t);
  atomicExch(&i[3], 7);
  atomicCAS(&i[4], t, t + 1);
  atomicSub(&i[5], 2);
  atomicInc(&u[0], 9);
  atomicDec(&u[1], 9);
  atomicOr(&u[2], 1u << (t % 32));
  atomicAnd(&u[3], ~(1u << (t % 32)));
  atomicXor(&u[4], (unsigned)t);
  atomicMax(&u[5], (unsigned)t * 3u);
  atomicAdd(&f[0], 0.5f);
  atomicAdd(&ull[0], 3ull);
  atomicAdd(&d[0], 0.25);
}

extern "C" __global__ void warpOps(const int* in, int* out) {
  int t = threadIdx.x;
  int v = in[t];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  unsigned ballot = __ballot_sync(0xffffffffu, in[t] > 10);
  int all = __all_sync(0xffffffffu, in[t] >= 0);
  int any = __any_sync(0xffffffffu, in[t] == 7);
  int bfly = __shfl_xor_sync(0xffffffffu, in[t], 1);
  int up = __shfl_up_sync(0xffffffffu, in[t], 3);
  int idx = __shfl_sync(0xffffffffu, in[t], 5, 16);
  int count = __syncthreads_count(in[t] & 1);
  int orAll = __syncthreads_or(in[t] == 30);
  __syncwarp();
  out[t] = bfly + 1000 * up + 1000000 * idx;
  if (t == 0) {
    out[32] = v;
    out[33] = (int)ballot;
    out[34] = all + 2 * any + 4 * orAll;
    out[35] = count;
  }
}
